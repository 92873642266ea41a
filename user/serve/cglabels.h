/* SPDX-License-Identifier: MIT */
/*
 * Labels from a cgroup path: the systemd unit, the container id and the
 * Kubernetes pod UID and QoS class that the path's shape says (the rules are
 * in docs/serve.md, "Labels from the cgroup path"), and container names from a
 * JSON file written by whatever knows them. Each label is a function of the
 * cgroup, so adding them to a cgroup's series adds no series.
 */
#ifndef KHBPF_CGLABELS_H
#define KHBPF_CGLABELS_H

#include <stddef.h>

#include "serve/promtext.h"

/* --labels: which labels serve exports. */
#define CGLABELS_UNIT 0x1u /* unit */
#define CGLABELS_CONTAINER 0x2u /* container_id (and container_name from the names file) */
#define CGLABELS_POD 0x4u /* pod_uid and qos */
#define CGLABELS_ALL (CGLABELS_UNIT | CGLABELS_CONTAINER | CGLABELS_POD)

/* Labels one path can add: unit, container_id, container_name, pod_uid, qos. */
#define CGLABELS_MAX_LABELS 5
#define CGLABELS_UNIT_MAX 256 /* systemd's bound on a unit name, with the NUL */
#define CGLABELS_ID_LEN 64 /* a container id: 64 lowercase hex digits */
#define CGLABELS_UID_MAX 37 /* a pod UID: a UUID (36) or a static pod's hash (32) */

/* What a path says; "" (qos: NULL) where its shape says nothing. */
struct cgpath_labels {
	char unit[CGLABELS_UNIT_MAX];
	char container_id[CGLABELS_ID_LEN + 1];
	char pod_uid[CGLABELS_UID_MAX];
	const char *qos; /* "Guaranteed", "Burstable", "BestEffort" or NULL */
};

/*
 * Pure: the labels of a cgroup path ("/system.slice/nginx.service", with or
 * without a mount point before it). Returns the CGLABELS_* bits found.
 */
unsigned int cglabels__from_path(const char *path, struct cgpath_labels *out);

/*
 * --labels LIST: words unit, container, pod or all, comma-separated, in any
 * order, into *mask. 0, or -EINVAL with the offending word (bounded, "" for
 * an empty one) in bad.
 */
int cglabels__parse_list(const char *list, unsigned int *mask, char *bad, size_t badlen);

struct cglabels;

struct cglabels_opts {
	size_t sz;
	unsigned int which; /* CGLABELS_* bits: the labels for_path gives */
	/*
	 * NULL, or a JSON file {"<64-hex container id>": "name", ...} (cgnames.h):
	 * with CGLABELS_CONTAINER, a container_name label for the ids it names.
	 */
	const char *container_names;
};

/*
 * 0, -EINVAL (bad opts: errbuf says so), or cgnames__load's error with its
 * one line in errbuf.
 */
int cglabels__new(struct cglabels **out, const struct cglabels_opts *opts, char *errbuf,
		  size_t errlen);
/* The names file reread when it changed: cgnames__refresh; 0 without one. */
int cglabels__refresh(struct cglabels *c, char *errbuf, size_t errlen);
/*
 * The chosen labels of path, in a fixed order (unit, container_id,
 * container_name, pod_uid, qos), those the path has only. l has room for
 * CGLABELS_MAX_LABELS; its values point into *v and into c, valid until
 * the next refresh. Returns how many.
 */
size_t cglabels__for_path(const struct cglabels *c, const char *path, struct cgpath_labels *v,
			  struct prom_label *l);
/* The name the file gives id, or NULL. */
const char *cglabels__name(const struct cglabels *c, const char *id);
size_t cglabels__nr_names(const struct cglabels *c);
void cglabels__free(struct cglabels *c);

#endif /* KHBPF_CGLABELS_H */

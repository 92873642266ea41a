// SPDX-License-Identifier: MIT
/*
 * Labels from the shape of a cgroup path (the rules are documented in
 * docs/serve.md, "Labels from the cgroup path"). See cglabels.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/cglabels.h"
#include "host/cgnames.h"

struct cglabels {
	unsigned int which;
	struct cgnames *names; /* NULL: no --container-names */
};

static bool is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

static bool has_suffix(const char *s, size_t n, const char *suffix, size_t *stem)
{
	size_t sl = strlen(suffix);

	if (n <= sl || memcmp(s + n - sl, suffix, sl))
		return false;
	*stem = n - sl;
	return true;
}

/*
 * A unit systemd could have named: a name of its characters with the suffix
 * of a unit type that holds processes (slices hold none).
 */
static bool unit_component(const char *s, size_t n)
{
	static const char *const types[] = { ".service", ".scope", ".socket", ".mount", ".swap" };
	static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				 ":_.\\@-";
	size_t i, stem;

	if (n >= CGLABELS_UNIT_MAX)
		return false;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (has_suffix(s, n, types[i], &stem))
			break;
	}
	if (i == sizeof(types) / sizeof(types[0]))
		return false;
	for (i = 0; i < n; i++) {
		if (!s[i] || !strchr(ok, s[i]))
			return false;
	}
	return true;
}

/*
 * A container's cgroup: ID (cgroupfs drivers: docker's /docker/ID,
 * containerd's and the kubelet's .../podUID/ID), or RUNTIME-ID with or
 * without .scope. conmon's libpod-conmon-ID.scope is not the container.
 */
static bool container_component(const char *s, size_t n, char *id)
{
	static const char *const runtimes[] = { "docker-", "libpod-", "cri-containerd-", "crio-" };
	size_t i, pl, rest;

	for (i = 0; i <= sizeof(runtimes) / sizeof(runtimes[0]); i++) {
		pl = i ? strlen(runtimes[i - 1]) : 0;
		if (n < pl || (pl && memcmp(s, runtimes[i - 1], pl)))
			continue;
		rest = n - pl;
		if (rest != CGLABELS_ID_LEN &&
		    !(pl && rest == CGLABELS_ID_LEN + 6 && !memcmp(s + n - 6, ".scope", 6)))
			continue;
		if (!is_hex(s + pl, CGLABELS_ID_LEN))
			continue;
		memcpy(id, s + pl, CGLABELS_ID_LEN);
		id[CGLABELS_ID_LEN] = '\0';
		return true;
	}
	return false;
}

/*
 * A pod UID as the kubelet wrote it into the path: a UUID, its '-' written
 * '_' by the systemd driver (back to '-' in out), or a static pod's 32 hex
 * digit hash. One driver wrote the whole UID, so its four separators are
 * the same character: a mixed one is some other name.
 */
static bool pod_uid(const char *s, size_t n, char *out)
{
	size_t i;

	if (n == 32 && is_hex(s, n)) {
		memcpy(out, s, n);
		out[n] = '\0';
		return true;
	}
	if (n != 36 || (s[8] != '-' && s[8] != '_'))
		return false;
	for (i = 0; i < n; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != s[8])
				return false;
			out[i] = '-';
		} else {
			if (!is_hex(s + i, 1))
				return false;
			out[i] = s[i];
		}
	}
	out[n] = '\0';
	return true;
}

static bool equals(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && !memcmp(s, word, n);
}

/* The QoS class a kubelet's QoS cgroup stands for, or NULL. */
static const char *qos_class(const char *s, size_t n)
{
	if (equals(s, n, "burstable"))
		return "Burstable";
	if (equals(s, n, "besteffort"))
		return "BestEffort";
	return NULL;
}

/*
 * The systemd driver's pod slice: [PARENT-]kubepods[-QOS]-podUID.slice
 * (systemd names a slice by its whole path, so the one component tells it
 * all). The UID has no '-' in this form, so the last "-pod" starts it.
 */
static bool pod_slice(const char *s, size_t n, char *uid, const char **qos)
{
	static const char *const qos_words[] = { "burstable", "besteffort" };
	size_t stem, at, k, i;
	const char *q = "Guaranteed";

	if (!has_suffix(s, n, ".slice", &stem))
		return false;
	for (at = stem; at >= 4; at--) {
		if (!memcmp(s + at - 4, "-pod", 4))
			break;
	}
	if (at < 4 || !pod_uid(s + at, stem - at, uid))
		return false;
	k = at - 4; /* s[0..k) is [PARENT-]kubepods[-QOS] */
	for (i = 0; i < 2; i++) {
		size_t ql = strlen(qos_words[i]);

		if (k > ql && s[k - ql - 1] == '-' && !memcmp(s + k - ql, qos_words[i], ql)) {
			q = qos_class(qos_words[i], ql);
			k -= ql + 1;
			break;
		}
	}
	if (k < 8 || memcmp(s + k - 8, "kubepods", 8) || (k > 8 && s[k - 9] != '-'))
		return false;
	*qos = q;
	return true;
}

unsigned int cglabels__from_path(const char *path, struct cgpath_labels *out)
{
	/* The cgroupfs driver's pods go by position: kubepods/[QOS/]podUID. */
	size_t n, idx = 0, kube_at = 0, qos_at = 0;
	const char *q, *qos = NULL, *s = path;
	unsigned int found = 0;
	char uid[CGLABELS_UID_MAX];

	memset(out, 0, sizeof(*out));
	for (; s && *s; s += n) {
		while (*s == '/')
			s++;
		n = strcspn(s, "/");
		if (!n)
			break;
		idx++;
		if (unit_component(s, n)) {
			memcpy(out->unit, s, n);
			out->unit[n] = '\0';
			found |= CGLABELS_UNIT;
		}
		if (container_component(s, n, out->container_id))
			found |= CGLABELS_CONTAINER;
		if (pod_slice(s, n, uid, &q)) {
			memcpy(out->pod_uid, uid, sizeof(uid));
			out->qos = q;
			found |= CGLABELS_POD;
		} else if (equals(s, n, "kubepods")) {
			kube_at = idx;
		} else if (kube_at && idx == kube_at + 1 && qos_class(s, n)) {
			qos = qos_class(s, n);
			qos_at = idx;
		} else if (kube_at && n > 3 && !memcmp(s, "pod", 3) &&
			   (idx == kube_at + 1 || (qos_at == kube_at + 1 && idx == qos_at + 1)) &&
			   pod_uid(s + 3, n - 3, uid)) {
			memcpy(out->pod_uid, uid, sizeof(uid));
			out->qos = idx == kube_at + 1 ? "Guaranteed" : qos;
			found |= CGLABELS_POD;
		}
	}
	return found;
}

int cglabels__parse_list(const char *list, unsigned int *mask, char *bad, size_t badlen)
{
	static const struct {
		const char *word;
		unsigned int bits;
	} words[] = {
		{ "unit", CGLABELS_UNIT },
		{ "container", CGLABELS_CONTAINER },
		{ "pod", CGLABELS_POD },
		{ "all", CGLABELS_ALL },
	};
	const char *s = list;
	size_t n, i;

	*mask = 0;
	for (;;) {
		n = strcspn(s, ",");
		for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
			if (equals(s, n, words[i].word))
				break;
		}
		if (i == sizeof(words) / sizeof(words[0])) {
			snprintf(bad, badlen, "%.*s", (int)(n < 64 ? n : 64), s);
			*mask = 0;
			return -EINVAL;
		}
		*mask |= words[i].bits;
		if (!s[n])
			return 0;
		s += n + 1;
	}
}

int cglabels__new(struct cglabels **out, const struct cglabels_opts *opts, char *errbuf,
		  size_t errlen)
{
	struct cglabels *c;
	int err;

	*out = NULL;
	if (!opts || opts->sz < sizeof(*opts) || (opts->which & ~CGLABELS_ALL)) {
		snprintf(errbuf, errlen, "invalid label options");
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	c->which = opts->which;
	if (opts->container_names) {
		err = cgnames__load(&c->names, opts->container_names, errbuf, errlen);
		if (err)
			goto cleanup;
	}
	*out = c;
	return 0;
cleanup:
	cglabels__free(c);
	return err;
}

int cglabels__refresh(struct cglabels *c, char *errbuf, size_t errlen)
{
	return c->names ? cgnames__refresh(c->names, errbuf, errlen) : 0;
}

const char *cglabels__name(const struct cglabels *c, const char *id)
{
	return cgnames__find(c->names, id);
}

size_t cglabels__nr_names(const struct cglabels *c)
{
	return cgnames__count(c->names);
}

size_t cglabels__for_path(const struct cglabels *c, const char *path, struct cgpath_labels *v,
			  struct prom_label *l)
{
	unsigned int found = cglabels__from_path(path, v) & c->which;
	const char *name;
	size_t n = 0;

	if (found & CGLABELS_UNIT)
		l[n++] = (struct prom_label){ "unit", v->unit };
	if (found & CGLABELS_CONTAINER) {
		l[n++] = (struct prom_label){ "container_id", v->container_id };
		name = cgnames__find(c->names, v->container_id);
		if (name)
			l[n++] = (struct prom_label){ "container_name", name };
	}
	if (found & CGLABELS_POD) {
		l[n++] = (struct prom_label){ "pod_uid", v->pod_uid };
		l[n++] = (struct prom_label){ "qos", v->qos };
	}
	return n;
}

void cglabels__free(struct cglabels *c)
{
	if (!c)
		return;
	cgnames__free(c->names);
	free(c);
}

/* SPDX-License-Identifier: MIT */
/*
 * serve's groups, kept between scrapes: the kernel sums the scheduler per
 * group (a cgroup, or a process) in a bounded table; this follows each
 * group's activity, ages out idle ones and evicts the longest idle before
 * the table fills, keeps what gone processes added in their comm's series
 * (so counters only grow), and turns it all into labelled rows.
 */
#ifndef KHBPF_SERVE_GROUPS_H
#define KHBPF_SERVE_GROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/sched_collector.h"

#define SERVE_LABEL_MAX 256

struct serve_groups;

struct serve_groups_opts {
	size_t sz;
	uint32_t group_by; /* KHBPF_GROUP_CGROUP or KHBPF_GROUP_PROCESS */
	uint32_t top; /* process: the N busiest processes get a pid label */
	uint32_t max_groups; /* the kernel table's bound; 0 → KHBPF_DEFAULT_MAX_GROUPS */
	uint64_t max_age_ns; /* groups idle this long are dropped; 0 → 5 min */
	const char *cg_mount; /* cgroup v2 mount, to name cgroups; NULL: none (copied) */
};

/* One series' labels and sums; labels that do not apply are "". */
struct serve_row {
	char cgroup[SERVE_LABEL_MAX];
	char comm[17];
	char pid[24];
	struct khbpf_group_acc acc;
};

struct serve_groups_stats {
	size_t nr_groups; /* in the kernel's table at the last sweep */
	uint64_t max_groups;
	uint64_t aged_out, evicted; /* groups removed since the start */
	uint64_t retired_dropped; /* distinct comms beyond max_groups: in "(other)" */
	uint64_t names_dropped; /* cgroups beyond the bound of the name scan */
};

/* Groups of coll, a collector opened with group_by. 0, -EINVAL, -ENOMEM. */
int serve_groups__new(struct serve_groups **out, struct sched_collector *coll,
		      const struct serve_groups_opts *opts);
/*
 * Once per window: ages out groups idle for max_age and, past 9/10 of the
 * bound, evicts the longest idle down to 3/4. 0 or -errno.
 */
int serve_groups__sweep(struct serve_groups *g);
/*
 * Every series now, sorted by labels and merged: one per group (process:
 * --top ones with their pid, the rest summed by comm), the retired comms,
 * "(other)" and "(overflow)". *rows is malloc'd. 0 or -errno.
 */
int serve_groups__rows(struct serve_groups *g, struct serve_row **rows, size_t *nr);
/*
 * The cgroup label of cgroup id: its path from the v2 root (rescanned at
 * most once per serve_groups__rows for an id not seen), or "(cgroup id N)"
 * for one removed before it could be named, in buf.
 */
const char *serve_groups__cgroup_label(struct serve_groups *g, uint64_t id, char *buf, size_t size);
void serve_groups__stats(const struct serve_groups *g, struct serve_groups_stats *out);
void serve_groups__free(struct serve_groups *g);

/* Sorts rows by labels and sums those with equal labels into one; the new count. */
size_t serve_rows__merge(struct serve_row *rows, size_t nr);

#endif /* KHBPF_SERVE_GROUPS_H */

/* SPDX-License-Identifier: MIT */
/*
 * serve's span series, kept between scrapes: the kernel sums each span
 * metric (and key, and --usdt probe) per group in a bounded table
 * (span_series); this ages out series idle for --max-age, evicts the
 * longest idle before the table fills, keeps what gone processes added in
 * their comm's series (so counters only grow), and names each series:
 * its group's labels, its metric and its key.
 */
#ifndef KHBPF_SERVE_SPANS_H
#define KHBPF_SERVE_SPANS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collect/sched_collector.h"
#include "serve/serve_groups.h"
#include "spans/spanfind.h"
#include "spans/spanrun.h"

struct serve_spans;

struct serve_spans_opts {
	size_t sz;
	uint32_t group_by; /* KHBPF_GROUP_CGROUP or KHBPF_GROUP_PROCESS */
	uint32_t max_series; /* the kernel table's bound; 0 → KHBPF_DEFAULT_SPAN_SERIES */
	uint64_t max_age_ns; /* series idle this long are dropped; 0 → 5 min */
};

/* One series: its labels ("" where one does not apply) and sums. */
struct span_row {
	char cgroup[SERVE_LABEL_MAX];
	char comm[17];
	char metric[SPANFIND_METRIC_MAX];
	char key[KHBPF_KEY_STR_MAX + 24];
	bool counted; /* a --usdt probe: only calls are kept */
	char probe[128]; /* ... its PROVIDER:NAME */
	struct khbpf_span_agg agg;
	uint64_t open; /* serve_spans__open: calls in progress */
	uint64_t oldest_ns; /* ... the oldest one's age at the sample */
};

struct serve_spans_stats {
	size_t nr_series; /* in the kernel's table at the last sweep */
	uint64_t max_series;
	uint64_t aged_out, evicted; /* series removed since the start */
	uint64_t retired_dropped; /* gone processes' series beyond the bound: in "(other)" */
};

/*
 * Series of coll's span sites (run: the session's spans, for names);
 * groups names cgroups. 0, -EINVAL, -ENOMEM.
 */
int serve_spans__new(struct serve_spans **out, struct sched_collector *coll, struct span_run *run,
		     struct serve_groups *groups, const struct serve_spans_opts *opts);
/* Once per window: ages out and evicts as serve_groups__sweep does. 0 or -errno. */
int serve_spans__sweep(struct serve_spans *s);
/*
 * Every series now, sorted by labels and merged: one per (group, metric,
 * key), the retired comms', "(other)", and each metric's "(overflow)".
 * *rows is malloc'd. 0 or -errno.
 */
int serve_spans__rows(struct serve_spans *s, struct span_row **rows, size_t *nr);
/*
 * The calls in progress now, one row per series (labels as in
 * serve_spans__rows; agg zero): how many, and the oldest one's age at
 * now_ns (CLOCK_MONOTONIC, the kernel's bpf_ktime_get_ns(); 0: read after
 * the walk). Series with none are left out. *rows is malloc'd. 0 or -errno.
 */
int serve_spans__open(struct serve_spans *s, uint64_t now_ns, struct span_row **rows, size_t *nr);
void serve_spans__stats(const struct serve_spans *s, struct serve_spans_stats *out);
void serve_spans__free(struct serve_spans *s);
/*
 * Sorts rows by labels and sums those with equal labels into one (open
 * calls too; the oldest age is the larger); the new count.
 */
size_t span_rows__merge(struct span_row *rows, size_t nr);

#endif /* KHBPF_SERVE_SPANS_H */

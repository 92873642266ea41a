/* SPDX-License-Identifier: MIT */
/*
 * What one scrape's metrics are read from: the collector, the groups, the
 * labels and the last window's document (serve_metrics.c, serve_pressure.c).
 */
#ifndef KHBPF_SERVE_SOURCE_H
#define KHBPF_SERVE_SOURCE_H

#include <stdint.h>

struct cglabels;
struct httpd_stats;
struct json_object;
struct sched_collector;
struct serve_filters;
struct serve_groups;
struct serve_spans;

/* What one scrape reads. */
struct serve_metrics_src {
	struct serve_groups *groups;
	struct serve_spans *spans; /* span series (--span, --usdt-span, --usdt); NULL: none */
	struct sched_collector *coll;
	uint32_t group_by; /* KHBPF_GROUP_*: which labels a group's series has */
	uint32_t top; /* process: --top, so series have a pid label */
	const struct cglabels *labels; /* cgroup: labels from each path (--labels), or NULL */
	const char *root; /* procfs/sysfs root; NULL → "/" */
	struct json_object *doc; /* the last window's document; NULL before one */
	const struct serve_filters *filters; /* --pid/--cgroup; NULL: none */
	uint64_t windows, window_errors;
	const struct httpd_stats *http; /* serve's own connections; NULL: no families */
};

#endif /* KHBPF_SERVE_SOURCE_H */

/* SPDX-License-Identifier: MIT */
/*
 * `khbpf serve`: system-wide (or selected) scheduler accounting summed per
 * cgroup or process in the kernel, served over HTTP for Prometheus
 * (/metrics), with each interval's full evidence document (/evidence) and,
 * optionally, one document per interval as NDJSON.
 */
#ifndef KHBPF_SERVE_H
#define KHBPF_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "collect/sched_collector.h"
#include "spans/spanfind.h"

struct serve_opts {
	size_t sz;
	const char *listen; /* NULL → 127.0.0.1:9464 */
	uint32_t group_by; /* KHBPF_GROUP_CGROUP (default when 0) or _PROCESS */
	const pid_t *pids; /* only these processes; none: every task */
	size_t nr_pids;
	bool children; /* ... and their descendants, and every process forked from them */
	const char *const *cgroups; /* only these cgroup v2 subtrees ("/system.slice") */
	size_t nr_cgroups;
	uint32_t top; /* process: the N busiest processes get a pid label */
	unsigned int labels; /* cgroup: CGLABELS_* labels from each cgroup's path */
	const char *container_names; /* JSON file of container id → name (cgnames.h), or NULL */
	uint32_t max_groups; /* 0 → KHBPF_DEFAULT_MAX_GROUPS */
	uint64_t max_age_ns; /* groups idle this long are dropped; 0 → 5 min */
	uint64_t interval_ns; /* window and sweep period; 0 → 15 s */
	const char *ndjson; /* one document per window: a path, "-" (stdout), or NULL */
	bool ndjson_private; /* a new --ndjson file gets mode 0600, not 0644 */
	bool bpf_stats;
	bool blocked; /* --blocked: khbpf_blocked_seconds_total */
	uint32_t max_exited;
	uint32_t max_threads;
	const char *root; /* procfs/sysfs root; NULL → "/" */
	FILE *log; /* progress lines; NULL → quiet */
	/* Spans (--span, --usdt-span, --usdt; each names its OBJ) and --key. */
	const struct span_request *span_reqs;
	size_t nr_span_reqs;
	const struct key_request *key_reqs;
	size_t nr_key_reqs;
	const struct cause_request *cause_reqs; /* --span-cause */
	size_t nr_cause_reqs;
	uint32_t max_keys; /* keys per metric; 0 → KHBPF_DEFAULT_KEYS_PER_METRIC */
	uint32_t max_span_series; /* (group, metric, key) series; 0 → KHBPF_DEFAULT_SPAN_SERIES */
	bool no_annotations; /* ignore the KHBPF_SPAN notes of the named objects */
};

/*
 * Runs until SIGINT/SIGTERM/SIGHUP. Returns 0 after a clean stop (the last
 * window's NDJSON line written), or -errno with one line in errbuf:
 * SESSION_ERR_USAGE (session.h) for a span request that names what is not
 * there, found before anything is loaded.
 */
int serve__run(const struct serve_opts *opts, char *errbuf, size_t errlen);

#define SERVE_DEFAULT_LISTEN "127.0.0.1:9464"

#endif /* KHBPF_SERVE_H */

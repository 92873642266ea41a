/* SPDX-License-Identifier: MIT */
/* What a session is asked to watch and how: the options of run, attach and serve. */
#ifndef KHBPF_SESSION_OPTS_H
#define KHBPF_SESSION_OPTS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "document/document.h"
#include "collect/sched_collector.h"
#include "spans/spanfind.h"

/*
 * What session__run and session__serve_open return, and no other of their
 * errors, when a request is a mistake found before the window: a span
 * request naming a function, probe or file none of its objects has, a
 * --key or --span-cause naming no metric, serve's OBJ naming no file. The
 * command line's usage error (exit 2); errbuf names it.
 */
#define SESSION_ERR_USAGE (-EBADR)

struct session_opts {
	size_t sz;
	enum target_mode mode; /* TARGET_MODE_ATTACH or TARGET_MODE_RUN */
	pid_t pid; /* attach: the target */
	char *const *argv; /* run: the command */
	uint64_t duration_ns; /* 0: until the target exits or a signal */
	uint64_t interval_ns; /* frequency sampling period; 0 → 1 s */
	bool as_root; /* run: do not drop to SUDO_UID */
	bool no_bpf; /* use the /proc fallback even when BPF works */
	uint32_t max_exited; /* exited-thread records kept in the kernel; 0 → default */
	uint32_t max_threads; /* threads listed in the document; 0 → default */
	const char *root; /* procfs/sysfs root; NULL → "/" */
	FILE *log; /* progress lines (stderr); NULL → quiet */
	const struct span_request *span_reqs; /* --span */
	size_t nr_span_reqs;
	bool no_annotations; /* ignore KHBPF_SPAN notes */
	const struct key_request *key_reqs; /* --key */
	size_t nr_key_reqs;
	uint32_t max_keys; /* --max-keys: keys per metric; 0 → KHBPF_DEFAULT_KEYS_PER_METRIC */
	const struct cause_request *cause_reqs; /* --span-cause */
	size_t nr_cause_reqs;
	const char *const *debug_dirs; /* --debug-dir, searched first for debug files */
	size_t nr_debug_dirs;
	uint64_t max_spans; /* span records kept; 0 → default */
	uint32_t span_buffer; /* the span ring buffer's bytes (--span-buffer); 0 → default */
	enum sched_counters span_counters; /* per-span counter readings */
	bool bpf_stats; /* BPF run-time stats (system-wide) for the window */
	bool blocked; /* --blocked: blocked time by cause */
	bool wakers; /* --wakers: and who woke each thread */
	enum sched_span_links span_links; /* --span-links */
	/*
	 * The target set. attach: the processes (pids; pid is the first),
	 * with children their descendants; or the cgroup v2 subtrees
	 * (cgroup_paths, resolved here; serve passes cgroup_ids and levels
	 * itself). run: CMD and every process it starts, unless no_children.
	 * serve: the processes (none: every task), or the cgroup filters.
	 */
	const pid_t *pids;
	size_t nr_pids;
	bool children;
	bool no_children;
	const char *const *cgroup_paths;
	size_t nr_cgroup_paths;
	uint32_t max_processes; /* processes in the set over the window; 0 → default */
	/* The generic sched_switch program even where the set's can be used (a test aid). */
	bool generic_switch;
	const uint64_t *cgroup_ids;
	const uint32_t *cgroup_levels;
	size_t nr_cgroups;
	uint32_t group_by; /* KHBPF_GROUP_* */
	uint32_t max_groups;
	uint32_t max_span_series; /* serve: (group, metric) span series; 0 → default */
};

#endif /* KHBPF_SESSION_OPTS_H */

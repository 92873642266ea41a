/* SPDX-License-Identifier: MIT */
/*
 * The collector's state, shared by the files that make it up:
 * sched_collector.c loads and configures the skeleton and attaches the
 * scheduler programs, sched_read.c reads results, sched_spans.c attaches
 * span sites. Internal to those; callers use sched_collector.h.
 */
#ifndef KHBPF_SCHED_COLLECTOR_PRIV_H
#define KHBPF_SCHED_COLLECTOR_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bpf/libbpf.h>

#include "host/kfeatures.h"
#include "collect/linkset.h"
#include "khbpf/spans.h"
#include "khbpf/targets.h"

/* Span sites a collector attaches, and links: at most two per site. */
#define SPAN_LINKS_MAX (2 * KHBPF_MAX_SPAN_SITES)
/*
 * Threads that take span links down (linkset.h). A per-site link is a perf
 * event whose release, perf_uprobe_destroy(), holds event_mutex across a
 * synchronize_rcu() (perf_trace_event_unreg()): they come down one at a
 * time however many threads close them (200 links took 22 s here with 1, 4
 * or 16 threads). uprobe_multi links take no such lock
 * (bpf_uprobe_multi_link_release()), so theirs go concurrently.
 */
#define SPAN_SITE_TEARDOWN_THREADS 1
#define SPAN_MULTI_TEARDOWN_THREADS 8

struct sched_collector {
	struct sched_bpf *skel;
	struct ring_buffer *rb;
	struct linkset span_links;
	size_t nr_span_sites;
	bool span_multi; /* span programs loaded for uprobe_multi links */
	bool span_close; /* the USDT DONE programs are loaded (opts.span_close) */
	bool usdt_hits; /* the --usdt hit program and map are loaded (opts.usdt_hits) */
	bool keys; /* --key: keys_enabled, the key maps sized (opts.keys) */
	bool span_causes; /* --span-cause: span_causes_enabled (opts.span_causes, blocked) */
	bool task_storage; /* per-thread state in task storage, else the hashes */
	bool mem_alloc; /* hashes allocated on use (bpf_mem_alloc), else preallocated */
	uint64_t delivered;
	uint64_t malformed; /* ring buffer records of an unexpected size */
	void (*on_span)(void *ctx, const struct khbpf_span_event *e,
			const struct khbpf_span_wakes *wakes);
	void *on_span_ctx;
	bool follow_exec; /* set_events read: span sites looked for in each exec */
	void (*on_exec)(void *ctx, const struct khbpf_exec_event *e);
	int stats_fd;
	bool attached;
	uint32_t max_exited;
	uint32_t nr_targets; /* tgids in target_slots (at most KHBPF_MAX_TARGETS) */
	uint32_t set_mode; /* KHBPF_SET_* */
	uint32_t max_processes;
	bool set_switch; /* khbpf_sched_switch_set* (or _plain*) loaded */
	bool plain_switch; /* khbpf_sched_switch_plain*: the default configuration's */
	bool storage_cache; /* the kernel's BTF has the local storage cache (task_state_cached()) */
	uint32_t wait_folds; /* wait_folds entries; 0: off (wait_folds_enabled) */
	bool joined; /* the set's first walk was made */
	uint64_t moves_walked; /* cgroup_moves_in at the last join */
	uint32_t span_ringbuf_bytes; /* 0 without spans */
	bool sched_info;
	bool blocked_asked; /* opts.blocked or opts.wakers */
	bool blocked; /* blocked time timed (blocked_enabled) */
	bool wakers; /* ... and who woke each thread (wakers_enabled) */
	uint64_t not_final;
	int *counter_fds; /* nr_counter_cpus * KHBPF_NR_COUNTERS; -1 where not open */
	uint32_t nr_counter_cpus;
	uint32_t nr_counters;
	uint32_t counter_cpus;
	int counters_err;
	struct kfeatures feat;
	bool counters_refused; /* the verifier refused the span programs with counters */
	int site_fd_err; /* span_site_metric: first failed insert */
};

#endif /* KHBPF_SCHED_COLLECTOR_PRIV_H */

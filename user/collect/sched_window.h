/* SPDX-License-Identifier: MIT */
/*
 * One collection window: thread snapshots at the start and the end plus the
 * exit records become per-thread deltas and process totals. Pure: the
 * tables come from BPF (sched_collector) or, without BPF, from procfs.
 */
#ifndef KHBPF_SCHED_WINDOW_H
#define KHBPF_SCHED_WINDOW_H

#include "lib/evidence.h"
#include "collect/sched_collector.h"

struct window_thread {
	uint32_t tid;
	uint64_t start_time;
	uint32_t tgid; /* its process: (tgid, proc_start_time) */
	uint64_t proc_start_time;
	char comm[16];
	bool exited; /* exited inside the window */
	bool left; /* left the set's cgroups inside the window (counted up to then) */
	bool vanished; /* gone at the end with no exit record: deltas unknown */
	bool born; /* created inside the window (zero baseline) */
	bool has_bpf; /* BPF-timed fields valid */
	struct khbpf_task_counters delta; /* end - baseline, saturating */
	struct khbpf_task_bpf bpf; /* window-scoped already */
	uint64_t end_runtime; /* absolute sum_exec_runtime at the end */
};

struct window_opts {
	const struct thread_table *baseline; /* NULL: every thread starts at zero (run mode) */
	const struct thread_table *end; /* live threads at the end; may be NULL */
	/* Exit records; NULL without BPF (a zombie at the end then has none to lose). */
	const struct thread_table *exited;
	/* Threads started at or after this boot-time ns were born in the window. */
	uint64_t start_boot_ns;
	size_t max_threads; /* bound on threads kept; 0 → no bound */
};

struct sched_window {
	struct window_thread *threads; /* sorted by (tid, start_time) */
	size_t nr_threads;
	uint64_t dropped_threads; /* beyond max_threads: counted, not kept */
	uint64_t threads_without_baseline; /* existed before the window, seen only at its end */
	uint64_t vanished_threads; /* at the start, then gone without an exit record */
	/* Exited (a zombie at the end), its exit record lost to a full map: listed from the end. */
	uint64_t overflowed_listed;
	uint64_t exited_threads;
	uint64_t left_threads;
	uint64_t born_threads;
	/* Sums over threads whose deltas are known (exited ones included). */
	struct khbpf_task_counters total;
	struct khbpf_task_bpf total_bpf;
};

int sched_window__compute(struct sched_window *w, const struct window_opts *opts);
/* Saturating sums, as the window's totals are made. */
void sched_window__counters_add(struct khbpf_task_counters *t, const struct khbpf_task_counters *d);
void sched_window__bpf_add(struct khbpf_task_bpf *t, const struct khbpf_task_bpf *b);
void sched_window__free(struct sched_window *w);
/* Index of the first thread with this tid, or nr_threads when none has it. */
size_t sched_window__first_tid(const struct sched_window *w, uint32_t tid);

/* Histogram bucket bounds of slot k (see KHBPF_RQ_SLOTS). */
uint64_t rq_slot__lower(unsigned int slot);
uint64_t rq_slot__upper(unsigned int slot);

#endif /* KHBPF_SCHED_WINDOW_H */

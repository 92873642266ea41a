/* SPDX-License-Identifier: MIT */
/*
 * The read-only model of an evidence document that report.c loads and the
 * renderers read (report.h). Strings point into the parsed document and
 * live as long as it.
 */
#ifndef KHBPF_REPORT_MODEL_H
#define KHBPF_REPORT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/evidence.h"

struct json_object;

/* The document major version this reader understands. */
#define REPORT_SCHEMA_MAJOR 1

/* One log2 bucket: `count` waits (or calls) of lower..upper ns. */
struct report_bucket {
	uint64_t lower;
	uint64_t upper;
	uint64_t count;
};

/* A runqueue-wait histogram: scheduler_detail, or a thread's bpf_detail. */
#define REPORT_MIG_CLASSES 5

struct report_rq {
	bool recorded;
	enum ev_gap reason; /* when !recorded */
	uint64_t waits;
	uint64_t wait_ns;
	uint64_t unbinned_waits; /* known only as a sum, not in a bucket */
	struct report_bucket *buckets;
	size_t nr_buckets;
	/* migrations_by_distance, when the document has it */
	bool has_migrations, has_unseen;
	uint64_t mig[REPORT_MIG_CLASSES]; /* smt_sibling same_llc other_llc other_node unknown */
	uint64_t mig_unseen;
};

/*
 * Blocked time by cause, unattributed time and the wakers listed (a thread's
 * bpf_detail.blocked, the process's scheduler_detail.blocked, a metric's
 * scheduler.blocked); present false in documents without it.
 */
struct report_blocked {
	bool present;
	bool recorded;
	enum ev_gap reason; /* when !recorded */
	uint64_t ns[BLOCK_CAUSES];
	uint64_t count[BLOCK_CAUSES];
	int64_t unattributed_ns;
	struct waker_row *wakers; /* malloc'd */
	size_t nr_wakers;
	uint64_t without_waker_ns;
};

struct report_thread {
	uint64_t tid;
	uint64_t pid; /* its process (threads[].pid), else the target's */
	const char *comm;
	bool exited;
	bool born;
	bool listed; /* false: only seen in spans (a lane of the timeline) */
	struct scheduler_evidence sched;
	struct sev_u64 on_cpu_ns;
	struct report_rq rq;
	struct report_blocked blocked;
	/* The thread's spans: doc->spans[first_span .. first_span + nr_spans) when kept. */
	size_t first_span;
	size_t nr_spans;
	unsigned int depth; /* nesting levels of its spans (0: none) */
};

/* A process of the target set (`processes`). */
struct report_process {
	uint64_t pid;
	struct ev_u64 ppid;
	const char *comm;
	const char *exe; /* NULL: a gap */
	/* processes[].title: read at its join and at the window's end; NULL: a gap, or none. */
	const char *title_join, *title_end;
	uint64_t start_unix_ns;
	bool exit_recorded;
	bool exit_signaled;
	uint64_t exit_value;
	const char *joined;
	bool born, exited, left_cgroup;
	uint64_t threads;
	struct scheduler_evidence sched;
	struct sev_u64 on_cpu_ns;
};

/*
 * A span record's scheduler ledger as the reports use it: what they show of
 * span_ledger, without its blocked time (a million of these are held).
 */
struct report_ledger {
	struct ev_u64 on_cpu_ns;
	uint64_t run_delay_ns;
	uint64_t voluntary_switches;
	uint64_t involuntary_switches;
	uint64_t migrations;
	bool blocked_recorded; /* scheduler.blocked, with --blocked */
	uint64_t blocked_ns;
	struct waker_row *wakers; /* with --wakers, when any (malloc'd) */
	size_t nr_wakers;
};

struct report_span {
	uint64_t span_id;
	uint64_t thread_id;
	uint64_t start_ns;
	uint64_t inclusive_ns; /* open spans: up to the end of the timeline */
	uint64_t exclusive_ns;
	struct ev_u64 parent_span_id;
	size_t metric; /* index into doc->metrics */
	const char *key; /* --key: its key's text (loader-owned), or NULL */
	size_t thread; /* index into doc->threads */
	bool open; /* from open_spans: still open when the window ended */
	bool has_hw;
	struct span_hardware hw; /* when has_hw; a gapped `hardware` gaps all four */
	bool has_ledger;
	struct report_ledger ledger;
	unsigned int depth; /* 0 for a span no other span on its thread encloses */
	bool overlaps; /* crosses a span it does not nest in: not drawn */
};

struct report_metric {
	const char *id;
	bool has_totals; /* listed in span_metrics (exact in-kernel totals) */
	uint64_t calls;
	uint64_t inclusive_ns;
	uint64_t exclusive_ns;
	uint64_t unfinished;
	struct report_bucket *hist;
	size_t nr_hist;
	size_t color; /* rank of id in sorted order: a stable color per metric */
	/* The sums of its calls' ledgers (span_metrics[].scheduler), when given. */
	bool has_ledger;
	struct ev_u64 on_cpu_ns;
	/* on_cpu_ns a sum over on_cpu_covered of on_cpu_calls calls (the others missed a switch-in). */
	bool on_cpu_partial;
	uint64_t on_cpu_covered, on_cpu_calls;
	uint64_t run_delay_ns;
	struct report_blocked blocked;
	/* --span-cause: the cause its spans declare (NULL: none), and how many stretches took it. */
	const char *declared_cause;
	uint64_t declared_cause_stretches;
	/* --key: its keys (span_metrics[].keys), each with id its key's text. */
	struct report_metric *keys;
	size_t nr_keys;
	/* A key: the metric's (other) (key.other), the calls past its keys' bound. */
	bool other;
};

struct report_collector {
	const char *id;
	const char *availability;
	const char *detail; /* NULL when the document gives none */
};

/* Every gap of one field, grouped over array indices. */
struct report_gap {
	char *path; /* "events.spans[*].task_id"; the concrete path when count == 1 */
	char *pattern; /* always with "[*]" */
	enum ev_gap reason;
	uint64_t count;
	const char *hint; /* what to do about it */
};

struct report_probe {
	const char *object;
	const char *symbol;
	const char *metric_id;
	const char *reason;
};

/* A counted USDT probe (usdt_counts[]). */
struct report_usdt {
	const char *probe;
	uint64_t hits;
	size_t nr_processes, nr_threads;
	uint64_t top_pid, top_pid_hits; /* the process with the most hits (0, 0: none) */
};

struct report_loss {
	const char *name;
	uint64_t value;
};

struct report_freq {
	uint64_t elapsed_ns;
	uint64_t min_khz;
	uint64_t max_khz;
	uint64_t mean_khz;
};

struct report_doc {
	struct json_object *root;
	/* Strings copied out of the elements read one at a time (report.c). */
	char **owned;
	size_t nr_owned, cap_owned;

	const char *khbpf_version;
	const char *kernel_release;
	uint64_t pid;
	const char *comm;
	const char *mode;
	const char *exe; /* NULL: a gap */
	bool exit_recorded;
	bool exit_signaled;
	uint64_t exit_value;
	enum ev_gap exit_reason;
	uint64_t start_unix_ns;
	uint64_t wall_ns;
	const char *end_reason;

	bool hardware_recorded;
	enum ev_gap hardware_reason;
	uint32_t logical_cpus;
	struct scheduler_evidence totals;
	struct ev_u64 all_threads_cpu_ns;
	struct ev_u64 parallelism_milli;
	struct report_freq *freq;
	size_t nr_freq;
	struct report_rq rq; /* all threads */
	struct report_blocked blocked; /* scheduler_detail.blocked: the process's */

	struct report_collector *collectors;
	size_t nr_collectors;
	struct report_process *processes; /* in document order (pid, start) */
	size_t nr_processes;
	const char *set_kind; /* target.set.kind, or NULL */
	struct report_thread *threads; /* listed ones first, in document order */
	size_t nr_threads;
	size_t nr_listed;

	bool spans_recorded; /* events.availability */
	enum ev_gap spans_reason;
	uint64_t dropped_span_events;
	uint64_t sampled_out_events;
	/* By thread (in threads[] order), then start, outer before inner. */
	struct report_span *spans; /* NULL when spans_summarized */
	size_t nr_spans;
	bool spans_summarized; /* report_load_opts.span_summary: only counts */
	size_t nr_open;
	size_t nr_overlapping;
	struct report_metric *metrics; /* in span_metrics order, then unlisted ones */
	size_t nr_metrics;
	const char *cycles_event; /* span_counters.cycles_event, or NULL */
	size_t nr_probes;
	size_t nr_probes_attached;
	struct report_probe *failed_probes;
	size_t nr_failed_probes;
	struct report_usdt *usdt; /* usdt_counts, in document order */
	size_t nr_usdt;

	struct report_loss *losses; /* the non-zero loss counters */
	size_t nr_losses;
	size_t nr_losses_unknown; /* loss counters that are gaps */
	struct report_gap *gaps;
	size_t nr_gaps;
	uint64_t gap_fields; /* sum of the gaps' counts */

	uint64_t end_ns; /* timeline end: the window, or the last span end if later */
};

struct report_load_opts {
	size_t sz; /* sizeof(struct report_load_opts) */
	/*
	 * Spans summarized, not kept: doc->spans stays NULL (and the threads'
	 * first_span 0) while every count, depth, crossing and metric total is
	 * as when they are kept. The terminal report needs no more; the
	 * timeline and the trace need each span (about 200 bytes a record,
	 * against 24 for the summary's sort).
	 */
	bool span_summary;
	/* report_doc__load_string_opts only: one json-c tree of the whole text (to compare). */
	bool whole;
	/*
	 * The memory bounds of what json-c builds (report_loader.h: 0 for
	 * REPORT_OUTLINE_MAX, REPORT_ELEMENT_MAX); tests set small ones.
	 */
	uint64_t outline_max, element_max;
};

/* a + b, or UINT64_MAX where it would wrap. */
static inline uint64_t report__sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

#endif /* KHBPF_REPORT_MODEL_H */

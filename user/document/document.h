/* SPDX-License-Identifier: MIT */
/*
 * The khbpf evidence document (EVIDENCE.md, "The khbpf document"): the
 * seed's shapes embedded unchanged plus khbpf's own top-level fields.
 */
#ifndef KHBPF_DOCUMENT_H
#define KHBPF_DOCUMENT_H

#include <limits.h>
#include <sys/types.h>
#include <json-c/json.h>

#include "lib/evidence.h"
#include "host/pressure.h"
#include "host/thermal.h"
#include "khbpf/sched.h"

#define DOC_SCHEMA_MAJOR 1
#define DOC_SCHEMA_MINOR 0
#define DOC_COMM_MAX 64 /* kernel comm is 16 bytes; room for exotic encodings */

enum target_mode { TARGET_MODE_ATTACH = 0, TARGET_MODE_RUN, TARGET_MODE_SERVE };
enum end_reason { END_REASON_DURATION = 0, END_REASON_SIGNAL, END_REASON_TARGET_EXIT };

/*
 * What the target set was (target.set): the kind, its roots or cgroups, and
 * how its processes joined and left.
 */
enum doc_set_kind {
	DOC_SET_NONE = 0, /* serve without --pid, or a document without a set */
	DOC_SET_COMMAND, /* run --no-children */
	DOC_SET_COMMAND_TREE, /* run */
	DOC_SET_PROCESSES, /* attach --pid */
	DOC_SET_PROCESS_TREES, /* attach --pid --children */
	DOC_SET_CGROUPS, /* attach --cgroup */
};

struct doc_set {
	enum doc_set_kind kind;
	const pid_t *pids;
	size_t nr_pids;
	const char *const *cgroups;
	size_t nr_cgroups;
	uint64_t max_processes;
	uint64_t processes; /* listed */
	uint64_t joined_at_start; /* found by the walk at the window's start (roots included) */
	uint64_t joined_at_fork;
	uint64_t joined_later; /* moved into the cgroups, or found by a later walk */
	uint64_t exited;
	uint64_t left;
};

struct doc_target {
	uint64_t pid;
	char comm[DOC_COMM_MAX];
	bool exe_recorded;
	enum ev_gap exe_reason;
	char exe[PATH_MAX];
	enum target_mode mode;
	bool exit_recorded;
	enum ev_gap exit_reason;
	bool exit_signaled; /* exit is {"signal": N} rather than {"code": N} */
	uint64_t exit_value;
	struct doc_set set;
};

struct doc_window {
	uint64_t start_unix_ns;
	uint64_t wall_ns;
	enum end_reason end_reason;
};

/*
 * What BPF measured beyond the kernel's counters (khbpf additions): each
 * runqueue wait timed (log2 histogram) and migrations by distance. Gapped
 * with `reason` when BPF did not run.
 */
struct doc_sched_detail {
	bool recorded;
	enum ev_gap reason;
	uint64_t wait_ns; /* all waits: binned + unbinned */
	uint64_t waits;
	uint64_t unbinned_ns; /* waits known only as a sum, not in the histogram */
	uint64_t unbinned_waits;
	uint64_t switch_ins;
	uint64_t migrations;
	uint64_t mig_class[KHBPF_MIG_CLASSES];
	/* The kernel's nr_migrations beyond what sched_migrate_task saw. */
	uint64_t migrations_unseen;
	uint64_t wait_hist[KHBPF_RQ_SLOTS];
	struct blocked_evidence blocked; /* a gap when blocked time was not timed */
};

/* ThreadScheduler: one per thread seen in the window, exited ones included. */
struct doc_thread {
	uint64_t thread_id;
	char comm[DOC_COMM_MAX];
	bool exited;
	bool born; /* created inside the window */
	bool left_cgroup; /* left the set's cgroups inside the window */
	uint64_t pid; /* its process: (pid, process_start_unix_ns) */
	uint64_t process_start_unix_ns;
	struct scheduler_evidence scheduler;
	struct sev_u64 on_cpu_ns;
	struct doc_sched_detail detail;
};

/* A process of the target set (`processes`, a khbpf addition). */
struct doc_process {
	uint64_t pid;
	bool parent_known;
	uint64_t parent_pid;
	char comm[DOC_COMM_MAX];
	const char *exe; /* NULL: the gap exe_reason */
	enum ev_source exe_source;
	enum ev_gap exe_reason;
	/* Its title (/proc/PID/cmdline as ps shows it) at its join and at the end; NULL: a gap. */
	const char *title_join, *title_end;
	enum ev_gap title_join_reason, title_end_reason;
	uint64_t start_unix_ns;
	struct ev_u64 exit_unix_ns;
	bool exit_recorded;
	bool exit_signaled;
	uint64_t exit_value;
	enum ev_gap exit_reason;
	const char *joined; /* "root", "walk", "fork", "moved" */
	bool born;
	bool exited;
	bool left_cgroup;
	uint64_t threads;
	struct scheduler_evidence scheduler;
	struct sev_u64 on_cpu_ns;
};

struct event_stream {
	bool availability_recorded;
	enum ev_gap availability_reason;
	bool availability;
	uint64_t dropped_events;
	uint64_t dropped_span_events;
	uint64_t sampled_out_events;
	/* Ordered by start_ns: the array, or when it is NULL, span_at's records. */
	const struct span_record *spans;
	size_t nr_spans;
	/* Record i into *out: records made one at a time, when the text is. */
	void (*span_at)(const void *span_ctx, size_t i, struct span_record *out);
	const void *span_ctx;
};

struct log2_bucket {
	uint64_t lower_bound;
	uint64_t upper_bound;
	uint64_t count;
};

struct span_metric {
	char metric_id[SPAN_METRIC_ID_MAX];
	uint64_t calls;
	uint64_t inclusive_ns;
	uint64_t exclusive_ns;
	uint64_t unfinished;
	struct span_ledger ledger; /* sums over the finished calls */
	const struct log2_bucket *histogram;
	size_t nr_buckets;
	/* --key: a keyed metric's keys, each as a metric of its own (is_key, key). */
	const struct span_metric *keys;
	size_t nr_keys;
	bool is_key;
	struct doc_key key;
	uint32_t declared_cause; /* --span-cause: KHBPF_BLOCK_* + 1; 0: none declared */
	uint64_t declared_cause_stretches; /* blocked stretches the declaration named */
};

/* A metric's calls in one process (`process_span_metrics`, a khbpf addition). */
struct doc_process_metric {
	uint64_t pid;
	uint64_t process_start_unix_ns;
	const char *metric_id;
	uint64_t calls;
	uint64_t inclusive_ns;
	uint64_t exclusive_ns;
};

/* A --usdt probe's hits in one process or thread (within `usdt_counts`). */
struct usdt_count_by {
	uint64_t id; /* pid, or thread id */
	uint64_t process_start_unix_ns; /* processes only */
	uint64_t hits;
};

struct usdt_key_hits {
	struct doc_key key;
	uint64_t hits;
};

/* A counted USDT probe (--usdt; a khbpf addition: `usdt_counts`). */
struct usdt_count {
	const char *metric_id;
	const char *probe; /* PROVIDER:NAME */
	uint64_t hits; /* every thread's, exact */
	const struct usdt_count_by *processes; /* by pid, start */
	size_t nr_processes;
	const struct usdt_count_by *threads; /* by thread id */
	size_t nr_threads;
	/* --key: hits by key (most first, "(other)" last). */
	const struct usdt_key_hits *keys;
	size_t nr_keys;
};

/* A span still open at the window's end (a khbpf addition: `open_spans`). */
struct open_span {
	uint64_t span_id;
	struct ev_u64 parent_span_id;
	char metric_id[SPAN_METRIC_ID_MAX];
	uint64_t thread_id;
	uint64_t start_ns;
	struct doc_key key; /* --key */
};

struct span_probe {
	char object[PATH_MAX];
	char symbol[256];
	/* The debug file symbol was read from (a stripped object's); "" for none. */
	char symbols_from[PATH_MAX];
	char metric_id[SPAN_METRIC_ID_MAX];
	/* "function", "usdt-start" or "usdt-done": what the site does with a span. */
	const char *site;
	bool attached;
	char reason[512]; /* non-empty when !attached */
	uint32_t exec_pid; /* found when this process exec'd (0: at the start) */
	uint64_t attach_delay_ns; /* ... attached this long after that exec */
};

/*
 * What per-span counter readings are made of (a khbpf addition:
 * `span_counters`): with the sw-cpu-clock test aid, the spans' cycles and
 * instructions fields hold software cpu-clock nanoseconds.
 */
struct span_counters_info {
	const char *requested; /* "hw", "sw-cpu-clock" or "none" */
	const char *cycles_event; /* what fills the cycles fields; NULL: "none" */
	const char *instructions_event;
	uint32_t cpus; /* CPUs whose events opened */
	char detail[160]; /* why none opened, when requested */
};

/* overhead and loss are open objects of named exact counters. */
struct named_u64 {
	const char *name;
	struct ev_u64 value;
};

struct evidence_doc {
	struct doc_target target;
	struct doc_window window;
	const struct collector_capability *collectors;
	size_t nr_collectors;
	bool hardware_recorded;
	enum ev_gap hardware_reason;
	const struct hardware_run *hardware;
	const struct doc_process *processes;
	size_t nr_processes;
	const struct doc_thread *threads;
	size_t nr_threads;
	/* Process-wide: the sum of the threads' details, and the kernel's run_delay beside it. */
	struct doc_sched_detail sched_detail;
	struct sev_u64 kernel_run_delay_ns;
	/* Pressure of the host and of the target's cgroup, and thermal state; NULL: not written. */
	const struct pressure_window *pressure_host;
	const struct pressure_window *pressure_cgroup;
	const struct thermal_window *thermal;
	struct event_stream events;
	const struct span_metric *span_metrics;
	size_t nr_span_metrics;
	const struct doc_process_metric *process_metrics;
	size_t nr_process_metrics;
	const struct usdt_count *usdt_counts;
	size_t nr_usdt_counts;
	const struct span_probe *span_probes;
	size_t nr_span_probes;
	const struct open_span *open_spans;
	size_t nr_open_spans;
	struct span_counters_info span_counters;
	const struct named_u64 *overhead;
	size_t nr_overhead;
	const struct named_u64 *loss;
	size_t nr_loss;
};

const char *target_mode__name(enum target_mode mode);
const char *end_reason__name(enum end_reason reason);

/* The whole document as a json-c object (caller puts it); NULL on ENOMEM. */
struct json_object *evidence_doc__to_json(const struct evidence_doc *doc);
/*
 * The same, but `threads` and `events.spans` are built one element at a time
 * from doc's arrays while the text is made, so memory does not hold a json-c
 * object per field of every thread and span at once. doc must outlive the
 * result; the text is the same as evidence_doc__to_json's.
 */
struct json_object *evidence_doc__to_json_lazy(const struct evidence_doc *doc);

/* "producer" fields: khbpf, libbpf and kernel versions of this host. */
struct json_object *evidence_doc__producer(void);

#endif /* KHBPF_DOCUMENT_H */

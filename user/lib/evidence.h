/* SPDX-License-Identifier: MIT */
/*
 * The gapped evidence core: C shapes of keyhog-profile's Evidence<T>,
 * SourcedEvidence<T> and HardwareRunEvidence (docs/evidence.md),
 * plus the pure functions that combine them.
 *
 * A zero-initialised evidence value is the gap "unavailable", never a
 * recorded zero: forgetting to fill a field cannot fabricate a measurement.
 */
#ifndef KHBPF_EVIDENCE_H
#define KHBPF_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EV_COMPONENT_VERSION 1
/* Seed bounds: retained utilization/frequency samples and threads per sample. */
#define EV_MAX_SAMPLES 256
#define EV_MAX_SAMPLE_THREADS 1024

enum ev_gap {
	EV_GAP_UNAVAILABLE = 0,
	EV_GAP_LEGACY_V1_NOT_RECORDED,
	EV_GAP_COLLECTOR_DISABLED,
	EV_GAP_PERMISSION_DENIED,
	EV_GAP_UNSUPPORTED,
	EV_GAP__COUNT,
};

enum ev_source {
	EV_SRC_PERF_EVENT_OPEN = 0,
	EV_SRC_PROC_SELF_SCHED,
	EV_SRC_PROC_SELF_SCHEDSTAT,
	EV_SRC_PROC_SELF_TASK_STAT,
	EV_SRC_PROC_SELF_STATUS,
	EV_SRC_PROC_SELF_STAT,
	EV_SRC_PROC_SELF_IO,
	EV_SRC_PROC_PRESSURE,
	EV_SRC_SYSFS_CPU,
	EV_SRC_SYSFS_CGROUP,
	EV_SRC_SYSFS_THERMAL,
	EV_SRC_SYSTEM_CALL,
	EV_SRC_WINDOWS_API,
	EV_SRC_MAC_OS_API,
	/* khbpf's additions */
	EV_SRC_BPF_TRACEPOINT,
	EV_SRC_BPF_UPROBE,
	EV_SRC_PROC_PID_SCHED,
	EV_SRC_PROC_PID_SCHEDSTAT,
	EV_SRC_PROC_PID_TASK_STAT,
	EV_SRC_PROC_PID_EXE,
	EV_SRC_PROC_PID_CMDLINE,
	EV_SRC__COUNT,
};

enum collector_id {
	COLLECTOR_PROCESS_RESOURCES = 0,
	COLLECTOR_HARDWARE_COUNTERS,
	COLLECTOR_SCHEDULER_ACTIVITY,
	COLLECTOR_THREAD_UTILIZATION,
	COLLECTOR_CPU_TOPOLOGY,
	COLLECTOR_ALLOCATION_TRACKING,
	COLLECTOR_SYSTEM_IO,
	COLLECTOR_PRESSURE_THERMAL,
	COLLECTOR_SPAN_PROBES,
	COLLECTOR__COUNT,
};

enum collector_availability {
	AVAIL_AVAILABLE = 0,
	AVAIL_DISABLED,
	AVAIL_PERMISSION_DENIED,
	AVAIL_UNAVAILABLE,
	AVAIL_UNSUPPORTED,
	AVAIL__COUNT,
};

/* Kebab-case names exactly as the schema spells them. */
const char *ev_gap__name(enum ev_gap gap);
const char *ev_source__name(enum ev_source source);
/*
 * The keyhog-profile crate's source for a khbpf source (docs/evidence.md
 * 11): the crate's own stay, khbpf's additions are system-call.
 */
enum ev_source ev_source__keyhog(enum ev_source source);
/* The source named name into *out; false when no source has that name. */
bool ev_source__parse(const char *name, enum ev_source *out);
const char *collector_id__name(enum collector_id id);
const char *collector_availability__name(enum collector_availability av);
/* The gap that a collector's availability implies for its fields. */
enum ev_gap collector_availability__gap(enum collector_availability av);

struct ev_u64 {
	bool recorded;
	enum ev_gap reason; /* meaningful only when !recorded */
	uint64_t value; /* meaningful only when recorded */
};

struct ev_u32 {
	bool recorded;
	enum ev_gap reason;
	uint32_t value;
};

struct sev_u64 {
	struct ev_u64 ev;
	enum ev_source source;
};

struct sev_u32 {
	struct ev_u32 ev;
	enum ev_source source;
};

/* Evidence<SOURCE>, e.g. utilization.frequency_availability. */
struct ev_source_ev {
	bool recorded;
	enum ev_gap reason;
	enum ev_source value;
};

struct ev_u64 ev_u64__recorded(uint64_t value);
struct ev_u64 ev_u64__gap(enum ev_gap reason);
struct ev_u32 ev_u32__recorded(uint32_t value);
struct ev_u32 ev_u32__gap(enum ev_gap reason);
struct sev_u64 sev_u64__recorded(uint64_t value, enum ev_source source);
struct sev_u64 sev_u64__gap(enum ev_source source, enum ev_gap reason);
struct sev_u32 sev_u32__recorded(uint32_t value, enum ev_source source);
struct sev_u32 sev_u32__gap(enum ev_source source, enum ev_gap reason);

/* Saturating end - start; the end's gap wins, then the start's. */
struct ev_u64 ev_u64__delta(struct ev_u64 end, struct ev_u64 start);
/* As ev_u64__delta, carrying the end's source. */
struct sev_u64 sev_u64__delta(struct sev_u64 end, struct sev_u64 start);

/* floor(n * 1000 / d) in 128 bits, saturated to UINT64_MAX; false when d == 0. */
bool milli_ratio(uint64_t numerator, uint64_t denominator, uint64_t *out);
/* milli_ratio over evidence: gaps propagate (numerator first), d == 0 is "unavailable". */
struct ev_u64 ev_u64__milli_ratio(struct ev_u64 numerator, struct ev_u64 denominator);
/* milli_ratio of plain values as evidence: d == 0 is "unavailable". */
struct ev_u64 milli_ratio_ev(uint64_t numerator, uint64_t denominator);

struct collector_capability {
	enum collector_id collector;
	enum collector_availability availability;
	char detail[256]; /* empty when available; otherwise what to do */
};

void collector_capability__set(struct collector_capability *cap, enum collector_id id,
			       enum collector_availability av, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---- hardware counters ---- */

struct counter_sample {
	uint64_t elapsed_ns;
	struct sev_u64 cycles;
	struct sev_u64 instructions;
	struct sev_u64 cache_references;
	struct sev_u64 cache_misses;
	struct sev_u64 branch_instructions;
	struct sev_u64 branch_misses;
	struct sev_u64 stalled_cycles_frontend;
	struct sev_u64 stalled_cycles_backend;
	struct sev_u64 stalled_cycles_memory;
};

struct counter_set {
	struct sev_u64 cycles;
	struct sev_u64 instructions;
	struct sev_u64 cache_references;
	struct sev_u64 cache_misses;
	struct sev_u64 branch_instructions;
	struct sev_u64 branch_misses;
	struct sev_u64 stalled_cycles_frontend;
	struct sev_u64 stalled_cycles_backend;
	struct sev_u64 stalled_cycles_memory;
	struct ev_u64 cpi_milli;
	struct ev_u64 cache_miss_ratio_milli;
	struct ev_u64 branch_miss_ratio_milli;
};

void counter_set__between(struct counter_set *out, const struct counter_sample *start,
			  const struct counter_sample *end);
/*
 * Every counter gapped with `reason` and `source`; stalled_cycles_memory is
 * always unsupported from perf-event-open on Linux (no generic perf event).
 */
void counter_set__all_gapped(struct counter_set *out, enum ev_source source, enum ev_gap reason);

/* ---- scheduler ---- */

struct scheduler_sample {
	struct sev_u64 voluntary_context_switches;
	struct sev_u64 involuntary_context_switches;
	struct sev_u64 total_context_switches;
	struct sev_u64 cpu_migrations;
	struct sev_u64 runqueue_delay_ns;
	struct sev_u64 timeslices;
};

struct scheduler_evidence {
	struct sev_u64 voluntary_context_switches;
	struct sev_u64 involuntary_context_switches;
	struct sev_u64 total_context_switches;
	struct sev_u64 cpu_migrations;
	struct sev_u64 scheduler_delay_ns;
	struct sev_u64 timeslices;
};

void scheduler_evidence__between(struct scheduler_evidence *out,
				 const struct scheduler_sample *start,
				 const struct scheduler_sample *end);
void scheduler_evidence__all_gapped(struct scheduler_evidence *out, enum ev_source source,
				    enum ev_gap reason);

/* ---- utilization ---- */

struct thread_cpu {
	uint64_t thread_id;
	uint64_t cpu_time_ns;
};

/* One per-thread CPU census; threads[] holds at most EV_MAX_SAMPLE_THREADS. */
struct thread_census {
	uint64_t elapsed_ns;
	struct thread_cpu *threads;
	size_t nr_threads;
	uint64_t dropped_threads;
};

struct thread_utilization {
	uint64_t thread_id;
	uint64_t cpu_time_ns;
	struct ev_u64 utilization_milli;
};

struct cpu_frequency_sample {
	uint64_t elapsed_ns;
	uint64_t min_khz;
	uint64_t max_khz;
	uint64_t mean_khz;
	uint32_t cpu_count;
};

struct utilization_evidence {
	uint64_t wall_ns;
	uint32_t logical_cpus;
	uint64_t total_thread_cpu_ns;
	struct ev_u64 effective_parallelism_milli;
	struct ev_u64 capacity_utilization_milli;
	struct thread_utilization *threads; /* owned; sorted by thread_id */
	size_t nr_threads;
	uint64_t exited_threads;
	uint64_t joined_threads;
	uint64_t samples_retained;
	uint64_t dropped_samples;
	struct cpu_frequency_sample *frequency_samples; /* owned */
	size_t nr_frequency_samples;
	struct ev_source_ev frequency_availability;
	uint64_t dropped_frequency_samples;
	/*
	 * khbpf additions: on-CPU time of every thread seen in the window,
	 * exited and joined ones included (the seed's total counts only
	 * threads alive at both ends), and that over wall time.
	 */
	struct ev_u64 all_threads_cpu_ns;
	struct ev_u64 all_threads_parallelism_milli;
	uint64_t dropped_threads; /* census entries beyond EV_MAX_SAMPLE_THREADS */
};

struct utilization_opts {
	const struct thread_census *first; /* NULL when no census was taken */
	const struct thread_census *last;
	uint64_t samples_retained;
	uint64_t dropped_samples;
	uint64_t wall_ns;
	uint32_t logical_cpus;
	const struct cpu_frequency_sample *frequency_samples; /* copied */
	size_t nr_frequency_samples;
	uint64_t dropped_frequency_samples;
	struct ev_source_ev frequency_availability;
};

/*
 * Threads alive in both censuses contribute their CPU delta; threads only in
 * the first are "exited", only in the last "joined". Returns 0 or -ENOMEM.
 */
int utilization__compute(struct utilization_evidence *out, const struct utilization_opts *opts);
void utilization__free(struct utilization_evidence *u);

/* ---- topology ---- */

struct topology_evidence {
	uint32_t logical_cpus;
	struct sev_u32 physical_cores;
	struct sev_u32 packages;
	struct sev_u32 numa_nodes;
	struct sev_u32 affinity_cpus;
	struct sev_u64 cpu_quota_milli;
};

/* ---- spans ---- */

struct span_hardware {
	struct ev_u64 cycles_begin;
	struct ev_u64 cycles_end;
	struct ev_u64 instructions_begin;
	struct ev_u64 instructions_end;
};

#define SPAN_METRIC_ID_MAX 64

/*
 * khbpf addition: time off-CPU and not runnable (blocked), by cause, and who
 * ended it. Causes are indexed as KHBPF_BLOCK_* (include/khbpf/sched.h).
 */
#define BLOCK_CAUSES 5
#define WAKER_COMM_MAX 16

/* Who ended a blocked stretch: the values of KHBPF_WAKER_* (include/khbpf/sched.h). */
enum waker_kind {
	WAKER_THREAD = 1,
	WAKER_INTERRUPT = 2,
	WAKER_TIMER = 3,
};

struct waker_row {
	uint32_t kind; /* enum waker_kind */
	uint32_t tid; /* KHBPF_WAKER_TASK: the waking thread and its process */
	uint32_t pid;
	char comm[WAKER_COMM_MAX];
	uint64_t ns; /* blocked time its wakeups ended */
	uint64_t count;
	/* Span records: when it last woke the span's thread, from the window's start. */
	bool has_last_wakeup;
	uint64_t last_wakeup_ns;
};

/* Wakers a span record lists (the document's `wakers` of a span's ledger). */
#define SPAN_RECORD_WAKERS 4

struct blocked_evidence {
	bool recorded;
	enum ev_gap reason;
	uint64_t ns[BLOCK_CAUSES];
	uint64_t count[BLOCK_CAUSES]; /* stretches that began (threads) or ended (spans) */
	/*
	 * Off-CPU time neither the kernel's run_delay nor a blocked stretch
	 * explains: queued migrations' clock skew; signed.
	 */
	int64_t unattributed_ns;
	bool has_unseen;
	uint64_t offcpu_unseen; /* threads: switch-ins whose switch-out was not seen */
	bool has_wakers;
	const struct waker_row *wakers; /* the top ones, by ns */
	size_t nr_wakers;
	uint64_t other_wakers_ns, other_wakers_count; /* the wakers beyond those */
	uint64_t without_waker_ns; /* blocked time no waker is known for */
};

uint64_t blocked_evidence__total(const struct blocked_evidence *b);
/* The document's name of cause i (KHBPF_BLOCK_* order): "lock" ... "other"; NULL past them. */
const char *blocked_cause__name(size_t i);

/* khbpf addition: what the scheduler did while spans were open. */
struct span_ledger {
	struct ev_u64 on_cpu_ns; /* a gap when a switch-in was missed in between */
	/*
	 * A metric's sum where some calls (not all) missed a switch-in: the sum
	 * over the others, on_cpu_ns recorded, with how many it covers (partial).
	 */
	bool on_cpu_partial;
	uint64_t on_cpu_covered_calls, on_cpu_calls;
	uint64_t run_delay_ns;
	uint64_t voluntary_switches;
	uint64_t involuntary_switches;
	uint64_t migrations;
	struct blocked_evidence blocked;
};

/* A --key key of a span or probe hit: its text (an int in decimal), or its metric's "(other)". */
struct doc_key {
	const char *text; /* NULL: not keyed */
	bool is_str;
	bool truncated; /* a str cut at 63 bytes */
	bool other; /* past the metric's bound of keys, or its argument unreadable */
};

struct span_record {
	uint64_t span_id;
	struct ev_u64 parent_span_id;
	char metric_id[SPAN_METRIC_ID_MAX];
	struct doc_key key; /* --key: the key it counted under */
	uint64_t start_ns;
	uint64_t inclusive_ns;
	uint64_t exclusive_ns;
	uint64_t thread_id;
	struct ev_u64 task_id;
	struct ev_u64 worker_id;
	bool hardware_recorded;
	enum ev_gap hardware_reason;
	struct span_hardware hardware;
	bool has_ledger;
	struct span_ledger ledger;
	struct waker_row waker_rows[SPAN_RECORD_WAKERS]; /* ledger.blocked.wakers, when any */
};

/* Inclusive deltas of one span's readings; gaps propagate like ev_u64__delta. */
struct ev_u64 span_hardware__cycles(const struct span_hardware *hw);
struct ev_u64 span_hardware__instructions(const struct span_hardware *hw);

struct span_hw_sum {
	uint64_t span_count;
	uint64_t cycles;
	uint64_t instructions;
	struct ev_u64 cpi_milli;
};

struct stage_hardware {
	char metric_id[SPAN_METRIC_ID_MAX];
	struct span_hw_sum sum;
};

struct thread_hardware {
	uint64_t thread_id;
	struct span_hw_sum sum;
};

struct span_hw_aggregation {
	uint64_t span_count; /* all spans given, with or without readings */
	struct span_hw_sum run; /* run.span_count is spans_with_counters */
	struct stage_hardware *stages; /* owned; sorted by metric_id */
	size_t nr_stages;
	struct thread_hardware *threads; /* owned; sorted by thread_id */
	size_t nr_threads;
};

/*
 * Exact totals of one (metric, thread): every call, and the sums of the
 * recorded counter deltas over the calls that had any (with_counters).
 * Without hardware readings at all (no counters) the totals join no stage
 * or thread; with readings that were all gaps, they join with a count of 0.
 */
struct span_hw_total {
	const char *metric_id;
	uint64_t thread_id;
	bool hardware;
	uint64_t calls;
	uint64_t with_counters;
	uint64_t cycles;
	uint64_t instructions;
};

/* The aggregation from totals (not records, which may be sampled out). */
int span_hw_aggregation__from_totals(struct span_hw_aggregation *out,
				     const struct span_hw_total *totals, size_t nr);

/* Returns 0 or -ENOMEM. */
int span_hw_aggregation__compute(struct span_hw_aggregation *out, const struct span_record *spans,
				 size_t nr_spans);
void span_hw_aggregation__free(struct span_hw_aggregation *agg);

/* ---- the hardware run evidence ---- */

struct hardware_run {
	struct counter_set counters;
	struct scheduler_evidence scheduler;
	struct utilization_evidence utilization;
	struct topology_evidence topology;
	bool span_aggregation_recorded;
	enum ev_gap span_aggregation_reason;
	struct span_hw_aggregation span_aggregation;
};

#endif /* KHBPF_EVIDENCE_H */

/* SPDX-License-Identifier: MIT */
/*
 * The scheduler collector: the sched_bpf skeleton (bpf/sched.bpf.c and
 * bpf/span.bpf.c, linked into one object) behind an opaque object.
 * Lifecycle: open (configure + load) → add_target → attach (and
 * attach_spans) → snapshot/exited reads → detach_spans (background) →
 * destroy (detaches everything and waits for it, on every path).
 */
#ifndef KHBPF_SCHED_COLLECTOR_H
#define KHBPF_SCHED_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "khbpf/sched.h"
#include "khbpf/spans.h"
#include "khbpf/targets.h"
#include "collect/sched_variant.h"
#include "collect/thread_table.h"

struct sched_collector;
struct host_topology;

/*
 * Span sites' links. uprobe_multi (Linux 6.6): the sites of one file in one
 * link each way. Per site: a uprobe and a uretprobe link of its own, perf
 * events that `bpftool perf show` lists with their file and offset.
 */
enum sched_span_links {
	/* uprobe_multi where the kernel has it and there are SCHED_SPAN_MULTI_MIN_SITES */
	SCHED_SPAN_LINKS_AUTO,
	SCHED_SPAN_LINKS_MULTI, /* uprobe_multi where the kernel has it, for any number */
	/* Per site everywhere: the way of kernels before 6.6, testable on any kernel. */
	SCHED_SPAN_LINKS_PER_SITE,
};

/*
 * Below this many sites, auto links each site on its own: they come down in
 * a second or less (about 0.1 s a link here) and stay visible as perf
 * events; from it on, a link per file saves about 0.2 s a site.
 */
#define SCHED_SPAN_MULTI_MIN_SITES 4

/* What the per-CPU counter slots of span readings hold. */
enum sched_counters {
	SCHED_COUNTERS_NONE,
	SCHED_COUNTERS_HW, /* cycles, instructions */
	/* Test aid: software cpu-clock (ns) in both slots, for machines without a PMU. */
	SCHED_COUNTERS_SW_CPU_CLOCK,
};

struct sched_collector_opts {
	size_t sz;
	bool trace_all; /* every task but the idle task */
	uint32_t max_exited; /* exited-thread records; 0 → default */
	/*
	 * Kernels without task storage: threads with state at once (the hash
	 * fallback); 0 → KHBPF_DEFAULT_MAX_TASKS. Session passes --max-threads.
	 */
	uint32_t max_tasks;
	const struct host_topology *topo; /* for migration distance; may be NULL */
	bool run_stats; /* BPF_ENABLE_STATS for the window */
	/*
	 * Time waits with the wakeup programs even when the kernel has
	 * sched_info: the path kernels without CONFIG_SCHED_INFO take, so it
	 * can be tested on any kernel.
	 */
	bool bpf_timed_waits;
	/*
	 * Per-thread and span state in the hashes even where task storage
	 * works: the path PREEMPT_RT and kernels before 5.11 take, so it can
	 * be tested on any kernel.
	 */
	bool task_hashes;
	/*
	 * sched_process_exit's program not attached: every exit record is
	 * then made at the thread's final switch, as when the kernel skips
	 * that program (a preempted run of it on the CPU, 7.x), so the path
	 * can be tested on any kernel.
	 */
	bool no_exit_program;
	/*
	 * Every hash preallocated whole, as kernels without the BPF memory
	 * allocator (bpf_mem_alloc, before 6.1) have them: their path and their
	 * kernel memory, measurable on any kernel.
	 */
	bool prealloc;
	/*
	 * Blocked time by cause (--blocked): each off-CPU stretch of a target
	 * timed at both its switches, about 1.5 times the scheduler
	 * program's cost per target switch (BENCHMARKS.md); off by default.
	 */
	bool blocked;
	/*
	 * Who woke each thread (run and attach): sched_waking and the interrupt
	 * context tracepoints loaded, a hash update per blocked stretch.
	 */
	bool wakers;
	uint32_t max_wakers; /* (thread, waker) entries; 0 → KHBPF_DEFAULT_MAX_WAKERS */
	/* Span probes: keep per-thread on-CPU clocks and take span records. */
	bool spans;
	uint64_t max_spans; /* records through the ring buffer; 0 → default */
	/*
	 * The span ring buffer's bytes: a power of two from KHBPF_SPAN_RINGBUF_MIN
	 * to KHBPF_SPAN_RINGBUF_MAX (else open fails with -EINVAL); 0 → default.
	 */
	uint32_t span_buffer;
	uint32_t max_span_keys; /* (thread, metric) aggregates; 0 → default */
	/*
	 * serve (group_by): each call counts in its (group, metric) series,
	 * at most max_span_series of them (0 → KHBPF_DEFAULT_SPAN_SERIES),
	 * and takes no record: no per-thread aggregates, no ring buffer.
	 */
	uint32_t max_span_series;
	/*
	 * Span sites are attached for every process (pid -1), each file once,
	 * and the programs keep to the set's members: a set that grows (its
	 * forked processes share the parent's mappings, and a per-process
	 * uprobe comes off a child at its first hit).
	 */
	bool span_per_file;
	/* Some sites end a span where they are (USDT DONE sites): their program is loaded. */
	bool span_close;
	/* Some sites count hits (--usdt): their program and map are loaded. */
	bool usdt_hits;
	/* Some metrics are keyed (--key): sched_collector__set_key and _set_site_arg say how. */
	bool keys;
	/* Some metrics declare a blocked cause (--span-cause): sched_collector__set_span_cause. */
	bool span_causes;
	/*
	 * With span_per_file: each exec of a member is passed to on_exec (with
	 * on_span_ctx), from sched_collector__drain_spans, so that the sites
	 * of a binary not seen before are found and attached as it appears.
	 */
	void (*on_exec)(void *ctx, const struct khbpf_exec_event *e);
	enum sched_counters counters; /* per-span counter readings (spans only) */
	/* How span sites are linked (enum sched_span_links), and how many will be. */
	enum sched_span_links span_links;
	size_t span_sites;
	/*
	 * The target set (KHBPF_SET_*, include/khbpf/targets.h): roots given
	 * by add_target, cgroups by cgroup_ids (below), joined by
	 * sched_collector__join; KHBPF_SET_NONE: trace_all, or serve's
	 * cgroup filters.
	 */
	uint32_t set_mode;
	uint32_t max_processes; /* processes in the set over the window; 0 → default */
	/*
	 * Switches on the generic program even where the set's one can be
	 * used (task storage): the path the hash fallback takes, testable
	 * on any kernel, and the A/B of the non-target cost.
	 */
	bool generic_switch;
	/* serve: sum the scheduler into groups (KHBPF_GROUP_*) in the kernel. */
	uint32_t group_by;
	uint32_t max_groups; /* entries of the groups map; 0 → KHBPF_DEFAULT_MAX_GROUPS */
	/* Only tasks in these cgroup v2 subtrees (kernfs id, depth below the root): serve's filters, or KHBPF_SET_CGROUP. */
	uint64_t cgroup_ids[KHBPF_MAX_CGROUP_FILTERS];
	uint32_t cgroup_levels[KHBPF_MAX_CGROUP_FILTERS];
	uint32_t nr_cgroups;
	/* Called for each span record as it is drained; may be NULL. */
	void (*on_span)(void *ctx, const struct khbpf_span_event *e,
			const struct khbpf_span_wakes *wakes);
	void *on_span_ctx;
};

#define SCHED_PROG_MAX 24
struct sched_prog_stats {
	char name[32];
	uint64_t run_cnt;
	uint64_t run_time_ns;
	uint64_t recursion_misses; /* runs the kernel skipped: this program was busy on that CPU */
	bool recursion_known; /* the kernel's bpf_prog_info has recursion_misses (5.12) */
};

/*
 * A program's name as documents show it: a kernel-specific variant
 * (khbpf_sched_switch_nostate, khbpf_span_enter_nofetch) under the name of
 * the program it stands in for, so `overhead` and `loss` keys are the same on
 * every kernel.
 */
void sched_collector__role_name(const char *prog, char *out, size_t size);

struct sched_collector_stats {
	bool run_stats_enabled; /* run_cnt/run_time_ns are measured, not zero by default */
	struct sched_prog_stats progs[SCHED_PROG_MAX];
	size_t nr_progs;
	uint64_t storage_failures;
	uint64_t exited_overflow;
	uint64_t final_unmatched;
	uint64_t exits_at_final; /* exit records made at the final switch */
	uint64_t iter_write_errors;
	uint64_t exit_not_final; /* exit records never refreshed by a final switch */
	uint32_t max_exited;
	bool sched_info; /* the kernel has sched_info (run_delay, pcount) */
	uint64_t span_site_unresolved; /* no cookies: span entries at a site not in the map */
	uint64_t usdt_hits_lost; /* --usdt hits the (thread, probe) table had no room for */
	uint64_t span_key_other_calls; /* keyed calls past their metric's bound of keys */
	uint64_t span_key_unreadable; /* keyed calls whose argument could not be read */
	uint64_t span_key_table_full; /* keyed calls whose new key found no room */
	bool blocked_asked; /* --blocked or --wakers was given */
	bool blocked; /* blocked time timed (asked, and the kernel allows it) */
	bool wakers; /* ... and who woke each thread */
	uint64_t wakers_overflow; /* blocked stretches the wakers map had no room for */
	uint64_t wakeups_unseen; /* blocked stretches that ended without a sched_waking seen */
	uint64_t span_wakes_unlisted; /* span stretches the span clock's wake_log no longer held */
	uint64_t span_wakers_overflow; /* span stretches the span_wakers map had no room for */
	uint64_t blocked_regs_unread; /* blocked stretches whose system call was unread (other) */
	bool span_causes; /* --span-cause declarations are in force (spans and blocked time) */
	struct sched_variant variant;
	/* Span counters requested, but the kernel's verifier refused those programs. */
	bool counters_refused;
	/* Spans: every finished span is emitted, dropped or sampled out. */
	uint64_t span_records;
	uint64_t span_ringbuf_drops;
	uint32_t span_ringbuf_bytes; /* the span ring buffer's size; 0 without spans */
	uint64_t span_sampled_out;
	uint64_t span_depth_overflow;
	uint64_t span_unwound;
	uint64_t span_unmatched;
	uint64_t span_agg_overflow;
	uint64_t span_state_failures;
	uint64_t span_events_delivered; /* records the loader received */
	uint64_t span_events_malformed; /* ... of an unexpected size, not used */
	uint64_t span_clock_gaps; /* missed switch-ins (spans across one: on-CPU is a gap) */
	uint64_t span_counter_skews; /* counter readings given up (those spans: gaps) */
	uint64_t exec_renumbered; /* non-leader exec: two threads under the leader's id */
	uint64_t span_open_at_exit_drops; /* open at a thread's exit, ring buffer full: lost */
	/* Per-span counters: slots in use (0: none) and why not, -errno. */
	uint32_t nr_counters;
	int counters_err;
	uint32_t counter_cpus; /* CPUs whose counters opened */
	/* The target set. */
	uint32_t set_mode;
	uint32_t max_processes;
	uint64_t procs_overflow; /* processes that could not join: the table was full */
	uint64_t join_failures; /* threads that could not join: no state could be made */
	/* Forks the fork program's recursion guard skipped, joined at wake_up_new_task. */
	uint64_t forks_joined_at_wakeup;
	uint64_t moved_base_overflow; /* moved into the cgroups: baseline not kept */
	uint64_t cgroup_moves_in; /* whole processes moved into the cgroups */
	uint64_t cgroup_rejoins; /* threads that left the cgroups and were found in them again */
	uint64_t exec_events_dropped; /* execs the loader was not told of (ring buffer full) */
	uint64_t wait_folds_max; /* wait folds the plain switch program had; 0: none */
	uint64_t wait_folds_full; /* members whose wait fold entry was held when they took it */
	bool set_switch; /* the set's sched_switch program (no helper for non-targets) */
	/* Groups (serve). */
	uint64_t groups_made;
	uint64_t group_overflow; /* switch-outs summed into the spill: the map was full */
	/* Span series (serve). */
	uint64_t span_series_made;
	uint64_t span_series_overflow; /* calls counted in their metric's spill: the map was full */
	uint64_t span_open_at_exit_serve; /* spans open when their thread exited: in no series */
};

/* serve: a span metric's series of one group (span_series). */
struct span_series_entry {
	struct khbpf_span_series_key key;
	struct khbpf_span_agg agg;
};

struct group_entry {
	struct khbpf_group_key key;
	struct khbpf_group_acc acc;
};

struct waker_entry {
	struct khbpf_waker_key key;
	struct khbpf_waker_val val;
};

struct span_waker_entry {
	struct khbpf_span_waker_key key;
	struct khbpf_span_waker_val val;
};

struct span_agg_entry {
	struct khbpf_span_key key;
	struct khbpf_span_agg agg;
};

/* A key seen (--key): the keyed metric and the key, and the metric id its calls count under. */
struct key_entry {
	struct khbpf_key key;
	uint32_t id;
};

/* A --usdt probe's hits (key.metric) by one thread (key.tid). */
struct usdt_hit_entry {
	struct khbpf_span_key key;
	uint64_t hits;
};

/* Opens and loads the BPF object. Returns 0 or -errno (-EPERM without CAP_BPF). */
int sched_collector__open(struct sched_collector **out, const struct sched_collector_opts *opts);
/* bpf() on held fds refused without a capability (see the .c): keep CAP_BPF. */
bool sched_collector__bpf_needs_cap(struct sched_collector *c);
/*
 * A root of the set: the process tgid (-EINVAL if not > 0); -E2BIG beyond
 * KHBPF_MAX_TARGETS of them. Before sched_collector__join.
 */
int sched_collector__add_target(struct sched_collector *c, pid_t tgid);

/*
 * The target set (sched_targets.c). attach_set puts on the programs that
 * keep it (fork, exec, exit, cgroup moves): before the first join, so that
 * no process forked meanwhile is lost. join walks the tasks until a walk
 * finds no one new; each thread that joins is stamped as `how` says (1:
 * its accounting starts now, the window's baseline; 2: run's held command,
 * only its off-CPU stretch) and its record appended to *base (sorted),
 * *joined counting them. Then attach puts on the rest.
 */
int sched_collector__attach_set(struct sched_collector *c);
int sched_collector__join(struct sched_collector *c, uint32_t how, struct thread_table *base,
			  size_t *joined);
/* Process records made so far: a change says a process joined (its title can be read). */
uint64_t sched_collector__procs_joined(const struct sched_collector *c);
/* Cgroup sets: threads moved in are waiting to join (a process moved whole). */
bool sched_collector__join_pending(struct sched_collector *c);
/* The processes of the set, sorted by (pid, start_time); *out malloc'd. */
struct proc_entry {
	struct khbpf_proc_key key;
	struct khbpf_proc_rec rec;
};
int sched_collector__processes(struct sched_collector *c, struct proc_entry **out, size_t *nr);
/* The set's execs are passed to on_exec (spans in a set that grows). */
bool sched_collector__follows_exec(const struct sched_collector *c);
/* serve: the records of processes that ended are removed (a window has read them). */
int sched_collector__drain_processes(struct sched_collector *c);
/* Cgroup sets: the baselines of threads that joined when moved in. */
int sched_collector__moved_baselines(struct sched_collector *c, struct thread_table *out);
int sched_collector__attach(struct sched_collector *c);
/* Detach the programs (maps stay readable). Idempotent. */
void sched_collector__detach(struct sched_collector *c);
/*
 * The window's start: like snapshot, and each thread's wait accounting
 * starts here. Call it after add_target and before attach. With a set,
 * attach_set and join(1): the records of the threads that joined.
 */
int sched_collector__baseline(struct sched_collector *c, struct thread_table *out);
/*
 * run, where the window has no baseline: each target thread off-CPU now
 * gets its off-CPU stretch from now, so its blocked time until it runs is
 * in the window. Call it after add_target and before attach. With a set,
 * attach_set and join(2).
 */
int sched_collector__mark_stretches(struct sched_collector *c);
/* Every live target thread now, from the task iterator. */
int sched_collector__snapshot(struct sched_collector *c, struct thread_table *out);
/* Exit records of target threads that exited since attach. */
int sched_collector__exited(struct sched_collector *c, struct thread_table *out);
/*
 * serve: this window's exit records, without waiting for final switches,
 * and the final ones removed from the kernel (the rest come next window).
 */
int sched_collector__drain_exited(struct sched_collector *c, struct thread_table *out);
/* serve: every group now (*out malloc'd), the spill, and removing one. */
int sched_collector__groups(struct sched_collector *c, struct group_entry **out, size_t *nr);
int sched_collector__group_spill(struct sched_collector *c, struct khbpf_group_acc *out);
int sched_collector__delete_group(struct sched_collector *c, const struct khbpf_group_key *key);
int sched_collector__stats(struct sched_collector *c, struct sched_collector_stats *out);
/*
 * serve's span series now (*out malloc'd), a metric's spill (calls of
 * series the map had no room for), and removing a series.
 */
int sched_collector__span_series(struct sched_collector *c, struct span_series_entry **out,
				 size_t *nr);
int sched_collector__span_series_spill(struct sched_collector *c, uint32_t metric,
				       struct khbpf_span_agg *out);
int sched_collector__delete_span_series(struct sched_collector *c,
					const struct khbpf_span_series_key *key);
/* d += a, field by field (aggregates of one metric, or of one series). */
void sched_collector__span_agg_add(struct khbpf_span_agg *d, const struct khbpf_span_agg *a);

/* A span site: the function at `offset` in `path`, reporting `metric`. */
/* What a site does: a function's entry and return, or one end of a USDT pair. */
enum sched_span_role {
	SCHED_SPAN_FUNCTION, /* a uprobe opens at entry, a uretprobe closes at return */
	SCHED_SPAN_OPEN, /* a uprobe that opens (a USDT START site) */
	SCHED_SPAN_CLOSE, /* a uprobe that closes (a USDT DONE site; needs opts.span_close) */
	SCHED_SPAN_HIT, /* a uprobe that counts the thread's hits (--usdt; needs opts.usdt_hits) */
};

struct sched_span_site {
	const char *path;
	uint64_t offset;
	/* The USDT semaphore's file offset (the kernel raises it while attached); 0: none. */
	uint64_t ref_ctr_offset;
	uint32_t metric; /* < KHBPF_MAX_METRICS */
	/* Its keyed argument's spec (sched_collector__set_site_arg), 1-based; 0: none. */
	uint32_t arg_slot;
	enum sched_span_role role;
	int err; /* out: 0 attached, else -errno */
};

/*
 * Span sites: a uprobe at entry and a uretprobe at return of each function,
 * one uprobe at each USDT site, for `pid` only, or for every process with
 * pid -1 (opts.span_per_file). With uprobe_multi
 * (sched_collector__span_multi) the sites of one file and role share a
 * link per program, else each site has its own. At most
 * KHBPF_MAX_SPAN_SITES sites in all: the rest fail with -E2BIG. Returns how
 * many attached (each site's err says why not), or -errno when none could
 * be tried.
 */
int sched_collector__attach_spans(struct sched_collector *c, struct sched_span_site *sites,
				  size_t nr, pid_t pid);
/* Blocked time is timed (decided at open), and whether it was asked for. */
bool sched_collector__blocked(const struct sched_collector *c);
bool sched_collector__blocked_asked(const struct sched_collector *c);
/* Whether it takes who woke the threads (--wakers, not in serve). */
bool sched_collector__has_wakers(const struct sched_collector *c);
/* Span sites go in uprobe_multi links (decided at open, from the kernel and the opts). */
bool sched_collector__span_multi(const struct sched_collector *c);
/* Span links held now. */
size_t sched_collector__span_links(const struct sched_collector *c);
/*
 * The window is over: start taking every span probe down, in background
 * threads (linkset.h), and return. Destroy waits for them. Idempotent.
 */
void sched_collector__detach_spans(struct sched_collector *c);
/* The ring buffer's epoll fd, to wait on; -1 without spans. */
int sched_collector__span_fd(struct sched_collector *c);
/* Deliver pending span records to on_span; returns how many or -errno. */
int sched_collector__drain_spans(struct sched_collector *c);
/* Who woke each thread, sorted by (tid, start_time); *out malloc'd. */
int sched_collector__wakers(struct sched_collector *c, struct waker_entry **out, size_t *nr);
/* Orders span_waker_entry by metric, kind, waker: the order span_wakers are read in. */
int sched_collector__span_waker_cmp(const void *a, const void *b);
/* Who ended each span metric's blocked time (with wakers and spans); *out malloc'd. */
int sched_collector__span_wakers(struct sched_collector *c, struct span_waker_entry **out,
				 size_t *nr);
/* Exact per (thread, metric) aggregates; *out malloc'd. */
int sched_collector__span_aggs(struct sched_collector *c, struct span_agg_entry **out, size_t *nr);
/*
 * --key (opts.keys): metric's calls count under their key of kind
 * (KHBPF_KEY_INT or KHBPF_KEY_STR), at most max_keys keys; and the argument
 * spec of slot (1..KHBPF_MAX_SPAN_SITES), which sites name in arg_slot.
 * Before attaching them. 0 or -errno (-EINVAL out of range).
 */
int sched_collector__set_key(struct sched_collector *c, uint32_t metric, uint32_t kind,
			     uint32_t max_keys);
int sched_collector__set_site_arg(struct sched_collector *c, uint32_t slot,
				  const struct khbpf_arg_spec *spec);
/*
 * --span-cause (opts.span_causes): a blocked stretch that begins inside a
 * span of metric has cause (KHBPF_BLOCK_*). Before attaching the sites.
 * 0 or -errno (-EOPNOTSUPP: not enabled, or no blocked time; -EINVAL: out of range).
 */
int sched_collector__set_span_cause(struct sched_collector *c, uint32_t metric, uint32_t cause);
/* Per metric (out[0..n)), the blocked stretches whose cause its declaration named so far. */
void sched_collector__span_cause_stretches(const struct sched_collector *c, uint64_t *out,
					   size_t n);
/* Every key seen, with the metric id its calls count under; *out malloc'd. */
int sched_collector__keys(struct sched_collector *c, struct key_entry **out, size_t *nr);
/* Exact per (thread, probe) hits of the --usdt sites; *out malloc'd. */
int sched_collector__usdt_hits(struct sched_collector *c, struct usdt_hit_entry **out, size_t *nr);
/* Spans still open now (inclusive_ns unset), from the task iterator. */
int sched_collector__open_spans(struct sched_collector *c, struct khbpf_span_event **out,
				size_t *nr);
/*
 * serve with spans: every call in progress now, as (series key, start) from
 * khbpf_iter_open_series; *out is malloc'd. 0, -ENOTSUP (not serve with
 * spans) or -errno.
 */
int sched_collector__open_series(struct sched_collector *c, struct khbpf_open_series **out,
				 size_t *nr);
/* Ids of the loaded programs (for leak checks). */
int sched_collector__prog_ids(struct sched_collector *c, uint32_t *ids, int max, int *nr);
void sched_collector__destroy(struct sched_collector *c);

#endif /* KHBPF_SCHED_COLLECTOR_H */

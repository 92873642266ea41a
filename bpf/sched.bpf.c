// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread scheduler accounting for the target processes.
 *
 * The kernel already counts switches, migrations, run time, runqueue delay
 * and timeslices per task; khbpf reads those counters (CO-RE) rather than
 * re-deriving them, so its numbers are the kernel's by construction:
 *  - at window edges, a task iterator snapshots every target thread;
 *  - at thread exit (sched_process_exit) a record is kept in `exited`, and
 *    refreshed at the thread's final switch-out (prev_state == TASK_DEAD),
 *    where __schedule() has already counted that last switch and run time.
 * What the kernel does not keep, khbpf measures: each runqueue wait on its
 * own (a log2 histogram) and each migration classified by topological
 * distance.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "khbpf/sched.h"
#include "khbpf/spans.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_RUNNING 0
#define TASK_DEAD 0x80
#define PF_EXITING 0x4

/* Set by the loader. */
const volatile bool trace_all = false;
/*
 * With CONFIG_SCHED_INFO the kernel adds each wait to sched_info.run_delay
 * and counts the arrival in sched_info.pcount when the task is switched in
 * (sched_info_arrive). Looking at both when the task is switched out again
 * yields that wait exactly: one switch-out, one arrival, one wait. So waits
 * are binned from the prev side alone, the switch-in side and the wakeup
 * programs need not run, and the histogram sums to run_delay. Without
 * sched_info, wakeups and preemptions are stamped with bpf_ktime_get_ns().
 */
const volatile bool kernel_queue_ts = false;
/* Span probes attached: keep each thread's on-CPU clock while it has open spans. */
const volatile bool spans_enabled = false;
/*
 * Per-CPU counting events in `counters` (cycles, instructions; or software
 * cpu-clock as a test aid): how many slots per CPU are filled, 0 for none.
 */
const volatile __u32 nr_counters = 0;
/* Span records sent through the ring buffer; later ones are sampled out. */
const volatile __u64 max_spans = KHBPF_DEFAULT_MAX_SPANS;
/*
 * Kernel features, found by the loader (BTF and libbpf feature probes, never
 * version numbers). Each false value takes a fallback; the verifier sees them
 * as constants and drops the branch not taken, so a helper or map type the
 * kernel lacks is never in the loaded program.
 *  use_task_storage: BPF_MAP_TYPE_TASK_STORAGE for per-thread state; without
 *    it, the bounded hashes task_state_h and span_state_h keyed by the task
 *    pointer (entries deleted at the thread's final switch-out).
 *  have_task_btf: bpf_get_current_task_btf(); without it, bpf_get_current_task()
 *    and CO-RE probe reads.
 *  have_cookie: bpf_get_attach_cookie() holds the span metric; without it,
 *    span_site_metric maps the probed site (file, offset) to the metric.
 */
const volatile bool use_task_storage = true;
const volatile bool have_task_btf = true;
const volatile bool have_cookie = true;
/*
 * Verifiers without atomic fetch-and-add (BPF_FETCH) refuse a program that
 * holds one anywhere, even in dead code: the span programs come in two
 * builds, and the loader loads the *_nofetch pair there. Those take span
 * slots from per-CPU tickets and check the record cap on a plain read (the
 * loader's cap is exact).
 */
/* Without atomic fetch: slots are cpu + 1 + n * nr_slot_cpus (loader: possible CPUs). */
const volatile __u32 nr_slot_cpus = 1;
/* serve: KHBPF_GROUP_*, and the --cgroup filters (kernfs id at its level). */
const volatile __u32 group_by = KHBPF_GROUP_NONE;
const volatile __u32 nr_cgroup_filters = 0;
const volatile __u64 cgroup_filter_id[KHBPF_MAX_CGROUP_FILTERS] = {};
const volatile __u32 cgroup_filter_level[KHBPF_MAX_CGROUP_FILTERS] = {};

__u64 target_bits[KHBPF_TARGET_WORDS] = {};
/* Set while the loader's baseline iteration runs: record each thread's stamps. */
__u32 iter_init_state = 0;

/* Loss and health counters, read by the loader at the end of the window. */
__u64 storage_failures = 0; /* task storage could not be created */
__u64 exited_overflow = 0; /* exited map full (or no memory for the record): record lost */
__u64 final_unmatched = 0; /* final switch without an exit record */
__u64 iter_write_errors = 0; /* bpf_seq_write failed */
__u64 span_threads = 0; /* thread slots handed out (span ids) */
__u64 span_records = 0; /* records attempted (emitted + dropped + sampled out) */
__u64 span_ringbuf_drops = 0; /* ring buffer full */
__u64 span_sampled_out = 0; /* beyond max_spans */
__u64 span_depth_overflow = 0;
__u64 span_unwound = 0; /* frames closed because a return skipped them (longjmp) */
__u64 span_unmatched = 0; /* a return with no open frame */
__u64 span_agg_overflow = 0; /* span_agg full: the call is in no aggregate */
__u64 span_state_failures = 0;
__u64 span_clock_gaps = 0; /* missed switch-ins seen (the spans across them are flagged) */
__u64 span_counter_skews = 0; /* counter readings given up: never read close to the time */
__u64 exec_renumbered = 0; /* a non-leader thread exec'd: it took the leader's id */
/* spans open at a thread's exit the ring buffer had no room for */
__u64 span_open_at_exit_drops = 0;
__u64 groups_made = 0; /* entries created in `groups` */
__u64 group_overflow = 0; /* switch-outs of a group `groups` had no room for (in group_spill) */
__u64 span_site_unresolved = 0; /* no cookie: a span probe hit at a site not in span_site_metric */

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct khbpf_task_state);
} task_state SEC(".maps");

/*
 * Without task storage: the same state in hashes keyed by the task pointer,
 * preallocated (tracing programs must not allocate on old kernels), sized by
 * the loader; a thread that finds the map full has no state, counted like a
 * task-storage failure. The loader shrinks the pair not used to one entry.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_MAX_TASKS);
	__type(key, __u64);
	__type(value, struct khbpf_task_state);
} task_state_h SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_SPAN_TASKS);
	__type(key, __u64);
	__type(value, struct khbpf_span_state);
} span_state_h SEC(".maps");

/* Zeroed values to create hash entries from (too large for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_task_state);
} task_state_zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_span_state);
} span_state_zero SEC(".maps");

/* No attach cookie: the metric of each span site, filled by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_MAX_SPAN_SITES);
	__type(key, struct khbpf_site_key);
	__type(value, __u32);
} span_site_metric SEC(".maps");

/* Sized by the loader (--max-exited); allocated on use where the kernel allows it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_MAX_EXITED);
	__type(key, struct khbpf_thread_key);
	__type(value, struct khbpf_thread_rec);
} exited SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct khbpf_span_state);
} span_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_SPAN_KEYS);
	__type(key, struct khbpf_span_key);
	__type(value, struct khbpf_span_agg);
} span_agg SEC(".maps");

/* Without atomic fetch: each CPU's next span-slot ticket (programs do not nest on a CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} slot_tickets SEC(".maps");

/* A zeroed aggregate to create entries from: too large for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_span_agg);
} span_agg_zero SEC(".maps");

/* Index cpu * KHBPF_NR_COUNTERS + slot; sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(max_entries, KHBPF_NR_COUNTERS);
	__type(key, __u32);
	__type(value, __u32);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, KHBPF_SPAN_RINGBUF_BYTES);
} span_events SEC(".maps");

/* Sized by the loader to the host's CPU ids. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_cpu_topo);
} cpu_topo SEC(".maps");

/* Sized by the loader (--max-groups); the loader ages and evicts entries. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	/* Freed after an RCU grace period: a program never adds into a reused element. */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, KHBPF_DEFAULT_MAX_GROUPS);
	__type(key, struct khbpf_group_key);
	__type(value, struct khbpf_group_acc);
} groups SEC(".maps");

/* What belonged to groups `groups` had no room for: nothing is dropped. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2); /* [0] the spill, [1] a zero value to create entries from */
	__type(key, __u32);
	__type(value, struct khbpf_group_acc);
} group_spill SEC(".maps");

/* A record is too large for the 512-byte BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_thread_rec);
} scratch SEC(".maps");

struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/* Before thread_info.cpu (x86-64 until 5.15), the CPU is task_struct.cpu. */
struct task_struct___pre516 {
	unsigned int cpu;
} __attribute__((preserve_access_index));

/*
 * A thread's state: task storage, or the hash fallback. `create` makes it on
 * first use; NULL when it cannot be made (counted by the caller).
 */
static __always_inline struct khbpf_task_state *task_state_get(struct task_struct *p, bool create)
{
	struct khbpf_task_state *st, *zero;
	__u64 key = (__u64)p;
	__u32 z = 0;

	if (use_task_storage)
		return bpf_task_storage_get(&task_state, p, NULL,
					    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	st = bpf_map_lookup_elem(&task_state_h, &key);
	if (st || !create)
		return st;
	zero = bpf_map_lookup_elem(&task_state_zero, &z);
	if (!zero)
		return NULL;
	/* BPF_NOEXIST: made meanwhile on another CPU, the lookup finds that one. */
	bpf_map_update_elem(&task_state_h, &key, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&task_state_h, &key);
}

static __always_inline struct khbpf_span_state *span_state_get(struct task_struct *p, bool create)
{
	struct khbpf_span_state *ss, *zero;
	__u64 key = (__u64)p;
	__u32 z = 0;

	if (use_task_storage)
		return bpf_task_storage_get(&span_state, p, NULL,
					    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	ss = bpf_map_lookup_elem(&span_state_h, &key);
	if (ss || !create)
		return ss;
	zero = bpf_map_lookup_elem(&span_state_zero, &z);
	if (!zero)
		return NULL;
	bpf_map_update_elem(&span_state_h, &key, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&span_state_h, &key);
}

/* The hash fallback ends with the thread (task storage is freed with it). */
static __always_inline void task_states_free(struct task_struct *p)
{
	__u64 key = (__u64)p;

	if (use_task_storage)
		return;
	bpf_map_delete_elem(&task_state_h, &key);
	if (spans_enabled)
		bpf_map_delete_elem(&span_state_h, &key);
}

/*
 * Before 6.1 (7f203bc89eb6, "cgroup: Replace cgroup->ancestor_ids[] with
 * ->ancestors[]") a cgroup kept its ancestors' ids, cgroup_id() of each,
 * indexed by level, instead of pointers to them.
 */
struct cgroup___pre61 {
	__u64 ancestor_ids[0];
} __attribute__((preserve_access_index));

/*
 * The id of cg's ancestor at level l, one function per layout: not inlined,
 * so that the compiler cannot hoist the other layout's relocated offset
 * (poisoned by libbpf where that member does not exist) out of the branch
 * that never runs on this kernel.
 */
static __noinline __u64 ancestor_id_by_ptr(struct cgroup *cg, __u32 l)
{
	struct cgroup *anc = NULL;

	bpf_core_read(&anc, sizeof(anc), &cg->ancestors[l & 0xffff]);
	return anc ? BPF_CORE_READ(anc, kn, id) : 0;
}

static __noinline __u64 ancestor_id_by_id(struct cgroup *cg, __u32 l)
{
	struct cgroup___pre61 *old = (void *)cg;
	__u64 id = 0;

	bpf_core_read(&id, sizeof(id), &old->ancestor_ids[l & 0xffff]);
	return id;
}

/* In one of the --cgroup subtrees: that cgroup is the task's or an ancestor of it. */
static __always_inline bool in_cgroup_filter(struct task_struct *p)
{
	struct cgroup *cg = BPF_CORE_READ(p, cgroups, dfl_cgrp);
	int level = BPF_CORE_READ(cg, level);
	__u64 id;
	__u32 i, l;

	for (i = 0; i < KHBPF_MAX_CGROUP_FILTERS; i++) {
		if (i >= nr_cgroup_filters)
			break;
		l = cgroup_filter_level[i];
		if (l > level)
			continue;
		if (bpf_core_field_exists(cg->ancestors))
			id = ancestor_id_by_ptr(cg, l);
		else
			id = ancestor_id_by_id(cg, l);
		if (id && id == cgroup_filter_id[i])
			return true;
	}
	return false;
}

static __always_inline bool is_target(struct task_struct *p)
{
	__u32 tgid = p->tgid;
	__u32 idx = tgid >> 6;

	if (nr_cgroup_filters)
		return p->pid != 0 && in_cgroup_filter(p);
	if (trace_all)
		return p->pid != 0;
	if (idx >= KHBPF_TARGET_WORDS)
		return false;
	/* Bit 0 of word 0 (pid 0, the idle task) is never set by the loader. */
	return target_bits[idx] & (1ULL << (tgid & 63));
}

static __always_inline unsigned int task_state_now(struct task_struct *p)
{
	if (bpf_core_field_exists(p->__state))
		return BPF_CORE_READ(p, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)p, state);
}

/*
 * Every caller holds a trusted task pointer (a tp_btf argument, the task
 * iterator's, or current): its fields are plain CO-RE-relocated loads, not
 * a bpf_probe_read_kernel() call each, on the sched_switch hot path.
 */
static __always_inline void read_sched_info(struct task_struct *p, __u64 *run_delay, __u64 *pcount)
{
	if (bpf_core_field_exists(p->sched_info)) {
		*run_delay = p->sched_info.run_delay;
		*pcount = p->sched_info.pcount;
	} else {
		*run_delay = 0;
		*pcount = 0;
	}
}

static __always_inline void read_counters(struct task_struct *p, struct khbpf_task_counters *k)
{
	k->nvcsw = p->nvcsw;
	k->nivcsw = p->nivcsw;
	k->nr_migrations = p->se.nr_migrations;
	k->sum_exec_runtime = p->se.sum_exec_runtime;
	/* Without CONFIG_SCHED_INFO the loader falls back to the BPF-timed values. */
	read_sched_info(p, &k->run_delay, &k->pcount);
}

static __always_inline struct khbpf_task_state *state_of(struct task_struct *p)
{
	struct khbpf_task_state *st;

	st = task_state_get(p, true);
	if (!st)
		__sync_fetch_and_add(&storage_failures, 1);
	return st;
}

static __always_inline void bin_wait(struct khbpf_task_bpf *b, __u64 delta)
{
	b->wait_ns += delta;
	b->waits++;
	b->wait_hist[khbpf_rq_slot(delta)]++;
}

/*
 * Fold the waits the kernel added since the last look into b: exactly one
 * arrival is one wait, binned; several (the task was not looked at in
 * between, e.g. before attach in run mode) only add up.
 */
static __always_inline void fold_waits(const struct khbpf_task_state *st, struct khbpf_task_bpf *b,
				       __u64 run_delay, __u64 pcount)
{
	__u64 arrivals = pcount - st->last_pcount;
	__u64 delay = run_delay - st->last_run_delay;

	if (pcount <= st->last_pcount)
		return;
	b->switch_ins += arrivals;
	if (arrivals == 1) {
		bin_wait(b, delay);
	} else {
		b->unbinned_waits += arrivals;
		b->unbinned_ns += delay;
	}
}

/* The group of p in `groups`, made on first use; group_spill[0] when full. */
static __always_inline struct khbpf_group_acc *group_of(struct task_struct *p)
{
	struct khbpf_group_key key = {};
	struct khbpf_group_acc *a, *zero;
	__u32 spill = 0, z = 1;

	if (group_by == KHBPF_GROUP_CGROUP) {
		key.id = BPF_CORE_READ(p, cgroups, dfl_cgrp, kn, id);
	} else {
		key.id = BPF_CORE_READ(p, tgid);
		key.start_time = BPF_CORE_READ(p, group_leader, start_time);
	}
	a = bpf_map_lookup_elem(&groups, &key);
	if (a)
		return a;
	zero = bpf_map_lookup_elem(&group_spill, &z);
	if (zero && !bpf_map_update_elem(&groups, &key, zero, BPF_NOEXIST)) {
		__sync_fetch_and_add(&groups_made, 1);
		a = bpf_map_lookup_elem(&groups, &key);
		if (a && group_by == KHBPF_GROUP_PROCESS)
			BPF_CORE_READ_STR_INTO(&a->comm, p, group_leader, comm);
	} else {
		/* Made meanwhile on another CPU, or the map is full. */
		a = bpf_map_lookup_elem(&groups, &key);
	}
	if (a)
		return a;
	__sync_fetch_and_add(&group_overflow, 1);
	return bpf_map_lookup_elem(&group_spill, &spill);
}

/* Several CPUs add into one group at once: every add is atomic. */
static __always_inline void group_bin_wait(struct khbpf_group_acc *a, __u64 delta)
{
	__sync_fetch_and_add(&a->b.wait_ns, delta);
	__sync_fetch_and_add(&a->b.waits, 1);
	__sync_fetch_and_add(&a->b.wait_hist[khbpf_rq_slot(delta)], 1);
}

static __always_inline __u64 delta0(__u64 now, __u64 last)
{
	return now > last ? now - last : 0;
}

/* fold_waits' rule, into a group that several CPUs add to at once. */
static __always_inline void group_fold_waits(struct khbpf_group_acc *a,
					     const struct khbpf_task_state *st,
					     const struct khbpf_task_counters *k)
{
	__u64 arrivals = k->pcount - st->last_pcount;
	__u64 delay = delta0(k->run_delay, st->last_run_delay);

	__sync_fetch_and_add(&a->k.run_delay, delay);
	__sync_fetch_and_add(&a->k.pcount, delta0(k->pcount, st->last_pcount));
	if (k->pcount <= st->last_pcount)
		return;
	__sync_fetch_and_add(&a->b.switch_ins, arrivals);
	if (arrivals == 1) {
		group_bin_wait(a, delay);
	} else {
		__sync_fetch_and_add(&a->b.unbinned_waits, arrivals);
		__sync_fetch_and_add(&a->b.unbinned_ns, delay);
	}
}

/*
 * serve: prev's switch-out, into its group: the kernel's counters since its
 * last switch-out (__schedule() updated them before the tracepoint) and,
 * with sched_info, the waits that ended since. The same storage lookup and
 * readings also do the thread's own wait fold (sched_switch skips its own).
 */
static __always_inline void group_switch_out(struct task_struct *prev, bool dead)
{
	struct khbpf_task_counters k;
	struct khbpf_task_state *st;
	struct khbpf_group_acc *a;

	st = dead ? task_state_get(prev, false) : state_of(prev);
	if (!st)
		return;
	read_counters(prev, &k);
	a = group_of(prev);
	if (a) {
		__sync_fetch_and_add(&a->k.nvcsw, delta0(k.nvcsw, st->last_nvcsw));
		__sync_fetch_and_add(&a->k.nivcsw, delta0(k.nivcsw, st->last_nivcsw));
		__sync_fetch_and_add(&a->k.nr_migrations,
				     delta0(k.nr_migrations, st->last_migrations));
		__sync_fetch_and_add(&a->k.sum_exec_runtime,
				     delta0(k.sum_exec_runtime, st->last_runtime));
		__sync_fetch_and_add(&a->switch_outs, 1);
		if (kernel_queue_ts)
			group_fold_waits(a, st, &k);
	}
	st->last_nvcsw = k.nvcsw;
	st->last_nivcsw = k.nivcsw;
	st->last_migrations = k.nr_migrations;
	st->last_runtime = k.sum_exec_runtime;
	if (!kernel_queue_ts)
		return;
	/* A dead thread's waits went into its exit record (final_switch). */
	if (!dead)
		fold_waits(st, &st->b, k.run_delay, k.pcount);
	st->last_run_delay = k.run_delay;
	st->last_pcount = k.pcount;
}

static __always_inline void fill_rec(struct khbpf_thread_rec *r, struct task_struct *p, __u32 flags)
{
	struct khbpf_task_state *st;

	r->tid = BPF_CORE_READ(p, pid);
	r->tgid = BPF_CORE_READ(p, tgid);
	r->start_time = BPF_CORE_READ(p, start_time);
	BPF_CORE_READ_STR_INTO(&r->comm, p, comm);
	read_counters(p, &r->k);
	st = task_state_get(p, false);
	if (st) {
		r->b = st->b;
		if (kernel_queue_ts)
			fold_waits(st, &r->b, r->k.run_delay, r->k.pcount);
		flags |= KHBPF_REC_HAS_STATE;
	} else {
		__builtin_memset(&r->b, 0, sizeof(r->b));
	}
	r->flags = flags;
	r->pad = 0;
}

static __always_inline __u32 task_cpu_of(struct task_struct *p)
{
	if (bpf_core_field_exists(p->thread_info.cpu))
		return BPF_CORE_READ(p, thread_info.cpu);
	return BPF_CORE_READ((struct task_struct___pre516 *)p, cpu);
}

static __always_inline void final_switch(struct task_struct *prev)
{
	struct khbpf_thread_key key = {
		.tid = prev->pid,
		.start_time = prev->start_time,
	};
	struct khbpf_thread_rec *r = bpf_map_lookup_elem(&exited, &key);
	struct khbpf_task_state *st;

	if (!r) {
		__sync_fetch_and_add(&final_unmatched, 1);
		return;
	}
	/* __schedule() counted this switch and run time before the tracepoint. */
	read_counters(prev, &r->k);
	st = task_state_get(prev, false);
	if (st) {
		r->b = st->b;
		if (kernel_queue_ts)
			fold_waits(st, &r->b, r->k.run_delay, r->k.pcount);
		r->flags |= KHBPF_REC_HAS_STATE;
	}
	r->flags |= KHBPF_REC_FINAL;
}

/* This CPU's reading of counter `slot`; 0 when it cannot be read. */
static __always_inline int counter_read(__u32 slot, struct khbpf_ctr_read *r)
{
	__u64 idx = (__u64)bpf_get_smp_processor_id() * KHBPF_NR_COUNTERS + slot;

	/* perf_event_read_local(): the event must be this CPU's, counting mode. */
	if (bpf_perf_event_read_value(&counters, idx, (struct bpf_perf_event_value *)r,
				      sizeof(*r))) {
		__builtin_memset(r, 0, sizeof(*r));
		return 0;
	}
	return 1;
}

/*
 * The time and the counters are read one after the other; if anything came
 * between (an interrupt in a uprobe program; in any program, the hypervisor
 * running another vCPU, measured here at 10-80 us), its length would be in
 * one clock and not the other. Readings that took longer than this are
 * taken again, and after three tries the counters count as not read.
 */
#define READ_SKEW_NS 1000
#define READ_TRIES 3

static __always_inline bool read_skewed(__u64 t0)
{
	return nr_counters && bpf_ktime_get_ns() - t0 > READ_SKEW_NS;
}

/* The span clock of a target thread with open spans, or NULL. */
static __always_inline struct khbpf_span_clock *span_clock_of(struct task_struct *p)
{
	struct khbpf_span_state *ss = span_state_get(p, false);

	return ss && ss->clock.spans_open ? &ss->clock : NULL;
}

/*
 * The switch instant, read once for both sides: the time, and each counter
 * right after it. prev's stint ends and next's begins at the same readings,
 * so the skew between the two clocks is the same at every edge and cancels.
 */
struct switch_readings {
	__u64 now;
	struct khbpf_ctr_read r[KHBPF_NR_COUNTERS];
	int ok[KHBPF_NR_COUNTERS];
};

static __always_inline void switch_read(struct switch_readings *sr)
{
	bool skewed = false;
	__u32 i, t;

	for (t = 0; t < READ_TRIES; t++) {
		sr->now = bpf_ktime_get_ns();
		for (i = 0; i < KHBPF_NR_COUNTERS; i++) {
			if (i >= nr_counters)
				break;
			sr->ok[i] = counter_read(i, &sr->r[i]);
		}
		skewed = read_skewed(sr->now);
		if (!skewed)
			break;
	}
	if (skewed)
		__sync_fetch_and_add(&span_counter_skews, 1);
	for (i = 0; skewed && i < KHBPF_NR_COUNTERS; i++)
		sr->ok[i] = 0;
}

static __always_inline void span_clock_out(struct khbpf_span_clock *ck,
					   const struct switch_readings *sr)
{
	__u32 i;

	/* switched_in 0: the clock is being (re)started by a span entry. */
	if (!ck->switched_in)
		return;
	if (ck->switched_out > ck->switched_in) {
		ck->clock_gaps++; /* out twice: this stint's start is unknown */
		__sync_fetch_and_add(&span_clock_gaps, 1);
	} else {
		ck->oncpu_acc += sr->now - ck->switched_in;
	}
	ck->switched_out = sr->now;
	for (i = 0; i < KHBPF_NR_COUNTERS; i++) {
		if (i >= nr_counters)
			break;
		khbpf_vctr_out(&ck->ctr[i], &sr->r[i], sr->ok[i]);
	}
}

static __always_inline void span_clock_in(struct khbpf_span_clock *ck,
					  const struct switch_readings *sr)
{
	__u32 i;

	ck->switched_in = sr->now;
	for (i = 0; i < KHBPF_NR_COUNTERS; i++) {
		if (i >= nr_counters)
			break;
		khbpf_vctr_in(&ck->ctr[i], &sr->r[i], sr->ok[i]);
	}
}

static __always_inline int on_switch(struct task_struct *prev, struct task_struct *next,
				     unsigned int prev_state)
{
	struct khbpf_span_clock *ck_prev = NULL, *ck_next = NULL;
	struct khbpf_task_state *st = NULL;
	struct switch_readings sr;
	bool next_target = true;
	__u64 now = 0;

	if (is_target(prev)) {
		if (prev_state == TASK_DEAD)
			final_switch(prev);
		if (group_by)
			group_switch_out(prev, prev_state == TASK_DEAD);
		if (prev_state == TASK_DEAD) {
		} else if (kernel_queue_ts) {
			__u64 run_delay, pcount;

			/* serve: group_switch_out did it with the same readings. */
			st = group_by ? NULL : state_of(prev);
			if (st) {
				read_sched_info(prev, &run_delay, &pcount);
				fold_waits(st, &st->b, run_delay, pcount);
				st->last_run_delay = run_delay;
				st->last_pcount = pcount;
			}
		} else if (task_state_now(prev) == TASK_RUNNING) {
			/*
			 * Preempted, or a sleep undone by a pending signal: still on
			 * the runqueue, so its wait starts now. The current state, not
			 * prev_state, tells which.
			 */
			st = state_of(prev);
			if (st) {
				now = bpf_ktime_get_ns();
				st->enqueue_ts = now;
			}
		}
		if (spans_enabled && prev_state != TASK_DEAD)
			ck_prev = span_clock_of(prev);
		if (prev_state == TASK_DEAD)
			task_states_free(prev);
	}
	if (kernel_queue_ts && !spans_enabled)
		return 0;
	if (!is_target(next))
		next_target = false;
	else if (spans_enabled)
		ck_next = span_clock_of(next);
	if (ck_prev) {
		switch_read(&sr);
		span_clock_out(ck_prev, &sr);
		now = sr.now;
	}
	if (ck_next) {
		if (!now || !ck_prev)
			switch_read(&sr);
		span_clock_in(ck_next, &sr);
		now = sr.now;
	}
	if (kernel_queue_ts || !next_target)
		return 0;

	st = state_of(next);
	if (!st)
		return 0;
	st->b.switch_ins++;
	if (st->enqueue_ts) {
		__u64 wait;

		if (!now)
			now = bpf_ktime_get_ns();
		wait = now > st->enqueue_ts ? now - st->enqueue_ts : 0;
		bin_wait(&st->b, wait);
		st->enqueue_ts = 0;
		if (group_by) {
			struct khbpf_group_acc *a = group_of(next);

			if (a) {
				__sync_fetch_and_add(&a->b.switch_ins, 1);
				__sync_fetch_and_add(&a->k.run_delay, wait);
				group_bin_wait(a, wait);
			}
		}
	}
	return 0;
}

/*
 * The tracepoint's prev_state argument (5.18 on) is the state __schedule()
 * read on entry. The loader loads this program when the kernel's
 * btf_trace_sched_switch has it, and khbpf_sched_switch_nostate otherwise.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(khbpf_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_switch(prev, next, prev_state);
}

/*
 * Without the argument, the task's own state: still TASK_DEAD at its final
 * switch-out (do_task_dead() sets it, nothing undoes it), which is all
 * on_switch() asks of prev_state.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(khbpf_sched_switch_nostate, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch(prev, next, task_state_now(prev));
}

/* Attached only without sched_info (see kernel_queue_ts). */
static __always_inline void mark_runnable(struct task_struct *p)
{
	struct khbpf_task_state *st;

	if (!is_target(p))
		return;
	st = state_of(p);
	if (st)
		st->enqueue_ts = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(khbpf_sched_wakeup, struct task_struct *p)
{
	mark_runnable(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(khbpf_sched_wakeup_new, struct task_struct *p)
{
	mark_runnable(p);
	return 0;
}

/* Fires from set_task_cpu() even when dest_cpu is the current CPU. */
SEC("tp_btf/sched_migrate_task")
int BPF_PROG(khbpf_sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	struct khbpf_cpu_topo *from, *to;
	struct khbpf_task_state *st;
	__u32 src, dst = dest_cpu, cls;

	if (!is_target(p))
		return 0;
	src = task_cpu_of(p);
	if (src == dst)
		return 0;
	st = state_of(p);
	if (!st)
		return 0;
	from = bpf_map_lookup_elem(&cpu_topo, &src);
	to = bpf_map_lookup_elem(&cpu_topo, &dst);
	cls = khbpf_mig_class(from, to);
	st->b.migrations++;
	if (cls < KHBPF_MIG_CLASSES)
		st->b.mig_class[cls]++;
	if (group_by) {
		struct khbpf_group_acc *a = group_of(p);

		if (a) {
			__sync_fetch_and_add(&a->b.migrations, 1);
			if (cls < KHBPF_MIG_CLASSES)
				__sync_fetch_and_add(&a->b.mig_class[cls], 1);
		}
	}
	return 0;
}

/*
 * A thread that exits (killed, or pthread_exit) inside spans never returns
 * from them, and its span storage goes with it: report each open frame now,
 * flagged open, so the window's end still lists it with its start.
 */
static __always_inline void spans_at_exit(struct task_struct *p)
{
	struct khbpf_span_state *ss = span_state_get(p, false);
	struct khbpf_span_event *e;
	__u32 i, depth;

	if (!ss)
		return;
	depth = ss->depth;
	for (i = 0; i < KHBPF_SPAN_DEPTH; i++) {
		struct khbpf_span_frame *f = &ss->frames[i];

		if (i >= depth)
			break;
		e = bpf_ringbuf_reserve(&span_events,
					nr_counters ? sizeof(*e) : KHBPF_SPAN_EVENT_NOHW_SIZE, 0);
		if (!e) {
			__sync_fetch_and_add(&span_open_at_exit_drops, 1);
			continue;
		}
		__builtin_memset(e, 0, KHBPF_SPAN_EVENT_NOHW_SIZE);
		e->span_id = f->span_id;
		e->parent_span_id = i ? ss->frames[(i - 1) & (KHBPF_SPAN_DEPTH - 1)].span_id : 0;
		e->start_ns = f->start_ns;
		e->tid = p->pid;
		e->metric = f->metric;
		e->depth = i;
		e->flags = KHBPF_SPAN_F_OPEN;
		if (nr_counters)
			__builtin_memset(e->hw, 0, sizeof(e->hw));
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
	/* Reported: the end-of-window iterator must not list them again (a zombie leader). */
	ss->depth = 0;
	ss->clock.spans_open = 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(khbpf_sched_process_exit, struct task_struct *p)
{
	struct khbpf_thread_key key = {};
	struct khbpf_thread_rec *r;
	__u32 zero = 0;

	if (!is_target(p))
		return 0;
	if (spans_enabled)
		spans_at_exit(p);
	r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return 0;
	fill_rec(r, p, KHBPF_REC_EXITED);
	key.tid = r->tid;
	key.start_time = r->start_time;
	if (!bpf_map_update_elem(&exited, &key, r, BPF_NOEXIST))
		return 0;
	/*
	 * The identity exited before: a thread that exec'd took the old
	 * leader's id and start time (de_thread). Counted in exec_renumbered;
	 * its record replaces the old leader's, as its final switch would.
	 */
	if (bpf_map_lookup_elem(&exited, &key))
		bpf_map_update_elem(&exited, &key, r, BPF_EXIST);
	else
		__sync_fetch_and_add(&exited_overflow, 1);
	return 0;
}

/*
 * exec from a thread other than the leader: the kernel ends the leader and
 * gives the exec'ing thread its id and start time, so one identity covers
 * two threads and the exec'ing thread's own id ends without an exit.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(khbpf_sched_process_exec, struct task_struct *p, pid_t old_pid)
{
	if (is_target(p) && old_pid != p->pid)
		__sync_fetch_and_add(&exec_renumbered, 1);
	return 0;
}

SEC("iter/task")
int khbpf_iter_task(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct khbpf_thread_rec *r;
	__u32 zero = 0, flags = 0;

	if (!task || !is_target(task))
		return 0;
	/*
	 * Baseline (before the tracepoints attach): start each thread's wait
	 * accounting from now, so waits before the window are not folded in.
	 */
	if (iter_init_state && (kernel_queue_ts || group_by)) {
		struct khbpf_task_state *st = state_of(task);

		if (st) {
			read_sched_info(task, &st->last_run_delay, &st->last_pcount);
			st->last_nvcsw = task->nvcsw;
			st->last_nivcsw = task->nivcsw;
			st->last_migrations = task->se.nr_migrations;
			st->last_runtime = task->se.sum_exec_runtime;
		}
	}
	r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return 0;
	if (task->flags & PF_EXITING)
		flags |= KHBPF_REC_EXITING;
	if (task->exit_state)
		flags |= KHBPF_REC_ZOMBIE;
	fill_rec(r, task, flags);
	if (bpf_seq_write(seq, r, sizeof(*r)))
		__sync_fetch_and_add(&iter_write_errors, 1);
	return 0;
}

/*
 * The span programs get `current` from bpf_get_current_task_btf(), a
 * trusted BTF pointer: its fields are plain loads (still CO-RE relocated),
 * no bpf_probe_read_kernel() call each. That is most of a span's cost.
 * Kernels without that helper give an untyped pointer, read with
 * bpf_probe_read_kernel() (BPF_CORE_READ) instead.
 */
#define CUR_READ(task, field) (have_task_btf ? (task)->field : BPF_CORE_READ(task, field))

static __always_inline struct task_struct *current_task(void)
{
	if (have_task_btf)
		return bpf_get_current_task_btf();
	return (struct task_struct *)bpf_get_current_task();
}

static __always_inline __u64 switches(struct task_struct *task)
{
	return CUR_READ(task, nvcsw) + CUR_READ(task, nivcsw);
}

/*
 * The current thread's ledger and counter readings and the time, taken
 * together. A uprobe program can be preempted (it only disables migration),
 * so a reading that a context switch cut in two is taken again.
 */
static __always_inline __u64 ledger_now(struct task_struct *task, struct khbpf_span_clock *ck,
					struct khbpf_span_ledger *l, struct khbpf_vreading *hw,
					bool start)
{
	__u64 now = 0, before;
	struct khbpf_ctr_read r;
	bool skewed;
	int i, j, ok;

	for (i = 0; i < READ_TRIES; i++) {
		before = switches(task);
		now = bpf_ktime_get_ns();
		if (start) {
			/* The thread's first open span starts its clock here. */
			ck->switched_in = now;
		} else if (ck->switched_out > ck->switched_in) {
			/* Running, yet the last thing seen was a switch-out. */
			ck->clock_gaps++;
			__sync_fetch_and_add(&span_clock_gaps, 1);
			ck->switched_in = now;
		}
		l->on_cpu_ns = ck->oncpu_acc + (now > ck->switched_in ? now - ck->switched_in : 0);
		for (j = 0; j < KHBPF_NR_COUNTERS; j++) {
			if (j >= nr_counters)
				break;
			ok = counter_read(j, &r);
			if (start)
				khbpf_vctr_in(&ck->ctr[j], &r, ok);
			khbpf_vctr_now(&ck->ctr[j], &r, ok, &hw[j]);
		}
		skewed = read_skewed(now);
		if (bpf_core_field_exists(task->sched_info))
			l->run_delay_ns = CUR_READ(task, sched_info.run_delay);
		else
			l->run_delay_ns = 0;
		l->nvcsw = CUR_READ(task, nvcsw);
		l->nivcsw = CUR_READ(task, nivcsw);
		l->migrations = CUR_READ(task, se.nr_migrations);
		if (switches(task) == before && !skewed)
			break;
	}
	if (skewed)
		__sync_fetch_and_add(&span_counter_skews, 1);
	for (j = 0; skewed && j < KHBPF_NR_COUNTERS; j++) {
		hw[j].ok = 0;
		if (start)
			ck->ctr[j].in_valid = 0;
	}
	return now;
}

static __always_inline __u64 sub0(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

#define SPAN_WAKEUP_EVERY 1024

/*
 * Kernels without attach cookies (before bpf_get_attach_cookie) keep the
 * VMA tree as an rbtree (the maple tree came later): the probed address's
 * mapping gives its file and offset, which span_site_metric maps to the
 * metric. Walked down from the root, at most SITE_WALK_MAX levels.
 */
struct mm_struct___rb {
	struct rb_root mm_rb;
} __attribute__((preserve_access_index));

struct vm_area_struct___rb {
	unsigned long vm_start;
	unsigned long vm_end;
	struct rb_node vm_rb;
	unsigned long vm_pgoff;
	struct file *vm_file;
} __attribute__((preserve_access_index));

#define SITE_WALK_MAX 64
#define SITE_PAGE_SHIFT 12

/* The metric of the site at user address ip; 0 and *ok false when unknown. */
static __always_inline __u32 site_metric(struct task_struct *task, __u64 ip, bool *ok)
{
	struct mm_struct___rb *mm = (void *)BPF_CORE_READ(task, mm);
	struct vm_area_struct___rb *vma = NULL;
	struct khbpf_site_key key = {};
	struct rb_node *node;
	__u64 off_rb, start, end;
	__u32 *m, i;

	*ok = false;
	if (!bpf_core_field_exists(mm->mm_rb) ||
	    !bpf_core_field_exists(((struct vm_area_struct___rb *)0)->vm_rb))
		return 0;
	off_rb = bpf_core_field_offset(struct vm_area_struct___rb, vm_rb);
	node = BPF_CORE_READ(mm, mm_rb.rb_node);
	for (i = 0; i < SITE_WALK_MAX && node; i++) {
		struct vm_area_struct___rb *v = (void *)((char *)node - off_rb);

		start = BPF_CORE_READ(v, vm_start);
		end = BPF_CORE_READ(v, vm_end);
		if (ip < start) {
			node = BPF_CORE_READ(node, rb_left);
		} else if (ip >= end) {
			node = BPF_CORE_READ(node, rb_right);
		} else {
			vma = v;
			break;
		}
	}
	if (!vma)
		return 0;
	key.ino = BPF_CORE_READ(vma, vm_file, f_inode, i_ino);
	key.offset = ip - start + (BPF_CORE_READ(vma, vm_pgoff) << SITE_PAGE_SHIFT);
	m = bpf_map_lookup_elem(&span_site_metric, &key);
	if (!m && key.offset) {
		/* Just past an int3, should a kernel report that. */
		key.offset--;
		m = bpf_map_lookup_elem(&span_site_metric, &key);
	}
	if (!m)
		return 0;
	*ok = true;
	return *m;
}

/*
 * A new thread slot, 1.., unique in the window. Without atomic fetch, from
 * this CPU's tickets: a uprobe program never runs inside another on the
 * same CPU (trace_call_bpf()'s bpf_prog_active), so the per-CPU count needs
 * no atomic. A slot past KHBPF_SPAN_MAX_SLOT fails the caller.
 */
static __always_inline __u64 new_slot(bool fetch)
{
	__u64 *t, n;
	__u32 zero = 0;

	if (fetch)
		return __sync_fetch_and_add(&span_threads, 1) + 1;
	t = bpf_map_lookup_elem(&slot_tickets, &zero);
	if (!t)
		return KHBPF_SPAN_MAX_SLOT + 1ULL;
	n = (*t)++;
	__sync_fetch_and_add(&span_threads, 1);
	return (__u64)bpf_get_smp_processor_id() + 1 + n * nr_slot_cpus;
}

/* Attached per span site with the metric index as the uprobe's cookie. */
static __always_inline int span_enter(struct pt_regs *ctx, bool fetch)
{
	struct task_struct *task = current_task();
	struct khbpf_span_clock *ck;
	struct khbpf_span_state *ss;
	struct khbpf_span_frame *f;
	__u32 depth, metric;
	bool start;

	ss = span_state_get(task, true);
	if (!ss) {
		__sync_fetch_and_add(&span_state_failures, 1);
		return 0;
	}
	if (!ss->slot) {
		__u64 slot = new_slot(fetch);

		if (slot > KHBPF_SPAN_MAX_SLOT) {
			__sync_fetch_and_add(&span_state_failures, 1);
			return 0;
		}
		ss->slot = slot;
	}
	if (have_cookie) {
		metric = (__u32)bpf_get_attach_cookie(ctx);
	} else {
		bool ok;

		/*
		 * The probed address: on 5.10 (x86-64) the handlers see the
		 * instruction pointer at it; one byte past it (the int3) is
		 * tried too.
		 */
		metric = site_metric(task, PT_REGS_IP(ctx), &ok);
		if (!ok) {
			/* Not pushed, like an overflow: its return pops the count. */
			ss->overflow++;
			__sync_fetch_and_add(&span_site_unresolved, 1);
			return 0;
		}
	}
	ck = &ss->clock;
	depth = ss->depth;
	if (depth >= KHBPF_SPAN_DEPTH || ss->overflow) {
		/* Pushed nowhere; the matching return pops the overflow count. */
		ss->overflow++;
		__sync_fetch_and_add(&span_depth_overflow, 1);
		return 0;
	}
	/*
	 * First open span: start the thread's clock. switched_in stays 0 until
	 * set, so a switch in between is not charged to it (span_clock_out).
	 */
	start = ck->spans_open++ == 0;
	f = &ss->frames[depth & (KHBPF_SPAN_DEPTH - 1)];
	f->span_id = ((__u64)ss->slot << KHBPF_SPAN_SEQ_BITS) |
		     (++ss->seq & ((1ULL << KHBPF_SPAN_SEQ_BITS) - 1));
	f->child_ns = 0;
	f->metric = metric;
	f->start_ns = ledger_now(task, ck, &f->at_start, f->hw, start);
	f->clock_gaps = ck->clock_gaps;
	ss->depth = depth + 1;
	return 0;
}

static __always_inline void span_aggregate(__u32 tid, __u32 metric, __u64 incl, __u64 excl,
					   const struct khbpf_span_ledger *l, __u32 flags,
					   const struct khbpf_span_hw *hw)
{
	__u32 i, any = 0;
	struct khbpf_span_key key = { .tid = tid, .metric = metric };
	struct khbpf_span_agg *a;

	a = bpf_map_lookup_elem(&span_agg, &key);
	if (!a) {
		__u32 zero = 0;
		struct khbpf_span_agg *z = bpf_map_lookup_elem(&span_agg_zero, &zero);

		if (z)
			bpf_map_update_elem(&span_agg, &key, z, BPF_NOEXIST);
		a = bpf_map_lookup_elem(&span_agg, &key);
		if (!a) {
			__sync_fetch_and_add(&span_agg_overflow, 1);
			return;
		}
	}
	/* One writer per key: the thread itself. */
	a->calls++;
	a->inclusive_ns += incl;
	a->exclusive_ns += excl;
	if (flags & KHBPF_SPAN_F_CLOCK_GAP)
		a->clock_gap_calls++;
	else
		a->ledger.on_cpu_ns += l->on_cpu_ns;
	for (i = 0; i < KHBPF_NR_COUNTERS; i++) {
		if (i >= nr_counters)
			break;
		if (hw[i].status == KHBPF_VCTR_OK) {
			any = 1;
			a->hw_sum[i] += hw[i].end - hw[i].begin;
		}
	}
	a->hw_calls += any;
	a->ledger.run_delay_ns += l->run_delay_ns;
	a->ledger.nvcsw += l->nvcsw;
	a->ledger.nivcsw += l->nivcsw;
	a->ledger.migrations += l->migrations;
	a->hist[khbpf_rq_slot(incl)]++;
}

static __always_inline int span_exit(struct pt_regs *ctx, bool fetch)
{
	struct task_struct *task = current_task();
	__u32 metric;
	struct khbpf_vreading now_hw[KHBPF_NR_COUNTERS] = {};
	struct khbpf_span_hw hw[KHBPF_NR_COUNTERS] = {};
	struct khbpf_span_ledger now_l, l;
	struct khbpf_span_event *e;
	struct khbpf_span_clock *ck;
	struct khbpf_span_state *ss;
	struct khbpf_span_frame *f;
	__u64 now, incl, excl, parent_id = 0;
	__u32 depth, idx, i, flags = 0;
	__u64 rec;

	ss = span_state_get(task, false);
	if (!ss)
		return 0;
	ck = &ss->clock;
	if (ss->overflow) {
		ss->overflow--;
		return 0;
	}
	depth = ss->depth;
	if (!depth || depth > KHBPF_SPAN_DEPTH) {
		__sync_fetch_and_add(&span_unmatched, 1);
		return 0;
	}
	/*
	 * Without cookies the return does not know its metric: it closes the
	 * innermost frame (a frame skipped by longjmp then ends at the next
	 * return instead of being unwound).
	 */
	if (have_cookie)
		metric = (__u32)bpf_get_attach_cookie(ctx);
	else
		metric = ss->frames[(depth - 1) & (KHBPF_SPAN_DEPTH - 1)].metric;
	/* Returns come LIFO; a frame skipped by longjmp is closed here, uncounted. */
	idx = depth - 1;
	for (i = 0; i < KHBPF_SPAN_DEPTH; i++) {
		if (ss->frames[idx & (KHBPF_SPAN_DEPTH - 1)].metric == metric || idx == 0)
			break;
		idx--;
	}
	if (ss->frames[idx & (KHBPF_SPAN_DEPTH - 1)].metric != metric) {
		__sync_fetch_and_add(&span_unmatched, 1);
		return 0;
	}
	if (idx != depth - 1)
		__sync_fetch_and_add(&span_unwound, depth - 1 - idx);
	f = &ss->frames[idx & (KHBPF_SPAN_DEPTH - 1)];
	now = ledger_now(task, ck, &now_l, now_hw, false);
	if (ck->clock_gaps != f->clock_gaps)
		flags |= KHBPF_SPAN_F_CLOCK_GAP;
	for (i = 0; i < KHBPF_NR_COUNTERS; i++) {
		if (i >= nr_counters)
			break;
		hw[i].begin = f->hw[i].value;
		hw[i].end = now_hw[i].value;
		hw[i].status = khbpf_vctr_status(&f->hw[i], &now_hw[i]);
	}
	incl = sub0(now, f->start_ns);
	excl = sub0(incl, f->child_ns);
	l.on_cpu_ns = sub0(now_l.on_cpu_ns, f->at_start.on_cpu_ns);
	l.run_delay_ns = sub0(now_l.run_delay_ns, f->at_start.run_delay_ns);
	l.nvcsw = sub0(now_l.nvcsw, f->at_start.nvcsw);
	l.nivcsw = sub0(now_l.nivcsw, f->at_start.nivcsw);
	l.migrations = sub0(now_l.migrations, f->at_start.migrations);
	if (idx > 0) {
		struct khbpf_span_frame *p = &ss->frames[(idx - 1) & (KHBPF_SPAN_DEPTH - 1)];

		p->child_ns += incl;
		parent_id = p->span_id;
	}
	ss->depth = idx;
	ck->spans_open = ck->spans_open > depth - idx ? ck->spans_open - (depth - idx) : 0;
	if (!ck->spans_open)
		ck->switched_in = 0;

	span_aggregate(CUR_READ(task, pid), metric, incl, excl, &l, flags, hw);

	if (fetch) {
		rec = __sync_fetch_and_add(&span_records, 1);
	} else {
		/* Others may add in between: the kernel's cap is then a few off, the loader's is exact. */
		__sync_fetch_and_add(&span_records, 1);
		rec = span_records - 1;
	}
	if (rec >= max_spans) {
		__sync_fetch_and_add(&span_sampled_out, 1);
		return 0;
	}
	e = bpf_ringbuf_reserve(&span_events, nr_counters ? sizeof(*e) : KHBPF_SPAN_EVENT_NOHW_SIZE,
				0);
	if (!e) {
		__sync_fetch_and_add(&span_ringbuf_drops, 1);
		return 0;
	}
	e->span_id = f->span_id;
	e->parent_span_id = parent_id;
	e->start_ns = f->start_ns;
	e->inclusive_ns = incl;
	e->exclusive_ns = excl;
	e->tid = CUR_READ(task, pid);
	e->metric = metric;
	e->depth = idx;
	e->flags = flags;
	e->ledger = l;
	if (nr_counters)
		__builtin_memcpy(e->hw, hw, sizeof(hw));
	/*
	 * Waking the reader costs more than the rest of the span (an irq_work
	 * and a wakeup per record); wake it every SPAN_WAKEUP_EVERY records
	 * (152 KiB, well inside the 4 MiB buffer), the loader also drains on
	 * its timer and at the end.
	 */
	bpf_ringbuf_submit(e, (rec & (SPAN_WAKEUP_EVERY - 1)) == SPAN_WAKEUP_EVERY - 1 ?
				      BPF_RB_FORCE_WAKEUP :
				      BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(khbpf_span_enter)
{
	return span_enter(ctx, true);
}

SEC("uretprobe")
int BPF_KRETPROBE(khbpf_span_exit)
{
	return span_exit(ctx, true);
}

SEC("uprobe")
int BPF_KPROBE(khbpf_span_enter_nofetch)
{
	return span_enter(ctx, false);
}

SEC("uretprobe")
int BPF_KRETPROBE(khbpf_span_exit_nofetch)
{
	return span_exit(ctx, false);
}

/* Spans still open: one record per open frame, for the window's end. */
SEC("iter/task")
int khbpf_iter_open_spans(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct khbpf_span_state *ss;
	struct khbpf_span_event e = {};
	__u32 i, depth;

	if (!task || !is_target(task))
		return 0;
	ss = span_state_get(task, false);
	if (!ss)
		return 0;
	depth = ss->depth;
	for (i = 0; i < KHBPF_SPAN_DEPTH; i++) {
		struct khbpf_span_frame *f = &ss->frames[i];

		if (i >= depth)
			break;
		e.span_id = f->span_id;
		e.parent_span_id = i ? ss->frames[(i - 1) & (KHBPF_SPAN_DEPTH - 1)].span_id : 0;
		e.start_ns = f->start_ns;
		e.tid = task->pid;
		e.metric = f->metric;
		e.depth = i;
		if (bpf_seq_write(seq, &e, sizeof(e)))
			__sync_fetch_and_add(&iter_write_errors, 1);
	}
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the scheduler collector's BPF programs share. sched.bpf.c (the
 * scheduler programs and task iterators), span.bpf.c (the uprobe span
 * programs) and wake.bpf.c (who woke a thread) are compiled apart and
 * linked into one object, one skeleton (sched_bpf). Each map and global
 * variable is declared here and defined once, in sched.bpf.c; the static
 * linker resolves the other objects' externs to those definitions, so all
 * use the same maps. Helpers both use are here,
 * static as they were: each object gets its own copy, inlined or (the two
 * __noinline ones) a static subprogram, so the verifier sees the programs
 * it saw when they were one file.
 */
#ifndef KHBPF_BPF_H
#define KHBPF_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "khbpf/sched.h"
#include "khbpf/spans.h"
#include "khbpf/targets.h"

/* x86-64 without KASAN: the kernel stack's size (THREAD_SIZE). */
#define KHBPF_THREAD_SIZE 16384

#define TASK_RUNNING 0
#define TASK_DEAD 0x80
#define PF_EXITING 0x4

/* Loader-set configuration (.rodata) and counters (.bss): see sched.bpf.c. */
extern const volatile bool trace_all;
extern const volatile bool kernel_queue_ts;
extern const volatile bool spans_enabled;
extern const volatile bool span_filter;
extern const volatile bool span_follow_exec;
extern const volatile __u32 nr_counters;
extern const volatile __u64 max_spans;
extern const volatile __u32 span_wakeup_mask;
extern const volatile bool use_task_storage;
extern const volatile bool have_task_btf;
extern const volatile bool have_cookie;
extern const volatile bool have_preempt_kfuncs;
extern const volatile __u32 nr_slot_cpus;
extern const volatile bool blocked_enabled;
extern const volatile bool wakers_enabled;
extern const volatile bool span_causes_enabled;
extern const volatile __u32 group_by;
extern const volatile __u32 set_mode;
extern const volatile __u32 nr_cgroup_filters;
extern const volatile __u64 cgroup_filter_id[KHBPF_MAX_CGROUP_FILTERS];
extern const volatile __u32 cgroup_filter_level[KHBPF_MAX_CGROUP_FILTERS];
extern __u32 target_slots[KHBPF_TARGET_SLOTS];
extern __u32 iter_init_state;
extern __u32 join_how;
extern __u64 storage_failures;
extern __u64 exited_overflow;
extern __u64 final_unmatched;
extern __u64 iter_write_errors;
extern __u64 span_threads;
extern __u64 span_records;
extern __u64 span_ringbuf_drops;
extern __u64 span_sampled_out;
extern __u64 span_depth_overflow;
extern __u64 span_unwound;
extern __u64 span_unmatched;
extern __u64 span_agg_overflow;
extern __u64 span_state_failures;
extern __u64 span_clock_gaps;
extern __u64 span_counter_skews;
extern __u64 exec_renumbered;
extern __u64 span_open_at_exit_drops;
extern __u64 groups_made;
extern __u64 group_overflow;
extern __u64 span_site_unresolved;
extern __u64 usdt_hits_lost;
extern __u64 span_series_made;
extern __u64 span_series_overflow;
extern __u64 span_open_at_exit_serve;
extern __u64 span_key_other_calls;
extern __u64 span_key_unreadable;
extern __u64 span_key_table_full;
extern const volatile bool keys_enabled;
extern __u64 wakers_overflow;
extern __u64 wakeups_unseen;
extern __u64 span_wakes_unlisted;
extern __u64 span_wakers_overflow;
extern __u64 blocked_regs_unread;
extern __u64 span_cause_stretches[KHBPF_MAX_METRICS];
extern __u8 span_metric_cause[KHBPF_MAX_METRICS];
extern __u64 procs_overflow;
extern __u64 procs_joined;
extern __u64 join_failures;
extern __u64 forks_joined_at_wakeup;
extern __u64 moved_base_overflow;
extern __u64 cgroup_moves_in;
extern __u64 cgroup_rejoins;
extern __u64 exec_events_dropped;
extern const volatile bool wait_folds_enabled;
extern __u64 wait_folds_full;

/* sched.bpf.c defines KHBPF_DEFINE_MAPS before including this: the maps are made there. */
#ifdef KHBPF_DEFINE_MAPS
#define KHBPF_MAP
#else
#define KHBPF_MAP extern
#endif

KHBPF_MAP struct {
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
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_MAX_TASKS);
	__type(key, __u64);
	__type(value, struct khbpf_task_state);
} task_state_h SEC(".maps");

KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_SPAN_TASKS);
	__type(key, __u64);
	__type(value, struct khbpf_span_state);
} span_state_h SEC(".maps");

/* The plain switch program's wait folds (khbpf_wait_fold, sched.h): one entry unless enabled. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_wait_fold);
} wait_folds SEC(".maps");

/* Zeroed values to create hash entries from (too large for the stack). */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_task_state);
} task_state_zero SEC(".maps");

KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_span_state);
} span_state_zero SEC(".maps");

/* No attach cookie: the metric of each span site, filled by the loader. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_MAX_SPAN_SITES);
	__type(key, struct khbpf_site_key);
	__type(value, struct khbpf_site_val);
} span_site_metric SEC(".maps");

/* Sized by the loader (--max-exited); allocated on use where the kernel allows it. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_MAX_EXITED);
	__type(key, struct khbpf_thread_key);
	__type(value, struct khbpf_thread_rec);
} exited SEC(".maps");

KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct khbpf_span_state);
} span_state SEC(".maps");

KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_SPAN_KEYS);
	__type(key, struct khbpf_span_key);
	__type(value, struct khbpf_span_agg);
} span_agg SEC(".maps");

/* serve: (group, metric) series; sized by the loader (--max-span-series). */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	/* As `groups`: never added into after the loader removed it. */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, KHBPF_DEFAULT_SPAN_SERIES);
	__type(key, struct khbpf_span_series_key);
	__type(value, struct khbpf_span_agg);
} span_series SEC(".maps");

/* ... and, per metric, the calls of series span_series had no room for. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KHBPF_MAX_METRICS);
	__type(key, __u32);
	__type(value, struct khbpf_span_agg);
} span_series_spill SEC(".maps");

/* Hits of each --usdt probe (the key's metric) by each thread: its only writer. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_USDT_HIT_KEYS);
	__type(key, struct khbpf_span_key);
	__type(value, __u64);
} usdt_hits SEC(".maps");

/* --key: each keyed metric's key kind and bound (KHBPF_KEY_NONE: not keyed). */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KHBPF_MAX_METRICS);
	__type(key, __u32);
	__type(value, struct khbpf_key_conf);
} span_key_conf SEC(".maps");

/* --key: keys handed out per metric (raised before the bound is checked). */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KHBPF_MAX_METRICS);
	__type(key, __u32);
	__type(value, __u32);
} span_key_count SEC(".maps");

/* --key: how each keyed site reads its argument, by slot - 1 (filled by the loader). */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KHBPF_MAX_SPAN_SITES);
	__type(key, __u32);
	__type(value, struct khbpf_arg_spec);
} span_site_args SEC(".maps");

/* --key: every key seen, to its metric id (KHBPF_KEY_METRIC_BASE + slot). */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_MAX_KEYS);
	__type(key, struct khbpf_key);
	__type(value, __u32);
} span_key_ids SEC(".maps");

/* A key being made: too large for the span programs' stack. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_key);
} key_scratch SEC(".maps");

/* Each CPU's next key-slot ticket: slots are cpu + n * nr_slot_cpus, no atomic fetch. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} key_tickets SEC(".maps");

/* Without atomic fetch: each CPU's next span-slot ticket (programs do not nest on a CPU). */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} slot_tickets SEC(".maps");

/* A zeroed aggregate to create entries from: too large for the BPF stack. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_span_agg);
} span_agg_zero SEC(".maps");

/* Index cpu * KHBPF_NR_COUNTERS + slot; sized by the loader. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(max_entries, KHBPF_NR_COUNTERS);
	__type(key, __u32);
	__type(value, __u32);
} counters SEC(".maps");

KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, KHBPF_SPAN_RINGBUF_BYTES);
} span_events SEC(".maps");

/* Sized by the loader to the host's CPU ids. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_cpu_topo);
} cpu_topo SEC(".maps");

/* Sized by the loader (--max-groups); the loader ages and evicts entries. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	/* Freed after an RCU grace period: a program never adds into a reused element. */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, KHBPF_DEFAULT_MAX_GROUPS);
	__type(key, struct khbpf_group_key);
	__type(value, struct khbpf_group_acc);
} groups SEC(".maps");

/* What belonged to groups `groups` had no room for: nothing is dropped. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2); /* [0] the spill, [1] a zero value to create entries from */
	__type(key, __u32);
	__type(value, struct khbpf_group_acc);
} group_spill SEC(".maps");

/* Blocking causes of system calls by number, filled by the loader (KHBPF_SYSCALL_*). */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KHBPF_SYSCALL_NR_MAX);
	__type(key, __u32);
	__type(value, __u32);
} syscall_cause SEC(".maps");

/*
 * Who ended the blocked time of each span metric's calls (span.bpf.c, from
 * the span clock's wake_log); full: counted in span_wakers_overflow.
 */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_SPAN_WAKERS);
	__type(key, struct khbpf_span_waker_key);
	__type(value, struct khbpf_span_waker_val);
} span_wakers SEC(".maps");

/* Who woke each target thread (sched.bpf.c); full: counted in wakers_overflow. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_MAX_WAKERS);
	__type(key, struct khbpf_waker_key);
	__type(value, struct khbpf_waker_val);
} wakers SEC(".maps");

/*
 * Each CPU's depth of timer expiries (hrtimer, timer_list), device interrupt
 * handlers and softirqs running now (sched.bpf.c's tracepoints).
 */
struct khbpf_irq_ctx {
	__u32 timer;
	__u32 hardirq;
	__u32 softirq;
	__u32 pad;
};

KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_irq_ctx);
} irq_ctx SEC(".maps");

/*
 * The processes of the target set (include/khbpf/targets.h), sized by the
 * loader (--max-processes): a process that finds it full does not join,
 * counted in procs_overflow.
 */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_MAX_PROCESSES);
	__type(key, struct khbpf_proc_key);
	__type(value, struct khbpf_proc_rec);
} procs SEC(".maps");

KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_proc_rec);
} proc_zero SEC(".maps");

/*
 * Cgroup sets: the baseline of each thread that joined when it was moved
 * into the cgroups (its counters then), as the walk's records are for the
 * threads it finds; full: counted in moved_base_overflow.
 */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct khbpf_thread_key);
	__type(value, struct khbpf_thread_rec);
} moved_base SEC(".maps");

/* Execs of the set's processes, for the loader to find span sites in (sized by it). */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} set_events SEC(".maps");

/* A zeroed record to create `exited` entries from, filled in place. */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_thread_rec);
} rec_zero SEC(".maps");

/*
 * A record is too large for the 512-byte BPF stack. Used by the task
 * iterator alone: a per-CPU buffer is private only to programs that cannot
 * be preempted by another user of it.
 */
KHBPF_MAP struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_thread_rec);
} scratch SEC(".maps");

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

/* A root of the set: in the loader's table of tgids (KHBPF_SET_PIDS, _TREE). */
static __always_inline bool is_root(__u32 tgid)
{
	__u32 slot, i;

	/* 0 marks an empty slot; it is also the idle task's tgid, never a target. */
	if (!tgid)
		return false;
	slot = khbpf_target_slot(tgid);
#pragma unroll
	for (i = 0; i < KHBPF_TARGET_PROBES; i++) {
		__u32 t = target_slots[(slot + i) & (KHBPF_TARGET_SLOTS - 1)];

		if (t == tgid)
			return true;
		if (!t)
			return false;
	}
	return false;
}

/*
 * A member of the target set: its state, flagged KHBPF_MEMBER; NULL for
 * anything else. With task storage, a task that has none at all (every
 * task outside the set) is told apart by one load from its task_struct,
 * before any helper call or map access.
 */
static __always_inline struct khbpf_task_state *member_state(struct task_struct *p)
{
	struct khbpf_task_state *st;

	if (use_task_storage) {
		if (bpf_core_field_exists(p->bpf_storage) && !p->bpf_storage)
			return NULL;
		st = bpf_task_storage_get(&task_state, p, NULL, 0);
	} else {
		__u64 key = (__u64)p;

		st = bpf_map_lookup_elem(&task_state_h, &key);
		/* The hash is keyed by address: a later task at the same one is not this member. */
		if (st && (st->tid != (__u32)p->pid || st->start_time != p->start_time))
			return NULL;
	}
	return st && (st->member & KHBPF_MEMBER) ? st : NULL;
}

static __always_inline bool is_target(struct task_struct *p)
{
	if (set_mode)
		return member_state(p) != NULL;
	if (nr_cgroup_filters)
		return p->pid != 0 && in_cgroup_filter(p);
	if (trace_all)
		return p->pid != 0;
	return false;
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
static __always_inline void fold_waits_since(__u64 last_run_delay, __u64 last_pcount,
					     struct khbpf_task_bpf *b, __u64 run_delay,
					     __u64 pcount)
{
	__u64 arrivals = pcount - last_pcount;
	__u64 delay = run_delay - last_run_delay;

	if (pcount <= last_pcount)
		return;
	b->switch_ins += arrivals;
	if (arrivals == 1) {
		bin_wait(b, delay);
	} else {
		b->unbinned_waits += arrivals;
		b->unbinned_ns += delay;
	}
}

static __always_inline void fold_waits(const struct khbpf_task_state *st, struct khbpf_task_bpf *b,
				       __u64 run_delay, __u64 pcount)
{
	fold_waits_since(st->last_run_delay, st->last_pcount, b, run_delay, pcount);
}

/*
 * A wait histogram copied in a loop: unrolled, each of the programs that
 * read a fold would hold 80 more instructions, and every program is charged
 * its instructions in whole pages, dead ones too (kernel_memory.sh).
 */
static __always_inline void hist_copy(__u64 *dst, const __u64 *src)
{
	__u32 i;

#pragma clang loop unroll(disable)
	for (i = 0; i < KHBPF_RQ_SLOTS; i++)
		dst[i] = src[i];
}

/*
 * The wait fold entry of key (khbpf_wait_fold): a multiplicative hash's top
 * bits. Their number is a constant, not a .rodata value: the switch reads
 * no global (see khbpf_sched_switch_set).
 */
static __always_inline struct khbpf_wait_fold *wait_fold_at(__u64 key)
{
	__u32 idx = (key * 0x9e3779b97f4a7c15ULL) >> (64 - KHBPF_WAIT_FOLD_BITS);

	return bpf_map_lookup_elem(&wait_folds, &idx);
}

/*
 * The fields a wait fold holds, copied between a khbpf_task_bpf and a
 * khbpf_wait_fold (same names in both), either way.
 */
#define WAIT_FIELDS_COPY(dst, src)                             \
	do {                                                   \
		(dst)->wait_ns = (src)->wait_ns;               \
		(dst)->waits = (src)->waits;                   \
		(dst)->unbinned_ns = (src)->unbinned_ns;       \
		(dst)->unbinned_waits = (src)->unbinned_waits; \
		(dst)->switch_ins = (src)->switch_ins;         \
		hist_copy((dst)->wait_hist, (src)->wait_hist); \
	} while (0)

/* p's task key: where it is, less where task_state is (a pointer difference). */
static __always_inline __u64 wait_fold_task(const struct task_struct *p)
{
	return (const char *)p - (const char *)&task_state;
}

/* st's key: where its data is, less where task_state is (a pointer difference). */
static __always_inline __u64 wait_fold_key(const struct khbpf_task_state *st)
{
	return (const char *)st - (const char *)&task_state;
}

/* st's wait fold, or NULL when its waits fold in st. */
static __always_inline struct khbpf_wait_fold *wait_fold_of(const struct khbpf_task_state *st)
{
	struct khbpf_wait_fold *f;

	if (!wait_folds_enabled || !(st->member & KHBPF_MEMBER_FOLD))
		return NULL;
	f = wait_fold_at(wait_fold_key(st));
	return f && f->owner == wait_fold_key(st) ? f : NULL;
}

/* The plain program's fold of a wait into f: fold_waits()'s rule. */
static __always_inline void wait_fold_add(struct khbpf_wait_fold *f, __u64 run_delay, __u64 pcount)
{
	__u64 arrivals = pcount - f->last_pcount;
	__u64 delay = run_delay - f->last_run_delay;

	if (pcount > f->last_pcount) {
		f->switch_ins += arrivals;
		if (arrivals == 1) {
			f->wait_ns += delay;
			f->waits++;
			f->wait_hist[khbpf_rq_slot(delay)]++;
		} else {
			f->unbinned_waits += arrivals;
			f->unbinned_ns += delay;
		}
	}
	f->last_run_delay = run_delay;
	f->last_pcount = pcount;
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

struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/* The task's state: __state, or state before 5.14. */
/*
 * p is trusted (a tp_btf argument or the task iterator's): plain loads, not
 * a bpf_probe_read_kernel() call at every switch.
 */
static __always_inline unsigned int task_state_now(struct task_struct *p)
{
	if (bpf_core_field_exists(p->__state))
		return p->__state;
	return ((struct task_struct___pre514 *)p)->state;
}

#endif /* KHBPF_BPF_H */

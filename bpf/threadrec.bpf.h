/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A thread's record (the task iterators', the exit records, the baselines of
 * threads that join the set) and the stamps a thread's state starts from
 * when it is first looked at during a window. Included by sched.bpf.c and
 * targets.bpf.c, after khbpf.bpf.h, group.bpf.h and blocked.bpf.h.
 */
#ifndef KHBPF_THREADREC_BPF_H
#define KHBPF_THREADREC_BPF_H

#include "khbpf.bpf.h"

/*
 * b (a copy of st->b) with st's waits folded to the counters (run_delay,
 * pcount) read now: its wait fold's, or st's own. A fold given back (its
 * thread's final switch, on another CPU) while it was copied went back
 * into st first: the owner is looked at again after the copy.
 */
static __always_inline void state_waits(const struct khbpf_task_state *st, struct khbpf_task_bpf *b,
					__u64 run_delay, __u64 pcount)
{
	struct khbpf_wait_fold *f = wait_fold_of(st);
	__u64 lrd = st->last_run_delay, lpc = st->last_pcount;

	if (f) {
		WAIT_FIELDS_COPY(b, f);
		lrd = f->last_run_delay;
		lpc = f->last_pcount;
		/*
		 * Every load above before the owner's second look (x86-64 keeps
		 * loads in order; the release and the take publish the owner
		 * last, as join_done() does the member flag).
		 */
		asm volatile("" ::: "memory");
		if (*(volatile __u64 *)&f->owner != wait_fold_key(st)) {
			WAIT_FIELDS_COPY(b, &st->b);
			lrd = st->last_run_delay;
			lpc = st->last_pcount;
		}
	}
	if (kernel_queue_ts)
		fold_waits_since(lrd, lpc, b, run_delay, pcount);
}

/*
 * folds: p may have a wait fold (it is alive, and the plain switch program
 * may be loaded). The cgroup sets' records, and the final switch's (which
 * has put the fold back), pass false: each inlined look at a fold is
 * charged to every program that holds it, in whole pages (kernel_memory.sh).
 */
static __always_inline void fill_rec_folds(struct khbpf_thread_rec *r, struct task_struct *p,
					   __u32 flags, bool folds)
{
	struct khbpf_task_state *st;

	r->tid = BPF_CORE_READ(p, pid);
	r->tgid = BPF_CORE_READ(p, tgid);
	r->start_time = BPF_CORE_READ(p, start_time);
	r->proc_start_time = p->group_leader->start_time;
	BPF_CORE_READ_STR_INTO(&r->comm, p, comm);
	read_counters(p, &r->k);
	st = task_state_get(p, false);
	if (st) {
		r->b = st->b;
		if (folds)
			state_waits(st, &r->b, r->k.run_delay, r->k.pcount);
		else if (kernel_queue_ts)
			fold_waits(st, &r->b, r->k.run_delay, r->k.pcount);
		if (blocked_enabled)
			r->b.blocked.ns[cause_idx(st->ep_cause)] += open_blocked_ns(p, st);
		flags |= KHBPF_REC_HAS_STATE;
	} else {
		__builtin_memset(&r->b, 0, sizeof(r->b));
	}
	r->flags = flags;
	r->pad = 0;
}

static __always_inline void fill_rec(struct khbpf_thread_rec *r, struct task_struct *p, __u32 flags)
{
	fill_rec_folds(r, p, flags, true);
}

/*
 * A baseline look at a thread (the window's start, or its joining the set
 * later): each thread's wait accounting and group counters start from now
 * (how 1); run's held command (how 2) only gets its off-CPU stretch started.
 */
static __always_inline void stamp_baseline(struct task_struct *task, struct khbpf_task_state *st,
					   __u32 how)
{
	if (how == 2) {
		if (blocked_enabled)
			baseline_stretch(task, st);
		return;
	}
	if (!kernel_queue_ts && !group_by)
		return;
	read_sched_info(task, &st->last_run_delay, &st->last_pcount);
	st->last_nvcsw = task->nvcsw;
	st->last_nivcsw = task->nivcsw;
	st->last_migrations = task->se.nr_migrations;
	st->last_runtime = task->se.sum_exec_runtime;
	if (blocked_enabled)
		baseline_stretch(task, st);
}

/*
 * The `exited` entry of key, made (zeroed) if there is none yet: the record
 * is filled in place, never through a per-CPU buffer, because the exit
 * tracepoint's program can be preempted (see khbpf_sched_process_exit).
 * NULL when the map is full.
 */
static __always_inline struct khbpf_thread_rec *exited_entry(const struct khbpf_thread_key *key)
{
	struct khbpf_thread_rec *r = bpf_map_lookup_elem(&exited, key), *z;
	__u32 zero = 0;

	if (r)
		return r;
	z = bpf_map_lookup_elem(&rec_zero, &zero);
	if (!z)
		return NULL;
	bpf_map_update_elem(&exited, key, z, BPF_NOEXIST);
	return bpf_map_lookup_elem(&exited, key);
}

/*
 * A task iterator's record of task, marked as exiting or a zombie where it
 * is one (khbpf_iter_task, khbpf_iter_join).
 */
static __always_inline int iter_write_rec(struct seq_file *seq, struct task_struct *task,
					  __u32 flags)
{
	struct khbpf_thread_rec *r;
	__u32 zero = 0;

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

#endif /* KHBPF_THREADREC_BPF_H */

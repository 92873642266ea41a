/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The target set (include/khbpf/targets.h): a thread joins by getting its
 * state flagged KHBPF_MEMBER, a process by getting its record in `procs`.
 * Used by the programs of targets.bpf.c (fork, cgroup moves, the walk) and
 * by sched.bpf.c's switch. Included after threadrec.bpf.h.
 */
#ifndef KHBPF_TARGETS_BPF_H
#define KHBPF_TARGETS_BPF_H

#include "khbpf.bpf.h"
#include "threadrec.bpf.h"

/* include/linux/sched/signal.h: a group exit (exit_group(), a fatal signal) is under way. */
#define KHBPF_SIGNAL_GROUP_EXIT 0x00000004
#define KHBPF_EEXIST 17

static __always_inline void proc_key_of(struct task_struct *p, struct khbpf_proc_key *k)
{
	k->pid = p->tgid;
	k->pad = 0;
	/* de_thread() gives an exec'ing thread the leader's start time: the key survives exec. */
	k->start_time = p->group_leader->start_time;
}

static __always_inline struct khbpf_proc_rec *proc_of(struct task_struct *p)
{
	struct khbpf_proc_key k;

	proc_key_of(p, &k);
	return bpf_map_lookup_elem(&procs, &k);
}

/*
 * p's process joins the set (how: KHBPF_PROC_*): its record made, or
 * found when another of its threads (or another CPU) made it first. NULL
 * when `procs` is full: the process stays out, counted once, by its
 * leader (or at its fork).
 */
static __always_inline struct khbpf_proc_rec *proc_join(struct task_struct *p, __u32 how,
							bool second)
{
	struct khbpf_proc_rec *r, *z, *pr;
	struct khbpf_proc_key k, pk = {};
	struct task_struct *parent, *leader = p->group_leader;
	__u32 zero = 0;
	long err;

	proc_key_of(p, &k);
	r = bpf_map_lookup_elem(&procs, &k);
	if (r)
		return r;
	z = bpf_map_lookup_elem(&proc_zero, &zero);
	if (!z)
		return NULL;
	err = bpf_map_update_elem(&procs, &k, z, BPF_NOEXIST);
	r = bpf_map_lookup_elem(&procs, &k);
	if (!r) {
		if (err != -KHBPF_EEXIST && !second && ((how & KHBPF_PROC_FORKED) || p == leader))
			__sync_fetch_and_add(&procs_overflow, 1);
		return NULL;
	}
	if (err)
		return r; /* made meanwhile on another CPU */
	__sync_fetch_and_add(&procs_joined, 1);
	parent = p->real_parent;
	r->pid = k.pid;
	r->start_time = k.start_time;
	r->ppid = parent->tgid;
	r->parent_start_time = parent->group_leader->start_time;
	r->join_ns = bpf_ktime_get_ns();
	/*
	 * Until it execs, a process runs what the one it was forked from ran:
	 * that one's last exec (its record's path, copied now, before it can
	 * exec again), or the executable the loader read for it.
	 */
	pk.pid = parent->tgid;
	pk.start_time = r->parent_start_time;
	pr = (how & KHBPF_PROC_FORKED) ? bpf_map_lookup_elem(&procs, &pk) : NULL;
	if (pr) {
		r->exe_tgid = pr->exe_tgid;
		r->exe_start_time = pr->exe_start_time;
		__builtin_memcpy(r->exec_path, pr->exec_path, sizeof(r->exec_path));
	} else {
		r->exe_tgid = pk.pid;
		r->exe_start_time = pk.start_time;
	}
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), leader->comm);
	r->flags = how;
	return r;
}

/*
 * p joins the set: its state made and flagged a member, with nothing
 * counted yet (a thread being forked has run for no time). NULL when the
 * state cannot be made (counted: a thread lost to the set, unless second:
 * a second chance), or when p already is a member or left the cgroups once.
 */
static __always_inline struct khbpf_task_state *join_thread(struct task_struct *p, bool second)
{
	struct khbpf_task_state *st = task_state_get(p, true), *zero;
	__u32 z = 0;

	if (!st) {
		/* A second chance's failure was the fork program's too, counted there. */
		if (!second)
			__sync_fetch_and_add(&join_failures, 1);
		return NULL;
	}
	if (!use_task_storage && (st->tid != (__u32)p->pid || st->start_time != p->start_time)) {
		/* A dead task's entry at this address (its final switch did not free it). */
		zero = bpf_map_lookup_elem(&task_state_zero, &z);
		if (!zero)
			return NULL;
		__builtin_memcpy(st, zero, sizeof(*st));
	} else if (st->member) {
		/* Left the cgroups and found in them again: not counted twice; said once. */
		if ((st->member & (KHBPF_MEMBER_LEFT | KHBPF_MEMBER_REJOIN)) == KHBPF_MEMBER_LEFT) {
			st->member |= KHBPF_MEMBER_REJOIN;
			__sync_fetch_and_add(&cgroup_rejoins, 1);
		}
		return NULL;
	}
	st->tid = p->pid;
	st->start_time = p->start_time;
	if (set_mode == KHBPF_SET_CGROUP)
		st->cset = (__u64)p->cgroups;
	return st;
}

/*
 * The member flag last: a program on another CPU sees a member only once
 * its state is set up. BPF has no fence instruction; the compiler keeps
 * the stores in order, and x86-64 makes them visible in that order.
 */
static __always_inline void join_done(struct khbpf_task_state *st)
{
	asm volatile("" ::: "memory");
	st->member = KHBPF_MEMBER;
}

/*
 * A member of a cgroup set whose css_set changed since it was looked at
 * may have been moved: still under one of the cgroups, it stays; else it
 * leaves the set here, at its first switch after the move (off-CPU since
 * the move, its counters are those it had then; a thread moved while on a
 * CPU keeps that one timeslice). Its record as it left goes with the exit
 * records (KHBPF_REC_LEFT), and it does not rejoin in this window.
 */
static __always_inline struct khbpf_task_state *cgroup_still_member(struct task_struct *p,
								    struct khbpf_task_state *st)
{
	struct khbpf_thread_key key = {
		.tid = p->pid,
		.start_time = p->start_time,
	};
	struct khbpf_proc_rec *pr;
	struct khbpf_thread_rec *r;

	if ((__u64)p->cgroups == st->cset)
		return st;
	st->cset = (__u64)p->cgroups;
	if (in_cgroup_filter(p))
		return st;
	st->member = KHBPF_MEMBER_LEFT;
	r = exited_entry(&key);
	if (r)
		fill_rec_folds(r, p, KHBPF_REC_LEFT, false);
	else
		__sync_fetch_and_add(&exited_overflow, 1);
	pr = proc_of(p);
	if (pr)
		pr->flags |= KHBPF_PROC_LEFT;
	return NULL;
}

/*
 * prev's final switch-out: when it ends the last thread of its process,
 * the process's exit status, as wait4() would report it
 * (wait_task_zombie()): the group exit code, else the leader's own. Taken
 * here rather than at sched_process_exit, where older kernels have not
 * yet stored the thread's exit_code; every thread that finds the group
 * dead writes the same value.
 */
static __always_inline void proc_final_switch(struct task_struct *prev)
{
	struct task_struct *leader = prev->group_leader;
	struct signal_struct *sig = prev->signal;
	struct khbpf_proc_rec *r;
	__u32 status;

	if (sig->live.counter)
		return;
	/* The leader's exit_code is set once it is past do_exit()'s exit_notify(). */
	if (leader != prev && !leader->exit_state)
		return;
	r = proc_of(prev);
	if (!r)
		return;
	if (sig->flags & KHBPF_SIGNAL_GROUP_EXIT)
		status = sig->group_exit_code;
	else
		status = leader->exit_code;
	r->exit_status = status;
	r->exit_ns = bpf_ktime_get_ns();
	r->flags |= KHBPF_PROC_EXITED;
}

#endif /* KHBPF_TARGETS_BPF_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Blocked time (sched.bpf.c's part): each off-CPU stretch of a target
 * thread, from its switch-out to its next switch-in, timed on the runqueue
 * clock that sched_info keeps run_delay on, and its cause. Who woke the
 * thread is taken by the programs in wake.bpf.c. Included once, by
 * sched.bpf.c, after khbpf.bpf.h and group.bpf.h.
 */
#ifndef KHBPF_BLOCKED_BPF_H
#define KHBPF_BLOCKED_BPF_H

#define __TASK_STOPPED 0x4
#define __TASK_TRACED 0x8

/* A cause as an index the verifier can bound. */
static __always_inline __u32 cause_idx(__u32 c)
{
	return c < KHBPF_BLOCK_CAUSES ? c : KHBPF_BLOCK_OTHER;
}

/*
 * The runqueue clock of p's CPU, p being switched on this CPU: what
 * sched_info_depart() and sched_info_arrive() read there (rq_clock(),
 * updated by __schedule() before the tracepoint). Reached through the
 * task's CFS runqueue (CONFIG_FAIR_GROUP_SCHED): the per-CPU `runqueues`
 * is a ksym only with CONFIG_KALLSYMS_ALL.
 */
static __always_inline __u64 rq_clock_of(struct task_struct *p)
{
	/* Plain loads: p is a tracepoint's or the iterator's task (a BTF pointer). */
	return p->se.cfs_rq->rq->clock;
}

/*
 * The runqueue clock when p, leaving its CPU blocked, was taken off its
 * runqueue. Its last update_curr() was at that dequeue and set se.exec_start
 * to the task clock; pick_next_task() may have dropped the runqueue lock
 * since (newidle balancing) and let the clock move on: 1.41 ms once in the
 * 5.10 TCG guest. The kernel's own sleep time (enqueue_sleeper()) starts at
 * the dequeue, and so does p's blocked time. The task clock lags the
 * runqueue clock by IRQ and steal time, so the time since the dequeue is
 * taken on it and counted back from the runqueue clock.
 */
static __always_inline __u64 dequeue_clock_of(struct task_struct *p)
{
	struct rq *rq = p->se.cfs_rq->rq;
	__u64 clock = rq->clock, task = rq->clock_task, start = p->se.exec_start;

	if (!start || start > task || task - start >= clock)
		return clock;
	return clock - (task - start);
}

/* The user registers p saved at its kernel entry that block_cause() reads. */
struct entry_regs {
	long orig_ax;
	unsigned long di, si;
};

static __always_inline bool entry_regs_of(struct task_struct *p, struct entry_regs *r)
{
	struct pt_regs *regs;
	void *stack;

	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs)) {
		/* A BTF pointer: plain loads. */
		regs = (struct pt_regs *)bpf_task_pt_regs(p);
		r->orig_ax = (long)regs->orig_ax;
		r->di = regs->di;
		r->si = regs->si;
		return true;
	}
	/* Before bpf_task_pt_regs() (5.15): task_pt_regs() by hand, probe reads. */
	stack = BPF_CORE_READ(p, stack);
	if (!stack)
		return false;
	regs = (struct pt_regs *)(stack + KHBPF_THREAD_SIZE) - 1;
	/* A read that fails must not pass for system call 0 (read: io). */
	return !bpf_core_read(&r->orig_ax, sizeof(r->orig_ax), &regs->orig_ax) &&
	       !bpf_core_read(&r->di, sizeof(r->di), &regs->di) &&
	       !bpf_core_read(&r->si, sizeof(r->si), &regs->si);
}

/*
 * Why a thread that is not runnable blocked. orig_ax is the system call's
 * number, or -1 in an exception (the entry code moves a page fault's error
 * code out of it), so a thread blocked outside a system call is in a fault.
 */
static __always_inline __u32 block_cause(struct task_struct *p, unsigned int state)
{
	struct task_struct *tsk = p;
	struct entry_regs r;
	__u32 *c, v, nr;

	if (state & (__TASK_STOPPED | __TASK_TRACED))
		return KHBPF_BLOCK_OTHER;
	if (!entry_regs_of(p, &r)) {
		__sync_fetch_and_add(&blocked_regs_unread, 1);
		return KHBPF_BLOCK_OTHER;
	}
	if (r.orig_ax < 0)
		return KHBPF_BLOCK_FAULT;
	/*
	 * io_schedule(): a disk wait, whatever the call. A plain load, p being
	 * trusted (the macro has a local named p: hence tsk).
	 */
	if (BPF_CORE_READ_BITFIELD(tsk, in_iowait))
		return KHBPF_BLOCK_IO;
	nr = (__u32)r.orig_ax;
	if (nr >= KHBPF_SYSCALL_NR_MAX)
		return KHBPF_BLOCK_OTHER;
	c = bpf_map_lookup_elem(&syscall_cause, &nr);
	if (!c)
		return KHBPF_BLOCK_OTHER;
	v = *c;
	if ((v & KHBPF_SYSCALL_SLEEP_IF_ARG0_ZERO) && !r.di)
		return KHBPF_BLOCK_SLEEP;
	if ((v & KHBPF_SYSCALL_SLEEP_IF_ARG1_ZERO) && !r.si)
		return KHBPF_BLOCK_SLEEP;
	v &= KHBPF_SYSCALL_CAUSE_MASK;
	return v < KHBPF_BLOCK_CAUSES ? v : KHBPF_BLOCK_OTHER;
}

/*
 * The cause a --span-cause declares for a blocked stretch begun with the
 * span clock ck (the thread's, which on_switch() has looked up already;
 * NULL: no span open): that of the innermost open span whose metric
 * (*metric) has one, + 1; 0 when none does.
 */
static __always_inline __u32 declared_cause(struct khbpf_span_clock *ck, __u32 *metric)
{
	/* The clock is the first member of the thread's span state. */
	struct khbpf_span_state *ss = (struct khbpf_span_state *)ck;
	__u32 i, depth, m, c;

	if (!span_causes_enabled || !ss)
		return 0;
	depth = ss->depth;
	for (i = 0; i < KHBPF_SPAN_DEPTH; i++) {
		if (i >= depth)
			break;
		m = ss->frames[(depth - 1 - i) & (KHBPF_SPAN_DEPTH - 1)].metric;
		if (m >= KHBPF_MAX_METRICS)
			continue;
		c = span_metric_cause[m];
		if (c) {
			*metric = m;
			return c;
		}
	}
	return 0;
}

/*
 * The blocked time so far of an open blocked stretch, for a look from
 * outside it (the task iterator): up to its enqueue when it has been
 * woken (sched_info.last_queued, runqueue clock), else up to now.
 */
static __always_inline __u64 open_blocked_ns(struct task_struct *p,
					     const struct khbpf_task_state *st)
{
	__u64 rd, queued, end, start;

	if ((st->ep_flags & (KHBPF_EP_OPEN | KHBPF_EP_BLOCKED)) !=
	    (KHBPF_EP_OPEN | KHBPF_EP_BLOCKED))
		return 0;
	rd = p->sched_info.run_delay - st->ep_out_run_delay;
	queued = p->sched_info.last_queued;
	if (queued && !(st->ep_flags & KHBPF_EP_KTIME)) {
		end = queued;
		start = st->ep_out_clock;
	} else {
		/* (Found at the baseline and queued now: its wait so far counts as blocked.) */
		end = bpf_ktime_get_ns();
		start = st->ep_out_ktime;
	}
	return end > start + rd ? end - start - rd : 0;
}

/* prev leaves the CPU: its off-CPU stretch starts, blocked or preempted. */
/* grp: prev's group (serve), as group_switch_out() found it; ck: its span clock, or NULL. */
static __always_inline void stretch_out(struct task_struct *prev, struct khbpf_task_state *st,
					__u64 now, struct khbpf_group_acc *grp,
					struct khbpf_span_clock *ck)
{
	unsigned int state = task_state_now(prev);
	__u32 cause, metric = 0;

	if (st->ep_flags & KHBPF_EP_OPEN)
		st->b.offcpu_unseen++; /* out twice: the switch-in between was missed */
	st->ep_out_clock = state == TASK_RUNNING ? rq_clock_of(prev) : dequeue_clock_of(prev);
	st->ep_out_ktime = now ?: bpf_ktime_get_ns();
	st->ep_out_run_delay = prev->sched_info.run_delay;
	st->ep_pre_ns = 0;
	if (state == TASK_RUNNING) {
		st->ep_flags = KHBPF_EP_OPEN;
		st->ep_cause = 0;
		return;
	}
	cause = declared_cause(ck, &metric);
	if (cause) {
		/* The bound where the index uses it: clang would test a copy. */
		cause = cause_idx(cause - 1);
		barrier_var(cause);
		__sync_fetch_and_add(&span_cause_stretches[metric & (KHBPF_MAX_METRICS - 1)], 1);
	} else {
		cause = block_cause(prev, state);
	}
	st->ep_flags = KHBPF_EP_OPEN | KHBPF_EP_BLOCKED;
	st->ep_cause = cause;
	st->b.blocked.count[cause_idx(cause)]++;
	if (grp)
		__sync_fetch_and_add(&grp->b.blocked.count[cause_idx(cause)], 1);
}

/* The stretch's blocked time to the thread's waker (run and attach). */
static __always_inline void waker_add(struct task_struct *next, struct khbpf_task_state *st,
				      __u64 ns)
{
	struct khbpf_waker_key key = {
		.tid = next->pid,
		.start_time = next->start_time,
		.kind = st->waker_kind,
	};
	struct khbpf_waker_val *v, zero = {};

	if (key.kind == KHBPF_WAKER_TASK)
		key.waker_tid = st->waker_tid;
	v = bpf_map_lookup_elem(&wakers, &key);
	if (!v) {
		bpf_map_update_elem(&wakers, &key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&wakers, &key);
		if (!v) {
			__sync_fetch_and_add(&wakers_overflow, 1);
			return;
		}
	}
	/* One writer per key: the woken thread's own switch-in. */
	v->ns += ns;
	v->count++;
	v->waker_tgid = st->waker_tgid;
	__builtin_memcpy(v->comm, st->waker_comm, sizeof(v->comm));
}

/* ... and to the thread's open spans: the span clock's ring of wakeups (KHBPF_WAKE_LOG). */
static __always_inline void wake_log_add(struct khbpf_span_clock *ck, struct khbpf_task_state *st,
					 __u64 ns)
{
	struct khbpf_span_wake *w = &ck->wake_log[ck->wake_seq & (KHBPF_WAKE_LOG - 1)];

	w->ns = ns;
	w->wake_ns = st->waker_ns;
	w->waker = KHBPF_WAKE_WAKER(st->waker_kind,
				    st->waker_kind == KHBPF_WAKER_TASK ? st->waker_tid : 0);
	w->tgid = st->waker_kind == KHBPF_WAKER_TASK ? st->waker_tgid : 0;
	ck->wake_seq++;
}

/*
 * next comes back: its stretch's time less the kernel's run_delay over it
 * (including the wait sched_info_arrive() is about to add) is blocked time,
 * or, for a preempted stretch, unattributed (zero on one runqueue clock).
 */
static __always_inline void stretch_in(struct task_struct *next, struct khbpf_task_state *st,
				       struct khbpf_span_clock *ck, __u64 now)
{
	__u64 clock = rq_clock_of(next), queued, rd, off;
	__s64 gap;
	__u32 cause;

	if (!(st->ep_flags & KHBPF_EP_OPEN)) {
		/* A thread's first run has no stretch before it; anything else was missed. */
		if (next->se.sum_exec_runtime)
			st->b.offcpu_unseen++;
		if (ck) {
			ck->clock_gaps++;
			__sync_fetch_and_add(&span_clock_gaps, 1);
		}
		goto out;
	}
	queued = next->sched_info.last_queued;
	rd = next->sched_info.run_delay - st->ep_out_run_delay + (queued ? clock - queued : 0);
	if (st->ep_flags & KHBPF_EP_KTIME) {
		/* Found off-CPU at the baseline: its start is known on the other clock. */
		now = now ?: bpf_ktime_get_ns();
		off = now - st->ep_out_ktime;
		if (!(st->ep_flags & KHBPF_EP_BLOCKED))
			goto out; /* queued at the baseline: its wait began before */
	} else {
		off = clock - st->ep_out_clock;
	}
	gap = (__s64)(off - rd);
	if (ck)
		ck->offcpu_ns += off;
	if (!(st->ep_flags & KHBPF_EP_BLOCKED) || gap < 0) {
		st->b.offcpu_unattributed_ns += gap;
		if (ck && (st->ep_flags & KHBPF_EP_BLOCKED))
			ck->blocked.count[cause_idx(st->ep_cause)]++;
		goto out;
	}
	cause = cause_idx(st->ep_cause);
	st->b.blocked.ns[cause] += gap;
	if (ck) {
		ck->blocked.ns[cause] += gap;
		ck->blocked.count[cause]++;
	}
	if (group_by) {
		struct khbpf_group_acc *a = group_of(next);

		if (a)
			__sync_fetch_and_add(&a->b.blocked.ns[cause], gap);
	} else if (!wakers_enabled) {
	} else if (!st->waker_kind) {
		__sync_fetch_and_add(&wakeups_unseen, 1);
	} else if ((__u64)gap > st->ep_pre_ns) {
		waker_add(next, st, gap - st->ep_pre_ns);
		if (ck)
			wake_log_add(ck, st, gap - st->ep_pre_ns);
	}
out:
	st->ep_flags = 0;
	st->waker_kind = 0;
	st->ep_pre_ns = 0;
}

/*
 * Is p on a CPU now? task_struct.on_cpu, where there is one (7.x has none):
 * else whether it is its runqueue's current task.
 */
static __always_inline bool task_running_now(struct task_struct *p)
{
	if (bpf_core_field_exists(p->on_cpu))
		return BPF_CORE_READ(p, on_cpu);
	return (void *)p->se.cfs_rq->rq->curr == (void *)p;
}

/*
 * At the baseline, a thread off-CPU since before the programs attached gets
 * its stretch from now (bpf_ktime_get_ns(): the runqueue clock of its
 * switch-out is gone), counted in the baseline so the window does not
 * count it; one already open keeps what it had before as ep_pre_ns.
 */
static __always_inline void baseline_stretch(struct task_struct *task, struct khbpf_task_state *st)
{
	unsigned int state;
	__u32 cause;

	if (st->ep_flags & KHBPF_EP_OPEN) {
		st->ep_pre_ns = open_blocked_ns(task, st);
		return;
	}
	if (task_running_now(task))
		return;
	state = task_state_now(task);
	st->ep_out_ktime = bpf_ktime_get_ns();
	st->ep_out_clock = 0;
	st->ep_out_run_delay = task->sched_info.run_delay;
	st->ep_pre_ns = 0;
	st->ep_flags = KHBPF_EP_OPEN | KHBPF_EP_KTIME;
	st->ep_cause = 0;
	if (state == TASK_RUNNING)
		return;
	cause = block_cause(task, state);
	st->ep_flags |= KHBPF_EP_BLOCKED;
	st->ep_cause = cause;
	st->b.blocked.count[cause_idx(cause)]++;
}

#endif /* KHBPF_BLOCKED_BPF_H */

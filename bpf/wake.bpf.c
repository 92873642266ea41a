// SPDX-License-Identifier: GPL-2.0
/*
 * Who woke a target thread: sched_waking keeps the waker in the thread's
 * state until its switch-in, where sched.bpf.c (blocked.bpf.h) adds the
 * blocked stretch it ended to that waker; the timer, device interrupt and
 * softirq tracepoints keep each CPU's interrupt context for it. Linked into
 * the scheduler collector's object (khbpf.bpf.h).
 */
#include "khbpf.bpf.h"

/*
 * try_to_wake_up() of a target thread, on the waker's CPU before the wakee
 * is queued. In task context the waker is the current thread; inside an
 * expiring timer (hrtimer, timer_list) it is a timer's wakeup, inside a
 * device interrupt's handler or a softirq an interrupt's (irq_ctx, kept by
 * the tracepoints below). Interrupts taken in the kernel run on the CPU's
 * interrupt stack on x86-64, so the tracepoint's argument array
 * (bpf_trace_run*()'s) lying outside the current task's stack says
 * interrupt too: that covers IPIs and irq_work, which have no tracepoint
 * here, except when they interrupt user space (then on the task's stack,
 * call_on_irqstack_cond()): those are taken for the interrupted thread's.
 * The preempt count would say it directly, but it is a per-CPU variable,
 * a ksym only with CONFIG_KALLSYMS_ALL. Softirqs run by ksoftirqd and
 * PREEMPT_RT's threaded interrupts are threads: their wakeups are theirs.
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(khbpf_sched_waking, struct task_struct *p)
{
	struct khbpf_task_state *st;
	struct khbpf_irq_ctx *ic;
	struct task_struct *cur;
	__u32 zero = 0;
	__u64 lo, at = (__u64)ctx;

	if (!is_target(p))
		return 0;
	st = task_state_get(p, false);
	if (!st)
		return 0;
	ic = bpf_map_lookup_elem(&irq_ctx, &zero);
	if (have_task_btf) {
		/* A BTF pointer: plain loads. */
		cur = bpf_get_current_task_btf();
		lo = (__u64)cur->stack;
	} else {
		cur = (struct task_struct *)bpf_get_current_task();
		lo = (__u64)BPF_CORE_READ(cur, stack);
	}
	st->waker_ns = bpf_ktime_get_ns();
	st->waker_tid = 0;
	st->waker_tgid = 0;
	__builtin_memset(st->waker_comm, 0, sizeof(st->waker_comm));
	if (ic && ic->hardirq) {
		st->waker_kind = KHBPF_WAKER_INTERRUPT;
	} else if (ic && ic->timer) {
		st->waker_kind = KHBPF_WAKER_TIMER;
	} else if ((ic && ic->softirq) || at < lo || at >= lo + KHBPF_THREAD_SIZE) {
		st->waker_kind = KHBPF_WAKER_INTERRUPT;
	} else {
		st->waker_kind = KHBPF_WAKER_TASK;
		if (have_task_btf) {
			st->waker_tid = cur->pid;
			st->waker_tgid = cur->tgid;
		} else {
			st->waker_tid = BPF_CORE_READ(cur, pid);
			st->waker_tgid = BPF_CORE_READ(cur, tgid);
		}
		bpf_get_current_comm(st->waker_comm, sizeof(st->waker_comm));
	}
	return 0;
}

#define IRQ_CTX_TIMER 0
#define IRQ_CTX_HARDIRQ 1
#define IRQ_CTX_SOFTIRQ 2

/* This CPU is inside one more (in) or one fewer (!in) of kind. */
static __always_inline void irq_ctx_mark(__u32 kind, bool in)
{
	__u32 zero = 0, *d;
	struct khbpf_irq_ctx *ic = bpf_map_lookup_elem(&irq_ctx, &zero);

	if (!ic)
		return;
	d = kind == IRQ_CTX_TIMER   ? &ic->timer :
	    kind == IRQ_CTX_HARDIRQ ? &ic->hardirq :
				      &ic->softirq;
	if (in)
		(*d)++;
	else if (*d)
		(*d)--;
}

/*
 * The exits are attached before the entries (a skeleton attaches in this
 * order), so that every entry seen has its exit seen: a depth left above
 * zero would misname later wakeups.
 */
SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(khbpf_hrtimer_expire_exit)
{
	irq_ctx_mark(IRQ_CTX_TIMER, false);
	return 0;
}

SEC("tp_btf/timer_expire_exit")
int BPF_PROG(khbpf_timer_expire_exit)
{
	irq_ctx_mark(IRQ_CTX_TIMER, false);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(khbpf_irq_handler_exit)
{
	irq_ctx_mark(IRQ_CTX_HARDIRQ, false);
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(khbpf_softirq_exit)
{
	irq_ctx_mark(IRQ_CTX_SOFTIRQ, false);
	return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(khbpf_hrtimer_expire_entry)
{
	irq_ctx_mark(IRQ_CTX_TIMER, true);
	return 0;
}

SEC("tp_btf/timer_expire_entry")
int BPF_PROG(khbpf_timer_expire_entry)
{
	irq_ctx_mark(IRQ_CTX_TIMER, true);
	return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(khbpf_irq_handler_entry)
{
	irq_ctx_mark(IRQ_CTX_HARDIRQ, true);
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(khbpf_softirq_entry)
{
	irq_ctx_mark(IRQ_CTX_SOFTIRQ, true);
	return 0;
}

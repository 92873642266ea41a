// SPDX-License-Identifier: GPL-2.0
/*
 * `khbpf probe`: prove on this host that every attach point khbpf relies on
 * loads, attaches and fires, counting only events of the probing process
 * and the child it forks.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "khbpf/probe.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before attach. */
__u32 probe_tgid = 0;
__u64 hits[PROBE_HIT__COUNT] = {};

static __always_inline bool ours(struct task_struct *p)
{
	return BPF_CORE_READ(p, tgid) == probe_tgid ||
	       BPF_CORE_READ(p, real_parent, tgid) == probe_tgid;
}

/* Before thread_info.cpu (x86-64 until 5.15), the CPU is task_struct.cpu. */
struct task_struct___pre516 {
	unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline unsigned int task_cpu_of(struct task_struct *p)
{
	if (bpf_core_field_exists(p->thread_info.cpu))
		return BPF_CORE_READ(p, thread_info.cpu);
	return BPF_CORE_READ((struct task_struct___pre516 *)p, cpu);
}

static __always_inline void hit(int idx)
{
	__sync_fetch_and_add(&hits[idx], 1);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(probe_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (ours(prev))
		hit(PROBE_HIT_SCHED_SWITCH);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(probe_sched_wakeup, struct task_struct *p)
{
	if (ours(p))
		hit(PROBE_HIT_SCHED_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(probe_sched_wakeup_new, struct task_struct *p)
{
	if (ours(p))
		hit(PROBE_HIT_SCHED_WAKEUP_NEW);
	return 0;
}

/* Fires from set_task_cpu() even when dest_cpu is the current CPU. */
SEC("tp_btf/sched_migrate_task")
int BPF_PROG(probe_sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	if (ours(p) && task_cpu_of(p) != (unsigned int)dest_cpu)
		hit(PROBE_HIT_SCHED_MIGRATE_TASK);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(probe_sched_process_exit, struct task_struct *p)
{
	if (ours(p))
		hit(PROBE_HIT_SCHED_PROCESS_EXIT);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(probe_uprobe)
{
	if ((__u32)(bpf_get_current_pid_tgid() >> 32) == probe_tgid)
		hit(PROBE_HIT_UPROBE);
	return 0;
}

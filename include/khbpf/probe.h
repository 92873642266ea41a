/* SPDX-License-Identifier: MIT */
/* BPF ↔ user boundary of `khbpf probe` (bpf/probe.bpf.c). */
#ifndef KHBPF_PROBE_H
#define KHBPF_PROBE_H

/* Index of each probe program's hit counter in probe_bss.hits[]. */
#define PROBE_HIT_SCHED_SWITCH 0
#define PROBE_HIT_SCHED_WAKEUP 1
#define PROBE_HIT_SCHED_WAKEUP_NEW 2
#define PROBE_HIT_SCHED_MIGRATE_TASK 3
#define PROBE_HIT_SCHED_PROCESS_EXIT 4
#define PROBE_HIT_UPROBE 5
#define PROBE_HIT__COUNT 6

#endif /* KHBPF_PROBE_H */

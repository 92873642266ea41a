/* SPDX-License-Identifier: MIT */
/* Which program variant and fallbacks the collector loads, from what the kernel has. */
#ifndef KHBPF_SCHED_VARIANT_H
#define KHBPF_SCHED_VARIANT_H

#include <stdbool.h>

/* Which program variant and fallbacks the collector loaded (from struct kfeatures). */
struct sched_variant {
	bool task_storage; /* else the hash fallback (task_state_h, span_state_h) */
	bool switch_prev_state; /* khbpf_sched_switch; else khbpf_sched_switch_nostate */
	bool task_btf; /* bpf_get_current_task_btf(); else probe reads */
	bool attach_cookie; /* metric in the uprobe cookie; else span_site_metric */
	bool atomic_fetch; /* BPF_FETCH atomics; else per-CPU span-slot tickets */
	bool uprobe_multi; /* span sites in uprobe_multi links; else a link pair per site */
	bool mem_alloc; /* hashes allocated on use (bpf_mem_alloc); else preallocated whole */
};

struct kfeatures;
/* The variant for a kernel with these features (pure: unit-tested). */
void sched_variant__select(const struct kfeatures *k, struct sched_variant *v);

#endif /* KHBPF_SCHED_VARIANT_H */

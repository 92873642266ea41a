// SPDX-License-Identifier: MIT
/* The collector's program variant for a kernel, from its features (host/kfeatures.h). */
#include "host/kfeatures.h"
#include "collect/sched_variant.h"

void sched_variant__select(const struct kfeatures *k, struct sched_variant *v)
{
	/* On PREEMPT_RT task storage lookups fail under a preempted holder: the hashes. */
	v->task_storage = k->have[KFEAT_TASK_STORAGE] && !k->task_storage_preemptible;
	v->switch_prev_state = k->have[KFEAT_SWITCH_PREV_STATE];
	v->task_btf = k->have[KFEAT_CURRENT_TASK_BTF];
	v->attach_cookie = k->have[KFEAT_ATTACH_COOKIE];
	v->atomic_fetch = k->have[KFEAT_ATOMIC_FETCH];
	/* The cookie is the site's metric: without cookies, per-site links and the site map. */
	v->uprobe_multi = k->have[KFEAT_UPROBE_MULTI] && k->have[KFEAT_ATTACH_COOKIE];
	/*
	 * May a tracing program use a hash allocated on use? Before
	 * bpf_mem_alloc such maps are refused on PREEMPT_RT, and elsewhere
	 * allocate with the scheduler's locks held: preallocated then.
	 */
	v->mem_alloc = k->have[KFEAT_MEM_ALLOC];
}

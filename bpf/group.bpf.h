/* SPDX-License-Identifier: GPL-2.0 */
/*
 * serve's per-group accounting (--group-by process or cgroup): what the
 * scheduler programs of sched.bpf.c add into `groups` at each switch-out,
 * wakeup and migration of a target thread. No program of its own: it runs
 * inside theirs, inlined, as it did when it was one file. The --cgroup
 * filters that pick the targets are is_target()'s, in khbpf.bpf.h.
 */
#ifndef KHBPF_GROUP_BPF_H
#define KHBPF_GROUP_BPF_H

#include "khbpf.bpf.h"

/*
 * The key of p's group: its cgroup, or its process as it is named now.
 * Where p is a BTF pointer (have_task_btf: every caller's task then is),
 * by plain loads: a bpf_probe_read_kernel() per hop of the cgroup id's four
 * cost about 130 ns of serve's 283 ns switch program on this project's VM
 * (interleaved, 5 rounds), more than the group's hash lookup and its 11
 * atomic adds together.
 */
static __always_inline void group_key_of(struct task_struct *p, struct khbpf_group_key *key)
{
	if (group_by == KHBPF_GROUP_CGROUP) {
		if (have_task_btf)
			key->id = p->cgroups->dfl_cgrp->kn->id;
		else
			key->id = BPF_CORE_READ(p, cgroups, dfl_cgrp, kn, id);
	} else if (have_task_btf) {
		key->id = p->tgid;
		key->start_time = p->group_leader->start_time;
		/* The leader's name now, exec's renaming included (see below). */
		__builtin_memcpy(key->comm, p->group_leader->comm, sizeof(key->comm));
	} else {
		key->id = BPF_CORE_READ(p, tgid);
		key->start_time = BPF_CORE_READ(p, group_leader, start_time);
		/*
		 * Read at every switch-out, not once: exec renames the process
		 * (begin_new_exec() -> __set_task_comm(), which pads the rest
		 * of the 16 bytes with NULs), usually after its first switches
		 * under the forking parent's name.
		 */
		BPF_CORE_READ_INTO(&key->comm, p, group_leader, comm);
	}
}

/* The group of p in `groups`, made on first use; group_spill[0] when full. */
static __always_inline struct khbpf_group_acc *group_of(struct task_struct *p)
{
	struct khbpf_group_key key = {};
	struct khbpf_group_acc *a, *zero;
	__u32 spill = 0, z = 1;

	group_key_of(p, &key);
	a = bpf_map_lookup_elem(&groups, &key);
	if (a)
		return a;
	zero = bpf_map_lookup_elem(&group_spill, &z);
	if (zero && !bpf_map_update_elem(&groups, &key, zero, BPF_NOEXIST)) {
		__sync_fetch_and_add(&groups_made, 1);
		a = bpf_map_lookup_elem(&groups, &key);
		if (a && group_by == KHBPF_GROUP_PROCESS)
			__builtin_memcpy(a->comm, key.comm, sizeof(a->comm));
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
/* Returns prev's state and (*ap) its group, for the rest of the switch-out to reuse. */
static __always_inline struct khbpf_task_state *
group_switch_out(struct task_struct *prev, bool dead, struct khbpf_group_acc **ap)
{
	struct khbpf_task_counters k;
	struct khbpf_task_state *st;
	struct khbpf_group_acc *a;

	*ap = NULL;
	st = dead ? task_state_get(prev, false) : state_of(prev);
	if (!st)
		return NULL;
	read_counters(prev, &k);
	a = group_of(prev);
	*ap = a;
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
		return st;
	/* A dead thread's waits went into its exit record (final_switch). */
	if (!dead)
		fold_waits(st, &st->b, k.run_delay, k.pcount);
	st->last_run_delay = k.run_delay;
	st->last_pcount = k.pcount;
	return st;
}

#endif /* KHBPF_GROUP_BPF_H */

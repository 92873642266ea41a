// SPDX-License-Identifier: GPL-2.0
/*
 * Keeping the target set (include/khbpf/targets.h) in the kernel as it
 * changes: a task forked from a member (or into the cgroups) joins at
 * sched_process_fork, before it first runs, so no short-lived process is
 * missed; a task moved into the cgroups joins at cgroup_attach_task; the
 * loader's walk (khbpf_iter_join) finds what was there before. Linked into
 * the sched_bpf object with sched.bpf.c, which defines the maps.
 *
 * The loader attaches the fork, cgroup and exit programs before its first
 * walk and walks until a walk finds no one new: a child forked while a
 * walk runs is either forked from a member already (the fork program takes
 * it) or its parent joins in that walk, and the next walk finds it.
 */
#include "khbpf.bpf.h"
#include "group.bpf.h"
#include "blocked.bpf.h"
#include "threadrec.bpf.h"
#include "targets.bpf.h"

/*
 * child joins when parent is a member (or it is in the cgroups), before it
 * first runs. second: at wake_up_new_task(), for a fork the fork program
 * did not see; its failures were counted there when it did run.
 */
static __always_inline void join_forked(struct task_struct *parent, struct task_struct *child,
					bool second)
{
	bool process = child->tgid != parent->tgid;
	struct khbpf_task_state *st;

	if (set_mode == KHBPF_SET_CGROUP) {
		/* Its own cgroup: clone3(CLONE_INTO_CGROUP) can place it elsewhere. */
		if (!in_cgroup_filter(child))
			return;
	} else {
		if (!member_state(parent))
			return;
		/* Only the given processes: a new thread of one joins, a child does not. */
		if (process && set_mode != KHBPF_SET_TREE)
			return;
	}
	/* A second chance for a child the fork program took ends here. */
	if (second && member_state(child))
		return;
	if (!proc_join(child, process ? KHBPF_PROC_FORKED : 0, second))
		return;
	st = join_thread(child, second);
	if (!st)
		return;
	join_done(st);
	if (second)
		__sync_fetch_and_add(&forks_joined_at_wakeup, 1);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(khbpf_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	join_forked(parent, child, false);
	return 0;
}

/*
 * A second chance before the child first runs. The fork program's run is
 * skipped when that program is already running on this CPU (the
 * trampoline's recursion guard, __bpf_prog_enter_recur()): on a
 * preemptible kernel, when it was preempted there by a task that forks.
 * wake_up_new_task() follows in the forking task, with the child not yet
 * runnable. Its parent is the forking thread's process (real_parent) or,
 * for a thread, its own process's leader. A fork outside the set (most of
 * a host's) ends after the parent's one lookup, as at sched_process_fork.
 */
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(khbpf_sched_wakeup_new_join, struct task_struct *p)
{
	join_forked(p->pid == p->tgid ? p->real_parent : p->group_leader, p, true);
	return 0;
}

/*
 * After a migration (cgroup_attach_task(), for one thread or, with
 * threadgroup, its whole process). The thread named joins here with its
 * counters as they were at the move, kept in moved_base; the rest of a
 * moved process's threads join at the loader's next walk, which the count
 * below asks for (loss.threads_joined_late).
 */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(khbpf_cgroup_attach_task, struct cgroup *dst, const char *path,
	     struct task_struct *task, bool threadgroup)
{
	struct khbpf_thread_key key = {};
	struct khbpf_thread_rec *r, *z;
	struct khbpf_task_state *st;
	__u32 zero = 0;

	if (set_mode != KHBPF_SET_CGROUP || !in_cgroup_filter(task))
		return 0;
	if (threadgroup)
		__sync_fetch_and_add(&cgroup_moves_in, 1);
	if (member_state(task) || !proc_join(task, KHBPF_PROC_MOVED, false))
		return 0;
	st = join_thread(task, false);
	if (!st)
		return 0;
	stamp_baseline(task, st, 1);
	join_done(st);
	key.tid = task->pid;
	key.start_time = task->start_time;
	z = bpf_map_lookup_elem(&rec_zero, &zero);
	if (!z)
		return 0;
	bpf_map_update_elem(&moved_base, &key, z, BPF_NOEXIST);
	r = bpf_map_lookup_elem(&moved_base, &key);
	if (!r) {
		__sync_fetch_and_add(&moved_base_overflow, 1);
		return 0;
	}
	fill_rec_folds(r, task, KHBPF_REC_JOINED, false);
	return 0;
}

/*
 * A process the walk passes over, as a kernel that hides a task from BPF
 * does (tests only: KHBPF_TEST_HIDE_TGID, sched_collector.c), so that the
 * loader's guard against a set that joined no one can be shown to work on
 * any kernel.
 */
const volatile __u32 walk_hidden_tgid = 0;

/* The process p was forked from (its parent now) is in the set. */
static __always_inline bool parent_in_set(struct task_struct *p)
{
	struct task_struct *parent = p->real_parent;
	struct khbpf_proc_key k = {
		.pid = parent->tgid,
		.start_time = parent->group_leader->start_time,
	};

	return bpf_map_lookup_elem(&procs, &k) != NULL;
}

/*
 * The loader's walk: every task not yet in the set that belongs there (a
 * thread of a member process, a root, a child of a member with
 * KHBPF_SET_TREE, a task in the cgroups) joins, stamped as join_how says
 * (stamp_baseline()), and its record is written out: its baseline.
 */
SEC("iter/task")
int khbpf_iter_join(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct khbpf_task_state *st;
	__u32 how = KHBPF_PROC_WALKED;

	if (!task || !task->pid || !set_mode || member_state(task))
		return 0;
	if (walk_hidden_tgid && task->tgid == walk_hidden_tgid)
		return 0;
	if (set_mode == KHBPF_SET_CGROUP) {
		if (!in_cgroup_filter(task))
			return 0;
	} else if (!proc_of(task)) {
		if (is_root(task->tgid))
			how |= KHBPF_PROC_ROOT;
		else if (set_mode != KHBPF_SET_TREE || !parent_in_set(task))
			return 0;
	}
	if (!proc_join(task, how, false))
		return 0;
	st = join_thread(task, false);
	if (!st)
		return 0;
	stamp_baseline(task, st, join_how);
	join_done(st);
	return iter_write_rec(seq, task, KHBPF_REC_JOINED);
}

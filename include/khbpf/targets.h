/* SPDX-License-Identifier: MIT */
/*
 * BPF ↔ user boundary of the target set (bpf/targets.bpf.c): which tasks
 * khbpf accounts, kept in the kernel as the set changes, and one record per
 * process that joined it. Fixed-width fields only (clang for BPF, gcc for
 * the loader).
 *
 * A thread is in the set when its per-thread state (task storage, or the
 * hash fallback) carries KHBPF_MEMBER: a thread joins when the loader's
 * walk finds it (a root, a descendant of the set, a task in the cgroups),
 * when it is forked from a member or into the cgroups (sched_process_fork,
 * before it first runs), or when it is moved into the cgroups
 * (cgroup_attach_task). A task outside the set has no khbpf state at all,
 * so on kernels with task storage the scheduler programs tell it apart by
 * one load from its task_struct (task->bpf_storage == NULL).
 */
#ifndef KHBPF_TARGETS_H
#define KHBPF_TARGETS_H

#ifdef __BPF__
/* vmlinux.h provides the __u* types. */
#else
#include <linux/types.h>
#endif

/* What the set is (rodata set_mode). */
#define KHBPF_SET_NONE 0 /* no set: every task (serve), or serve's cgroup filters */
#define KHBPF_SET_PIDS 1 /* the root processes (target_slots) */
#define KHBPF_SET_TREE 2 /* the roots and every process forked from the set */
#define KHBPF_SET_CGROUP 3 /* the tasks in the cgroup v2 subtrees (cgroup_filter_*) */

/* khbpf_task_state.member */
#define KHBPF_MEMBER 0x1
/* A thread that left the cgroups: its record is in `exited` (KHBPF_REC_LEFT); never rejoins. */
#define KHBPF_MEMBER_LEFT 0x2
#define KHBPF_MEMBER_REJOIN 0x4 /* ... and was found in them again (counted once) */
#define KHBPF_MEMBER_SPANS 0x8 /* has span state: its switches keep its span clock */
#define KHBPF_MEMBER_NOFOLD 0x10 /* its wait fold entry was another's: its waits fold here */
#define KHBPF_MEMBER_FOLD 0x20 /* its waits fold in its wait fold entry (khbpf_wait_fold) */

/* Default bound of processes in the set over a window (--max-processes). */
#define KHBPF_DEFAULT_MAX_PROCESSES 8192
/* Baselines kept of threads moved into a cgroup set's cgroups during a window. */
#define KHBPF_MAX_MOVED 4096
/* Bytes kept of the path a process exec'd (sched_process_exec's bprm->filename). */
#define KHBPF_EXEC_PATH_MAX 256

/* khbpf_proc_rec.flags */
#define KHBPF_PROC_ROOT 0x1 /* a root of the set (run's command, attach --pid) */
#define KHBPF_PROC_FORKED 0x2 /* joined at its fork (born in the window) */
#define KHBPF_PROC_WALKED 0x4 /* joined by the loader's walk (alive at the window's start) */
#define KHBPF_PROC_MOVED 0x8 /* joined when moved into the cgroups */
#define KHBPF_PROC_EXECED 0x10 /* exec'd in the window: exec_path is its last */
#define KHBPF_PROC_EXITED 0x20 /* its last thread exited in the window: exit_* are set */
#define KHBPF_PROC_LEFT 0x40 /* a thread of it left the cgroups */

/* Identity of a process across pid reuse: its leader's start time. */
struct khbpf_proc_key {
	__u32 pid; /* tgid */
	__u32 pad;
	__u64 start_time; /* group_leader->start_time */
};

struct khbpf_proc_rec {
	__u32 pid;
	__u32 ppid; /* real_parent's tgid when it joined */
	__u64 start_time; /* the leader's, monotonic ns (task->start_time) */
	__u64 parent_start_time; /* the parent's leader's, to tell a reused ppid */
	__u64 exit_ns; /* bpf_ktime_get_ns() when its last thread's final switch ran */
	__u32 flags; /* KHBPF_PROC_* */
	__u32 exit_status; /* wait(2) status: (code << 8) | signal, as wait_task_zombie() */
	__u64 join_ns; /* bpf_ktime_get_ns() when it joined */
	__u32 exe_tgid; /* exec_path empty: the process whose exe this one has (fork without exec) */
	__u32 pad;
	__u64 exe_start_time;
	char comm[16]; /* the leader's, at join and at each exec */
	char exec_path[KHBPF_EXEC_PATH_MAX]; /* the filename given to its last exec, or inherited */
};

/*
 * A member exec'd (set_events ring buffer, with spans in a set that grows):
 * the loader looks for span sites in what it runs now.
 */
struct khbpf_exec_event {
	__u32 pid;
	/*
	 * Its mount namespace's nsfs inode at the exec: whether it is a
	 * container's is known even when the process is gone before user space
	 * reads the event (its /proc/PID/ns/mnt is gone with it).
	 */
	__u32 mnt_ns;
	__u64 start_time; /* the process's (its leader's) */
	/*
	 * That namespace's id, never reused while the kernel runs (nsfs
	 * inodes are): ns_common.ns_id, or mnt_namespace.seq before it; 0 when
	 * neither is in the kernel's BTF.
	 */
	__u64 mnt_ns_id;
	__u64 ns; /* bpf_ktime_get_ns() at the exec */
	char path[KHBPF_EXEC_PATH_MAX]; /* the file name given to execve() */
};
#define KHBPF_SET_EVENTS_BYTES (64 * 1024)

#ifndef __BPF__
_Static_assert(sizeof(struct khbpf_exec_event) == 32 + KHBPF_EXEC_PATH_MAX,
	       "khbpf_exec_event layout");
_Static_assert(sizeof(struct khbpf_proc_key) == 16, "khbpf_proc_key layout");
_Static_assert(sizeof(struct khbpf_proc_rec) == 80 + KHBPF_EXEC_PATH_MAX, "khbpf_proc_rec layout");
#endif

#endif /* KHBPF_TARGETS_H */

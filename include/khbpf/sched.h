/* SPDX-License-Identifier: MIT */
/*
 * BPF ↔ user boundary of the scheduler collector (bpf/sched.bpf.c, bpf/span.bpf.c).
 * Fixed-width fields only: this header is compiled by clang for BPF and by
 * gcc for the loader, and both must agree on every offset.
 */
#ifndef KHBPF_SCHED_H
#define KHBPF_SCHED_H

#ifdef __BPF__
/* vmlinux.h provides the __u* types. */
#else
#include <linux/types.h>
#endif

/*
 * Targets are a table of tgids, open-addressed: a tgid sits within
 * KHBPF_TARGET_PROBES slots of its hash, and the table is at most 1/16
 * full, so the non-target check on every context switch is one bounded
 * array load (rarely a few), no helper call; 4 KiB of kernel memory where
 * a bitmap over every pid (PID_MAX_LIMIT, 4M) took 512 KiB. Slots are
 * only ever filled, never emptied: an empty slot ends a search.
 */
#define KHBPF_TARGET_SLOT_BITS 10
#define KHBPF_TARGET_SLOTS (1u << KHBPF_TARGET_SLOT_BITS)
#define KHBPF_TARGET_PROBES 8
#define KHBPF_MAX_TARGETS 64
_Static_assert(KHBPF_MAX_TARGETS * 16 <= KHBPF_TARGET_SLOTS, "target table over 1/16 full");

/* A tgid's first slot (Fibonacci hashing: the top bits of tgid * 2^32/phi). */
static inline __u32 khbpf_target_slot(__u32 tgid)
{
	return (tgid * 2654435769u) >> (32 - KHBPF_TARGET_SLOT_BITS);
}

/* Runqueue-wait histogram: slot k counts waits in [2^k, 2^(k+1)) ns; slot 0 is [0, 2). */
#define KHBPF_RQ_SLOTS 40

/* Migration distance classes (sched_migrate_task with a real CPU change). */
#define KHBPF_MIG_SMT 0 /* SMT sibling: same core */
#define KHBPF_MIG_LLC 1 /* another core sharing the last-level cache */
#define KHBPF_MIG_OTHER_LLC 2 /* another LLC on the same NUMA node */
#define KHBPF_MIG_OTHER_NODE 3 /* another NUMA node */
#define KHBPF_MIG_UNKNOWN 4 /* topology unknown for either CPU */
#define KHBPF_MIG_CLASSES 5

/* Default bound of exited-thread records kept per window (--max-exited). */
#define KHBPF_DEFAULT_MAX_EXITED 65536
/*
 * Kernels without BPF task storage keep per-thread state in a preallocated
 * hash of this many threads by default (the loader passes --max-threads);
 * threads beyond it are counted in storage_failures.
 */
#define KHBPF_DEFAULT_MAX_TASKS 65536

/* khbpf_thread_rec.flags */
#define KHBPF_REC_EXITED 0x1 /* from sched_process_exit / the final switch */
#define KHBPF_REC_FINAL 0x2 /* refreshed at the final switch-out (TASK_DEAD) */
#define KHBPF_REC_HAS_STATE 0x4 /* the thread had task storage: BPF-timed fields valid */
#define KHBPF_REC_EXITING 0x8 /* iterator saw PF_EXITING: an exit record will follow */
#define KHBPF_REC_ZOMBIE 0x10 /* iterator saw exit_state set: sched_process_exit already ran */
#define KHBPF_REC_LEFT 0x20 /* left the cgroups of the set: counters as it left (targets.h) */
#define KHBPF_REC_JOINED 0x40 /* a baseline: counters when the thread joined the set */

struct khbpf_cpu_topo {
	__s32 core; /* dense ids from the loader's sysfs topology; -1 unknown */
	__s32 llc;
	__s32 node;
	__s32 pad;
};

/*
 * Why a thread was off-CPU and not runnable (blocked): the cause, taken at
 * its switch-out from the task's state and the system call it is in.
 */
#define KHBPF_BLOCK_LOCK 0 /* futex waits: mutexes, condition variables, joins */
#define KHBPF_BLOCK_IO 1 /* file, pipe and socket I/O, poll/select/epoll, io_uring, iowait */
#define KHBPF_BLOCK_SLEEP 2 /* nanosleep, clock_nanosleep, timed waits on no fd */
#define KHBPF_BLOCK_FAULT 3 /* blocked inside a page fault (not in a system call) */
#define KHBPF_BLOCK_OTHER 4
#define KHBPF_BLOCK_CAUSES 5
/*
 * syscall_cause (a BPF array the loader fills from this host's system call
 * numbers): the cause of blocking in system call nr, optionally "sleep
 * when argument 0 (or 1) is zero": poll or select on no file descriptor.
 */
#define KHBPF_SYSCALL_NR_MAX 512
#define KHBPF_SYSCALL_CAUSE_MASK 0xf
#define KHBPF_SYSCALL_SLEEP_IF_ARG0_ZERO 0x10
#define KHBPF_SYSCALL_SLEEP_IF_ARG1_ZERO 0x20

/* Who ended a blocked stretch (khbpf_waker_key.kind). */
#define KHBPF_WAKER_TASK 1 /* a thread, in task context: waker_tid */
#define KHBPF_WAKER_INTERRUPT 2 /* interrupt context (hard or soft), not a timer */
#define KHBPF_WAKER_TIMER 3 /* an expiring hrtimer or timer_list */

/* Blocked time by cause: ns summed at wakeups, count at the switch-outs. */
struct khbpf_blocked {
	__u64 ns[KHBPF_BLOCK_CAUSES];
	__u64 count[KHBPF_BLOCK_CAUSES];
};

/* The kernel's own per-task counters, read with CO-RE. */
struct khbpf_task_counters {
	__u64 nvcsw;
	__u64 nivcsw;
	__u64 nr_migrations; /* se.nr_migrations */
	__u64 sum_exec_runtime; /* se.sum_exec_runtime, ns */
	__u64 run_delay; /* sched_info.run_delay, ns */
	__u64 pcount; /* sched_info.pcount: timeslices */
};

/* What khbpf's own programs measured for one task. */
struct khbpf_task_bpf {
	__u64 wait_ns; /* runqueue waits binned in wait_hist: their sum */
	__u64 waits; /* runqueue waits binned in wait_hist */
	__u64 unbinned_ns; /* waits seen only as a sum (several between two looks) */
	__u64 unbinned_waits; /* how many such waits */
	__u64 switch_ins; /* times switched onto a CPU */
	__u64 migrations; /* sched_migrate_task with a real CPU change */
	__u64 mig_class[KHBPF_MIG_CLASSES];
	__u64 wait_hist[KHBPF_RQ_SLOTS];
	/*
	 * Off-CPU stretches (switch-out to switch-in) on the runqueue clock
	 * that sched_info uses: each one's time less the kernel's run_delay
	 * over it is its blocked time when it began with the thread not
	 * runnable, by cause. Otherwise (preempted) that difference is zero
	 * but for a queued migration's clock skew: offcpu_unattributed_ns,
	 * signed.
	 */
	struct khbpf_blocked blocked;
	__s64 offcpu_unattributed_ns;
	__u64 offcpu_unseen; /* switch-ins without the switch-out seen: their blocked time unknown */
};

/* khbpf_task_state.ep_flags: the thread's current off-CPU stretch. */
#define KHBPF_EP_OPEN 0x1 /* switched out (or found off-CPU at the baseline) */
#define KHBPF_EP_BLOCKED 0x2 /* not runnable then: ep_cause is why */
#define KHBPF_EP_KTIME 0x4 /* found at the baseline: its start is ep_out_ktime only */

/* Task storage value: hot-path state of one target thread. */
struct khbpf_task_state {
	__u64 enqueue_ts; /* no sched_info: bpf_ktime_get_ns() at enqueue; 0 when not queued */
	__u64 last_run_delay; /* sched_info.run_delay when last looked at */
	__u64 last_pcount; /* sched_info.pcount when last looked at */
	/* Groups (serve): the kernel's counters at the last switch-out. */
	__u64 last_nvcsw;
	__u64 last_nivcsw;
	__u64 last_migrations;
	__u64 last_runtime;
	/* The open off-CPU stretch (KHBPF_EP_*), and who woke the thread last. */
	__u64 ep_out_clock; /* the runqueue clock at the switch-out */
	__u64 ep_out_ktime; /* bpf_ktime_get_ns() then */
	__u64 ep_out_run_delay; /* sched_info.run_delay then */
	__u64 ep_pre_ns; /* blocked before the window (baseline): not the waker's */
	__u32 ep_flags;
	__u32 ep_cause;
	__u32 waker_tid;
	__u32 waker_tgid;
	__u32 waker_kind; /* KHBPF_WAKER_*, 0: none since the last switch-in */
	__u32 member; /* KHBPF_MEMBER*: in the target set (include/khbpf/targets.h) */
	__u64 waker_ns; /* bpf_ktime_get_ns() at that wakeup (sched_waking) */
	char waker_comm[16];
	/*
	 * The thread this state was made for (the hash fallback is keyed by
	 * the task's address, which a later task can reuse), and its css_set
	 * when it joined (cgroup sets: a change means it may have moved).
	 */
	__u32 tid;
	__u32 id_pad;
	__u64 start_time;
	__u64 cset;
	struct khbpf_task_bpf b;
};

/*
 * The runqueue waits of a member of run's and attach's default switch
 * program (khbpf_sched_switch_plain), folded outside its task storage: in
 * an array entry the program reaches without a helper call (sched.bpf.c,
 * task_state_cached()). The entry holds what fold_waits() keeps in the
 * task's state and khbpf_task_bpf. A thread's entry is the one its key
 * hashes to (khbpf.bpf.h, wait_fold_at()): the key is its task storage's
 * address less the task_state map's, a scalar the verifier gives for the
 * difference of two pointers, unique while the storage lives. The thread
 * takes the entry at its first switch-out if it is free and gives it back
 * at its final one; a thread whose entry another holds folds in its task
 * storage (KHBPF_MEMBER_NOFOLD, loss.wait_folds_full). The switch also
 * checks the task and its start time: an entry a dead thread never gave
 * back (its final switch found no storage) is not a later thread's whose
 * storage took the same address; that thread takes it over.
 */
#define KHBPF_WAIT_FOLD_BITS 10
#define KHBPF_WAIT_FOLDS (1U << KHBPF_WAIT_FOLD_BITS)
#define KHBPF_FOLD_FREE 0
#define KHBPF_FOLD_TAKING 1 /* never a key: both addresses are 8-aligned */
struct khbpf_wait_fold {
	__u64 owner; /* the owner's key, or KHBPF_FOLD_* */
	__u64 task; /* the owner's task_struct address less task_state's */
	__u64 start_time; /* the owner's (updated at a non-leader's exec) */
	__u64 last_run_delay;
	__u64 last_pcount;
	__u64 wait_ns;
	__u64 waits;
	__u64 unbinned_ns;
	__u64 unbinned_waits;
	__u64 switch_ins;
	__u64 wait_hist[KHBPF_RQ_SLOTS];
};

/*
 * Who woke a target thread, and for how long it had been blocked: summed
 * per (woken thread, waker) over the stretches that ended in the window.
 */
struct khbpf_waker_key {
	__u32 tid; /* the woken thread */
	__u32 waker_tid; /* KHBPF_WAKER_TASK; 0 otherwise */
	__u64 start_time; /* the woken thread's */
	__u32 kind; /* KHBPF_WAKER_* */
	__u32 pad;
};

struct khbpf_waker_val {
	__u64 ns;
	__u64 count;
	__u32 waker_tgid;
	__u32 pad;
	char comm[16]; /* the waker's, at its last wakeup of this thread */
};
#define KHBPF_DEFAULT_MAX_WAKERS 16384

/*
 * serve: scheduler totals per group (a cgroup v2, or a process), summed in
 * the kernel at every switch-out of a member thread from the kernel's own
 * per-task counters, so they equal what /proc shows for the members.
 */
#define KHBPF_GROUP_NONE 0
#define KHBPF_GROUP_CGROUP 1
#define KHBPF_GROUP_PROCESS 2
#define KHBPF_DEFAULT_MAX_GROUPS 4096
/* --cgroup filters: the named cgroups and everything below them. */
#define KHBPF_MAX_CGROUP_FILTERS 16

struct khbpf_group_key {
	__u64 id; /* cgroup: kernfs id (the directory's inode); process: tgid */
	__u64 start_time; /* process: the leader's start_time (tgid reuse); cgroup: 0 */
	/*
	 * process: the leader's comm now, so an exec (or a renaming prctl)
	 * starts a new group under the new name; cgroup: zeros.
	 */
	char comm[16];
};

struct khbpf_group_acc {
	struct khbpf_task_counters k; /* summed per-switch deltas of the kernel's counters */
	struct khbpf_task_bpf b; /* waits binned one by one, migrations by distance */
	__u64 switch_outs; /* switch-outs seen: the timeslices that ended */
	char comm[16]; /* process: the leader's comm when the group was made */
};

/* Identity of a thread across tid reuse. */
struct khbpf_thread_key {
	__u32 tid;
	__u32 pad;
	__u64 start_time; /* task->start_time, boot-based ns */
};

/* One thread: iterator output record and exited-map value. */
struct khbpf_thread_rec {
	__u32 tid;
	__u32 tgid;
	__u64 start_time;
	char comm[16];
	__u32 flags;
	__u32 pad;
	__u64 proc_start_time; /* its process's: the leader's start_time */
	struct khbpf_task_counters k;
	struct khbpf_task_bpf b;
};

#ifndef __BPF__
_Static_assert(sizeof(struct khbpf_cpu_topo) == 16, "khbpf_cpu_topo layout");
_Static_assert(sizeof(struct khbpf_task_counters) == 48, "khbpf_task_counters layout");
_Static_assert(sizeof(struct khbpf_wait_fold) == 8 * (10 + KHBPF_RQ_SLOTS),
	       "khbpf_wait_fold layout");
_Static_assert(sizeof(struct khbpf_blocked) == 16 * KHBPF_BLOCK_CAUSES, "khbpf_blocked layout");
_Static_assert(sizeof(struct khbpf_task_bpf) == 8 * (6 + KHBPF_MIG_CLASSES + KHBPF_RQ_SLOTS + 2) +
							sizeof(struct khbpf_blocked),
	       "khbpf_task_bpf layout");
_Static_assert(sizeof(struct khbpf_waker_key) == 24, "khbpf_waker_key layout");
_Static_assert(sizeof(struct khbpf_waker_val) == 40, "khbpf_waker_val layout");
_Static_assert(sizeof(struct khbpf_thread_key) == 16, "khbpf_thread_key layout");
_Static_assert(sizeof(struct khbpf_group_key) == 32, "khbpf_group_key layout");
_Static_assert(sizeof(struct khbpf_group_acc) ==
		       sizeof(struct khbpf_task_counters) + sizeof(struct khbpf_task_bpf) + 24,
	       "khbpf_group_acc layout");
_Static_assert(sizeof(struct khbpf_thread_rec) ==
		       48 + sizeof(struct khbpf_task_counters) + sizeof(struct khbpf_task_bpf),
	       "khbpf_thread_rec layout");
#endif

/*
 * log2 slot of a wait; shared by BPF and the unit tests. Branch-free: each
 * step adds its width when the bits above it are not all zero, found by
 * carrying (x + 2^w - 1) >> w with x < 2^w, so no addition overflows. On
 * sched_switch the six branches of a binary search mispredicted for
 * varying waits (measured: 92.4 against 90.8 ns a run of the plain switch
 * program, 10 interleaved runs each, on this project's VM). Always inlined:
 * a BPF subprogram call costs a call and a return, which on that VM
 * (retpolines, the Safe RET return thunk) is what a run pays most for.
 */
static inline __attribute__((always_inline)) __u32 khbpf_rq_slot(__u64 ns)
{
	__u64 s, slot;

	s = (((ns >> 32) + 0xffffffffULL) >> 32) << 5;
	ns >>= s;
	slot = s;
	s = (((ns >> 16) + 0xffff) >> 16) << 4;
	ns >>= s;
	slot += s;
	s = (((ns >> 8) + 0xff) >> 8) << 3;
	ns >>= s;
	slot += s;
	s = (((ns >> 4) + 0xf) >> 4) << 2;
	ns >>= s;
	slot += s;
	s = (((ns >> 2) + 0x3) >> 2) << 1;
	ns >>= s;
	slot += s + (ns >> 1);
	return slot < KHBPF_RQ_SLOTS ? (__u32)slot : KHBPF_RQ_SLOTS - 1;
}

/* Distance class of a migration between two CPUs' topology entries. */
static inline __u32 khbpf_mig_class(const struct khbpf_cpu_topo *from,
				    const struct khbpf_cpu_topo *to)
{
	if (!from || !to || from->core < 0 || to->core < 0)
		return KHBPF_MIG_UNKNOWN;
	if (from->node >= 0 && to->node >= 0 && from->node != to->node)
		return KHBPF_MIG_OTHER_NODE;
	if (from->core == to->core)
		return KHBPF_MIG_SMT;
	if (from->llc >= 0 && from->llc == to->llc)
		return KHBPF_MIG_LLC;
	if (from->llc >= 0 && to->llc >= 0 && from->node >= 0 && from->node == to->node)
		return KHBPF_MIG_OTHER_LLC;
	return KHBPF_MIG_UNKNOWN;
}

#endif /* KHBPF_SCHED_H */

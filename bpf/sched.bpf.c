// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread scheduler accounting for the target processes.
 *
 * The kernel already counts switches, migrations, run time, runqueue delay
 * and timeslices per task; khbpf reads those counters (CO-RE) rather than
 * re-deriving them, so its numbers are the kernel's by construction:
 *  - at window edges, a task iterator snapshots every target thread;
 *  - at thread exit (sched_process_exit) a record is kept in `exited`, and
 *    refreshed at the thread's final switch-out (prev_state == TASK_DEAD),
 *    where __schedule() has already counted that last switch and run time.
 * What the kernel does not keep, khbpf measures: each runqueue wait on its
 * own (a log2 histogram) and each migration classified by topological
 * distance.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "khbpf/sched.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_RUNNING 0
#define TASK_DEAD 0x80
#define PF_EXITING 0x4

/* Set by the loader. */
const volatile bool trace_all = false;
/*
 * With CONFIG_SCHED_INFO the kernel adds each wait to sched_info.run_delay
 * and counts the arrival in sched_info.pcount when the task is switched in
 * (sched_info_arrive). Looking at both when the task is switched out again
 * yields that wait exactly: one switch-out, one arrival, one wait. So waits
 * are binned from the prev side alone, the switch-in side and the wakeup
 * programs need not run, and the histogram sums to run_delay. Without
 * sched_info, wakeups and preemptions are stamped with bpf_ktime_get_ns().
 */
const volatile bool kernel_queue_ts = false;

__u64 target_bits[KHBPF_TARGET_WORDS] = {};
/* Set while the loader's baseline iteration runs: record each thread's stamps. */
__u32 iter_init_state = 0;

/* Loss and health counters, read by the loader at the end of the window. */
__u64 storage_failures = 0; /* task storage could not be created */
__u64 exited_overflow = 0; /* exited map full: record lost */
__u64 final_unmatched = 0; /* final switch without an exit record */
__u64 iter_write_errors = 0; /* bpf_seq_write failed */

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct khbpf_task_state);
} task_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_MAX_EXITED);
	__type(key, struct khbpf_thread_key);
	__type(value, struct khbpf_thread_rec);
} exited SEC(".maps");

/* Sized by the loader to the host's CPU ids. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_cpu_topo);
} cpu_topo SEC(".maps");

/* A record is too large for the 512-byte BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_thread_rec);
} scratch SEC(".maps");

struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline bool is_target(struct task_struct *p)
{
	__u32 tgid = p->tgid;
	__u32 idx = tgid >> 6;

	if (trace_all)
		return p->pid != 0;
	if (idx >= KHBPF_TARGET_WORDS)
		return false;
	/* Bit 0 of word 0 (pid 0, the idle task) is never set by the loader. */
	return target_bits[idx] & (1ULL << (tgid & 63));
}

static __always_inline unsigned int task_state_now(struct task_struct *p)
{
	if (bpf_core_field_exists(p->__state))
		return BPF_CORE_READ(p, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)p, state);
}

static __always_inline void read_sched_info(struct task_struct *p, __u64 *run_delay, __u64 *pcount)
{
	if (bpf_core_field_exists(p->sched_info)) {
		*run_delay = BPF_CORE_READ(p, sched_info.run_delay);
		*pcount = BPF_CORE_READ(p, sched_info.pcount);
	} else {
		*run_delay = 0;
		*pcount = 0;
	}
}

static __always_inline void read_counters(struct task_struct *p, struct khbpf_task_counters *k)
{
	k->nvcsw = BPF_CORE_READ(p, nvcsw);
	k->nivcsw = BPF_CORE_READ(p, nivcsw);
	k->nr_migrations = BPF_CORE_READ(p, se.nr_migrations);
	k->sum_exec_runtime = BPF_CORE_READ(p, se.sum_exec_runtime);
	/* Without CONFIG_SCHED_INFO the loader falls back to the BPF-timed values. */
	read_sched_info(p, &k->run_delay, &k->pcount);
}

static __always_inline struct khbpf_task_state *state_of(struct task_struct *p)
{
	struct khbpf_task_state *st;

	st = bpf_task_storage_get(&task_state, p, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st)
		__sync_fetch_and_add(&storage_failures, 1);
	return st;
}

static __always_inline void bin_wait(struct khbpf_task_bpf *b, __u64 delta)
{
	b->wait_ns += delta;
	b->waits++;
	b->wait_hist[khbpf_rq_slot(delta)]++;
}

/*
 * Fold the waits the kernel added since the last look into b: exactly one
 * arrival is one wait, binned; several (the task was not looked at in
 * between, e.g. before attach in run mode) only add up.
 */
static __always_inline void fold_waits(const struct khbpf_task_state *st, struct khbpf_task_bpf *b,
				       __u64 run_delay, __u64 pcount)
{
	__u64 arrivals = pcount - st->last_pcount;
	__u64 delay = run_delay - st->last_run_delay;

	if (pcount <= st->last_pcount)
		return;
	b->switch_ins += arrivals;
	if (arrivals == 1) {
		bin_wait(b, delay);
	} else {
		b->unbinned_waits += arrivals;
		b->unbinned_ns += delay;
	}
}

static __always_inline void fill_rec(struct khbpf_thread_rec *r, struct task_struct *p, __u32 flags)
{
	struct khbpf_task_state *st;

	r->tid = BPF_CORE_READ(p, pid);
	r->tgid = BPF_CORE_READ(p, tgid);
	r->start_time = BPF_CORE_READ(p, start_time);
	BPF_CORE_READ_STR_INTO(&r->comm, p, comm);
	read_counters(p, &r->k);
	st = bpf_task_storage_get(&task_state, p, NULL, 0);
	if (st) {
		r->b = st->b;
		if (kernel_queue_ts)
			fold_waits(st, &r->b, r->k.run_delay, r->k.pcount);
		flags |= KHBPF_REC_HAS_STATE;
	} else {
		__builtin_memset(&r->b, 0, sizeof(r->b));
	}
	r->flags = flags;
	r->pad = 0;
}

static __always_inline __u32 task_cpu_of(struct task_struct *p)
{
	return BPF_CORE_READ(p, thread_info.cpu);
}

static __always_inline void final_switch(struct task_struct *prev)
{
	struct khbpf_thread_key key = {
		.tid = prev->pid,
		.start_time = prev->start_time,
	};
	struct khbpf_thread_rec *r = bpf_map_lookup_elem(&exited, &key);
	struct khbpf_task_state *st;

	if (!r) {
		__sync_fetch_and_add(&final_unmatched, 1);
		return;
	}
	/* __schedule() counted this switch and run time before the tracepoint. */
	read_counters(prev, &r->k);
	st = bpf_task_storage_get(&task_state, prev, NULL, 0);
	if (st) {
		r->b = st->b;
		if (kernel_queue_ts)
			fold_waits(st, &r->b, r->k.run_delay, r->k.pcount);
		r->flags |= KHBPF_REC_HAS_STATE;
	}
	r->flags |= KHBPF_REC_FINAL;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(khbpf_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct khbpf_task_state *st;
	__u64 now = 0;

	if (is_target(prev)) {
		if (prev_state == TASK_DEAD) {
			final_switch(prev);
		} else if (kernel_queue_ts) {
			__u64 run_delay, pcount;

			st = state_of(prev);
			if (st) {
				read_sched_info(prev, &run_delay, &pcount);
				fold_waits(st, &st->b, run_delay, pcount);
				st->last_run_delay = run_delay;
				st->last_pcount = pcount;
			}
		} else if (task_state_now(prev) == TASK_RUNNING) {
			/*
			 * Preempted, or a sleep undone by a pending signal: still on
			 * the runqueue, so its wait starts now. The current state, not
			 * prev_state, tells which.
			 */
			st = state_of(prev);
			if (st) {
				now = bpf_ktime_get_ns();
				st->enqueue_ts = now;
			}
		}
	}
	if (kernel_queue_ts || !is_target(next))
		return 0;

	st = state_of(next);
	if (!st)
		return 0;
	st->b.switch_ins++;
	if (st->enqueue_ts) {
		if (!now)
			now = bpf_ktime_get_ns();
		bin_wait(&st->b, now > st->enqueue_ts ? now - st->enqueue_ts : 0);
		st->enqueue_ts = 0;
	}
	return 0;
}

/* Attached only without sched_info (see kernel_queue_ts). */
static __always_inline void mark_runnable(struct task_struct *p)
{
	struct khbpf_task_state *st;

	if (!is_target(p))
		return;
	st = state_of(p);
	if (st)
		st->enqueue_ts = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(khbpf_sched_wakeup, struct task_struct *p)
{
	mark_runnable(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(khbpf_sched_wakeup_new, struct task_struct *p)
{
	mark_runnable(p);
	return 0;
}

/* Fires from set_task_cpu() even when dest_cpu is the current CPU. */
SEC("tp_btf/sched_migrate_task")
int BPF_PROG(khbpf_sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	struct khbpf_cpu_topo *from, *to;
	struct khbpf_task_state *st;
	__u32 src, dst = dest_cpu, cls;

	if (!is_target(p))
		return 0;
	src = task_cpu_of(p);
	if (src == dst)
		return 0;
	st = state_of(p);
	if (!st)
		return 0;
	from = bpf_map_lookup_elem(&cpu_topo, &src);
	to = bpf_map_lookup_elem(&cpu_topo, &dst);
	cls = khbpf_mig_class(from, to);
	st->b.migrations++;
	if (cls < KHBPF_MIG_CLASSES)
		st->b.mig_class[cls]++;
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(khbpf_sched_process_exit, struct task_struct *p)
{
	struct khbpf_thread_key key = {};
	struct khbpf_thread_rec *r;
	__u32 zero = 0;

	if (!is_target(p))
		return 0;
	r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return 0;
	fill_rec(r, p, KHBPF_REC_EXITED);
	key.tid = r->tid;
	key.start_time = r->start_time;
	if (bpf_map_update_elem(&exited, &key, r, BPF_NOEXIST))
		__sync_fetch_and_add(&exited_overflow, 1);
	return 0;
}

SEC("iter/task")
int khbpf_iter_task(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct khbpf_thread_rec *r;
	__u32 zero = 0, flags = 0;

	if (!task || !is_target(task))
		return 0;
	/*
	 * Baseline (before the tracepoints attach): start each thread's wait
	 * accounting from now, so waits before the window are not folded in.
	 */
	if (iter_init_state && kernel_queue_ts) {
		struct khbpf_task_state *st = state_of(task);

		if (st)
			read_sched_info(task, &st->last_run_delay, &st->last_pcount);
	}
	r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return 0;
	if (task->flags & PF_EXITING)
		flags |= KHBPF_REC_EXITING;
	fill_rec(r, task, flags);
	if (bpf_seq_write(seq, r, sizeof(*r)))
		__sync_fetch_and_add(&iter_write_errors, 1);
	return 0;
}

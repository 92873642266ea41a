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
#include "khbpf/spans.h"

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
/* Span probes attached: keep each thread's on-CPU clock while it has open spans. */
const volatile bool spans_enabled = false;
/* Span records sent through the ring buffer; later ones are sampled out. */
const volatile __u64 max_spans = KHBPF_DEFAULT_MAX_SPANS;

__u64 target_bits[KHBPF_TARGET_WORDS] = {};
/* Set while the loader's baseline iteration runs: record each thread's stamps. */
__u32 iter_init_state = 0;

/* Loss and health counters, read by the loader at the end of the window. */
__u64 storage_failures = 0; /* task storage could not be created */
__u64 exited_overflow = 0; /* exited map full: record lost */
__u64 final_unmatched = 0; /* final switch without an exit record */
__u64 iter_write_errors = 0; /* bpf_seq_write failed */
__u64 next_span_id = 0;
__u64 span_records = 0; /* records attempted (emitted + dropped + sampled out) */
__u64 span_ringbuf_drops = 0; /* ring buffer full */
__u64 span_sampled_out = 0; /* beyond max_spans */
__u64 span_depth_overflow = 0;
__u64 span_unwound = 0; /* frames closed because a return skipped them (longjmp) */
__u64 span_unmatched = 0; /* a return with no open frame */
__u64 span_agg_overflow = 0; /* span_agg full: the call is in no aggregate */
__u64 span_state_failures = 0;
__u64 span_clock_overflow = 0; /* span_clock full: that thread's spans have no on-CPU */

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

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct khbpf_span_state);
} span_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_SPAN_KEYS);
	__type(key, struct khbpf_span_key);
	__type(value, struct khbpf_span_agg);
} span_agg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KHBPF_DEFAULT_SPAN_THREADS);
	__type(key, __u32);
	__type(value, struct khbpf_span_clock);
} span_clock SEC(".maps");

/* A zeroed aggregate to create entries from: too large for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct khbpf_span_agg);
} span_agg_zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, KHBPF_SPAN_RINGBUF_BYTES);
} span_events SEC(".maps");

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

static __always_inline void span_clock_out(struct task_struct *p, __u64 *now)
{
	__u32 tid = p->pid;
	struct khbpf_span_clock *ck = bpf_map_lookup_elem(&span_clock, &tid);

	/* switched_in 0: the clock is being (re)started by a span entry. */
	if (!ck || !ck->spans_open || !ck->switched_in)
		return;
	if (!*now)
		*now = bpf_ktime_get_ns();
	ck->oncpu_acc += *now - ck->switched_in;
}

static __always_inline void span_clock_in(struct task_struct *p, __u64 *now)
{
	__u32 tid = p->pid;
	struct khbpf_span_clock *ck = bpf_map_lookup_elem(&span_clock, &tid);

	if (!ck || !ck->spans_open)
		return;
	if (!*now)
		*now = bpf_ktime_get_ns();
	ck->switched_in = *now;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(khbpf_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct khbpf_task_state *st = NULL;
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
		if (spans_enabled && prev_state != TASK_DEAD)
			span_clock_out(prev, &now);
	}
	if (kernel_queue_ts && !spans_enabled)
		return 0;
	if (!is_target(next))
		return 0;
	if (spans_enabled)
		span_clock_in(next, &now);
	if (kernel_queue_ts)
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
	if (spans_enabled) {
		__u32 tid = p->pid;

		bpf_map_delete_elem(&span_clock, &tid);
	}
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

static __always_inline __u64 switches(struct task_struct *task)
{
	return BPF_CORE_READ(task, nvcsw) + BPF_CORE_READ(task, nivcsw);
}

/*
 * The current thread's ledger readings and the time, taken together. A
 * uprobe program can be preempted (it only disables migration), so a
 * reading that a context switch cut in two is taken again.
 */
static __always_inline __u64 ledger_now(struct task_struct *task, const struct khbpf_span_clock *ck,
					struct khbpf_span_ledger *l)
{
	__u64 pcount, now = 0, before;
	int i;

	for (i = 0; i < 3; i++) {
		before = switches(task);
		now = bpf_ktime_get_ns();
		l->on_cpu_ns = ck->oncpu_acc + (now > ck->switched_in ? now - ck->switched_in : 0);
		read_sched_info(task, &l->run_delay_ns, &pcount);
		l->nvcsw = BPF_CORE_READ(task, nvcsw);
		l->nivcsw = BPF_CORE_READ(task, nivcsw);
		l->migrations = BPF_CORE_READ(task, se.nr_migrations);
		if (switches(task) == before)
			break;
	}
	return now;
}

static __always_inline __u64 sub0(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

/* Attached per span site with the metric index as the uprobe's cookie. */
SEC("uprobe")
int BPF_KPROBE(khbpf_span_enter)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct khbpf_span_clock *ck;
	struct khbpf_span_state *ss;
	struct khbpf_span_frame *f;
	__u32 depth, tid = task->pid;

	ss = bpf_task_storage_get(&span_state, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ss) {
		__sync_fetch_and_add(&span_state_failures, 1);
		return 0;
	}
	ck = bpf_map_lookup_elem(&span_clock, &tid);
	if (!ck) {
		struct khbpf_span_clock zero = {};

		bpf_map_update_elem(&span_clock, &tid, &zero, BPF_NOEXIST);
		ck = bpf_map_lookup_elem(&span_clock, &tid);
		if (!ck) {
			__sync_fetch_and_add(&span_clock_overflow, 1);
			return 0;
		}
	}
	depth = ss->depth;
	if (depth >= KHBPF_SPAN_DEPTH || ss->overflow) {
		/* Pushed nowhere; the matching return pops the overflow count. */
		ss->overflow++;
		__sync_fetch_and_add(&span_depth_overflow, 1);
		return 0;
	}
	/*
	 * First open span: start the thread's clock. switched_in stays 0 until
	 * set, so a switch in between is not charged to it (span_clock_out).
	 */
	if (ck->spans_open++ == 0) {
		__u64 before;
		int i;

		for (i = 0; i < 3; i++) {
			before = switches(task);
			ck->switched_in = bpf_ktime_get_ns();
			if (switches(task) == before)
				break;
		}
	}
	f = &ss->frames[depth & (KHBPF_SPAN_DEPTH - 1)];
	f->span_id = __sync_fetch_and_add(&next_span_id, 1) + 1;
	f->child_ns = 0;
	f->metric = (__u32)bpf_get_attach_cookie(ctx);
	f->start_ns = ledger_now(task, ck, &f->at_start);
	ss->depth = depth + 1;
	return 0;
}

static __always_inline void span_aggregate(__u32 tid, __u32 metric, __u64 incl, __u64 excl,
					   const struct khbpf_span_ledger *l)
{
	struct khbpf_span_key key = { .tid = tid, .metric = metric };
	struct khbpf_span_agg *a;

	a = bpf_map_lookup_elem(&span_agg, &key);
	if (!a) {
		__u32 zero = 0;
		struct khbpf_span_agg *z = bpf_map_lookup_elem(&span_agg_zero, &zero);

		if (z)
			bpf_map_update_elem(&span_agg, &key, z, BPF_NOEXIST);
		a = bpf_map_lookup_elem(&span_agg, &key);
		if (!a) {
			__sync_fetch_and_add(&span_agg_overflow, 1);
			return;
		}
	}
	/* One writer per key: the thread itself. */
	a->calls++;
	a->inclusive_ns += incl;
	a->exclusive_ns += excl;
	a->ledger.on_cpu_ns += l->on_cpu_ns;
	a->ledger.run_delay_ns += l->run_delay_ns;
	a->ledger.nvcsw += l->nvcsw;
	a->ledger.nivcsw += l->nivcsw;
	a->ledger.migrations += l->migrations;
	a->hist[khbpf_rq_slot(incl)]++;
}

SEC("uretprobe")
int BPF_KRETPROBE(khbpf_span_exit)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 metric = (__u32)bpf_get_attach_cookie(ctx);
	struct khbpf_span_ledger now_l, l;
	struct khbpf_span_event *e;
	struct khbpf_span_clock *ck;
	struct khbpf_span_state *ss;
	struct khbpf_span_frame *f;
	__u64 now, incl, excl, parent_id = 0;
	__u32 depth, idx, i, tid = task->pid;

	ss = bpf_task_storage_get(&span_state, task, NULL, 0);
	ck = bpf_map_lookup_elem(&span_clock, &tid);
	if (!ss || !ck)
		return 0;
	if (ss->overflow) {
		ss->overflow--;
		return 0;
	}
	depth = ss->depth;
	if (!depth || depth > KHBPF_SPAN_DEPTH) {
		__sync_fetch_and_add(&span_unmatched, 1);
		return 0;
	}
	/* Returns come LIFO; a frame skipped by longjmp is closed here, uncounted. */
	idx = depth - 1;
	for (i = 0; i < KHBPF_SPAN_DEPTH; i++) {
		if (ss->frames[idx & (KHBPF_SPAN_DEPTH - 1)].metric == metric || idx == 0)
			break;
		idx--;
	}
	if (ss->frames[idx & (KHBPF_SPAN_DEPTH - 1)].metric != metric) {
		__sync_fetch_and_add(&span_unmatched, 1);
		return 0;
	}
	if (idx != depth - 1)
		__sync_fetch_and_add(&span_unwound, depth - 1 - idx);
	f = &ss->frames[idx & (KHBPF_SPAN_DEPTH - 1)];
	now = ledger_now(task, ck, &now_l);
	incl = sub0(now, f->start_ns);
	excl = sub0(incl, f->child_ns);
	l.on_cpu_ns = sub0(now_l.on_cpu_ns, f->at_start.on_cpu_ns);
	l.run_delay_ns = sub0(now_l.run_delay_ns, f->at_start.run_delay_ns);
	l.nvcsw = sub0(now_l.nvcsw, f->at_start.nvcsw);
	l.nivcsw = sub0(now_l.nivcsw, f->at_start.nivcsw);
	l.migrations = sub0(now_l.migrations, f->at_start.migrations);
	if (idx > 0) {
		struct khbpf_span_frame *p = &ss->frames[(idx - 1) & (KHBPF_SPAN_DEPTH - 1)];

		p->child_ns += incl;
		parent_id = p->span_id;
	}
	ss->depth = idx;
	ck->spans_open = ck->spans_open > depth - idx ? ck->spans_open - (depth - idx) : 0;
	if (!ck->spans_open)
		ck->switched_in = 0;

	span_aggregate(task->pid, metric, incl, excl, &l);

	if (__sync_fetch_and_add(&span_records, 1) >= max_spans) {
		__sync_fetch_and_add(&span_sampled_out, 1);
		return 0;
	}
	e = bpf_ringbuf_reserve(&span_events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&span_ringbuf_drops, 1);
		return 0;
	}
	e->span_id = f->span_id;
	e->parent_span_id = parent_id;
	e->start_ns = f->start_ns;
	e->inclusive_ns = incl;
	e->exclusive_ns = excl;
	e->tid = task->pid;
	e->metric = metric;
	e->depth = idx;
	e->flags = 0;
	e->ledger = l;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* Spans still open: one record per open frame, for the window's end. */
SEC("iter/task")
int khbpf_iter_open_spans(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct khbpf_span_state *ss;
	struct khbpf_span_event e = {};
	__u32 i, depth;

	if (!task || !is_target(task))
		return 0;
	ss = bpf_task_storage_get(&span_state, task, NULL, 0);
	if (!ss)
		return 0;
	depth = ss->depth;
	for (i = 0; i < KHBPF_SPAN_DEPTH; i++) {
		struct khbpf_span_frame *f = &ss->frames[i];

		if (i >= depth)
			break;
		e.span_id = f->span_id;
		e.parent_span_id = i ? ss->frames[(i - 1) & (KHBPF_SPAN_DEPTH - 1)].span_id : 0;
		e.start_ns = f->start_ns;
		e.tid = task->pid;
		e.metric = f->metric;
		e.depth = i;
		if (bpf_seq_write(seq, &e, sizeof(e)))
			__sync_fetch_and_add(&iter_write_errors, 1);
	}
	return 0;
}

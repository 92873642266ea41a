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
 *
 * The span programs are in span.bpf.c, the wakers' in wake.bpf.c, serve's
 * group accounting in group.bpf.h and the off-CPU stretches in
 * blocked.bpf.h; all are linked into this one object (see khbpf.bpf.h).
 */
/* This file holds the definitions of the maps and globals khbpf.bpf.h declares. */
#define KHBPF_DEFINE_MAPS
#include "khbpf.bpf.h"
#include "group.bpf.h"

char LICENSE[] SEC("license") = "GPL";

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
const volatile bool keys_enabled = false; /* --key: span_key_conf says which metrics */
/* Span sites attached per file, not per process: the programs keep to the set's members. */
const volatile bool span_filter = false;
/* ... and the loader looks for sites in what each member execs (set_events). */
const volatile bool span_follow_exec = false;
/*
 * Per-CPU counting events in `counters` (cycles, instructions; or software
 * cpu-clock as a test aid): how many slots per CPU are filled, 0 for none.
 */
const volatile __u32 nr_counters = 0;
/* Span records sent through the ring buffer; later ones are sampled out. */
const volatile __u64 max_spans = KHBPF_DEFAULT_MAX_SPANS;
/* Span records between wakeups of the reader, less one (a power of two less one). */
const volatile __u32 span_wakeup_mask = 1023;
/*
 * Test aid (KHBPF_TEST_SKIP_SWITCH_INS=N, sched_collector.c): every N-th
 * switch-in of a thread with a span clock is not given to the clock, as if
 * sched_switch had been missed; 0 (every real run) and the verifier drops
 * the test. For the coverage of sums over spans (span_coverage.sh).
 */
const volatile __u32 test_skip_switch_ins = 0;
__u64 test_switch_ins = 0; /* racy across CPUs: which switch-ins are skipped does not matter */
/*
 * Kernel features, found by the loader (BTF and libbpf feature probes, never
 * version numbers). Each false value takes a fallback; the verifier sees them
 * as constants and drops the branch not taken, so a helper or map type the
 * kernel lacks is never in the loaded program.
 *  use_task_storage: BPF_MAP_TYPE_TASK_STORAGE for per-thread state; without
 *    it, the bounded hashes task_state_h and span_state_h keyed by the task
 *    pointer (entries deleted at the thread's final switch-out).
 *  have_task_btf: bpf_get_current_task_btf(); without it, bpf_get_current_task()
 *    and CO-RE probe reads.
 *  have_cookie: bpf_get_attach_cookie() holds the span metric; without it,
 *    span_site_metric maps the probed site (file, offset) to the metric.
 */
const volatile bool use_task_storage = true;
const volatile bool have_task_btf = true;
const volatile bool have_cookie = true;
/*
 * bpf_preempt_disable()/enable() (6.10): the span programs run their body, a
 * separate subprogram, with preemption disabled (span.bpf.c). From 6.13 the JIT gives a program with a large stack a per-CPU
 * private stack (bpf_enable_priv_stack()); uprobe programs take no per-CPU
 * recursion guard, so where they run preemptible (preempt=full or lazy, the
 * only models 7.x offers on x86; PREEMPT_RT) a second thread's run on the
 * same CPU overwrote a preempted run's stack: span records with another
 * thread's frames, and a NULL dereference inside khbpf_span_exit, seen on
 * 7.2. The tracepoint programs have the guard, so a preempted run makes the
 * kernel skip the next on that CPU (recursion_misses) instead: see
 * final_switch() for the exit program's.
 */
const volatile bool have_preempt_kfuncs = false;
/*
 * Verifiers without atomic fetch-and-add (BPF_FETCH) refuse a program that
 * holds one anywhere, even in dead code: the span programs come in two
 * builds, and the loader loads the *_nofetch pair there. Those take span
 * slots from per-CPU tickets and check the record cap on a plain read (the
 * loader's cap is exact).
 */
/* Without atomic fetch: slots are cpu + 1 + n * nr_slot_cpus (loader: possible CPUs). */
const volatile __u32 nr_slot_cpus = 1;
/*
 * Blocked time and wakers (CONFIG_SCHED_INFO): each off-CPU stretch is timed
 * on the runqueue clock, the one sched_info_depart() and sched_info_arrive()
 * read, so that its time less the kernel's run_delay over it is exactly the
 * time the thread was not runnable.
 */
const volatile bool blocked_enabled = false;
/* ... and who woke each thread (wake.bpf.c's programs loaded; run and attach only). */
const volatile bool wakers_enabled = false;
/*
 * --span-cause METRIC=CAUSE: a blocked stretch that begins inside a span of
 * a declared metric has that cause (the innermost such span's), not the
 * one its system call gives: an application's own wait probes know what a
 * latch's epoll_wait waits for. span_metric_cause[metric] is the cause + 1
 * (0: not declared), written by the loader before the spans attach.
 */
const volatile bool span_causes_enabled = false;
/*
 * khbpf_sched_switch_plain_folds is loaded: each member's waits fold in
 * `wait_folds`, and its task storage is read from the kernel's cache
 * without the helper (task_state_cached()). The other programs that read a
 * thread's waits (its records) look there too.
 */
const volatile bool wait_folds_enabled = false;
__u8 span_metric_cause[KHBPF_MAX_METRICS] = {};
/* serve: KHBPF_GROUP_*, and the --cgroup filters (kernfs id at its level). */
const volatile __u32 group_by = KHBPF_GROUP_NONE;
const volatile __u32 nr_cgroup_filters = 0;
/*
 * run and attach (and serve --pid): the target set (KHBPF_SET_*, targets.h),
 * kept in the kernel by targets.bpf.c; its roots are in target_slots, its
 * cgroups in cgroup_filter_*.
 */
const volatile __u32 set_mode = KHBPF_SET_NONE;
const volatile __u64 cgroup_filter_id[KHBPF_MAX_CGROUP_FILTERS] = {};
const volatile __u32 cgroup_filter_level[KHBPF_MAX_CGROUP_FILTERS] = {};

__u32 target_slots[KHBPF_TARGET_SLOTS] = {};
/*
 * Set while the loader's baseline iteration runs: 1, record each thread's
 * stamps; 2 (run's held command), only start its off-CPU stretch.
 */
__u32 iter_init_state = 0;
/* The loader's walk of the set (khbpf_iter_join): how a thread that joins is stamped. */
__u32 join_how = 1;

/* Loss and health counters, read by the loader at the end of the window. */
__u64 storage_failures = 0; /* task storage could not be created */
__u64 exited_overflow = 0; /* exited map full (or no memory for the record): record lost */
__u64 final_unmatched = 0; /* final switch without an exit record */
__u64 exits_made_at_final = 0; /* exit records made at the final switch: the exit program missed */
/*
 * Target threads whose sched_process_exit program ran, and target threads
 * whose final switch-out ran: a thread is reaped (pthread_join, wait4) before
 * its final __schedule(), so the loader waits while the second lags the
 * first, or a record lost there would be counted after the document.
 */
__u64 exits_begun = 0;
__u64 exits_ended = 0;
__u64 iter_write_errors = 0; /* bpf_seq_write failed */
__u64 span_threads = 0; /* thread slots handed out (span ids) */
__u64 span_records = 0; /* records attempted (emitted + dropped + sampled out) */
__u64 span_ringbuf_drops = 0; /* ring buffer full */
__u64 span_sampled_out = 0; /* beyond max_spans */
__u64 span_depth_overflow = 0;
__u64 span_unwound = 0; /* frames closed because a return skipped them (longjmp) */
__u64 span_unmatched = 0; /* a return with no open frame */
__u64 span_agg_overflow = 0; /* span_agg full: the call is in no aggregate */
__u64 span_state_failures = 0;
__u64 span_clock_gaps = 0; /* missed switch-ins seen (the spans across them are flagged) */
__u64 span_counter_skews = 0; /* counter readings given up: never read close to the time */
__u64 exec_renumbered = 0; /* a non-leader thread exec'd: it took the leader's id */
/* spans open at a thread's exit the ring buffer had no room for */
__u64 span_open_at_exit_drops = 0;
__u64 groups_made = 0; /* entries created in `groups` */
__u64 group_overflow = 0; /* switch-outs of a group `groups` had no room for (in group_spill) */
__u64 usdt_hits_lost = 0; /* --usdt hits that found usdt_hits full: in no count */
__u64 span_series_made = 0; /* serve: entries created in span_series */
__u64 span_series_overflow = 0; /* serve: calls span_series had no room for (in the spill) */
__u64 span_open_at_exit_serve = 0; /* serve: spans open when their thread exited (no records) */
__u64 span_key_other_calls = 0; /* keyed calls past their metric's bound of keys */
__u64 span_key_unreadable = 0; /* keyed calls whose argument could not be read */
__u64 span_key_table_full = 0; /* keyed calls whose new key found span_key_ids full */
__u64 span_site_unresolved = 0; /* no cookie: a span probe hit at a site not in span_site_metric */
__u64 wakers_overflow = 0; /* blocked stretches `wakers` had no room for */
__u64 wakeups_unseen = 0; /* blocked stretches ended with no sched_waking seen */
/* a span's stretches with a waker that its clock's wake_log no longer held at its exit */
__u64 span_wakes_unlisted = 0;
__u64 span_wakers_overflow = 0; /* span stretches `span_wakers` had no room for */
/* blocked stretches whose system call could not be read: their cause is `other` */
__u64 blocked_regs_unread = 0;
/* Blocked stretches whose cause a metric's --span-cause named, by that metric. */
__u64 span_cause_stretches[KHBPF_MAX_METRICS] = {};
__u64 procs_overflow = 0; /* processes that could not join: `procs` was full */
__u64 procs_joined = 0; /* process records made: the loader reads the new ones' titles */
__u64 join_failures = 0; /* threads that could not join: no state could be made */
__u64 forks_joined_at_wakeup = 0; /* forks the fork program missed, joined at wake_up_new_task */
__u64 moved_base_overflow = 0; /* moved into the cgroups: no room for the baseline */
__u64 cgroup_moves_in = 0; /* whole processes moved into the cgroups: the loader walks */
__u64 cgroup_rejoins = 0; /* threads found in the cgroups again after they left */
__u64 exec_events_dropped = 0; /* execs set_events had no room for: not looked at */
/* Members whose wait fold entry another held: theirs fold in their task storage. */
__u64 wait_folds_full = 0;

/* Before thread_info.cpu (x86-64 until 5.15), the CPU is task_struct.cpu. */
struct task_struct___pre516 {
	unsigned int cpu;
} __attribute__((preserve_access_index));

/* The hash fallback ends with the thread (task storage is freed with it). */
static __always_inline void task_states_free(struct task_struct *p)
{
	__u64 key = (__u64)p;

	if (use_task_storage)
		return;
	bpf_map_delete_elem(&task_state_h, &key);
	if (spans_enabled)
		bpf_map_delete_elem(&span_state_h, &key);
}

#include "blocked.bpf.h"
#include "threadrec.bpf.h"
#include "targets.bpf.h"

static __always_inline __u32 task_cpu_of(struct task_struct *p)
{
	if (bpf_core_field_exists(p->thread_info.cpu))
		return BPF_CORE_READ(p, thread_info.cpu);
	return BPF_CORE_READ((struct task_struct___pre516 *)p, cpu);
}

/*
 * The old leader of a process a non-leader thread exec'd: de_thread() gave
 * the exec'ing thread the leader's start time, and (exchange_tids(), 5.11)
 * swapped their ids, so a leader whose final switch comes after that runs
 * under the exec'ing thread's old id. Its record stays under its own
 * identity, the process id, where khbpf_sched_process_exit made it.
 */
static __always_inline bool exec_old_leader(struct task_struct *p)
{
	struct task_struct *leader = p->group_leader;

	/*
	 * Between exchange_tids() and de_thread()'s "leader->group_leader =
	 * tsk" the old leader is still its own leader, under another id.
	 */
	if (leader == p)
		return p->pid != p->tgid;
	return leader->start_time == p->start_time;
}

static __always_inline void final_record(struct task_struct *prev, struct khbpf_task_state *st)
{
	bool old_leader = exec_old_leader(prev);
	struct khbpf_thread_key key = {
		.tid = old_leader ? prev->tgid : prev->pid,
		.start_time = prev->start_time,
	};
	struct khbpf_thread_rec *r = bpf_map_lookup_elem(&exited, &key);

	if (set_mode)
		proc_final_switch(prev);
	__sync_fetch_and_add(&exits_ended, 1);
	if (!r) {
		/*
		 * sched_process_exit's program did not run for it (since the
		 * tracepoints run preemptible, 7.x, a preempted run of that
		 * program makes the kernel skip the next one on the same CPU:
		 * its recursion_misses), or found no room. The record is made
		 * here instead, from the final counters; only open spans,
		 * which that program reports, are lost (counted below). A
		 * record lost is counted here, once, whichever program failed.
		 */
		r = exited_entry(&key);
		if (!r) {
			__sync_fetch_and_add(&exited_overflow, 1);
			__sync_fetch_and_add(&final_unmatched, 1);
			return;
		}
		fill_rec_folds(r, prev, KHBPF_REC_EXITED | KHBPF_REC_FINAL, false);
		r->tid = key.tid;
		__sync_fetch_and_add(&exits_made_at_final, 1);
		if (spans_enabled) {
			struct khbpf_span_state *ss = span_state_get(prev, false);

			if (ss && ss->depth)
				__sync_fetch_and_add(&span_open_at_exit_drops, ss->depth);
		}
		return;
	}
	/* The exec'ing thread's own final record is there already: it stays. */
	if (old_leader && (r->flags & KHBPF_REC_FINAL))
		return;
	/* __schedule() counted this switch and run time before the tracepoint. */
	read_counters(prev, &r->k);
	if (st) {
		/* Its wait fold is back in st (final_switch()). */
		r->b = st->b;
		if (kernel_queue_ts)
			fold_waits(st, &r->b, r->k.run_delay, r->k.pcount);
		r->flags |= KHBPF_REC_HAS_STATE;
	}
	r->flags |= KHBPF_REC_FINAL;
}

/*
 * The thread's last switch: its wait fold, if it has one, goes back into
 * its state before its record is made from that (a reader that still finds
 * the entry looks at its owner again), and the entry is free.
 */
static __always_inline void wait_fold_release(struct khbpf_task_state *st)
{
	struct khbpf_wait_fold *f;

	if (!wait_folds_enabled || !st)
		return;
	f = wait_fold_of(st);
	if (!f)
		return;
	WAIT_FIELDS_COPY(&st->b, f);
	st->last_run_delay = f->last_run_delay;
	st->last_pcount = f->last_pcount;
	st->member = (st->member & ~KHBPF_MEMBER_FOLD) | KHBPF_MEMBER_NOFOLD;
	asm volatile("" ::: "memory");
	f->owner = KHBPF_FOLD_FREE;
}

/*
 * A member's wait fold at its switch-out through the helper (its first, or
 * its storage was not in the kernel's cache): its entry, taken now if free
 * and filled from st; NULL when another thread holds it (counted once:
 * the thread's waits fold in st from then on).
 */
static __always_inline struct khbpf_wait_fold *wait_fold_take(struct task_struct *p,
							      struct khbpf_task_state *st)
{
	__u64 key = wait_fold_key(st);
	struct khbpf_wait_fold *f = wait_fold_at(key);

	if (!f)
		return NULL;
	if (f->owner == key && (st->member & KHBPF_MEMBER_FOLD)) {
		/* Its own, found here after a non-leader's exec changed its start time. */
		f->start_time = p->start_time;
		return f;
	}
	if (f->owner == key) {
		/* A dead thread's, never given back, at this storage's address: taken over. */
		f->owner = KHBPF_FOLD_TAKING;
	} else if (f->owner != KHBPF_FOLD_FREE ||
		   __sync_val_compare_and_swap(&f->owner, KHBPF_FOLD_FREE, KHBPF_FOLD_TAKING) !=
			   KHBPF_FOLD_FREE) {
		st->member |= KHBPF_MEMBER_NOFOLD;
		__sync_fetch_and_add(&wait_folds_full, 1);
		return NULL;
	}
	f->task = wait_fold_task(p);
	f->start_time = p->start_time;
	f->last_run_delay = st->last_run_delay;
	f->last_pcount = st->last_pcount;
	WAIT_FIELDS_COPY(f, &st->b);
	st->member |= KHBPF_MEMBER_FOLD;
	asm volatile("" ::: "memory");
	f->owner = key;
	return f;
}

/* folds: the plain switch program's, the only one whose members have wait folds. */
static __always_inline void final_switch(struct task_struct *prev, struct khbpf_task_state *st,
					 bool folds)
{
	if (!st)
		st = task_state_get(prev, false);
	if (folds)
		wait_fold_release(st);
	final_record(prev, st);
}

/* The span clock of a target thread with open spans, or NULL. */
static __always_inline struct khbpf_span_clock *span_clock_of(struct task_struct *p)
{
	struct khbpf_span_state *ss = span_state_get(p, false);

	return ss && ss->clock.spans_open ? &ss->clock : NULL;
}

/*
 * The switch instant, read once for both sides: the time, and each counter
 * right after it. prev's stint ends and next's begins at the same readings,
 * so the skew between the two clocks is the same at every edge and cancels.
 */
struct switch_readings {
	__u64 now;
	struct khbpf_ctr_read r[KHBPF_NR_COUNTERS];
	int ok[KHBPF_NR_COUNTERS];
};

static __always_inline void switch_read(struct switch_readings *sr)
{
	bool skewed = false;
	__u32 i, t;

	for (t = 0; t < READ_TRIES; t++) {
		sr->now = bpf_ktime_get_ns();
		for (i = 0; i < KHBPF_NR_COUNTERS; i++) {
			if (i >= nr_counters)
				break;
			sr->ok[i] = counter_read(i, &sr->r[i]);
		}
		skewed = read_skewed(sr->now);
		if (!skewed)
			break;
	}
	if (skewed)
		__sync_fetch_and_add(&span_counter_skews, 1);
	for (i = 0; skewed && i < KHBPF_NR_COUNTERS; i++)
		sr->ok[i] = 0;
}

static __always_inline void span_clock_out(struct khbpf_span_clock *ck,
					   const struct switch_readings *sr)
{
	__u32 i;

	/* switched_in 0: the clock is being (re)started by a span entry. */
	if (!ck->switched_in)
		return;
	if (ck->switched_out > ck->switched_in) {
		ck->clock_gaps++; /* out twice: this stint's start is unknown */
		__sync_fetch_and_add(&span_clock_gaps, 1);
	} else {
		ck->oncpu_acc += sr->now - ck->switched_in;
	}
	ck->switched_out = sr->now;
	for (i = 0; i < KHBPF_NR_COUNTERS; i++) {
		if (i >= nr_counters)
			break;
		khbpf_vctr_out(&ck->ctr[i], &sr->r[i], sr->ok[i]);
	}
}

static __always_inline void span_clock_in(struct khbpf_span_clock *ck,
					  const struct switch_readings *sr)
{
	__u32 i;

	ck->switched_in = sr->now;
	for (i = 0; i < KHBPF_NR_COUNTERS; i++) {
		if (i >= nr_counters)
			break;
		khbpf_vctr_in(&ck->ctr[i], &sr->r[i], sr->ok[i]);
	}
}

/*
 * A set's member has a span clock only once it entered a span (span.bpf.c
 * marks it): the others' switches skip that lookup. Without a set (serve),
 * or without BTF task pointers (the mark is not made), every target looks.
 */
static __always_inline bool has_span_clock(const struct khbpf_task_state *known)
{
	if (!set_mode || !have_task_btf)
		return true;
	return known && (known->member & KHBPF_MEMBER_SPANS);
}

/* The state of a target whose state is known already (a set's member), else made now. */
static __always_inline struct khbpf_task_state *state_or(struct khbpf_task_state *known,
							 struct task_struct *p)
{
	return known ? known : state_of(p);
}

/*
 * Is p a target? A set's member gives its state (*st), looked up once for
 * the whole switch; without a set, is_target()'s filters decide and the
 * state is made where it is needed.
 */
static __always_inline bool switch_target(struct task_struct *p, struct khbpf_task_state **st)
{
	*st = NULL;
	if (!set_mode)
		return is_target(p);
	*st = member_state(p);
	if (*st && set_mode == KHBPF_SET_CGROUP)
		*st = cgroup_still_member(p, *st);
	return *st != NULL;
}

static __always_inline int on_switch(struct task_struct *prev, struct task_struct *next,
				     unsigned int prev_state)
{
	struct khbpf_span_clock *ck_prev = NULL, *ck_next = NULL;
	struct khbpf_task_state *st = NULL, *known;
	struct khbpf_group_acc *grp = NULL;
	struct switch_readings sr;
	__u64 now = 0;

	if (switch_target(prev, &known)) {
		st = known;
		if (prev_state == TASK_DEAD)
			final_switch(prev, st, false);
		if (group_by)
			st = group_switch_out(prev, prev_state == TASK_DEAD, &grp);
		if (prev_state == TASK_DEAD) {
		} else if (kernel_queue_ts) {
			__u64 run_delay, pcount;

			/* serve: group_switch_out did it with the same readings. */
			if (!group_by && (st = state_or(st, prev))) {
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
			st = state_or(st, prev);
			if (st) {
				now = bpf_ktime_get_ns();
				st->enqueue_ts = now;
			}
		}
		if (spans_enabled && prev_state != TASK_DEAD && has_span_clock(known))
			ck_prev = span_clock_of(prev);
		if (ck_prev) {
			switch_read(&sr);
			span_clock_out(ck_prev, &sr);
			now = sr.now;
		}
		if (blocked_enabled && prev_state != TASK_DEAD) {
			st = state_or(st, prev);
			if (st)
				stretch_out(prev, st, now, grp, ck_prev);
		}
		if (prev_state == TASK_DEAD)
			task_states_free(prev);
	}
	/*
	 * Nothing is kept of a switch-in then, but in a cgroup set whether next
	 * was moved out while off a CPU: it leaves with the counters it had.
	 */
	if (kernel_queue_ts && !spans_enabled && !blocked_enabled && set_mode != KHBPF_SET_CGROUP)
		return 0;
	if (!switch_target(next, &known))
		return 0;
	if (spans_enabled && has_span_clock(known))
		ck_next = span_clock_of(next);
	if (ck_next && test_skip_switch_ins && ++test_switch_ins % test_skip_switch_ins == 0)
		ck_next = NULL;
	if (ck_next) {
		if (!now || !ck_prev)
			switch_read(&sr);
		span_clock_in(ck_next, &sr);
		now = sr.now;
	}
	if (blocked_enabled) {
		st = state_or(known, next);
		if (st)
			stretch_in(next, st, ck_next, now);
	}
	if (kernel_queue_ts)
		return 0;

	st = state_or(known, next);
	if (!st)
		return 0;
	st->b.switch_ins++;
	if (st->enqueue_ts) {
		__u64 wait;

		if (!now)
			now = bpf_ktime_get_ns();
		wait = now > st->enqueue_ts ? now - st->enqueue_ts : 0;
		bin_wait(&st->b, wait);
		st->enqueue_ts = 0;
		if (group_by) {
			struct khbpf_group_acc *a = group_of(next);

			if (a) {
				__sync_fetch_and_add(&a->b.switch_ins, 1);
				__sync_fetch_and_add(&a->k.run_delay, wait);
				group_bin_wait(a, wait);
			}
		}
	}
	return 0;
}

/*
 * The tracepoint's prev_state argument (5.18 on) is the state __schedule()
 * read on entry. The loader loads this program when the kernel's
 * btf_trace_sched_switch has it, and khbpf_sched_switch_nostate otherwise.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(khbpf_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_switch(prev, next, prev_state);
}

/*
 * Without the argument, the task's own state: still TASK_DEAD at its final
 * switch-out (do_task_dead() sets it, nothing undoes it), which is all
 * on_switch() asks of prev_state.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(khbpf_sched_switch_nostate, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch(prev, next, task_state_now(prev));
}

/*
 * The same for a target set kept in task storage: a task outside the set
 * has no BPF task storage at all, so a switch between two such tasks ends
 * here, after one load from each task_struct, which __schedule() has just
 * touched: no helper, and no map or global variable read. Those live in
 * vmalloc'd pages, and every load of one was measured at about 14 ns on
 * a VM of this project's that had KPTI without PCID (the TLB flushed at
 * every kernel entry), where the empty program costs 50.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(khbpf_sched_switch_set, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	if (!prev->bpf_storage && !next->bpf_storage)
		return 0;
	return on_switch(prev, next, prev_state);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(khbpf_sched_switch_set_nostate, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	if (!prev->bpf_storage && !next->bpf_storage)
		return 0;
	return on_switch(prev, next, task_state_now(prev));
}

/*
 * ls->cache[ci], found in four tests. The verifier takes no variable offset
 * into a kernel struct: clang makes one load at an offset that is a known
 * constant on each path, which it accepts.
 */
#define KHBPF_CACHE_2(ls, ci, n) ((ci)&1 ? (ls)->cache[(n) + 1] : (ls)->cache[(n)])
#define KHBPF_CACHE_4(ls, ci, n) \
	((ci)&2 ? KHBPF_CACHE_2(ls, ci, (n) + 2) : KHBPF_CACHE_2(ls, ci, n))
#define KHBPF_CACHE_8(ls, ci, n) \
	((ci)&4 ? KHBPF_CACHE_4(ls, ci, (n) + 4) : KHBPF_CACHE_4(ls, ci, n))

/*
 * p's task_state data as bpf_task_storage_get() would find it, read from
 * p's local storage cache (bpf_local_storage_lookup()'s fast path) with
 * plain loads; NULL when that cache slot holds another map's (the helper
 * then looks, and caches it again). From a tracing program the helper is
 * bpf_task_storage_get_recur(): a call, a per-CPU trylock and its returns;
 * without them the plain program took 73 ns a run, not 92, on this
 * project's VM (BENCHMARKS.md).
 * What it reads that way is read-only to the program: the waits fold into
 * wait_folds instead, where only the storage's address, as a key, leads.
 */
static __always_inline struct bpf_local_storage_data *task_state_cached(struct task_struct *p)
{
	struct bpf_local_storage_map *smap = (void *)&task_state;
	struct bpf_local_storage *ls = p->bpf_storage;
	struct bpf_local_storage_data *sd;
	__u32 ci = smap->cache_idx;

	/* The loader checked the cache has 16 slots (BPF_LOCAL_STORAGE_CACHE_SIZE). */
	if (!ls || ci >= 16)
		return NULL;
	sd = ci & 8 ? KHBPF_CACHE_8(ls, ci, 8) : KHBPF_CACHE_8(ls, ci, 0);
	return sd && sd->smap == smap ? sd : NULL;
}

/*
 * A final switch whose task storage the helper did not give (on kernels
 * before 6.2 it fails while another lookup holds the CPU's busy count):
 * the entry is freed all the same, from the storage's cached address.
 */
static __always_inline void wait_fold_drop(struct task_struct *prev)
{
	struct bpf_local_storage_data *sd = task_state_cached(prev);
	struct khbpf_wait_fold *f;
	__u64 key;

	if (!sd)
		return;
	key = (const char *)sd->data - (const char *)&task_state;
	f = wait_fold_at(key);
	if (f && f->owner == key && f->task == wait_fold_task(prev))
		f->owner = KHBPF_FOLD_FREE;
}

/*
 * The set's switch as run and attach have it by default (the kernel's
 * sched_info, no spans, no blocked time, no groups, no cgroup set): only a
 * member's switch-out has anything to do, fold the wait that ended at its
 * last switch-in. The loader loads this program only in that
 * configuration, so it reads its flags from .rodata, which the verifier
 * turns into constants (115 ns a run with on_switch() against the empty
 * program's 52, where each vmalloc'd page cost a TLB miss). A member's
 * switch-out touches its task storage (its kernel cache slot, read with
 * CO-RE loads) and its wait fold entry, one page of an array: with no
 * helper call, 73 ns a run against 92 through bpf_task_storage_get(), on
 * this project's VM without KPTI, where calls and returns are what cost
 * (retpolines, the Safe RET return thunk).
 */
static __always_inline int on_switch_plain(struct task_struct *prev, unsigned int prev_state,
					   bool folds)
{
	struct khbpf_task_state *st;
	struct khbpf_wait_fold *f;
	__u64 run_delay, pcount;

	if (!prev->bpf_storage)
		return 0;
	if (folds && prev_state != TASK_DEAD) {
		struct bpf_local_storage_data *sd = task_state_cached(prev);

		if (sd) {
			/* wait_fold_key() of the state the helper would give. */
			__u64 key = (const char *)sd->data - (const char *)&task_state;

			f = wait_fold_at(key);
			if (f && f->owner == key && f->task == wait_fold_task(prev) &&
			    f->start_time == prev->start_time) {
				read_sched_info(prev, &run_delay, &pcount);
				wait_fold_add(f, run_delay, pcount);
				return 0;
			}
		}
	}
	st = bpf_task_storage_get(&task_state, prev, NULL, 0);
	if (folds && !st && prev_state == TASK_DEAD)
		wait_fold_drop(prev);
	if (!st || !(st->member & KHBPF_MEMBER))
		return 0;
	if (prev_state == TASK_DEAD) {
		final_switch(prev, st, folds);
		return 0;
	}
	read_sched_info(prev, &run_delay, &pcount);
	f = folds && !(st->member & KHBPF_MEMBER_NOFOLD) ? wait_fold_take(prev, st) : NULL;
	if (f) {
		wait_fold_add(f, run_delay, pcount);
		return 0;
	}
	fold_waits(st, &st->b, run_delay, pcount);
	st->last_run_delay = run_delay;
	st->last_pcount = pcount;
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(khbpf_sched_switch_plain, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	return on_switch_plain(prev, prev_state, false);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(khbpf_sched_switch_plain_nostate, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch_plain(prev, task_state_now(prev), false);
}

/* With wait folds (wait_folds_enabled): the kernel's storage cache and atomics. */
SEC("tp_btf/sched_switch")
int BPF_PROG(khbpf_sched_switch_plain_folds, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	return on_switch_plain(prev, prev_state, true);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(khbpf_sched_switch_plain_folds_nostate, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch_plain(prev, task_state_now(prev), true);
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
	if (group_by) {
		struct khbpf_group_acc *a = group_of(p);

		if (a) {
			__sync_fetch_and_add(&a->b.migrations, 1);
			if (cls < KHBPF_MIG_CLASSES)
				__sync_fetch_and_add(&a->b.mig_class[cls], 1);
		}
	}
	return 0;
}

/*
 * A thread that exits (killed, or pthread_exit) inside spans never returns
 * from them, and its span storage goes with it: report each open frame now,
 * flagged open, so the window's end still lists it with its start.
 */
static __always_inline void spans_at_exit(struct task_struct *p)
{
	struct khbpf_span_state *ss = span_state_get(p, false);
	struct khbpf_span_event *e;
	__u32 i, depth;

	if (!ss)
		return;
	depth = ss->depth;
	/* serve takes no records: such spans are only counted. */
	if (group_by) {
		if (depth)
			__sync_fetch_and_add(&span_open_at_exit_serve,
					     depth < KHBPF_SPAN_DEPTH ? depth : KHBPF_SPAN_DEPTH);
		depth = 0;
	}
	for (i = 0; i < KHBPF_SPAN_DEPTH; i++) {
		struct khbpf_span_frame *f = &ss->frames[i];

		if (i >= depth)
			break;
		e = bpf_ringbuf_reserve(&span_events,
					nr_counters ? sizeof(*e) : KHBPF_SPAN_EVENT_NOHW_SIZE, 0);
		if (!e) {
			__sync_fetch_and_add(&span_open_at_exit_drops, 1);
			continue;
		}
		__builtin_memset(e, 0, KHBPF_SPAN_EVENT_NOHW_SIZE);
		e->span_id = f->span_id;
		e->parent_span_id = i ? ss->frames[(i - 1) & (KHBPF_SPAN_DEPTH - 1)].span_id : 0;
		e->start_ns = f->start_ns;
		e->tid = p->pid;
		e->metric = f->metric;
		e->depth = i;
		e->flags = KHBPF_SPAN_F_OPEN;
		if (nr_counters)
			__builtin_memset(e->hw, 0, sizeof(e->hw));
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
	/* Reported: the end-of-window iterator must not list them again (a zombie leader). */
	ss->depth = 0;
	ss->clock.spans_open = 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(khbpf_sched_process_exit, struct task_struct *p)
{
	struct khbpf_thread_key key = {};
	struct khbpf_thread_rec *r;

	if (!is_target(p))
		return 0;
	__sync_fetch_and_add(&exits_begun, 1);
	if (spans_enabled)
		spans_at_exit(p);
	key.tid = BPF_CORE_READ(p, pid);
	key.start_time = BPF_CORE_READ(p, start_time);
	/*
	 * An entry there already: the identity exited before, a thread that
	 * exec'd took the old leader's id and start time (de_thread). Counted
	 * in exec_renumbered; its record replaces the old leader's, as its
	 * final switch would.
	 */
	/* No room: the final switch tries again, and counts the record lost. */
	r = exited_entry(&key);
	if (r)
		fill_rec(r, p, KHBPF_REC_EXITED);
	return 0;
}

/* Before ns_common.ns_id (6.18), a mount namespace's own never-reused sequence number. */
struct mnt_namespace___seq {
	__u64 seq;
} __attribute__((preserve_access_index));

static __always_inline __u64 mnt_ns_id(struct mnt_namespace *ns)
{
	if (bpf_core_field_exists(ns->ns.ns_id))
		return BPF_CORE_READ(ns, ns.ns_id);
	if (bpf_core_field_exists(((struct mnt_namespace___seq *)ns)->seq))
		return BPF_CORE_READ((struct mnt_namespace___seq *)ns, seq);
	return 0;
}

/*
 * exec from a thread other than the leader: the kernel ends the leader and
 * gives the exec'ing thread its id and start time, so one identity covers
 * two threads and the exec'ing thread's own id ends without an exit. A
 * set's process keeps its new name and the path it exec'd.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(khbpf_sched_process_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	struct khbpf_proc_rec *r;

	if (!is_target(p))
		return 0;
	if (old_pid != p->pid)
		__sync_fetch_and_add(&exec_renumbered, 1);
	if (!set_mode)
		return 0;
	r = proc_of(p);
	if (!r)
		return 0;
	/* begin_new_exec() has set the new comm; the name as given to execve(). */
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), p->comm);
	bpf_probe_read_kernel_str(r->exec_path, sizeof(r->exec_path), bprm->filename);
	r->exe_tgid = p->tgid;
	r->exe_start_time = r->start_time;
	r->flags |= KHBPF_PROC_EXECED;
	if (span_follow_exec) {
		struct khbpf_exec_event *e = bpf_ringbuf_reserve(&set_events, sizeof(*e), 0);
		struct mnt_namespace *mns;

		if (!e) {
			__sync_fetch_and_add(&exec_events_dropped, 1);
			return 0;
		}
		e->pid = p->tgid;
		mns = BPF_CORE_READ(p, nsproxy, mnt_ns);
		e->mnt_ns = BPF_CORE_READ(mns, ns.inum);
		e->mnt_ns_id = mnt_ns_id(mns);
		e->start_time = r->start_time;
		e->ns = bpf_ktime_get_ns();
		__builtin_memcpy(e->path, r->exec_path, sizeof(e->path));
		bpf_ringbuf_submit(e, 0);
	}
	return 0;
}

SEC("iter/task")
int khbpf_iter_task(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;

	if (!task || !is_target(task))
		return 0;
	/*
	 * Baseline (before the tracepoints attach) without a set (serve's
	 * every task or cgroup filters): start each thread's accounting from
	 * now. A set's threads get theirs as they join (khbpf_iter_join).
	 */
	if (iter_init_state && !set_mode) {
		struct khbpf_task_state *st = state_of(task);

		if (st)
			stamp_baseline(task, st, iter_init_state);
	}
	return iter_write_rec(seq, task, 0);
}

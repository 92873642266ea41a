// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "collect/sched_window.h"

static struct khbpf_thread_rec rec(uint32_t tid, uint64_t start, uint64_t base, uint32_t flags)
{
	struct khbpf_thread_rec r;

	memset(&r, 0, sizeof(r));
	r.tid = tid;
	r.start_time = start;
	snprintf(r.comm, sizeof(r.comm), "t%u", tid);
	r.flags = flags;
	r.k.nvcsw = base + 1;
	r.k.nivcsw = base + 2;
	r.k.nr_migrations = base + 3;
	r.k.sum_exec_runtime = base + 4;
	r.k.run_delay = base + 5;
	r.k.pcount = base + 6;
	r.b.waits = base;
	r.b.wait_hist[3] = base;
	r.b.mig_class[KHBPF_MIG_LLC] = base;
	return r;
}

static const struct window_thread *find(const struct sched_window *w, uint32_t tid, uint64_t start)
{
	size_t i;

	for (i = 0; i < w->nr_threads; i++)
		if (w->threads[i].tid == tid && w->threads[i].start_time == start)
			return &w->threads[i];
	return NULL;
}

/*
 * tid 10: alive throughout; 11: exited in the window; 12: born and alive;
 * 13: born and exited; 14: in the baseline, gone without an exit record;
 * 15: existed before the window yet only seen at its end; 10 reused as a
 * new thread (later start_time) born and exited.
 */
static void test_sched_window__merge_cases(void **state)
{
	struct khbpf_thread_rec base[] = {
		rec(10, 100, 1000, 0),
		rec(11, 100, 2000, 0),
		rec(14, 100, 500, 0),
	};
	struct khbpf_thread_rec end[] = {
		rec(10, 100, 1100, KHBPF_REC_HAS_STATE),
		rec(12, 5000, 10, KHBPF_REC_HAS_STATE),
		rec(15, 50, 70, 0),
	};
	struct khbpf_thread_rec ex[] = {
		rec(10, 6000, 1, KHBPF_REC_EXITED | KHBPF_REC_HAS_STATE),
		rec(11, 100, 2050, KHBPF_REC_EXITED | KHBPF_REC_FINAL | KHBPF_REC_HAS_STATE),
		rec(13, 7000, 20, KHBPF_REC_EXITED | KHBPF_REC_HAS_STATE),
	};
	struct thread_table tb = { base, 3 }, te = { end, 3 }, tx = { ex, 3 };
	struct window_opts o = {
		.baseline = &tb, .end = &te, .exited = &tx, .start_boot_ns = 1000
	};
	const struct window_thread *t;
	struct sched_window w;

	(void)state;
	assert_int_equal(sched_window__compute(&w, &o), 0);
	assert_int_equal(w.nr_threads, 6);
	assert_int_equal(w.threads_without_baseline, 1); /* 15 */
	assert_int_equal(w.vanished_threads, 1); /* 14 */
	assert_int_equal(w.exited_threads, 4); /* 10', 11, 13, 14 */
	assert_int_equal(w.born_threads, 3); /* 10', 12, 13 */

	t = find(&w, 10, 100);
	assert_non_null(t);
	assert_false(t->exited);
	assert_false(t->born);
	assert_int_equal(t->delta.nvcsw, 100);
	assert_int_equal(t->delta.pcount, 100);
	assert_int_equal(t->end_runtime, 1104);
	assert_true(t->has_bpf);
	assert_int_equal(t->bpf.waits, 1100);

	t = find(&w, 11, 100);
	assert_true(t->exited);
	assert_int_equal(t->delta.run_delay, 50);

	t = find(&w, 12, 5000);
	assert_true(t->born);
	assert_int_equal(t->delta.nvcsw, 11); /* from zero */

	t = find(&w, 10, 6000);
	assert_true(t->born);
	assert_true(t->exited);
	assert_int_equal(t->delta.nvcsw, 2);

	t = find(&w, 14, 100);
	assert_true(t->vanished);
	assert_true(t->exited);

	assert_null(find(&w, 15, 50));
	/* Totals: every thread with known deltas (10, 11, 12, 13, 10'). */
	assert_int_equal(w.total.nvcsw, 100 + 50 + 11 + 21 + 2);
	assert_int_equal(w.total_bpf.waits, 1100 + 2050 + 10 + 20 + 1);
	assert_int_equal(w.total_bpf.wait_hist[3], 1100 + 2050 + 10 + 20 + 1);
	sched_window__free(&w);
}

/*
 * A zombie at the window's end (the run leader, not yet reaped) whose exit
 * record did not fit: listed as exited from its end record, and counted.
 * A live thread, a thread with its exit record, and a leader that was a
 * zombie already at the window's start (it called pthread_exit before) are
 * not; such a leader reaped inside the window has exited, not vanished.
 */
static void test_sched_window__zombie_without_exit_record(void **state)
{
	const uint32_t z = KHBPF_REC_EXITING | KHBPF_REC_ZOMBIE;
	struct khbpf_thread_rec base[] = {
		rec(21, 10, 390, KHBPF_REC_HAS_STATE),
		rec(23, 10, 600, z),
		rec(24, 10, 700, z),
	};
	struct khbpf_thread_rec end[] = {
		rec(20, 20, 300, z | KHBPF_REC_HAS_STATE),
		rec(21, 10, 400, KHBPF_REC_HAS_STATE),
		rec(22, 20, 500, z),
		rec(23, 10, 600, z),
	};
	struct khbpf_thread_rec ex[] = {
		rec(22, 20, 501, KHBPF_REC_EXITED | KHBPF_REC_FINAL),
	};
	struct thread_table tb = { base, 3 }, te = { end, 4 }, tx = { ex, 1 };
	struct window_opts o = { .baseline = &tb, .end = &te, .exited = &tx, .start_boot_ns = 11 };
	const struct window_thread *t;
	struct sched_window w;

	(void)state;
	assert_int_equal(sched_window__compute(&w, &o), 0);
	assert_int_equal(w.nr_threads, 5);
	assert_int_equal(w.overflowed_listed, 1);
	/* 24: a zombie at the start, reaped in the window: exited before, not vanished. */
	assert_int_equal(w.vanished_threads, 0);
	t = find(&w, 24, 10);
	assert_true(t->exited);
	assert_false(t->vanished);
	assert_int_equal(t->delta.nvcsw, 0);
	t = find(&w, 20, 20);
	assert_true(t->exited);
	assert_int_equal(t->delta.nvcsw, 301);
	assert_true(find(&w, 23, 10)->exited); /* a zombie throughout */
	assert_false(find(&w, 21, 10)->exited);
	t = find(&w, 22, 20);
	assert_true(t->exited);
	assert_int_equal(t->delta.nvcsw, 502); /* from the exit record */
	assert_int_equal(w.exited_threads, 4);
	sched_window__free(&w);
}

/* Without BPF (no exit records): a zombie at the end has exited, and no record was lost. */
static void test_sched_window__zombie_without_bpf(void **state)
{
	struct khbpf_thread_rec end[] = {
		rec(30, 0, 100, KHBPF_REC_ZOMBIE),
		rec(31, 0, 200, 0),
	};
	struct thread_table te = { end, 2 };
	struct window_opts o = { .end = &te };
	struct sched_window w;

	(void)state;
	assert_int_equal(sched_window__compute(&w, &o), 0);
	assert_int_equal(w.nr_threads, 2);
	assert_true(find(&w, 30, 0)->exited);
	assert_false(find(&w, 31, 0)->exited);
	assert_int_equal(find(&w, 30, 0)->delta.nvcsw, 101);
	assert_int_equal(w.exited_threads, 1);
	assert_int_equal(w.overflowed_listed, 0);
	sched_window__free(&w);
}

static void test_sched_window__run_mode_zero_baseline(void **state)
{
	struct khbpf_thread_rec ex[] = { rec(7, 1, 100, KHBPF_REC_EXITED) };
	struct thread_table tx = { ex, 1 };
	struct window_opts o = { .exited = &tx, .start_boot_ns = 999999 };
	struct sched_window w;

	(void)state;
	assert_int_equal(sched_window__compute(&w, &o), 0);
	assert_int_equal(w.nr_threads, 1);
	assert_true(w.threads[0].born);
	assert_int_equal(w.threads[0].delta.nvcsw, 101);
	/* No HAS_STATE: BPF fields are not added to totals. */
	assert_false(w.threads[0].has_bpf);
	assert_int_equal(w.total_bpf.waits, 0);
	sched_window__free(&w);
}

/*
 * serve's later windows: the baseline is the previous window's end, whose
 * BPF counts (since serve started) are taken off; a baseline without task
 * storage takes nothing off.
 */
static void test_sched_window__bpf_counts_from_baseline(void **state)
{
	struct khbpf_thread_rec base[] = { rec(5, 1, 100, KHBPF_REC_HAS_STATE), rec(6, 1, 100, 0) };
	struct khbpf_thread_rec end[] = { rec(5, 1, 130, KHBPF_REC_HAS_STATE),
					  rec(6, 1, 150, KHBPF_REC_HAS_STATE) };
	struct thread_table tb = { base, 2 }, te = { end, 2 };
	struct window_opts o = { .baseline = &tb, .end = &te, .start_boot_ns = 1000 };
	const struct window_thread *t;
	struct sched_window w;

	(void)state;
	assert_int_equal(sched_window__compute(&w, &o), 0);
	t = find(&w, 5, 1);
	assert_non_null(t);
	assert_int_equal(t->bpf.waits, 30);
	assert_int_equal(t->bpf.wait_hist[3], 30);
	assert_int_equal(t->bpf.mig_class[KHBPF_MIG_LLC], 30);
	assert_int_equal(t->delta.nvcsw, 30);
	t = find(&w, 6, 1);
	assert_non_null(t);
	assert_int_equal(t->bpf.waits, 150);
	assert_int_equal(w.total_bpf.waits, 180);
	sched_window__free(&w);
}

/*
 * Blocked time: the window's is the end's less the baseline's, cause by
 * cause (the baseline holds the part of a stretch before the window);
 * unattributed time is signed and may fall; the totals add up.
 */
static void test_sched_window__blocked_from_baseline(void **state)
{
	struct khbpf_thread_rec base[] = { rec(5, 1, 100, KHBPF_REC_HAS_STATE) };
	struct khbpf_thread_rec end[] = { rec(5, 1, 130, KHBPF_REC_HAS_STATE),
					  rec(7, 2000, 0, KHBPF_REC_HAS_STATE) };
	struct thread_table tb = { base, 1 }, te = { end, 2 };
	struct window_opts o = { .baseline = &tb, .end = &te, .start_boot_ns = 1000 };
	const struct window_thread *t;
	struct sched_window w;

	(void)state;
	base[0].b.blocked.ns[KHBPF_BLOCK_LOCK] = 1000;
	base[0].b.blocked.count[KHBPF_BLOCK_LOCK] = 1;
	base[0].b.offcpu_unattributed_ns = 40;
	end[0].b.blocked.ns[KHBPF_BLOCK_LOCK] = 5000;
	end[0].b.blocked.count[KHBPF_BLOCK_LOCK] = 3;
	end[0].b.blocked.ns[KHBPF_BLOCK_IO] = 700;
	end[0].b.offcpu_unattributed_ns = -25;
	end[0].b.offcpu_unseen = 2;
	end[1].b.blocked.ns[KHBPF_BLOCK_SLEEP] = 300;
	end[1].b.offcpu_unattributed_ns = 5;
	assert_int_equal(sched_window__compute(&w, &o), 0);
	t = find(&w, 5, 1);
	assert_non_null(t);
	assert_int_equal(t->bpf.blocked.ns[KHBPF_BLOCK_LOCK], 4000);
	assert_int_equal(t->bpf.blocked.count[KHBPF_BLOCK_LOCK], 2);
	assert_int_equal(t->bpf.blocked.ns[KHBPF_BLOCK_IO], 700);
	assert_int_equal(t->bpf.offcpu_unattributed_ns, -65);
	assert_int_equal(t->bpf.offcpu_unseen, 2);
	assert_int_equal(w.total_bpf.blocked.ns[KHBPF_BLOCK_LOCK], 4000);
	assert_int_equal(w.total_bpf.blocked.ns[KHBPF_BLOCK_SLEEP], 300);
	assert_int_equal(w.total_bpf.offcpu_unattributed_ns, -60);
	sched_window__free(&w);
}

static void test_sched_window__saturates_and_bounds(void **state)
{
	struct khbpf_thread_rec base[] = { rec(1, 0, 50, 0), rec(2, 0, 0, 0), rec(3, 0, 0, 0) };
	struct khbpf_thread_rec end[] = { rec(1, 0, 10, 0), rec(2, 0, UINT64_MAX - 10, 0),
					  rec(3, 0, UINT64_MAX - 10, 0) };
	struct thread_table tb = { base, 3 }, te = { end, 3 };
	struct window_opts o = { .baseline = &tb, .end = &te, .max_threads = 2 };
	struct sched_window w;

	(void)state;
	assert_int_equal(sched_window__compute(&w, &o), 0);
	/* A counter going backwards (cannot happen in the kernel) saturates at 0. */
	assert_int_equal(w.threads[0].delta.nvcsw, 0);
	assert_int_equal(w.nr_threads, 2);
	assert_int_equal(w.dropped_threads, 1);
	/* Dropped threads still count in the totals, which saturate. */
	assert_true(w.total.nvcsw == UINT64_MAX);
	sched_window__free(&w);

	assert_int_equal(sched_window__compute(&w, &(struct window_opts){ 0 }), 0);
	assert_int_equal(w.nr_threads, 0);
	sched_window__free(&w);
}

static void test_sched_window__slot_bounds(void **state)
{
	unsigned int i;

	(void)state;
	assert_int_equal(rq_slot__lower(0), 0);
	assert_int_equal(rq_slot__upper(0), 1);
	assert_int_equal(rq_slot__lower(10), 1024);
	assert_int_equal(rq_slot__upper(10), 2047);
	assert_true(rq_slot__upper(KHBPF_RQ_SLOTS - 1) == UINT64_MAX);
	/* Contiguous buckets, and each bound maps back to its own slot. */
	for (i = 0; i + 1 < KHBPF_RQ_SLOTS; i++) {
		assert_int_equal(rq_slot__upper(i) + 1, rq_slot__lower(i + 1));
		assert_int_equal(khbpf_rq_slot(rq_slot__lower(i)), i);
		assert_int_equal(khbpf_rq_slot(rq_slot__upper(i)), i);
	}
	/* Every power of two and its neighbours, to the last slot's open end. */
	for (i = 1; i < 64; i++) {
		__u64 p = 1ULL << i;
		__u32 want = i < KHBPF_RQ_SLOTS ? i : KHBPF_RQ_SLOTS - 1;
		__u32 below = i - 1 < KHBPF_RQ_SLOTS ? i - 1 : KHBPF_RQ_SLOTS - 1;

		assert_int_equal(khbpf_rq_slot(p), want);
		assert_int_equal(khbpf_rq_slot(p + (p >> 1)), want);
		assert_int_equal(khbpf_rq_slot(p - 1), below);
	}
	assert_int_equal(khbpf_rq_slot(UINT64_MAX), KHBPF_RQ_SLOTS - 1);
}

/* A tid reused by a later thread: the first of them; absent tids: where they would go. */
static void test_sched_window__first_tid(void **state)
{
	struct window_thread t[5] = {
		{ .tid = 3 }, { .tid = 7 }, { .tid = 7 }, { .tid = 9 }, { .tid = 12 }
	};
	struct sched_window w = { .threads = t, .nr_threads = 5 };
	struct sched_window none = { 0 };

	(void)state;
	assert_int_equal(sched_window__first_tid(&w, 7), 1);
	assert_int_equal(sched_window__first_tid(&w, 3), 0);
	assert_int_equal(sched_window__first_tid(&w, 12), 4);
	assert_int_equal(sched_window__first_tid(&w, 1), 0);
	assert_int_equal(sched_window__first_tid(&w, 8), 3);
	assert_int_equal(sched_window__first_tid(&w, 13), 5);
	assert_int_equal(sched_window__first_tid(&none, 7), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sched_window__merge_cases),
		cmocka_unit_test(test_sched_window__run_mode_zero_baseline),
		cmocka_unit_test(test_sched_window__zombie_without_exit_record),
		cmocka_unit_test(test_sched_window__zombie_without_bpf),
		cmocka_unit_test(test_sched_window__saturates_and_bounds),
		cmocka_unit_test(test_sched_window__bpf_counts_from_baseline),
		cmocka_unit_test(test_sched_window__blocked_from_baseline),
		cmocka_unit_test(test_sched_window__slot_bounds),
		cmocka_unit_test(test_sched_window__first_tid),
	};

	return cmocka_run_group_tests_name("sched_window", tests, NULL, NULL);
}

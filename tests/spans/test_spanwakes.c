// SPDX-License-Identifier: MIT
/*
 * spanwakes: a span record's wakeups merged by waker, its largest kept and
 * the rest summed, named from the threads' wakers, and a metric's wakers
 * ranked; every list adds up to the blocked time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "spans/spanwakes.h"

static struct khbpf_span_wake wake(uint32_t kind, uint32_t tid, uint64_t ns, uint64_t at)
{
	return (struct khbpf_span_wake){
		.ns = ns, .wake_ns = at, .waker = KHBPF_WAKE_WAKER(kind, tid), .tgid = tid ? 100 : 0
	};
}

/* Names for threads 11, 12, ... as the threads' wakers table has them. */
static void names(struct span_wakes *w, const uint32_t *tids, size_t n)
{
	struct waker_entry e[16];
	size_t i;

	memset(e, 0, sizeof(e));
	for (i = 0; i < n; i++) {
		e[i].key.kind = KHBPF_WAKER_TASK;
		e[i].key.waker_tid = tids[i];
		e[i].key.tid = 1;
		e[i].val.waker_tgid = 100;
		snprintf(e[i].val.comm, sizeof(e[i].val.comm), "t%u", tids[i]);
	}
	/* And one interrupt: it names nobody. */
	e[n].key.kind = KHBPF_WAKER_INTERRUPT;
	assert_int_equal(span_wakes__seal(w, e, n + 1), 0);
}

static struct blocked_evidence blocked(uint64_t ns)
{
	struct blocked_evidence b = { .recorded = true };

	b.ns[0] = ns;
	return b;
}

static void test_spanwakes__merged_ranked_and_summed(void **state)
{
	struct khbpf_span_wakes k = { 0 };
	struct span_wakes w = { 0 };
	const struct span_wakes_kept *kept;
	struct waker_row rows[SPAN_RECORD_WAKERS];
	struct blocked_evidence b = blocked(10000);
	const uint32_t tids[] = { 11, 12, 13, 14, 15 };

	(void)state;
	/* Newest first, as the kernel gives them: 11 twice, its latest at 900. */
	k.wake[k.nr++] = wake(KHBPF_WAKER_TASK, 11, 1000, 900);
	k.wake[k.nr++] = wake(KHBPF_WAKER_TASK, 12, 300, 800);
	k.wake[k.nr++] = wake(KHBPF_WAKER_TIMER, 0, 2000, 700);
	k.wake[k.nr++] = wake(KHBPF_WAKER_TASK, 11, 1500, 600);
	k.wake[k.nr++] = wake(KHBPF_WAKER_TASK, 13, 200, 500);
	k.wake[k.nr++] = wake(KHBPF_WAKER_TASK, 14, 100, 400);
	k.wake[k.nr++] = wake(KHBPF_WAKER_TASK, 15, 50, 300);
	assert_int_equal(span_wakes__add(&w, 42, &k), 0);
	names(&w, tids, 5);
	kept = span_wakes__find(&w, 42);
	assert_non_null(kept);
	assert_null(span_wakes__find(&w, 43));
	span_wakes__evidence(&w, kept, 100, rows, &b);
	assert_true(b.has_wakers);
	assert_int_equal(b.nr_wakers, 4);
	assert_int_equal(rows[0].kind, WAKER_THREAD);
	assert_int_equal(rows[0].tid, 11);
	assert_int_equal(rows[0].ns, 2500);
	assert_int_equal(rows[0].count, 2);
	assert_string_equal(rows[0].comm, "t11");
	assert_true(rows[0].has_last_wakeup);
	assert_int_equal(rows[0].last_wakeup_ns, 800); /* 900, from the window's start at 100 */
	assert_int_equal(rows[1].kind, WAKER_TIMER);
	assert_int_equal(rows[1].ns, 2000);
	assert_int_equal(rows[2].tid, 12);
	assert_int_equal(rows[3].tid, 13);
	/* 14 and 15 are the others; the rest of 10000 had no waker. */
	assert_int_equal(b.other_wakers_ns, 150);
	assert_int_equal(b.other_wakers_count, 2);
	assert_int_equal(b.without_waker_ns, 10000 - 2500 - 2000 - 300 - 200 - 150);
	span_wakes__free(&w);
}

static void test_spanwakes__unnamed_thread_is_among_others(void **state)
{
	struct khbpf_span_wakes k = { 0 };
	struct span_wakes w = { 0 };
	struct waker_row rows[SPAN_RECORD_WAKERS];
	struct blocked_evidence b = blocked(1000);
	const uint32_t tids[] = { 11 };

	(void)state;
	k.wake[k.nr++] = wake(KHBPF_WAKER_TASK, 99, 600, 50);
	k.wake[k.nr++] = wake(KHBPF_WAKER_TASK, 11, 300, 40);
	assert_int_equal(span_wakes__add(&w, 7, &k), 0);
	names(&w, tids, 1);
	span_wakes__evidence(&w, span_wakes__find(&w, 7), 0, rows, &b);
	assert_int_equal(b.nr_wakers, 1);
	assert_int_equal(rows[0].tid, 11);
	assert_int_equal(b.other_wakers_ns, 600);
	assert_int_equal(b.other_wakers_count, 1);
	assert_int_equal(b.without_waker_ns, 100);
	span_wakes__free(&w);
}

/* A span whose record had no wakeups: an empty list, all of it without a waker. */
static void test_spanwakes__none(void **state)
{
	struct span_wakes w = { 0 };
	struct waker_row rows[SPAN_RECORD_WAKERS];
	struct blocked_evidence b = blocked(500);

	(void)state;
	names(&w, NULL, 0);
	span_wakes__evidence(&w, NULL, 0, rows, &b);
	assert_true(b.has_wakers);
	assert_int_equal(b.nr_wakers, 0);
	assert_int_equal(b.other_wakers_ns, 0);
	assert_int_equal(b.without_waker_ns, 500);
	span_wakes__free(&w);
}

/* Records are found by span id whatever order they came in. */
static void test_spanwakes__many_records(void **state)
{
	struct khbpf_span_wakes k = { .nr = 1 };
	struct span_wakes w = { 0 };
	uint64_t i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		k.wake[0] = wake(KHBPF_WAKER_TIMER, 0, i + 1, 0);
		assert_int_equal(span_wakes__add(&w, (i * 7919) % 1000 + 1, &k), 0);
	}
	names(&w, NULL, 0);
	for (i = 0; i < 1000; i++) {
		const struct span_wakes_kept *kept = span_wakes__find(&w, (i * 7919) % 1000 + 1);

		assert_non_null(kept);
		assert_int_equal(kept->w[0].ns, i + 1);
	}
	assert_null(span_wakes__find(&w, 0));
	assert_null(span_wakes__find(&w, 1001));
	span_wakes__free(&w);
}

static void test_spanwakes__metric(void **state)
{
	struct span_waker_entry e[10];
	struct waker_row rows[10];
	struct span_wakes w = { 0 };
	struct blocked_evidence b = blocked(100000);
	const uint32_t tids[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	size_t i;

	(void)state;
	memset(e, 0, sizeof(e));
	for (i = 0; i < 9; i++) {
		e[i].key.kind = KHBPF_WAKER_TASK;
		e[i].key.waker_tid = (uint32_t)i + 1; /* thread 9 has no name */
		e[i].val.ns = 1000 * (i + 1);
		e[i].val.count = 1;
		e[i].val.waker_tgid = 100;
	}
	e[9].key.kind = KHBPF_WAKER_TIMER;
	e[9].val.ns = 500;
	e[9].val.count = 5;
	names(&w, tids, 8);
	span_wakes__metric(&w, e, 10, rows, &b);
	assert_int_equal(b.nr_wakers, 8);
	assert_int_equal(rows[0].tid, 8);
	assert_string_equal(rows[0].comm, "t8");
	assert_int_equal(rows[0].ns, 8000);
	assert_false(rows[0].has_last_wakeup);
	assert_int_equal(rows[7].tid, 1);
	/* Beyond the 8 largest: the timer (500); and thread 9 (9000), unnamed. */
	assert_int_equal(b.other_wakers_ns, 500 + 9000);
	assert_int_equal(b.other_wakers_count, 5 + 1);
	assert_int_equal(b.without_waker_ns, 100000 - 36000 - 500 - 9000);
	span_wakes__free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spanwakes__merged_ranked_and_summed),
		cmocka_unit_test(test_spanwakes__unnamed_thread_is_among_others),
		cmocka_unit_test(test_spanwakes__none),
		cmocka_unit_test(test_spanwakes__many_records),
		cmocka_unit_test(test_spanwakes__metric),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

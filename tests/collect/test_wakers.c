// SPDX-License-Identifier: MIT
/*
 * wakers: ranking a thread's wakers, summing the rest, what no waker
 * explains, and merging a process's by waker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "collect/wakers.h"

static struct waker_row row(uint32_t kind, uint32_t tid, uint64_t ns, uint64_t count)
{
	struct waker_row r = { .kind = kind, .tid = tid, .pid = tid, .ns = ns, .count = count };

	if (kind == KHBPF_WAKER_TASK)
		strcpy(r.comm, "w");
	return r;
}

static void test_wakers__row_of_entry(void **state)
{
	struct waker_entry e = { .key = { .tid = 10, .waker_tid = 11, .kind = KHBPF_WAKER_TASK },
				 .val = { .ns = 500, .count = 2, .waker_tgid = 9 } };
	struct waker_row r;

	(void)state;
	memcpy(e.val.comm, "0123456789abcdef", 16); /* no NUL: cut */
	wakers__row(&e, &r);
	assert_int_equal(r.kind, KHBPF_WAKER_TASK);
	assert_int_equal(r.tid, 11);
	assert_int_equal(r.pid, 9);
	assert_string_equal(r.comm, "0123456789abcde");
	assert_int_equal(r.ns, 500);
	assert_int_equal(r.count, 2);
	e.key.kind = KHBPF_WAKER_TIMER;
	wakers__row(&e, &r);
	assert_int_equal(r.tid, 0);
	assert_string_equal(r.comm, "");
}

/* The top `max` by ns are listed; the others are summed; the rest of the time has no waker. */
static void test_wakers__rank_lists_and_sums(void **state)
{
	struct waker_row rows[] = {
		row(KHBPF_WAKER_TASK, 5, 100, 1), row(KHBPF_WAKER_TIMER, 0, 900, 3),
		row(KHBPF_WAKER_TASK, 7, 300, 2), row(KHBPF_WAKER_INTERRUPT, 0, 50, 4),
		row(KHBPF_WAKER_TASK, 8, 300, 1),
	};
	struct blocked_evidence b = { .recorded = true, .ns = { 1000, 700 } };

	(void)state;
	wakers__rank(rows, 5, 3, &b);
	assert_true(b.has_wakers);
	assert_int_equal(b.nr_wakers, 3);
	assert_int_equal(b.wakers[0].kind, KHBPF_WAKER_TIMER);
	/* A tie in ns: the lower tid first. */
	assert_int_equal(b.wakers[1].tid, 7);
	assert_int_equal(b.wakers[2].tid, 8);
	assert_int_equal(b.other_wakers_ns, 150);
	assert_int_equal(b.other_wakers_count, 5);
	assert_int_equal(b.without_waker_ns, 1700 - 1650);
}

/* Wakers that explain more than the blocked time (they cannot): nothing is negative. */
static void test_wakers__rank_without_waker_not_negative(void **state)
{
	struct waker_row rows[] = { row(KHBPF_WAKER_TASK, 5, 100, 1) };
	struct blocked_evidence b = { .recorded = true, .ns = { 60 } };

	(void)state;
	wakers__rank(rows, 1, 8, &b);
	assert_int_equal(b.nr_wakers, 1);
	assert_int_equal(b.without_waker_ns, 0);
	wakers__rank(rows, 0, 8, &b);
	assert_int_equal(b.nr_wakers, 0);
	assert_int_equal(b.without_waker_ns, 60);
}

/* A process's: the same waker of several threads is one row. */
static void test_wakers__merge_by_waker(void **state)
{
	struct waker_row rows[] = {
		row(KHBPF_WAKER_TASK, 5, 100, 1), row(KHBPF_WAKER_TIMER, 0, 10, 1),
		row(KHBPF_WAKER_TASK, 6, 20, 1),  row(KHBPF_WAKER_TASK, 5, 30, 2),
		row(KHBPF_WAKER_TIMER, 0, 5, 1),
	};
	size_t n;

	(void)state;
	n = wakers__merge(rows, 5);
	assert_int_equal(n, 3);
	assert_int_equal(rows[0].kind, KHBPF_WAKER_TASK);
	assert_int_equal(rows[0].tid, 5);
	assert_int_equal(rows[0].ns, 130);
	assert_int_equal(rows[0].count, 3);
	assert_int_equal(rows[1].tid, 6);
	assert_int_equal(rows[2].kind, KHBPF_WAKER_TIMER);
	assert_int_equal(rows[2].ns, 15);
	assert_int_equal(wakers__merge(rows, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wakers__row_of_entry),
		cmocka_unit_test(test_wakers__rank_lists_and_sums),
		cmocka_unit_test(test_wakers__rank_without_waker_not_negative),
		cmocka_unit_test(test_wakers__merge_by_waker),
	};

	return cmocka_run_group_tests_name("wakers", tests, NULL, NULL);
}

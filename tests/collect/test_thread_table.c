// SPDX-License-Identifier: MIT
/* Thread records by identity (user/collect/thread_table.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "collect/thread_table.h"

static struct khbpf_thread_rec rec(uint32_t tid, uint64_t start)
{
	struct khbpf_thread_rec r;

	memset(&r, 0, sizeof(r));
	r.tid = tid;
	r.start_time = start;
	return r;
}

/* Pushed out of order, found by (tid, start time) once sorted; a reused tid is another thread. */
static void test_thread_table__push_sort_find(void **state)
{
	struct thread_table t = { 0 };
	struct khbpf_thread_rec r;
	size_t cap = 0, i;
	const uint32_t tids[] = { 40, 7, 300, 7, 12 };
	const uint64_t starts[] = { 5, 900, 1, 100, 3 };

	(void)state;
	for (i = 0; i < 5; i++) {
		r = rec(tids[i], starts[i]);
		assert_int_equal(thread_table__push(&t, &cap, &r), 0);
	}
	/* Past the first allocation: the table grows and keeps every record. */
	for (i = 0; i < 300; i++) {
		r = rec(1000 + (uint32_t)i, 1);
		assert_int_equal(thread_table__push(&t, &cap, &r), 0);
	}
	assert_int_equal(t.nr, 305);
	thread_table__sort(&t);
	for (i = 1; i < t.nr; i++)
		assert_true(t.recs[i - 1].tid < t.recs[i].tid ||
			    (t.recs[i - 1].tid == t.recs[i].tid &&
			     t.recs[i - 1].start_time < t.recs[i].start_time));
	assert_int_equal(thread_table__find(&t, 7, 100)->start_time, 100);
	assert_int_equal(thread_table__find(&t, 7, 900)->start_time, 900);
	assert_int_equal(thread_table__find(&t, 1299, 1)->tid, 1299);
	assert_null(thread_table__find(&t, 7, 101));
	assert_null(thread_table__find(&t, 8, 100));
	thread_table__free(&t);
	assert_int_equal(t.nr, 0);
	assert_null(t.recs);
	assert_null(thread_table__find(&t, 7, 100));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread_table__push_sort_find),
	};

	return cmocka_run_group_tests_name("thread_table", tests, NULL, NULL);
}

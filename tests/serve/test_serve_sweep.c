// SPDX-License-Identifier: MIT
/* serve_sweep: marks follow activity; verdicts age out, then evict the longest idle. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "serve/serve_sweep.h"

/* A mark moves only when the activity changed (or the entry is new). */
static void test_serve_sweep__mark(void **state)
{
	struct sweep_mark old = { .activity = 5, .changed_mono = 100 }, m;

	(void)state;
	serve_sweep__mark(&m, &old, 5, 900);
	assert_int_equal(m.changed_mono, 100);
	serve_sweep__mark(&m, &old, 6, 900);
	assert_int_equal(m.activity, 6);
	assert_int_equal(m.changed_mono, 900);
	serve_sweep__mark(&m, NULL, 5, 700);
	assert_int_equal(m.changed_mono, 700);
}

/*
 * Bound 10: idle for max_age goes (aged); of the 9 left, past 9/10 the
 * longest idle go until 7 (3/4 of 10, rounded down) are left.
 */
static void test_serve_sweep__decide(void **state)
{
	struct sweep_mark m[10];
	const struct sweep_mark *p[10];
	uint8_t v[10];
	size_t i, evicted = 0;

	(void)state;
	for (i = 0; i < 10; i++) {
		m[i] = (struct sweep_mark){ .activity = i, .changed_mono = 1000 + i * 10 };
		p[i] = &m[i];
	}
	m[4].changed_mono = 0; /* idle since 0: aged at 1200 with max_age 1200 */
	assert_int_equal(serve_sweep__decide(p, 10, 1200, 1200, 10, v), 0);
	assert_int_equal(v[4], SWEEP_AGED);
	/* 9 left > 9: nothing evicted yet. */
	for (i = 0; i < 10; i++)
		evicted += v[i] == SWEEP_EVICT;
	assert_int_equal(evicted, 0);
	m[4].changed_mono = 1005; /* now 10 live: the two longest idle (0, 1) go */
	assert_int_equal(serve_sweep__decide(p, 10, 1200, 1200, 10, v), 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(v[i], i == 0 || i == 4 || i == 1 ? SWEEP_EVICT : SWEEP_KEEP);
	/* Default max_age (0): 5 minutes. */
	assert_int_equal(serve_sweep__decide(p, 10, 1200, 0, 100, v), 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(v[i], SWEEP_KEEP);
	assert_int_equal(serve_sweep__decide(p, 0, 1200, 0, 100, v), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serve_sweep__mark),
		cmocka_unit_test(test_serve_sweep__decide),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * sched_read: thread tables, hash map dumps against a real BPF map, and
 * program role names. The iterators and the exited map against the kernel
 * are in test_sched_collector.c, which loads a whole collector.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <bpf/bpf.h>

#include "collect/bpfdump.h"
#include "collect/sched_collector.h"
#include "collect/sched_collector_priv.h"
#include "testutil.h"

/* A kernel's program variant is shown under the name of the program it replaces. */
static void test_sched_read__role_name(void **state)
{
	char n[32];

	(void)state;
	sched_collector__role_name("khbpf_sched_switch_nostate", n, sizeof(n));
	assert_string_equal(n, "khbpf_sched_switch");
	sched_collector__role_name("khbpf_span_exit_nofetch", n, sizeof(n));
	assert_string_equal(n, "khbpf_span_exit");
	sched_collector__role_name("khbpf_sched_switch", n, sizeof(n));
	assert_string_equal(n, "khbpf_sched_switch");
	sched_collector__role_name("khbpf_sched_switch_plain_folds_nostate", n, sizeof(n));
	assert_string_equal(n, "khbpf_sched_switch");
	sched_collector__role_name("khbpf_sched_switch_plain_folds", n, sizeof(n));
	assert_string_equal(n, "khbpf_sched_switch");
	sched_collector__role_name("_nostate", n, sizeof(n));
	assert_string_equal(n, "_nostate");
}

/* Sorted by (tid, start_time); a thread id reused by a later thread is another record. */
static void test_sched_read__thread_table(void **state)
{
	static const struct {
		uint32_t tid;
		uint64_t start;
	} in[] = { { 30, 5 }, { 10, 9 }, { 20, 1 }, { 10, 2 }, { 40, 0 } };
	struct thread_table t = { 0 };
	const struct khbpf_thread_rec *r;
	size_t i;

	(void)state;
	assert_null(thread_table__find(&t, 10, 2));
	t.recs = calloc(sizeof(in) / sizeof(in[0]), sizeof(*t.recs));
	assert_non_null(t.recs);
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		t.recs[i].tid = in[i].tid;
		t.recs[i].start_time = in[i].start;
		t.recs[i].k.nvcsw = i;
	}
	t.nr = i;
	thread_table__sort(&t);
	for (i = 1; i < t.nr; i++)
		assert_true(t.recs[i - 1].tid < t.recs[i].tid ||
			    (t.recs[i - 1].tid == t.recs[i].tid &&
			     t.recs[i - 1].start_time < t.recs[i].start_time));
	r = thread_table__find(&t, 10, 9);
	assert_non_null(r);
	assert_int_equal(r->k.nvcsw, 1);
	r = thread_table__find(&t, 10, 2);
	assert_non_null(r);
	assert_int_equal(r->k.nvcsw, 3);
	assert_null(thread_table__find(&t, 10, 3));
	assert_null(thread_table__find(&t, 50, 0));
	thread_table__free(&t);
	assert_null(t.recs);
	assert_int_equal(t.nr, 0);
}

struct dumped {
	uint32_t key;
	uint32_t pad;
	uint64_t value;
};

/* Every entry of a real hash map, key and value in one record. */
static void test_sched_read__map_dump(void **state)
{
	struct dumped *v = NULL;
	uint64_t seen = 0, val;
	uint32_t k;
	size_t nr = 99, i;
	int fd;

	(void)state;
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "khbpf_test_dump", sizeof(k), sizeof(val), 300,
			    NULL);
	require_or_skip(fd >= 0, "cannot create a BPF hash map (needs root or CAP_BPF)");
	assert_int_equal(bpfdump__map(fd, sizeof(k), 8, sizeof(*v), (void **)&v, &nr), 0);
	assert_int_equal(nr, 0);
	free(v);
	for (k = 1; k <= 200; k++) {
		val = (uint64_t)k * 1000;
		assert_int_equal(bpf_map_update_elem(fd, &k, &val, BPF_ANY), 0);
	}
	assert_int_equal(bpfdump__map(fd, sizeof(k), 8, sizeof(*v), (void **)&v, &nr), 0);
	assert_int_equal(nr, 200);
	for (i = 0; i < nr; i++) {
		assert_int_equal(v[i].value, (uint64_t)v[i].key * 1000);
		assert_true(v[i].key >= 1 && v[i].key <= 200);
		seen += v[i].key;
	}
	assert_int_equal(seen, 200 * 201 / 2);
	free(v);
	assert_int_equal(bpfdump__map(fd, 129, 8, 144, (void **)&v, &nr), -E2BIG);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sched_read__role_name),
		cmocka_unit_test(test_sched_read__thread_table),
		cmocka_unit_test(test_sched_read__map_dump),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

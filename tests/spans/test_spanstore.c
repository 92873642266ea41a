// SPDX-License-Identifier: MIT
/* The loader's span record store (user/spans/spanstore.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "spans/spanstore.h"

/* Records across several chunks come back as written; the bound is exact. */
static void test_spanstore__chunks_and_bound(void **state)
{
	const size_t per = SPAN_STORE_CHUNK / sizeof(struct khbpf_span_event);
	const size_t max = 2 * per + per / 2;
	struct span_store s;
	size_t i;

	(void)state;
	span_store__init(&s, max);
	assert_null(s.recs);
	for (i = 0; i < max; i++) {
		struct khbpf_span_event *e = span_store__add(&s);

		assert_non_null(e);
		memset(e, 0, sizeof(*e));
		e->span_id = i;
		e->tid = (uint32_t)(i * 7);
	}
	assert_true(s.mapped);
	assert_int_equal(s.nr, max);
	assert_int_equal(s.cap, max);
	assert_null(span_store__add(&s));
	assert_int_equal(s.nr, max);
	for (i = 0; i < max; i++) {
		assert_int_equal(s.recs[i].span_id, i);
		assert_int_equal(s.recs[i].tid, (uint32_t)(i * 7));
	}
	span_store__free(&s);
	assert_null(s.recs);
	assert_int_equal(s.nr, 0);
	assert_int_equal(s.max, max);
}

/* Memory is made a chunk at a time, not for the whole bound at once. */
static void test_spanstore__memory_follows_records(void **state)
{
	const size_t per = SPAN_STORE_CHUNK / sizeof(struct khbpf_span_event);
	struct span_store s;

	(void)state;
	span_store__init(&s, 1000000);
	assert_non_null(span_store__add(&s));
	assert_int_equal(s.cap, per);
	span_store__free(&s);
}

/* No address range for the bound (here: it cannot be expressed): realloc, as much as is kept. */
static void test_spanstore__heap_fallback(void **state)
{
	struct span_store s;
	size_t i;

	(void)state;
	span_store__init(&s, SIZE_MAX);
	for (i = 0; i < 1000; i++) {
		struct khbpf_span_event *e = span_store__add(&s);

		assert_non_null(e);
		e->span_id = i;
	}
	assert_false(s.mapped);
	assert_true(s.cap >= 1000 && s.cap < 2048);
	for (i = 0; i < 1000; i++)
		assert_int_equal(s.recs[i].span_id, i);
	span_store__free(&s);
	assert_null(s.recs);
}

/* A store for no records keeps none. */
static void test_spanstore__empty_bound(void **state)
{
	struct span_store s;

	(void)state;
	span_store__init(&s, 0);
	assert_null(span_store__add(&s));
	span_store__free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spanstore__chunks_and_bound),
		cmocka_unit_test(test_spanstore__memory_follows_records),
		cmocka_unit_test(test_spanstore__heap_fallback),
		cmocka_unit_test(test_spanstore__empty_bound),
	};

	return cmocka_run_group_tests_name("spanstore", tests, NULL, NULL);
}

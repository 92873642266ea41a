// SPDX-License-Identifier: MIT
/* report_sections: each section of a document into the model. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "report/report_loader.h"
#include "report_testdoc.h"

static void test_report_sections__sched_fixture(void **state)
{
	struct report_doc *d = fixture_load("sched.json");
	const struct report_gap *g;

	(void)state;
	assert_int_equal(d->nr_threads, 10);
	assert_string_equal(d->threads[9].comm, "demo-pong");
	assert_int_equal(d->nr_spans, 0);
	assert_false(d->spans_recorded);
	assert_int_equal(d->spans_reason, EV_GAP_COLLECTOR_DISABLED);
	assert_true(d->exit_recorded);
	assert_int_equal(d->exit_value, 0);
	assert_int_equal(d->rq.nr_buckets, 17);
	assert_int_equal(d->rq.waits, 56718);
	assert_int_equal(d->rq.buckets[2].lower, 512);
	assert_int_equal(d->rq.buckets[2].count, 49334);
	assert_int_equal(d->totals.voluntary_context_switches.ev.value, 53356);
	g = gap(d, "hardware.value.topology.affinity_cpus");
	assert_int_equal(g->reason, EV_GAP_UNAVAILABLE);
	assert_non_null(strstr(g->hint, "exited"));
	g = gap(d, "hardware.value.counters.cycles");
	assert_int_equal(g->reason, EV_GAP_UNSUPPORTED);
	assert_non_null(strstr(g->hint, "PMU"));
	report_doc__free(d);
}

/* The sections of a tree read directly; the first missing member stops the load. */
static void test_report_sections__direct(void **state)
{
	struct report_doc *d = calloc(1, sizeof(*d));
	char *text = testdoc(1000, TESTDOC_THREAD(7, "w"), "", "");
	char err[256] = "";
	struct loader ld = { .doc = d, .err = err, .errlen = sizeof(err) };
	struct json_object *target;

	(void)state;
	assert_non_null(d);
	d->root = json_tokener_parse(text);
	assert_non_null(d->root);
	loader__load_sections(&ld, d->root);
	assert_int_equal(ld.failed, 0);
	assert_int_equal(d->wall_ns, 1000);
	assert_int_equal(d->nr_threads, 1);
	assert_int_equal(d->threads[0].tid, 7);
	assert_string_equal(d->threads[0].comm, "w");
	report_doc__free(d);

	d = calloc(1, sizeof(*d));
	assert_non_null(d);
	ld = (struct loader){ .doc = d, .err = err, .errlen = sizeof(err) };
	d->root = json_tokener_parse(text);
	assert_true(json_object_object_get_ex(d->root, "target", &target));
	json_object_object_del(target, "pid");
	loader__load_sections(&ld, d->root);
	assert_int_equal(ld.failed, -EPROTO);
	assert_string_equal(err, "target.pid is missing");
	report_doc__free(d);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_sections__sched_fixture),
		cmocka_unit_test(test_report_sections__direct),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

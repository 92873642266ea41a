// SPDX-License-Identifier: MIT
/* report_gaps: the unavailable fields of a document, by path. */
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

/* Hand-made from a /proc-fallback run: every collector and most fields gapped. */
static void test_report_gaps__fixture(void **state)
{
	struct report_doc *d = fixture_load("gaps.json");
	const struct report_gap *g;

	(void)state;
	assert_int_equal(d->gap_fields, 61);
	assert_int_equal(d->nr_gaps, 45);
	assert_int_equal(d->nr_collectors, 5);
	assert_null(d->exe);
	assert_false(d->exit_recorded);
	assert_false(d->rq.recorded);
	assert_int_equal(d->rq.reason, EV_GAP_PERMISSION_DENIED);
	assert_false(d->spans_recorded);
	assert_int_equal(d->spans_reason, EV_GAP_PERMISSION_DENIED);
	assert_string_equal(d->threads[1].comm, "<script>&\"'x");
	assert_false(d->threads[1].on_cpu_ns.ev.recorded);
	assert_int_equal(d->nr_failed_probes, 1);
	assert_string_equal(d->failed_probes[0].symbol, "parse_*");

	g = gap(d, "threads[*].on_cpu_ns");
	assert_int_equal(g->count, 3);
	assert_int_equal(g->reason, EV_GAP_UNAVAILABLE);
	g = gap(d, "target.exe");
	assert_int_equal(g->reason, EV_GAP_PERMISSION_DENIED);
	g = gap(d, "hardware.value.utilization.threads[0].utilization_milli");
	assert_int_equal(g->reason, EV_GAP_LEGACY_V1_NOT_RECORDED);
	assert_non_null(strstr(g->hint, "current khbpf"));
	g = gap(d, "hardware.value.counters.stalled_cycles_memory");
	assert_int_equal(g->reason, EV_GAP_UNSUPPORTED);

	assert_int_equal(d->nr_losses, 2);
	assert_string_equal(d->losses[0].name, "threads_vanished");
	assert_int_equal(d->losses[0].value, 1);
	assert_string_equal(d->losses[1].name, "proc_read_errors");
	assert_int_equal(d->losses[1].value, 2);
	report_doc__free(d);
}

/* The walk itself, on a tree: one gap by its path, several by their [*] pattern. */
static void test_report_gaps__walk(void **state)
{
	struct report_doc *d = calloc(1, sizeof(*d));
	char err[128] = "";
	struct loader ld = { .doc = d, .err = err, .errlen = sizeof(err) };
	const struct report_gap *g;

	(void)state;
	assert_non_null(d);
	d->root = json_tokener_parse(
		"{\"a\":[{\"x\":{\"status\":\"unavailable\",\"reason\":\"unsupported\"}},"
		"{\"x\":{\"status\":\"unavailable\",\"reason\":\"unsupported\"}},"
		"{\"x\":{\"status\":\"recorded\",\"value\":1}}],"
		"\"b\":{\"c\":{\"value\":{\"status\":\"unavailable\",\"reason\":\"permission-denied\"},"
		"\"source\":\"proc-pid-sched\"}},"
		"\"e\":{\"status\":\"unavailable\",\"reason\":\"unsupported\"}}");
	assert_non_null(d->root);
	loader__walk_gaps(&ld, d->root);
	assert_int_equal(ld.failed, 0);
	assert_int_equal(d->gap_fields, 4);
	assert_int_equal(d->nr_gaps, 3);
	g = gap(d, "a[*].x");
	assert_int_equal(g->count, 2);
	assert_string_equal(g->pattern, "a[*].x");
	/* A sourced gap is named by its field, not its inner "value". */
	g = gap(d, "b.c");
	assert_int_equal(g->reason, EV_GAP_PERMISSION_DENIED);
	assert_int_equal(g->count, 1);
	assert_non_null(g->hint);
	assert_int_equal(gap(d, "e")->reason, EV_GAP_UNSUPPORTED);
	report_doc__free(d);

	d = calloc(1, sizeof(*d));
	assert_non_null(d);
	ld = (struct loader){ .doc = d, .err = err, .errlen = sizeof(err) };
	d->root = json_tokener_parse("{\"q\":[{\"status\":\"unavailable\",\"reason\":\"bogus\"}]}");
	loader__walk_gaps(&ld, d->root);
	assert_int_equal(ld.failed, -EPROTO);
	assert_string_equal(err, "q[0].reason: not a gap reason of the schema");
	report_doc__free(d);
}

/* Pressure and thermal gaps get their own hints, not the reason's generic one. */
static void test_report_gaps__pressure_hints(void **state)
{
	(void)state;
	assert_non_null(
		strstr(report__gap_hint("pressure.host.stall.cpu_full_us", EV_GAP_UNSUPPORTED),
		       "constant 0"));
	assert_non_null(
		strstr(report__gap_hint("pressure.cgroup.end.io_some_total_us", EV_GAP_UNSUPPORTED),
		       "pressure.cgroup.detail"));
	assert_non_null(strstr(
		report__gap_hint("pressure.host.start.cpu_some_total_us", EV_GAP_UNSUPPORTED),
		"CONFIG_PSI"));
	assert_non_null(
		strstr(report__gap_hint("pressure.cgroup.stall.cpu_some_us", EV_GAP_UNAVAILABLE),
		       "detail"));
	assert_non_null(strstr(report__gap_hint("thermal.throttle.core_events", EV_GAP_UNSUPPORTED),
			       "thermal.detail"));
	assert_non_null(strstr(
		report__gap_hint("thermal.end.max_zone_millicelsius", EV_GAP_PERMISSION_DENIED),
		"thermal.detail"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_gaps__fixture),
		cmocka_unit_test(test_report_gaps__walk),
		cmocka_unit_test(test_report_gaps__pressure_hints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

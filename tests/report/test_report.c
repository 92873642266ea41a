// SPDX-License-Identifier: MIT
/* report.c: loading and checking saved documents, nesting, gaps, durations. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "report/report.h"
#include "report_testdoc.h"

static void test_report__fmt_ns(void **state)
{
	static const struct {
		uint64_t ns;
		const char *want;
	} cases[] = {
		{ 0, "0 ns" },
		{ 999, "999 ns" },
		{ 1000, "1.00 us" },
		{ 1234, "1.23 us" },
		{ 1235, "1.24 us" }, /* half rounds up */
		{ 12345, "12.3 us" },
		{ 99949, "99.9 us" },
		{ 99950, "100 us" }, /* one decimal fewer, not "100.0" */
		{ 999499, "999 us" },
		{ 999500, "1.00 ms" }, /* carries into the next unit */
		{ 1230000, "1.23 ms" },
		{ 41156460, "41.2 ms" },
		{ 302393218, "302 ms" },
		{ 999999999, "1.00 s" },
		{ 1660000000, "1.66 s" },
		{ UINT64_C(3600000000000), "3600 s" },
		{ UINT64_MAX, "18446744074 s" },
	};
	char buf[32];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		report__fmt_ns(buf, sizeof(buf), cases[i].ns);
		assert_string_equal(buf, cases[i].want);
	}
}

static const struct report_span *span_by_id(const struct report_doc *d, uint64_t id)
{
	size_t i;

	for (i = 0; i < d->nr_spans; i++)
		if (d->spans[i].span_id == id)
			return &d->spans[i];
	return NULL;
}

static const struct report_metric *metric(const struct report_doc *d, const char *id)
{
	size_t i;

	for (i = 0; i < d->nr_metrics; i++)
		if (!strcmp(d->metrics[i].id, id))
			return &d->metrics[i];
	fail_msg("no metric %s", id);
	return NULL;
}

/* A real `khbpf run` of the spanned workload, 2 threads x 2 rounds, one span held open. */
static void test_report__spans_fixture(void **state)
{
	struct report_doc *d = fixture_load("spans.json");
	const struct report_span *s, *p;
	size_t i;

	(void)state;
	assert_int_equal(d->pid, 2128);
	assert_int_equal(d->wall_ns, 41156460);
	assert_int_equal(d->start_unix_ns, UINT64_C(1796219872802911528));
	assert_string_equal(d->end_reason, "duration");
	assert_false(d->exit_recorded);
	assert_int_equal(d->nr_threads, 3);
	assert_int_equal(d->nr_listed, 3);
	assert_int_equal(d->nr_spans, 53);
	assert_int_equal(d->nr_open, 1);
	assert_int_equal(d->nr_overlapping, 0);
	assert_int_equal(d->nr_metrics, 10);
	assert_true(d->spans_recorded);
	assert_string_equal(d->cycles_event, "sw-cpu-clock");
	assert_int_equal(d->nr_probes, 10);
	assert_int_equal(d->nr_probes_attached, 10);

	assert_int_equal(d->threads[1].tid, 2130);
	assert_int_equal(d->threads[1].on_cpu_ns.ev.value, 10503360);
	assert_int_equal(d->threads[1].on_cpu_ns.source, EV_SRC_BPF_TRACEPOINT);
	assert_int_equal(d->threads[2].sched.scheduler_delay_ns.ev.value, 4162357);
	assert_int_equal(d->totals.timeslices.ev.value, 19);
	assert_int_equal(d->all_threads_cpu_ns.value, 22591504);
	assert_int_equal(d->parallelism_milli.value, 548);
	assert_int_equal(d->rq.waits, 19);
	assert_int_equal(d->rq.wait_ns, 6310844);
	assert_int_equal(d->rq.unbinned_waits, 2);
	assert_int_equal(d->rq.nr_buckets, 5);
	assert_int_equal(d->rq.buckets[4].lower, 1048576);
	assert_int_equal(d->rq.buckets[4].count, 3);

	/* Nesting as the producer recorded it: stage-outer > middle > inner, 5x recurse. */
	assert_int_equal(d->threads[0].depth, 1);
	assert_int_equal(d->threads[1].depth, 5);
	assert_int_equal(d->threads[2].depth, 5);
	assert_int_equal(d->threads[0].nr_spans + d->threads[1].nr_spans + d->threads[2].nr_spans,
			 53);
	for (i = 0; i < d->nr_spans; i++) {
		s = &d->spans[i];
		if (i)
			assert_true(s->thread > d->spans[i - 1].thread ||
				    (s->thread == d->spans[i - 1].thread &&
				     s->start_ns >= d->spans[i - 1].start_ns));
		assert_int_equal(d->threads[s->thread].tid, s->thread_id);
		if (!s->parent_span_id.recorded) {
			assert_int_equal(s->depth, 0);
			continue;
		}
		p = span_by_id(d, s->parent_span_id.value);
		assert_non_null(p);
		assert_int_equal(s->depth, p->depth + 1);
		assert_int_equal(p->thread, s->thread);
		assert_true(p->start_ns <= s->start_ns);
		assert_true(p->start_ns + p->inclusive_ns >= s->start_ns + s->inclusive_ns);
	}

	/* The open span runs to the end of the window. */
	s = span_by_id(d, 53);
	assert_true(s->open);
	assert_int_equal(s->start_ns, 19256780);
	assert_int_equal(d->end_ns, 41156460);
	assert_int_equal(s->inclusive_ns, 41156460 - 19256780);
	assert_int_equal(metric(d, "stage-hold")->unfinished, 1);

	s = span_by_id(d, 1);
	assert_int_equal(s->start_ns, 2505296);
	assert_int_equal(s->inclusive_ns, 23753);
	assert_true(s->has_hw && s->hw.cycles_end.recorded);
	assert_int_equal(s->hw.cycles_end.value, 23747);
	assert_true(s->has_ledger);
	assert_int_equal(s->ledger.on_cpu_ns.value, 23753);

	assert_int_equal(metric(d, "stage-recurse")->calls, 20);
	assert_int_equal(metric(d, "stage-recurse")->inclusive_ns, 128752);
	assert_int_equal(metric(d, "stage-spin")->exclusive_ns, 15780364);
	assert_true(metric(d, "stage-spin")->has_totals);
	/* Colors by sorted id: the same metric gets the same color in every report. */
	assert_int_equal(metric(d, "stage-hold")->color, 0);
	assert_int_equal(metric(d, "stage-spin")->color, 9);

	assert_int_equal(gap(d, "events.spans[*].task_id")->count, 52);
	assert_int_equal(gap(d, "open_spans[0].parent_span_id")->count, 1);
	assert_int_equal(d->nr_losses, 0);
	report_doc__free(d);
}

/* A real scheduler-only `khbpf run` of the demo workload. */
/* Integers above 2^53 come through exactly. */
static void test_report__u64_exact(void **state)
{
	char sp[1024], *text;
	struct report_doc *d;

	(void)state;
	testdoc_span(sp, sizeof(sp), UINT64_C(18446744073709551615), 0, "big",
		     UINT64_C(9007199254740993), 5, 1);
	text = testdoc(UINT64_C(18446744073709551614), TESTDOC_THREAD(1, "a"), sp, "");
	d = testdoc_load(text);
	assert_int_equal(d->wall_ns, UINT64_C(18446744073709551614));
	assert_int_equal(d->spans[0].span_id, UINT64_MAX);
	assert_int_equal(d->spans[0].start_ns, UINT64_C(9007199254740993));
	report_doc__free(d);
	free(text);
}

static void expect_reject(const char *text, int want, const char *msg)
{
	struct report_doc *d = (void *)1;
	char err[512] = "";
	int ret = report_doc__load_string(text, strlen(text), &d, err, sizeof(err));

	if (ret != want || !strstr(err, msg))
		fail_msg("'%.80s': got %d '%s', want %d '%s'", text, ret, err, want, msg);
	assert_null(d);
}

static void test_report__rejects_bad_documents(void **state)
{
	char *text, *bad, want[128];

	(void)state;
	expect_reject("", -EINVAL, "is not JSON");
	expect_reject("{\"schema\":", -EINVAL, "ends in the middle");
	expect_reject("{} x", -EINVAL, "line 1, column 4");
	expect_reject("{\n\"a\": tru }", -EINVAL, "line 2");
	expect_reject("{\"s\":\"\xff\"}", -EINVAL, "is not JSON");
	expect_reject("[1]", -EPROTO, "not a JSON object");
	expect_reject("{}", -EPROTO, "no \"schema\"");
	expect_reject("{\"schema\":\"keyhog-profile\"}", -EPROTO, "not \"khbpf-evidence\"");
	expect_reject("{\"schema\":\"khbpf-evidence\"}", -EPROTO, "no schema_version.major");
	expect_reject("{\"schema\":\"khbpf-evidence\",\"schema_version\":{\"major\":2}}", -EPROTO,
		      "schema version 2.x; this khbpf reads version 1.x");

	/* Not JSON inside an array read element by element: the same message. */
	text = testdoc(1000, TESTDOC_THREAD(1, "a") ",{\"version\":1,\"thread_id\":2,}", "", "");
	snprintf(want, sizeof(want), "is not JSON: unexpected character at line 1, column %zu",
		 (size_t)(strstr(text, ",}") - text) + 2);
	expect_reject(text, -EINVAL, want);
	free(text);

	/* Field errors name the field. */
	text = testdoc(1000, TESTDOC_THREAD(-1, "a"), "", "");
	expect_reject(text, -EPROTO, "threads[0].thread_id: expected an unsigned integer");
	free(text);
	text = testdoc(1000, "", "", "");
	bad = strstr(text, "\"wall_ns\":1000");
	memcpy(bad, "\"wall_ns\":1.5 ", 14);
	expect_reject(text, -EPROTO, "window.wall_ns: expected an unsigned integer");
	free(text);
	text = testdoc(1000, "", "", "");
	bad = strstr(text, "\"threads\"");
	memcpy(bad, "\"xhreads\"", 9);
	expect_reject(text, -EPROTO, "threads is missing");
	free(text);
	text = testdoc(1000, "", "", "");
	bad = strstr(text, "collector-disabled");
	memcpy(bad, "collector-disablex", 18);
	expect_reject(text, -EPROTO, "hardware.reason: not a gap reason");
	free(text);
	text = testdoc(1000, "", "{\"version\":1,\"span_id\":1}", "");
	expect_reject(text, -EPROTO, "events.spans[0].parent_span_id is missing");
	free(text);
}

static void test_report__file_errors(void **state)
{
	struct report_doc *d;
	char err[256];

	(void)state;
	assert_int_equal(report_doc__load_file(FIXTURES "/no-such.json", &d, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "No such file"));
	assert_int_equal(report_doc__load_file(FIXTURES, &d, err, sizeof(err)), -EISDIR);
	assert_null(d);
}

/* Spans that cross (a damaged document) are counted and kept out of the layout. */
static void test_report__crossing_spans(void **state)
{
	char a[1024], b[1024], c[1024], e[1024], spans[4200], *text;
	struct report_doc *d;

	(void)state;
	testdoc_span(a, sizeof(a), 1, 0, "a", 0, 100, 5);
	testdoc_span(c, sizeof(c), 2, 1, "c", 10, 10, 5);
	testdoc_span(b, sizeof(b), 3, 0, "b", 50, 150, 5);
	testdoc_span(e, sizeof(e), 4, 0, "e", 300, 100, 5);
	snprintf(spans, sizeof(spans), "%s,%s,%s,%s", a, c, b, e);
	text = testdoc(1000, TESTDOC_THREAD(5, "w"), spans, "");
	d = testdoc_load(text);
	assert_int_equal(d->nr_overlapping, 1);
	assert_true(span_by_id(d, 3)->overlaps);
	assert_false(span_by_id(d, 1)->overlaps);
	assert_int_equal(span_by_id(d, 2)->depth, 1);
	assert_int_equal(span_by_id(d, 4)->depth, 0);
	assert_int_equal(d->threads[0].depth, 2);
	report_doc__free(d);
	free(text);
}

/* A span on a thread the list lacks gets a lane of its own, not a table row. */
static void test_report__unlisted_thread(void **state)
{
	char sp[1024], *text;
	struct report_doc *d;

	(void)state;
	testdoc_span(sp, sizeof(sp), 1, 0, "x", 10, 20, 99);
	text = testdoc(1000, "", sp, "");
	d = testdoc_load(text);
	assert_int_equal(d->nr_threads, 1);
	assert_int_equal(d->nr_listed, 0);
	assert_false(d->threads[0].listed);
	assert_int_equal(d->threads[0].tid, 99);
	assert_int_equal(d->spans[0].thread, 0);
	/* Not in span_metrics: the records are all there is to count. */
	assert_false(d->metrics[0].has_totals);
	assert_int_equal(d->metrics[0].calls, 1);
	assert_int_equal(d->metrics[0].inclusive_ns, 20);
	report_doc__free(d);
	free(text);
}

static void test_report__gap_hints(void **state)
{
	(void)state;
	assert_non_null(strstr(
		report__gap_hint("hardware.value.counters.cycles", EV_GAP_UNSUPPORTED), "no PMU"));
	assert_non_null(
		strstr(report__gap_hint("hardware.value.counters.cycles", EV_GAP_PERMISSION_DENIED),
		       "CAP_PERFMON"));
	assert_non_null(strstr(report__gap_hint("hardware.value.counters.stalled_cycles_memory",
						EV_GAP_UNSUPPORTED),
			       "always a gap"));
	assert_non_null(
		strstr(report__gap_hint("events.spans[*].parent_span_id", EV_GAP_UNAVAILABLE),
		       "root span"));
	assert_non_null(strstr(report__gap_hint("overhead.x_run_cnt", EV_GAP_COLLECTOR_DISABLED),
			       "--bpf-stats"));
	/* Fields without a hint of their own get their reason's. */
	assert_non_null(strstr(report__gap_hint("some.new_field", EV_GAP_PERMISSION_DENIED),
			       "run khbpf as root"));
	assert_non_null(strstr(report__gap_hint("some.new_field", EV_GAP_UNSUPPORTED),
			       "does not provide it"));
	assert_non_null(strstr(report__availability_hint("disabled"), "not collected in this run"));
	/* Off by default is said as such, with the option that measures it. */
	assert_non_null(strstr(
		report__gap_hint("threads[*].bpf_detail.value.blocked", EV_GAP_COLLECTOR_DISABLED),
		"off by default: --blocked measures it"));
	assert_non_null(strstr(
		report__gap_hint("events.spans[*].scheduler.blocked", EV_GAP_COLLECTOR_DISABLED),
		"off by default: --blocked measures it"));
	assert_non_null(strstr(report__gap_hint("processes[*].exit", EV_GAP_UNAVAILABLE),
			       "still running at the window's end"));
	assert_non_null(strstr(report__gap_hint("target.exit", EV_GAP_UNAVAILABLE),
			       "still running at the window's end"));
	assert_non_null(
		strstr(report__gap_hint("hardware.value.span_aggregation.value.run.cpi_milli",
					EV_GAP_UNAVAILABLE),
		       "a ratio"));
}

/* The role a title names: its "name:" words and up to three words after them. */
static void test_report__title_role(void **state)
{
	static const struct {
		const char *title, *role;
	} cases[] = {
		{ "postgres: checkpointer ", "postgres: checkpointer" },
		{ "postgres: bench postgres [local] UPDATE waiting",
		  "postgres: bench postgres [local]" },
		{ "postgres: bench postgres [local] idle in transaction",
		  "postgres: bench postgres [local]" },
		{ "postgres: 15/main: walwriter ", "postgres: 15/main: walwriter" },
		{ "postgres: 15/main: bench db [local] idle",
		  "postgres: 15/main: bench db [local]" },
		{ "postgres: logical replication launcher",
		  "postgres: logical replication launcher" },
		{ "nginx:  worker\tprocess", "nginx: worker process" },
		{ "sshd: a: b c d e", "sshd: a: b c d" },
		{ "postgres:", "postgres:" },
		/* Not written as "name: ...": no role (an argv, a comm). */
		{ "/usr/lib/postgresql/15/bin/postgres -D /var/lib/pg", NULL },
		{ "tree", NULL },
		{ " ", NULL },
		{ "", NULL },
	};
	char buf[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool got = report__title_role(cases[i].title, buf, sizeof(buf));

		if (got != !!cases[i].role || strcmp(buf, cases[i].role ? cases[i].role : ""))
			fail_msg("'%s': got %d '%s', want '%s'", cases[i].title, got, buf,
				 cases[i].role ? cases[i].role : "(none)");
	}
	/* Words that do not fit are left out whole. */
	assert_true(report__title_role("postgres: checkpointer", buf, 16));
	assert_string_equal(buf, "postgres:");
	assert_false(report__title_role("postgres: x", buf, 0));
}

/*
 * processes[].title read: at the end and at its join, trailing blanks off;
 * gaps NULL; a document without titles (before them) reads as before; an
 * empty title refused, naming the field.
 */
static void test_report__process_titles(void **state)
{
	char *text = testdoc_titled_tree(), *bad;
	struct report_doc *d = testdoc_load(text);

	(void)state;
	assert_int_equal(d->nr_processes, 9);
	assert_string_equal(d->processes[1].title_join, "postgres: checkpointer");
	assert_string_equal(d->processes[2].title_join, "postgres: bench postgres [local] idle");
	assert_string_equal(d->processes[2].title_end, "postgres: bench postgres [local] UPDATE");
	assert_string_equal(report__process_name(&d->processes[2]),
			    "postgres: bench postgres [local] UPDATE");
	assert_null(d->processes[0].title_end);
	assert_string_equal(report__process_name(&d->processes[0]),
			    "build/workloads/tree /tmp/t.jsonl build/workloads/treeleaf");
	assert_null(d->processes[4].title_join);
	assert_string_equal(report__process_name(&d->processes[4]), "tree-k");
	assert_null(d->processes[5].title_join);
	assert_string_equal(report__process_name(&d->processes[5]), "tree-d");
	/* The gaps, each with what to do about it. */
	assert_non_null(strstr(gap(d, "processes[*].title.at_end")->hint, "nothing to fix"));
	assert_int_equal(gap(d, "processes[*].title.at_end")->count, 2);
	assert_non_null(strstr(gap(d, "processes[4].title.at_join")->hint, "kernel thread"));
	assert_non_null(strstr(report__gap_hint("processes[*].title.at_join", EV_GAP_UNAVAILABLE),
			       "--interval"));
	report_doc__free(d);

	bad = strstr(text, "\"postgres: checkpointer \"");
	assert_non_null(bad);
	memmove(bad + 1, bad + 24, strlen(bad + 24) + 1);
	expect_reject(text, -EPROTO,
		      "processes[1].title.at_join.value.value: expected a non-empty string");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report__title_role),
		cmocka_unit_test(test_report__process_titles),
		cmocka_unit_test(test_report__fmt_ns),
		cmocka_unit_test(test_report__spans_fixture),
		cmocka_unit_test(test_report__u64_exact),
		cmocka_unit_test(test_report__rejects_bad_documents),
		cmocka_unit_test(test_report__file_errors),
		cmocka_unit_test(test_report__crossing_spans),
		cmocka_unit_test(test_report__unlisted_thread),
		cmocka_unit_test(test_report__gap_hints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

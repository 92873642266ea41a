// SPDX-License-Identifier: MIT
/* report_trace.c: the trace-event JSON, read back with json-c. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "report/report.h"
#include "report_testdoc.h"

struct xev {
	uint64_t tid, ts, end;
};

static struct json_object *trace_of(struct report_doc *d, char **text)
{
	struct json_object *root;
	size_t len;

	assert_int_equal(report__trace(d, text, &len), 0);
	assert_int_equal(strlen(*text), len);
	report_doc__free(d);
	root = json_tokener_parse(*text);
	assert_non_null(root);
	return root;
}

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		fail_msg("no '%s' in %s", key, json_object_to_json_string(o));
	return v;
}

/* "2505.296" microseconds -> 2505296 ns, exactly, from the text as written. */
static uint64_t ns_of(struct json_object *us)
{
	const char *s = json_object_get_string(us), *dot = strchr(s, '.');
	uint64_t whole, frac;

	assert_non_null(dot);
	assert_int_equal(strlen(dot), 4);
	assert_int_equal(sscanf(s, "%" SCNu64 ".%" SCNu64, &whole, &frac), 2);
	return whole * 1000 + frac;
}

static int xev_cmp(const void *a, const void *b)
{
	const struct xev *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;
}

/* X events on one thread either nest or are disjoint. */
static void nests(struct xev *x, size_t n)
{
	uint64_t stack[64];
	size_t i, top = 0;

	qsort(x, n, sizeof(*x), xev_cmp);
	for (i = 0; i < n; i++) {
		if (i && x[i].tid != x[i - 1].tid)
			top = 0;
		while (top && stack[top - 1] <= x[i].ts)
			top--;
		if (top && x[i].end > stack[top - 1])
			fail_msg("tid %" PRIu64 ": [%" PRIu64 ", %" PRIu64
				 ") crosses its enclosing span",
				 x[i].tid, x[i].ts, x[i].end);
		assert_true(top < 64);
		stack[top++] = x[i].end;
	}
}

struct summary {
	size_t x, m, c, thread_names;
	size_t open_counters, thread_counters;
	struct xev xev[256];
};

static void summarize(struct json_object *root, struct summary *s)
{
	struct json_object *evs = get(root, "traceEvents");
	size_t i;

	memset(s, 0, sizeof(*s));
	assert_string_equal(json_object_get_string(get(root, "displayTimeUnit")), "ns");
	for (i = 0; i < json_object_array_length(evs); i++) {
		struct json_object *e = json_object_array_get_idx(evs, i);
		const char *ph = json_object_get_string(get(e, "ph"));
		const char *name = json_object_get_string(get(e, "name"));

		assert_true(json_object_is_type(get(e, "pid"), json_type_int));
		assert_true(json_object_is_type(get(e, "tid"), json_type_int));
		if (!strcmp(ph, "X")) {
			struct xev *x = &s->xev[s->x++];

			assert_true(s->x <= 256);
			x->tid = json_object_get_uint64(get(e, "tid"));
			x->ts = ns_of(get(e, "ts"));
			x->end = x->ts + ns_of(get(e, "dur"));
			assert_true(json_object_is_type(get(e, "args"), json_type_object));
		} else if (!strcmp(ph, "M")) {
			s->m++;
			s->thread_names += !strcmp(name, "thread_name");
		} else if (!strcmp(ph, "C")) {
			s->c++;
			ns_of(get(e, "ts"));
			s->open_counters += !strcmp(name, "open spans");
			s->thread_counters += !strncmp(name, "thread ", 7);
		} else {
			fail_msg("unexpected phase %s", ph);
		}
	}
	nests(s->xev, s->x);
}

static void test_report_trace__spans_fixture(void **state)
{
	struct json_object *root;
	struct summary s;
	char *text;

	(void)state;
	root = trace_of(fixture_load("spans.json"), &text);
	summarize(root, &s);
	assert_int_equal(s.x, 53);
	assert_int_equal(s.thread_names, 3);
	assert_int_equal(s.m, 1 + 3 + 3);
	assert_true(s.open_counters > 0);
	/* sw-cpu-clock readings at each span's ends, thread 2130 and 2131. */
	assert_true(s.thread_counters > 0);
	assert_non_null(strstr(text, "\"name\":\"thread 2130 counters\",\"ph\":\"C\""));
	assert_non_null(strstr(text, "\"cycles [sw-cpu-clock]\":23747"));
	/* Span 1 exactly: start 2505296 ns, 23753 ns long. */
	assert_non_null(strstr(text, "\"name\":\"stage-outer\",\"ph\":\"X\",\"pid\":2128,"
				     "\"tid\":2130,\"cat\":\"span\",\"ts\":2505.296,\"dur\":23.753,"
				     "\"args\":{\"span_id\":1,\"inclusive_ns\":23753,"
				     "\"exclusive_ns\":10921,"));
	/* The open span runs to the window's end. */
	assert_non_null(strstr(text, "\"cat\":\"span,open\",\"ts\":19256.780,\"dur\":21899.680,"
				     "\"args\":{\"span_id\":53,\"open_at_window_end\":true}"));
	assert_non_null(strstr(text, "\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":2128,"
				     "\"tid\":2131,\"args\":{\"name\":\"spanned\"}"));
	assert_non_null(strstr(text, "\"window_start_unix_ns\":\"1796219872802911528\""));
	/* All open at the end: the last open-spans value is 0 at the window's end. */
	assert_non_null(strstr(text, "\"name\":\"open spans\",\"ph\":\"C\",\"pid\":2128,"
				     "\"tid\":2128,\"ts\":41156.460,\"args\":{\"spans\":0}"));
	json_object_put(root);
	free(text);
}

static void test_report_trace__no_spans(void **state)
{
	struct json_object *root;
	struct summary s;
	char *text;

	(void)state;
	root = trace_of(fixture_load("gaps.json"), &text);
	summarize(root, &s);
	assert_int_equal(s.x, 0);
	assert_int_equal(s.c, 0);
	assert_int_equal(s.thread_names, 3);
	/* The hostile name is a JSON string like any other. */
	assert_non_null(strstr(text, "\"args\":{\"name\":\"<script>&\\\"'x\"}"));
	json_object_put(root);
	free(text);
}

/* A process tree: one process track per process, each thread on its own process's. */
static void test_report_trace__process_tracks(void **state)
{
	struct json_object *root, *events;
	size_t i, procs = 0, threads = 0;
	char *text;

	(void)state;
	root = trace_of(fixture_load("tree.json"), &text);
	events = get(root, "traceEvents");
	for (i = 0; i < json_object_array_length(events); i++) {
		struct json_object *e = json_object_array_get_idx(events, i);
		const char *name = json_object_get_string(get(e, "name"));
		uint64_t pid = json_object_get_uint64(get(e, "pid"));
		uint64_t tid = json_object_get_uint64(get(e, "tid"));

		if (!strcmp(name, "process_name")) {
			procs++;
			assert_int_equal(pid, tid);
		} else if (!strcmp(name, "thread_name")) {
			threads++;
			/* tree.json: tree-a's threads 22691..22693 are in process 22691. */
			if (tid >= 22691 && tid <= 22693)
				assert_int_equal(pid, 22691);
			if (tid == 22702)
				assert_int_equal(pid, 22702);
		}
	}
	assert_int_equal(procs, 9);
	assert_int_equal(threads, 14);
	assert_non_null(strstr(text, "\"name\":\"tree-d (pid 22697)\""));
	json_object_put(root);
	free(text);
}

/* Process tracks are named by title where one was recorded (the target's too), else comm. */
static void test_report_trace__process_titles(void **state)
{
	char *doc = testdoc_titled_tree(), *text;
	struct json_object *root = trace_of(testdoc_load(doc), &text);

	(void)state;
	assert_non_null(strstr(text, "\"name\":\"postgres: checkpointer (pid 22691)\""));
	assert_non_null(
		strstr(text, "\"name\":\"postgres: bench postgres [local] UPDATE (pid 22694)\""));
	assert_non_null(strstr(text, "\"name\":\"build/workloads/tree /tmp/t.jsonl build/workloads/"
				     "treeleaf (pid 22687)\""));
	assert_non_null(strstr(text, "\"name\":\"tree-d (pid 22697)\""));
	json_object_put(root);
	free(text);
	free(doc);
}

/* A crossing span is left out (a viewer could not draw it), and counted. */
static void test_report_trace__crossing_left_out(void **state)
{
	char a[1024], b[1024], spans[2100], *doc, *text;
	struct json_object *root;
	struct summary s;

	(void)state;
	testdoc_span(a, sizeof(a), 1, 0, "a", 1000, 1000, 5);
	testdoc_span(b, sizeof(b), 2, 0, "b", 1500, 1000, 5);
	snprintf(spans, sizeof(spans), "%s,%s", a, b);
	doc = testdoc(10000, TESTDOC_THREAD(5, "w"), spans, "");
	root = trace_of(testdoc_load(doc), &text);
	summarize(root, &s);
	assert_int_equal(s.x, 1);
	assert_int_equal(
		json_object_get_int(get(get(root, "otherData"), "spans_left_out_crossing")), 1);
	json_object_put(root);
	free(text);
	free(doc);
}

/* Big counter readings stay exact integers. */
static void test_report_trace__u64_counters(void **state)
{
	const char *sp =
		"{\"version\":1,\"span_id\":1,\"parent_span_id\":{\"status\":\"unavailable\","
		"\"reason\":\"unavailable\"},\"metric_id\":\"m\",\"start_ns\":1,\"inclusive_ns\":2,"
		"\"exclusive_ns\":2,\"thread_id\":5,"
		"\"task_id\":{\"status\":\"unavailable\",\"reason\":\"unavailable\"},"
		"\"worker_id\":{\"status\":\"unavailable\",\"reason\":\"unavailable\"},"
		"\"work_origin\":\"root\",\"hardware\":{\"status\":\"recorded\",\"value\":{"
		"\"version\":1,"
		"\"cycles_begin\":{\"status\":\"recorded\",\"value\":18446744073709551000},"
		"\"cycles_end\":{\"status\":\"recorded\",\"value\":18446744073709551615},"
		"\"instructions_begin\":{\"status\":\"unavailable\",\"reason\":\"unavailable\"},"
		"\"instructions_end\":{\"status\":\"unavailable\",\"reason\":\"unavailable\"}}}}";
	char *doc = testdoc(10000, TESTDOC_THREAD(5, "w"), sp, ""), *text;
	struct json_object *root = trace_of(testdoc_load(doc), &text);

	(void)state;
	assert_non_null(strstr(text, "\"cycles\":615"));
	assert_non_null(strstr(text, "\"cycles [hw]\":18446744073709551615"));
	assert_null(strstr(text, "\"instructions"));
	assert_non_null(strstr(text, "\"ts\":0.001,\"dur\":0.002"));
	json_object_put(root);
	free(text);
	free(doc);
}

/* Written to a file as it is made: the same bytes; a file that fails says so. */
static void test_report_trace__to_file(void **state)
{
	struct report_load_opts o = { .sz = sizeof(o), .span_summary = true };
	struct report_doc *d = fixture_load("spans.json"), *sum;
	char *buf, *back, err[256];
	size_t len;
	FILE *f;

	(void)state;
	assert_int_equal(report__trace(d, &buf, &len), 0);
	f = tmpfile();
	assert_non_null(f);
	assert_int_equal(report__trace_write(d, f), 0);
	assert_int_equal((size_t)ftell(f), len);
	back = malloc(len);
	assert_non_null(back);
	rewind(f);
	assert_int_equal(fread(back, 1, len, f), len);
	assert_memory_equal(back, buf, len);
	fclose(f);
	f = fopen("/dev/full", "w");
	assert_non_null(f);
	assert_int_equal(report__trace_write(d, f), -EIO);
	fclose(f);
	/* Summarized spans cannot be drawn one by one. */
	assert_int_equal(
		report_doc__load_file_opts(FIXTURES "/spans.json", &sum, &o, err, sizeof(err)), 0);
	f = tmpfile();
	assert_int_equal(report__trace_write(sum, f), -EINVAL);
	fclose(f);
	free(back);
	assert_int_equal(report__trace(sum, &back, &len), -EINVAL);
	assert_int_equal(report__html(sum, &back, &len), -EINVAL);
	report_doc__free(sum);
	report_doc__free(d);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_trace__spans_fixture),
		cmocka_unit_test(test_report_trace__no_spans),
		cmocka_unit_test(test_report_trace__crossing_left_out),
		cmocka_unit_test(test_report_trace__u64_counters),
		cmocka_unit_test(test_report_trace__to_file),
		cmocka_unit_test(test_report_trace__process_tracks),
		cmocka_unit_test(test_report_trace__process_titles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

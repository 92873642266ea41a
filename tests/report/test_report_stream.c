// SPDX-License-Identifier: MIT
/*
 * report_stream.c: a document read a piece at a time, from memory and from a
 * file, loads and renders exactly as the same text parsed whole; spans
 * summarized give the report that kept spans give; a document that is not
 * JSON (or not one khbpf reads) fails with the whole parse's message.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "report/report.h"
#include "report_testdoc.h"

static const uint64_t tids[] = { 2128, 2130, 2131, 4242 }; /* 4242: only in spans */
static const char *const metrics[] = { "stage-outer", "stage-middle", "stage-spin", "stage-sleep",
				       "not-listed" };

static const char *gap_text(const char *reason)
{
	static char buf[96];

	snprintf(buf, sizeof(buf), "{\"status\": \"unavailable\", \"reason\": \"%s\"}", reason);
	return buf;
}

/*
 * Record k of n: four threads' spans interleaved, each thread a run of
 * roots with a child nested in each (every 50th crossing its root), one
 * record past the window's end, hardware and scheduler ledgers recorded,
 * gapped or absent by turns.
 */
static size_t span_text(char *buf, size_t len, size_t k, size_t n)
{
	size_t j = k / 4, pair = j / 2;
	bool child = j % 2;
	uint64_t start = 5000 + pair * 1000, incl = 700;
	char parent[96], hw[512] = "", sched[512] = "";

	snprintf(parent, sizeof(parent), "%s", gap_text("unavailable"));
	if (child) {
		snprintf(parent, sizeof(parent), "{\"status\": \"recorded\", \"value\": %zu}",
			 k - 3);
		start += 100;
		incl = pair % 50 ? 300 : 900;
	}
	if (k == n - 1) {
		start = 40000000;
		incl = 5000000;
	}
	switch (k % 5) {
	case 0:
		snprintf(hw, sizeof(hw), ", \"hardware\": %s", gap_text("unsupported"));
		break;
	case 1:
	case 4:
		snprintf(hw, sizeof(hw),
			 ", \"hardware\": {\"status\": \"recorded\", \"value\": {\"version\": 1, "
			 "\"cycles_begin\": {\"status\": \"recorded\", \"value\": %zu}, "
			 "\"cycles_end\": {\"status\": \"recorded\", \"value\": %zu}, "
			 "\"instructions_begin\": {\"status\": \"recorded\", \"value\": %zu}, "
			 "\"instructions_end\": %s}}",
			 k * 10, k * 10 + incl, k * 7,
			 k % 5 == 1 ? "{\"status\": \"recorded\", \"value\": 99999999}" :
				      gap_text("unavailable"));
		break;
	}
	if (k % 3)
		snprintf(sched, sizeof(sched),
			 ", \"scheduler\": {\"version\": 1, \"source\": \"bpf-uprobe\", "
			 "\"on_cpu_ns\": %s, \"run_delay_ns\": %zu, "
			 "\"voluntary_context_switches\": 1, \"involuntary_context_switches\": 2, "
			 "\"cpu_migrations\": 3}",
			 k % 6 == 1 ? gap_text("unavailable") :
				      "{\"status\": \"recorded\", \"value\": 250}",
			 k % 11);
	return (size_t)snprintf(
		buf, len,
		"{\"version\": 1, \"span_id\": %zu, \"parent_span_id\": %s, \"metric_id\": \"%s\", "
		"\"start_ns\": %" PRIu64 ", \"inclusive_ns\": %" PRIu64
		", \"exclusive_ns\": %" PRIu64 ", \"thread_id\": %" PRIu64
		", \"task_id\": %s, \"worker_id\": {\"status\": "
		"\"unavailable\", \"reason\": \"unavailable\"}, \"work_origin\": \"root\"%s%s}",
		k + 1, parent, child ? "stage-inner" : metrics[pair % 5], start, incl, incl / 2,
		tids[k % 4], gap_text("unavailable"), hw, sched);
}

/* Open spans: two a thread, one of them after the timeline's end. */
static size_t open_text(char *buf, size_t len, size_t i, size_t n)
{
	return (size_t)snprintf(buf, len,
				"{\"version\": 1, \"span_id\": %zu, \"parent_span_id\": %s, "
				"\"metric_id\": \"stage-hold\", \"thread_id\": %" PRIu64
				", \"start_ns\": %" PRIu64 "}",
				n + 1 + i, gap_text("unavailable"), tids[i % 4],
				i < 4 ? (uint64_t)60000 + i : UINT64_C(50000000) + i);
}

struct text {
	char *buf;
	size_t len, cap;
};

static void put(struct text *t, const char *s, size_t n)
{
	if (t->len + n + 1 > t->cap) {
		t->cap = (t->len + n + 1) * 2;
		t->buf = realloc(t->buf, t->cap);
		assert_non_null(t->buf);
	}
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

/*
 * The spans fixture in json-c layout flags with n records and 8 open spans
 * of ours, joined by sep (malloc'd). Markers in the tree become the arrays.
 */
static char *make_doc(size_t n, int flags, const char *sep)
{
	struct json_object *root = json_object_from_file(FIXTURES "/spans.json"), *ev;
	struct text t = { 0 };
	const char *text, *at, *open;
	char one[2048];
	size_t k;

	assert_non_null(root);
	assert_true(json_object_object_get_ex(root, "events", &ev));
	json_object_object_add(ev, "spans", json_object_new_string("@SPANS@"));
	json_object_object_add(root, "open_spans", json_object_new_string("@OPEN@"));
	text = json_object_to_json_string_ext(root, flags);
	at = strstr(text, "\"@SPANS@\"");
	open = strstr(text, "\"@OPEN@\"");
	assert_true(at && open && at < open);
	put(&t, text, (size_t)(at - text));
	put(&t, "[", 1);
	for (k = 0; k < n; k++) {
		if (k)
			put(&t, sep, strlen(sep));
		put(&t, one, span_text(one, sizeof(one), k, n));
	}
	put(&t, "]", 1);
	at += strlen("\"@SPANS@\"");
	put(&t, at, (size_t)(open - at));
	put(&t, "[", 1);
	for (k = 0; k < 8; k++) {
		if (k)
			put(&t, sep, strlen(sep));
		put(&t, one, open_text(one, sizeof(one), k, n));
	}
	put(&t, "]", 1);
	open += strlen("\"@OPEN@\"");
	put(&t, open, strlen(open));
	json_object_put(root);
	return t.buf;
}

/* A file holding text, open at its start. */
static int file_of(const char *text, size_t len)
{
	FILE *f = tmpfile();
	int fd;

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fflush(f), 0);
	fd = dup(fileno(f));
	fclose(f);
	assert_true(fd >= 0);
	return fd;
}

enum how { WHOLE, STREAM_MEM, STREAM_FILE, NR_HOW };
static const char *const how_name[NR_HOW] = { "whole", "streamed from memory",
					      "streamed from a file" };

/* Load text one way with opts; the error as "ret: message" into msg when it fails. */
static int load_opts(const char *text, enum how how, struct report_load_opts o,
		     struct report_doc **d, char *msg, size_t msglen)
{
	char err[512] = "";
	size_t len = strlen(text);
	int ret, fd;

	if (how == STREAM_FILE) {
		fd = file_of(text, len);
		ret = report_doc__load_fd(fd, d, &o, err, sizeof(err));
		close(fd);
	} else {
		ret = report_doc__load_string_opts(text, len, d, &o, err, sizeof(err));
	}
	snprintf(msg, msglen, "%d: %s", ret, err);
	if (ret)
		assert_null(*d);
	return ret;
}

static int load(const char *text, enum how how, bool summary, struct report_doc **d, char *msg,
		size_t msglen)
{
	struct report_load_opts o = { .sz = sizeof(o),
				      .span_summary = summary,
				      .whole = how == WHOLE };

	return load_opts(text, how, o, d, msg, msglen);
}

static char *text_of(const struct report_doc *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(report__text(d, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* Every count the summary keeps is the kept spans' own. */
static void same_summary(const struct report_doc *kept, const struct report_doc *sum)
{
	size_t i;

	assert_null(sum->spans);
	assert_true(sum->spans_summarized);
	assert_false(kept->spans_summarized);
	assert_int_equal(sum->nr_spans, kept->nr_spans);
	assert_int_equal(sum->nr_open, kept->nr_open);
	assert_int_equal(sum->nr_overlapping, kept->nr_overlapping);
	assert_int_equal(sum->end_ns, kept->end_ns);
	assert_int_equal(sum->nr_threads, kept->nr_threads);
	for (i = 0; i < kept->nr_threads; i++) {
		assert_int_equal(sum->threads[i].tid, kept->threads[i].tid);
		assert_int_equal(sum->threads[i].nr_spans, kept->threads[i].nr_spans);
		assert_int_equal(sum->threads[i].depth, kept->threads[i].depth);
	}
	assert_int_equal(sum->nr_metrics, kept->nr_metrics);
	for (i = 0; i < kept->nr_metrics; i++) {
		assert_string_equal(sum->metrics[i].id, kept->metrics[i].id);
		assert_int_equal(sum->metrics[i].calls, kept->metrics[i].calls);
		assert_int_equal(sum->metrics[i].inclusive_ns, kept->metrics[i].inclusive_ns);
		assert_int_equal(sum->metrics[i].exclusive_ns, kept->metrics[i].exclusive_ns);
		assert_int_equal(sum->metrics[i].unfinished, kept->metrics[i].unfinished);
		assert_int_equal(sum->metrics[i].color, kept->metrics[i].color);
	}
}

/* Each way, each layout: the same text, page and trace as the whole parse's. */
static void check_same(const char *text)
{
	struct report_doc *whole, *d, *sum;
	char *want_text, *want_html, *want_trace, *got, msg[600];
	size_t want_html_len, want_trace_len, len;
	int how;

	if (load(text, WHOLE, false, &whole, msg, sizeof(msg)))
		fail_msg("whole: %s", msg);
	want_text = text_of(whole);
	assert_int_equal(report__html(whole, &want_html, &want_html_len), 0);
	assert_int_equal(report__trace(whole, &want_trace, &want_trace_len), 0);
	for (how = 0; how < NR_HOW; how++) {
		if (load(text, how, false, &d, msg, sizeof(msg)) ||
		    load(text, how, true, &sum, msg, sizeof(msg)))
			fail_msg("%s: %s", how_name[how], msg);
		same_summary(d, sum);
		got = text_of(d);
		assert_string_equal(got, want_text);
		free(got);
		got = text_of(sum);
		assert_string_equal(got, want_text);
		free(got);
		assert_int_equal(report__html(d, &got, &len), 0);
		assert_int_equal(len, want_html_len);
		assert_memory_equal(got, want_html, len);
		free(got);
		assert_int_equal(report__trace(d, &got, &len), 0);
		assert_int_equal(len, want_trace_len);
		assert_memory_equal(got, want_trace, len);
		free(got);
		report_doc__free(d);
		report_doc__free(sum);
	}
	report_doc__free(whole);
	free(want_text);
	free(want_html);
	free(want_trace);
}

/* 6000 records (over 1 MiB: many of a file's pieces), three layouts. */
static void test_report_stream__same_as_whole(void **state)
{
	static const struct {
		int flags;
		const char *sep;
	} layouts[] = {
		{ JSON_C_TO_STRING_PLAIN, "," },
		{ JSON_C_TO_STRING_SPACED, " ,\n\t " },
		{ JSON_C_TO_STRING_PRETTY, ",\n    " },
	};
	struct report_doc *d;
	char msg[600], *text;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		text = make_doc(6000, layouts[i].flags, layouts[i].sep);
		assert_true(strlen(text) > (1u << 20));
		check_same(text);
		if (i == 0) {
			/* What the records hold, so that "the same" is about something. */
			assert_int_equal(load(text, STREAM_FILE, true, &d, msg, sizeof(msg)), 0);
			assert_int_equal(d->nr_spans, 6008);
			assert_int_equal(d->nr_open, 8);
			assert_int_equal(d->nr_overlapping,
					 63); /* 60 children, 3 open spans across a root */
			assert_int_equal(d->nr_threads, 4);
			assert_false(d->threads[3].listed);
			assert_int_equal(d->threads[3].depth, 2);
			assert_int_equal(d->end_ns, 45000000);
			assert_int_equal(gap(d, "events.spans[*].hardware")->count, 1200);
			report_doc__free(d);
		}
		free(text);
	}
	/* No spans at all, and the fixtures as they are. */
	text = make_doc(0, JSON_C_TO_STRING_PLAIN, ",");
	check_same(text);
	free(text);
}

/* text with the first occurrence of what (after from, if given) replaced by with. */
static char *edit(const char *text, const char *from, const char *what, const char *with)
{
	const char *at = strstr(from ? strstr(text, from) : text, what);
	size_t n = strlen(text) + strlen(with) + 1;
	char *out = malloc(n);

	assert_non_null(at);
	assert_non_null(out);
	snprintf(out, n, "%.*s%s%s", (int)(at - text), text, with, at + strlen(what));
	return out;
}

/* Every way fails as the whole parse does: the same status, the same message. */
static void same_failure(const char *text, int want, const char *part)
{
	char whole[600], msg[600];
	struct report_doc *d;
	int how;

	if (load(text, WHOLE, false, &d, whole, sizeof(whole)) != want)
		fail_msg("whole: %s, want %d (%.60s)", whole, want, part);
	if (!strstr(whole, part))
		fail_msg("whole: '%s' lacks '%s'", whole, part);
	for (how = STREAM_MEM; how < NR_HOW; how++) {
		load(text, how, how == STREAM_FILE, &d, msg, sizeof(msg));
		if (strcmp(msg, whole))
			fail_msg("%s: '%s', whole: '%s'", how_name[how], msg, whole);
	}
}

static void test_report_stream__malformed(void **state)
{
	char *doc, *bad, *two, deep[400];
	size_t len, i;

	(void)state;
	/* Pretty: the lines and columns count. */
	doc = make_doc(800, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED, ",\n    ");
	len = strlen(doc);
	assert_true(len > (1u << 20) / 2);

	/* Cut short: in the records, between them, in what follows, at the end. */
	for (i = 1; i < 10; i++) {
		bad = strndup(doc, len * i / 10);
		same_failure(bad, -EINVAL, "ends in the middle of a value");
		free(bad);
	}
	bad = strndup(doc, len - 2);
	same_failure(bad, -EINVAL, "ends in the middle of a value");
	free(bad);
	same_failure("", -EINVAL, "ends in the middle");
	same_failure(" \n ", -EINVAL, "ends in the middle");

	/* A wrong byte in a record, in a thread, in the utilization's threads. */
	bad = edit(doc, "\"span_id\": 400,", "\"start_ns\": ", "\"start_ns\": x");
	same_failure(bad, -EINVAL, "unexpected character at line");
	free(bad);
	bad = edit(doc, "\"span_id\": 700,", "\"metric_id\": \"", "\"metric_id\": \"\\x");
	same_failure(bad, -EINVAL, "invalid string sequence");
	free(bad);
	/* What json-c takes, the scan takes: a control byte in a string, NaN. */
	bad = edit(doc, "\"span_id\": 700,", "\"metric_id\": \"", "\"metric_id\": \"\x01");
	check_same(bad);
	free(bad);
	bad = edit(doc, "\"span_id\": 700,", "\"start_ns\": ", "\"start_ns\": NaN, \"x\": ");
	same_failure(bad, -EPROTO, "events.spans[699].start_ns: expected an unsigned integer");
	free(bad);
	bad = edit(doc, "\"threads\"", "\"comm\": \"spanned\"", "\"comm\": \"sp\xff\"");
	same_failure(bad, -EINVAL, "is not JSON");
	free(bad);
	bad = edit(doc, "\"utilization\"", "\"cpu_time_ns\": 1841187", "\"cpu_time_ns\": 18-41");
	same_failure(bad, -EINVAL, "is not JSON");
	free(bad);
	/* Separators: none, two, one too many. */
	bad = edit(doc, "\"span_id\": 300,", "},\n    {", "}\n    {");
	same_failure(bad, -EINVAL, "is not JSON");
	free(bad);
	bad = edit(doc, "\"span_id\": 300,", "},\n    {", "},,{");
	same_failure(bad, -EINVAL, "is not JSON");
	free(bad);
	bad = edit(doc, "\"span_id\": 800,", "}]", "},]");
	same_failure(bad, -EINVAL, "is not JSON");
	free(bad);
	bad = edit(doc, NULL, "\n  \"threads\": [", "\n  \"threads\": [,");
	same_failure(bad, -EINVAL, "is not JSON");
	free(bad);
	/* Nested deeper in a record than json-c allows the document. */
	memset(deep, 0, sizeof(deep));
	strcpy(deep, "\"work_origin\": ");
	for (i = 0; i < 70; i++)
		strcat(deep, "[");
	bad = edit(doc, "\"span_id\": 500,", "\"work_origin\": ", deep);
	same_failure(bad, -EINVAL, "nesting too deep");
	free(bad);
	/* After the records: the first fault wins, wherever it is. */
	bad = edit(doc, "\"loss\"", ": ", "; ");
	same_failure(bad, -EINVAL, "is not JSON");
	free(bad);
	two = edit(bad = edit(doc, "\"loss\"", ": ", "; "), "\"span_id\": 20,",
		   "\"start_ns\": ", "\"start_ns\": x");
	same_failure(two, -EINVAL, "unexpected character");
	free(two);
	free(bad);
	bad = edit(doc, "\"span_id\": 20,", "\"start_ns\": ", "\"start_ns\": --");
	same_failure(bad, -EINVAL, "is not JSON");
	free(bad);
	/* After the root: blanks only (a NUL is one, as it always was). */
	bad = malloc(len + 8);
	snprintf(bad, len + 8, "%s\n x", doc);
	same_failure(bad, -EINVAL, "unexpected character");
	free(bad);

	/* Not JSON comes first, even after a field found wrong. */
	bad = edit(doc, "\n  \"threads\": [", "\"thread_id\": 2128", "\"thread_id\": -1");
	same_failure(bad, -EPROTO, "threads[0].thread_id: expected an unsigned integer");
	two = edit(bad, "\"span_id\": 600,", "\"start_ns\": ", "\"start_ns\": x");
	same_failure(two, -EINVAL, "unexpected character");
	free(two);
	free(bad);
	/* JSON, but not a document khbpf reads: the field is named. */
	bad = edit(doc, "\"span_id\": 77,", "\"thread_id\": ", "\"thread_idx\": ");
	same_failure(bad, -EPROTO, "events.spans[76].thread_id is missing");
	free(bad);
	bad = edit(doc, NULL, "\n  \"threads\": [", "\n  \"threads\": [1, ");
	same_failure(bad, -EPROTO, "threads[0]: expected an object");
	free(bad);
	bad = edit(doc, "\"events\"", "\"spans\": [", "\"spans\": [7, ");
	same_failure(bad, -EPROTO, "events.spans[0]: expected an object");
	free(bad);
	bad = edit(doc, NULL, "\"schema\": \"khbpf-evidence\"", "\"schema\": \"other\"");
	same_failure(bad, -EPROTO, "not \"khbpf-evidence\"");
	free(bad);
	same_failure("[1]", -EPROTO, "not a JSON object");
	/* A JSON null is a value like any other. */
	same_failure("null \n", -EPROTO, "not a JSON object");
	same_failure("null", -EINVAL, "ends in the middle");
	same_failure(" x", -EINVAL, "unexpected character at line 1, column 2");
	/* An array is not read past its first byte: of any size, it is not a document. */
	same_failure(" [1, }", -EPROTO, "not a JSON object");
	bad = edit(doc, NULL, "\n  \"threads\": [", "\n  \"threads\": [null, ");
	same_failure(bad, -EPROTO, "threads[0]: expected an object");
	free(bad);
	free(doc);
}

/*
 * Integers past 64 bits, which json-c clamps without a word, are refused
 * with their path wherever they are, read whole or a piece at a time.
 */
static void test_report_stream__out_of_range(void **state)
{
	char *doc, *bad, *two, *digits;
	size_t n = 100000;

	(void)state;
	doc = make_doc(300, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED, ",\n    ");
	/* 2^64 in a streamed element and in the outline. */
	bad = edit(doc, "\n  \"threads\": [", "\"thread_id\": 2128",
		   "\"thread_id\": 18446744073709551616");
	same_failure(bad, -EPROTO,
		     "threads[0].thread_id: 18446744073709551616 is out of range "
		     "(at most 18446744073709551615)");
	free(bad);
	bad = edit(doc, NULL, "\"wall_ns\": ", "\"wall_ns\": 18446744073709551616, \"was\": ");
	same_failure(bad, -EPROTO,
		     "window.wall_ns: 18446744073709551616 is out of range "
		     "(at most 18446744073709551615)");
	free(bad);
	/* Below -2^63; -2^63 itself is json-c's, and the field says what is wrong with it. */
	bad = edit(doc, NULL, "\"wall_ns\": ", "\"wall_ns\": -9223372036854775809, \"was\": ");
	same_failure(bad, -EPROTO,
		     "window.wall_ns: -9223372036854775809 is out of range "
		     "(at least -9223372036854775808)");
	free(bad);
	bad = edit(doc, NULL, "\"wall_ns\": ", "\"wall_ns\": -9223372036854775808, \"was\": ");
	same_failure(bad, -EPROTO, "window.wall_ns: expected an unsigned integer");
	free(bad);
	/* 100000 digits in a span record: named by its count. */
	digits = malloc(n + 64);
	assert_non_null(digits);
	strcpy(digits, "\"start_ns\": ");
	memset(digits + 12, '9', n);
	strcpy(digits + 12 + n, ", \"was\": ");
	bad = edit(doc, "\"span_id\": 200,", "\"start_ns\": ", digits);
	same_failure(bad, -EPROTO,
		     "events.spans[199].start_ns: an integer of 100000 digits is out of range "
		     "(at most 18446744073709551615)");
	/* Not JSON still comes first. */
	two = edit(bad, "\"span_id\": 250,", "\"start_ns\": ", "\"start_ns\": x");
	same_failure(two, -EINVAL, "unexpected character");
	free(two);
	free(bad);
	free(digits);
	/* In a member khbpf does not read: json-c's value would not be the document's. */
	bad = edit(doc, NULL, "\"schema_version\"",
		   "\"x\": [0, 18446744073709551616], \"schema_version\"");
	same_failure(bad, -EPROTO, "x[1]: 18446744073709551616 is out of range");
	free(bad);
	/* The bounds themselves are read as they are; leading zeros are no digits. */
	bad = edit(
		doc, NULL, "\"wall_ns\": ",
		"\"wall_ns\": 18446744073709551615, \"x\": -000000000000000000000000001, \"was\": ");
	check_same(bad);
	free(bad);
	free(doc);
}

/* Read a piece at a time within the bounds given, from memory and from a file: want, with part. */
static void bounded(const char *text, uint64_t outline_max, uint64_t element_max, int want,
		    const char *part)
{
	struct report_load_opts o = { .sz = sizeof(o),
				      .outline_max = outline_max,
				      .element_max = element_max };
	char mem[600], file[600];
	struct report_doc *d = NULL;

	if (load_opts(text, STREAM_MEM, o, &d, mem, sizeof(mem)) != want || !strstr(mem, part))
		fail_msg("memory: '%s', want %d '%s'", mem, want, part);
	report_doc__free(d);
	d = NULL;
	load_opts(text, STREAM_FILE, o, &d, file, sizeof(file));
	if (strcmp(mem, file))
		fail_msg("file: '%s', memory: '%s'", file, mem);
	report_doc__free(d);
}

/* "name": [{}, {}, ... n of them], "then": (a member of the document's to follow) */
static char *junk_member(const char *name, size_t n, const char *then)
{
	size_t len = strlen(name) + strlen(then) + 4 * n + 32, i;
	char *buf = malloc(len), *p = buf;

	assert_non_null(buf);
	p += sprintf(p, "\"%s\": [", name);
	for (i = 0; i < n; i++)
		p += sprintf(p, "%s{}", i ? ", " : "");
	sprintf(p, "], \"%s\": ", then);
	return buf;
}

/*
 * What json-c would build of a document is bounded before it is built:
 * a member that takes the outline past its bound, or an element past its
 * own, is refused there, whatever follows.
 */
static void test_report_stream__bounds(void **state)
{
	const char *outline_over = "is too large to read: its collectors member is over the 1 MiB "
				   "bound on memory for the document outside its threads and span "
				   "records";
	const char *element_over = "is too large to read: events.spans[5] is over the 65536 bytes "
				   "bound on memory for one thread or span record";
	char *doc, *bad, *two, *junk;

	(void)state;
	doc = make_doc(300, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED, ",\n    ");
	bounded(doc, 1 << 20, 64 << 10, 0, "");
	/* 3000 empty objects: about 2.4 MB of json-c's, 12 KB of text. */
	junk = junk_member("collectors", 3000, "old_collectors");
	bad = edit(doc, NULL, "\"collectors\": ", junk);
	free(junk);
	bounded(bad, 1 << 20, 64 << 10, -EFBIG, outline_over);
	/* Refused as it is crossed: what follows is never read. */
	two = edit(bad, "\"span_id\": 250,", "\"start_ns\": ", "\"start_ns\": x");
	bounded(two, 1 << 20, 64 << 10, -EFBIG, outline_over);
	free(two);
	/* The default bound has room for it. */
	bounded(bad, 0, 0, -EPROTO, "collectors[0].collector is missing");
	free(bad);

	/* One span record of 200 empty objects: over 64 KiB, not over the default 16 MiB. */
	junk = junk_member("junk", 200, "start_ns");
	bad = edit(doc, "\"span_id\": 6,", "\"start_ns\": ", junk);
	free(junk);
	bounded(bad, 1 << 20, 64 << 10, -EFBIG, element_over);
	bounded(bad, 0, 0, 0, "");
	/* Met by the strict pass that follows a field found wrong elsewhere too. */
	two = edit(bad, "\n  \"threads\": [", "\"thread_id\": 2128", "\"thread_id\": -1");
	bounded(two, 1 << 20, 64 << 10, -EFBIG, element_over);
	bounded(two, 0, 0, -EPROTO, "threads[0].thread_id: expected an unsigned integer");
	free(two);
	free(bad);
	free(doc);
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* The address space the process has now, in bytes. */
static uint64_t vm_size(void)
{
	unsigned long long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%llu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/*
 * In a child, under a limit of the address space 64 MiB past what it has:
 * a document whose tree json-c cannot allocate, more empty objects than
 * the heap has room for (the test's earlier ones left some), the bounds
 * set out of the way. json-c 0.16 then stops as if the tree had ended; the
 * loader says out of memory, not that the text is not JSON. 0 when it did,
 * each way.
 */
static int load_out_of_memory(const char *doc)
{
	struct report_load_opts o = { .sz = sizeof(o), .outline_max = (uint64_t)1 << 40 };
	struct mallinfo2 mi = mallinfo2();
	struct report_doc *d = NULL;
	struct rlimit lim;
	char err[512], *junk, *bad;
	int how, ret, fd;

	/* About 790 bytes an empty object. */
	junk = junk_member("collectors", (mi.fordblks + (256 << 20)) / 700, "old_collectors");
	bad = edit(doc, NULL, "\"collectors\": ", junk);
	fd = file_of(bad, strlen(bad));
	lim.rlim_cur = lim.rlim_max = vm_size() + (64 << 20);
	if (setrlimit(RLIMIT_AS, &lim))
		return 2;
	for (how = STREAM_MEM; how < NR_HOW; how++) {
		err[0] = '\0';
		ret = how == STREAM_FILE ? report_doc__load_fd(fd, &d, &o, err, sizeof(err)) :
					   report_doc__load_string_opts(bad, strlen(bad), &d, &o,
									err, sizeof(err));
		if (ret != -ENOMEM || !strstr(err, "out of memory") || strstr(err, "JSON") || d) {
			fprintf(stderr, "%s: %d: %s\n", how_name[how], ret, err);
			return 1;
		}
	}
	close(fd);
	free(bad);
	free(junk);
	return 0;
}

static void test_report_stream__out_of_memory(void **state)
{
	char *doc, *bad, *junk;
	int status;
	pid_t pid;

	(void)state;
#ifdef UNDER_ASAN
	skip(); /* its allocator reserves far more than any limit would leave */
#endif
	doc = make_doc(10, JSON_C_TO_STRING_SPACED, ", ");
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(load_out_of_memory(doc));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* With the room, such text is JSON, and its first fault a field. */
	junk = junk_member("collectors", 1000, "old_collectors");
	bad = edit(doc, NULL, "\"collectors\": ", junk);
	bounded(bad, 0, 0, -EPROTO, "collectors[0].collector is missing");
	free(junk);
	free(bad);
	free(doc);
}

/* Keys json-c reads by name that a scan of raw bytes would not, and keys given twice. */
static void test_report_stream__odd_keys(void **state)
{
	char *doc, *bad, *two;

	(void)state;
	doc = make_doc(300, JSON_C_TO_STRING_SPACED, ", ");
	/* Spelled with an escape: read plain, whole, as json-c reads it. */
	bad = edit(doc, NULL, "\"threads\": [ {", "\"thr\\u0065ads\": [ {");
	check_same(bad);
	free(bad);
	bad = edit(doc, "\"events\"", "\"spans\": [", "\"sp\\u0061ns\": [");
	check_same(bad);
	/* The raw spelling first, the escaped (empty) one last: json-c keeps the last. */
	two = edit(bad, NULL, "\"events\": {", "\"events\": { \"spans\": [ 1 ], ");
	check_same(two);
	free(two);
	free(bad);
	/* Given twice: the last one counts, as in json-c's tree. */
	bad = edit(doc, NULL, "\"open_spans\"", "\"events\": { \"spans\": 5 }, \"open_spans\"");
	same_failure(bad, -EPROTO, "events.availability is missing");
	two = edit(bad, NULL, "\"events\": { \"spans\": 5 }",
		   "\"events\": { \"version\": 1, \"availability\": { \"status\": \"recorded\", "
		   "\"value\": true }, \"dropped_span_events\": 0, \"sampled_out_events\": 0, "
		   "\"spans\": [] }");
	check_same(two);
	free(two);
	free(bad);
	/* An array given again: the last counts; the first one's elements must still be JSON. */
	bad = edit(doc, NULL, "\"open_spans\"", "\"threads\": [ ], \"open_spans\"");
	check_same(bad);
	free(bad);
	bad = edit(doc, NULL, "\"threads\": [ {",
		   "\"threads\": [ { \"comm\": \"\xa5\" } ], \"threads\": [ {");
	same_failure(bad, -EINVAL, "invalid utf-8");
	free(bad);
	free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_stream__same_as_whole),
		cmocka_unit_test(test_report_stream__malformed),
		cmocka_unit_test(test_report_stream__odd_keys),
		cmocka_unit_test(test_report_stream__out_of_range),
		cmocka_unit_test(test_report_stream__bounds),
		cmocka_unit_test(test_report_stream__out_of_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

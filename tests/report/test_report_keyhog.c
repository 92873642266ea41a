// SPDX-License-Identifier: MIT
/*
 * report_keyhog.c: the keyhog rendering of the report fixtures. The crate's
 * MetricId list; sources mapped with the exact one beside; span-probes set
 * aside; records of other names set aside with their count and the crate's
 * join over those kept; versions 3; bad input fails with one sentence.
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
#include <json-c/json.h>

#include "report/report.h"
#include "report_testdoc.h"

/* text into a scratch file, at offset 0 */
static int file_of(const char *text)
{
	FILE *f = tmpfile();
	int fd;

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fflush(f), 0);
	fd = dup(fileno(f));
	fclose(f);
	assert_true(fd >= 0);
	return fd;
}

static char *slurp_fd(int fd)
{
	off_t len = lseek(fd, 0, SEEK_END);
	char *buf;

	assert_true(len >= 0);
	buf = malloc((size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)len, 0), len);
	buf[len] = '\0';
	return buf;
}

static char *slurp_path(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long len;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/* text's rendering within opts' bounds, parsed; *ret the renderer's return (NULL tree unless 0) */
static struct json_object *render_opts(const char *text, const struct report_load_opts *opts,
				       int *ret, char *err, size_t errlen)
{
	int in = file_of(text), out = file_of("");
	struct json_object *o = NULL;
	char *rendered;

	*ret = opts ? report__keyhog_opts(in, out, opts, err, errlen) :
		      report__keyhog(in, out, err, errlen);
	if (!*ret) {
		rendered = slurp_fd(out);
		o = json_tokener_parse(rendered);
		free(rendered);
		assert_non_null(o);
	}
	close(in);
	close(out);
	return o;
}

static struct json_object *render(const char *text, int *ret, char *err, size_t errlen)
{
	return render_opts(text, NULL, ret, err, errlen);
}

static struct json_object *at(struct json_object *o, const char *path)
{
	char buf[256], *key, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (key = strtok_r(buf, ".", &save); key && o; key = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(key));
		else if (!json_object_object_get_ex(o, key, &o))
			o = NULL;
	}
	assert_non_null(o);
	return o;
}

static const char *str_at(struct json_object *o, const char *path)
{
	return json_object_get_string(at(o, path));
}

static int64_t int_at(struct json_object *o, const char *path)
{
	return json_object_get_int64(at(o, path));
}

/* Replaces every "from" in text (same length or not) with "to"; a new string. */
static char *replace_all(const char *text, const char *from, const char *to)
{
	size_t n = 0, lf = strlen(from), lt = strlen(to);
	const char *p;
	char *out, *q;

	for (p = text; (p = strstr(p, from)); p += lf)
		n++;
	out = malloc(strlen(text) + n * lt + 1);
	assert_non_null(out);
	for (q = out, p = text;;) {
		const char *hit = strstr(p, from);

		if (!hit) {
			strcpy(q, p);
			break;
		}
		memcpy(q, p, (size_t)(hit - p));
		q += hit - p;
		memcpy(q, to, lt);
		q += lt;
		p = hit + lf;
	}
	return out;
}

static void test_report_keyhog__metric_names(void **state)
{
	(void)state;
	assert_int_equal(report__keyhog_metric("source-acquire"), 0);
	assert_int_equal(report__keyhog_metric("phase1-triggers"), 4);
	assert_int_equal(report__keyhog_metric("decode"), 16);
	assert_int_equal(report__keyhog_metric("ml-batch-calls-ge64"), 47);
	assert_int_equal(report__keyhog_metric("teardown"), 127);
	assert_int_equal(report__keyhog_metric("malloc"), -1);
	assert_int_equal(report__keyhog_metric("Decode"), -1);
	assert_int_equal(report__keyhog_metric(""), -1);
}

/* The span fixture, none of whose names is the crate's: every record set aside. */
static void test_report_keyhog__no_crate_names(void **state)
{
	char *text = slurp_path(FIXTURES "/spans.json"), err[256] = "";
	struct json_object *doc = json_tokener_parse(text), *kh, *c;
	size_t i, spans;
	int ret;

	(void)state;
	assert_non_null(doc);
	kh = render(text, &ret, err, sizeof(err));
	assert_int_equal(ret, 0);
	assert_string_equal(str_at(kh, "schema"), "khbpf-evidence-keyhog");
	spans = json_object_array_length(at(doc, "events.spans"));
	assert_true(spans > 0);
	assert_int_equal(json_object_array_length(at(kh, "events.spans")), 0);
	assert_int_equal(int_at(kh, "khbpf_spans.count"), (int64_t)spans);
	assert_int_equal(json_object_array_length(at(kh, "khbpf_spans.spans")), spans);
	/* Set aside as they were: their version stays khbpf's. */
	assert_int_equal(int_at(kh, "khbpf_spans.spans.0.version"), 1);
	assert_int_equal(int_at(kh, "events.version"), 3);
	/* span-probes leaves the crate's list. */
	c = at(kh, "collectors");
	for (i = 0; i < json_object_array_length(c); i++)
		assert_string_not_equal(str_at(json_object_array_get_idx(c, i), "collector"),
					"span-probes");
	assert_string_equal(str_at(kh, "khbpf_collectors.0.collector"), "span-probes");
	assert_int_equal(json_object_array_length(c) + 1,
			 json_object_array_length(at(doc, "collectors")));
	/* Sources: the crate's, the exact one beside. */
	assert_string_equal(str_at(kh, "threads.0.on_cpu_ns.source"), "system-call");
	assert_string_equal(str_at(kh, "threads.0.on_cpu_ns.khbpf_source"), "bpf-tracepoint");
	assert_int_equal(int_at(kh, "threads.0.on_cpu_ns.value.value"),
			 int_at(doc, "threads.0.on_cpu_ns.value.value"));
	assert_string_equal(str_at(kh, "hardware.value.counters.cycles.source"), "perf-event-open");
	assert_false(json_object_object_get_ex(at(kh, "hardware.value.counters.cycles"),
					       "khbpf_source", NULL));
	/* The crate's join over no records; khbpf's beside it, unchanged. */
	assert_int_equal(int_at(kh, "hardware.value.span_aggregation.value.run.span_count"), 0);
	assert_int_equal(
		json_object_array_length(at(kh, "hardware.value.span_aggregation.value.stages")),
		0);
	assert_true(json_object_equal(at(kh, "hardware.value.khbpf_span_aggregation"),
				      at(doc, "hardware.value.span_aggregation")));
	json_object_put(kh);
	json_object_put(doc);
	free(text);
}

/*
 * Two stages renamed to crate names, the nested pair inverted in the
 * crate's order (reporting before decode in the fixture's text order).
 */
static void test_report_keyhog__crate_names_kept(void **state)
{
	char *text = slurp_path(FIXTURES "/spans.json"), *a, *b, err[256] = "";
	struct json_object *doc, *kh, *spans, *s, *stages;
	size_t i, n, outer = 0, inner = 0, kept;
	uint64_t cycles = 0;
	int ret;

	(void)state;
	a = replace_all(text, "\"stage-outer\"", "\"reporting\"");
	b = replace_all(a, "\"stage-inner\"", "\"decode\"");
	doc = json_tokener_parse(b);
	assert_non_null(doc);
	spans = at(doc, "events.spans");
	n = json_object_array_length(spans);
	for (i = 0; i < n; i++) {
		const char *m = str_at(json_object_array_get_idx(spans, i), "metric_id");

		outer += !strcmp(m, "reporting");
		inner += !strcmp(m, "decode");
	}
	assert_true(outer > 0 && inner > 0);
	kh = render(b, &ret, err, sizeof(err));
	assert_int_equal(ret, 0);
	spans = at(kh, "events.spans");
	kept = json_object_array_length(spans);
	assert_int_equal(kept, outer + inner);
	assert_int_equal(int_at(kh, "khbpf_spans.count"), (int64_t)(n - kept));
	for (i = 0; i < kept; i++) {
		s = json_object_array_get_idx(spans, i);
		assert_int_equal(int_at(s, "version"), 3);
		if (!strcmp(str_at(s, "hardware.status"), "recorded"))
			cycles += (uint64_t)(int_at(s, "hardware.value.cycles_end.value") -
					     int_at(s, "hardware.value.cycles_begin.value"));
	}
	/* The join: the kept records' counts, stages in MetricId order (decode 16, reporting 19). */
	assert_int_equal(int_at(kh, "hardware.value.span_aggregation.value.run.span_count"),
			 (int64_t)kept);
	assert_int_equal(int_at(kh, "hardware.value.span_aggregation.value.run.cycles"),
			 (int64_t)cycles);
	stages = at(kh, "hardware.value.span_aggregation.value.stages");
	assert_int_equal(json_object_array_length(stages), 2);
	assert_string_equal(str_at(stages, "0.metric_id"), "decode");
	assert_string_equal(str_at(stages, "1.metric_id"), "reporting");
	json_object_put(kh);
	json_object_put(doc);
	free(a);
	free(b);
	free(text);
}

static void test_report_keyhog__bad_input(void **state)
{
	char *text = slurp_path(FIXTURES "/sched.json"), *bad, err[256] = "";
	struct json_object *kh;
	int ret;

	(void)state;
	kh = render("{\"schema\": \"khbpf-evidence\", ", &ret, err, sizeof(err));
	assert_null(kh);
	assert_int_equal(ret, -EINVAL);
	assert_non_null(strstr(err, "JSON"));
	kh = render("{\"schema\": \"other\"}", &ret, err, sizeof(err));
	assert_int_equal(ret, -EPROTO);
	assert_non_null(strstr(err, "not a khbpf evidence document"));
	/* A source khbpf does not write is not guessed at. */
	bad = replace_all(text, "\"bpf-tracepoint\"", "\"made-up\"");
	kh = render(bad, &ret, err, sizeof(err));
	assert_null(kh);
	assert_int_equal(ret, -EPROTO);
	assert_non_null(strstr(err, "made-up"));
	free(bad);
	free(text);
}

/* "name": [{}, {}, ... n of them], then */
static char *empty_objects(const char *name, size_t n, const char *then)
{
	char *buf = malloc(strlen(name) + strlen(then) + 4 * n + 16), *p = buf;
	size_t i;

	assert_non_null(buf);
	p += sprintf(p, "\"%s\": [", name);
	for (i = 0; i < n; i++)
		p += sprintf(p, "%s{}", i ? ", " : "");
	sprintf(p, "], %s", then);
	return buf;
}

/* The rendering reads as the report does: within its bounds, integers as written or not at all. */
static void test_report_keyhog__bounds(void **state)
{
	struct report_load_opts o = { .sz = sizeof(o),
				      .outline_max = 1 << 20,
				      .element_max = 64 << 10 };
	char *text = slurp_path(FIXTURES "/sched.json"), *bad, *junk, err[512] = "";
	struct json_object *kh;
	int ret;

	(void)state;
	/* Not an object: refused at its first byte, whatever follows. */
	kh = render("[{\"schema\": \"khbpf-evidence\"}, ", &ret, err, sizeof(err));
	assert_null(kh);
	assert_int_equal(ret, -EPROTO);
	assert_non_null(strstr(err, "not a khbpf evidence document"));
	/* Past 64 bits: refused with the path, not written clamped. */
	bad = replace_all(text, "\"wall_ns\": ", "\"wall_ns\": 18446744073709551616, \"was\": ");
	kh = render(bad, &ret, err, sizeof(err));
	assert_null(kh);
	assert_int_equal(ret, -EPROTO);
	assert_string_equal(err, "window.wall_ns: 18446744073709551616 is out of range "
				 "(at most 18446744073709551615)");
	free(bad);
	bad = replace_all(text, "\"thread_id\": 30113", "\"thread_id\": -9223372036854775809");
	kh = render(bad, &ret, err, sizeof(err));
	assert_int_equal(ret, -EPROTO);
	assert_string_equal(err, "threads[1].thread_id: -9223372036854775809 is out of range "
				 "(at least -9223372036854775808)");
	free(bad);
	/* 2^64-1 is written as it is. */
	bad = replace_all(text, "\"wall_ns\": 310708302", "\"wall_ns\": 18446744073709551615");
	kh = render(bad, &ret, err, sizeof(err));
	assert_int_equal(ret, 0);
	assert_true(json_object_get_uint64(at(kh, "window.wall_ns")) == UINT64_MAX);
	json_object_put(kh);
	free(bad);

	/* The fixture fits small bounds; a member of 3000 empty objects does not. */
	kh = render_opts(text, &o, &ret, err, sizeof(err));
	assert_int_equal(ret, 0);
	json_object_put(kh);
	junk = empty_objects("junk", 3000, "\"collectors\": ");
	bad = replace_all(text, "\"collectors\": ", junk);
	free(junk);
	kh = render_opts(bad, &o, &ret, err, sizeof(err));
	assert_null(kh);
	assert_int_equal(ret, -EFBIG);
	assert_string_equal(err, "is too large to read: its junk member is over the 1 MiB bound on "
				 "memory for the document outside its threads and span records");
	free(bad);
	/* ... and 200 in one thread are over 64 KiB. */
	junk = empty_objects("junk", 200, "\"thread_id\": 30111");
	bad = replace_all(text, "\"thread_id\": 30111", junk);
	free(junk);
	kh = render_opts(bad, &o, &ret, err, sizeof(err));
	assert_null(kh);
	assert_int_equal(ret, -EFBIG);
	assert_string_equal(err,
			    "is too large to read: threads[0] is over the 65536 bytes bound on "
			    "memory for one thread or span record");
	free(bad);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_keyhog__metric_names),
		cmocka_unit_test(test_report_keyhog__no_crate_names),
		cmocka_unit_test(test_report_keyhog__crate_names_kept),
		cmocka_unit_test(test_report_keyhog__bad_input),
		cmocka_unit_test(test_report_keyhog__bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

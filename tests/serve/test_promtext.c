// SPDX-License-Identifier: MIT
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/output.h"
#include "serve/promtext.h"
#include "testutil.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static struct promtext *new_builder(bool om)
{
	struct promtext *p;

	assert_int_equal(promtext__new(&p, om), 0);
	assert_non_null(p);
	return p;
}

/* Finishes p and compares the whole text. */
static void expect_text(struct promtext *p, const char *want)
{
	size_t len = 0;
	char *text = promtext__finish(p, &len);

	assert_non_null(text);
	assert_int_equal(len, strlen(text));
	assert_string_equal(text, want);
	free(text);
}

static void add_counter(struct promtext *p)
{
	const struct prom_label l[] = { { "cpu", "0" }, { "reason", "wakeup" } };

	assert_int_equal(promtext__family(p, "khbpf_migrations", PROM_COUNTER, NULL,
					  "Task migrations seen."),
			 0);
	assert_int_equal(promtext__u64(p, l, 2, 42), 0);
	assert_int_equal(promtext__u64(p, NULL, 0, UINT64_MAX), 0);
}

static void test_promtext__counter_text(void **state)
{
	struct promtext *p = new_builder(false);

	(void)state;
	add_counter(p);
	expect_text(p, "# HELP khbpf_migrations_total Task migrations seen.\n"
		       "# TYPE khbpf_migrations_total counter\n"
		       "khbpf_migrations_total{cpu=\"0\",reason=\"wakeup\"} 42\n"
		       "khbpf_migrations_total 18446744073709551615\n");
}

static void test_promtext__counter_openmetrics(void **state)
{
	struct promtext *p = new_builder(true);

	(void)state;
	add_counter(p);
	expect_text(p, "# TYPE khbpf_migrations counter\n"
		       "# HELP khbpf_migrations Task migrations seen.\n"
		       "khbpf_migrations_total{cpu=\"0\",reason=\"wakeup\"} 42\n"
		       "khbpf_migrations_total 18446744073709551615\n"
		       "# EOF\n");
}

static void add_gauge_and_seconds(struct promtext *p)
{
	const struct prom_label l[] = { { "cgroup", "/system.slice" } };

	assert_int_equal(promtext__family(p, "khbpf_tasks", PROM_GAUGE, NULL, "Tasks seen."), 0);
	assert_int_equal(promtext__u64(p, l, 1, 0), 0);
	assert_int_equal(
		promtext__family(p, "khbpf_oncpu_seconds", PROM_COUNTER, "seconds", "On-CPU time."),
		0);
	assert_int_equal(promtext__ns_as_seconds(p, l, 1, 1500000000), 0);
}

static void test_promtext__gauge_and_unit(void **state)
{
	struct promtext *p = new_builder(false);

	(void)state;
	add_gauge_and_seconds(p);
	expect_text(p, "# HELP khbpf_tasks Tasks seen.\n"
		       "# TYPE khbpf_tasks gauge\n"
		       "khbpf_tasks{cgroup=\"/system.slice\"} 0\n"
		       "# HELP khbpf_oncpu_seconds_total On-CPU time.\n"
		       "# TYPE khbpf_oncpu_seconds_total counter\n"
		       "khbpf_oncpu_seconds_total{cgroup=\"/system.slice\"} 1.5\n");

	p = new_builder(true);
	add_gauge_and_seconds(p);
	expect_text(p, "# TYPE khbpf_tasks gauge\n"
		       "# HELP khbpf_tasks Tasks seen.\n"
		       "khbpf_tasks{cgroup=\"/system.slice\"} 0\n"
		       "# TYPE khbpf_oncpu_seconds counter\n"
		       "# UNIT khbpf_oncpu_seconds seconds\n"
		       "# HELP khbpf_oncpu_seconds On-CPU time.\n"
		       "khbpf_oncpu_seconds_total{cgroup=\"/system.slice\"} 1.5\n"
		       "# EOF\n");
}

static void add_info(struct promtext *p)
{
	const struct prom_label l[] = { { "version", "0.1.0" }, { "kernel", "6.1.0" } };

	assert_int_equal(promtext__family(p, "khbpf_build", PROM_INFO, NULL, "Build."), 0);
	assert_int_equal(promtext__u64(p, l, 2, 2), -EINVAL); /* info is always 1 */
	assert_int_equal(promtext__ns_as_seconds(p, l, 2, 1000000000), -EINVAL);
	assert_int_equal(promtext__u64(p, l, 2, 1), 0);
}

static void test_promtext__info(void **state)
{
	struct promtext *p = new_builder(false);

	(void)state;
	add_info(p);
	expect_text(p, "# HELP khbpf_build_info Build.\n"
		       "# TYPE khbpf_build_info gauge\n"
		       "khbpf_build_info{version=\"0.1.0\",kernel=\"6.1.0\"} 1\n");

	p = new_builder(true);
	add_info(p);
	expect_text(p, "# TYPE khbpf_build info\n"
		       "# HELP khbpf_build Build.\n"
		       "khbpf_build_info{version=\"0.1.0\",kernel=\"6.1.0\"} 1\n"
		       "# EOF\n");
}

/* Values 0 and 1 in bucket 0, 2 in bucket 1, 5 in bucket 2, 3 s in the open bucket 3. */
static void add_histogram(struct promtext *p)
{
	const uint64_t b[] = { 2, 1, 1, 1 };
	const struct prom_label l[] = { { "comm", "demo" } };

	assert_int_equal(promtext__family(p, "khbpf_runq_latency_seconds", PROM_HISTOGRAM,
					  "seconds", "Run queue latency."),
			 0);
	assert_int_equal(promtext__u64(p, NULL, 0, 1), -EINVAL);
	assert_int_equal(promtext__histogram_log2_ns(p, l, 1, b, 4, 3000000008ULL), 0);
	assert_int_equal(promtext__histogram_log2_ns(p, NULL, 0, b, 1, 0), 0);
}

static void test_promtext__histogram_text(void **state)
{
	struct promtext *p = new_builder(false);

	(void)state;
	add_histogram(p);
	expect_text(p, "# HELP khbpf_runq_latency_seconds Run queue latency.\n"
		       "# TYPE khbpf_runq_latency_seconds histogram\n"
		       "khbpf_runq_latency_seconds_bucket{comm=\"demo\",le=\"0.000000001\"} 2\n"
		       "khbpf_runq_latency_seconds_bucket{comm=\"demo\",le=\"0.000000003\"} 3\n"
		       "khbpf_runq_latency_seconds_bucket{comm=\"demo\",le=\"0.000000007\"} 4\n"
		       "khbpf_runq_latency_seconds_bucket{comm=\"demo\",le=\"+Inf\"} 5\n"
		       "khbpf_runq_latency_seconds_sum{comm=\"demo\"} 3.000000008\n"
		       "khbpf_runq_latency_seconds_count{comm=\"demo\"} 5\n"
		       "khbpf_runq_latency_seconds_bucket{le=\"+Inf\"} 2\n"
		       "khbpf_runq_latency_seconds_sum 0\n"
		       "khbpf_runq_latency_seconds_count 2\n");
}

static void test_promtext__histogram_openmetrics(void **state)
{
	struct promtext *p = new_builder(true);

	(void)state;
	add_histogram(p);
	expect_text(p, "# TYPE khbpf_runq_latency_seconds histogram\n"
		       "# UNIT khbpf_runq_latency_seconds seconds\n"
		       "# HELP khbpf_runq_latency_seconds Run queue latency.\n"
		       "khbpf_runq_latency_seconds_bucket{comm=\"demo\",le=\"0.000000001\"} 2\n"
		       "khbpf_runq_latency_seconds_bucket{comm=\"demo\",le=\"0.000000003\"} 3\n"
		       "khbpf_runq_latency_seconds_bucket{comm=\"demo\",le=\"0.000000007\"} 4\n"
		       "khbpf_runq_latency_seconds_bucket{comm=\"demo\",le=\"+Inf\"} 5\n"
		       "khbpf_runq_latency_seconds_sum{comm=\"demo\"} 3.000000008\n"
		       "khbpf_runq_latency_seconds_count{comm=\"demo\"} 5\n"
		       "khbpf_runq_latency_seconds_bucket{le=\"+Inf\"} 2\n"
		       "khbpf_runq_latency_seconds_sum 0\n"
		       "khbpf_runq_latency_seconds_count 2\n"
		       "# EOF\n");
}

/* The largest bounds are exact: 2^63 - 1 ns. */
static void test_promtext__histogram_bounds(void **state)
{
	uint64_t b[PROMTEXT_LOG2_MAX + 1] = { 0 };
	uint64_t over[2] = { UINT64_MAX, 1 };
	struct promtext *p = new_builder(false);
	const char *last;
	size_t len;
	char *text;

	(void)state;
	b[30] = 7;
	assert_int_equal(promtext__family(p, "h_seconds", PROM_HISTOGRAM, NULL, NULL), 0);
	assert_int_equal(promtext__histogram_log2_ns(p, NULL, 0, b, 0, 0), -EINVAL);
	assert_int_equal(promtext__histogram_log2_ns(p, NULL, 0, b, PROMTEXT_LOG2_MAX + 1, 0),
			 -EINVAL);
	assert_int_equal(promtext__histogram_log2_ns(p, NULL, 0, over, 2, 0), -EOVERFLOW);
	assert_int_equal(promtext__histogram_log2_ns(p, NULL, 0, b, PROMTEXT_LOG2_MAX, 0), 0);
	text = promtext__finish(p, &len);
	assert_non_null(text);
	/* 63 bounds, +Inf, sum, count, TYPE */
	assert_non_null(strstr(text, "h_seconds_bucket{le=\"1.073741823\"} 0\n"
				     "h_seconds_bucket{le=\"2.147483647\"} 7\n"));
	last = "h_seconds_bucket{le=\"9223372036.854775807\"} 7\n"
	       "h_seconds_bucket{le=\"+Inf\"} 7\n"
	       "h_seconds_sum 0\n"
	       "h_seconds_count 7\n";
	assert_true(len > strlen(last));
	assert_string_equal(text + len - strlen(last), last);
	free(text);
}

static void test_promtext__hostile_label_values(void **state)
{
	const struct prom_label l[] = {
		{ "path", "/a\\b\"c\nd" },
		/* truncated 3-byte, lone continuation, overlong '/', surrogate, > U+10FFFF, 0xff */
		{ "comm", "x\xe2\x82y\x80z\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xff" },
		{ "ok", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
	};
	const char *tail =
		"{path=\"/a\\\\b\\\"c\\nd\","
		"comm=\"x\xef\xbf\xbdy\xef\xbf\xbdz"
		"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
		"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\","
		"ok=\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"} 1\n";
	char want[512];
	struct promtext *p;
	int om;

	(void)state;
	for (om = 0; om < 2; om++) {
		p = new_builder(om);
		assert_int_equal(promtext__family(p, "g", PROM_GAUGE, NULL,
						  "a \"quoted\" \\ help\nline \xff"),
				 0);
		assert_int_equal(promtext__u64(p, l, ARRAY_LEN(l), 1), 0);
		/* Text HELP escapes only \ and newline; OpenMetrics also the quote. */
		snprintf(
			want, sizeof(want), "%sg%s%s",
			om ? "# TYPE g gauge\n# HELP g a \\\"quoted\\\" \\\\ help\\nline \xef\xbf\xbd\n" :
			     "# HELP g a \"quoted\" \\\\ help\\nline \xef\xbf\xbd\n# TYPE g gauge\n",
			tail, om ? "# EOF\n" : "");
		expect_text(p, want);
	}
}

static void expect_seconds(uint64_t ns, const char *want)
{
	char buf[PROMTEXT_SECONDS_MAX];
	size_t n = promtext__fmt_seconds(buf, ns);

	assert_string_equal(buf, want);
	assert_int_equal(n, strlen(want));
}

static void test_promtext__ns_as_seconds(void **state)
{
	struct promtext *p = new_builder(false);

	(void)state;
	expect_seconds(0, "0");
	expect_seconds(1, "0.000000001");
	expect_seconds(10, "0.00000001");
	expect_seconds(999999999, "0.999999999");
	expect_seconds(1000000000, "1");
	expect_seconds(1000000001, "1.000000001");
	expect_seconds(1500000000, "1.5");
	expect_seconds(120000000000ULL, "120");
	expect_seconds(UINT64_MAX, "18446744073.709551615");
	assert_int_equal(strlen("18446744073.709551615") + 1, PROMTEXT_SECONDS_MAX);

	assert_int_equal(promtext__family(p, "t_seconds", PROM_GAUGE, "seconds", NULL), 0);
	assert_int_equal(promtext__ns_as_seconds(p, NULL, 0, 0), 0);
	assert_int_equal(promtext__ns_as_seconds(p, NULL, 0, 1), 0);
	assert_int_equal(promtext__ns_as_seconds(p, NULL, 0, 999999999), 0);
	assert_int_equal(promtext__ns_as_seconds(p, NULL, 0, 1000000000), 0);
	assert_int_equal(promtext__ns_as_seconds(p, NULL, 0, UINT64_MAX), 0);
	expect_text(p, "# TYPE t_seconds gauge\n"
		       "t_seconds 0\n"
		       "t_seconds 0.000000001\n"
		       "t_seconds 0.999999999\n"
		       "t_seconds 1\n"
		       "t_seconds 18446744073.709551615\n");
}

static void test_promtext__name_validation(void **state)
{
	const struct prom_label colon[] = { { "a:b", "x" } };
	const struct prom_label digit[] = { { "1a", "x" } };
	const struct prom_label reserved[] = { { "__name__", "x" } };
	const struct prom_label dup[] = { { "a", "x" }, { "a", "y" } };
	const struct prom_label le[] = { { "le", "1" } };
	const struct prom_label nullv[] = { { "a", NULL } };
	const struct prom_label empty[] = { { "", "x" } };
	const struct prom_label good[] = { { "_a1", "" } };
	struct promtext *p = new_builder(false);
	size_t len;
	char *text;

	(void)state;
	assert_int_equal(promtext__u64(p, NULL, 0, 1), -EINVAL); /* no family yet */
	assert_int_equal(promtext__family(p, "", PROM_GAUGE, NULL, NULL), -EINVAL);
	assert_int_equal(promtext__family(p, NULL, PROM_GAUGE, NULL, NULL), -EINVAL);
	assert_int_equal(promtext__family(p, "1abc", PROM_GAUGE, NULL, NULL), -EINVAL);
	assert_int_equal(promtext__family(p, "a-b", PROM_GAUGE, NULL, NULL), -EINVAL);
	assert_int_equal(promtext__family(p, "a b", PROM_GAUGE, NULL, NULL), -EINVAL);
	assert_int_equal(promtext__family(p, "caf\xc3\xa9", PROM_GAUGE, NULL, NULL), -EINVAL);
	assert_int_equal(promtext__family(p, "__x", PROM_GAUGE, NULL, NULL), -EINVAL);
	assert_int_equal(promtext__family(p, "x", (enum prom_type)42, NULL, NULL), -EINVAL);
	assert_int_equal(promtext__family(p, "x_total", PROM_COUNTER, NULL, NULL), -EINVAL);
	assert_int_equal(promtext__family(p, "x_info", PROM_INFO, NULL, NULL), -EINVAL);
	assert_int_equal(promtext__family(p, "x_seconds", PROM_INFO, "seconds", NULL), -EINVAL);
	assert_int_equal(promtext__family(p, "x_seconds", PROM_GAUGE, "bytes", NULL), -EINVAL);
	assert_int_equal(promtext__family(p, "xseconds", PROM_GAUGE, "seconds", NULL), -EINVAL);
	assert_int_equal(promtext__family(p, "seconds", PROM_GAUGE, "seconds", NULL), -EINVAL);

	assert_int_equal(promtext__family(p, "ns:rule_x", PROM_GAUGE, NULL, NULL), 0);
	assert_int_equal(promtext__u64(p, colon, 1, 1), -EINVAL);
	assert_int_equal(promtext__u64(p, digit, 1, 1), -EINVAL);
	assert_int_equal(promtext__u64(p, reserved, 1, 1), -EINVAL);
	assert_int_equal(promtext__u64(p, dup, 2, 1), -EINVAL);
	assert_int_equal(promtext__u64(p, nullv, 1, 1), -EINVAL);
	assert_int_equal(promtext__u64(p, empty, 1, 1), -EINVAL);
	assert_int_equal(promtext__u64(p, NULL, 1, 1), -EINVAL);
	assert_int_equal(promtext__u64(p, good, 1, 1), 0);
	assert_int_equal(promtext__histogram_log2_ns(p, NULL, 0, (uint64_t[]){ 1 }, 1, 0), -EINVAL);

	/* Each family once, and no sample name of one may be another's. */
	assert_int_equal(promtext__family(p, "ns:rule_x", PROM_GAUGE, NULL, NULL), -EEXIST);
	assert_int_equal(promtext__family(p, "m", PROM_COUNTER, NULL, NULL), 0);
	assert_int_equal(promtext__family(p, "m", PROM_GAUGE, NULL, NULL), -EEXIST);
	assert_int_equal(promtext__family(p, "m_total", PROM_GAUGE, NULL, NULL), -EEXIST);
	assert_int_equal(promtext__family(p, "m_created", PROM_GAUGE, NULL, NULL), -EEXIST);
	assert_int_equal(promtext__family(p, "h", PROM_HISTOGRAM, NULL, NULL), 0);
	assert_int_equal(promtext__histogram_log2_ns(p, le, 1, (uint64_t[]){ 1 }, 1, 0), -EINVAL);
	assert_int_equal(promtext__u64(p, NULL, 0, 1), -EINVAL);
	assert_int_equal(promtext__family(p, "h_bucket", PROM_GAUGE, NULL, NULL), -EEXIST);
	assert_int_equal(promtext__family(p, "h_count", PROM_COUNTER, NULL, NULL), -EEXIST);
	assert_int_equal(promtext__family(p, "i", PROM_INFO, NULL, NULL), 0);
	assert_int_equal(promtext__family(p, "i_info", PROM_GAUGE, NULL, NULL), -EEXIST);

	/* Failed calls left nothing behind. */
	text = promtext__finish(p, &len);
	assert_non_null(text);
	assert_string_equal(text, "# TYPE ns:rule_x gauge\n"
				  "ns:rule_x{_a1=\"\"} 1\n"
				  "# TYPE m_total counter\n"
				  "# TYPE h histogram\n"
				  "# TYPE i_info gauge\n");
	free(text);
}

static void test_promtext__empty(void **state)
{
	(void)state;
	expect_text(new_builder(false), "");
	expect_text(new_builder(true), "# EOF\n");
	promtext__free(new_builder(true));
	promtext__free(NULL);
}

/* Enough text to grow the buffer many times; the NUL is there. */
static void test_promtext__large(void **state)
{
	struct promtext *p = new_builder(false);
	struct prom_label l[1] = { { "n", NULL } };
	char val[32];
	size_t len, i;
	char *text;

	(void)state;
	assert_int_equal(promtext__family(p, "big", PROM_GAUGE, NULL, NULL), 0);
	for (i = 0; i < 20000; i++) {
		snprintf(val, sizeof(val), "%zu", i);
		l[0].value = val;
		assert_int_equal(promtext__u64(p, l, 1, i), 0);
	}
	text = promtext__finish(p, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	assert_non_null(strstr(text, "\nbig{n=\"19999\"} 19999\n"));
	free(text);
}

static void test_promtext__content_type(void **state)
{
	(void)state;
	assert_string_equal(promtext__content_type(false),
			    "text/plain; version=0.0.4; charset=utf-8");
	assert_string_equal(promtext__content_type(true),
			    "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

static void test_promtext__accept(void **state)
{
	(void)state;
	/* Prometheus 2.42's scrape Accept header */
	assert_true(promtext__wants_openmetrics(
		"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
	assert_true(promtext__wants_openmetrics("application/openmetrics-text"));
	assert_true(promtext__wants_openmetrics("Application/OpenMetrics-Text; Version=\"1.0.0\""));
	assert_true(promtext__wants_openmetrics("text/plain;q=0.5, application/openmetrics-text"));
	assert_true(promtext__wants_openmetrics(" application/openmetrics-text ; q=0.001 "));
	assert_true(promtext__wants_openmetrics("application/openmetrics-text;q=1.000"));
	assert_true(promtext__wants_openmetrics("application/openmetrics-text;version=0.0.1"));
	/* equal q: OpenMetrics */
	assert_true(promtext__wants_openmetrics("text/plain,application/openmetrics-text"));

	assert_false(promtext__wants_openmetrics(NULL));
	assert_false(promtext__wants_openmetrics(""));
	assert_false(promtext__wants_openmetrics("*/*"));
	assert_false(promtext__wants_openmetrics("application/*"));
	assert_false(promtext__wants_openmetrics("text/plain"));
	assert_false(promtext__wants_openmetrics("text/html,application/xhtml+xml,*/*;q=0.8"));
	assert_false(promtext__wants_openmetrics("application/openmetrics-text;q=0"));
	assert_false(promtext__wants_openmetrics("application/openmetrics-text;q=0.000"));
	assert_false(promtext__wants_openmetrics("application/openmetrics-text;version=2.0.0"));
	assert_false(promtext__wants_openmetrics("application/openmetrics-textx"));
	assert_false(promtext__wants_openmetrics("application/openmetrics-text;q=2"));
	assert_false(promtext__wants_openmetrics("application/openmetrics-text;q=abc"));
	assert_false(promtext__wants_openmetrics("application/openmetrics-text;q=0.5,text/plain"));
	assert_false(promtext__wants_openmetrics(
		"application/openmetrics-text;q=0.5,text/plain;version=0.0.4;q=0.6"));
}

/*
 * A realistic exposition in both formats, for the promtool check in
 * tests/integration/promtext_promtool.sh (and as a sanity check here).
 */
static char *sample_exposition(bool om, size_t *len)
{
	const struct prom_label build[] = { { "version", "0.1.0" },
					    { "kernel", "6.1.0-18-amd64" } };
	const struct prom_label cg1[] = { { "cgroup", "/system.slice/nginx.service" } };
	const struct prom_label cg2[] = { { "cgroup", "/user.slice/\"odd\\name\n\xff" } };
	const struct prom_label th[] = { { "comm", "kworker/0:1" }, { "cpu", "0" } };
	const uint64_t b1[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 10, 40, 9, 2, 1,
				0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0,	 0, 0, 1 };
	const uint64_t b2[32] = { 0 };
	struct promtext *p = new_builder(om);
	char *text;

	assert_int_equal(promtext__family(p, "khbpf_build", PROM_INFO, NULL,
					  "khbpf version and the host kernel."),
			 0);
	assert_int_equal(promtext__u64(p, build, 2, 1), 0);
	assert_int_equal(promtext__family(p, "khbpf_migrations", PROM_COUNTER, NULL,
					  "Task migrations between CPUs."),
			 0);
	assert_int_equal(promtext__u64(p, cg1, 1, 1234), 0);
	assert_int_equal(promtext__u64(p, cg2, 1, 0), 0);
	assert_int_equal(promtext__family(p, "khbpf_oncpu_seconds", PROM_COUNTER, "seconds",
					  "Time on CPU, \"per cgroup\" \\ path."),
			 0);
	assert_int_equal(promtext__ns_as_seconds(p, cg1, 1, 5123456789ULL), 0);
	assert_int_equal(promtext__ns_as_seconds(p, cg2, 1, 1), 0);
	assert_int_equal(promtext__family(p, "khbpf_threads", PROM_GAUGE, NULL,
					  "Threads seen in the last window."),
			 0);
	assert_int_equal(promtext__u64(p, th, 2, 3), 0);
	assert_int_equal(promtext__family(p, "khbpf_runq_latency_seconds", PROM_HISTOGRAM,
					  "seconds", "Run queue latency, log2 buckets."),
			 0);
	assert_int_equal(promtext__histogram_log2_ns(p, cg1, 1, b1, ARRAY_LEN(b1), 987654321), 0);
	assert_int_equal(promtext__histogram_log2_ns(p, cg2, 1, b2, ARRAY_LEN(b2), 0), 0);
	text = promtext__finish(p, len);
	assert_non_null(text);
	return text;
}

/* Writes both samples to $KHBPF_TEST_OUT/promtext-sample.{prom,om} when set. */
static void test_promtext__sample_files(void **state)
{
	const char *dir = getenv("KHBPF_TEST_OUT");
	char path[4096];
	size_t len;
	char *text;
	int om;

	(void)state;
	for (om = 0; om < 2; om++) {
		text = sample_exposition(om, &len);
		assert_non_null(strstr(text, om ? "# TYPE khbpf_build info\n" :
						  "# TYPE khbpf_build_info gauge\n"));
		if (dir) {
			snprintf(path, sizeof(path), "%s/promtext-sample.%s", dir,
				 om ? "om" : "prom");
			assert_int_equal(output__write_file(path, text, len, NULL), 0);
		}
		free(text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_promtext__counter_text),
		cmocka_unit_test(test_promtext__counter_openmetrics),
		cmocka_unit_test(test_promtext__gauge_and_unit),
		cmocka_unit_test(test_promtext__info),
		cmocka_unit_test(test_promtext__histogram_text),
		cmocka_unit_test(test_promtext__histogram_openmetrics),
		cmocka_unit_test(test_promtext__histogram_bounds),
		cmocka_unit_test(test_promtext__hostile_label_values),
		cmocka_unit_test(test_promtext__ns_as_seconds),
		cmocka_unit_test(test_promtext__name_validation),
		cmocka_unit_test(test_promtext__empty),
		cmocka_unit_test(test_promtext__large),
		cmocka_unit_test(test_promtext__content_type),
		cmocka_unit_test(test_promtext__accept),
		cmocka_unit_test(test_promtext__sample_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

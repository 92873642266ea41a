// SPDX-License-Identifier: MIT
/* report_html.c: escaping, self-containment, and what the pictures hold. */
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

static char *render(struct report_doc *d)
{
	char *buf;
	size_t len;

	assert_int_equal(report__html(d, &buf, &len), 0);
	assert_int_equal(strlen(buf), len);
	report_doc__free(d);
	return buf;
}

static void expect_escape(const char *in, const char *want)
{
	char *out = report_html__escape(in);

	assert_non_null(out);
	assert_string_equal(out, want);
	free(out);
}

static void test_report_html__escape(void **state)
{
	(void)state;
	expect_escape("", "");
	expect_escape("demo-worker1", "demo-worker1");
	expect_escape("<script>alert(\"x\")</script>",
		      "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
	expect_escape("a & b &amp;", "a &amp; b &amp;amp;");
	expect_escape("it's \"quoted\"", "it&#39;s &quot;quoted&quot;");
	expect_escape("<img src=x onerror='y'>", "&lt;img src=x onerror=&#39;y&#39;&gt;");
	/* Bytes that are not UTF-8 become U+FFFD; control characters too. */
	expect_escape("a\xff<", "a\xef\xbf\xbd&lt;");
	expect_escape("x\x01y\x7f", "x&#xFFFD;y&#xFFFD;");
	expect_escape("tab\tkept", "tab\tkept");
	expect_escape("\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9");
	expect_escape(NULL, "");
}

/* Nothing on the page can fetch or run anything. */
static void self_contained(const char *html)
{
	static const char *const banned[] = {
		"<script", "src=",  "href=",   "url(",	  "@import", "http:",
		"https:",  "<link", "<iframe", "<object", "<embed",
	};
	const char *p;
	size_t i;

	for (i = 0; i < sizeof(banned) / sizeof(banned[0]); i++)
		if (strstr(html, banned[i]))
			fail_msg("page contains '%s'", banned[i]);
	/* No event handler attribute (onload=, onclick=...). */
	for (p = html; (p = strstr(p, " on")); p++) {
		const char *q = p + 3;

		while (*q >= 'a' && *q <= 'z')
			q++;
		if (q > p + 3 && *q == '=')
			fail_msg("page has an event handler: %.40s", p);
	}
	assert_non_null(strstr(html, "Content-Security-Policy\" content=\"default-src 'none'"));
	assert_int_equal(strncmp(html, "<!DOCTYPE html>", 15), 0);
	assert_non_null(strstr(html, "</html>\n"));
}

static void test_report_html__gaps_fixture(void **state)
{
	char *html = render(fixture_load("gaps.json"));

	(void)state;
	self_contained(html);
	/* The hostile thread name, escaped where it appears: bar label and table. */
	assert_int_equal(count_of(html, "&lt;script&gt;&amp;&quot;&#39;x"), 2);
	assert_non_null(strstr(html, "No spans in this document (events.availability: "
				     "permission-denied)"));
	assert_non_null(strstr(html, "Histogram: gap (permission-denied)"));
	assert_non_null(strstr(html, "<td class=\"l\">threads[*].on_cpu_ns</td><td>3</td>"
				     "<td class=\"l\">unavailable</td>"));
	assert_non_null(strstr(html, "<td class=\"l\">collector cpu-topology</td>"));
	assert_non_null(strstr(html, "45 field groups (61 values over all records)"));
	/* Gapped threads get no made-up bar: their gaps are written in the bar. */
	assert_int_equal(count_of(html, "on-CPU gap: unavailable, runqueue gap: unavailable"), 3);
	assert_null(strstr(html, "id=\"spans\""));
	free(html);
}

static void test_report_html__spans_fixture(void **state)
{
	static const char *const metrics[] = {
		"stage-hold",	 "stage-inner", "stage-middle", "stage-migrate", "stage-outer",
		"stage-recurse", "stage-sib-a", "stage-sib-b",	"stage-sleep",	 "stage-spin",
	};
	char *html = render(fixture_load("spans.json"));
	const char *p;
	size_t i, drawn = 0;

	(void)state;
	self_contained(html);
	assert_non_null(strstr(html, "<svg id=\"timeline-svg\""));
	assert_non_null(strstr(html, "<svg id=\"rq-histogram\""));
	assert_non_null(strstr(html, "<svg id=\"thread-bars\""));
	/* Three lanes, three bars. */
	assert_int_equal(count_of(html, "fill=\"#eef2f7\""), 3);
	assert_int_equal(count_of(html, "fill=\"#2e7d32\""), 3);
	/* log2 buckets 0-1 ns, then 2 ns up to 1-2 ms: 21 bars, the empty ones included. */
	assert_int_equal(count_of(html, "fill=\"#1565c0\""), 21);
	assert_non_null(strstr(html, "<title>3 waits of 1.05 ms to 2.10 ms</title>"));
	/* Every metric in the legend, in its color (by sorted id). */
	for (i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
		char li[128];

		snprintf(li, sizeof(li),
			 "<li><span class=\"sw\" style=\"background:%s\"></span>%s</li>",
			 i == 0 ? "#4e79a7" :
			 i == 9 ? "#6b6ecf" :
				  "",
			 metrics[i]);
		if (i == 0 || i == 9)
			assert_non_null(strstr(html, li));
		else
			assert_non_null(strstr(html, metrics[i]));
	}
	/* Every span is drawn, alone or within a sub-pixel run of its metric. */
	for (p = html; (p = strstr(p, "<title>stage-")); p++) {
		const char *end = strstr(p, "</title>"), *n = strstr(p, ": ");
		unsigned long k;

		assert_non_null(end);
		if (sscanf(n, ": %lu spans from", &k) == 1)
			drawn += k;
		else
			drawn += strstr(p, "(span ") < end;
	}
	assert_int_equal(drawn, 53);
	/* The span held open: dashed, and said so. */
	assert_int_equal(count_of(html, "stroke-dasharray"), 1);
	assert_non_null(strstr(html, "<title>stage-hold: from 19.3 ms, still open when the window "
				     "ended (span 53)</title>"));
	assert_non_null(strstr(html, "<title>stage-outer: from 2.51 ms, 23.8 us inclusive, 10.9 us "
				     "exclusive (span 1)</title>"));
	/* The span table, by exclusive time. */
	p = strstr(html, "id=\"spans\"");
	assert_non_null(p);
	assert_true(strstr(p, "stage-spin") < strstr(p, "stage-migrate"));
	assert_non_null(strstr(p, "<td>4</td><td>15.8 ms</td><td>15.8 ms</td><td>50.8%</td>"));
	free(html);
}

/* A thousand sub-pixel spans in a row are one rectangle that says so. */
static void test_report_html__merges_sub_pixel_spans(void **state)
{
	size_t i, len = 0, cap = 1100 * 700;
	char *spans = malloc(cap), one[1024], *text, *html;

	(void)state;
	assert_non_null(spans);
	spans[0] = '\0';
	for (i = 0; i < 1000; i++) {
		testdoc_span(one, sizeof(one), i + 1, 0, "tiny", 1000000 + i * 100, 50, 3);
		len += (size_t)snprintf(spans + len, cap - len, "%s%s", i ? "," : "", one);
	}
	/* 1 s over ~970 px: the thousand spans cover 100 us, a tenth of a pixel. */
	text = testdoc(1000000000, TESTDOC_THREAD(3, "w"), spans, "");
	html = render(testdoc_load(text));
	assert_int_equal(count_of(html, "<title>tiny"), 1);
	assert_non_null(strstr(html, "<title>tiny: 1000 spans from 1.00 ms to 1.10 ms, each "
				     "narrower than a pixel</title>"));
	free(html);
	free(text);
	free(spans);
}

static void test_report_html__scheduler_only(void **state)
{
	char *html = render(fixture_load("sched.json"));

	(void)state;
	self_contained(html);
	assert_non_null(strstr(html, "No spans in this document (events.availability: "
				     "collector-disabled)"));
	assert_null(strstr(html, "timeline-svg"));
	assert_int_equal(count_of(html, "fill=\"#2e7d32\""), 10);
	assert_non_null(strstr(html, "demo-sleeper <tspan class=\"axis\">30113</tspan>"));
	assert_non_null(strstr(html, "<title>49334 waits of 512 ns to 1.02 us</title>"));
	free(html);
}

/* A process tree: each process nested under its parent, threads with their pid, gaps folded. */
static void test_report_html__process_tree(void **state)
{
	char *page = render(fixture_load("tree.json"));
	const char *sec, *tree, *a, *c, *d, *gaps;

	(void)state;
	sec = strstr(page, "<section id=\"processes\">");
	assert_non_null(sec);
	assert_non_null(strstr(sec, "<h2>Processes (command-tree)</h2>"));
	tree = strstr(sec, "<td class=\"l\" style=\"padding-left:8px\">22687</td>");
	/* tree-c (22695) at depth 1, its double-forked tree-d (22697) under it at depth 2. */
	c = strstr(sec, "<td class=\"l\" style=\"padding-left:24px\">22695</td>");
	d = strstr(sec, "<td class=\"l\" style=\"padding-left:40px\">22697</td>");
	a = strstr(sec, "<td class=\"l\" style=\"padding-left:24px\">22691</td>");
	assert_non_null(tree);
	assert_non_null(c);
	assert_non_null(d);
	assert_non_null(a);
	assert_true(tree < a && a < c && c < d);
	assert_non_null(strstr(sec, "killed by signal 15"));
	/* Threads name their process; gaps with nothing to fix are folded into rows. */
	assert_non_null(strstr(page, "<tr><td>22692</td><td>22691</td>"));
	gaps = strstr(page, "<section id=\"gaps\">");
	assert_non_null(gaps);
	assert_non_null(strstr(gaps, "more field groups</td>"));
	assert_null(strstr(gaps, "hardware.value.topology.affinity_cpus"));
	free(page);
}

/* Each process's title beside its comm: the one at the end, and at its join when it differs. */
static void test_report_html__process_titles(void **state)
{
	char *text = testdoc_titled_tree(), *page = render(testdoc_load(text));
	const char *sec = strstr(page, "<section id=\"processes\">");

	(void)state;
	assert_non_null(sec);
	assert_non_null(strstr(sec, "<th class=\"l\">comm</th><th class=\"l\">title</th>"));
	assert_non_null(strstr(sec,
			       "<td class=\"l\">treeleaf</td><td class=\"w\">postgres: bench "
			       "postgres [local] UPDATE (at its join: postgres: bench postgres "
			       "[local] idle)</td>"));
	assert_non_null(strstr(sec, "<td class=\"l\">tree-a</td><td class=\"w\">postgres: "
				    "checkpointer</td>"));
	assert_non_null(strstr(sec, "<td class=\"l\">tree</td><td class=\"w\">build/workloads/tree "
				    "/tmp/t.jsonl build/workloads/treeleaf</td>"));
	assert_non_null(strstr(sec, "<td class=\"l\">tree-k</td><td class=\"w\">-</td>"));
	free(page);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_html__escape),
		cmocka_unit_test(test_report_html__process_titles),
		cmocka_unit_test(test_report_html__gaps_fixture),
		cmocka_unit_test(test_report_html__spans_fixture),
		cmocka_unit_test(test_report_html__merges_sub_pixel_spans),
		cmocka_unit_test(test_report_html__scheduler_only),
		cmocka_unit_test(test_report_html__process_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

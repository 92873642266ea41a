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
	/*
	 * The hostile thread name, escaped where it appears: the answer's bar
	 * label and its tooltip, the thread bar's label and tooltip, the table.
	 */
	assert_int_equal(count_of(html, "&lt;script&gt;&amp;&quot;&#39;x"), 5);
	assert_non_null(strstr(html, "No spans in this document (events.availability: "
				     "permission-denied)"));
	assert_non_null(strstr(html, "Histogram: gap (permission-denied)"));
	assert_non_null(strstr(html, "<td class=\"l\">threads[*].on_cpu_ns</td><td>3</td>"
				     "<td class=\"l\">unavailable</td>"));
	assert_non_null(strstr(html, "<td class=\"l\">collector cpu-topology</td>"));
	assert_non_null(strstr(html, "45 field groups (61 values over all records)"));
	/* Gapped threads get no made-up bar: their gaps are written in the bar (the answer's too). */
	assert_int_equal(count_of(html, "on-CPU gap: unavailable, runqueue gap: unavailable"), 6);
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
	/* Three lanes, three bars, and the three busiest threads' bars of the answer. */
	assert_int_equal(count_of(html, "fill=\"#eef2f7\""), 3);
	assert_int_equal(count_of(html, "fill=\"#2e7d32\""), 6);
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
	/* Ten thread bars and the answer's five busiest. */
	assert_int_equal(count_of(html, "fill=\"#2e7d32\""), 15);
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

/* The page's first <section> up to its end (malloc'd). */
static char *first_section(const char *page)
{
	const char *sec = strstr(page, "<section"), *end;
	char *s;

	assert_non_null(sec);
	end = strstr(sec, "</section>");
	assert_non_null(end);
	s = strndup(sec, (size_t)(end - sec));
	assert_non_null(s);
	return s;
}

/* The first section is the answer: totals, the busiest, the slowest and where their time went. */
static void test_report_html__first_section_spans(void **state)
{
	char *page = render(fixture_load("spans.json")), *sec = first_section(page);
	const char *a, *b, *c;

	(void)state;
	assert_int_equal(strncmp(sec, "<section id=\"answer\">", 21), 0);
	assert_non_null(strstr(sec, "Totals over 3 threads: on-CPU 22.6 ms, waiting for a CPU "
				    "6.31 ms; 0.548 of 2 CPUs busy on average"));
	assert_non_null(strstr(sec, "<h3>Busiest threads by on-CPU (3 of 3)</h3>"));
	a = strstr(sec, ">spanned <tspan class=\"axis\">2130</tspan>");
	b = strstr(sec, ">spanned <tspan class=\"axis\">2131</tspan>");
	c = strstr(sec, ">spanned <tspan class=\"axis\">2128</tspan>");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	assert_true(a < b && b < c);
	assert_non_null(strstr(sec, "<title>on a CPU 10.5 ms</title>"));
	/* The slowest by inclusive time, with where their time went. */
	a = strstr(sec, "<tr title=\"stage-spin\"><td class=\"l\">stage-spin</td><td "
			"class=\"w\">-</td><td>15.8 ms</td><td>4</td><td>3.95 ms</td><td "
			"class=\"w\">11.7 ms on-CPU + 4.10 ms runqueue; blocked time not in the "
			"document</td>");
	b = strstr(sec, "<td class=\"l\">stage-migrate</td>");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	assert_null(strstr(sec, "stage-hold"));
	/* With spans, the timeline comes next. */
	assert_non_null(strstr(page, "</section>\n<section id=\"timeline\">"));
	assert_true(strstr(page, "<section id=\"answer\">") <
		    strstr(page, "<section id=\"timeline\">"));
	free(sec);
	free(page);
}

/*
 * Without spans the answer is first and the empty timeline's notice last;
 * of a set of processes, the busiest named by title with the whole title
 * as the tooltip, and the threads' bars busiest first.
 */
static void test_report_html__first_section_titles(void **state)
{
	char *text = testdoc_titled_tree(), *page = render(testdoc_load(text)),
	     *sec = first_section(page);
	const char *a, *b, *bars, *gaps, *tl;

	(void)state;
	assert_non_null(strstr(sec, "Totals over 14 threads: on-CPU 119 ms, waiting for a CPU "
				    "81.4 ms"));
	assert_non_null(strstr(sec, "<p>Set: command-tree, 9 processes (8 forked in the window), "
				    "9 exited</p>"));
	assert_non_null(strstr(sec, "<h3>Busiest processes by on-CPU (5 of 9), named by title "
				    "(else comm)</h3>"));
	a = strstr(sec, "<title>postgres: checkpointer (pid 22691)</title>postgres: checkpointer "
			"<tspan class=\"axis\">22691</tspan>");
	b = strstr(sec,
		   "<title>build/workloads/tree /tmp/t.jsonl build/workloads/treeleaf (pid "
		   "22687)</title>build/workloads/tree /tmp/t.jsonl build/workloads... <tspan");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	assert_null(strstr(sec, "tree-k"));
	/* No spans: no notice up front; it closes the page. */
	assert_null(strstr(sec, "No spans"));
	tl = strstr(page, "<section id=\"timeline\">");
	gaps = strstr(page, "<section id=\"gaps\">");
	assert_non_null(tl);
	assert_non_null(gaps);
	assert_true(gaps < tl);
	/* Thread bars busiest first: tree-a-spin (29.6 ms) before tree-rootw (20.7 ms). */
	bars = strstr(page, "<svg id=\"thread-bars\"");
	assert_non_null(bars);
	a = strstr(bars, ">tree-a-spin <tspan class=\"axis\">22692</tspan>");
	b = strstr(bars, ">tree-rootw <tspan class=\"axis\">22690</tspan>");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	/* A process's main thread by its title; the tooltip says the thread and its process. */
	assert_non_null(strstr(bars, "<title>tree-a (tid 22691) of postgres: checkpointer (pid "
				     "22691)</title>postgres: checkpointer <tspan"));
	free(sec);
	free(page);
	free(text);
}

/*
 * keys.json: the overflow said in the first section, the slowest by key with
 * the key as its tooltip; the key table by inclusive time, (other) in its
 * place, each row's tooltip its key.
 */
static void test_report_html__keys(void **state)
{
	char *page = render(fixture_load("keys.json")), *sec = first_section(page);
	const char *tab, *a, *b, *c;

	(void)state;
	assert_non_null(strstr(sec, "blocked 18.9 ms (lock 70.1%, io 17.5%, sleep 11.5%, other "
				    "0.7%)"));
	assert_non_null(strstr(sec, "<p class=\"overflow\">The keys of stage-recurse overflowed: "
				    "(other) holds 6 of 10 calls (60.0%) and 66.0 us of 197 us "
				    "(33.4%).</p>"));
	assert_non_null(strstr(sec, "<tr title=\"stage-outer: 0\"><td class=\"l\">stage-outer</td>"
				    "<td class=\"w\">0</td><td>84.6 us</td>"));
	assert_non_null(strstr(sec, "<td class=\"w\">58.3 us on-CPU + 12.0 us runqueue + 2.19 ms "
				    "blocked (sleep 100.0%)</td><td class=\"w\">a timer 2.19 ms "
				    "x2</td></tr>"));
	tab = strstr(page, "<h3>Keys of stage-recurse (3), by inclusive time</h3>");
	assert_non_null(tab);
	a = strstr(tab, "<tr title=\"5\"><td class=\"w\">5</td><td>2</td><td>20.0%</td>"
			"<td>74.0 us</td><td>37.4%</td>");
	b = strstr(tab, "<tr title=\"(other)\"><td class=\"w\"><b>(other)</b></td><td>6</td>"
			"<td>60.0%</td><td>66.0 us</td><td>33.4%</td>");
	c = strstr(tab, "<tr title=\"4\"><td class=\"w\">4</td><td>2</td>");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	assert_true(a < b && b < c);
	free(sec);
	free(page);
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
		cmocka_unit_test(test_report_html__first_section_spans),
		cmocka_unit_test(test_report_html__first_section_titles),
		cmocka_unit_test(test_report_html__keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

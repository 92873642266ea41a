// SPDX-License-Identifier: MIT
/* report_text.c: the terminal report, line by line against the fixtures' numbers. */
#include <errno.h>
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

static char *render_opts(struct report_doc *d, bool all)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(all ? report__text_all(d, f, true) : report__text(d, f), 0);
	assert_int_equal(fclose(f), 0);
	report_doc__free(d);
	return buf;
}

static char *render(struct report_doc *d)
{
	return render_opts(d, false);
}

/* --all: every gap on its own line, those with nothing to fix too. */
static char *render_all(struct report_doc *d)
{
	return render_opts(d, true);
}

/* The whole line is in the report. */
static void has_line(const char *out, const char *line)
{
	const char *p = out;
	size_t n = strlen(line);

	while ((p = strstr(p, line))) {
		if ((p == out || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
			return;
		p += n;
	}
	fail_msg("no line '%s' in:\n%s", line, out);
}

static const char *after(const char *out, const char *what)
{
	const char *p = strstr(out, what);

	if (!p)
		fail_msg("no '%s' in:\n%s", what, out);
	return p;
}

static void test_report_text__spans_fixture(void **state)
{
	static const char *const by_exclusive[] = {
		"stage-spin",  "stage-migrate", "stage-sleep", "stage-middle", "stage-recurse",
		"stage-outer", "stage-inner",	"stage-sib-b", "stage-sib-a",  "stage-hold",
	};
	char *out = render_all(fixture_load("spans.json"));
	const char *p, *table;
	size_t i;

	(void)state;
	has_line(out, "khbpf report: pid 2128 (spanned), run, window 41.2 ms, ended by duration");
	has_line(out, "  target:   still running when the window ended");
	has_line(out,
		 "  totals:   on-CPU 22.6 ms, runqueue delay 6.31 ms, switches 14 voluntary + 5 "
		 "involuntary, 5 migrations, 19 timeslices");
	has_line(out, "  parallelism: 0.548 CPUs busy on average, of 2");
	has_line(out, "Threads (3)");
	has_line(out, "        2131 spanned            10.2 ms   4.16 ms        5        3      2 "
		      "      8  born, exited");
	has_line(out, "        2128 spanned            1.84 ms   21.1 us        4        0      1 "
		      "      4  born");
	has_line(out, "       total                    22.6 ms   6.31 ms       14        5      5 "
		      "     19");
	has_line(out, "Runqueue delay, each wait on its own (all threads): 19 waits, 6.31 ms");
	has_line(out, "  (2 of them before the first look, known only as a sum)");
	has_line(out,
		 "       0 ns -> 1 ns     : 9          |****************************************|");
	has_line(out,
		 "    1.05 ms -> 2.10 ms  : 3          |*************                           |");
	has_line(out,
		 "Spans: 52 records, 1 still open at the end, 0 dropped, 0 sampled out; 10 of 10 "
		 "probe sites attached");
	has_line(out,
		 "  stage-spin                        4     15.8 ms    15.8 ms  50.8%   3.95 ms  "
		 " 4.19 ms   8.39 ms     0");
	has_line(out,
		 "  stage-recurse                    20      129 us    44.4 us   0.1%   6.44 us  "
		 " 8.19 us   16.4 us     0");
	has_line(out,
		 "  stage-hold                        0        0 ns       0 ns   0.0%         -  "
		 "       -         -     1");
	/* Sorted by exclusive time, largest first (ties by name). */
	table = after(out, "METRIC (by exclusive time)");
	for (i = 0, p = table; i < sizeof(by_exclusive) / sizeof(by_exclusive[0]); i++)
		p = after(p, by_exclusive[i]);
	has_line(out, "Loss: none (every loss counter is zero)");
	has_line(
		out,
		"Gaps: 33 field groups (162 values over all records); collectors not available: 1");
	has_line(out,
		 "  hardware-counters: unsupported — perf_event_open: no hardware PMU events on "
		 "this host (No such file or directory); run on bare metal or a VM with a "
		 "virtual PMU");
	has_line(out,
		 "  events.spans[*].task_id (52): unavailable — not observable from the kernel: "
		 "khbpf sees threads, not the program's own task ids; nothing to fix");
	has_line(out,
		 "  hardware.value.counters.{cycles, instructions, cache_references, "
		 "cache_misses, branch_instructions, branch_misses, stalled_cycles_frontend, "
		 "stalled_cycles_backend}: unsupported — this host exposes no PMU; run on bare "
		 "metal or a VM with a virtual PMU (vPMU)");
	free(out);
}

static void test_report_text__sched_fixture(void **state)
{
	char *out = render_all(fixture_load("sched.json"));

	(void)state;
	has_line(out, "  target:   exited with 0");
	has_line(out, "Threads (10)");
	has_line(out, "       30121 demo-pong          56.6 ms    123 ms    26385     1652      1 "
		      "  28037  born, exited");
	has_line(out, "Runqueue delay, each wait on its own (all threads): 56718 waits, 1.66 s");
	has_line(out, "Migrations by distance: smt-sibling 0, same-llc 32, other-llc 0, "
		      "other-node 0, unknown 0");
	has_line(out,
		 "     512 ns -> 1.02 us  : 49334      |****************************************|");
	has_line(out,
		 "     256 ns -> 511 ns   : 1          |                                        |");
	has_line(out, "Spans: none recorded (events.availability collector-disabled) — no span "
		      "sites: annotate functions with KHBPF_SPAN or pass --span [OBJECT:]SYMBOL");
	has_line(out, "  span-probes: disabled — no annotated span functions (KHBPF_SPAN) in the "
		      "target and no --span given");
	has_line(out,
		 "  hardware.value.topology.affinity_cpus: unavailable — read at the window's "
		 "end, after the target had exited: nothing to fix (attach to a live process to "
		 "get it)");
	assert_null(strstr(out, "METRIC"));
	free(out);
}

/* A document full of gaps: every gap listed, each with its reason and a fix. */
static void test_report_text__gaps_fixture(void **state)
{
	char *out = render_all(fixture_load("gaps.json"));

	(void)state;
	has_line(out, "  target:   exit status: gap (unavailable)");
	has_line(out,
		 "  totals:   on-CPU -, runqueue delay -, switches - voluntary + - involuntary, "
		 "- migrations, - timeslices");
	has_line(out, "        4243 <script>&\"'x             -         -        -        -      - "
		      "      -  born, exited");
	has_line(out, "        4244 worker-2                 -         -        -        -      - "
		      "      -  exited");
	has_line(out,
		 "Runqueue delay histogram: permission-denied — BPF was not allowed: run khbpf "
		 "as root or grant CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE");
	has_line(out, "Spans: none recorded (events.availability permission-denied) — uprobes need "
		      "CAP_BPF and CAP_PERFMON: run khbpf as root");
	has_line(out, "Loss: threads_vanished 1, proc_read_errors 2");
	has_line(out,
		 "Gaps: 45 field groups (61 values over all records); collectors not available: 5");
	has_line(out, "  cpu-topology: unsupported — this host, kernel or CPU does not provide it; "
		      "collect on one that does (see 'khbpf probe')");
	has_line(out,
		 "  thread-utilization: unavailable — it exists but could not be read this "
		 "time; check the collectors' details and the loss counters, then collect again");
	has_line(out, "  target.exe: permission-denied — /proc/PID/exe of another user's process "
		      "needs root");
	has_line(out, "  hardware.value.counters.stalled_cycles_memory: unsupported — Linux has no "
		      "perf event for memory stall cycles: always a gap on Linux");
	has_line(out,
		 "  threads[*].on_cpu_ns (3): unavailable — the thread was not seen at both "
		 "ends of the window (/proc cannot see threads that end inside it); run as root "
		 "so BPF records every thread");
	has_line(out, "  threads[*].bpf_detail (3): permission-denied — BPF was not allowed: run "
		      "khbpf as root or grant CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE");
	has_line(out, "  hardware.value.utilization.threads[0].utilization_milli: "
		      "legacy-v1-not-recorded — the producer did not record this field; collect "
		      "again with a current khbpf");
	has_line(out,
		 "  hardware.value.topology.{physical_cores, packages, numa_nodes}: unsupported "
		 "— this host's sysfs has no CPU topology; run where /sys/devices/system/cpu is "
		 "complete");
	free(out);
}

/* A loss counter the kernel does not keep is unknown, not "zero". */
static void test_report_text__loss_unknown(void **state)
{
	char *text, *out;

	(void)state;
	text = testdoc(1000, TESTDOC_THREAD(1, "a"), "",
		       ",\"loss\":{\"version\":1,"
		       "\"threads_vanished\":{\"status\":\"recorded\",\"value\":0},"
		       "\"khbpf_sched_switch_recursion_misses\":{\"status\":\"unavailable\","
		       "\"reason\":\"unsupported\"}}");
	out = render(testdoc_load(text));
	has_line(out, "Loss: none counted; 1 loss counter unknown (gaps)");
	free(out);
	free(text);
	text = testdoc(1000, TESTDOC_THREAD(1, "a"), "",
		       ",\"loss\":{\"version\":1,"
		       "\"threads_vanished\":{\"status\":\"recorded\",\"value\":2},"
		       "\"a_recursion_misses\":{\"status\":\"unavailable\","
		       "\"reason\":\"unsupported\"},"
		       "\"b_recursion_misses\":{\"status\":\"unavailable\","
		       "\"reason\":\"unsupported\"}}");
	out = render(testdoc_load(text));
	has_line(out, "Loss: threads_vanished 2; 2 loss counters unknown (gaps)");
	free(out);
	free(text);
}

/* A name that would drive the terminal is printed inert. */
static void test_report_text__control_characters(void **state)
{
	char *text = testdoc(1000, TESTDOC_THREAD(3, "a\\u001b[2Jb\\u0007"), "", "");
	char *out = render(testdoc_load(text));

	(void)state;
	assert_null(strchr(out, '\x1b'));
	assert_null(strchr(out, '\a'));
	assert_non_null(strstr(out, "a?[2Jb?"));
	free(out);
	free(text);
}

/* A process tree: the processes busiest first with the set's totals, threads under them. */
static void test_report_text__tree_fixture(void **state)
{
	char *out = render(fixture_load("tree.json"));
	const char *procs, *threads, *a, *b;

	(void)state;
	has_line(out, "  set:      command-tree, 9 processes (8 forked in the window), 9 exited");
	has_line(out, "Processes (9), busiest first");
	has_line(out, "       22691    22687 tree-a                 3   35.0 ms   4.22 ms       20 "
		      "       8      2      28  born, exited 0");
	has_line(out, "       22687    22686 tree                   2   33.5 ms   16.8 ms       15 "
		      "       4      2      19  root, exited 0");
	has_line(out, "       22696    22687 tree-k                 1   2.95 ms   6.06 ms        1 "
		      "       2      0       3  born, killed by signal 15");
	has_line(out, "       22697    22695 tree-d                 2   8.84 ms   12.7 ms        7 "
		      "       4      1      11  born, exited 5");
	has_line(out, "       total                                14    119 ms   81.4 ms       56 "
		      "      30      5      86");
	has_line(out, "Threads (14), by process");
	/* tree-a's threads under it, before tree's (busier first). */
	procs = strstr(out, "Processes (9)");
	threads = strstr(out, "Threads (14)");
	assert_non_null(procs);
	assert_non_null(threads);
	a = strstr(threads, "  pid 22691 (tree-a)\n");
	b = strstr(threads, "  pid 22687 (tree)\n");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	assert_non_null(strstr(a, "tree-a-spin"));
	assert_true(strstr(a, "tree-a-spin") < b);
	assert_null(strstr(out, "more processes"));
	free(out);
}

/*
 * Processes named by their titles (at the end, else at their join; else
 * comm), cut to the column; the roles of the titled ones grouped, the
 * others by comm, busiest first, with their sums.
 */
static void test_report_text__titles(void **state)
{
	char *text = testdoc_titled_tree(), *out, want[256], root[64], longname[64];
	const char *roles;

	(void)state;
	out = render(testdoc_load(text));
	snprintf(root, sizeof(root), "%.45s...",
		 "build/workloads/tree /tmp/t.jsonl build/workloads/treeleaf");
	snprintf(longname, sizeof(longname), "%.45s...", TESTDOC_LONG_TITLE);
	has_line(out, "  title:    build/workloads/tree /tmp/t.jsonl build/workloads/treeleaf");
	snprintf(want, sizeof(want), "  %10s %8s %-48s %7s %9s %9s %8s %8s %6s %7s", "PID", "PPID",
		 "NAME", "THREADS", "ON-CPU", "RQ-DELAY", "VOL", "INVOL", "MIGR", "SLICES");
	has_line(out, want);
	snprintf(want, sizeof(want),
		 "       22691    22687 %-48s       3   35.0 ms   4.22 ms       20        8      2 "
		 "     28  born, exited 0",
		 "postgres: checkpointer");
	has_line(out, want);
	snprintf(want, sizeof(want),
		 "       22687    22686 %-48s       2   33.5 ms   16.8 ms       15        4      2 "
		 "     19  root, exited 0",
		 root);
	has_line(out, want);
	/* A kernel thread's gaps: its comm. */
	assert_non_null(strstr(out, "       22696    22687 tree-k      "));
	has_line(out, "  pid 22694 (postgres: bench postgres [local] UPDATE)");
	has_line(out, "  pid 22691 (postgres: checkpointer)");
	snprintf(want, sizeof(want), "  pid 22702 (%s)", longname);
	has_line(out, want);

	roles = strstr(out,
		       "Processes by role (8), busiest first: a title's first words, else comm\n");
	assert_non_null(roles);
	assert_true(roles < strstr(out, "Threads (14)"));
	snprintf(want, sizeof(want), "  %-45s %5s %7s %9s %9s %8s %8s %6s %7s", "ROLE", "PROCS",
		 "THREADS", "ON-CPU", "RQ-DELAY", "VOL", "INVOL", "MIGR", "SLICES");
	has_line(roles, want);
	/* 22694 and 22695: their threads and on-CPU summed. */
	snprintf(want, sizeof(want), "\n  %-45s %5d %7d %9s ", "postgres: bench postgres [local]",
		 2, 3, "21.6 ms");
	assert_non_null(strstr(roles, want));
	snprintf(want, sizeof(want), "\n  %-45s %5d %7d %9s ", "postgres: checkpointer", 1, 3,
		 "35.0 ms");
	assert_non_null(strstr(roles, want));
	snprintf(want, sizeof(want), "\n  %-45s %5d ",
		 "postgres: 15/main: autovacuum worker postgres", 1);
	assert_non_null(strstr(roles, want));
	/* tree's title is its argv: under its comm, as the untitled ones. */
	snprintf(want, sizeof(want), "\n  %-45s %5d %7d %9s ", "tree", 1, 2, "33.5 ms");
	assert_non_null(strstr(roles, want));
	/* Busiest first. */
	assert_true(strstr(roles, "  postgres: checkpointer ") < strstr(roles, "  tree "));
	assert_true(strstr(roles, "  tree ") <
		    strstr(roles, "  postgres: bench postgres [local] "));
	free(out);
	free(text);

	/* Without a titled role, no such table; untitled documents keep COMM. */
	out = render(fixture_load("tree.json"));
	assert_null(strstr(out, "Processes by role"));
	assert_non_null(strstr(out, " COMM "));
	free(out);
}

/* Without --all, the gaps with nothing to fix, and those the host cannot give, fold. */
static void test_report_text__gaps_fold(void **state)
{
	char *out = render(fixture_load("sched.json"));
	const char *fix, *fold;

	(void)state;
	assert_null(strstr(out, "hardware.value.topology.affinity_cpus:"));
	fix = strstr(out, "collect with --bpf-stats");
	fold = strstr(out, "  unsupported: ");
	assert_non_null(fix);
	assert_non_null(fold);
	/* The ones a user can fix first. */
	assert_true(fix < fold);
	assert_non_null(strstr(fold, "which this host, kernel or CPU cannot give or need no fix "
				     "(khbpf report --all lists them)\n"));
	free(out);
}

/* More processes than the table shows: the busiest 20, then one line; --all: every one. */
static void test_report_text__many_processes(void **state)
{
	struct json_object *root = json_object_from_file(FIXTURES "/tree.json"), *arr, *t;
	struct report_doc *d = NULL;
	char err[256], *buf = NULL;
	const char *text;
	size_t len = 0, i;
	FILE *f;

	(void)state;
	assert_non_null(root);
	assert_true(json_object_object_get_ex(root, "processes", &arr));
	/* 21 more copies of tree-c under new pids: 30 processes in all. */
	t = json_object_array_get_idx(arr, 6);
	for (i = 0; i < 21; i++) {
		struct json_object *c = NULL;

		assert_int_equal(json_object_deep_copy(t, &c, NULL), 0);
		json_object_object_add(c, "pid", json_object_new_uint64(40000 + i));
		json_object_array_add(arr, c);
	}
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	assert_int_equal(report_doc__load_string(text, strlen(text), &d, err, sizeof(err)), 0);
	f = open_memstream(&buf, &len);
	assert_int_equal(report__text(d, f), 0);
	fclose(f);
	has_line(buf, "  10 more processes (khbpf report --all lists every one)");
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_int_equal(report__text_all(d, f, true), 0);
	fclose(f);
	assert_null(strstr(buf, "more processes"));
	assert_non_null(strstr(buf, "       40020 "));
	free(buf);
	report_doc__free(d);
	json_object_put(root);
}

/* The first n lines of out (malloc'd): what a terminal of n lines shows first. */
static char *first_lines(const char *out, size_t n)
{
	const char *p = out, *nl;
	char *s;

	while (n-- && (nl = strchr(p, '\n')))
		p = nl + 1;
	s = strndup(out, (size_t)(p - out));
	assert_non_null(s);
	return s;
}

/*
 * The first screen (24 lines) answers: the totals, the busiest threads, the
 * slowest metrics by inclusive time and where their time went; the detail
 * sections come after it.
 */
static void test_report_text__first_screen_spans(void **state)
{
	char *out = render(fixture_load("spans.json")), *top = first_lines(out, 24);
	const char *a, *b, *c;

	(void)state;
	has_line(top, "khbpf report: pid 2128 (spanned), run, window 41.2 ms, ended by duration");
	has_line(top,
		 "  totals:   on-CPU 22.6 ms, runqueue delay 6.31 ms, switches 14 voluntary + 5 "
		 "involuntary, 5 migrations, 19 timeslices");
	has_line(top, "  busiest:  3 of 3 threads by on-CPU");
	a = after(top, "\n      10.5 ms on-CPU   2.13 ms runqueue  spanned (tid 2130)\n");
	b = after(top, "\n      10.2 ms on-CPU   4.16 ms runqueue  spanned (tid 2131)\n");
	c = after(top, "\n      1.84 ms on-CPU   21.1 us runqueue  spanned (tid 2128)\n");
	assert_true(a < b && b < c);
	has_line(top, "  slowest:  5 span metrics by inclusive time");
	/* By inclusive time: stage-outer (132 us) before stage-recurse (129 us). */
	a = after(top,
		  "\n      15.8 ms  stage-spin: 4 calls, mean 3.95 ms\n"
		  "               = 11.7 ms on-CPU + 4.10 ms runqueue; blocked time not in the "
		  "document\n");
	b = after(top, "\n      10.5 ms  stage-migrate: 4 calls, mean 2.63 ms\n");
	c = after(top, "\n      4.55 ms  stage-sleep: 4 calls, mean 1.14 ms\n");
	assert_true(a < b && b < c);
	assert_true(after(top, "\n       132 us  stage-outer: 4 calls") <
		    after(top, "\n       129 us  stage-recurse: 20 calls"));
	assert_null(strstr(top, "stage-hold"));
	/* The details follow. */
	assert_null(strstr(top, "Runqueue delay, each wait"));
	assert_true(strstr(out, "  slowest:") < strstr(out, "\nThreads (3)\n"));
	free(top);
	free(out);
}

/* Without spans: the totals and the busiest threads, named, first. */
static void test_report_text__first_screen_sched(void **state)
{
	char *out = render(fixture_load("sched.json")), *top = first_lines(out, 24);

	(void)state;
	has_line(
		top,
		"  totals:   on-CPU 615 ms, runqueue delay 1.66 s, switches 53356 voluntary + 3362 "
		"involuntary, 32 migrations, 56718 timeslices");
	has_line(top, "  busiest:  5 of 10 threads by on-CPU");
	assert_true(
		after(top,
		      "\n       164 ms on-CPU    144 ms runqueue  demo-spinner (tid 30114)\n") <
		after(top, "\n      84.6 ms on-CPU    223 ms runqueue  demo-mover (tid 30119)\n"));
	has_line(top, "      79.7 ms on-CPU    228 ms runqueue  demo-worker3 (tid 30118)");
	assert_null(strstr(top, "demo-ping"));
	assert_null(strstr(top, "slowest:"));
	free(top);
	free(out);
}

/* Of a set of processes, the busiest processes, each named by its title, else its comm. */
static void test_report_text__first_screen_titles(void **state)
{
	char *text = testdoc_titled_tree(), *out = render(testdoc_load(text)),
	     *top = first_lines(out, 24), want[256];
	const char *a, *b, *c;

	(void)state;
	has_line(top, "  busiest:  5 of 9 processes by on-CPU, named by title (else comm)");
	a = after(top, "\n      35.0 ms on-CPU   4.22 ms runqueue  postgres: checkpointer (pid "
		       "22691)\n");
	b = after(top, "\n      33.5 ms on-CPU   16.8 ms runqueue  build/workloads/tree "
		       "/tmp/t.jsonl build/workloads/treeleaf (pid 22687)\n");
	c = after(top, "\n      16.7 ms on-CPU   15.0 ms runqueue  postgres: bench postgres "
		       "[local] UPDATE (pid 22694)\n");
	assert_true(a < b && b < c);
	has_line(top, "      8.84 ms on-CPU   12.7 ms runqueue  tree-d (pid 22697)");
	/* 71 bytes: within the answer's 72, whole (the process table cuts it to 48). */
	snprintf(want, sizeof(want), "      7.55 ms on-CPU   4.81 ms runqueue  %s (pid 22702)",
		 TESTDOC_LONG_TITLE);
	has_line(top, want);
	assert_null(strstr(top, "tree-k"));
	free(top);
	free(out);
	free(text);
}

/*
 * A keyed metric whose keys overflowed (keys.json: --key stage-recurse=arg1:int
 * --max-keys 2): said at the top with (other)'s share; the slowest by key;
 * the key table by inclusive time with (other) in its place.
 */
static void test_report_text__keys(void **state)
{
	char *out = render(fixture_load("keys.json")), *top = first_lines(out, 24);
	const char *tab, *a, *b, *c;

	(void)state;
	has_line(top,
		 "  totals:   on-CPU 17.6 ms, runqueue delay 150 us, blocked 18.9 ms, switches 8 "
		 "voluntary + 2 involuntary, 2 migrations, 10 timeslices");
	has_line(top,
		 "  overflow: the keys of stage-recurse overflowed: (other) holds 6 of 10 calls "
		 "(60.0%) and 66.0 us of 197 us (33.4%)");
	assert_true(strstr(top, "  overflow: ") < strstr(top, "  busiest: "));
	has_line(top, "  slowest:  5 span metrics and keys (of keyed metrics) by inclusive time");
	has_line(top, "      2.26 ms  stage-sleep: 2 calls, mean 1.13 ms");
	has_line(top, "               = 58.3 us on-CPU + 12.0 us runqueue + 2.19 ms blocked (sleep "
		      "100.0%); top waker a timer 2.19 ms x2");
	/* A keyed metric by its keys: stage-outer's "0", never stage-outer's sum. */
	a = after(top, "\n      84.6 us  stage-outer \"0\": 1 call, mean 84.6 us\n");
	b = after(top, "\n      74.0 us  stage-recurse \"5\": 2 calls, mean 37.0 us\n");
	assert_true(a < b);
	assert_null(strstr(top, "  107 us  stage-outer"));
	/* (other), 66.0 us, between key 5 (74.0 us) and key 4 (57.5 us). */
	tab = after(out, "  Keys of stage-recurse (--key; 3 of 3, (other) among them, by inclusive "
			 "time)\n");
	a = after(tab,
		  "\n  5                                        2  20.0%    74.0 us  37.4%    16.5 "
		  "us   37.0 us   32.8 us   65.5 us     0\n");
	b = after(tab,
		  "\n  (other)                                  6  60.0%    66.0 us  33.4%    43.0 "
		  "us   11.0 us   16.4 us   32.8 us     0\n");
	c = after(tab,
		  "\n  4                                        2  20.0%    57.5 us  29.1%    14.5 "
		  "us   28.7 us   32.8 us   65.5 us     0\n");
	assert_true(a < b && b < c);
	free(top);
	free(out);
}

/* (other) further down than the table's first 10 keys: shown after them all the same. */
static void test_report_text__keys_other_far(void **state)
{
	struct json_object *root = json_object_from_file(FIXTURES "/keys.json"), *arr, *m, *keys;
	struct report_doc *d = NULL;
	char err[256], *out, text[32];
	size_t i;
	const char *tab;

	(void)state;
	assert_non_null(root);
	assert_true(json_object_object_get_ex(root, "span_metrics", &arr));
	for (i = 0, m = NULL; i < json_object_array_length(arr); i++) {
		m = json_object_array_get_idx(arr, i);
		if (!strcmp(json_object_get_string(json_object_object_get(m, "metric_id")),
			    "stage-recurse"))
			break;
	}
	assert_true(i < json_object_array_length(arr));
	assert_true(json_object_object_get_ex(m, "keys", &keys));
	/* Ten more keys, each with more time than (other)'s 66.0 us: 13 in all. */
	for (i = 0; i < 10; i++) {
		struct json_object *k = NULL, *key;

		assert_int_equal(
			json_object_deep_copy(json_object_array_get_idx(keys, 1), &k, NULL), 0);
		json_object_object_add(k, "inclusive_ns", json_object_new_uint64(100000 + i));
		key = json_object_object_get(k, "key");
		snprintf(text, sizeof(text), "k%zu", i);
		json_object_object_add(key, "text", json_object_new_string(text));
		json_object_array_add(keys, k);
	}
	assert_int_equal(report_doc__load_string(json_object_to_json_string(root),
						 strlen(json_object_to_json_string(root)), &d, err,
						 sizeof(err)),
			 0);
	json_object_put(root);
	out = render(d);
	tab = after(out, "  Keys of stage-recurse (--key; 11 of 13, (other) among them, by "
			 "inclusive time)\n");
	/* k9 (100009 ns) first, k0 the tenth; 5, 4 and (other) below; (other) shown after them. */
	assert_true(after(tab, "\n  k9 ") < after(tab, "\n  k0 "));
	assert_true(after(tab, "\n  k0 ") <
		    after(tab, "\n  (2 more keys not shown; (other) below is in its place by time "
			       "among them)\n  (other)                                  6  60.0%"));
	assert_null(strstr(tab, "\n  5 "));
	assert_null(strstr(tab, "\n  4 "));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_text__spans_fixture),
		cmocka_unit_test(test_report_text__sched_fixture),
		cmocka_unit_test(test_report_text__gaps_fixture),
		cmocka_unit_test(test_report_text__control_characters),
		cmocka_unit_test(test_report_text__loss_unknown),
		cmocka_unit_test(test_report_text__tree_fixture),
		cmocka_unit_test(test_report_text__many_processes),
		cmocka_unit_test(test_report_text__titles),
		cmocka_unit_test(test_report_text__gaps_fold),
		cmocka_unit_test(test_report_text__first_screen_spans),
		cmocka_unit_test(test_report_text__first_screen_sched),
		cmocka_unit_test(test_report_text__first_screen_titles),
		cmocka_unit_test(test_report_text__keys),
		cmocka_unit_test(test_report_text__keys_other_far),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

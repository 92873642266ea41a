// SPDX-License-Identifier: MIT
/*
 * serve_filters: a filter that matches nothing at the start is refused;
 * later, each window's look says when one stops or starts matching (a pid
 * given to a later process does not match), as khbpf_filter_matches and a
 * log line. Fixture trees stand for /proc and the cgroup v2 mount.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "collect/proctarget.h"
#include "serve/promtext.h"
#include "serve/serve_filters.h"
#include "testutil.h"

/* /proc/PID/stat with this state and starttime (field 22). */
static void put_stat(const char *root, int pid, char state, unsigned long long start)
{
	char rel[64], text[256];

	snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
	snprintf(text, sizeof(text),
		 "%d (a b) c) %c 1 %d %d 0 -1 4194304 10 0 0 0 5 6 0 0 20 0 1 0 %llu 1000 100\n",
		 pid, state, pid, pid, start);
	tree_put(root, rel, text);
}

static char *metrics(const struct serve_filters *f)
{
	struct promtext *p;
	size_t len;
	char *text;

	assert_int_equal(promtext__new(&p, false), 0);
	assert_int_equal(serve_filters__render(f, p), 0);
	text = promtext__finish(p, &len);
	assert_non_null(text);
	return text;
}

static void expect_metric(const struct serve_filters *f, const char *line)
{
	char *text = metrics(f);

	if (!strstr(text, line))
		fail_msg("no '%s' in:\n%s", line, text);
	free(text);
}

/* The starttime field after a comm with spaces and ')' in it; and the live one. */
static void test_serve_filters__start_ticks(void **state)
{
	char *dir = tree_new("filters-ticks"), buf[4096], *p;
	unsigned long long want = 0;
	uint64_t ticks;
	bool alive;
	FILE *f;
	int i;

	(void)state;
	put_stat(dir, 100, 'S', 424242);
	put_stat(dir, 101, 'Z', 7);
	assert_int_equal(proctarget__start_ticks(dir, 100, &ticks, &alive), 0);
	assert_int_equal(ticks, 424242);
	assert_true(alive);
	assert_int_equal(proctarget__start_ticks(dir, 101, &ticks, &alive), 0);
	assert_false(alive);
	assert_int_equal(proctarget__start_ticks(dir, 102, &ticks, &alive), -ESRCH);
	tree_free(dir);

	/* This process: field 22 of its own stat, counted by hand. */
	f = fopen("/proc/self/stat", "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')') + 2;
	for (i = 3; i < 22; i++)
		p = strchr(p, ' ') + 1;
	want = strtoull(p, NULL, 10);
	assert_int_equal(proctarget__start_ticks("/", getpid(), &ticks, &alive), 0);
	assert_int_equal(ticks, want);
	assert_true(alive);
}

static void test_serve_filters__refused_at_start(void **state)
{
	char *dir = tree_new("filters-start"), mnt[PATH_MAX], err[512];
	const char *empty[] = { "/empty" }, *nested[] = { "/b" };
	pid_t zombie[] = { 101 }, gone[] = { 102 };
	struct serve_filters_opts o = { .sz = sizeof(o), .root = dir, .cg_mount = mnt };
	struct serve_filters *f;

	(void)state;
	snprintf(mnt, sizeof(mnt), "%s/cg", dir);
	put_stat(dir, 101, 'Z', 7);
	tree_put(dir, "cg/empty/cgroup.procs", "");
	tree_put(dir, "cg/empty/child/cgroup.procs", "");
	tree_put(dir, "cg/b/cgroup.procs", "");
	tree_put(dir, "cg/b/c/cgroup.procs", "100\n");

	o.cgroups = empty;
	o.nr_cgroups = 1;
	assert_int_equal(serve_filters__new(&f, &o, err, sizeof(err)), -ENOENT);
	assert_null(f);
	assert_non_null(strstr(err, "--cgroup /empty: no process in it now"));

	/* A process in a cgroup below it is one of it. */
	o.cgroups = nested;
	assert_int_equal(serve_filters__new(&f, &o, err, sizeof(err)), 0);
	expect_metric(f, "khbpf_filter_matches{filter=\"cgroup\",value=\"/b\"} 1\n");
	serve_filters__free(f);

	o.nr_cgroups = 0;
	o.pids = zombie;
	o.nr_pids = 1;
	assert_int_equal(serve_filters__new(&f, &o, err, sizeof(err)), -ESRCH);
	assert_non_null(strstr(err, "--pid 101"));
	o.pids = gone;
	assert_int_equal(serve_filters__new(&f, &o, err, sizeof(err)), -ESRCH);
	tree_free(dir);
}

/* Emptied, then matched again: each change is a metric and a log line. */
static void test_serve_filters__emptied_later(void **state)
{
	char *dir = tree_new("filters-later"), mnt[PATH_MAX], err[512], log[4096] = "";
	const char *cgs[] = { "/svc" };
	pid_t pids[] = { 100 };
	struct serve_filters_opts o = {
		.sz = sizeof(o),
		.root = dir,
		.cg_mount = mnt,
		.pids = pids,
		.nr_pids = 1,
		.cgroups = cgs,
		.nr_cgroups = 1,
	};
	struct serve_filters *f;

	(void)state;
	snprintf(mnt, sizeof(mnt), "%s/cg", dir);
	put_stat(dir, 100, 'S', 5000);
	tree_put(dir, "cg/svc/cgroup.procs", "100\n");
	o.log = fmemopen(log, sizeof(log), "w");
	assert_non_null(o.log);
	setvbuf(o.log, NULL, _IONBF, 0);
	assert_int_equal(serve_filters__new(&f, &o, err, sizeof(err)), 0);
	serve_filters__update(f, 1);
	assert_string_equal(log, "");
	expect_metric(f, "khbpf_filter_matches{filter=\"pid\",value=\"100\"} 1\n");

	/* pid 100 is another process now, and the cgroup is empty. */
	put_stat(dir, 100, 'S', 9000);
	tree_put(dir, "cg/svc/cgroup.procs", "");
	serve_filters__update(f, 2);
	expect_metric(f, "khbpf_filter_matches{filter=\"pid\",value=\"100\"} 0\n");
	expect_metric(f, "khbpf_filter_matches{filter=\"cgroup\",value=\"/svc\"} 0\n");
	assert_non_null(strstr(log, "window 2: --pid 100 matches no process now"));
	assert_non_null(strstr(log, "window 2: --cgroup /svc matches no process now"));

	/* The process serve started with is not back: the pid stays unmatched. */
	tree_put(dir, "cg/svc/cgroup.procs", "100\n");
	serve_filters__update(f, 3);
	expect_metric(f, "khbpf_filter_matches{filter=\"pid\",value=\"100\"} 0\n");
	expect_metric(f, "khbpf_filter_matches{filter=\"cgroup\",value=\"/svc\"} 1\n");
	assert_non_null(strstr(log, "window 3: --cgroup /svc matches a process again"));
	assert_null(strstr(log, "window 3: --pid"));

	serve_filters__free(f);
	fclose(o.log);
	tree_free(dir);
}

/* No filter: no family (serve without --pid/--cgroup watches the host). */
static void test_serve_filters__none(void **state)
{
	char *text;

	(void)state;
	text = metrics(NULL);
	assert_null(strstr(text, "khbpf_filter_matches"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serve_filters__start_ticks),
		cmocka_unit_test(test_serve_filters__refused_at_start),
		cmocka_unit_test(test_serve_filters__emptied_later),
		cmocka_unit_test(test_serve_filters__none),
	};

	return cmocka_run_group_tests_name("serve_filters", tests, NULL, NULL);
}

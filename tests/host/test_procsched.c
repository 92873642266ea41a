// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host/procsched.h"
#include "testutil.h"

#define FIXTURES "tests/fixtures/procsched"

/* Any byte pattern the parsers must leave alone on failure. */
#define SENTINEL 0x5a5a5a5a5a5a5a5aull

static void thread_fill(struct procsched_thread *t)
{
	memset(t, 0, sizeof(*t));
	t->nr_voluntary_switches = SENTINEL;
	t->nr_involuntary_switches = SENTINEL;
	t->nr_migrations = SENTINEL;
	t->sum_exec_runtime_ns = SENTINEL;
	t->run_delay_ns = SENTINEL;
	t->pcount = SENTINEL;
}

static void assert_sched_untouched(const struct procsched_thread *t)
{
	assert_false(t->has_sched);
	assert_true(t->nr_voluntary_switches == SENTINEL);
	assert_true(t->nr_involuntary_switches == SENTINEL);
	assert_true(t->nr_migrations == SENTINEL);
}

static void assert_schedstat_untouched(const struct procsched_thread *t)
{
	assert_false(t->has_schedstat);
	assert_true(t->sum_exec_runtime_ns == SENTINEL);
	assert_true(t->run_delay_ns == SENTINEL);
	assert_true(t->pcount == SENTINEL);
}

static char *slurp(const char *path)
{
	static char buf[16384];
	size_t n;
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	assert_true(n > 0 && n < sizeof(buf) - 1);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int parse_sched_err(const char *text)
{
	struct procsched_thread t;
	int err;

	thread_fill(&t);
	err = procsched__parse_sched(text, &t);
	if (err) {
		assert_sched_untouched(&t);
		assert_schedstat_untouched(&t);
	}
	return err;
}

static int parse_schedstat_err(const char *text)
{
	struct procsched_thread t;
	int err;

	thread_fill(&t);
	err = procsched__parse_schedstat(text, &t);
	if (err) {
		assert_sched_untouched(&t);
		assert_schedstat_untouched(&t);
	}
	return err;
}

static void test_procsched__parse_real(void **state)
{
	struct procsched_thread t;

	(void)state;
	thread_fill(&t);
	assert_int_equal(procsched__parse_sched(slurp(FIXTURES "/real.sched"), &t), 0);
	assert_true(t.has_sched);
	assert_int_equal(t.nr_voluntary_switches, 8);
	assert_int_equal(t.nr_involuntary_switches, 1);
	assert_int_equal(t.nr_migrations, 3);
	/* A sched file says nothing about schedstat's fields. */
	assert_schedstat_untouched(&t);
}

static void test_procsched__parse_odd_spacing(void **state)
{
	struct procsched_thread t;

	(void)state;
	/* Tabs, no blank before ':', trailing blanks, header comm "nr_voluntary_sw". */
	thread_fill(&t);
	assert_int_equal(procsched__parse_sched(slurp(FIXTURES "/odd-spacing.sched"), &t), 0);
	assert_true(t.has_sched);
	assert_int_equal(t.nr_voluntary_switches, 17);
	assert_int_equal(t.nr_involuntary_switches, 4);
	assert_true(t.nr_migrations == UINT64_MAX);
	assert_schedstat_untouched(&t);
}

static void test_procsched__parse_schedstat(void **state)
{
	struct procsched_thread t;

	(void)state;
	thread_fill(&t);
	assert_int_equal(procsched__parse_schedstat("102431 75796 2\n", &t), 0);
	assert_true(t.has_schedstat);
	assert_int_equal(t.sum_exec_runtime_ns, 102431);
	assert_int_equal(t.run_delay_ns, 75796);
	assert_int_equal(t.pcount, 2);
	assert_sched_untouched(&t);

	thread_fill(&t);
	assert_int_equal(procsched__parse_schedstat("18446744073709551615 0 00007", &t), 0);
	assert_true(t.sum_exec_runtime_ns == UINT64_MAX);
	assert_int_equal(t.run_delay_ns, 0);
	assert_int_equal(t.pcount, 7);

	assert_int_equal(parse_schedstat_err(""), -EINVAL);
	assert_int_equal(parse_schedstat_err("\n"), -EINVAL);
	assert_int_equal(parse_schedstat_err("1 2"), -EINVAL);
	assert_int_equal(parse_schedstat_err("1 2\n"), -EINVAL);
	assert_int_equal(parse_schedstat_err("1 2 3 4\n"), -EINVAL);
	assert_int_equal(parse_schedstat_err("1 2 3 \n"), -EINVAL);
	assert_int_equal(parse_schedstat_err("1  2 3\n"), -EINVAL);
	assert_int_equal(parse_schedstat_err(" 1 2 3\n"), -EINVAL);
	assert_int_equal(parse_schedstat_err("1\t2 3\n"), -EINVAL);
	assert_int_equal(parse_schedstat_err("1 2 3\n\n"), -EINVAL);
	assert_int_equal(parse_schedstat_err("1 2 -3\n"), -EINVAL);
	assert_int_equal(parse_schedstat_err("1 2 +3\n"), -EINVAL);
	assert_int_equal(parse_schedstat_err("1 2 3x\n"), -EINVAL);
	assert_int_equal(parse_schedstat_err("1 0x2 3\n"), -EINVAL);
	assert_int_equal(parse_schedstat_err("18446744073709551616 0 0\n"), -ERANGE);
	assert_int_equal(parse_schedstat_err("0 0 99999999999999999999\n"), -ERANGE);
	/* Malformed wins over overflow wherever each is. */
	assert_int_equal(parse_schedstat_err("18446744073709551616 0 x\n"), -EINVAL);
	assert_int_equal(parse_schedstat_err(NULL), -EINVAL);
	assert_int_equal(procsched__parse_schedstat("1 2 3\n", NULL), -EINVAL);
}

#define LINE_VOL "nr_voluntary_switches                        :                   41\n"
#define LINE_INVOL "nr_involuntary_switches                      :                    7\n"
#define LINE_MIGR "se.nr_migrations                             :                    5\n"
#define HEADER \
	"w (1, #threads: 1)\n-------------------------------------------------------------------\n"

static void test_procsched__parse_sched_malformed(void **state)
{
	(void)state;
	assert_int_equal(parse_sched_err(HEADER LINE_VOL LINE_INVOL LINE_MIGR), 0);

	/* Each key missing in turn. */
	assert_int_equal(parse_sched_err(HEADER LINE_INVOL LINE_MIGR), -EINVAL);
	assert_int_equal(parse_sched_err(HEADER LINE_VOL LINE_MIGR), -EINVAL);
	assert_int_equal(parse_sched_err(HEADER LINE_VOL LINE_INVOL), -EINVAL);
	assert_int_equal(parse_sched_err(""), -EINVAL);
	assert_int_equal(parse_sched_err("\n"), -EINVAL);
	assert_int_equal(parse_sched_err(HEADER), -EINVAL);
	assert_int_equal(parse_sched_err(NULL), -EINVAL);
	assert_int_equal(procsched__parse_sched(HEADER LINE_VOL LINE_INVOL LINE_MIGR, NULL),
			 -EINVAL);

	/* Junk numbers. */
	assert_int_equal(parse_sched_err(LINE_VOL LINE_INVOL "se.nr_migrations : 12a\n"), -EINVAL);
	assert_int_equal(parse_sched_err(LINE_VOL LINE_INVOL "se.nr_migrations : -1\n"), -EINVAL);
	assert_int_equal(parse_sched_err(LINE_VOL LINE_INVOL "se.nr_migrations : +1\n"), -EINVAL);
	assert_int_equal(parse_sched_err(LINE_VOL LINE_INVOL "se.nr_migrations : 1.5\n"), -EINVAL);
	assert_int_equal(parse_sched_err(LINE_VOL LINE_INVOL "se.nr_migrations : 0x10\n"), -EINVAL);
	assert_int_equal(parse_sched_err(LINE_VOL LINE_INVOL "se.nr_migrations : 1 2\n"), -EINVAL);
	assert_int_equal(parse_sched_err(LINE_VOL LINE_INVOL "se.nr_migrations :\n"), -EINVAL);
	assert_int_equal(parse_sched_err(LINE_VOL LINE_INVOL "se.nr_migrations : 5\r\n"), -EINVAL);
	assert_int_equal(parse_sched_err(LINE_VOL LINE_INVOL "se.nr_migrations : : 5\n"), -EINVAL);
	/* A repeated key is ambiguous. */
	assert_int_equal(parse_sched_err(LINE_VOL LINE_INVOL LINE_MIGR LINE_VOL), -EINVAL);

	/* Overflow, and malformed winning over overflow in either order. */
	assert_int_equal(
		parse_sched_err(LINE_VOL LINE_INVOL "se.nr_migrations : 18446744073709551616\n"),
		-ERANGE);
	assert_int_equal(parse_sched_err("nr_voluntary_switches : 99999999999999999999\n" LINE_INVOL
					 "se.nr_migrations : x\n"),
			 -EINVAL);
	assert_int_equal(parse_sched_err("nr_voluntary_switches : x\n" LINE_INVOL
					 "se.nr_migrations : 99999999999999999999\n"),
			 -EINVAL);
	assert_int_equal(
		parse_sched_err("nr_voluntary_switches : 99999999999999999999\n" LINE_INVOL),
		-EINVAL);
}

static void test_procsched__key_prefix(void **state)
{
	struct procsched_thread t;

	(void)state;
	/*
	 * Keys that contain, extend or end with the real ones come first and
	 * carry values that would be wrong or malformed if they matched.
	 */
	thread_fill(&t);
	assert_int_equal(
		procsched__parse_sched("nr_voluntary_switches (5, #threads: 1)\n"
				       "nr_voluntary_switches_total : 999\n"
				       "xnr_voluntary_switches : 998\n"
				       "nr_voluntary_switchesjunk : nope\n"
				       "nr_involuntary_switches2: 997\n"
				       "se.nr_migrations.cold : 996\n"
				       "nr_migrations : 995\n"
				       "se.nr_migrations_total : -1\n"
				       "nr_voluntary : 994\n"
				       "nr_voluntary_switches nr_involuntary_switches : 993\n"
				       "nr_switches : 992\n" LINE_VOL LINE_INVOL LINE_MIGR,
				       &t),
		0);
	assert_int_equal(t.nr_voluntary_switches, 41);
	assert_int_equal(t.nr_involuntary_switches, 7);
	assert_int_equal(t.nr_migrations, 5);

	/* Look-alikes alone are not the keys. */
	assert_int_equal(parse_sched_err("nr_voluntary_switches_total : 1\n"
					 "nr_involuntary_switches2 : 2\n"
					 "se.nr_migrations.cold : 3\n"),
			 -EINVAL);
	assert_int_equal(parse_sched_err("se.nr_migrations.x : 3\n" LINE_VOL LINE_INVOL), -EINVAL);
	/* nr_migrations is not se.nr_migrations. */
	assert_int_equal(parse_sched_err("nr_migrations : 3\n" LINE_VOL LINE_INVOL), -EINVAL);
}

static void assert_fixture_777(const struct procsched_thread *t)
{
	assert_int_equal(t->tid, 777);
	assert_string_equal(t->comm, "schedmix");
	assert_true(t->has_sched);
	assert_int_equal(t->nr_voluntary_switches, 41);
	assert_int_equal(t->nr_involuntary_switches, 7);
	assert_int_equal(t->nr_migrations, 5);
	assert_true(t->has_schedstat);
	assert_int_equal(t->sum_exec_runtime_ns, 275923639);
	assert_int_equal(t->run_delay_ns, 1044029);
	assert_int_equal(t->pcount, 48);
}

/* No sched file, no comm file: the comm comes from stat, ')' and all. */
static void assert_fixture_778(const struct procsched_thread *t)
{
	assert_int_equal(t->tid, 778);
	assert_string_equal(t->comm, "odd ) name");
	assert_false(t->has_sched);
	assert_int_equal(t->nr_voluntary_switches, 0);
	assert_int_equal(t->nr_involuntary_switches, 0);
	assert_int_equal(t->nr_migrations, 0);
	assert_true(t->has_schedstat);
	assert_int_equal(t->sum_exec_runtime_ns, 5000000);
	assert_int_equal(t->run_delay_ns, 0);
	assert_int_equal(t->pcount, 1);
}

static void test_procsched__fixture_tree(void **state)
{
	struct procsched_snapshot s;
	struct procsched_thread t;

	(void)state;
	assert_int_equal(procsched__read(FIXTURES, 777, 16, &s), 0);
	assert_int_equal(s.nr_threads, 2);
	assert_int_equal(s.dropped_threads, 0);
	assert_int_equal(s.vanished_threads, 0);
	assert_fixture_777(&s.threads[0]);
	assert_fixture_778(&s.threads[1]);
	procsched__free(&s);
	assert_null(s.threads);
	assert_int_equal(s.nr_threads, 0);

	assert_int_equal(procsched__read(FIXTURES "//", 777, 1, &s), 0);
	assert_int_equal(s.nr_threads, 1);
	assert_int_equal(s.dropped_threads, 1);
	assert_fixture_777(&s.threads[0]);
	procsched__free(&s);
	procsched__free(&s);
	procsched__free(NULL);

	assert_int_equal(procsched__read_thread(FIXTURES, 777, 777, &t), 0);
	assert_fixture_777(&t);
	assert_int_equal(procsched__read_thread(FIXTURES, 777, 778, &t), 0);
	assert_fixture_778(&t);
	assert_int_equal(procsched__read_thread(FIXTURES, 777, 779, &t), -ESRCH);
	assert_int_equal(t.tid, 0);
	assert_int_equal(procsched__read_thread(FIXTURES, 778, 778, &t), -ESRCH);
	assert_int_equal(procsched__read(FIXTURES, 778, 16, &s), -ESRCH);
	assert_null(s.threads);
}

static void tree_link(const char *base, const char *rel, const char *target)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	assert_int_equal(symlink(target, path), 0);
}

static void test_procsched__tmp_tree(void **state)
{
	struct procsched_snapshot s;
	struct procsched_thread t;
	char *dir = tree_new("procsched");

	(void)state;
	/* Numeric order; non-thread entries ignored; a dangling entry has vanished. */
	tree_put(dir, "proc/5/task/100/schedstat", "3 0 1\n");
	tree_put(dir, "proc/5/task/9/schedstat", "1 0 1\n");
	tree_put(dir, "proc/5/task/10/schedstat", "2 0 1\n");
	tree_put(dir, "proc/5/task/self", NULL);
	tree_put(dir, "proc/5/task/12abc", NULL);
	tree_put(dir, "proc/5/task/0", NULL);
	tree_put(dir, "proc/5/task/99999999999", NULL);
	tree_link(dir, "proc/5/task/50", "gone");
	assert_int_equal(procsched__read(dir, 5, 16, &s), 0);
	assert_int_equal(s.nr_threads, 3);
	assert_int_equal(s.vanished_threads, 1);
	assert_int_equal(s.dropped_threads, 0);
	assert_int_equal(s.threads[0].tid, 9);
	assert_int_equal(s.threads[1].tid, 10);
	assert_int_equal(s.threads[2].tid, 100);
	assert_int_equal(s.threads[2].sum_exec_runtime_ns, 3);
	/* Neither comm nor stat nor sched: an empty name and no sched counters. */
	assert_string_equal(s.threads[0].comm, "");
	assert_false(s.threads[0].has_sched);
	assert_true(s.threads[0].has_schedstat);
	procsched__free(&s);

	/* Dropped threads are not read, so a vanished one past the bound is not seen. */
	assert_int_equal(procsched__read(dir, 5, 2, &s), 0);
	assert_int_equal(s.nr_threads, 2);
	assert_int_equal(s.threads[1].tid, 10);
	assert_int_equal(s.dropped_threads, 2);
	assert_int_equal(s.vanished_threads, 0);
	procsched__free(&s);
	assert_int_equal(procsched__read(dir, 5, 0, &s), -EINVAL);
	assert_int_equal(procsched__read(dir, 5, 16, NULL), -EINVAL);

	/* A thread dir with nothing in it reads as nothing recorded. */
	tree_put(dir, "proc/6/task/6", NULL);
	assert_int_equal(procsched__read_thread(dir, 6, 6, &t), 0);
	assert_int_equal(t.tid, 6);
	assert_false(t.has_sched);
	assert_false(t.has_schedstat);

	/* Every listed thread gone, or none listed: the process has exited. */
	tree_put(dir, "proc/7/task/me", NULL);
	tree_link(dir, "proc/7/task/70", "gone");
	assert_int_equal(procsched__read(dir, 7, 16, &s), -ESRCH);
	assert_null(s.threads);
	tree_put(dir, "proc/8/task", NULL);
	assert_int_equal(procsched__read(dir, 8, 16, &s), -ESRCH);

	/* Malformed files fail the whole read, not just the thread. */
	tree_put(dir, "proc/11/task/11/schedstat", "1 2 3\n");
	tree_put(dir, "proc/11/task/12/schedstat", "1 2\n");
	assert_int_equal(procsched__read(dir, 11, 16, &s), -EINVAL);
	assert_null(s.threads);
	assert_int_equal(s.nr_threads, 0);
	tree_put(dir, "proc/13/task/13/sched", "nr_voluntary_switches : 1\n");
	assert_int_equal(procsched__read_thread(dir, 13, 13, &t), -EINVAL);
	assert_int_equal(t.tid, 0);
	tree_put(dir, "proc/14/task/14/stat", "14 no parens S 1\n");
	assert_int_equal(procsched__read_thread(dir, 14, 14, &t), -EINVAL);
	/* An unreadable file is an error, not a kernel without it. */
	tree_put(dir, "proc/15/task/15/sched", NULL);
	assert_int_equal(procsched__read_thread(dir, 15, 15, &t), -EISDIR);

	/* comm keeps its raw bytes (one trailing newline dropped) and is bounded. */
	tree_put(dir, "proc/16/task/16/comm", "a b\t\xff\n\n");
	assert_int_equal(procsched__read_thread(dir, 16, 16, &t), 0);
	assert_string_equal(t.comm, "a b\t\xff\n");
	tree_put(dir, "proc/17/task/17/comm",
		 "0123456789012345678901234567890123456789012345678901234567890123456789\n");
	assert_int_equal(procsched__read_thread(dir, 17, 17, &t), 0);
	assert_int_equal(strlen(t.comm), sizeof(t.comm) - 1);
	assert_int_equal(procsched__read_thread(dir, 17, 17, NULL), -EINVAL);
	assert_int_equal(procsched__read_thread(dir, 17, 0, &t), -ESRCH);
	tree_free(dir);
}

static int read_as_nobody(const char *dir)
{
	struct procsched_snapshot s;
	struct procsched_thread t;
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		if (geteuid() == 0 && (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
				       setresuid(65534, 65534, 65534)))
			_exit(3);
		if (procsched__read_thread(dir, 20, 20, &t) != -EACCES)
			_exit(4);
		if (procsched__read(dir, 20, 16, &s) != -EACCES || s.threads)
			_exit(5);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_procsched__permission_denied(void **state)
{
	char path[PATH_MAX], *dir = tree_new("procsched");

	(void)state;
	tree_put(dir, "proc/20/task/20/comm", "x\n");
	tree_put(dir, "proc/20/task/20/sched", HEADER LINE_VOL LINE_INVOL LINE_MIGR);
	tree_put(dir, "proc/20/task/20/schedstat", "1 2 3\n");
	snprintf(path, sizeof(path), "%s/proc/20/task/20/sched", dir);
	assert_int_equal(chmod(path, 0), 0);
	assert_int_equal(read_as_nobody(dir), 0);
	tree_free(dir);
}

static pid_t reaped_pid(void)
{
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return pid;
}

static void test_procsched__missing_pid(void **state)
{
	struct procsched_snapshot s;
	struct procsched_thread t;
	pid_t gone = reaped_pid();

	(void)state;
	assert_int_equal(procsched__read("/", gone, 16, &s), -ESRCH);
	assert_null(s.threads);
	assert_int_equal(procsched__read_thread("/", gone, gone, &t), -ESRCH);
	assert_int_equal(procsched__read(NULL, INT_MAX, 16, &s), -ESRCH);
	assert_int_equal(procsched__read_thread("", INT_MAX, INT_MAX, &t), -ESRCH);
	assert_int_equal(procsched__read("/", 0, 16, &s), -ESRCH);
	assert_int_equal(procsched__read("/", -1, 16, &s), -ESRCH);
	assert_int_equal(procsched__read_thread("/", -1, 1, &t), -ESRCH);
	/* A live tid of another process is not a thread of this one. */
	assert_int_equal(procsched__read_thread("/", getpid(), gone, &t), -ESRCH);
	assert_int_equal(procsched__read_thread("/", gone, gettid(), &t), -ESRCH);
	assert_int_equal(procsched__read(FIXTURES, 9999, 16, &s), -ESRCH);
	assert_int_equal(procsched__read("/nonexistent-khbpf-root", 1, 16, &s), -ESRCH);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_procsched__live(void **state)
{
	struct procsched_thread a, b;
	struct procsched_snapshot s;
	char name[17] = { 0 };
	volatile uint64_t spin = 0;
	uint64_t end;
	size_t i;

	(void)state;
	assert_int_equal(prctl(PR_GET_NAME, name), 0);
	assert_int_equal(procsched__read_thread("/", getpid(), gettid(), &a), 0);
	end = now_ns() + 5000000;
	while (now_ns() < end)
		spin = spin + 1;
	usleep(2000);
	assert_int_equal(procsched__read_thread(NULL, getpid(), gettid(), &b), 0);

	assert_int_equal(a.tid, (uint64_t)gettid());
	assert_string_equal(a.comm, name);
	assert_true(a.has_sched && b.has_sched);
	assert_true(a.has_schedstat && b.has_schedstat);
	assert_true(b.sum_exec_runtime_ns > a.sum_exec_runtime_ns);
	assert_true(b.nr_voluntary_switches > a.nr_voluntary_switches);
	assert_true(b.nr_involuntary_switches >= a.nr_involuntary_switches);
	assert_true(b.nr_migrations >= a.nr_migrations);
	assert_true(b.run_delay_ns >= a.run_delay_ns);
	assert_true(b.pcount > a.pcount);

	assert_int_equal(procsched__read("/", getpid(), 1024, &s), 0);
	for (i = 0; i < s.nr_threads && s.threads[i].tid != (uint64_t)gettid(); i++)
		;
	assert_true(i < s.nr_threads);
	assert_true(s.threads[i].sum_exec_runtime_ns >= b.sum_exec_runtime_ns);
	assert_true(s.threads[i].nr_voluntary_switches >= b.nr_voluntary_switches);
	procsched__free(&s);
}

static void test_procsched__stat_state(void **state)
{
	struct procsched_thread t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(procsched__parse_stat_state("123 (sh) R 1 2 3\n", &t), 0);
	assert_false(t.exited);
	/* The name may hold ") Z": the last ')' ends it. */
	assert_int_equal(procsched__parse_stat_state("123 (a) Z (b) S 1 2\n", &t), 0);
	assert_false(t.exited);
	assert_int_equal(procsched__parse_stat_state("123 (a) S (b) Z 1 2\n", &t), 0);
	assert_true(t.exited);
	assert_int_equal(procsched__parse_stat_state("9 (x) X 0\n", &t), 0);
	assert_true(t.exited);
	assert_int_equal(procsched__parse_stat_state("9 (x)", &t), -EINVAL);
	assert_int_equal(procsched__parse_stat_state("9 (x)  R", &t), -EINVAL);
	assert_int_equal(procsched__parse_stat_state("9 x R", &t), -EINVAL);
}

/* An exited child not yet reaped reads as exited; this thread does not. */
static void test_procsched__live_zombie(void **state)
{
	struct procsched_thread t;
	siginfo_t si;
	pid_t child;

	(void)state;
	assert_int_equal(procsched__read_thread("/", getpid(), gettid(), &t), 0);
	assert_false(t.exited);
	child = fork();
	assert_true(child >= 0);
	if (!child)
		_exit(0);
	/* Waits for the exit, leaving the child a zombie (WNOWAIT). */
	assert_int_equal(waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT), 0);
	assert_int_equal(procsched__read_thread("/", child, child, &t), 0);
	assert_true(t.exited);
	assert_true(t.has_schedstat);
	assert_int_equal(waitpid(child, NULL, 0), child);
}

struct worker {
	pthread_barrier_t *ready;
	pthread_barrier_t *done;
	char name[16];
	pid_t tid;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	w->tid = gettid();
	pthread_setname_np(pthread_self(), w->name);
	pthread_barrier_wait(w->ready);
	pthread_barrier_wait(w->done);
	return NULL;
}

static void test_procsched__max_threads(void **state)
{
	pthread_barrier_t ready, done;
	struct worker w[3];
	struct procsched_snapshot s;
	pthread_t th[3];
	pid_t lowest = gettid();
	size_t i, j;

	(void)state;
	pthread_barrier_init(&ready, NULL, 4);
	pthread_barrier_init(&done, NULL, 4);
	for (i = 0; i < 3; i++) {
		w[i].ready = &ready;
		w[i].done = &done;
		snprintf(w[i].name, sizeof(w[i].name), "ps-worker%zu", i);
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	pthread_barrier_wait(&ready);
	for (i = 0; i < 3; i++)
		lowest = w[i].tid < lowest ? w[i].tid : lowest;

	assert_int_equal(procsched__read("/", getpid(), 1, &s), 0);
	assert_int_equal(s.nr_threads, 1);
	assert_int_equal(s.dropped_threads, 3);
	assert_int_equal(s.vanished_threads, 0);
	assert_int_equal(s.threads[0].tid, (uint64_t)lowest);
	procsched__free(&s);

	assert_int_equal(procsched__read("/", getpid(), 64, &s), 0);
	assert_int_equal(s.nr_threads, 4);
	assert_int_equal(s.dropped_threads, 0);
	for (i = 1; i < s.nr_threads; i++)
		assert_true(s.threads[i - 1].tid < s.threads[i].tid);
	for (i = 0; i < 3; i++) {
		for (j = 0; j < s.nr_threads && s.threads[j].tid != (uint64_t)w[i].tid; j++)
			;
		assert_true(j < s.nr_threads);
		assert_string_equal(s.threads[j].comm, w[i].name);
		assert_true(s.threads[j].has_sched && s.threads[j].has_schedstat);
	}
	procsched__free(&s);

	pthread_barrier_wait(&done);
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&done);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_procsched__parse_real),
		cmocka_unit_test(test_procsched__stat_state),
		cmocka_unit_test(test_procsched__live_zombie),
		cmocka_unit_test(test_procsched__parse_odd_spacing),
		cmocka_unit_test(test_procsched__parse_schedstat),
		cmocka_unit_test(test_procsched__parse_sched_malformed),
		cmocka_unit_test(test_procsched__key_prefix),
		cmocka_unit_test(test_procsched__fixture_tree),
		cmocka_unit_test(test_procsched__tmp_tree),
		cmocka_unit_test(test_procsched__permission_denied),
		cmocka_unit_test(test_procsched__missing_pid),
		cmocka_unit_test(test_procsched__live),
		cmocka_unit_test(test_procsched__max_threads),
	};

	return cmocka_run_group_tests_name("procsched", tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/* The target as /proc shows it: fixture trees for the odd cases, this process for the real one. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/fsutil.h"
#include "collect/proctarget.h"
#include "testutil.h"

/* /proc/PID/stat: "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt ..." */
static void put_stat(const char *root, int pid, const char *comm, char state, unsigned long flags,
		     unsigned long cminflt, unsigned long cmajflt)
{
	char rel[64], text[256];

	snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
	snprintf(text, sizeof(text), "%d (%s) %c 1 %d %d 0 -1 %lu 10 %lu 20 %lu 1 2 3 4 20 0 1 0\n",
		 pid, comm, state, pid, pid, flags, cminflt, cmajflt);
	tree_put(root, rel, text);
}

static void put_task(const char *root, int pid, int tid)
{
	char rel[64];

	snprintf(rel, sizeof(rel), "proc/%d/task/%d", pid, tid);
	tree_put(root, rel, NULL);
}

static int setup(void **state)
{
	*state = tree_new("proctarget");
	return 0;
}

static int teardown(void **state)
{
	tree_free(*state);
	return 0;
}

/* A comm may hold ") " and spaces: the fields are read after the last ')'. */
static void test_proctarget__state_and_child_faults(void **state)
{
	const char *root = *state;
	unsigned long flags = 0;
	uint64_t faults = 0;
	char st = 0;

	put_stat(root, 42, "a) R (b", 'S', 0x40, 5, 2);
	assert_int_equal(proctarget__state(root, 42, &st, &flags), 0);
	assert_int_equal(st, 'S');
	assert_int_equal(flags, 0x40);
	assert_int_equal(proctarget__child_faults(root, 42, &faults), 0);
	assert_int_equal(faults, 7);
	assert_int_equal(proctarget__state(root, 43, &st, &flags), -ESRCH);
	tree_put(root, "proc/44/stat", "44 no-parenthesis S 1\n");
	assert_int_equal(proctarget__state(root, 44, &st, &flags), -EINVAL);
}

static void expect_refused(const char *root, pid_t pid, int err, const char *words)
{
	char errbuf[256] = "";

	assert_int_equal(proctarget__check_attach(root, pid, errbuf, sizeof(errbuf)), err);
	if (!strstr(errbuf, words))
		fail_msg("'%s' does not say '%s'", errbuf, words);
}

static void test_proctarget__check_attach(void **state)
{
	const char *root = *state;
	char errbuf[256] = "";

	expect_refused(root, 0, -EINVAL, "--pid 0: not a process id");
	expect_refused(root, 77, -ESRCH, "--pid 77: no such process");
	put_stat(root, 2, "kthreadd", 'S', 0x00208040, 0, 0);
	expect_refused(root, 2, -EINVAL, "is a kernel thread");
	/* A zombie with only its leader listed has nothing left to watch... */
	put_stat(root, 50, "dead", 'Z', 0, 0, 0);
	put_task(root, 50, 50);
	expect_refused(root, 50, -ESRCH, "is a zombie");
	/* ...but one whose leader called pthread_exit runs on in its other threads. */
	put_stat(root, 60, "leaderless", 'Z', 0, 0, 0);
	put_task(root, 60, 60);
	put_task(root, 60, 61);
	assert_int_equal(proctarget__check_attach(root, 60, errbuf, sizeof(errbuf)), 0);
	put_stat(root, 70, "alive", 'R', 0, 0, 0);
	assert_int_equal(proctarget__check_attach(root, 70, errbuf, sizeof(errbuf)), 0);
}

/* comm and exe: what was read while the target lived is kept when a later read fails. */
static void test_proctarget__fill(void **state)
{
	const char *root = *state;
	struct doc_target t = { 0 };
	char exe[PATH_MAX];

	tree_put(root, "proc/80/comm", "worker\n");
	snprintf(exe, sizeof(exe), "%s/proc/80/exe", root);
	assert_int_equal(symlink("/usr/bin/worker", exe), 0);
	proctarget__fill(root, 80, TARGET_MODE_RUN, &t);
	assert_int_equal(t.pid, 80);
	assert_int_equal(t.mode, TARGET_MODE_RUN);
	assert_string_equal(t.comm, "worker");
	assert_true(t.exe_recorded);
	assert_string_equal(t.exe, "/usr/bin/worker");

	assert_int_equal(unlink(exe), 0);
	tree_put(root, "proc/80/comm", "renamed\n");
	proctarget__fill(root, 80, TARGET_MODE_RUN, &t);
	assert_string_equal(t.comm, "renamed");
	assert_true(t.exe_recorded);
	assert_string_equal(t.exe, "/usr/bin/worker");

	/* Never read: a gap with the reason of the failed read. */
	memset(&t, 0, sizeof(t));
	proctarget__fill(root, 81, TARGET_MODE_ATTACH, &t);
	assert_false(t.exe_recorded);
	assert_int_equal(t.exe_reason, fsutil__errno_gap(-ENOENT));
	assert_string_equal(t.comm, "");
}

static pthread_mutex_t hold = PTHREAD_MUTEX_INITIALIZER;

static void *held(void *arg)
{
	pthread_mutex_lock(&hold);
	pthread_mutex_unlock(&hold);
	return arg;
}

/* This process's threads, as the fallback reads any target's. */
static void test_proctarget__snapshot_self(void **state)
{
	struct thread_table t = { 0 };
	uint64_t errors = 0, cpu0 = 0, cpu1 = 0;
	volatile uint64_t spin = 0;
	pthread_t th;
	size_t i;

	(void)state;
	assert_int_equal(proctarget__cpu_ns(getpid(), &cpu0), 0);
	for (i = 0; i < 20000000; i++)
		spin += i;
	assert_int_equal(proctarget__cpu_ns(getpid(), &cpu1), 0);
	assert_true(cpu1 > cpu0);

	pthread_mutex_lock(&hold);
	assert_int_equal(pthread_create(&th, NULL, held, NULL), 0);
	assert_int_equal(proctarget__snapshot("/", getpid(), 64, &t, &errors), 0);
	assert_int_equal(errors, 0);
	assert_int_equal(t.nr, 2);
	for (i = 0; i < t.nr; i++) {
		assert_int_equal(t.recs[i].tgid, (uint32_t)getpid());
		if (i)
			assert_true(t.recs[i - 1].tid < t.recs[i].tid);
	}
	assert_non_null(thread_table__find(&t, (uint32_t)getpid(), t.recs[0].start_time));
	assert_true(t.recs[0].k.sum_exec_runtime > 0);
	thread_table__free(&t);

	/* Threads past the bound are counted as read errors, not listed. */
	assert_int_equal(proctarget__snapshot("/", getpid(), 1, &t, &errors), 0);
	assert_int_equal(t.nr, 1);
	assert_int_equal(errors, 1);
	thread_table__free(&t);
	pthread_mutex_unlock(&hold);
	assert_int_equal(pthread_join(th, NULL), 0);

	assert_int_equal(proctarget__snapshot("/", 0x3fffffff, 64, &t, &errors), -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_proctarget__state_and_child_faults, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_proctarget__check_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proctarget__fill, setup, teardown),
		cmocka_unit_test(test_proctarget__snapshot_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

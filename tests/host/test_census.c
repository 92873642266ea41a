// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/census.h"
#include "testutil.h"

#define FIXTURES "tests/fixtures"

static uint64_t ticks_ns(uint64_t ticks)
{
	return ticks * 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);
}

static void test_census__schedstat(void **state)
{
	struct thread_census c;
	enum ev_source src = EV_SRC__COUNT;

	(void)state;
	assert_int_equal(census__read(FIXTURES "/census", 500, 42, &c, &src), 0);
	assert_int_equal(src, EV_SRC_PROC_PID_SCHEDSTAT);
	assert_int_equal(c.elapsed_ns, 42);
	assert_int_equal(c.dropped_threads, 0);
	/* Numeric order, not the directory's or the names' lexical order. */
	assert_int_equal(c.nr_threads, 3);
	assert_int_equal(c.threads[0].thread_id, 75);
	assert_int_equal(c.threads[0].cpu_time_ns, 123456789);
	assert_int_equal(c.threads[1].thread_id, 600);
	assert_int_equal(c.threads[1].cpu_time_ns, 5);
	assert_int_equal(c.threads[2].thread_id, 1000);
	assert_true(c.threads[2].cpu_time_ns == UINT64_MAX);
	census__free(&c);
	assert_null(c.threads);
	assert_int_equal(c.nr_threads, 0);
}

static void test_census__task_stat(void **state)
{
	struct thread_census c;
	enum ev_source src = EV_SRC__COUNT;

	(void)state;
	/* No schedstat: utime + stime, and comms "my ) app" and "w) (x)". */
	assert_int_equal(census__read(FIXTURES "/census", 600, 0, &c, &src), 0);
	assert_int_equal(src, EV_SRC_PROC_PID_TASK_STAT);
	assert_int_equal(c.nr_threads, 2);
	assert_int_equal(c.threads[0].thread_id, 600);
	assert_int_equal(c.threads[0].cpu_time_ns, ticks_ns(150 + 50));
	assert_int_equal(c.threads[1].thread_id, 601);
	assert_int_equal(c.threads[1].cpu_time_ns, ticks_ns(7 + 3));
	census__free(&c);
}

static void test_census__thread_bound(void **state)
{
	struct thread_census c;
	char rel[64], text[32], *dir = tree_new("census");
	unsigned int tid;
	size_t i;

	(void)state;
	/* tids 1..1030, created in descending order. */
	for (tid = 1030; tid >= 1; tid--) {
		snprintf(rel, sizeof(rel), "proc/77/task/%u/schedstat", tid);
		snprintf(text, sizeof(text), "%u 0 1\n", tid * 10);
		tree_put(dir, rel, text);
	}
	assert_int_equal(census__read(dir, 77, 0, &c, NULL), 0);
	assert_int_equal(c.nr_threads, EV_MAX_SAMPLE_THREADS);
	assert_int_equal(c.dropped_threads, 1030 - EV_MAX_SAMPLE_THREADS);
	for (i = 0; i < c.nr_threads; i++) {
		assert_int_equal(c.threads[i].thread_id, i + 1);
		assert_int_equal(c.threads[i].cpu_time_ns, (i + 1) * 10);
	}
	census__free(&c);
	tree_free(dir);
}

static void test_census__vanished_and_malformed(void **state)
{
	struct thread_census c;
	char *dir = tree_new("census");

	(void)state;
	/* tid 20's directory is listed but its files are gone: it exited. */
	tree_put(dir, "proc/5/task/10/schedstat", "100 2 3\n");
	tree_put(dir, "proc/5/task/20", NULL);
	tree_put(dir, "proc/5/task/self", NULL);
	assert_int_equal(census__read(dir, 5, 0, &c, NULL), 0);
	assert_int_equal(c.nr_threads, 1);
	assert_int_equal(c.threads[0].thread_id, 10);
	assert_int_equal(c.dropped_threads, 0);
	census__free(&c);

	/* Every listed thread gone: the process exited. */
	tree_put(dir, "proc/6/task/60", NULL);
	assert_int_equal(census__read(dir, 6, 0, &c, NULL), -ESRCH);
	assert_null(c.threads);

	tree_put(dir, "proc/7/task/70/schedstat", "abc 1 2\n");
	assert_int_equal(census__read(dir, 7, 0, &c, NULL), -EINVAL);
	assert_null(c.threads);
	assert_int_equal(c.nr_threads, 0);
	tree_put(dir, "proc/8/task/80/stat", "80 (no close paren S 1 2 3\n");
	assert_int_equal(census__read(dir, 8, 0, &c, NULL), -EINVAL);
	tree_put(dir, "proc/9/task/90/stat", "90 (short) S 1 2 3\n");
	assert_int_equal(census__read(dir, 9, 0, &c, NULL), -EINVAL);
	tree_put(dir, "proc/11/task/110/stat", "110 (x) S 1 1 1 0 -1 0 0 0 0 0 -5 1 0\n");
	assert_int_equal(census__read(dir, 11, 0, &c, NULL), -EINVAL);
	/* schedstat unreadable (EISDIR) is an error, not an exited thread. */
	tree_put(dir, "proc/12/task/120/schedstat", NULL);
	assert_int_equal(census__read(dir, 12, 0, &c, NULL), -EISDIR);
	tree_free(dir);
}

static void test_census__missing_pid(void **state)
{
	struct thread_census c;
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(census__read(FIXTURES "/census", 9999, 0, &c, NULL), -ESRCH);
	assert_int_equal(census__read("/", INT_MAX, 0, &c, NULL), -ESRCH);
	assert_int_equal(census__read("/", 0, 0, &c, NULL), -ESRCH);
	assert_int_equal(census__read("/", getpid(), 0, NULL, NULL), -EINVAL);

	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(census__read("/", pid, 0, &c, NULL), -ESRCH);
}

struct worker {
	pthread_barrier_t *ready;
	pthread_barrier_t *done;
	pid_t tid;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	w->tid = gettid();
	pthread_barrier_wait(w->ready);
	pthread_barrier_wait(w->done);
	return NULL;
}

static const struct thread_cpu *find_thread(const struct thread_census *c, uint64_t tid)
{
	size_t i;

	for (i = 0; i < c->nr_threads; i++) {
		if (c->threads[i].thread_id == tid)
			return &c->threads[i];
	}
	return NULL;
}

static void test_census__live(void **state)
{
	pthread_barrier_t ready, done;
	struct worker w[2] = { { &ready, &done, 0 }, { &ready, &done, 0 } };
	struct thread_census a, b;
	const struct thread_cpu *ta, *tb;
	enum ev_source src;
	pthread_t th[2];
	volatile uint64_t spin = 0;
	size_t i;

	(void)state;
	pthread_barrier_init(&ready, NULL, 3);
	pthread_barrier_init(&done, NULL, 3);
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	pthread_barrier_wait(&ready);

	assert_int_equal(census__read("/", getpid(), 1, &a, &src), 0);
	assert_true(src == EV_SRC_PROC_PID_SCHEDSTAT || src == EV_SRC_PROC_PID_TASK_STAT);
	assert_true(a.nr_threads >= 3);
	for (i = 1; i < a.nr_threads; i++)
		assert_true(a.threads[i - 1].thread_id < a.threads[i].thread_id);
	assert_non_null(find_thread(&a, (uint64_t)w[0].tid));
	assert_non_null(find_thread(&a, (uint64_t)w[1].tid));
	ta = find_thread(&a, (uint64_t)gettid());
	assert_non_null(ta);

	while (spin < 20000000)
		spin = spin + 1;
	assert_int_equal(census__read("/", getpid(), 2, &b, NULL), 0);
	tb = find_thread(&b, (uint64_t)gettid());
	assert_non_null(tb);
	assert_true(tb->cpu_time_ns >= ta->cpu_time_ns);
	if (src == EV_SRC_PROC_PID_SCHEDSTAT)
		assert_true(tb->cpu_time_ns > ta->cpu_time_ns);

	pthread_barrier_wait(&done);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&done);
	census__free(&a);
	census__free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_census__schedstat),
		cmocka_unit_test(test_census__task_stat),
		cmocka_unit_test(test_census__thread_bound),
		cmocka_unit_test(test_census__vanished_and_malformed),
		cmocka_unit_test(test_census__missing_pid),
		cmocka_unit_test(test_census__live),
	};

	return cmocka_run_group_tests_name("census", tests, NULL, NULL);
}

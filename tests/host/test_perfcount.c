// SPDX-License-Identifier: MIT
/*
 * perf counters for a whole process. This VM has no PMU, so the recorded
 * path is proven with software events standing in for hardware ones (same
 * code: open per thread with inherit, sum, multiplexing check), and the
 * hardware mapping with readings fed in.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "host/perfcount.h"
#include "host/probe.h"
#include "testutil.h"

static struct perfcount_value rec(uint64_t v)
{
	return (struct perfcount_value){ .recorded = true, .value = v };
}

static void test_perfcount__counter_set_from_readings(void **state)
{
	struct perfcount_value v[8] = {
		rec(3000), rec(1000), rec(400), rec(100), rec(800), rec(8), rec(50), rec(60),
	};
	struct counter_set cs;

	(void)state;
	perfcount__counter_set(&cs, v);
	assert_true(cs.cycles.ev.recorded);
	assert_int_equal(cs.cycles.ev.value, 3000);
	assert_int_equal(cs.cycles.source, EV_SRC_PERF_EVENT_OPEN);
	assert_int_equal(cs.stalled_cycles_backend.ev.value, 60);
	assert_int_equal(cs.cpi_milli.value, 3000);
	assert_int_equal(cs.cache_miss_ratio_milli.value, 250);
	assert_int_equal(cs.branch_miss_ratio_milli.value, 10);
	assert_false(cs.stalled_cycles_memory.ev.recorded);
	assert_int_equal(cs.stalled_cycles_memory.ev.reason, EV_GAP_UNSUPPORTED);

	/* One event missing (e.g. no stalled-cycles event): only its field gaps. */
	v[6] = (struct perfcount_value){ .reason = EV_GAP_UNSUPPORTED, .err = -ENOENT };
	v[1] = (struct perfcount_value){ .reason = EV_GAP_UNAVAILABLE, .multiplexed = true };
	perfcount__counter_set(&cs, v);
	assert_false(cs.stalled_cycles_frontend.ev.recorded);
	assert_int_equal(cs.stalled_cycles_frontend.ev.reason, EV_GAP_UNSUPPORTED);
	assert_true(cs.stalled_cycles_backend.ev.recorded);
	assert_false(cs.instructions.ev.recorded);
	assert_false(cs.cpi_milli.recorded);
	assert_int_equal(cs.cpi_milli.reason, EV_GAP_UNAVAILABLE);
}

static void *sleep7(void *arg)
{
	int i;

	for (i = 0; i < 7; i++)
		usleep(1000);
	return arg;
}

static const struct perfcount_event sw_events[] = {
	{ PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
};

/* The kernel's switch count of the calling thread (voluntary + involuntary). */
static uint64_t own_switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

static uint64_t thread_switches;

static void *sleep7_counted(void *arg)
{
	sleep7(arg);
	thread_switches = own_switches();
	return arg;
}

/*
 * Held child: after "go", 15 sleeps and a thread with 7, then it reports
 * the kernel's own switch counts since "go" and waits for "end".
 */
static pid_t held_child(int *go_w, int *done_r, bool do_exec)
{
	int go[2], done[2];
	pid_t pid;

	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint64_t base, mine;
		pthread_t t;
		char c;
		int i;

		/* Only the parent holds the write end: its exit (or failure) ends us. */
		close(go[1]);
		close(done[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		base = own_switches();
		for (i = 0; i < 15; i++)
			usleep(1000);
		if (do_exec)
			execl("/bin/true", "true", (char *)NULL);
		pthread_create(&t, NULL, sleep7_counted, NULL);
		pthread_join(t, NULL);
		mine = own_switches() - base + thread_switches;
		if (write(done[1], &mine, sizeof(mine)) != sizeof(mine) || read(go[0], &c, 1) != 1)
			_exit(3);
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	*go_w = go[1];
	*done_r = done[0];
	return pid;
}

static void test_perfcount__inherited_software_counts(void **state)
{
	struct perfcount_opts o = { .sz = sizeof(o), .events = sw_events, .nr_events = 3 };
	struct perfcount_value v[3];
	struct perfcount *p;
	int go, done, status;
	uint64_t kernel;
	pid_t pid;

	(void)state;
	pid = held_child(&go, &done, false);
	assert_int_equal(perfcount__open(&p, &pid, 1, &o), 0);
	assert_int_equal(write(go, "g", 1), 1);
	assert_int_equal(read(done, &kernel, sizeof(kernel)), sizeof(kernel));
	assert_int_equal(perfcount__read(p, v, 3), 0);
	/*
	 * The kernel's own counts of both threads (the later one inherited):
	 * plus at most the main thread's wake from "go" and its block on the
	 * pipe around them.
	 */
	assert_true(v[0].recorded);
	assert_in_range(v[0].value, kernel, kernel + 2);
	assert_true(kernel >= 15);
	assert_false(v[0].multiplexed);
	assert_true(v[1].recorded);
	assert_true(v[1].value > 0);
	/* Hardware cycles: whatever perf says for this host, mapped honestly. */
	if (probe__perf_hw_open(0) == 0) {
		assert_true(v[2].recorded);
	} else {
		assert_false(v[2].recorded);
		assert_int_equal(v[2].err, probe__perf_hw_open(0));
	}
	assert_int_equal(write(go, "e", 1), 1);
	waitpid(pid, &status, 0);
	perfcount__destroy(p);
	close(go);
	close(done);
}

static void test_perfcount__enable_on_exec_skips_pre_exec(void **state)
{
	struct perfcount_opts o = {
		.sz = sizeof(o),
		.events = sw_events,
		.nr_events = 1,
		.enable_on_exec = true,
	};
	struct perfcount_value v[1];
	struct perfcount *p;
	int go, done, status;
	pid_t pid;

	(void)state;
	pid = held_child(&go, &done, true);
	assert_int_equal(perfcount__open(&p, &pid, 1, &o), 0);
	assert_int_equal(write(go, "g", 1), 1);
	waitid(P_PID, (id_t)pid, &(siginfo_t){ 0 }, WEXITED | WNOWAIT);
	assert_int_equal(perfcount__read(p, v, 1), 0);
	/* The 15 sleeps before exec are not counted; /bin/true barely switches. */
	assert_true(v[0].recorded);
	assert_true(v[0].value < 15);
	waitpid(pid, &status, 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	perfcount__destroy(p);
	close(go);
	close(done);
}

static void test_perfcount__bad_args_and_dead_target(void **state)
{
	struct perfcount_opts o = { .sz = sizeof(o), .events = sw_events, .nr_events = 1 };
	struct perfcount_value v[1];
	struct perfcount *p;
	pid_t pid;

	(void)state;
	assert_int_equal(perfcount__open(&p, NULL, 0, &o), -EINVAL);
	pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	/* The only thread is gone: the event reads as a gap, never as zero. */
	assert_int_equal(perfcount__open(&p, &pid, 1, &o), 0);
	assert_int_equal(perfcount__read(p, v, 1), 0);
	assert_false(v[0].recorded);
	assert_int_equal(v[0].err, -ESRCH);
	assert_int_equal(perfcount__read(p, v, 0), -EINVAL);
	perfcount__destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_perfcount__counter_set_from_readings),
		cmocka_unit_test(test_perfcount__inherited_software_counts),
		cmocka_unit_test(test_perfcount__enable_on_exec_skips_pre_exec),
		cmocka_unit_test(test_perfcount__bad_args_and_dead_target),
	};

	return cmocka_run_group_tests_name("perfcount", tests, NULL, NULL);
}

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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/cpufreq.h"
#include "testutil.h"

#define FIXTURES "tests/fixtures"
#define CPU "sys/devices/system/cpu/"
#define NOBODY 65534

static void test_cpufreq__numa2(void **state)
{
	struct cpu_frequency_sample s;
	enum ev_gap reason = EV_GAP__COUNT;

	(void)state;
	assert_true(cpufreq__present(FIXTURES "/numa2"));
	assert_int_equal(cpufreq__sample(FIXTURES "/numa2", 123456789, &s, &reason), 0);
	assert_int_equal(s.elapsed_ns, 123456789);
	/* 16 values, cpu5 only through cpuinfo_cur_freq; sum 35400001. */
	assert_int_equal(s.cpu_count, 16);
	assert_int_equal(s.min_khz, 800000);
	assert_int_equal(s.max_khz, 3600000);
	assert_int_equal(s.mean_khz, 2212500); /* floor(2212500.0625) */
	assert_int_equal(reason, EV_GAP__COUNT); /* untouched on success */
}

static void test_cpufreq__unsupported(void **state)
{
	struct cpu_frequency_sample s;
	enum ev_gap reason = EV_GAP_UNAVAILABLE;

	(void)state;
	assert_false(cpufreq__present(FIXTURES "/nofreq"));
	assert_int_equal(cpufreq__sample(FIXTURES "/nofreq", 5, &s, &reason), -ENOENT);
	assert_int_equal(reason, EV_GAP_UNSUPPORTED);
	assert_int_equal(s.cpu_count, 0);
	assert_int_equal(s.elapsed_ns, 5);
	assert_int_equal(cpufreq__sample(FIXTURES "/nofreq", 5, &s, NULL), -ENOENT);
}

static void test_cpufreq__no_cpu_list(void **state)
{
	struct cpu_frequency_sample s;
	enum ev_gap reason = EV_GAP_UNSUPPORTED;

	(void)state;
	assert_false(cpufreq__present("/nonexistent/khbpf"));
	assert_int_equal(cpufreq__sample("/nonexistent/khbpf", 0, &s, &reason), -ENOENT);
	assert_int_equal(reason, EV_GAP_UNAVAILABLE);
	assert_int_equal(cpufreq__sample("/nonexistent/khbpf", 0, NULL, &reason), -EINVAL);
}

static void test_cpufreq__unreadable(void **state)
{
	struct cpu_frequency_sample s;
	enum ev_gap reason;
	char *dir = tree_new("cpufreq");

	(void)state;
	tree_put(dir, CPU "online", "0-2\n");
	tree_put(dir, CPU "cpu0/cpufreq/scaling_cur_freq", NULL); /* EISDIR */
	tree_put(dir, CPU "cpu1/cpufreq/scaling_cur_freq", "<unknown>\n");
	tree_put(dir, CPU "cpu2/cpufreq/scaling_cur_freq", "0\n");
	assert_true(cpufreq__present(dir));
	reason = EV_GAP_UNSUPPORTED;
	assert_int_equal(cpufreq__sample(dir, 0, &s, &reason), -ENOENT);
	assert_int_equal(reason, EV_GAP_UNAVAILABLE);

	/* A directory without any frequency file: cpufreq exists, value does not. */
	tree_free(dir);
	dir = tree_new("cpufreq");
	tree_put(dir, CPU "online", "0\n");
	tree_put(dir, CPU "cpu0/cpufreq", NULL);
	reason = EV_GAP_UNSUPPORTED;
	assert_int_equal(cpufreq__sample(dir, 0, &s, &reason), -ENOENT);
	assert_int_equal(reason, EV_GAP_UNAVAILABLE);

	/* Partial: the readable CPUs make the sample; offline CPUs are not read. */
	tree_put(dir, CPU "online", "0-1,3\n");
	tree_put(dir, CPU "cpu0/cpufreq/scaling_cur_freq", "1000\n");
	tree_put(dir, CPU "cpu1/cpufreq/scaling_cur_freq", "junk\n");
	tree_put(dir, CPU "cpu2/cpufreq/scaling_cur_freq", "1\n");
	tree_put(dir, CPU "cpu3/cpufreq/scaling_cur_freq", "18446744073709551615\n");
	assert_int_equal(cpufreq__sample(dir, 0, &s, &reason), 0);
	assert_int_equal(s.cpu_count, 2);
	assert_int_equal(s.min_khz, 1000);
	assert_true(s.max_khz == UINT64_MAX);
	/* (2^64 - 1 + 1000) / 2 needs the 128-bit sum. */
	assert_true(s.mean_khz == (uint64_t)(((unsigned __int128)UINT64_MAX + 1000) / 2));
	tree_free(dir);
}

/* Root ignores permission bits, so refusal is checked in a child that drops root. */
static void test_cpufreq__permission_denied(void **state)
{
	char path[PATH_MAX], *dir = tree_new("cpufreq");
	int status;
	pid_t pid;

	(void)state;
	tree_put(dir, CPU "online", "0\n");
	tree_put(dir, CPU "cpu0/cpufreq/scaling_cur_freq", "1000\n");
	tree_put(dir, CPU "cpu0/cpufreq/cpuinfo_cur_freq", "1000\n");
	snprintf(path, sizeof(path), "%s/" CPU "cpu0/cpufreq/scaling_cur_freq", dir);
	assert_int_equal(chmod(path, 0), 0);
	snprintf(path, sizeof(path), "%s/" CPU "cpu0/cpufreq/cpuinfo_cur_freq", dir);
	assert_int_equal(chmod(path, 0), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct cpu_frequency_sample s;
		enum ev_gap reason = EV_GAP_UNAVAILABLE;
		int ret;

		if (geteuid() == 0 && (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
				       setresuid(NOBODY, NOBODY, NOBODY)))
			_exit(77);
		ret = cpufreq__sample(dir, 0, &s, &reason);
		_exit(ret == -ENOENT && reason == EV_GAP_PERMISSION_DENIED ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	tree_free(dir);
	require_or_skip(!WIFEXITED(status) || WEXITSTATUS(status) != 77,
			"cannot drop root to uid 65534 to provoke EACCES");
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_cpufreq__live(void **state)
{
	struct cpu_frequency_sample s;
	enum ev_gap reason = EV_GAP__COUNT;
	int ret;

	(void)state;
	ret = cpufreq__sample("/", 1, &s, &reason);
	if (!cpufreq__present("/")) {
		assert_int_equal(ret, -ENOENT);
		assert_int_equal(reason, EV_GAP_UNSUPPORTED);
		return;
	}
	if (ret) {
		assert_int_equal(ret, -ENOENT);
		assert_int_not_equal(reason, EV_GAP_UNSUPPORTED);
		return;
	}
	assert_true(s.cpu_count >= 1 && s.cpu_count <= sysconf(_SC_NPROCESSORS_ONLN));
	assert_true(s.min_khz > 0 && s.min_khz <= s.mean_khz && s.mean_khz <= s.max_khz);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpufreq__numa2),
		cmocka_unit_test(test_cpufreq__unsupported),
		cmocka_unit_test(test_cpufreq__no_cpu_list),
		cmocka_unit_test(test_cpufreq__unreadable),
		cmocka_unit_test(test_cpufreq__permission_denied),
		cmocka_unit_test(test_cpufreq__live),
	};

	return cmocka_run_group_tests_name("cpufreq", tests, NULL, NULL);
}

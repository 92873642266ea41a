// SPDX-License-Identifier: MIT
/* PSI: the parser on fixture text, the host's and a cgroup's files on fixture trees. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/pressure.h"
#include "testutil.h"

#define NOBODY 65534

#define CPU_TEXT                                                       \
	"some avg10=12.34 avg60=5.00 avg300=0.01 total=123456789012\n" \
	"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
#define MEM_TEXT                                                  \
	"some avg10=1.58 avg60=1.33 avg300=0.84 total=52825554\n" \
	"full avg10=0.26 avg60=0.19 avg300=0.08 total=31840237\n"
#define IO_TEXT                                              \
	"some avg10=100.00 avg60=99.99 avg300=9.5 total=7\n" \
	"full avg10=0.1 avg60=0.123 avg300=0 total=18446744073709551615\n"

static void expect_recorded(struct sev_u64 v, uint64_t want, enum ev_source src)
{
	assert_true(v.ev.recorded);
	assert_true(v.ev.value == want);
	assert_int_equal(v.source, src);
}

static void expect_gap(struct sev_u64 v, enum ev_gap reason, enum ev_source src)
{
	assert_false(v.ev.recorded);
	assert_int_equal(v.ev.reason, reason);
	assert_int_equal(v.source, src);
}

static void test_pressure__parse(void **state)
{
	struct psi_line l[PSI__KINDS];
	char err[128] = "";

	(void)state;
	assert_int_equal(psi__parse(CPU_TEXT, l, err, sizeof(err)), 0);
	assert_true(l[PSI_SOME].present && l[PSI_FULL].present);
	assert_true(l[PSI_SOME].avg10_milli == 12340);
	assert_true(l[PSI_SOME].avg60_milli == 5000);
	assert_true(l[PSI_SOME].avg300_milli == 10);
	assert_true(l[PSI_SOME].total_us == 123456789012ULL);
	assert_true(l[PSI_FULL].total_us == 0);

	/* One to three decimals are exact thousandths; no decimals at all is whole. */
	assert_int_equal(psi__parse(IO_TEXT, l, NULL, 0), 0);
	assert_true(l[PSI_SOME].avg10_milli == 100000);
	assert_true(l[PSI_SOME].avg60_milli == 99990);
	assert_true(l[PSI_SOME].avg300_milli == 9500);
	assert_true(l[PSI_FULL].avg10_milli == 100);
	assert_true(l[PSI_FULL].avg60_milli == 123);
	assert_true(l[PSI_FULL].avg300_milli == 0);
	assert_true(l[PSI_FULL].total_us == UINT64_MAX);

	/* cpu before 5.13: only "some". */
	assert_int_equal(psi__parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n", l, NULL, 0),
			 0);
	assert_true(l[PSI_SOME].present);
	assert_false(l[PSI_FULL].present);
	assert_true(l[PSI_SOME].total_us == 5);
}

/* Each malformed text: -EINVAL, one message naming the fault, and out untouched. */
static void expect_refused(const char *text, const char *what)
{
	struct psi_line l[PSI__KINDS];
	char err[160] = "";

	memset(l, 0xa5, sizeof(l));
	if (psi__parse(text, l, err, sizeof(err)) != -EINVAL)
		fail_msg("accepted: %s", text);
	if (!strstr(err, what))
		fail_msg("for '%s': message '%s' lacks '%s'", text, err, what);
	assert_true(l[0].total_us == 0xa5a5a5a5a5a5a5a5ULL);
}

static void test_pressure__malformed(void **state)
{
	(void)state;
	expect_refused("", "empty file");
	expect_refused("some avg10=0.00 avg60=0.00 avg300=0.00 total=5", "line 1: no newline");
	expect_refused("full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n",
		       "line 1: starts with \"full\", expected \"some\"");
	expect_refused("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n"
		       "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n",
		       "line 2: starts with \"some\", expected \"full\"");
	expect_refused("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n"
		       "full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n"
		       "full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n",
		       "line 3: more than 2 lines");
	expect_refused("some avg10=0.00 avg60=0.00 total=5\n", "line 1: 4 fields, expected 5");
	expect_refused("some avg10=0.00 avg60=0.00 avg300=0.00 total=5 x=1\n",
		       "line 1: more than 5 fields");
	expect_refused("some avg10=0.00  avg60=0.00 avg300=0.00 total=5\n", "line 1:");
	expect_refused("some avg60=0.00 avg10=0.00 avg300=0.00 total=5\n",
		       "field 2 is \"avg60=0.00\", expected avg10=");
	expect_refused("some avg10=1.2345 avg60=0.00 avg300=0.00 total=5\n",
		       "avg10 \"1.2345\" is not a decimal with at most 3 digits");
	expect_refused("some avg10=-1.00 avg60=0.00 avg300=0.00 total=5\n", "avg10 \"-1.00\"");
	expect_refused("some avg10=1e3 avg60=0.00 avg300=0.00 total=5\n", "avg10 \"1e3\"");
	expect_refused("some avg10=.5 avg60=0.00 avg300=0.00 total=5\n", "avg10 \".5\"");
	expect_refused("some avg10=5. avg60=0.00 avg300=0.00 total=5\n", "avg10 \"5.\"");
	expect_refused("some avg10=1.2.3 avg60=0.00 avg300=0.00 total=5\n", "avg10 \"1.2.3\"");
	expect_refused("some avg10= avg60=0.00 avg300=0.00 total=5\n", "avg10 \"\"");
	expect_refused("some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551616\n",
		       "total \"18446744073709551616\" is not an unsigned 64-bit integer");
	expect_refused("some avg10=0.00 avg60=0.00 avg300=0.00 total=+5\n", "total \"+5\"");
	expect_refused("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\r\n", "total \"5\r\"");
	expect_refused("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n\n",
		       "line 2: starts with \"\", expected \"full\"");
	/* A value too large for thousandths is refused, not wrapped. */
	expect_refused("some avg10=18446744073709552 avg60=0.00 avg300=0.00 total=5\n",
		       "avg10 \"18446744073709552\"");
}

/* A fixture root with /proc/pressure and a cgroup v2 at /sys/fs/cgroup/unified. */
static char *psi_tree(void)
{
	char *dir = tree_new("psi");

	tree_put(dir, "proc/pressure/cpu", CPU_TEXT);
	tree_put(dir, "proc/pressure/memory", MEM_TEXT);
	tree_put(dir, "proc/pressure/io", IO_TEXT);
	tree_put(dir, "proc/self/mountinfo",
		 "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
		 "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
		 "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n");
	tree_put(dir, "proc/42/cgroup", "1:cpu:/elsewhere\n0::/khbpf.slice/job\n");
	tree_put(dir, "sys/fs/cgroup/unified/khbpf.slice/job/cpu.pressure", CPU_TEXT);
	tree_put(dir, "sys/fs/cgroup/unified/khbpf.slice/job/memory.pressure", MEM_TEXT);
	tree_put(dir, "sys/fs/cgroup/unified/khbpf.slice/job/io.pressure", IO_TEXT);
	return dir;
}

static void test_pressure__host(void **state)
{
	struct pressure_window w;
	char *dir = psi_tree(), path[PATH_MAX];

	(void)state;
	pressure_window__host(&w, dir);
	assert_string_equal(w.path, "/proc/pressure");
	pressure_window__read(&w, false);
	expect_recorded(w.start.avg10_milli[PSI_CPU][PSI_SOME], 12340, EV_SRC_PROC_PRESSURE);
	expect_recorded(w.start.total_us[PSI_CPU][PSI_SOME], 123456789012ULL, EV_SRC_PROC_PRESSURE);
	/* The host's cpu full is the kernel's constant 0: not a measurement. */
	expect_gap(w.start.avg10_milli[PSI_CPU][PSI_FULL], EV_GAP_UNSUPPORTED,
		   EV_SRC_PROC_PRESSURE);
	expect_gap(w.start.total_us[PSI_CPU][PSI_FULL], EV_GAP_UNSUPPORTED, EV_SRC_PROC_PRESSURE);
	expect_recorded(w.start.avg10_milli[PSI_MEMORY][PSI_FULL], 260, EV_SRC_PROC_PRESSURE);
	expect_recorded(w.start.total_us[PSI_IO][PSI_SOME], 7, EV_SRC_PROC_PRESSURE);

	/* The end: totals grew; the stall is exactly the difference. */
	tree_put(dir, "proc/pressure/cpu",
		 "some avg10=50.00 avg60=5.00 avg300=0.01 total=123456799012\n"
		 "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	tree_put(dir, "proc/pressure/memory",
		 "some avg10=1.58 avg60=1.33 avg300=0.84 total=52825554\n"
		 "full avg10=0.26 avg60=0.19 avg300=0.08 total=31840238\n");
	/* io turned unreadable: its values are gaps, and so is its stall. */
	snprintf(path, sizeof(path), "%s/proc/pressure/io", dir);
	assert_int_equal(unlink(path), 0);
	pressure_window__read(&w, true);
	expect_recorded(pressure_window__stall(&w, PSI_CPU, PSI_SOME), 10000, EV_SRC_PROC_PRESSURE);
	expect_gap(pressure_window__stall(&w, PSI_CPU, PSI_FULL), EV_GAP_UNSUPPORTED,
		   EV_SRC_PROC_PRESSURE);
	expect_recorded(pressure_window__stall(&w, PSI_MEMORY, PSI_SOME), 0, EV_SRC_PROC_PRESSURE);
	expect_recorded(pressure_window__stall(&w, PSI_MEMORY, PSI_FULL), 1, EV_SRC_PROC_PRESSURE);
	expect_gap(pressure_window__stall(&w, PSI_IO, PSI_SOME), EV_GAP_UNSUPPORTED,
		   EV_SRC_PROC_PRESSURE);
	expect_recorded(w.end.avg10_milli[PSI_CPU][PSI_SOME], 50000, EV_SRC_PROC_PRESSURE);
	assert_non_null(strstr(w.detail, "/proc/pressure/io: no such file"));
	tree_free(dir);
}

static void test_pressure__no_psi(void **state)
{
	struct pressure_window w;
	char *dir = tree_new("psi");

	(void)state;
	tree_put(dir, "proc/self/mountinfo", "");
	pressure_window__host(&w, dir);
	pressure_window__read(&w, false);
	pressure_window__read(&w, true);
	expect_gap(w.end.total_us[PSI_CPU][PSI_SOME], EV_GAP_UNSUPPORTED, EV_SRC_PROC_PRESSURE);
	expect_gap(pressure_window__stall(&w, PSI_MEMORY, PSI_FULL), EV_GAP_UNSUPPORTED,
		   EV_SRC_PROC_PRESSURE);
	assert_non_null(strstr(w.detail, "CONFIG_PSI"));
	tree_free(dir);
}

static void test_pressure__malformed_file(void **state)
{
	struct pressure_window w;
	char *dir = psi_tree();

	(void)state;
	tree_put(dir, "proc/pressure/memory", "some avg10=abc avg60=0 avg300=0 total=1\n");
	pressure_window__host(&w, dir);
	pressure_window__read(&w, false);
	/* The malformed file's values are gaps; the others are still read. */
	expect_gap(w.start.total_us[PSI_MEMORY][PSI_SOME], EV_GAP_UNAVAILABLE,
		   EV_SRC_PROC_PRESSURE);
	expect_gap(w.start.avg10_milli[PSI_MEMORY][PSI_FULL], EV_GAP_UNAVAILABLE,
		   EV_SRC_PROC_PRESSURE);
	expect_recorded(w.start.total_us[PSI_IO][PSI_SOME], 7, EV_SRC_PROC_PRESSURE);
	assert_non_null(strstr(w.detail, "/proc/pressure/memory: line 1: avg10 \"abc\""));
	tree_free(dir);
}

static void test_pressure__cgroup(void **state)
{
	struct pressure_window w;
	char *dir = psi_tree();

	(void)state;
	assert_int_equal(pressure_window__cgroup(&w, dir, 42), 0);
	assert_string_equal(w.path, "/khbpf.slice/job");
	assert_true(w.usable);
	pressure_window__read(&w, false);
	tree_put(dir, "sys/fs/cgroup/unified/khbpf.slice/job/cpu.pressure",
		 "some avg10=12.34 avg60=5.00 avg300=0.01 total=123456789112\n"
		 "full avg10=1.00 avg60=0.00 avg300=0.00 total=40\n");
	pressure_window__read(&w, true);
	/* A cgroup's cpu full is a measurement. */
	expect_recorded(pressure_window__stall(&w, PSI_CPU, PSI_SOME), 100, EV_SRC_SYSFS_CGROUP);
	expect_recorded(pressure_window__stall(&w, PSI_CPU, PSI_FULL), 40, EV_SRC_SYSFS_CGROUP);
	expect_recorded(w.end.avg10_milli[PSI_CPU][PSI_FULL], 1000, EV_SRC_SYSFS_CGROUP);
	expect_recorded(pressure_window__stall(&w, PSI_IO, PSI_FULL), 0, EV_SRC_SYSFS_CGROUP);
	assert_string_equal(w.detail, "");
	tree_free(dir);
}

static void test_pressure__cgroup_removed(void **state)
{
	struct pressure_window w;
	char *dir = psi_tree(), path[PATH_MAX], *moved = tree_new("psi-moved");

	(void)state;
	assert_int_equal(pressure_window__cgroup(&w, dir, 42), 0);
	pressure_window__read(&w, false);
	/* Removed and made again under the same name: not the start's counters. */
	snprintf(path, sizeof(path), "%s/sys/fs/cgroup/unified/khbpf.slice/job", dir);
	assert_int_equal(rename(path, moved), 0);
	tree_put(dir, "sys/fs/cgroup/unified/khbpf.slice/job/cpu.pressure", CPU_TEXT);
	pressure_window__read(&w, true);
	expect_gap(pressure_window__stall(&w, PSI_CPU, PSI_SOME), EV_GAP_UNAVAILABLE,
		   EV_SRC_SYSFS_CGROUP);
	assert_non_null(strstr(w.detail, "cgroup /khbpf.slice/job was removed"));
	tree_free(moved);
	tree_free(dir);
}

static void test_pressure__cgroup_v1_only(void **state)
{
	struct pressure_window w;
	char *dir = psi_tree();

	(void)state;
	tree_put(dir, "proc/42/cgroup", "1:cpu:/elsewhere\n");
	assert_int_equal(pressure_window__cgroup(&w, dir, 42), -ENOENT);
	pressure_window__read(&w, false);
	pressure_window__read(&w, true);
	expect_gap(pressure_window__stall(&w, PSI_CPU, PSI_SOME), EV_GAP_UNSUPPORTED,
		   EV_SRC_SYSFS_CGROUP);
	assert_non_null(strstr(w.detail, "cgroup v1 only"));

	/* cgroup v2 in /proc/PID/cgroup but not mounted here. */
	tree_put(dir, "proc/42/cgroup", "0::/khbpf.slice/job\n");
	tree_put(dir, "proc/self/mountinfo",
		 "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n");
	assert_int_equal(pressure_window__cgroup(&w, dir, 42), -ENOENT);
	assert_int_equal(w.gap, EV_GAP_UNSUPPORTED);
	assert_non_null(strstr(w.detail, "not mounted"));

	/* The process is gone. */
	assert_int_equal(pressure_window__cgroup(&w, dir, 43), -ESRCH);
	assert_int_equal(w.gap, EV_GAP_UNAVAILABLE);
	tree_free(dir);
}

static void test_pressure__root_cgroup(void **state)
{
	struct pressure_window w;
	char *dir = psi_tree();

	(void)state;
	tree_put(dir, "proc/42/cgroup", "0::/\n");
	tree_put(dir, "sys/fs/cgroup/unified/cpu.pressure", CPU_TEXT);
	assert_int_equal(pressure_window__cgroup(&w, dir, 42), 0);
	assert_string_equal(w.path, "/");
	pressure_window__read(&w, false);
	/* The root cgroup is the system-wide group: its cpu full is the constant 0 too. */
	expect_gap(w.start.total_us[PSI_CPU][PSI_FULL], EV_GAP_UNSUPPORTED, EV_SRC_SYSFS_CGROUP);
	expect_recorded(w.start.total_us[PSI_CPU][PSI_SOME], 123456789012ULL, EV_SRC_SYSFS_CGROUP);
	expect_gap(w.start.total_us[PSI_IO][PSI_SOME], EV_GAP_UNSUPPORTED, EV_SRC_SYSFS_CGROUP);
	tree_free(dir);
}

/* Root ignores permission bits: refusal is checked in a child that drops root. */
static void test_pressure__permission_denied(void **state)
{
	char path[PATH_MAX], *dir = psi_tree();
	int status;
	pid_t pid;

	(void)state;
	snprintf(path, sizeof(path), "%s/proc/pressure/cpu", dir);
	assert_int_equal(chmod(path, 0), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct pressure_window w;

		if (geteuid() == 0 && (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
				       setresuid(NOBODY, NOBODY, NOBODY)))
			_exit(77);
		pressure_window__host(&w, dir);
		pressure_window__read(&w, false);
		_exit(!w.start.total_us[PSI_CPU][PSI_SOME].ev.recorded &&
				      w.start.total_us[PSI_CPU][PSI_SOME].ev.reason ==
					      EV_GAP_PERMISSION_DENIED &&
				      w.start.total_us[PSI_IO][PSI_SOME].ev.recorded ?
			      0 :
			      1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	tree_free(dir);
	require_or_skip(!WIFEXITED(status) || WEXITSTATUS(status) != 77,
			"cannot drop root to uid 65534 to provoke EACCES");
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* The live host: when /proc/pressure exists, every some total is read. */
static void test_pressure__live(void **state)
{
	struct pressure_window w;

	(void)state;
	pressure_window__host(&w, "/");
	pressure_window__read(&w, false);
	pressure_window__read(&w, true);
	if (access("/proc/pressure/cpu", R_OK)) {
		expect_gap(w.end.total_us[PSI_CPU][PSI_SOME], EV_GAP_UNSUPPORTED,
			   EV_SRC_PROC_PRESSURE);
		return;
	}
	assert_true(pressure_window__stall(&w, PSI_CPU, PSI_SOME).ev.recorded);
	assert_true(pressure_window__stall(&w, PSI_MEMORY, PSI_FULL).ev.recorded);
	assert_true(w.end.avg10_milli[PSI_IO][PSI_SOME].ev.value <= 100000);
	assert_string_equal(w.detail, "");
	assert_string_equal(psi_resource__name(PSI_MEMORY), "memory");
	assert_string_equal(psi_kind__name(PSI_FULL), "full");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pressure__parse),
		cmocka_unit_test(test_pressure__malformed),
		cmocka_unit_test(test_pressure__host),
		cmocka_unit_test(test_pressure__no_psi),
		cmocka_unit_test(test_pressure__malformed_file),
		cmocka_unit_test(test_pressure__cgroup),
		cmocka_unit_test(test_pressure__cgroup_removed),
		cmocka_unit_test(test_pressure__cgroup_v1_only),
		cmocka_unit_test(test_pressure__root_cgroup),
		cmocka_unit_test(test_pressure__permission_denied),
		cmocka_unit_test(test_pressure__live),
	};

	return cmocka_run_group_tests_name("pressure", tests, NULL, NULL);
}

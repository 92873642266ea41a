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
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/fsutil.h"
#include "testutil.h"

#define FIXTURES "tests/fixtures"
#define NOBODY 65534

static void test_fsutil__path(void **state)
{
	char out[32];

	(void)state;
	assert_int_equal(fsutil__path(out, sizeof(out), "/", "/sys/x"), 6);
	assert_string_equal(out, "/sys/x");
	assert_int_equal(fsutil__path(out, sizeof(out), "", "/sys/x"), 6);
	assert_string_equal(out, "/sys/x");
	assert_int_equal(fsutil__path(out, sizeof(out), NULL, "/sys/x"), 6);
	assert_string_equal(out, "/sys/x");
	assert_int_equal(fsutil__path(out, sizeof(out), "fix//", "/proc/%d/stat", 7), 15);
	assert_string_equal(out, "fix/proc/7/stat");
	/* A relative part still gets exactly one separator. */
	assert_int_equal(fsutil__path(out, sizeof(out), "fix", "cpu%u", 3u), 8);
	assert_string_equal(out, "fix/cpu3");
	assert_int_equal(fsutil__path(out, sizeof(out), "/", "cpu"), 4);
	assert_string_equal(out, "/cpu");

	/* "abc/0123456789" is 14 bytes: 15 fits, 14 does not. */
	assert_int_equal(fsutil__path(out, 15, "abc", "/0123456789"), 14);
	assert_int_equal(fsutil__path(out, 14, "abc", "/0123456789"), -ENAMETOOLONG);
	assert_string_equal(out, "");
	assert_int_equal(fsutil__path(out, 15, "abc", "0123456789"), 14);
	assert_int_equal(fsutil__path(out, 14, "abc", "0123456789"), -ENAMETOOLONG);
	assert_int_equal(fsutil__path(out, 3, "abc", "/x"), -ENAMETOOLONG);
}

static void test_fsutil__read_file(void **state)
{
	char buf[16], *dir = tree_new("fsutil");

	(void)state;
	tree_put(dir, "exact", "0123456789abcde"); /* 15 bytes: fills buf exactly */
	tree_put(dir, "long", "0123456789abcdef");
	tree_put(dir, "empty", "");
	tree_put(dir, "adir", NULL);

	assert_int_equal(fsutil__read_file(dir, "/exact", buf, sizeof(buf)), 15);
	assert_string_equal(buf, "0123456789abcde");
	assert_int_equal(fsutil__read_file(dir, "/long", buf, sizeof(buf)), -EFBIG);
	assert_string_equal(buf, "");
	assert_int_equal(fsutil__read_file(dir, "/empty", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(fsutil__read_file(dir, "/missing", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(fsutil__read_file(dir, "/adir", buf, sizeof(buf)), -EISDIR);
	assert_int_equal(fsutil__read_file(dir, "/exact", buf, 0), -EINVAL);

	assert_int_equal(fsutil__read_file(FIXTURES "/numa2",
					   "/sys/devices/system/node/node1/cpulist", buf,
					   sizeof(buf)),
			 10);
	assert_string_equal(buf, "4-7,12-15\n");
	tree_free(dir);
}

/* Each kind of file at once, never waiting: a FIFO with no writer included. */
static void test_fsutil__open_regular(void **state)
{
	char *dir = tree_new("openreg"), path[PATH_MAX], buf[8];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, sock;

	(void)state;
	tree_put(dir, "doc.json", "{}");
	snprintf(path, sizeof(path), "%s/doc.json", dir);
	fd = fsutil__open_regular(path, &st);
	assert_true(fd >= 0);
	assert_true(S_ISREG(st.st_mode));
	/* Blocking again: a read of a regular file is an ordinary read. */
	assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 2);
	close(fd);

	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(fsutil__open_regular(path, &st), -EINVAL);
	assert_string_equal(fsutil__file_kind(st.st_mode), "a FIFO (named pipe)");

	assert_int_equal(fsutil__open_regular(dir, &st), -EISDIR);
	assert_string_equal(fsutil__file_kind(st.st_mode), "a directory");
	assert_int_equal(fsutil__open_regular("/dev/null", &st), -EINVAL);
	assert_string_equal(fsutil__file_kind(st.st_mode), "a character device");

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", dir);
	sock = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(sock >= 0);
	assert_int_equal(bind(sock, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(fsutil__open_regular(sa.sun_path, &st), -EINVAL);
	assert_string_equal(fsutil__file_kind(st.st_mode), "a socket");
	close(sock);

	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(fsutil__open_regular(path, &st), -ENOENT);
	tree_free(dir);
}

static void test_fsutil__parse_u64(void **state)
{
	static const char *const bad[] = { "",	 "\n", " 42",  "42 ", "42\n\n",
					   "-1", "+1", "0x10", "1a",  "4\n2" };
	uint64_t v = 7;
	size_t i;

	(void)state;
	assert_int_equal(fsutil__parse_u64("42", &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(fsutil__parse_u64("0\n", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(fsutil__parse_u64("18446744073709551615\n", &v), 0);
	assert_true(v == UINT64_MAX);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		assert_int_equal(fsutil__parse_u64(bad[i], &v), -EINVAL);
		assert_int_equal(v, 7);
	}
	assert_int_equal(fsutil__parse_u64("18446744073709551616", &v), -ERANGE);
	assert_int_equal(fsutil__parse_u64("99999999999999999999999\n", &v), -ERANGE);
	/* Junk wins over overflow: it is malformed, not merely large. */
	assert_int_equal(fsutil__parse_u64("99999999999999999999999x", &v), -EINVAL);
}

static void test_fsutil__parse_s64(void **state)
{
	int64_t v;

	(void)state;
	assert_int_equal(fsutil__parse_s64("-1\n", &v), 0);
	assert_true(v == -1);
	assert_int_equal(fsutil__parse_s64("150000\n", &v), 0);
	assert_true(v == 150000);
	assert_int_equal(fsutil__parse_s64("-9223372036854775808", &v), 0);
	assert_true(v == INT64_MIN);
	assert_int_equal(fsutil__parse_s64("9223372036854775807", &v), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(fsutil__parse_s64("-9223372036854775809", &v), -ERANGE);
	assert_int_equal(fsutil__parse_s64("9223372036854775808", &v), -ERANGE);
	assert_int_equal(fsutil__parse_s64("-", &v), -EINVAL);
	assert_int_equal(fsutil__parse_s64("--1", &v), -EINVAL);
	assert_int_equal(fsutil__parse_s64("- 1", &v), -EINVAL);
}

static void test_fsutil__read_u64(void **state)
{
	char path[PATH_MAX], *dir = tree_new("fsutil");
	uint64_t v;
	int64_t s;
	FILE *f;

	(void)state;
	assert_int_equal(fsutil__read_u64(FIXTURES "/numa2",
					  "/sys/devices/system/cpu/cpu3/cpufreq/scaling_cur_freq",
					  &v),
			 0);
	assert_int_equal(v, 3600000);
	tree_put(dir, "junk", "12 kHz\n");
	tree_put(dir, "huge",
		 "123456789012345678901234567890123456789012345678901234567890123456789\n");
	tree_put(dir, "neg", "-1\n");
	/* "12\0" "34": an embedded NUL must not truncate to a valid "12". */
	snprintf(path, sizeof(path), "%s/nul", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite("12\0"
				"34\n",
				1, 6, f),
			 6);
	fclose(f);
	assert_int_equal(fsutil__read_u64(dir, "/junk", &v), -EINVAL);
	assert_int_equal(fsutil__read_u64(dir, "/huge", &v), -EINVAL);
	assert_int_equal(fsutil__read_u64(dir, "/nul", &v), -EINVAL);
	assert_int_equal(fsutil__read_u64(dir, "/neg", &v), -EINVAL);
	assert_int_equal(fsutil__read_u64(dir, "/missing", &v), -ENOENT);
	assert_int_equal(fsutil__read_s64(dir, "/neg", &s), 0);
	assert_true(s == -1);
	tree_free(dir);
}

static uint32_t mask_bits_set(const uint8_t *mask, uint32_t bits)
{
	uint32_t i, n = 0;

	for (i = 0; i < bits; i++)
		n += fsutil__test_bit(mask, i);
	return n;
}

static void test_fsutil__parse_cpulist(void **state)
{
	static const char *const bad[] = {
		"0-",  "-1",   "3-1",	  "0,,1",  "0-3,",    ",0", "a",
		"0 1", "1\n2", "0-3\n\n", "1-2-3", "0-7:2/4", " 0", "0\t"
	};
	static const uint32_t want[] = { 0, 1, 2, 3, 8, 10, 11 };
	uint8_t mask[8];
	uint32_t count = 99, i;

	(void)state;
	memset(mask, 0xff, sizeof(mask));
	assert_int_equal(fsutil__parse_cpulist("0-3,8,10-11\n", mask, 64, &count), 0);
	assert_int_equal(count, 7);
	assert_int_equal(mask_bits_set(mask, 64), 7);
	for (i = 0; i < 7; i++)
		assert_true(fsutil__test_bit(mask, want[i]));

	assert_int_equal(fsutil__parse_cpulist("", mask, 64, &count), 0);
	assert_int_equal(count, 0);
	assert_int_equal(fsutil__parse_cpulist("\n", mask, 64, &count), 0);
	assert_int_equal(count, 0);
	assert_int_equal(mask_bits_set(mask, 64), 0);
	assert_int_equal(fsutil__parse_cpulist("63", mask, 64, &count), 0);
	assert_int_equal(count, 1);
	assert_true(fsutil__test_bit(mask, 63));
	/* Overlapping ranges count each CPU once. */
	assert_int_equal(fsutil__parse_cpulist("0-3,2-5,5", mask, 64, &count), 0);
	assert_int_equal(count, 6);
	assert_int_equal(fsutil__parse_cpulist("0-3,2-5,5", mask, 64, NULL), 0);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		count = 99;
		assert_int_equal(fsutil__parse_cpulist(bad[i], mask, 64, &count), -EINVAL);
		assert_int_equal(count, 0);
		assert_int_equal(mask_bits_set(mask, 64), 0);
	}
	assert_int_equal(fsutil__parse_cpulist("0-64\n", mask, 64, &count), -ERANGE);
	assert_int_equal(mask_bits_set(mask, 64), 0);
	assert_int_equal(fsutil__parse_cpulist("1,64", mask, 64, &count), -ERANGE);
	assert_int_equal(fsutil__parse_cpulist("0-4294967296", mask, 64, &count), -ERANGE);
	assert_int_equal(fsutil__parse_cpulist("99999999999999999999999", mask, 64, &count),
			 -ERANGE);
	/* Malformed anywhere beats out of range. */
	assert_int_equal(fsutil__parse_cpulist("64,x", mask, 64, &count), -EINVAL);

	assert_int_equal(fsutil__read_cpulist(FIXTURES "/numa2",
					      "/sys/devices/system/node/node0/cpulist", mask, 64,
					      &count),
			 0);
	assert_int_equal(count, 8);
	assert_true(fsutil__test_bit(mask, 11) && !fsutil__test_bit(mask, 4));
}

static void test_fsutil__list_tids(void **state)
{
	char *dir = tree_new("fsutil");
	pid_t *tids = NULL, self = gettid(), poison;
	size_t nr = 1, i;
	bool found = false;

	(void)state;
	/*
	 * Digits only, 1..INT_MAX: "007" is kept as 7, "0", "abc" and
	 * INT_MAX + 1 are skipped, as are "." and "..".
	 */
	tree_put(dir, "proc/42/task/10", NULL);
	tree_put(dir, "proc/42/task/2", NULL);
	tree_put(dir, "proc/42/task/abc", NULL);
	tree_put(dir, "proc/42/task/0", NULL);
	tree_put(dir, "proc/42/task/007", NULL);
	tree_put(dir, "proc/42/task/2147483647", NULL);
	tree_put(dir, "proc/42/task/2147483648", NULL);
	assert_int_equal(fsutil__list_tids(dir, 42, &tids, &nr), 0);
	assert_int_equal(nr, 4);
	assert_int_equal(tids[0], 2);
	assert_int_equal(tids[1], 7);
	assert_int_equal(tids[2], 10);
	assert_int_equal(tids[3], INT_MAX);
	free(tids);

	/* An empty task directory is no error; the list is empty. */
	tree_put(dir, "proc/43/task", NULL);
	tids = &poison;
	nr = 1;
	assert_int_equal(fsutil__list_tids(dir, 43, &tids, &nr), 0);
	assert_null(tids);
	assert_int_equal(nr, 0);

	/* A pid without root/proc/PID/task does not exist. */
	tids = &poison;
	nr = 1;
	assert_int_equal(fsutil__list_tids(dir, 99, &tids, &nr), -ESRCH);
	assert_null(tids);
	assert_int_equal(nr, 0);
	tree_free(dir);

	/* The live process lists the calling thread. */
	assert_int_equal(fsutil__list_tids("/", getpid(), &tids, &nr), 0);
	assert_true(nr >= 1);
	for (i = 0; i < nr; i++) {
		if (i)
			assert_true(tids[i - 1] < tids[i]);
		if (tids[i] == self)
			found = true;
	}
	assert_true(found);
	free(tids);
}

static void test_fsutil__errno_gap(void **state)
{
	(void)state;
	assert_int_equal(fsutil__errno_gap(-EACCES), EV_GAP_PERMISSION_DENIED);
	assert_int_equal(fsutil__errno_gap(-EPERM), EV_GAP_PERMISSION_DENIED);
	assert_int_equal(fsutil__errno_gap(EACCES), EV_GAP_PERMISSION_DENIED);
	assert_int_equal(fsutil__errno_gap(-ENOENT), EV_GAP_UNAVAILABLE);
	assert_int_equal(fsutil__errno_gap(-EISDIR), EV_GAP_UNAVAILABLE);
	assert_int_equal(fsutil__errno_gap(-EINVAL), EV_GAP_UNAVAILABLE);
	assert_int_equal(fsutil__errno_gap(-ERANGE), EV_GAP_UNAVAILABLE);
	assert_int_equal(fsutil__errno_gap(0), EV_GAP_UNAVAILABLE);
}

/*
 * Root bypasses permission bits, so the EACCES path is exercised in a child
 * that gives up root; it exits 0 when the read was refused with -EACCES.
 */
static void test_fsutil__permission_denied(void **state)
{
	char buf[16], *dir = tree_new("fsutil");
	int status;
	pid_t pid;

	(void)state;
	tree_put(dir, "secret", "1\n");
	{
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/secret", dir);
		assert_int_equal(chmod(path, 0), 0);
	}
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		if (geteuid() == 0 && (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
				       setresuid(NOBODY, NOBODY, NOBODY)))
			_exit(77);
		_exit(fsutil__read_file(dir, "/secret", buf, sizeof(buf)) == -EACCES ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	tree_free(dir);
	require_or_skip(!WIFEXITED(status) || WEXITSTATUS(status) != 77,
			"cannot drop root to uid 65534 to provoke EACCES");
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fsutil__path),
		cmocka_unit_test(test_fsutil__read_file),
		cmocka_unit_test(test_fsutil__open_regular),
		cmocka_unit_test(test_fsutil__parse_u64),
		cmocka_unit_test(test_fsutil__parse_s64),
		cmocka_unit_test(test_fsutil__read_u64),
		cmocka_unit_test(test_fsutil__parse_cpulist),
		cmocka_unit_test(test_fsutil__list_tids),
		cmocka_unit_test(test_fsutil__errno_gap),
		cmocka_unit_test(test_fsutil__permission_denied),
	};

	return cmocka_run_group_tests_name("fsutil", tests, NULL, NULL);
}

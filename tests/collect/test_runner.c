// SPDX-License-Identifier: MIT
/* run's held command: it runs only when released, and a failed exec comes back as 126/127. */
#include <errno.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "collect/runner.h"
#include "testutil.h"

static int setup(void **state)
{
	*state = tree_new("runner");
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	return 0;
}

static int teardown(void **state)
{
	tree_free(*state);
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	return 0;
}

static struct runner *fork_cmd(char *const *argv, bool as_root)
{
	struct runner_opts ro = { .sz = sizeof(ro), .argv = argv, .as_root = as_root };
	struct runner *r = NULL;
	char errbuf[128] = "";

	assert_int_equal(runner__fork(&r, &ro, errbuf, sizeof(errbuf)), 0);
	assert_non_null(r);
	assert_true(runner__pid(r) > 0);
	return r;
}

static int reap(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void put_file(const char *dir, const char *name, const char *text, size_t len, mode_t mode,
		     char *path, size_t size)
{
	FILE *f;

	snprintf(path, size, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* The child waits on its pipe: nothing runs until runner__go. */
static void test_runner__runs_only_on_go(void **state)
{
	char mark[PATH_MAX], script[PATH_MAX + 32];
	char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct runner *r;
	struct stat st;
	int step, err;
	pid_t pid;

	snprintf(mark, sizeof(mark), "%s/ran", (char *)*state);
	snprintf(script, sizeof(script), "echo ran > '%s'", mark);
	r = fork_cmd(argv, true);
	pid = runner__pid(r);
	usleep(200 * 1000);
	assert_int_equal(waitpid(pid, NULL, WNOHANG), 0);
	assert_int_equal(stat(mark, &st), -1);
	assert_int_equal(runner__go(r), 0);
	assert_false(runner__failure(r, &step, &err));
	assert_int_equal(runner__exit_code(r), 0);
	assert_int_equal(reap(pid), 0);
	assert_int_equal(stat(mark, &st), 0);
	runner__destroy(r);
}

/* Given up before go: the child leaves with 127 and the command never runs. */
static void test_runner__destroy_before_go(void **state)
{
	char mark[PATH_MAX], script[PATH_MAX + 32];
	char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct runner *r;
	struct stat st;
	pid_t pid;

	snprintf(mark, sizeof(mark), "%s/ran", (char *)*state);
	snprintf(script, sizeof(script), "echo ran > '%s'", mark);
	r = fork_cmd(argv, true);
	pid = runner__pid(r);
	runner__destroy(r);
	assert_int_equal(reap(pid), 127);
	assert_int_equal(stat(mark, &st), -1);
}

static void expect_exec_failure(char *const *argv, bool as_root, int want_step, int want_errno,
				int want_code)
{
	struct runner *r = fork_cmd(argv, as_root);
	pid_t pid = runner__pid(r);
	int step = 0, err = 0;

	assert_int_equal(runner__go(r), -ENOEXEC);
	assert_true(runner__failure(r, &step, &err));
	assert_int_equal(step, want_step);
	assert_int_equal(err, want_errno);
	assert_int_equal(runner__exit_code(r), want_code);
	/* The child's own exit status agrees with what it reported. */
	assert_int_equal(reap(pid), want_code);
	runner__destroy(r);
}

static void test_runner__not_found_is_127(void **state)
{
	char *argv[] = { "khbpf-test-no-such-command", NULL };

	(void)state;
	expect_exec_failure(argv, true, RUNNER_FAILED_EXEC, ENOENT, 127);
}

static void test_runner__not_executable_is_126(void **state)
{
	char path[PATH_MAX];
	char *argv[] = { path, NULL };

	put_file(*state, "noexec", "exit 0\n", 7, 0644, path, sizeof(path));
	/* root may exec only a file with some x bit. */
	expect_exec_failure(argv, true, RUNNER_FAILED_EXEC, EACCES, 126);
}

/* A binary the kernel refuses is not handed to sh, unlike execvp(3). */
static void test_runner__binary_junk_is_126(void **state)
{
	static const char junk[] = "\x01\x02\0\x03junk";
	char path[PATH_MAX];
	char *argv[] = { path, NULL };

	put_file(*state, "junk", junk, sizeof(junk), 0755, path, sizeof(path));
	expect_exec_failure(argv, true, RUNNER_FAILED_EXEC, ENOEXEC, 126);
}

/* A text file without "#!" runs under /bin/sh, as shells do; its arguments follow. */
static void test_runner__script_without_shebang(void **state)
{
	char path[PATH_MAX];
	char *argv[] = { path, "5", NULL };
	struct runner *r;

	put_file(*state, "script", "exit $(($1 + 2))\n", 17, 0755, path, sizeof(path));
	r = fork_cmd(argv, true);
	assert_int_equal(runner__go(r), 0);
	assert_int_equal(reap(runner__pid(r)), 7);
	runner__destroy(r);
}

/* Under sudo, CMD runs as SUDO_UID with that user's HOME; as_root keeps root. */
static void test_runner__runs_as_sudo_user(void **state)
{
	char *argv[] = { "/bin/sh", "-c",
			 "test \"$(id -u):$(id -g)\" = 65534:65534 && test \"$USER\" = nobody",
			 NULL };
	char *root_argv[] = { "/bin/sh", "-c", "test \"$(id -u)\" = 0", NULL };
	struct runner *r;

	(void)state;
	require_or_skip(getuid() == 0, "needs root");
	require_or_skip(getpwuid(65534) != NULL, "needs user 65534 (nobody)");
	setenv("SUDO_UID", "65534", 1);
	setenv("SUDO_GID", "65534", 1);
	r = fork_cmd(argv, false);
	assert_int_equal(runner__go(r), 0);
	assert_int_equal(reap(runner__pid(r)), 0);
	runner__destroy(r);
	r = fork_cmd(root_argv, true);
	assert_int_equal(runner__go(r), 0);
	assert_int_equal(reap(runner__pid(r)), 0);
	runner__destroy(r);
}

/* SUDO_* that name no user: the child reports the drop, not the exec, as failed. */
static void test_runner__bad_sudo_ids_is_126(void **state)
{
	char *argv[] = { "/bin/true", NULL };

	(void)state;
	require_or_skip(getuid() == 0, "needs root");
	setenv("SUDO_UID", "not-a-number", 1);
	setenv("SUDO_GID", "0", 1);
	expect_exec_failure(argv, false, RUNNER_FAILED_USER, EINVAL, 126);
}

static void test_runner__resolve_exe(void **state)
{
	char out[PATH_MAX], want[PATH_MAX];

	(void)state;
	assert_non_null(realpath("/bin/sh", want));
	assert_true(runner__resolve_exe("sh", out, sizeof(out)));
	assert_string_equal(out, want);
	assert_true(runner__resolve_exe("/bin/sh", out, sizeof(out)));
	assert_string_equal(out, want);
	assert_false(runner__resolve_exe("khbpf-test-no-such-command", out, sizeof(out)));
	/* Too small for the path: not resolved rather than cut. */
	assert_false(runner__resolve_exe("sh", out, 4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_runner__runs_only_on_go, setup, teardown),
		cmocka_unit_test_setup_teardown(test_runner__destroy_before_go, setup, teardown),
		cmocka_unit_test_setup_teardown(test_runner__not_found_is_127, setup, teardown),
		cmocka_unit_test_setup_teardown(test_runner__not_executable_is_126, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_runner__binary_junk_is_126, setup, teardown),
		cmocka_unit_test_setup_teardown(test_runner__script_without_shebang, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_runner__runs_as_sudo_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_runner__bad_sudo_ids_is_126, setup, teardown),
		cmocka_unit_test(test_runner__resolve_exe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

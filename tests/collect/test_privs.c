// SPDX-License-Identifier: MIT
/* The invoking user under sudo, the writer's identity, and the capability drop (run as root). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "collect/privs.h"
#include "testutil.h"

static int setup(void **state)
{
	(void)state;
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	return 0;
}

static void sudo_as(const char *uid, const char *gid)
{
	setenv("SUDO_UID", uid, 1);
	setenv("SUDO_GID", gid, 1);
}

static void test_privs__invoking_user(void **state)
{
	uid_t uid = 42;
	gid_t gid = 42;

	(void)state;
	require_or_skip(getuid() == 0, "needs root");
	assert_int_equal(privs__invoking_user(&uid, &gid), 0);
	sudo_as("1000", "1001");
	assert_int_equal(privs__invoking_user(&uid, &gid), 1);
	assert_int_equal(uid, 1000);
	assert_int_equal(gid, 1001);
	/* sudo by root itself: nobody to become. */
	sudo_as("0", "0");
	assert_int_equal(privs__invoking_user(&uid, &gid), 0);
	sudo_as("1000", "");
	assert_int_equal(privs__invoking_user(&uid, &gid), -EINVAL);
	sudo_as("4294967295", "1000");
	assert_int_equal(privs__invoking_user(&uid, &gid), -EINVAL);
	unsetenv("SUDO_GID");
	assert_int_equal(privs__invoking_user(&uid, &gid), 0);
}

static bool cap_is(cap_value_t c, cap_flag_t flag)
{
	cap_flag_value_t v = CAP_CLEAR;
	cap_t caps = cap_get_proc();

	assert_non_null(caps);
	assert_int_equal(cap_get_flag(caps, c, flag, &v), 0);
	cap_free(caps);
	return v == CAP_SET;
}

/*
 * Under SUDO_UID, files are created as that user and where that user may
 * write; afterwards everything is root's again.
 */
static void test_privs__writer_is_sudo_user(void **state)
{
	char *dir = tree_new("privs"), denied[PATH_MAX], mine[PATH_MAX];
	int fd, denied_fd, denied_errno, ngroups, begin;
	uid_t fsuid;
	gid_t fsgid;
	bool dac;
	struct privs_writer w;
	struct stat st;

	(void)state;
	require_or_skip(getuid() == 0 && cap_is(CAP_DAC_OVERRIDE, CAP_EFFECTIVE), "needs root");
	require_or_skip(getpwuid(65534) != NULL, "needs user 65534 (nobody)");
	ngroups = getgroups(0, NULL);
	/* The tree is root's, mode 0755: nobody may not create in it, but may in open/. */
	snprintf(denied, sizeof(denied), "%s/denied", dir);
	snprintf(mine, sizeof(mine), "%s/open", dir);
	assert_int_equal(mkdir(mine, 01777), 0);
	assert_int_equal(chmod(mine, 01777), 0);
	snprintf(mine, sizeof(mine), "%s/open/mine", dir);
	sudo_as("65534", "65534");
	/* Everything is read before the asserts, so a failure leaves root's ids behind. */
	begin = privs__writer_begin(&w);
	fsuid = (uid_t)setfsuid((uid_t)-1);
	fsgid = (gid_t)setfsgid((gid_t)-1);
	dac = cap_is(CAP_DAC_OVERRIDE, CAP_EFFECTIVE);
	denied_fd = open(denied, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	denied_errno = errno;
	fd = open(mine, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	privs__writer_end(&w);

	assert_int_equal(begin, 0);
	assert_int_equal(fsuid, 65534);
	assert_int_equal(fsgid, 65534);
	assert_false(dac);
	assert_int_equal(denied_fd, -1);
	assert_int_equal(denied_errno, EACCES);
	assert_true(fd >= 0);
	assert_int_equal(stat(mine, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	assert_int_equal(st.st_gid, 65534);
	/* And everything is root's again. */
	assert_int_equal(setfsuid((uid_t)-1), 0);
	assert_int_equal(setfsgid((gid_t)-1), 0);
	assert_true(cap_is(CAP_DAC_OVERRIDE, CAP_EFFECTIVE));
	assert_int_equal(getgroups(0, NULL), ngroups);
	tree_free(dir);
}

/* Without sudo the ids stay root's, but the check still runs without capabilities. */
static void test_privs__writer_without_sudo(void **state)
{
	struct privs_writer w;
	int begin;
	uid_t fsuid;
	bool eff, prm;

	(void)state;
	require_or_skip(getuid() == 0 && cap_is(CAP_DAC_OVERRIDE, CAP_EFFECTIVE), "needs root");
	begin = privs__writer_begin(&w);
	fsuid = (uid_t)setfsuid((uid_t)-1);
	eff = cap_is(CAP_DAC_OVERRIDE, CAP_EFFECTIVE);
	prm = cap_is(CAP_DAC_OVERRIDE, CAP_PERMITTED);
	privs__writer_end(&w);
	assert_int_equal(begin, 0);
	assert_int_equal(fsuid, 0);
	assert_false(eff);
	assert_true(prm);
	assert_true(cap_is(CAP_DAC_OVERRIDE, CAP_EFFECTIVE));
}

/* The drop cannot be undone: it is tried in a child, which reports by exit status. */
static int in_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fn());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int drop_keeping_kill(void)
{
	cap_value_t keep[] = { CAP_KILL, CAP_BPF };
	cap_t caps;
	cap_flag_value_t v;

	sudo_as("65534", "65534");
	if (privs__drop(keep, 2))
		return 1;
	if (!cap_is(CAP_KILL, CAP_EFFECTIVE) || !cap_is(CAP_KILL, CAP_PERMITTED))
		return 2;
	if (cap_is(CAP_SYS_ADMIN, CAP_PERMITTED) || cap_is(CAP_DAC_OVERRIDE, CAP_PERMITTED))
		return 3;
	/* Gone from the bounding set too, so no exec can get it back. */
	if (cap_get_bound(CAP_SYS_ADMIN) != 0 || cap_get_bound(CAP_KILL) != 1)
		return 4;
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return 5;
	/* Files are written as the invoking user. */
	if (setfsuid((uid_t)-1) != 65534 || setfsgid((gid_t)-1) != 65534)
		return 6;
	caps = cap_get_proc();
	if (!caps || cap_get_flag(caps, CAP_CHOWN, CAP_INHERITABLE, &v) || v == CAP_SET)
		return 7;
	cap_free(caps);
	return 0;
}

static void test_privs__drop_keeps_only_wanted(void **state)
{
	(void)state;
	require_or_skip(getuid() == 0 && cap_is(CAP_SETPCAP, CAP_EFFECTIVE) &&
				getpwuid(65534) != NULL,
			"needs root with CAP_SETPCAP and user 65534");
	assert_int_equal(in_child(drop_keeping_kill), 0);
}

static void *idle(void *arg)
{
	pause();
	return arg;
}

static int drop_with_two_threads(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, idle, NULL))
		return 1;
	if (privs__drop(NULL, 0) != -EBUSY)
		return 2;
	/* Refused before anything changed. */
	return cap_is(CAP_SYS_ADMIN, CAP_EFFECTIVE) && !prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) ? 0 :
												 3;
}

static void test_privs__drop_refused_with_threads(void **state)
{
	(void)state;
	require_or_skip(getuid() == 0 && cap_is(CAP_SYS_ADMIN, CAP_EFFECTIVE), "needs root");
	assert_int_equal(in_child(drop_with_two_threads), 0);
}

static int become_nobody(void)
{
	sudo_as("65534", "65534");
	if (privs__become_invoking_user())
		return 1;
	if (getuid() != 65534 || geteuid() != 65534 || getgid() != 65534)
		return 2;
	if (strcmp(getenv("USER") ?: "", "nobody") ||
	    strcmp(getenv("HOME") ?: "", getpwuid(65534)->pw_dir))
		return 3;
	return 0;
}

static int become_with_bad_ids(void)
{
	sudo_as("x", "0");
	return privs__become_invoking_user() == -EINVAL && getuid() == 0 ? 0 : 1;
}

static void test_privs__become_invoking_user(void **state)
{
	(void)state;
	require_or_skip(getuid() == 0 && getpwuid(65534) != NULL, "needs root and user 65534");
	assert_int_equal(in_child(become_nobody), 0);
	assert_int_equal(in_child(become_with_bad_ids), 0);
	/* No sudo: nothing to do. */
	assert_int_equal(privs__become_invoking_user(), 0);
	assert_int_equal(getuid(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_privs__invoking_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_privs__writer_is_sudo_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_privs__writer_without_sudo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_privs__drop_keeps_only_wanted, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_privs__drop_refused_with_threads, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_privs__become_invoking_user, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

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

#include "host/cgroup.h"
#include "testutil.h"

#define FIXTURES "tests/fixtures"
#define NOBODY 65534
#define V2_MOUNT                                                                                  \
	"25 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 " \
	"rw,nsdelegate\n"

static void assert_quota(const char *root, pid_t pid, uint64_t milli, const char *path)
{
	struct sev_u64 v;
	char cg[256] = "junk";

	assert_int_equal(cgroup__cpu_quota(root, pid, &v, cg, sizeof(cg)), 0);
	assert_true(v.ev.recorded);
	assert_int_equal(v.ev.value, milli);
	assert_int_equal(v.source, EV_SRC_SYSFS_CGROUP);
	assert_string_equal(cg, path);
}

static void assert_quota_gap(const char *root, pid_t pid, int ret, enum ev_gap reason)
{
	struct sev_u64 v;

	assert_int_equal(cgroup__cpu_quota(root, pid, &v, NULL, 0), ret);
	assert_false(v.ev.recorded);
	assert_int_equal(v.ev.reason, reason);
	assert_int_equal(v.source, EV_SRC_SYSFS_CGROUP);
}

/* The v2 mount, a path's id and depth, and the id → path table. */
static void test_cgroup__v2_names(void **state)
{
	char *dir = tree_new("cgroup"), mnt[PATH_MAX], p[PATH_MAX + 16];
	const struct cgroup_name *n;
	struct cgroup_name *v;
	uint64_t id, dropped;
	uint32_t level;
	struct stat st;
	size_t nr;

	(void)state;
	tree_put(dir, "proc/self/mountinfo",
		 "24 1 0:22 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
		 "31 22 0:27 /sub /mnt/sub rw - cgroup2 cgroup2 rw\n"
		 "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n");
	tree_put(dir, "sys/fs/cgroup/unified/a/b", NULL);
	tree_put(dir, "sys/fs/cgroup/unified/c", NULL);
	assert_int_equal(cgroup__v2_mount(dir, mnt, sizeof(mnt)), 0);
	snprintf(p, sizeof(p), "%s/sys/fs/cgroup/unified", dir);
	assert_string_equal(mnt, p);

	assert_int_equal(cgroup__v2_id(mnt, "/a/b", &id, &level), 0);
	snprintf(p, sizeof(p), "%s/a/b", mnt);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(id, st.st_ino);
	assert_int_equal(level, 2);
	assert_int_equal(cgroup__v2_id(mnt, "/", &id, &level), 0);
	assert_int_equal(level, 0);
	assert_int_equal(cgroup__v2_id(mnt, "/nope", &id, &level), -ENOENT);
	assert_int_equal(cgroup__v2_id(mnt, "a", &id, &level), -EINVAL);
	assert_int_equal(cgroup__v2_id(mnt, "/a/../c", &id, &level), -EINVAL);
	/* Spellings of /a that are not its one: each would have counted another depth. */
	assert_int_equal(cgroup__v2_id(mnt, "/a/.", &id, &level), -EINVAL);
	assert_int_equal(cgroup__v2_id(mnt, "/a/", &id, &level), -EINVAL);
	assert_int_equal(cgroup__v2_id(mnt, "//a", &id, &level), -EINVAL);
	assert_int_equal(cgroup__v2_id(mnt, "/a/..", &id, &level), -EINVAL);

	assert_int_equal(cgroup_names__scan(mnt, 100, &v, &nr, &dropped), 0);
	assert_int_equal(nr, 4); /* /, /a, /a/b, /c */
	assert_int_equal(dropped, 0);
	snprintf(p, sizeof(p), "%s/a/b", mnt);
	assert_int_equal(stat(p, &st), 0);
	n = cgroup_names__find(v, nr, st.st_ino);
	assert_non_null(n);
	assert_string_equal(n->path, "/a/b");
	assert_int_equal(stat(mnt, &st), 0);
	n = cgroup_names__find(v, nr, st.st_ino);
	assert_non_null(n);
	assert_string_equal(n->path, "/");
	assert_null(cgroup_names__find(v, nr, 1));

	/* A rescan after /c is removed keeps /c's name. */
	{
		struct cgroup_name *old = v, *nv;
		size_t nr_old = nr, nnr;
		uint64_t c_id;

		snprintf(p, sizeof(p), "%s/c", mnt);
		assert_int_equal(stat(p, &st), 0);
		c_id = st.st_ino;
		assert_int_equal(rmdir(p), 0);
		assert_int_equal(cgroup_names__scan(mnt, 100, &nv, &nnr, &dropped), 0);
		assert_int_equal(nnr, 3);
		assert_null(cgroup_names__find(nv, nnr, c_id));
		assert_int_equal(cgroup_names__keep_gone(&nv, &nnr, old, nr_old, 100, &dropped), 0);
		assert_int_equal(nnr, 4);
		n = cgroup_names__find(nv, nnr, c_id);
		assert_non_null(n);
		assert_string_equal(n->path, "/c");
		v = nv;
		nr = nnr;
	}
	cgroup_names__free(v, nr);

	/* Bounded: the rest is counted (/, /a, /a/b are left). */
	assert_int_equal(cgroup_names__scan(mnt, 2, &v, &nr, &dropped), 0);
	assert_int_equal(nr, 2);
	assert_int_equal(dropped, 1);
	cgroup_names__free(v, nr);

	tree_put(dir, "proc/self/mountinfo",
		 "24 1 0:22 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw\n");
	assert_int_equal(cgroup__v2_mount(dir, mnt, sizeof(mnt)), -ENOENT);
	tree_free(dir);
}

static void expect_normal(const char *in, int err, const char *want)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s", in);
	assert_int_equal(cgroup__normalize_path(buf), err);
	if (!err)
		assert_string_equal(buf, want);
}

static void test_cgroup__normalize_path(void **state)
{
	(void)state;
	expect_normal("/a", 0, "/a");
	expect_normal("/a/.", 0, "/a");
	expect_normal("/a/", 0, "/a");
	expect_normal("/a/./", 0, "/a");
	expect_normal("//a//b//", 0, "/a/b");
	expect_normal("/./a", 0, "/a");
	expect_normal("/a/../a", 0, "/a");
	expect_normal("/a/b/..", 0, "/a");
	expect_normal("/a/b/../../c", 0, "/c");
	expect_normal("/a/..", 0, "/");
	expect_normal("/", 0, "/");
	expect_normal("/.", 0, "/");
	expect_normal("///", 0, "/");
	/* Names that only begin with dots are names. */
	expect_normal("/.a/..b/...", 0, "/.a/..b/...");
	expect_normal("/..", -ERANGE, NULL);
	expect_normal("/a/../..", -ERANGE, NULL);
	expect_normal("/a/../../a", -ERANGE, NULL);
	expect_normal("a", -EINVAL, NULL);
	expect_normal("", -EINVAL, NULL);
	expect_normal("./a", -EINVAL, NULL);
}

static void expect_stripped(const char *in, const char *point, bool stripped, const char *want)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s", in);
	assert_int_equal(cgroup__strip_mount(buf, point), stripped);
	assert_string_equal(buf, want);
}

/* --cgroup given as the directory's full path: the path from the v2 root. */
static void test_cgroup__strip_mount(void **state)
{
	(void)state;
	expect_stripped("/sys/fs/cgroup/unified/x", "/sys/fs/cgroup/unified", true, "/x");
	expect_stripped("/sys/fs/cgroup/unified/a/b", "/sys/fs/cgroup/unified", true, "/a/b");
	expect_stripped("/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified", true, "/");
	expect_stripped("/sys/fs/cgroup/system.slice", "/sys/fs/cgroup", true, "/system.slice");
	expect_stripped("/sys/fs/cgroup/x", "/sys/fs/cgroup/", true, "/x");
	/* Only at a component's end: unified2 is another directory. */
	expect_stripped("/sys/fs/cgroup/unified2/x", "/sys/fs/cgroup/unified", false,
			"/sys/fs/cgroup/unified2/x");
	/* A v1 hierarchy's path (hybrid host) is not below the v2 mount. */
	expect_stripped("/sys/fs/cgroup/systemd/x", "/sys/fs/cgroup/unified", false,
			"/sys/fs/cgroup/systemd/x");
	expect_stripped("/system.slice", "/sys/fs/cgroup", false, "/system.slice");
	expect_stripped("/sys", "/sys/fs/cgroup", false, "/sys");
	/* A mount at "/" would take every path for its own: none is stripped. */
	expect_stripped("/x", "/", false, "/x");
}

static void test_cgroup__mode(void **state)
{
	char *dir = tree_new("cgroup");

	(void)state;
	assert_int_equal(cgroup_mode__detect(FIXTURES "/cgv1"), CGROUP_MODE_V1);
	assert_int_equal(cgroup_mode__detect(FIXTURES "/cgv2"), CGROUP_MODE_V2);
	assert_int_equal(cgroup_mode__detect(FIXTURES "/nofreq"), CGROUP_MODE_UNKNOWN);
	assert_int_equal(cgroup_mode__detect("/nonexistent/khbpf"), CGROUP_MODE_UNKNOWN);
	tree_put(dir, "proc/self/mountinfo",
		 "garbage line\n"
		 "31 30 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
		 "41 30 0:38 / /sys/fs/cgroup/unified rw shared:9 - cgroup2 cgroup2 rw\n");
	assert_int_equal(cgroup_mode__detect(dir), CGROUP_MODE_HYBRID);
	tree_free(dir);

	assert_string_equal(cgroup_mode__name(CGROUP_MODE_UNKNOWN), "unknown");
	assert_string_equal(cgroup_mode__name(CGROUP_MODE_V1), "v1");
	assert_string_equal(cgroup_mode__name(CGROUP_MODE_V2), "v2");
	assert_string_equal(cgroup_mode__name(CGROUP_MODE_HYBRID), "hybrid");
	assert_string_equal(cgroup_mode__name((enum cgroup_mode)9), "unknown");
}

static void test_cgroup__v1_quota(void **state)
{
	(void)state;
	/* 150000/100000; the "cpuset" line listed first must not be taken for "cpu". */
	assert_quota(FIXTURES "/cgv1", 4242, 1500, "/app/web");
}

static void test_cgroup__v1_parent_limits_child(void **state)
{
	(void)state;
	/* job 150000/100000 below capped 50000/100000. */
	assert_quota(FIXTURES "/cgv1", 4343, 500, "/capped/job");
	/* inner 250000/100000 (2500) below periods 100000/50000 (2000): ratios, not quotas. */
	assert_quota(FIXTURES "/cgv1", 4444, 2000, "/periods/inner");
}

static void test_cgroup__v1_unbounded(void **state)
{
	(void)state;
	assert_quota_gap(FIXTURES "/cgv1", 4545, 0, EV_GAP_UNAVAILABLE);
}

static void test_cgroup__v2_unbounded(void **state)
{
	struct sev_u64 v;
	char cg[64];

	(void)state;
	assert_int_equal(cgroup__cpu_quota(FIXTURES "/cgv2", 4242, &v, cg, sizeof(cg)), 0);
	assert_false(v.ev.recorded);
	assert_int_equal(v.ev.reason, EV_GAP_UNAVAILABLE);
	assert_string_equal(cg, "/system.slice/app.service");
	/* The root cgroup has no cpu.max; the controller exists, so unbounded. */
	assert_quota_gap(FIXTURES "/cgv2", 4444, 0, EV_GAP_UNAVAILABLE);
	/* Too small a label buffer gives "", never a truncated path. */
	assert_int_equal(cgroup__cpu_quota(FIXTURES "/cgv2", 4242, &v, cg, 8), 0);
	assert_string_equal(cg, "");
}

static void test_cgroup__v2_limits(void **state)
{
	(void)state;
	/* worker.scope is "max"; its parent's 200000/100000 applies. */
	assert_quota(FIXTURES "/cgv2", 4343, 2000, "/limited.slice/worker.scope");
	/* tight's 25000/50000 is below its ancestors'. */
	assert_quota(FIXTURES "/cgv2", 4545, 500, "/limited.slice/worker.scope/tight");
}

static void test_cgroup__unsupported(void **state)
{
	char *dir = tree_new("cgroup");

	(void)state;
	/* No cgroup mounts at all. */
	assert_quota_gap(FIXTURES "/nofreq", 4242, -EOPNOTSUPP, EV_GAP_UNSUPPORTED);
	/* cgroup2 without the cpu controller. */
	tree_put(dir, "proc/self/mountinfo", V2_MOUNT);
	tree_put(dir, "proc/7/cgroup", "0::/a\n");
	tree_put(dir, "sys/fs/cgroup/cgroup.controllers", "cpuset io memory pids\n");
	tree_put(dir, "sys/fs/cgroup/a", NULL);
	assert_quota_gap(dir, 7, -EOPNOTSUPP, EV_GAP_UNSUPPORTED);
	/* v1 cpu hierarchy without CFS bandwidth files. */
	tree_put(dir, "proc/8/cgroup", "3:cpu,cpuacct:/\n0::/\n");
	tree_put(dir, "proc/self/mountinfo",
		 V2_MOUNT "34 30 0:30 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpuacct,cpu\n");
	tree_put(dir, "sys/fs/cgroup/cpu", NULL);
	assert_quota_gap(dir, 8, -EOPNOTSUPP, EV_GAP_UNSUPPORTED);
	/* /proc/PID exists but has no cgroup file: no cgroups in this kernel. */
	tree_put(dir, "proc/9/stat", "9 (x) S\n");
	assert_quota_gap(dir, 9, -EOPNOTSUPP, EV_GAP_UNSUPPORTED);
	tree_free(dir);
}

static void test_cgroup__missing_pid(void **state)
{
	(void)state;
	assert_quota_gap(FIXTURES "/cgv1", 9999, -ESRCH, EV_GAP_UNAVAILABLE);
	assert_quota_gap(FIXTURES "/cgv2", 0, -EINVAL, EV_GAP_UNAVAILABLE);
	assert_int_equal(cgroup__cpu_quota(FIXTURES "/cgv2", 4242, NULL, NULL, 0), -EINVAL);
}

/*
 * A container-style mount whose root is a sub-tree, with octal-escaped
 * spaces, next to a full mount of the same hierarchy elsewhere: the deepest
 * root is used, and its cgroup is found below the mount point.
 */
static void test_cgroup__mount_root_and_escapes(void **state)
{
	char *dir = tree_new("cgroup");

	(void)state;
	tree_put(dir, "proc/self/mountinfo",
		 "51 22 0:23 /kube\\040pods/pod1 /sys/fs/cgroup\\040v2 rw shared:5 master:1 - "
		 "cgroup2 cgroup2 rw\n"
		 "50 22 0:23 / /mnt/full rw - cgroup2 cgroup2 rw\n");
	tree_put(dir, "proc/77/cgroup", "0::/kube pods/pod1/ctr\n");
	tree_put(dir, "proc/78/cgroup", "0::/kube pods/pod1\n");
	tree_put(dir, "proc/79/cgroup", "0::/kube pods/pod10/ctr\n");
	tree_put(dir, "sys/fs/cgroup v2/cpu.max", "100000 100000\n");
	tree_put(dir, "sys/fs/cgroup v2/ctr/cpu.max", "150000 100000\n");
	tree_put(dir, "mnt/full/cgroup.controllers", "cpu\n");
	tree_put(dir, "mnt/full/kube pods/pod10/ctr/cpu.max", "300000 100000\n");
	/* A decoy where "pod10" would land if it were taken to be below "pod1". */
	tree_put(dir, "sys/fs/cgroup v20/ctr/cpu.max", "700000 100000\n");
	assert_quota(dir, 77, 1000, "/kube pods/pod1/ctr");
	assert_quota(dir, 78, 1000, "/kube pods/pod1");
	/* "pod10" is not below "pod1": only the full mount holds it. */
	assert_quota(dir, 79, 3000, "/kube pods/pod10/ctr");
	/* The deepest root wins whatever the mount order. */
	tree_put(dir, "proc/self/mountinfo",
		 "50 22 0:23 / /mnt/full rw - cgroup2 cgroup2 rw\n"
		 "51 22 0:23 /kube\\040pods/pod1 /sys/fs/cgroup\\040v2 rw - cgroup2 cgroup2 rw\n");
	assert_quota(dir, 77, 1000, "/kube pods/pod1/ctr");

	/* Only a sub-tree mount that does not contain the cgroup: unreachable. */
	tree_put(dir, "proc/self/mountinfo",
		 "51 22 0:23 /kube\\040pods/pod1 /sys/fs/cgroup\\040v2 rw - cgroup2 cgroup2 rw\n");
	assert_quota_gap(dir, 79, -ENOENT, EV_GAP_UNAVAILABLE);
	tree_free(dir);
}

static void test_cgroup__malformed(void **state)
{
	static const char *const bad_v2[] = { "abc 100000\n",  "100000 0\n",
					      "100000\n",      "max\n",
					      "max  100000\n", "-1 100000\n",
					      "10 100000 x\n", "" };
	char *dir = tree_new("cgroup");
	size_t i;

	(void)state;
	tree_put(dir, "proc/self/mountinfo",
		 V2_MOUNT "34 30 0:30 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n");
	tree_put(dir, "proc/7/cgroup", "0::/a\n");
	tree_put(dir, "sys/fs/cgroup/cgroup.controllers", "cpu\n");
	for (i = 0; i < sizeof(bad_v2) / sizeof(bad_v2[0]); i++) {
		tree_put(dir, "sys/fs/cgroup/a/cpu.max", bad_v2[i]);
		assert_quota_gap(dir, 7, -EINVAL, EV_GAP_UNAVAILABLE);
	}
	/* cpu.max that cannot be read (a directory): unavailable. */
	tree_put(dir, "proc/8/cgroup", "0::/b\n");
	tree_put(dir, "sys/fs/cgroup/b/cpu.max", NULL);
	assert_quota_gap(dir, 8, -EISDIR, EV_GAP_UNAVAILABLE);
	/* The cgroup's directory is missing. */
	tree_put(dir, "proc/9/cgroup", "0::/gone\n");
	assert_quota_gap(dir, 9, -ENOENT, EV_GAP_UNAVAILABLE);

	/* v1: a negative quota other than -1, and a quota without a period. */
	tree_put(dir, "proc/10/cgroup", "2:cpu:/c\n0::/\n");
	tree_put(dir, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n");
	tree_put(dir, "sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
	tree_put(dir, "sys/fs/cgroup/cpu/c/cpu.cfs_quota_us", "-5\n");
	tree_put(dir, "sys/fs/cgroup/cpu/c/cpu.cfs_period_us", "100000\n");
	assert_quota_gap(dir, 10, -EINVAL, EV_GAP_UNAVAILABLE);
	tree_put(dir, "sys/fs/cgroup/cpu/c/cpu.cfs_quota_us", "50000\n");
	tree_put(dir, "sys/fs/cgroup/cpu/c/cpu.cfs_period_us", "0\n");
	assert_quota_gap(dir, 10, -EINVAL, EV_GAP_UNAVAILABLE);
	tree_put(dir, "sys/fs/cgroup/cpu/c/cpu.cfs_period_us", "100000\n");
	assert_quota(dir, 10, 500, "/c");

	/* v1 lists cpu, but no v1 cpu mount exists: unavailable, not unsupported. */
	tree_put(dir, "proc/self/mountinfo", V2_MOUNT);
	assert_quota_gap(dir, 10, -ENOENT, EV_GAP_UNAVAILABLE);

	/* Garbage /proc/PID/cgroup lines are ignored; nothing usable is unsupported. */
	tree_put(dir, "proc/11/cgroup", "junk\n1:cpu\n2:cpu:relative\n");
	assert_quota_gap(dir, 11, -EOPNOTSUPP, EV_GAP_UNSUPPORTED);
	tree_free(dir);
}

/* Root ignores permission bits, so refusal is checked in a child that drops root. */
static void test_cgroup__permission_denied(void **state)
{
	char path[PATH_MAX], *dir = tree_new("cgroup");
	int status;
	pid_t pid;

	(void)state;
	tree_put(dir, "proc/self/mountinfo", V2_MOUNT);
	tree_put(dir, "proc/7/cgroup", "0::/a\n");
	tree_put(dir, "sys/fs/cgroup/cgroup.controllers", "cpu\n");
	tree_put(dir, "sys/fs/cgroup/a/cpu.max", "100000 100000\n");
	snprintf(path, sizeof(path), "%s/sys/fs/cgroup/a/cpu.max", dir);
	assert_int_equal(chmod(path, 0), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct sev_u64 v;
		int ret;

		if (geteuid() == 0 && (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
				       setresuid(NOBODY, NOBODY, NOBODY)))
			_exit(77);
		ret = cgroup__cpu_quota(dir, 7, &v, NULL, 0);
		_exit(ret == -EACCES && !v.ev.recorded && v.ev.reason == EV_GAP_PERMISSION_DENIED ?
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

static void test_cgroup__live(void **state)
{
	struct sev_u64 v;
	char cg[PATH_MAX];
	int ret;

	(void)state;
	ret = cgroup__cpu_quota("/", getpid(), &v, cg, sizeof(cg));
	assert_int_equal(v.source, EV_SRC_SYSFS_CGROUP);
	if (v.ev.recorded)
		assert_int_equal(ret, 0);
	/* Success without a value can only mean "no limit at any level". */
	if (ret == 0) {
		assert_true(v.ev.recorded || v.ev.reason == EV_GAP_UNAVAILABLE);
		assert_int_equal(cg[0], '/');
	}
	assert_int_not_equal(cgroup_mode__detect("/"), CGROUP_MODE_UNKNOWN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cgroup__mode),
		cmocka_unit_test(test_cgroup__v2_names),
		cmocka_unit_test(test_cgroup__normalize_path),
		cmocka_unit_test(test_cgroup__strip_mount),
		cmocka_unit_test(test_cgroup__v1_quota),
		cmocka_unit_test(test_cgroup__v1_parent_limits_child),
		cmocka_unit_test(test_cgroup__v1_unbounded),
		cmocka_unit_test(test_cgroup__v2_unbounded),
		cmocka_unit_test(test_cgroup__v2_limits),
		cmocka_unit_test(test_cgroup__unsupported),
		cmocka_unit_test(test_cgroup__missing_pid),
		cmocka_unit_test(test_cgroup__mount_root_and_escapes),
		cmocka_unit_test(test_cgroup__malformed),
		cmocka_unit_test(test_cgroup__permission_denied),
		cmocka_unit_test(test_cgroup__live),
	};

	return cmocka_run_group_tests_name("cgroup", tests, NULL, NULL);
}

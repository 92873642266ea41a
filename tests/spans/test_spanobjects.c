// SPDX-License-Identifier: MIT
/*
 * spanobjects: the objects a process maps (this test's own, and a fixture
 * maps file) and those ld.so maps for a command.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "spans/spanfind.h"
#include "spans/spanobjects.h"
#include "testutil.h"

static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (strstr(info->dlpi_name, "/libc.so.6")) {
		assert_non_null(realpath(info->dlpi_name, data));
		return 1;
	}
	return 0;
}

static void test_spanobjects__mapped_objects_self(void **state)
{
	char exe[PATH_MAX], libc[PATH_MAX] = "", **objs = NULL;
	bool has_libc = false;
	size_t n = 0, i, j;

	(void)state;
	assert_non_null(realpath("/proc/self/exe", exe));
	assert_int_equal(dl_iterate_phdr(find_libc, libc), 1);
	assert_int_equal(spanfind__mapped_objects("/", getpid(), &objs, &n), 0);
	assert_true(n >= 3); /* us, libc, ld.so */
	/* A PIE program is mapped below its libraries. */
	assert_string_equal(objs[0], exe);
	for (i = 0; i < n; i++) {
		assert_true(objs[i][0] == '/');
		has_libc |= !strcmp(objs[i], libc);
		for (j = 0; j < i; j++)
			assert_string_not_equal(objs[i], objs[j]);
	}
	assert_true(has_libc);
	spanfind__free_objects(objs, n);
}

static void test_spanobjects__mapped_objects_fixture(void **state)
{
	const char *want[] = {
		"/usr/bin/app",
		"/usr/lib/with space/libx.so",
		"/usr/lib/libgone.so (deleted)",
		"/memfd:jit (deleted)",
	};
	char *root = tree_new("spanfind-maps"), **objs = (char **)1;
	size_t n = 99, i;

	(void)state;
	tree_put(
		root, "proc/77/maps",
		"55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234                       /usr/bin/app\n"
		"55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 1234                       /usr/bin/app\n"
		"7f0000000000-7f0000001000 r-xp 00000000 08:01 99                         /usr/lib/with space/libx.so\n"
		"7f0000001000-7f0000002000 r--p 00000000 08:01 100                        /usr/lib/data-only.so\n"
		"7f0000002000-7f0000003000 r-xp 00000000 00:00 0 \n"
		"7f0000003000-7f0000004000 r-xp 00000000 08:01 101                        /usr/lib/libgone.so (deleted)\n"
		"7f0000004000-7f0000005000 r-xp 00002000 08:01 1234                       /usr/bin/app\n"
		"7f0000005000-7f0000006000 r-xp 00000000 00:05 55                         /memfd:jit (deleted)\n"
		"7f0000006000-7f0000007000 r-xp 00000000 00:00 0                          /no-inode\n"
		"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n");
	assert_int_equal(spanfind__mapped_objects(root, 77, &objs, &n), 0);
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < n; i++)
		assert_string_equal(objs[i], want[i]);
	spanfind__free_objects(objs, n);

	tree_put(root, "proc/78/maps", "garbage\n");
	assert_int_equal(spanfind__mapped_objects(root, 78, &objs, &n), -EINVAL);
	assert_null(objs);
	assert_int_equal(n, 0);
	tree_put(root, "proc/80/maps", "");
	assert_int_equal(spanfind__mapped_objects(root, 80, &objs, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(spanfind__mapped_objects(root, 79, &objs, &n), -ESRCH);
	assert_int_equal(spanfind__mapped_objects(root, 0, &objs, &n), -EINVAL);
	tree_free(root);
}

static void test_spanobjects__needed_objects(void **state)
{
	char exe[PATH_MAX], libc[PATH_MAX] = "", reason[256] = "", **objs = NULL, *root;
	bool has_libc = false;
	size_t n = 0, i;

	(void)state;
	assert_non_null(realpath("/proc/self/exe", exe));
	assert_int_equal(dl_iterate_phdr(find_libc, libc), 1);
	assert_int_equal(spanfind__needed_objects(exe, &objs, &n, reason, sizeof(reason)), 0);
	assert_true(n >= 2);
	assert_string_equal(objs[0], exe);
	for (i = 0; i < n; i++) {
		char real[PATH_MAX];

		assert_true(objs[i][0] == '/');
		has_libc |= realpath(objs[i], real) && !strcmp(real, libc);
	}
	assert_true(has_libc);
	spanfind__free_objects(objs, n);

	/* A script: ld.so maps nothing for it. */
	root = tree_new("spanobjects");
	tree_put(root, "run.sh", "#!/bin/sh\nexit 0\n");
	snprintf(exe, sizeof(exe), "%s/run.sh", root);
	assert_int_equal(spanfind__needed_objects(exe, &objs, &n, reason, sizeof(reason)), 0);
	assert_int_equal(n, 1);
	assert_string_equal(objs[0], exe);
	spanfind__free_objects(objs, n);
	tree_free(root);

	assert_int_equal(spanfind__needed_objects("run.sh", &objs, &n, reason, sizeof(reason)),
			 -EINVAL);
	assert_null(objs);
	assert_int_equal(n, 0);
}

static void test_spanobjects__open_path(void **state)
{
	char out[PATH_MAX], want[PATH_MAX];

	(void)state;
	assert_int_equal(spanobjects__open_path(out, "/", 0, "/usr/lib/x.so"), 0);
	assert_string_equal(out, "/usr/lib/x.so");
	assert_int_equal(spanobjects__open_path(out, "/", getpid(), "/proc/self/exe"), 0);
	snprintf(want, sizeof(want), "/proc/%d/root/proc/self/exe", (int)getpid());
	assert_string_equal(out, want);
	/* Neither there nor mapped: the path through the root is kept. */
	assert_int_equal(spanobjects__open_path(out, "/", getpid(), "/no/such.so"), 0);
	snprintf(want, sizeof(want), "/proc/%d/root/no/such.so", (int)getpid());
	assert_string_equal(out, want);
}

/* A mapped file with no path (a memfd) is opened through its map_files link. */
static void test_spanobjects__open_path_map_files(void **state)
{
	char out[PATH_MAX], want[PATH_MAX], **objs = NULL;
	size_t n = 0, i;
	bool found = false;
	void *p;
	int fd;

	(void)state;
	fd = memfd_create("spanobjects-jit", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	require_or_skip(p != MAP_FAILED, "no executable memfd mapping here");
	assert_int_equal(spanfind__mapped_objects("/", getpid(), &objs, &n), 0);
	for (i = 0; i < n; i++)
		found |= !strcmp(objs[i], "/memfd:spanobjects-jit (deleted)");
	assert_true(found);
	spanfind__free_objects(objs, n);
	assert_int_equal(
		spanobjects__open_path(out, "/", getpid(), "/memfd:spanobjects-jit (deleted)"), 0);
	snprintf(want, sizeof(want), "/proc/%d/map_files/%lx-%lx", (int)getpid(), (unsigned long)p,
		 (unsigned long)p + 4096);
	assert_string_equal(out, want);
	munmap(p, 4096);
	close(fd);
}

/* ldconfig -p lines: this machine's entries, others and non-entries refused. */
static void test_spanobjects__ldconfig_line(void **state)
{
	char name[PATH_MAX], path[PATH_MAX];

	(void)state;
	assert_int_equal(spanobjects__ldconfig_line("\tlibpq.so.5 (libc6,x86-64) => "
						    "/lib/x86_64-linux-gnu/libpq.so.5\n",
						    name, path),
			 0);
	assert_string_equal(name, "libpq.so.5");
	assert_string_equal(path, "/lib/x86_64-linux-gnu/libpq.so.5");
	assert_int_equal(
		spanobjects__ldconfig_line(
			"\tlibz.so.1 (libc6,x86-64, OS ABI: Linux 3.2.0) => /usr/lib/libz.so.1",
			name, path),
		0);
	assert_string_equal(path, "/usr/lib/libz.so.1");
	assert_int_equal(spanobjects__ldconfig_line("\tlibstdc++.so.6 (libc6) => "
						    "/lib32/libstdc++.so.6\n",
						    name, path),
			 -EINVAL);
	assert_int_equal(spanobjects__ldconfig_line("719 libs found in cache `/etc/ld.so.cache'\n",
						    name, path),
			 -EINVAL);
	assert_int_equal(
		spanobjects__ldconfig_line("\tlibx.so (libc6,x86-64) => relative\n", name, path),
		-EINVAL);
}

/* The host's libc by its soname and by a prefix; a name the cache lacks, with its reason. */
static void test_spanobjects__host_library(void **state)
{
	char path[PATH_MAX], reason[256] = "", real[PATH_MAX], want[PATH_MAX];

	(void)state;
	assert_int_equal(spanobjects__host_library("libc.so.6", path, reason, sizeof(reason)), 0);
	assert_non_null(realpath(path, real));
	assert_non_null(realpath("/lib/x86_64-linux-gnu/libc.so.6", want));
	assert_string_equal(real, want);
	assert_int_equal(spanobjects__host_library("libc.so", path, reason, sizeof(reason)), 0);
	assert_int_equal(spanobjects__host_library("libkhbpf-none", path, reason, sizeof(reason)),
			 -ENOENT);
	assert_non_null(strstr(reason, "libkhbpf-none"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spanobjects__mapped_objects_self),
		cmocka_unit_test(test_spanobjects__mapped_objects_fixture),
		cmocka_unit_test(test_spanobjects__needed_objects),
		cmocka_unit_test(test_spanobjects__open_path),
		cmocka_unit_test(test_spanobjects__open_path_map_files),
		cmocka_unit_test(test_spanobjects__ldconfig_line),
		cmocka_unit_test(test_spanobjects__host_library),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

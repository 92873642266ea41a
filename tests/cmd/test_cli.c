// SPDX-License-Identifier: MIT
/* The shared option parsers of user/cmd/cli.c. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cmd/cli.h"
#include "host/cgroup.h"

static void test_cli__parse_bytes(void **state)
{
	static const char *const bad[] = { "",
					   "K",
					   "-1",
					   " 1",
					   "1 ",
					   "1KB",
					   "1Ki",
					   "0x10",
					   "1.5M",
					   "1T",
					   "18446744073709551616",
					   "17179869184G" };
	uint64_t v;
	size_t i;

	(void)state;
	assert_int_equal(cli__parse_bytes("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(cli__parse_bytes("65536", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(cli__parse_bytes("64K", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(cli__parse_bytes("1m", &v), 0);
	assert_int_equal(v, 1u << 20);
	assert_int_equal(cli__parse_bytes("4M", &v), 0);
	assert_int_equal(v, 4u << 20);
	assert_int_equal(cli__parse_bytes("1G", &v), 0);
	assert_int_equal(v, 1u << 30);
	assert_int_equal(cli__parse_bytes("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		assert_true(cli__parse_bytes(bad[i], &v) < 0);
		assert_int_equal(v, 7);
	}
}

/* --cgroup: the one spelling of the cgroup, or a usage error. */
static void test_cli__cgroup_option(void **state)
{
	static char buf[CLI_CGROUP_PATH_MAX];
	static char longer[CLI_CGROUP_PATH_MAX + 2];

	(void)state;
	assert_int_equal(cli__cgroup_option("attach", "/relt/.", buf), 0);
	assert_string_equal(buf, "/relt");
	assert_int_equal(cli__cgroup_option("attach", "/relt/./", buf), 0);
	assert_string_equal(buf, "/relt");
	assert_int_equal(cli__cgroup_option("serve", "//system.slice//x.service/", buf), 0);
	assert_string_equal(buf, "/system.slice/x.service");
	assert_int_equal(cli__cgroup_option("serve", "/.", buf), 0);
	assert_string_equal(buf, "/");
	assert_int_equal(cli__cgroup_option("attach", "/..", buf), CLI_EXIT_USAGE);
	assert_int_equal(cli__cgroup_option("attach", "relt", buf), CLI_EXIT_USAGE);
	memset(longer, 'a', sizeof(longer) - 1);
	longer[0] = '/';
	assert_int_equal(cli__cgroup_option("attach", longer, buf), CLI_EXIT_USAGE);
}

/*
 * --cgroup as a directory's full path under this host's cgroup v2 mount:
 * the path from its root. Read from the host, nothing made: the mount
 * itself, a cgroup under it, and one that is not there (left as given,
 * for the session to refuse).
 */
static void test_cli__cgroup_full_paths(void **state)
{
	static char bufs[4][CLI_CGROUP_PATH_MAX];
	char mount[512], child[NAME_MAX + 1] = "";
	struct dirent *d;
	DIR *dir;

	(void)state;
	/* A host without cgroup v2 (a v1-only guest) has no such path to give. */
	if (cgroup__v2_mount("/", mount, sizeof(mount))) {
		fprintf(stderr, "SKIP %s: no cgroup v2 mount\n", __func__);
		skip();
	}
	dir = opendir(mount);
	assert_non_null(dir);
	while ((d = readdir(dir)) && !child[0])
		if (d->d_type == DT_DIR && d->d_name[0] != '.')
			snprintf(child, sizeof(child), "%s", d->d_name);
	closedir(dir);
	snprintf(bufs[0], sizeof(bufs[0]), "%s", mount);
	snprintf(bufs[1], sizeof(bufs[1]), "%s/khbpf-no-such-cgroup", mount);
	snprintf(bufs[2], sizeof(bufs[2]), "/");
	snprintf(bufs[3], sizeof(bufs[3]), "%s/%s", mount, child);
	cli__cgroup_full_paths(bufs, child[0] ? 4 : 3);
	assert_string_equal(bufs[0], "/");
	assert_string_equal(bufs[1] + strlen(mount), "/khbpf-no-such-cgroup");
	assert_string_equal(bufs[2], "/");
	if (child[0]) {
		assert_int_equal(bufs[3][0], '/');
		assert_string_equal(bufs[3] + 1, child);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cli__parse_bytes),
		cmocka_unit_test(test_cli__cgroup_option),
		cmocka_unit_test(test_cli__cgroup_full_paths),
	};

	return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}

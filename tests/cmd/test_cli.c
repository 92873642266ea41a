// SPDX-License-Identifier: MIT
/* The shared option parsers of user/cmd/cli.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cmd/cli.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cli__parse_bytes),
		cmocka_unit_test(test_cli__cgroup_option),
	};

	return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}

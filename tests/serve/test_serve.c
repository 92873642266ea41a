// SPDX-License-Identifier: MIT
/*
 * serve: what serve__run refuses before it loads anything, each with one
 * line saying what to do. Serving itself is tested end to end
 * (tests/integration/serve_*.sh).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "serve/serve.h"
#include "testutil.h"

static void expect_refused(const struct serve_opts *o, int want, const char *msg)
{
	char err[512] = "";

	assert_int_equal(serve__run(o, err, sizeof(err)), want);
	if (!strstr(err, msg))
		fail_msg("expected '%s' in '%s'", msg, err);
	assert_null(strchr(err, '\n'));
}

static void test_serve__refuses_bad_options(void **state)
{
	const char *cgroups[KHBPF_MAX_CGROUP_FILTERS + 1] = { 0 };
	char *root = tree_new("serve"), link[PATH_MAX];
	struct serve_opts o = { .sz = sizeof(o), .root = root };
	size_t i;

	(void)state;
	for (i = 0; i <= KHBPF_MAX_CGROUP_FILTERS; i++)
		cgroups[i] = "/system.slice";
	o.cgroups = cgroups;
	o.nr_cgroups = KHBPF_MAX_CGROUP_FILTERS + 1;
	expect_refused(&o, -E2BIG, "at most 16 --cgroup options");

	/* A root without cgroup v2 (no mountinfo at all). */
	o.nr_cgroups = 1;
	expect_refused(&o, -ENOENT, "--cgroup needs cgroup v2");
	o.nr_cgroups = 0;
	expect_refused(&o, -ENOENT, "--by cgroup needs cgroup v2 mounted");

	/* --ndjson never follows a symbolic link, nor writes into a directory or a FIFO. */
	o.group_by = KHBPF_GROUP_PROCESS;
	snprintf(link, sizeof(link), "%s/out.ndjson", root);
	assert_int_equal(symlink("/dev/null", link), 0);
	o.ndjson = link;
	expect_refused(&o, -ELOOP, "is a symbolic link (not followed)");
	tree_put(root, "dir", NULL);
	snprintf(link, sizeof(link), "%s/dir", root);
	expect_refused(&o, -EISDIR, "Is a directory; give a writable file or '-'");
	snprintf(link, sizeof(link), "%s/fifo", root);
	assert_int_equal(mkfifo(link, 0600), 0);
	expect_refused(&o, -EEXIST, "exists and is not a regular file");
	tree_free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serve__refuses_bad_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * serve_groups: rows merged by labels, and the rows of a real collector
 * summing this process's switches in the kernel.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "collect/sched_collector.h"
#include "serve/serve_groups.h"
#include "testutil.h"

static void set_row(struct serve_row *r, const char *cgroup, const char *comm, const char *pid,
		    uint64_t switches)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->cgroup, sizeof(r->cgroup), "%s", cgroup);
	snprintf(r->comm, sizeof(r->comm), "%s", comm);
	snprintf(r->pid, sizeof(r->pid), "%s", pid);
	r->acc.switch_outs = switches;
	r->acc.k.nvcsw = switches * 2;
	r->acc.b.mig_class[1] = 1;
}

/* Equal labels are summed, every counter; the rest stay apart, sorted. */
static void test_serve_groups__merge(void **state)
{
	struct serve_row r[6];

	(void)state;
	set_row(&r[0], "", "web", "", 1);
	set_row(&r[1], "", "db", "", 10);
	set_row(&r[2], "", "web", "42", 100);
	set_row(&r[3], "", "web", "", 1000);
	set_row(&r[4], "", "(overflow)", "", 5);
	set_row(&r[5], "", "db", "", 20);
	assert_int_equal(serve_rows__merge(r, 6), 4);
	assert_string_equal(r[0].comm, "(overflow)");
	assert_string_equal(r[1].comm, "db");
	assert_int_equal(r[1].acc.switch_outs, 30);
	assert_int_equal(r[1].acc.k.nvcsw, 60);
	assert_int_equal(r[1].acc.b.mig_class[1], 2);
	assert_string_equal(r[2].comm, "web");
	assert_string_equal(r[2].pid, "");
	assert_int_equal(r[2].acc.switch_outs, 1001);
	assert_string_equal(r[3].pid, "42");
	assert_int_equal(r[3].acc.switch_outs, 100);
	assert_int_equal(serve_rows__merge(r, 0), 0);
	assert_int_equal(serve_rows__merge(r, 1), 1);
}

/* This process, grouped by process in the kernel: its sleeps are its row's switches. */
static void test_serve_groups__process_rows(void **state)
{
	struct sched_collector_opts co = { .sz = sizeof(co), .group_by = KHBPF_GROUP_PROCESS };
	struct serve_groups_opts go = { .sz = sizeof(go), .group_by = KHBPF_GROUP_PROCESS };
	struct timespec ts = { 0, 1000000 };
	struct sched_collector *c = NULL;
	struct serve_groups_stats st;
	struct serve_groups *g = NULL;
	struct serve_row *rows = NULL;
	const struct serve_row *mine = NULL;
	char comm[17] = "";
	size_t nr = 0, i;
	int err;

	(void)state;
	assert_int_equal(prctl(PR_GET_NAME, comm), 0);
	err = sched_collector__open(&c, &co);
	require_or_skip(!err, "cannot load the scheduler collector (needs root and BTF)");
	assert_int_equal(sched_collector__add_target(c, getpid()), 0);
	assert_int_equal(sched_collector__attach(c), 0);
	for (i = 0; i < 20; i++)
		nanosleep(&ts, NULL);

	assert_int_equal(serve_groups__new(&g, c, NULL), -EINVAL);
	assert_null(g);
	assert_int_equal(serve_groups__new(&g, c, &go), 0);
	assert_int_equal(serve_groups__sweep(g), 0);
	serve_groups__stats(g, &st);
	assert_int_equal(st.nr_groups, 1);
	assert_int_equal(st.max_groups, KHBPF_DEFAULT_MAX_GROUPS);
	assert_int_equal(st.aged_out + st.evicted, 0);
	assert_int_equal(serve_groups__rows(g, &rows, &nr), 0);
	for (i = 0; i < nr; i++)
		if (!strcmp(rows[i].comm, comm))
			mine = &rows[i];
	assert_non_null(mine);
	assert_string_equal(mine->pid, "");
	assert_string_equal(mine->cgroup, "");
	assert_true(mine->acc.k.nvcsw >= 20);
	assert_true(mine->acc.switch_outs >= 20);
	free(rows);
	serve_groups__free(g);
	sched_collector__destroy(c);
}

static const struct serve_row *row_named(const struct serve_row *rows, size_t nr, const char *comm)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (!strcmp(rows[i].comm, comm))
			return &rows[i];
	return NULL;
}

/*
 * A renamed process (prctl here; exec does the same to the leader's comm)
 * goes on in a new row under its new name; the old row keeps what it had.
 */
static void test_serve_groups__rename_starts_a_row(void **state)
{
	struct sched_collector_opts co = { .sz = sizeof(co), .group_by = KHBPF_GROUP_PROCESS };
	struct serve_groups_opts go = { .sz = sizeof(go), .group_by = KHBPF_GROUP_PROCESS };
	struct timespec ts = { 0, 1000000 };
	struct sched_collector *c = NULL;
	struct serve_groups *g = NULL;
	struct serve_row *rows = NULL;
	const struct serve_row *old, *now;
	char comm[17] = "";
	uint64_t old_nvcsw;
	size_t nr = 0, i;
	int err;

	(void)state;
	assert_int_equal(prctl(PR_GET_NAME, comm), 0);
	err = sched_collector__open(&c, &co);
	require_or_skip(!err, "cannot load the scheduler collector (needs root and BTF)");
	assert_int_equal(sched_collector__add_target(c, getpid()), 0);
	assert_int_equal(sched_collector__attach(c), 0);
	assert_int_equal(serve_groups__new(&g, c, &go), 0);
	for (i = 0; i < 20; i++)
		nanosleep(&ts, NULL);
	assert_int_equal(prctl(PR_SET_NAME, "khbpf-renamed"), 0);
	for (i = 0; i < 10; i++)
		nanosleep(&ts, NULL);
	assert_int_equal(serve_groups__sweep(g), 0);
	assert_int_equal(serve_groups__rows(g, &rows, &nr), 0);
	old = row_named(rows, nr, comm);
	now = row_named(rows, nr, "khbpf-renamed");
	assert_non_null(old);
	assert_non_null(now);
	assert_true(old->acc.k.nvcsw >= 20);
	assert_true(now->acc.k.nvcsw >= 10);
	old_nvcsw = old->acc.k.nvcsw;
	free(rows);
	rows = NULL;

	/* Only the new name's row grows now. */
	for (i = 0; i < 10; i++)
		nanosleep(&ts, NULL);
	assert_int_equal(serve_groups__sweep(g), 0);
	assert_int_equal(serve_groups__rows(g, &rows, &nr), 0);
	old = row_named(rows, nr, comm);
	now = row_named(rows, nr, "khbpf-renamed");
	assert_non_null(old);
	assert_non_null(now);
	assert_int_equal(old->acc.k.nvcsw, old_nvcsw);
	assert_true(now->acc.k.nvcsw >= 20);
	assert_int_equal(prctl(PR_SET_NAME, comm), 0);
	free(rows);
	serve_groups__free(g);
	sched_collector__destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serve_groups__merge),
		cmocka_unit_test(test_serve_groups__process_rows),
		cmocka_unit_test(test_serve_groups__rename_starts_a_row),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

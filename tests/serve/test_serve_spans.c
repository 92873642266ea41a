// SPDX-License-Identifier: MIT
/*
 * serve_spans: rows merged by labels; and a real collector in serve's mode
 * (grouped by process), its span site on a function of this test: every
 * call is in this process's series, the window's aggregates are what was
 * added since the last window, and a series idle past --max-age is retired
 * into its comm's, which keeps its calls (and, made again, counts from 0).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <cmocka.h>

#include "khbpf/span.h"
#include "collect/sched_collector.h"
#include "serve/serve_groups.h"
#include "serve/serve_spans.h"
#include "serve/serve_sweep.h"
#include "spans/spanrun.h"
#include "testutil.h"

static void set_row(struct span_row *r, const char *comm, const char *metric, const char *key,
		    uint64_t calls)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->comm, sizeof(r->comm), "%s", comm);
	snprintf(r->metric, sizeof(r->metric), "%s", metric);
	snprintf(r->key, sizeof(r->key), "%s", key);
	r->agg.calls = calls;
	r->agg.inclusive_ns = calls * 10;
	r->agg.hist[3] = calls;
	r->agg.ledger.blocked.ns[1] = calls;
}

/* Equal labels (comm, metric, key) are summed, every field; the rest stay apart. */
static void test_serve_spans__merge(void **state)
{
	struct span_row r[5];

	(void)state;
	set_row(&r[0], "web", "query", "a", 1);
	set_row(&r[1], "web", "query", "b", 10);
	set_row(&r[2], "db", "query", "a", 100);
	set_row(&r[3], "web", "query", "a", 1000);
	set_row(&r[4], "web", "gc", "", 5);
	assert_int_equal(span_rows__merge(r, 5), 4);
	assert_string_equal(r[0].metric, "gc");
	assert_string_equal(r[1].comm, "db");
	assert_string_equal(r[2].comm, "web");
	assert_string_equal(r[2].key, "a");
	assert_int_equal(r[2].agg.calls, 1001);
	assert_int_equal(r[2].agg.inclusive_ns, 10010);
	assert_int_equal(r[2].agg.hist[3], 1001);
	assert_int_equal(r[2].agg.ledger.blocked.ns[1], 1001);
	assert_string_equal(r[3].key, "b");
	assert_int_equal(span_rows__merge(r, 0), 0);
	/* Calls in progress: summed, the oldest age the larger. */
	set_row(&r[0], "web", "query", "", 0);
	set_row(&r[1], "web", "query", "", 0);
	r[0].open = 2;
	r[0].oldest_ns = 500;
	r[1].open = 3;
	r[1].oldest_ns = 9000;
	assert_int_equal(span_rows__merge(r, 2), 1);
	assert_int_equal(r[0].open, 5);
	assert_int_equal(r[0].oldest_ns, 9000);
}

KHBPF_SPAN(serve_spans_probed, "serve-spans-probed")
static int serve_spans_probed(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static const struct span_row *row_of(const struct span_row *rows, size_t nr, const char *comm,
				     const char *metric)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (!strcmp(rows[i].comm, comm) && !strcmp(rows[i].metric, metric))
			return &rows[i];
	return NULL;
}

static int calls(int n)
{
	int i, v = 0;

	for (i = 0; i < n; i++)
		v = serve_spans_probed(v);
	return v;
}

static uint64_t window_calls(struct span_run *r, struct sched_collector *c)
{
	uint64_t n = 0;
	size_t i;

	assert_int_equal(span_run__series_window(r, c), 0);
	for (i = 0; i < r->nr_aggs; i++)
		n += r->aggs[i].agg.calls;
	return n;
}

/* A real collector in serve's mode (by process) with one span site in this test. */
struct serve_fixture {
	char exe[PATH_MAX];
	char comm[17];
	struct span_request req;
	struct span_run r;
	struct sched_collector *c;
	struct serve_groups *g;
};

static void fixture_open(struct serve_fixture *f, const char *symbol)
{
	struct sched_collector_opts co = {
		.sz = sizeof(co),
		.group_by = KHBPF_GROUP_PROCESS,
		.trace_all = true,
		.spans = true,
		.span_per_file = true,
		.span_sites = 1,
	};
	struct serve_groups_opts go = { .sz = sizeof(go), .group_by = KHBPF_GROUP_PROCESS };
	char reason[256] = "";
	struct span_run_opts ro = {
		.sz = sizeof(ro),
		.reqs = &f->req,
		.nr_reqs = 1,
		.no_annotations = true,
		.host = true,
		.reason = reason,
		.reason_size = sizeof(reason),
	};
	ssize_t len;
	int err;

	memset(f, 0, sizeof(*f));
	assert_int_equal(prctl(PR_GET_NAME, f->comm), 0);
	len = readlink("/proc/self/exe", f->exe, sizeof(f->exe) - 1);
	assert_true(len > 0);
	f->exe[len] = '\0';
	f->req = (struct span_request){ .object = f->exe, .symbol = symbol };
	assert_int_equal(span_run__discover(&f->r, &ro), 0);
	assert_int_equal(span_run__usable(&f->r), 1);
	err = sched_collector__open(&f->c, &co);
	if (err)
		span_run__free(&f->r);
	require_or_skip(!err, "cannot load the scheduler collector (needs root and BTF)");
	span_run__attach(&f->r, f->c, -1);
	assert_int_equal(f->r.nr_attached, 1);
	assert_int_equal(sched_collector__attach(f->c), 0);
	assert_int_equal(serve_groups__new(&f->g, f->c, &go), 0);
}

static void fixture_close(struct serve_fixture *f)
{
	serve_groups__free(f->g);
	sched_collector__destroy(f->c);
	span_run__free(&f->r);
}

static void test_serve_spans__process_series(void **state)
{
	struct serve_spans_opts so = {
		.sz = sizeof(so),
		.group_by = KHBPF_GROUP_PROCESS,
		.max_age_ns = 1, /* idle for a nanosecond: retired at the next sweep */
	};
	struct serve_spans *s = NULL;
	struct serve_spans_stats st;
	struct span_row *rows = NULL;
	const struct span_row *mine;
	struct serve_fixture f;
	struct span_run *r = &f.r;
	struct sched_collector *c;
	const char *comm = f.comm;
	size_t nr = 0, i;
	uint64_t hist;

	(void)state;
	fixture_open(&f, "serve_spans_probed");
	c = f.c;
	assert_int_equal(serve_spans__new(&s, c, r, f.g, NULL), -EINVAL);
	assert_int_equal(serve_spans__new(&s, c, r, f.g, &so), 0);

	assert_int_equal(calls(250), 250);
	assert_int_equal(serve_spans__rows(s, &rows, &nr), 0);
	mine = row_of(rows, nr, comm, "serve-spans-probed");
	assert_non_null(mine);
	assert_int_equal(mine->agg.calls, 250);
	assert_false(mine->counted);
	assert_string_equal(mine->key, "");
	free(rows);
	rows = NULL;
	/* Each window: what its calls added. */
	assert_int_equal(window_calls(r, c), 250);
	assert_int_equal(calls(40), 40);
	assert_int_equal(window_calls(r, c), 40);
	assert_int_equal(window_calls(r, c), 0);

	/* Idle past max_age: out of the kernel, its calls kept in the comm's series. */
	assert_int_equal(serve_spans__sweep(s), 0);
	usleep(1000);
	assert_int_equal(serve_spans__sweep(s), 0);
	serve_spans__stats(s, &st);
	assert_int_equal(st.aged_out, 1);
	assert_int_equal(st.nr_series, 0);
	assert_int_equal(calls(10), 10);
	assert_int_equal(serve_spans__rows(s, &rows, &nr), 0);
	mine = row_of(rows, nr, comm, "serve-spans-probed");
	assert_non_null(mine);
	assert_int_equal(mine->agg.calls, 300);
	for (i = 0, hist = 0; i < KHBPF_RQ_SLOTS; i++)
		hist += mine->agg.hist[i];
	assert_int_equal(hist, 300);
	free(rows);
	/* Made again after it left, the series counts from zero in the windows too. */
	assert_int_equal(calls(390), 390);
	assert_int_equal(window_calls(r, c), 400);
	serve_spans__free(s);
	fixture_close(&f);
}

/* Two calls in progress (blocked reading a pipe) and none elsewhere. */
KHBPF_SPAN(serve_spans_held, "serve-spans-held")
static int serve_spans_held(int ready, int release)
{
	char b = 0;

	if (write(ready, "r", 1) != 1 || read(release, &b, 1) != 1)
		return -1;
	return b;
}

struct holder {
	int ready[2], release[2];
	pthread_t t;
};

static void *hold(void *arg)
{
	struct holder *h = arg;

	return (void *)(intptr_t)serve_spans_held(h->ready[1], h->release[0]);
}

/*
 * serve_spans__open: while two threads are inside the probed function, its
 * series has 2 calls in progress, the oldest as old as the first one's
 * wait at least and no older than the threads; once they return, none.
 */
static void test_serve_spans__open_calls(void **state)
{
	struct serve_spans_opts so = { .sz = sizeof(so), .group_by = KHBPF_GROUP_PROCESS };
	struct serve_spans *s = NULL;
	struct span_row *rows = NULL;
	const struct span_row *held;
	struct serve_fixture f;
	const char *comm = f.comm;
	struct holder h[2];
	uint64_t before, after;
	size_t nr = 0, i;
	void *ret;
	char b;

	(void)state;
	fixture_open(&f, "serve_spans_held");
	assert_int_equal(serve_spans__new(&s, f.c, &f.r, f.g, &so), 0);

	before = serve_sweep__now();
	for (i = 0; i < 2; i++) {
		assert_int_equal(pipe(h[i].ready), 0);
		assert_int_equal(pipe(h[i].release), 0);
		assert_int_equal(pthread_create(&h[i].t, NULL, hold, &h[i]), 0);
		assert_int_equal(read(h[i].ready[0], &b, 1), 1); /* inside the call */
	}
	usleep(50 * 1000); /* both calls began before it */
	assert_int_equal(serve_spans__open(s, 0, &rows, &nr), 0);
	after = serve_sweep__now();
	held = row_of(rows, nr, comm, "serve-spans-held");
	assert_non_null(held);
	assert_int_equal(held->open, 2);
	assert_int_equal(held->agg.calls, 0);
	assert_true(held->oldest_ns >= 50 * 1000 * 1000);
	assert_true(held->oldest_ns <= after - before);
	free(rows);
	rows = NULL;

	for (i = 0; i < 2; i++) {
		assert_int_equal(write(h[i].release[1], "x", 1), 1);
		assert_int_equal(pthread_join(h[i].t, &ret), 0);
		assert_int_equal((intptr_t)ret, 'x');
		close(h[i].ready[0]);
		close(h[i].ready[1]);
		close(h[i].release[0]);
		close(h[i].release[1]);
	}
	assert_int_equal(serve_spans__open(s, 0, &rows, &nr), 0);
	assert_null(row_of(rows, nr, comm, "serve-spans-held"));
	free(rows);
	rows = NULL;
	/* ... and both calls are now in its series. */
	assert_int_equal(serve_spans__rows(s, &rows, &nr), 0);
	held = row_of(rows, nr, comm, "serve-spans-held");
	assert_non_null(held);
	assert_int_equal(held->agg.calls, 2);
	assert_int_equal(held->open, 0);
	free(rows);
	serve_spans__free(s);
	fixture_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serve_spans__merge),
		cmocka_unit_test(test_serve_spans__process_series),
		cmocka_unit_test(test_serve_spans__open_calls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * The document's span records from the records as delivered: kept in their
 * compact form and made one at a time (span_run__record), they are the
 * records, in the order, that converting them all and sorting the copies
 * made before (the reference below is that code).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <limits.h>
#include <unistd.h>
#include <sys/stat.h>

#include "document/evjson.h"
#include "spans/spansite.h"
#include "spans/spanrun.h"
#include "testutil.h"

#define START_MONO 1000000ULL

/* The conversion as it was done for every record at once. */
static void reference_record(const struct khbpf_span_event *e, const char (*metrics)[64],
			     size_t nr_metrics, bool counters, enum ev_gap hw_reason,
			     struct span_record *s)
{
	const struct khbpf_span_hw *h;

	memset(s, 0, sizeof(*s));
	s->span_id = e->span_id;
	s->parent_span_id = e->parent_span_id ? ev_u64__recorded(e->parent_span_id) :
						ev_u64__gap(EV_GAP_UNAVAILABLE);
	snprintf(s->metric_id, sizeof(s->metric_id), "%s",
		 e->metric < nr_metrics ? metrics[e->metric] : "unknown");
	s->start_ns = e->start_ns > START_MONO ? e->start_ns - START_MONO : 0;
	s->inclusive_ns = e->inclusive_ns;
	s->exclusive_ns = e->exclusive_ns;
	s->thread_id = e->tid;
	s->task_id = ev_u64__gap(EV_GAP_UNAVAILABLE);
	s->worker_id = ev_u64__gap(EV_GAP_UNAVAILABLE);
	s->hardware_reason = hw_reason;
	if (counters) {
		s->hardware_recorded = true;
		h = &e->hw[KHBPF_CTR_CYCLES];
		s->hardware.cycles_begin =
			h->status ? ev_u64__gap(EV_GAP_UNAVAILABLE) : ev_u64__recorded(h->begin);
		s->hardware.cycles_end =
			h->status ? ev_u64__gap(EV_GAP_UNAVAILABLE) : ev_u64__recorded(h->end);
		h = &e->hw[KHBPF_CTR_INSTRUCTIONS];
		s->hardware.instructions_begin =
			h->status ? ev_u64__gap(EV_GAP_UNAVAILABLE) : ev_u64__recorded(h->begin);
		s->hardware.instructions_end =
			h->status ? ev_u64__gap(EV_GAP_UNAVAILABLE) : ev_u64__recorded(h->end);
	}
	s->has_ledger = true;
	s->ledger.on_cpu_ns = e->flags & KHBPF_SPAN_F_CLOCK_GAP ?
				      ev_u64__gap(EV_GAP_UNAVAILABLE) :
				      ev_u64__recorded(e->ledger.on_cpu_ns);
	s->ledger.run_delay_ns = e->ledger.run_delay_ns;
	s->ledger.voluntary_switches = e->ledger.nvcsw;
	s->ledger.involuntary_switches = e->ledger.nivcsw;
	s->ledger.migrations = e->ledger.migrations;
	/* Blocked time: a gap across a missed switch-in; off-CPU less delay and blocked is the rest. */
	if (e->flags & KHBPF_SPAN_F_CLOCK_GAP) {
		s->ledger.blocked.reason = EV_GAP_UNAVAILABLE;
	} else {
		int64_t rest = (int64_t)e->ledger.offcpu_ns - (int64_t)e->ledger.run_delay_ns;
		int c;

		s->ledger.blocked.recorded = true;
		for (c = 0; c < BLOCK_CAUSES; c++) {
			s->ledger.blocked.ns[c] = e->ledger.blocked.ns[c];
			s->ledger.blocked.count[c] = e->ledger.blocked.count[c];
			rest -= (int64_t)e->ledger.blocked.ns[c];
		}
		s->ledger.blocked.unattributed_ns = rest;
	}
}

static int reference_cmp(const void *a, const void *b)
{
	const struct span_record *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->span_id < y->span_id ? -1 : x->span_id > y->span_id;
}

static void expect_same_records(bool counters, enum ev_gap hw_reason)
{
	enum { N = 2000 };
	struct span_run r;
	struct evidence_doc doc;
	struct span_hw_aggregation agg;
	struct span_record *want = calloc(N, sizeof(*want));
	size_t i;

	assert_non_null(want);
	memset(&r, 0, sizeof(r));
	memset(&doc, 0, sizeof(doc));
	memset(&agg, 0, sizeof(agg));
	r.nr_metrics = 2;
	r.blocked = true;
	r.metrics = calloc(r.nr_metrics, sizeof(*r.metrics));
	r.events.recs = calloc(N, sizeof(*r.events.recs));
	assert_non_null(r.metrics);
	assert_non_null(r.events.recs);
	snprintf(r.metrics[0], sizeof(r.metrics[0]), "stage/a");
	snprintf(r.metrics[1], sizeof(r.metrics[1]), "stage/b");
	/* Delivered out of order: by end, and spread over threads. */
	for (i = 0; i < N; i++) {
		struct khbpf_span_event *e = &r.events.recs[i];
		size_t k = (i * 7919) % N; /* a permutation of 0..N-1 */

		e->span_id = ((uint64_t)(k % 3 + 1) << KHBPF_SPAN_SEQ_BITS) + (N - k);
		e->parent_span_id = k % 4 ? e->span_id - 1 : 0;
		/*
		 * Starts tie in fours; the first ones began before the window
		 * (start 0 in the document, then ordered by span id alone).
		 */
		e->start_ns = k < 40 ? START_MONO - 1000 + k : START_MONO + (k / 4) * 100;
		e->inclusive_ns = 100 + k;
		e->exclusive_ns = 50 + k % 50;
		e->tid = 100 + (uint32_t)(k % 3);
		e->metric = (uint32_t)(k % 5 == 4 ? 9 : k % 2); /* 9: not a known metric */
		e->depth = k % 4 ? 1 : 0;
		e->flags = k % 17 ? 0 : KHBPF_SPAN_F_CLOCK_GAP;
		e->ledger = (struct khbpf_span_ledger){ .on_cpu_ns = k * 10,
							.run_delay_ns = k,
							.nvcsw = k % 3,
							.nivcsw = k % 5,
							.migrations = k % 2,
							.offcpu_ns = 7 * k + 3 };
		e->ledger.blocked.ns[k % BLOCK_CAUSES] = 2 * k;
		e->ledger.blocked.count[k % BLOCK_CAUSES] = 1 + k % 4;
		e->ledger.blocked.ns[(k + 2) % BLOCK_CAUSES] += k;
		e->hw[KHBPF_CTR_CYCLES] = (struct khbpf_span_hw){ k, k * 3, k % 6 ? 0 : 2, 0 };
		e->hw[KHBPF_CTR_INSTRUCTIONS] = (struct khbpf_span_hw){ 0, k, k % 9 ? 0 : 1, 0 };
		reference_record(e, r.metrics, r.nr_metrics, counters, hw_reason, &want[i]);
	}
	r.events.nr = r.events.cap = r.events.max = N;
	qsort(want, N, sizeof(*want), reference_cmp);

	assert_int_equal(span_run__document(&r, START_MONO, counters, hw_reason, &doc, &agg), 0);
	assert_null(doc.events.spans);
	assert_int_equal(doc.events.nr_spans, N);
	assert_non_null(doc.events.span_at);
	for (i = 0; i < N; i++) {
		struct span_record got;
		struct json_object *a, *b;

		doc.events.span_at(doc.events.span_ctx, i, &got);
		a = evjson__span_record(&want[i]);
		b = evjson__span_record(&got);
		assert_string_equal(evjson__to_string(b), evjson__to_string(a));
		json_object_put(a);
		json_object_put(b);
	}
	span_hw_aggregation__free(&agg);
	span_run__free(&r);
	free(want);
}

/* A function of this binary for the --span request below. */
__attribute__((noinline, used)) int spanrun_fixture_target(int x);
__attribute__((noinline, used)) int spanrun_fixture_target(int x)
{
	return x + 1;
}

/*
 * Process 90 of a fixture root maps this test binary. In khbpf's mount
 * namespace, the objects its sites were found in are searched already
 * (an exec of them later is not searched again); in another (a container:
 * its ns/mnt another file), none is, since the same path there names
 * another file on the host.
 */
static void discover_in_namespace(bool container)
{
	char *root = tree_new("spanrun-ns"), exe[PATH_MAX], maps[2 * PATH_MAX], path[PATH_MAX];
	const struct span_request req = { .symbol = "spanrun_fixture_target", .metric = "target" };
	struct span_run_opts o = { .sz = sizeof(o), .pid = 90, .reqs = &req, .nr_reqs = 1 };
	struct span_run r;
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	snprintf(maps, sizeof(maps), "00400000-00401000 r-xp 00000000 08:01 1 %s\n", exe);
	tree_put(root, "proc/90/maps", maps);
	snprintf(path, sizeof(path), "%s/proc/90/root", root);
	assert_int_equal(symlink("/", path), 0);
	snprintf(path, sizeof(path), "%s/proc/90/exe", root);
	assert_int_equal(symlink(exe, path), 0);
	if (container) {
		tree_put(root, "proc/90/ns/mnt", "");
	} else {
		tree_put(root, "proc/90/ns", NULL);
		snprintf(path, sizeof(path), "%s/proc/90/ns/mnt", root);
		assert_int_equal(symlink("/proc/self/ns/mnt", path), 0);
	}
	o.root = root;
	assert_int_equal(span_run__discover(&r, &o), 0);
	assert_int_equal(r.nr_sites, 1);
	assert_int_equal(r.sites[0].err, 0);
	assert_string_equal(r.sites[0].object, exe);
	if (container) {
		assert_int_equal(r.nr_searched, 0);
	} else {
		assert_int_equal(r.nr_searched, 1);
		assert_string_equal(r.searched[0], exe);
	}
	span_run__free(&r);
	tree_free(root);
}

static void test_spanrun__searched_in_own_namespace(void **state)
{
	(void)state;
	discover_in_namespace(false);
	discover_in_namespace(true);
}

/* A site of request req (0: an annotation) with metric, failed with err (absent or not). */
static void put_site(struct span_site *s, uint32_t req, const char *metric, int err, bool absent,
		     const char *reason)
{
	memset(s, 0, sizeof(*s));
	s->request = req;
	snprintf(s->metric, sizeof(s->metric), "%s", metric);
	s->err = err;
	s->absent = absent;
	snprintf(s->reason, sizeof(s->reason), "%s", reason);
}

/*
 * A request is a mistake when it found no site and names what is not
 * there; one whose sites exist but could not be probed, or that found a
 * site somewhere, is not. --key and --span-cause name a metric some
 * request or site has.
 */
static void test_spanrun__check(void **state)
{
	char bufs[3][256], err[1024];
	struct span_request reqs[3];
	struct key_request key;
	struct cause_request cause;
	struct span_site sites[5];
	struct span_run r = { .sites = sites, .nr_sites = 5 };
	struct span_run_opts o = { .sz = sizeof(o), .reqs = reqs, .nr_reqs = 3 };

	(void)state;
	assert_int_equal(span_request__parse_usdt("postgresql:query__start,query__done=query",
						  &reqs[0], bufs[0], sizeof(bufs[0])),
			 0);
	assert_int_equal(span_request__parse("counted_step", &reqs[1], bufs[1], sizeof(bufs[1])),
			 0);
	assert_int_equal(span_request__parse_usdt("postgresql:no__such,query__done", &reqs[2],
						  bufs[2], sizeof(bufs[2])),
			 0);
	put_site(&sites[0], 0, "work-unit", 0, false, "");
	/* Found in one object, its other half missing in another: found. */
	put_site(&sites[1], 1, "query", 0, false, "");
	put_site(&sites[2], 1, "query", -ENOENT, true, "lib.so has the USDT probe ...");
	/* Stripped without a debug file: it may be there, so it is no mistake. */
	put_site(&sites[3], 2, "", -ENOENT, false, "x is stripped (no .symtab), ...");
	put_site(
		&sites[4], 3, "postgresql-no-such", -ENOENT, true,
		"postgres has the USDT probe postgresql:query__done but not postgresql:no__such, and a span needs both");

	assert_int_equal(span_run__check(&r, &o, err, sizeof(err)), -ENOENT);
	assert_string_equal(
		err,
		"--usdt-span postgresql:no__such,query__done: postgres has the USDT probe postgresql:query__done but not postgresql:no__such, and a span needs both");
	/* run: how a program the command execs later is named. */
	o.exe = "/usr/bin/true";
	assert_int_equal(span_run__check(&r, &o, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(
		err,
		"and a span needs both; for a program the command execs later, name its file: --usdt-span /PATH/OF/IT:postgresql:no__such,query__done"));
	/* A request naming its object is not told to name it. */
	reqs[2].object = "/usr/lib/postgresql/15/bin/postgres";
	assert_int_equal(span_run__check(&r, &o, err, sizeof(err)), -ENOENT);
	assert_null(strstr(err, "execs later"));
	assert_non_null(strstr(err, "--usdt-span /usr/lib/postgresql/15/bin/postgres:postgresql:"));

	/* Without the mistake: its site attached after all. */
	sites[4].err = 0;
	assert_int_equal(span_run__check(&r, &o, err, sizeof(err)), 0);

	/* --key: a site's metric (an annotation's too), a request's own or its symbol's. */
	o.key_reqs = &key;
	o.nr_key_reqs = 1;
	assert_int_equal(key_request__parse("work-unit=arg0:int", &key), 0);
	assert_int_equal(span_run__check(&r, &o, err, sizeof(err)), 0);
	assert_int_equal(key_request__parse("counted-step=arg1:int", &key), 0);
	assert_int_equal(span_run__check(&r, &o, err, sizeof(err)), 0);
	assert_int_equal(key_request__parse("nosuchmetric=arg0:str", &key), 0);
	assert_int_equal(span_run__check(&r, &o, err, sizeof(err)), -ENOENT);
	assert_string_equal(
		err,
		"--key nosuchmetric=arg0:str: no --span, --usdt-span, --usdt or annotation measures the metric 'nosuchmetric' (those there are: work-unit, query, postgresql-no-such)");
	o.nr_key_reqs = 0;
	o.cause_reqs = &cause;
	o.nr_cause_reqs = 1;
	assert_int_equal(cause_request__parse("query=lock", &cause), 0);
	assert_int_equal(span_run__check(&r, &o, err, sizeof(err)), 0);
	assert_int_equal(cause_request__parse("qurey=io", &cause), 0);
	assert_int_equal(span_run__check(&r, &o, err, sizeof(err)), -ENOENT);
	assert_int_equal(strncmp(err, "--span-cause qurey=io: no --span", 32), 0);

	/* No sites, no requests: nothing is there. */
	r.nr_sites = 0;
	o.nr_reqs = 0;
	assert_int_equal(span_run__check(&r, &o, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "(those there are: none)"));
}

/*
 * Through discovery, run mode: the command's own function attaches, one it
 * does not have is the mistake, named with the file it looked in.
 */
static void test_spanrun__check_discovered(void **state)
{
	char exe[PATH_MAX], bufs[2][256], err[1024], want[PATH_MAX + 256];
	struct span_request reqs[2];
	struct span_run_opts o = {
		.sz = sizeof(o), .reqs = reqs, .nr_reqs = 2, .no_annotations = true
	};
	struct span_run r;
	ssize_t n;

	(void)state;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	o.exe = exe;
	assert_int_equal(
		span_request__parse("spanrun_fixture_target", &reqs[0], bufs[0], sizeof(bufs[0])),
		0);
	assert_int_equal(
		span_request__parse("spanrun_no_such_function", &reqs[1], bufs[1], sizeof(bufs[1])),
		0);
	assert_int_equal(span_run__discover(&r, &o), 0);
	assert_int_equal(r.nr_sites, 2);
	assert_int_equal(r.sites[0].request, 1);
	assert_int_equal(r.sites[0].err, 0);
	assert_int_equal(r.sites[1].request, 2);
	assert_true(r.sites[1].absent);
	assert_int_equal(span_run__check(&r, &o, err, sizeof(err)), -ENOENT);
	snprintf(
		want, sizeof(want),
		"--span spanrun_no_such_function: no function of %s matches 'spanrun_no_such_function'; for a program the command execs later, name its file: --span /PATH/OF/IT:spanrun_no_such_function",
		exe);
	assert_string_equal(err, want);
	span_run__free(&r);

	o.nr_reqs = 1;
	assert_int_equal(span_run__discover(&r, &o), 0);
	assert_int_equal(span_run__check(&r, &o, err, sizeof(err)), 0);
	span_run__free(&r);
}

/*
 * run: a file named by its path for a program the command execs later has
 * its request looked up at the start, not its annotations: it is not marked
 * searched, so its exec finds them (set_spans.sh counts them).
 */
static void test_spanrun__named_file_not_searched(void **state)
{
	char exe[PATH_MAX], spanned[PATH_MAX], arg[PATH_MAX + 32], buf[PATH_MAX + 32];
	struct span_request req;
	struct span_run_opts o = { .sz = sizeof(o), .reqs = &req, .nr_reqs = 1 };
	struct span_run r;
	ssize_t n;
	size_t i;

	(void)state;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	if (!realpath("build/workloads/spanned", spanned))
		fail_msg("build/workloads/spanned is missing: run 'make workloads'");
	o.exe = exe;
	snprintf(arg, sizeof(arg), "%s:stage_outer", spanned);
	assert_int_equal(span_request__parse(arg, &req, buf, sizeof(buf)), 0);
	assert_int_equal(span_run__discover(&r, &o), 0);
	assert_int_equal(span_run__check(&r, &o, buf, sizeof(buf)), 0);
	for (i = 0; i < r.nr_sites; i++)
		if (!strcmp(r.sites[i].object, spanned))
			break;
	assert_true(i < r.nr_sites);
	assert_int_equal(r.sites[i].err, 0);
	assert_int_equal(r.sites[i].request, 1);
	for (i = 0; i < r.nr_searched; i++)
		assert_string_not_equal(r.searched[i], spanned);
	span_run__free(&r);
}

static void test_spanrun__records_as_converted_whole(void **state)
{
	(void)state;
	expect_same_records(false, EV_GAP_UNSUPPORTED);
	expect_same_records(true, EV_GAP_UNSUPPORTED);
	expect_same_records(false, EV_GAP_COLLECTOR_DISABLED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spanrun__records_as_converted_whole),
		cmocka_unit_test(test_spanrun__searched_in_own_namespace),
		cmocka_unit_test(test_spanrun__check),
		cmocka_unit_test(test_spanrun__check_discovered),
		cmocka_unit_test(test_spanrun__named_file_not_searched),
	};

	return cmocka_run_group_tests_name("spanrun", tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * Span probes against a real annotated program (build/workloads/spanned):
 * exact call counts per metric, parent links, exclusive = inclusive minus
 * children, per-thread attribution, and every record accounted for.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "sched_collector.h"
#include "spanfind.h"
#include "testutil.h"

#define MAX_EVENTS 100000

struct events {
	struct khbpf_span_event *v;
	size_t nr;
};

static void on_span(void *ctx, const struct khbpf_span_event *e)
{
	struct events *ev = ctx;

	if (ev->nr < MAX_EVENTS)
		ev->v[ev->nr++] = *e;
}

struct metric_table {
	char names[16][SPANFIND_METRIC_MAX];
	size_t nr;
};

static uint32_t metric_index(struct metric_table *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->nr; i++)
		if (!strcmp(t->names[i], name))
			return (uint32_t)i;
	assert_true(t->nr < 16);
	snprintf(t->names[t->nr], SPANFIND_METRIC_MAX, "%s", name);
	return (uint32_t)t->nr++;
}

/* The workload's own count for a metric, from its JSON line. */
static uint64_t expected(const char *line, const char *metric)
{
	char key[80];
	const char *p;

	snprintf(key, sizeof(key), "\"%s\": ", metric);
	p = strstr(line, key);
	assert_non_null(p);
	return strtoull(p + strlen(key), NULL, 10);
}

static const struct khbpf_span_event *by_id(const struct events *ev, uint64_t id)
{
	size_t i;

	for (i = 0; i < ev->nr; i++)
		if (ev->v[i].span_id == id)
			return &ev->v[i];
	return NULL;
}

/* build/workloads/spanned --wait ARGS..., held until "go"; stdout piped back. */
struct held {
	pid_t pid;
	int go; /* write a byte to start the rounds; close to end --hold */
	FILE *out;
};

static void held_start(struct held *h, char *const args[])
{
	char *argv[16] = { "spanned", "--wait" };
	int in[2], out[2], i;
	char line[64];

	for (i = 0; args[i] && i < 13; i++)
		argv[2 + i] = args[i];
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	h->pid = fork();
	assert_true(h->pid >= 0);
	if (h->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execv("build/workloads/spanned", argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	h->go = in[1];
	h->out = fdopen(out[0], "r");
	assert_non_null(h->out);
	assert_non_null(fgets(line, sizeof(line), h->out));
	assert_string_equal(line, "ready\n");
}

/* Its last stdout line, then its exit, which must be clean. */
static void held_finish(struct held *h, char *line, size_t linelen)
{
	int status;

	close(h->go);
	assert_non_null(fgets(line, (int)linelen, h->out));
	fclose(h->out);
	assert_int_equal(waitpid(h->pid, &status, 0), h->pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A collector watching the held process, with every annotated span attached. */
static struct sched_collector *
collector_for(const struct held *h, const struct sched_collector_opts *o, struct metric_table *mt)
{
	struct span_site *sites = NULL;
	struct sched_collector *c;
	size_t nr_sites = 0, i;

	assert_int_equal(spanfind__discover("/", h->pid, NULL, 0, false, &sites, &nr_sites), 0);
	assert_int_equal(nr_sites, 10);
	assert_int_equal(sched_collector__open(&c, o), 0);
	assert_int_equal(sched_collector__add_target(c, h->pid), 0);
	assert_int_equal(sched_collector__attach(c), 0);
	for (i = 0; i < nr_sites; i++) {
		assert_int_equal(sites[i].err, 0);
		assert_int_equal(sched_collector__attach_span(c, sites[i].open_path,
							      sites[i].offset, h->pid,
							      metric_index(mt, sites[i].metric)),
				 0);
	}
	spanfind__free(sites, nr_sites);
	return c;
}

static void run_spanned(char *threads, char *iterations, uint64_t max_spans,
			enum sched_counters counters, struct events *ev,
			struct sched_collector_stats *st, struct metric_table *mt,
			struct span_agg_entry **aggs, size_t *nr_aggs, char *line, size_t linelen)
{
	struct sched_collector_opts o = {
		.sz = sizeof(o),
		.spans = true,
		.max_spans = max_spans,
		.counters = counters,
		.on_span = on_span,
		.on_span_ctx = ev,
	};
	char *args[] = { "--threads", threads, "--iterations", iterations, NULL };
	struct sched_collector *c;
	struct held h;
	ssize_t n;

	held_start(&h, args);
	c = collector_for(&h, &o, mt);
	assert_int_equal(write(h.go, "g", 1), 1);
	held_finish(&h, line, linelen);
	do {
		n = sched_collector__drain_spans(c);
	} while (n > 0);
	assert_int_equal(sched_collector__span_aggs(c, aggs, nr_aggs), 0);
	assert_int_equal(sched_collector__stats(c, st), 0);
	sched_collector__destroy(c);
}

static void test_span_probes__exact_counts_and_nesting(void **state)
{
	struct metric_table mt = { .nr = 0 };
	struct sched_collector_stats st;
	struct span_agg_entry *aggs;
	struct events ev = { calloc(MAX_EVENTS, sizeof(struct khbpf_span_event)), 0 };
	uint64_t calls[16] = { 0 }, total = 0;
	char line[512];
	size_t nr_aggs, i, m;

	(void)state;
	require_or_skip(geteuid() == 0, "uprobes need root");
	assert_non_null(ev.v);
	run_spanned((char *)"3", (char *)"4", 0, SCHED_COUNTERS_NONE, &ev, &st, &mt, &aggs,
		    &nr_aggs, line, sizeof(line));

	for (i = 0; i < nr_aggs; i++) {
		calls[aggs[i].key.metric] += aggs[i].agg.calls;
		/* exclusive never exceeds inclusive; the histogram counts every call. */
		assert_true(aggs[i].agg.exclusive_ns <= aggs[i].agg.inclusive_ns);
		uint64_t h = 0;
		for (m = 0; m < KHBPF_RQ_SLOTS; m++)
			h += aggs[i].agg.hist[m];
		assert_int_equal(h, aggs[i].agg.calls);
	}
	for (m = 0; m < mt.nr; m++) {
		assert_int_equal(calls[m], expected(line, mt.names[m]));
		total += calls[m];
	}
	/* Three worker threads, each with every metric but stage-hold (not called). */
	assert_int_equal(nr_aggs, 3 * (mt.nr - 1));
	/* Every record: emitted (delivered), dropped or sampled out. */
	assert_int_equal(st.span_records, total);
	assert_int_equal(st.span_events_delivered + st.span_ringbuf_drops + st.span_sampled_out,
			 total);
	assert_int_equal(st.span_ringbuf_drops, 0);
	assert_int_equal(ev.nr, total);
	assert_int_equal(st.span_depth_overflow + st.span_unwound + st.span_unmatched, 0);
	assert_int_equal(st.span_state_failures + st.span_agg_overflow, 0);

	/* Parent links and exclusive time, record by record. */
	for (i = 0; i < ev.nr; i++) {
		const struct khbpf_span_event *e = &ev.v[i], *p;
		const char *name = mt.names[e->metric];
		uint64_t child = 0;
		size_t j;

		for (j = 0; j < ev.nr; j++)
			if (ev.v[j].parent_span_id == e->span_id)
				child += ev.v[j].inclusive_ns;
		assert_int_equal(e->exclusive_ns, e->inclusive_ns - child);
		p = e->parent_span_id ? by_id(&ev, e->parent_span_id) : NULL;
		if (!strcmp(name, "stage-inner")) {
			assert_non_null(p);
			assert_string_equal(mt.names[p->metric], "stage-middle");
			assert_int_equal(e->depth, 2);
		} else if (!strcmp(name, "stage-middle")) {
			assert_non_null(p);
			assert_string_equal(mt.names[p->metric], "stage-outer");
		} else if (!strcmp(name, "stage-recurse")) {
			/* Five deep: the outermost is a root, each other's parent is itself. */
			assert_true(e->depth < 5);
			if (e->depth)
				assert_string_equal(mt.names[p->metric], "stage-recurse");
			else
				assert_null(p);
		} else {
			assert_string_not_equal(name, "stage-hold");
			assert_int_equal(e->parent_span_id, 0);
			assert_int_equal(e->depth, 0);
		}
		if (p)
			assert_int_equal(p->tid, e->tid);
		/*
		 * On-CPU time fits inside the span, unless a switch-in was
		 * missed: then the span says so and the miss is counted.
		 */
		if (e->flags & KHBPF_SPAN_F_CLOCK_GAP)
			assert_true(st.span_clock_gaps > 0);
		else
			assert_true(e->ledger.on_cpu_ns <= e->inclusive_ns);
		/*
		 * usleep(1000) inside: a voluntary switch, unless the vCPU lost
		 * the whole millisecond to the hypervisor before the kernel's
		 * do_nanosleep() checked its timer (seen here): then no switch
		 * at all, but the span still lasted the full sleep.
		 */
		if (!strcmp(name, "stage-sleep"))
			assert_true(e->ledger.nvcsw >= 1 || e->inclusive_ns >= 1000000);
	}
	free(aggs);
	free(ev.v);
}

/* A cap on records: aggregates stay exact and the losses add up. */
static void test_span_probes__sampled_out_counted(void **state)
{
	struct metric_table mt = { .nr = 0 };
	struct sched_collector_stats st;
	struct span_agg_entry *aggs;
	struct events ev = { calloc(MAX_EVENTS, sizeof(struct khbpf_span_event)), 0 };
	uint64_t total = 0;
	char line[512];
	size_t nr_aggs, i;

	(void)state;
	require_or_skip(geteuid() == 0, "uprobes need root");
	run_spanned((char *)"2", (char *)"5", 25, SCHED_COUNTERS_NONE, &ev, &st, &mt, &aggs,
		    &nr_aggs, line, sizeof(line));
	for (i = 0; i < nr_aggs; i++)
		total += aggs[i].agg.calls;
	assert_int_equal(total, 2 * 5 * (8 + 5));
	assert_int_equal(st.span_records, total);
	assert_int_equal(ev.nr, 25);
	assert_int_equal(st.span_sampled_out, total - 25);
	assert_int_equal(st.span_events_delivered + st.span_ringbuf_drops + st.span_sampled_out,
			 total);
	free(aggs);
	free(ev.v);
}

/* A span open when the window ends is reported with its start, not lost. */
static void test_span_probes__open_span_reported(void **state)
{
	struct sched_collector_opts o = { .sz = sizeof(o), .spans = true };
	char *args[] = { "--hold", "--threads", "1", "--iterations", "1", NULL };
	struct metric_table mt = { .nr = 0 };
	struct khbpf_span_event *open = NULL;
	struct sched_collector *c;
	struct span_agg_entry *aggs;
	size_t nr_open = 0, nr_aggs, i;
	uint64_t hold_calls = 0;
	char line[512];
	struct held h;

	(void)state;
	require_or_skip(geteuid() == 0, "uprobes need root");
	held_start(&h, args);
	c = collector_for(&h, &o, &mt);
	assert_int_equal(write(h.go, "g", 1), 1);
	assert_non_null(fgets(line, sizeof(line), h.out));
	assert_string_equal(line, "holding\n");

	/* Inside stage-hold now: exactly that one span is open, on the main thread. */
	assert_int_equal(sched_collector__open_spans(c, &open, &nr_open), 0);
	assert_int_equal(nr_open, 1);
	assert_string_equal(mt.names[open[0].metric], "stage-hold");
	assert_int_equal(open[0].tid, (uint32_t)h.pid);
	assert_int_equal(open[0].depth, 0);
	assert_int_equal(open[0].parent_span_id, 0);
	assert_true(open[0].start_ns > 0);
	free(open);

	held_finish(&h, line, sizeof(line));
	/* Once it returned, it is a finished call like any other. */
	assert_int_equal(sched_collector__open_spans(c, &open, &nr_open), 0);
	assert_int_equal(nr_open, 0);
	free(open);
	assert_int_equal(sched_collector__span_aggs(c, &aggs, &nr_aggs), 0);
	for (i = 0; i < nr_aggs; i++)
		if (!strcmp(mt.names[aggs[i].key.metric], "stage-hold"))
			hold_calls += aggs[i].agg.calls;
	assert_int_equal(hold_calls, 1);
	free(aggs);
	sched_collector__destroy(c);
}

/*
 * Per-span counters, with per-CPU software cpu-clock events standing in for
 * the PMU: a span's virtual cpu-clock delta counts only the thread's own
 * time on a CPU, so it must equal the span's on-CPU time from the
 * scheduler ledger, also for spans that slept, were preempted or migrated.
 * At each edge (span entry/exit, switch-out/in) the counter is read just
 * after the timestamp; the gap between the two varies, up to ~1.5 us on a
 * CPU just out of idle (measured here), so each edge pair may differ by
 * that much. Spans of 1 ms or more on a CPU must agree within 1%.
 */
static void test_span_probes__counters_follow_the_thread(void **state)
{
	struct metric_table mt = { .nr = 0 };
	struct sched_collector_stats st;
	struct span_agg_entry *aggs;
	struct events ev = { calloc(MAX_EVENTS, sizeof(struct khbpf_span_event)), 0 };
	uint64_t migrated = 0, switched = 0, sum[KHBPF_NR_COUNTERS] = { 0 }, hw_calls = 0;
	uint64_t not_ok = 0;
	char line[512];
	size_t nr_aggs, i, k;

	(void)state;
	require_or_skip(geteuid() == 0, "uprobes need root");
	assert_non_null(ev.v);
	/* Three threads on this 2-CPU machine: spins get preempted. */
	run_spanned((char *)"3", (char *)"4", 0, SCHED_COUNTERS_SW_CPU_CLOCK, &ev, &st, &mt, &aggs,
		    &nr_aggs, line, sizeof(line));
	assert_int_equal(st.nr_counters, KHBPF_NR_COUNTERS);
	assert_true(st.counter_cpus >= 1);
	assert_int_equal(ev.nr, st.span_records);
	for (i = 0; i < ev.nr; i++) {
		const struct khbpf_span_event *e = &ev.v[i];
		uint64_t on = e->ledger.on_cpu_ns;

		if (e->flags & KHBPF_SPAN_F_CLOCK_GAP)
			continue;
		/*
		 * Software events never multiplex; a reading is only given up
		 * when the hypervisor kept stealing the vCPU between the time
		 * and the counter (counted), and then the span is a gap.
		 */
		if (e->hw[0].status != KHBPF_VCTR_OK || e->hw[1].status != KHBPF_VCTR_OK) {
			assert_true(st.span_counter_skews > 0);
			assert_true(e->hw[0].status == KHBPF_VCTR_NO_READING ||
				    e->hw[0].status == KHBPF_VCTR_BROKEN);
			not_ok++;
			continue;
		}
		for (k = 0; k < KHBPF_NR_COUNTERS; k++) {
			uint64_t d = e->hw[k].end - e->hw[k].begin;
			uint64_t diff = d > on ? d - on : on - d;

			if (diff > on / 100 + 1500 * (1 + e->ledger.nvcsw + e->ledger.nivcsw))
				fail_msg("%s span %llu: cpu-clock delta %llu, on-CPU %llu",
					 mt.names[e->metric], (unsigned long long)e->span_id,
					 (unsigned long long)d, (unsigned long long)on);
			if (on >= 1000000)
				assert_true(diff <= on / 100);
			sum[k] += d;
		}
		hw_calls++;
		if (e->ledger.migrations)
			migrated++;
		if (e->ledger.nvcsw + e->ledger.nivcsw)
			switched++;
	}
	/* Given-up readings are rare: at most 2% of the spans. */
	assert_true(not_ok * 50 <= ev.nr);
	/* stage-migrate moves itself on every call; stage-sleep always sleeps. */
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2)
		assert_true(migrated + not_ok >= 12);
	assert_true(switched >= 12);
	/* The in-kernel totals hold the same sums as the records. */
	for (i = 0; i < nr_aggs; i++) {
		hw_calls -= aggs[i].agg.hw_calls;
		for (k = 0; k < KHBPF_NR_COUNTERS; k++)
			sum[k] -= aggs[i].agg.hw_sum[k];
	}
	assert_int_equal(hw_calls, 0);
	assert_int_equal(sum[0], 0);
	assert_int_equal(sum[1], 0);
	free(aggs);
	free(ev.v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_span_probes__exact_counts_and_nesting),
		cmocka_unit_test(test_span_probes__sampled_out_counted),
		cmocka_unit_test(test_span_probes__open_span_reported),
		cmocka_unit_test(test_span_probes__counters_follow_the_thread),
	};

	return cmocka_run_group_tests_name("span_probes", tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * sched_spans: span probes against a real annotated program (build/workloads/spanned):
 * exact call counts per metric, parent links, exclusive = inclusive minus
 * children, per-thread attribution, and every record accounted for; in
 * uprobe_multi links (where the kernel has them) and in per-site links, and
 * a site the kernel refuses failing alone.
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
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <bpf/libbpf.h>

#include "host/kfeatures.h"
#include "collect/sched_collector.h"
#include "collect/sched_variant.h"
#include "spans/spanfind.h"
#include "testutil.h"

#define MAX_EVENTS 100000

struct events {
	struct khbpf_span_event *v;
	size_t nr;
};

static void on_span(void *ctx, const struct khbpf_span_event *e,
		    const struct khbpf_span_wakes *wakes)
{
	struct events *ev = ctx;

	(void)wakes;
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

/* How collector_for links the sites: the default, unless a test says otherwise. */
static enum sched_span_links links = SCHED_SPAN_LINKS_AUTO;
/* Per-thread state in the hashes (the PREEMPT_RT and pre-5.11 path). */
static bool task_hashes;

static int default_links(void **state)
{
	(void)state;
	links = SCHED_SPAN_LINKS_AUTO;
	task_hashes = false;
	return 0;
}

/* Does this kernel make uprobe_multi links (as the collector decides it)? */
static bool kernel_multi(void)
{
	struct sched_variant v;
	struct kfeatures k;

	kfeatures__detect(&k, true);
	sched_variant__select(&k, &v);
	return v.uprobe_multi;
}

/*
 * A collector watching the held process, with every annotated span attached,
 * and a last site `bad` bytes past the end of the executable (0: none).
 */
static struct sched_collector *collector_with(const struct held *h, struct sched_collector_opts *o,
					      struct metric_table *mt, uint64_t bad)
{
	struct sched_span_site v[11];
	struct span_site *sites = NULL;
	struct sched_collector *c;
	size_t nr_sites = 0, i, n;
	struct stat st;

	assert_int_equal(spanfind__discover("/", h->pid, NULL, 0, NULL, &sites, &nr_sites), 0);
	assert_int_equal(nr_sites, 10);
	o->span_links = links;
	o->task_hashes = task_hashes;
	o->span_sites = nr_sites + !!bad;
	assert_int_equal(sched_collector__open(&c, o), 0);
	assert_int_equal(sched_collector__add_target(c, h->pid), 0);
	assert_int_equal(sched_collector__attach(c), 0);
	for (i = 0; i < nr_sites; i++) {
		assert_int_equal(sites[i].err, 0);
		v[i] = (struct sched_span_site){ .path = sites[i].open_path,
						 .offset = sites[i].offset,
						 .metric = metric_index(mt, sites[i].metric) };
	}
	n = nr_sites;
	if (bad) {
		/* uprobe_register() refuses an offset past the file's size. */
		assert_int_equal(stat(sites[0].open_path, &st), 0);
		v[n++] = (struct sched_span_site){ .path = sites[0].open_path,
						   .offset = (uint64_t)st.st_size + bad,
						   .metric = metric_index(mt, "past-the-end") };
	}
	assert_int_equal(sched_collector__attach_spans(c, v, n, h->pid), (int)nr_sites);
	for (i = 0; i < nr_sites; i++)
		assert_int_equal(v[i].err, 0);
	if (bad)
		assert_int_equal(v[nr_sites].err, -EINVAL);
	/* Auto: uprobe_multi from 4 sites, where the kernel has it. */
	assert_int_equal(sched_collector__span_multi(c),
			 links != SCHED_SPAN_LINKS_PER_SITE && kernel_multi());
	if (!sched_collector__span_multi(c))
		assert_int_equal(sched_collector__span_links(c), 2 * nr_sites);
	else if (!bad)
		assert_int_equal(sched_collector__span_links(c), 2);
	else
		/*
		 * 11 sites by offset, the bad one last: refused, then 5 attach,
		 * 6 refused; 3 attach, 3 refused; 1, 2 refused; 1, and the bad
		 * one alone: four groups of good sites, two links each.
		 */
		assert_int_equal(sched_collector__span_links(c), 8);
	spanfind__free(sites, nr_sites);
	return c;
}

static struct sched_collector *collector_for(const struct held *h, struct sched_collector_opts *o,
					     struct metric_table *mt)
{
	return collector_with(h, o, mt, 0);
}

static void run_spanned_bad(char *threads, char *iterations, uint64_t max_spans,
			    enum sched_counters counters, struct events *ev,
			    struct sched_collector_stats *st, struct metric_table *mt,
			    struct span_agg_entry **aggs, size_t *nr_aggs, char *line,
			    size_t linelen, uint64_t bad)
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
	c = collector_with(&h, &o, mt, bad);
	assert_int_equal(write(h.go, "g", 1), 1);
	held_finish(&h, line, linelen);
	do {
		n = sched_collector__drain_spans(c);
	} while (n > 0);
	assert_int_equal(sched_collector__span_aggs(c, aggs, nr_aggs), 0);
	assert_int_equal(sched_collector__stats(c, st), 0);
	/* Detaching starts in the background and destroy waits for it. */
	sched_collector__detach_spans(c);
	sched_collector__destroy(c);
}

static void run_spanned(char *threads, char *iterations, uint64_t max_spans,
			enum sched_counters counters, struct events *ev,
			struct sched_collector_stats *st, struct metric_table *mt,
			struct span_agg_entry **aggs, size_t *nr_aggs, char *line, size_t linelen)
{
	run_spanned_bad(threads, iterations, max_spans, counters, ev, st, mt, aggs, nr_aggs, line,
			linelen, 0);
}

static void exact_counts_and_nesting(void)
{
	struct metric_table mt = { .nr = 0 };
	struct sched_collector_stats st;
	struct span_agg_entry *aggs;
	struct events ev = { calloc(MAX_EVENTS, sizeof(struct khbpf_span_event)), 0 };
	uint64_t calls[16] = { 0 }, total = 0;
	char line[512];
	size_t nr_aggs, i, m;

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

/* The ten sites in two uprobe_multi links (where the kernel has them). */
static void test_sched_spans__exact_counts_and_nesting(void **state)
{
	(void)state;
	exact_counts_and_nesting();
}

/* The same in twenty links, two per site: the way of kernels before 6.6. */
static void test_sched_spans__exact_counts_per_site_links(void **state)
{
	(void)state;
	links = SCHED_SPAN_LINKS_PER_SITE;
	exact_counts_and_nesting();
}

/* The same with span and thread state in the hashes, as on PREEMPT_RT. */
static void test_sched_spans__exact_counts_task_hashes(void **state)
{
	(void)state;
	task_hashes = true;
	exact_counts_and_nesting();
}

/*
 * A site the kernel refuses fails alone, with the kernel's reason, in
 * either kind of link; the others count exactly.
 */
static void bad_site_alone(enum sched_span_links how)
{
	struct metric_table mt = { .nr = 0 };
	struct sched_collector_stats st;
	struct span_agg_entry *aggs;
	struct events ev = { calloc(MAX_EVENTS, sizeof(struct khbpf_span_event)), 0 };
	char line[512];
	size_t nr_aggs, i, m;
	uint64_t calls[16] = { 0 };
	libbpf_print_fn_t old_print;

	require_or_skip(geteuid() == 0, "uprobes need root");
	assert_non_null(ev.v);
	links = how;
	/* libbpf would print the refusal the test asks for. */
	old_print = libbpf_set_print(NULL);
	run_spanned_bad((char *)"2", (char *)"3", 0, SCHED_COUNTERS_NONE, &ev, &st, &mt, &aggs,
			&nr_aggs, line, sizeof(line), 4096);
	libbpf_set_print(old_print);
	for (i = 0; i < nr_aggs; i++)
		calls[aggs[i].key.metric] += aggs[i].agg.calls;
	for (m = 0; m < mt.nr; m++)
		if (strcmp(mt.names[m], "past-the-end"))
			assert_int_equal(calls[m], expected(line, mt.names[m]));
		else
			assert_int_equal(calls[m], 0);
	free(aggs);
	free(ev.v);
}

static void test_sched_spans__bad_site_alone_multi(void **state)
{
	(void)state;
	bad_site_alone(SCHED_SPAN_LINKS_MULTI);
}

static void test_sched_spans__bad_site_alone_per_site(void **state)
{
	(void)state;
	bad_site_alone(SCHED_SPAN_LINKS_PER_SITE);
}

/*
 * At most KHBPF_MAX_SPAN_SITES sites per collector: one more fails with
 * -E2BIG, and so does every later one. 4097 uprobe_multi consumers of one
 * offset stand in for as many functions (per-site links would take the
 * kernel minutes to take down).
 */
static void test_sched_spans__site_bound(void **state)
{
	struct sched_collector_opts o = { .sz = sizeof(o), .spans = true };
	char *args[] = { "--threads", "1", "--iterations", "1", NULL };
	struct sched_span_site *v, one;
	struct span_site *sites = NULL;
	struct sched_collector *c;
	size_t nr_sites = 0, i;
	char line[512];
	struct held h;

	(void)state;
	require_or_skip(geteuid() == 0, "uprobes need root");
	if (!kernel_multi())
		skip();
	v = calloc(KHBPF_MAX_SPAN_SITES + 1, sizeof(*v));
	assert_non_null(v);
	held_start(&h, args);
	assert_int_equal(spanfind__discover("/", h.pid, NULL, 0, NULL, &sites, &nr_sites), 0);
	assert_true(nr_sites > 0);
	o.span_links = SCHED_SPAN_LINKS_MULTI;
	assert_int_equal(sched_collector__open(&c, &o), 0);
	for (i = 0; i <= KHBPF_MAX_SPAN_SITES; i++)
		v[i] = (struct sched_span_site){ .path = sites[0].open_path,
						 .offset = sites[0].offset };
	assert_int_equal(sched_collector__attach_spans(c, v, KHBPF_MAX_SPAN_SITES + 1, h.pid),
			 KHBPF_MAX_SPAN_SITES);
	for (i = 0; i < KHBPF_MAX_SPAN_SITES; i++)
		assert_int_equal(v[i].err, 0);
	assert_int_equal(v[KHBPF_MAX_SPAN_SITES].err, -E2BIG);
	assert_int_equal(sched_collector__span_links(c), 2);
	one = v[0];
	assert_int_equal(sched_collector__attach_spans(c, &one, 1, h.pid), 0);
	assert_int_equal(one.err, -E2BIG);
	sched_collector__destroy(c);
	spanfind__free(sites, nr_sites);
	held_finish(&h, line, sizeof(line));
	free(v);
}

/* A cap on records: aggregates stay exact and the losses add up. */
static void test_sched_spans__sampled_out_counted(void **state)
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
static void test_sched_spans__open_span_reported(void **state)
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
static void test_sched_spans__counters_follow_the_thread(void **state)
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
		cmocka_unit_test_setup(test_sched_spans__exact_counts_and_nesting, default_links),
		cmocka_unit_test_setup(test_sched_spans__exact_counts_task_hashes, default_links),
		cmocka_unit_test_setup(test_sched_spans__exact_counts_per_site_links,
				       default_links),
		cmocka_unit_test_setup(test_sched_spans__bad_site_alone_multi, default_links),
		cmocka_unit_test_setup(test_sched_spans__bad_site_alone_per_site, default_links),
		cmocka_unit_test_setup(test_sched_spans__site_bound, default_links),
		cmocka_unit_test_setup(test_sched_spans__sampled_out_counted, default_links),
		cmocka_unit_test_setup(test_sched_spans__open_span_reported, default_links),
		cmocka_unit_test_setup(test_sched_spans__counters_follow_the_thread, default_links),
	};

	return cmocka_run_group_tests_name("sched_spans", tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "lib/evidence.h"

#define assert_recorded(ev, v)                     \
	do {                                       \
		assert_true((ev).recorded);        \
		assert_int_equal((ev).value, (v)); \
	} while (0)
#define assert_gap(ev, r)                           \
	do {                                        \
		assert_false((ev).recorded);        \
		assert_int_equal((ev).reason, (r)); \
	} while (0)

static void test_evidence__zero_init_is_a_gap(void **state)
{
	struct ev_u64 ev = { 0 };
	struct counter_set cs;

	(void)state;
	assert_gap(ev, EV_GAP_UNAVAILABLE);
	memset(&cs, 0, sizeof(cs));
	assert_gap(cs.cycles.ev, EV_GAP_UNAVAILABLE);
}

/* Every source parses back to itself; the crate's stay in a keyhog rendering, khbpf's become system-call. */
static void test_evidence__source_parse_keyhog(void **state)
{
	enum ev_source s;
	int i;

	(void)state;
	for (i = 0; i < EV_SRC__COUNT; i++) {
		assert_true(ev_source__parse(ev_source__name(i), &s));
		assert_int_equal(s, i);
		assert_int_equal(ev_source__keyhog(i), i < EV_SRC_BPF_TRACEPOINT ?
							       (enum ev_source)i :
							       EV_SRC_SYSTEM_CALL);
	}
	assert_false(ev_source__parse("bpf", &s));
	assert_false(ev_source__parse("", &s));
	assert_string_equal(ev_source__name(ev_source__keyhog(EV_SRC_PROC_PID_EXE)), "system-call");
}

static void test_evidence__names_match_schema(void **state)
{
	(void)state;
	assert_string_equal(ev_gap__name(EV_GAP_LEGACY_V1_NOT_RECORDED), "legacy-v1-not-recorded");
	assert_string_equal(ev_gap__name(EV_GAP_COLLECTOR_DISABLED), "collector-disabled");
	assert_string_equal(ev_gap__name(EV_GAP_PERMISSION_DENIED), "permission-denied");
	assert_string_equal(ev_gap__name(EV_GAP_UNSUPPORTED), "unsupported");
	assert_string_equal(ev_gap__name(EV_GAP_UNAVAILABLE), "unavailable");
	assert_string_equal(ev_gap__name((enum ev_gap)99), "invalid");
	assert_string_equal(ev_source__name(EV_SRC_BPF_TRACEPOINT), "bpf-tracepoint");
	assert_string_equal(ev_source__name(EV_SRC_BPF_UPROBE), "bpf-uprobe");
	assert_string_equal(ev_source__name(EV_SRC_PROC_PID_SCHEDSTAT), "proc-pid-schedstat");
	assert_string_equal(ev_source__name(EV_SRC_PROC_PID_TASK_STAT), "proc-pid-task-stat");
	assert_string_equal(ev_source__name(EV_SRC_MAC_OS_API), "mac-os-api");
	assert_string_equal(collector_id__name(COLLECTOR_SPAN_PROBES), "span-probes");
	assert_string_equal(collector_availability__name(AVAIL_PERMISSION_DENIED),
			    "permission-denied");
	assert_int_equal(collector_availability__gap(AVAIL_DISABLED), EV_GAP_COLLECTOR_DISABLED);
	assert_int_equal(collector_availability__gap(AVAIL_UNSUPPORTED), EV_GAP_UNSUPPORTED);
}

static void test_evidence__delta_saturates(void **state)
{
	(void)state;
	assert_recorded(ev_u64__delta(ev_u64__recorded(10), ev_u64__recorded(3)), 7);
	assert_recorded(ev_u64__delta(ev_u64__recorded(3), ev_u64__recorded(10)), 0);
	assert_recorded(ev_u64__delta(ev_u64__recorded(UINT64_MAX), ev_u64__recorded(0)),
			UINT64_MAX);
	assert_recorded(ev_u64__delta(ev_u64__recorded(0), ev_u64__recorded(UINT64_MAX)), 0);
	assert_recorded(ev_u64__delta(ev_u64__recorded(5), ev_u64__recorded(5)), 0);
}

/* Every (end, start) combination of recorded and each gap reason. */
static void test_evidence__delta_gap_propagation_all_combinations(void **state)
{
	int e, s;

	(void)state;
	for (e = -1; e < EV_GAP__COUNT; e++) {
		for (s = -1; s < EV_GAP__COUNT; s++) {
			struct sev_u64 end = e < 0 ? sev_u64__recorded(9, EV_SRC_BPF_TRACEPOINT) :
						     sev_u64__gap(EV_SRC_BPF_TRACEPOINT, e);
			struct sev_u64 start = s < 0 ? sev_u64__recorded(4, EV_SRC_PROC_PID_SCHED) :
						       sev_u64__gap(EV_SRC_PROC_PID_SCHED, s);
			struct sev_u64 d = sev_u64__delta(end, start);

			assert_int_equal(d.source, EV_SRC_BPF_TRACEPOINT);
			if (e >= 0)
				assert_gap(d.ev, e);
			else if (s >= 0)
				assert_gap(d.ev, s);
			else
				assert_recorded(d.ev, 5);
		}
	}
}

static void test_evidence__milli_ratio_128bit(void **state)
{
	uint64_t v = 12345;

	(void)state;
	assert_false(milli_ratio(1, 0, &v));
	assert_int_equal(v, 12345);
	assert_true(milli_ratio(1, 3, &v));
	assert_int_equal(v, 333);
	assert_true(milli_ratio(2, 3, &v));
	assert_int_equal(v, 666);
	/* n * 1000 overflows 64 bits; the 128-bit product does not. */
	assert_true(milli_ratio(UINT64_MAX, UINT64_MAX, &v));
	assert_int_equal(v, 1000);
	assert_true(milli_ratio(UINT64_MAX / 2, UINT64_MAX, &v));
	assert_int_equal(v, 499);
	/* A quotient past u64 saturates. */
	assert_true(milli_ratio(UINT64_MAX, 1, &v));
	assert_int_equal(v, UINT64_MAX);
	assert_true(milli_ratio(UINT64_MAX / 1000 + 1, 1, &v));
	assert_int_equal(v, UINT64_MAX);
	assert_true(milli_ratio(UINT64_MAX / 1000, 1, &v));
	assert_int_equal(v, (UINT64_MAX / 1000) * 1000);
	assert_true(milli_ratio(0, 7, &v));
	assert_int_equal(v, 0);
}

static void test_evidence__milli_ratio_evidence(void **state)
{
	(void)state;
	assert_gap(milli_ratio_ev(5, 0), EV_GAP_UNAVAILABLE);
	assert_recorded(milli_ratio_ev(3, 2), 1500);
	assert_gap(ev_u64__milli_ratio(ev_u64__gap(EV_GAP_UNSUPPORTED),
				       ev_u64__gap(EV_GAP_PERMISSION_DENIED)),
		   EV_GAP_UNSUPPORTED);
	assert_gap(ev_u64__milli_ratio(ev_u64__recorded(1), ev_u64__gap(EV_GAP_PERMISSION_DENIED)),
		   EV_GAP_PERMISSION_DENIED);
	assert_gap(ev_u64__milli_ratio(ev_u64__recorded(1), ev_u64__recorded(0)),
		   EV_GAP_UNAVAILABLE);
	assert_recorded(ev_u64__milli_ratio(ev_u64__recorded(7), ev_u64__recorded(7)), 1000);
}

static void fill_sample(struct counter_sample *s, uint64_t base, enum ev_source src)
{
	s->cycles = sev_u64__recorded(base + 2000, src);
	s->instructions = sev_u64__recorded(base + 1000, src);
	s->cache_references = sev_u64__recorded(base + 400, src);
	s->cache_misses = sev_u64__recorded(base + 100, src);
	s->branch_instructions = sev_u64__recorded(base + 800, src);
	s->branch_misses = sev_u64__recorded(base + 8, src);
	s->stalled_cycles_frontend = sev_u64__recorded(base + 50, src);
	s->stalled_cycles_backend = sev_u64__recorded(base + 60, src);
	s->stalled_cycles_memory = sev_u64__gap(EV_SRC_PERF_EVENT_OPEN, EV_GAP_UNSUPPORTED);
}

static void test_evidence__counter_set_ratios(void **state)
{
	struct counter_sample a = { 0 }, b = { 0 };
	struct counter_set cs;

	(void)state;
	fill_sample(&b, 0, EV_SRC_PERF_EVENT_OPEN);
	a.cycles = sev_u64__recorded(1000, EV_SRC_PERF_EVENT_OPEN);
	a.instructions = sev_u64__recorded(1000, EV_SRC_PERF_EVENT_OPEN);
	a.cache_references = sev_u64__recorded(0, EV_SRC_PERF_EVENT_OPEN);
	a.cache_misses = sev_u64__recorded(0, EV_SRC_PERF_EVENT_OPEN);
	a.branch_instructions = sev_u64__recorded(0, EV_SRC_PERF_EVENT_OPEN);
	a.branch_misses = sev_u64__recorded(0, EV_SRC_PERF_EVENT_OPEN);
	a.stalled_cycles_frontend = sev_u64__recorded(0, EV_SRC_PERF_EVENT_OPEN);
	a.stalled_cycles_backend = sev_u64__recorded(0, EV_SRC_PERF_EVENT_OPEN);
	a.stalled_cycles_memory = sev_u64__gap(EV_SRC_PERF_EVENT_OPEN, EV_GAP_UNSUPPORTED);
	counter_set__between(&cs, &a, &b);
	assert_recorded(cs.cycles.ev, 1000);
	assert_recorded(cs.instructions.ev, 0);
	/* instructions delta 0 → CPI denominator zero → unavailable. */
	assert_gap(cs.cpi_milli, EV_GAP_UNAVAILABLE);
	assert_recorded(cs.cache_miss_ratio_milli, 250);
	assert_recorded(cs.branch_miss_ratio_milli, 10);
	assert_gap(cs.stalled_cycles_memory.ev, EV_GAP_UNSUPPORTED);

	b.instructions = sev_u64__recorded(1000 + 1500, EV_SRC_PERF_EVENT_OPEN);
	counter_set__between(&cs, &a, &b);
	assert_recorded(cs.cpi_milli, 666);
	/* A gapped numerator gaps the ratio with its reason. */
	b.cache_misses = sev_u64__gap(EV_SRC_PERF_EVENT_OPEN, EV_GAP_PERMISSION_DENIED);
	counter_set__between(&cs, &a, &b);
	assert_gap(cs.cache_miss_ratio_milli, EV_GAP_PERMISSION_DENIED);
	assert_int_equal(cs.cache_misses.source, EV_SRC_PERF_EVENT_OPEN);
}

static void test_evidence__counter_set_all_gapped(void **state)
{
	struct counter_set cs;

	(void)state;
	counter_set__all_gapped(&cs, EV_SRC_PERF_EVENT_OPEN, EV_GAP_UNSUPPORTED);
	assert_gap(cs.cycles.ev, EV_GAP_UNSUPPORTED);
	assert_gap(cs.branch_misses.ev, EV_GAP_UNSUPPORTED);
	assert_gap(cs.cpi_milli, EV_GAP_UNSUPPORTED);
	counter_set__all_gapped(&cs, EV_SRC_PERF_EVENT_OPEN, EV_GAP_PERMISSION_DENIED);
	assert_gap(cs.instructions.ev, EV_GAP_PERMISSION_DENIED);
	/* Memory stalls have no generic perf event: unsupported whatever the reason. */
	assert_gap(cs.stalled_cycles_memory.ev, EV_GAP_UNSUPPORTED);
	assert_int_equal(cs.stalled_cycles_memory.source, EV_SRC_PERF_EVENT_OPEN);
}

static void test_evidence__scheduler_between(void **state)
{
	struct scheduler_sample a, b;
	struct scheduler_evidence ev;

	(void)state;
	a.voluntary_context_switches = sev_u64__recorded(10, EV_SRC_PROC_PID_SCHED);
	a.involuntary_context_switches = sev_u64__recorded(5, EV_SRC_PROC_PID_SCHED);
	a.total_context_switches = sev_u64__recorded(15, EV_SRC_PROC_PID_SCHED);
	a.cpu_migrations = sev_u64__recorded(UINT64_MAX - 1, EV_SRC_PROC_PID_SCHED);
	a.runqueue_delay_ns = sev_u64__recorded(1000, EV_SRC_PROC_PID_SCHEDSTAT);
	a.timeslices = sev_u64__gap(EV_SRC_PROC_PID_SCHEDSTAT, EV_GAP_UNSUPPORTED);
	b = a;
	b.voluntary_context_switches = sev_u64__recorded(13, EV_SRC_BPF_TRACEPOINT);
	b.involuntary_context_switches = sev_u64__recorded(4, EV_SRC_PROC_PID_SCHED);
	b.cpu_migrations = sev_u64__recorded(UINT64_MAX, EV_SRC_PROC_PID_SCHED);
	b.runqueue_delay_ns = sev_u64__gap(EV_SRC_BPF_TRACEPOINT, EV_GAP_PERMISSION_DENIED);
	b.timeslices = sev_u64__recorded(7, EV_SRC_PROC_PID_SCHEDSTAT);
	scheduler_evidence__between(&ev, &a, &b);
	assert_recorded(ev.voluntary_context_switches.ev, 3);
	assert_int_equal(ev.voluntary_context_switches.source, EV_SRC_BPF_TRACEPOINT);
	assert_recorded(ev.involuntary_context_switches.ev, 0);
	assert_recorded(ev.total_context_switches.ev, 0);
	assert_recorded(ev.cpu_migrations.ev, 1);
	assert_gap(ev.scheduler_delay_ns.ev, EV_GAP_PERMISSION_DENIED);
	assert_int_equal(ev.scheduler_delay_ns.source, EV_SRC_BPF_TRACEPOINT);
	assert_gap(ev.timeslices.ev, EV_GAP_UNSUPPORTED);

	scheduler_evidence__all_gapped(&ev, EV_SRC_BPF_TRACEPOINT, EV_GAP_COLLECTOR_DISABLED);
	assert_gap(ev.timeslices.ev, EV_GAP_COLLECTOR_DISABLED);
	assert_int_equal(ev.cpu_migrations.source, EV_SRC_BPF_TRACEPOINT);
}

static void test_evidence__utilization_exited_and_joined(void **state)
{
	/* Unsorted on purpose: the join must not depend on census order. */
	struct thread_cpu first_t[] = { { 30, 500 }, { 10, 1000 }, { 20, 2000 }, { 40, 9 } };
	struct thread_cpu last_t[] = { { 50, 7777 }, { 10, 4000 }, { 30, 400 }, { 60, 1 } };
	struct thread_census first = { .elapsed_ns = 0, .threads = first_t, .nr_threads = 4 };
	struct thread_census last = { .elapsed_ns = 4000, .threads = last_t, .nr_threads = 4 };
	struct cpu_frequency_sample f = { 1, 100, 200, 150, 2 };
	struct utilization_opts o = {
		.first = &first,
		.last = &last,
		.samples_retained = 2,
		.dropped_samples = 3,
		.wall_ns = 4000,
		.logical_cpus = 2,
		.frequency_samples = &f,
		.nr_frequency_samples = 1,
		.dropped_frequency_samples = 5,
		.frequency_availability = { .recorded = true, .value = EV_SRC_SYSFS_CPU },
	};
	struct utilization_evidence u;

	(void)state;
	assert_int_equal(utilization__compute(&u, &o), 0);
	/* 10 and 30 alive at both ends; 20, 40 exited; 50, 60 joined. */
	assert_int_equal(u.nr_threads, 2);
	assert_int_equal(u.threads[0].thread_id, 10);
	assert_int_equal(u.threads[0].cpu_time_ns, 3000);
	assert_recorded(u.threads[0].utilization_milli, 750);
	assert_int_equal(u.threads[1].thread_id, 30);
	/* cpu time going backwards (tid reuse) saturates at zero. */
	assert_int_equal(u.threads[1].cpu_time_ns, 0);
	assert_int_equal(u.exited_threads, 2);
	assert_int_equal(u.joined_threads, 2);
	assert_int_equal(u.total_thread_cpu_ns, 3000);
	assert_recorded(u.effective_parallelism_milli, 750);
	assert_recorded(u.capacity_utilization_milli, 375);
	assert_int_equal(u.samples_retained, 2);
	assert_int_equal(u.dropped_samples, 3);
	assert_int_equal(u.nr_frequency_samples, 1);
	assert_int_equal(u.frequency_samples[0].mean_khz, 150);
	assert_int_equal(u.dropped_frequency_samples, 5);
	assert_true(u.frequency_availability.recorded);
	utilization__free(&u);
}

static void test_evidence__utilization_edges(void **state)
{
	struct thread_cpu t0[] = { { 1, 0 } };
	struct thread_cpu t1[] = { { 1, UINT64_MAX } };
	struct thread_census a = { .threads = t0, .nr_threads = 1 };
	struct thread_census b = { .threads = t1, .nr_threads = 1 };
	struct utilization_opts o = { .first = &a, .last = &b, .wall_ns = 0, .logical_cpus = 4 };
	struct utilization_evidence u;

	(void)state;
	/* Zero wall time: every ratio is the gap, never a division by zero. */
	assert_int_equal(utilization__compute(&u, &o), 0);
	assert_int_equal(u.total_thread_cpu_ns, UINT64_MAX);
	assert_gap(u.effective_parallelism_milli, EV_GAP_UNAVAILABLE);
	assert_gap(u.capacity_utilization_milli, EV_GAP_UNAVAILABLE);
	assert_gap(u.threads[0].utilization_milli, EV_GAP_UNAVAILABLE);
	utilization__free(&u);

	/* 128-bit capacity: wall * cpus beyond u64 still divides exactly. */
	o.wall_ns = UINT64_MAX;
	o.logical_cpus = 4;
	assert_int_equal(utilization__compute(&u, &o), 0);
	assert_recorded(u.capacity_utilization_milli, 250);
	assert_recorded(u.effective_parallelism_milli, 1000);
	utilization__free(&u);

	/* Zero CPUs: capacity is zero → gap. */
	o.logical_cpus = 0;
	assert_int_equal(utilization__compute(&u, &o), 0);
	assert_gap(u.capacity_utilization_milli, EV_GAP_UNAVAILABLE);
	utilization__free(&u);

	/* No census: empty evidence with gaps, counts preserved. */
	o.first = NULL;
	o.dropped_samples = 9;
	assert_int_equal(utilization__compute(&u, &o), 0);
	assert_int_equal(u.nr_threads, 0);
	assert_int_equal(u.total_thread_cpu_ns, 0);
	assert_int_equal(u.dropped_samples, 9);
	assert_gap(u.effective_parallelism_milli, EV_GAP_UNAVAILABLE);
	utilization__free(&u);
}

static void test_evidence__utilization_sum_saturates(void **state)
{
	struct thread_cpu t0[] = { { 1, 0 }, { 2, 0 } };
	struct thread_cpu t1[] = { { 1, UINT64_MAX }, { 2, UINT64_MAX } };
	struct thread_census a = { .threads = t0, .nr_threads = 2 };
	struct thread_census b = { .threads = t1, .nr_threads = 2 };
	struct utilization_opts o = { .first = &a, .last = &b, .wall_ns = 1, .logical_cpus = 1 };
	struct utilization_evidence u;

	(void)state;
	assert_int_equal(utilization__compute(&u, &o), 0);
	assert_int_equal(u.total_thread_cpu_ns, UINT64_MAX);
	assert_recorded(u.effective_parallelism_milli, UINT64_MAX);
	utilization__free(&u);
}

static struct span_record span(uint64_t id, const char *metric, uint64_t tid, bool hw,
			       struct ev_u64 cb, struct ev_u64 ce, struct ev_u64 ib,
			       struct ev_u64 ie)
{
	struct span_record s;

	memset(&s, 0, sizeof(s));
	s.span_id = id;
	snprintf(s.metric_id, sizeof(s.metric_id), "%s", metric);
	s.thread_id = tid;
	s.hardware_recorded = hw;
	s.hardware_reason = EV_GAP_UNSUPPORTED;
	s.hardware.cycles_begin = cb;
	s.hardware.cycles_end = ce;
	s.hardware.instructions_begin = ib;
	s.hardware.instructions_end = ie;
	return s;
}

static void test_evidence__span_hardware_deltas(void **state)
{
	struct span_hardware hw = {
		.cycles_begin = ev_u64__recorded(100),
		.cycles_end = ev_u64__recorded(50),
		.instructions_begin = ev_u64__gap(EV_GAP_PERMISSION_DENIED),
		.instructions_end = ev_u64__recorded(5),
	};

	(void)state;
	assert_recorded(span_hardware__cycles(&hw), 0);
	assert_gap(span_hardware__instructions(&hw), EV_GAP_PERMISSION_DENIED);
}

/* From the in-kernel totals: exact sums, whatever happened to the records. */
static void test_evidence__span_aggregation_from_totals(void **state)
{
	struct span_hw_total t[] = {
		{ "parse", 7, true, 1000000, 999998, 3000000, 1000000 },
		{ "parse", 5, true, 10, 0, 0, 0 }, /* every reading a gap */
		{ "decode", 7, true, 4, 4, UINT64_MAX, 8 },
	};
	struct span_hw_aggregation agg;

	(void)state;
	assert_int_equal(span_hw_aggregation__from_totals(&agg, t, 3), 0);
	assert_int_equal(agg.span_count, 1000014);
	assert_int_equal(agg.run.span_count, 1000002);
	assert_int_equal(agg.run.cycles, UINT64_MAX); /* saturates, never wraps */
	assert_int_equal(agg.nr_stages, 2);
	assert_string_equal(agg.stages[1].metric_id, "parse");
	assert_int_equal(agg.stages[1].sum.span_count, 999998);
	assert_recorded(agg.stages[1].sum.cpi_milli, 3000);
	assert_int_equal(agg.nr_threads, 2);
	assert_int_equal(agg.threads[0].thread_id, 5);
	assert_int_equal(agg.threads[0].sum.span_count, 0);
	assert_gap(agg.threads[0].sum.cpi_milli, EV_GAP_UNAVAILABLE);
	span_hw_aggregation__free(&agg);

	/* No counters at all: the calls are counted, nothing joins. */
	t[0].hardware = t[1].hardware = t[2].hardware = false;
	assert_int_equal(span_hw_aggregation__from_totals(&agg, t, 3), 0);
	assert_int_equal(agg.span_count, 1000014);
	assert_int_equal(agg.nr_stages + agg.nr_threads, 0);
	assert_int_equal(agg.run.span_count, 0);
	span_hw_aggregation__free(&agg);
}

static void test_evidence__span_aggregation_by_stage_and_thread(void **state)
{
	struct ev_u64 g = ev_u64__gap(EV_GAP_UNSUPPORTED);
	struct span_record s[] = {
		span(1, "parse", 7, true, ev_u64__recorded(0), ev_u64__recorded(300),
		     ev_u64__recorded(0), ev_u64__recorded(100)),
		span(2, "decode", 7, true, ev_u64__recorded(10), ev_u64__recorded(110), g, g),
		span(3, "parse", 5, true, ev_u64__recorded(0), ev_u64__recorded(100),
		     ev_u64__recorded(0), ev_u64__recorded(100)),
		/* Hardware recorded but both deltas gapped: creates the entry, counts nothing. */
		span(4, "zeta", 5, true, g, g, g, g),
		/* No hardware at all: joins nothing. */
		span(5, "omega", 9, false, g, g, g, g),
	};
	struct span_hw_aggregation agg;

	(void)state;
	assert_int_equal(span_hw_aggregation__compute(&agg, s, 5), 0);
	assert_int_equal(agg.span_count, 5);
	assert_int_equal(agg.run.span_count, 3);
	assert_int_equal(agg.run.cycles, 500);
	assert_int_equal(agg.run.instructions, 200);
	assert_recorded(agg.run.cpi_milli, 2500);

	assert_int_equal(agg.nr_stages, 3);
	assert_string_equal(agg.stages[0].metric_id, "decode");
	assert_int_equal(agg.stages[0].sum.span_count, 1);
	assert_int_equal(agg.stages[0].sum.cycles, 100);
	assert_int_equal(agg.stages[0].sum.instructions, 0);
	assert_gap(agg.stages[0].sum.cpi_milli, EV_GAP_UNAVAILABLE);
	assert_string_equal(agg.stages[1].metric_id, "parse");
	assert_int_equal(agg.stages[1].sum.span_count, 2);
	assert_int_equal(agg.stages[1].sum.cycles, 400);
	assert_recorded(agg.stages[1].sum.cpi_milli, 2000);
	assert_string_equal(agg.stages[2].metric_id, "zeta");
	assert_int_equal(agg.stages[2].sum.span_count, 0);

	assert_int_equal(agg.nr_threads, 2);
	assert_int_equal(agg.threads[0].thread_id, 5);
	assert_int_equal(agg.threads[0].sum.span_count, 1);
	assert_int_equal(agg.threads[0].sum.cycles, 100);
	assert_int_equal(agg.threads[1].thread_id, 7);
	assert_int_equal(agg.threads[1].sum.span_count, 2);
	assert_int_equal(agg.threads[1].sum.cycles, 400);
	assert_recorded(agg.threads[1].sum.cpi_milli, 4000);
	span_hw_aggregation__free(&agg);

	assert_int_equal(span_hw_aggregation__compute(&agg, NULL, 0), 0);
	assert_int_equal(agg.nr_stages, 0);
	assert_gap(agg.run.cpi_milli, EV_GAP_UNAVAILABLE);
	span_hw_aggregation__free(&agg);
}

static void test_evidence__capability_detail(void **state)
{
	struct collector_capability c;

	(void)state;
	collector_capability__set(&c, COLLECTOR_HARDWARE_COUNTERS, AVAIL_UNSUPPORTED, "no %s",
				  "PMU");
	assert_string_equal(c.detail, "no PMU");
	collector_capability__set(&c, COLLECTOR_CPU_TOPOLOGY, AVAIL_AVAILABLE, "ignored %d", 1);
	assert_string_equal(c.detail, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evidence__zero_init_is_a_gap),
		cmocka_unit_test(test_evidence__names_match_schema),
		cmocka_unit_test(test_evidence__source_parse_keyhog),
		cmocka_unit_test(test_evidence__delta_saturates),
		cmocka_unit_test(test_evidence__delta_gap_propagation_all_combinations),
		cmocka_unit_test(test_evidence__milli_ratio_128bit),
		cmocka_unit_test(test_evidence__milli_ratio_evidence),
		cmocka_unit_test(test_evidence__counter_set_ratios),
		cmocka_unit_test(test_evidence__counter_set_all_gapped),
		cmocka_unit_test(test_evidence__scheduler_between),
		cmocka_unit_test(test_evidence__utilization_exited_and_joined),
		cmocka_unit_test(test_evidence__utilization_edges),
		cmocka_unit_test(test_evidence__utilization_sum_saturates),
		cmocka_unit_test(test_evidence__span_hardware_deltas),
		cmocka_unit_test(test_evidence__span_aggregation_by_stage_and_thread),
		cmocka_unit_test(test_evidence__span_aggregation_from_totals),
		cmocka_unit_test(test_evidence__capability_detail),
	};

	return cmocka_run_group_tests_name("evidence", tests, NULL, NULL);
}

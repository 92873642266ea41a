// SPDX-License-Identifier: MIT
/*
 * Pure evidence arithmetic, with the keyhog-profile seed's semantics:
 * saturating deltas, gap propagation (end first, end's source), 128-bit
 * milli ratios, utilization from two censuses and span CPI aggregation.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/evidence.h"

static const char *const gap_names[EV_GAP__COUNT] = {
	[EV_GAP_UNAVAILABLE] = "unavailable",
	[EV_GAP_LEGACY_V1_NOT_RECORDED] = "legacy-v1-not-recorded",
	[EV_GAP_COLLECTOR_DISABLED] = "collector-disabled",
	[EV_GAP_PERMISSION_DENIED] = "permission-denied",
	[EV_GAP_UNSUPPORTED] = "unsupported",
};

static const char *const source_names[EV_SRC__COUNT] = {
	[EV_SRC_PERF_EVENT_OPEN] = "perf-event-open",
	[EV_SRC_PROC_SELF_SCHED] = "proc-self-sched",
	[EV_SRC_PROC_SELF_SCHEDSTAT] = "proc-self-schedstat",
	[EV_SRC_PROC_SELF_TASK_STAT] = "proc-self-task-stat",
	[EV_SRC_PROC_SELF_STATUS] = "proc-self-status",
	[EV_SRC_PROC_SELF_STAT] = "proc-self-stat",
	[EV_SRC_PROC_SELF_IO] = "proc-self-io",
	[EV_SRC_PROC_PRESSURE] = "proc-pressure",
	[EV_SRC_SYSFS_CPU] = "sysfs-cpu",
	[EV_SRC_SYSFS_CGROUP] = "sysfs-cgroup",
	[EV_SRC_SYSFS_THERMAL] = "sysfs-thermal",
	[EV_SRC_SYSTEM_CALL] = "system-call",
	[EV_SRC_WINDOWS_API] = "windows-api",
	[EV_SRC_MAC_OS_API] = "mac-os-api",
	[EV_SRC_BPF_TRACEPOINT] = "bpf-tracepoint",
	[EV_SRC_BPF_UPROBE] = "bpf-uprobe",
	[EV_SRC_PROC_PID_SCHED] = "proc-pid-sched",
	[EV_SRC_PROC_PID_SCHEDSTAT] = "proc-pid-schedstat",
	[EV_SRC_PROC_PID_TASK_STAT] = "proc-pid-task-stat",
	[EV_SRC_PROC_PID_EXE] = "proc-pid-exe",
	[EV_SRC_PROC_PID_CMDLINE] = "proc-pid-cmdline",
};

static const char *const collector_names[COLLECTOR__COUNT] = {
	[COLLECTOR_PROCESS_RESOURCES] = "process-resources",
	[COLLECTOR_HARDWARE_COUNTERS] = "hardware-counters",
	[COLLECTOR_SCHEDULER_ACTIVITY] = "scheduler-activity",
	[COLLECTOR_THREAD_UTILIZATION] = "thread-utilization",
	[COLLECTOR_CPU_TOPOLOGY] = "cpu-topology",
	[COLLECTOR_ALLOCATION_TRACKING] = "allocation-tracking",
	[COLLECTOR_SYSTEM_IO] = "system-io",
	[COLLECTOR_PRESSURE_THERMAL] = "pressure-thermal",
	[COLLECTOR_SPAN_PROBES] = "span-probes",
};

static const char *const availability_names[AVAIL__COUNT] = {
	[AVAIL_AVAILABLE] = "available",
	[AVAIL_DISABLED] = "disabled",
	[AVAIL_PERMISSION_DENIED] = "permission-denied",
	[AVAIL_UNAVAILABLE] = "unavailable",
	[AVAIL_UNSUPPORTED] = "unsupported",
};

/* Out-of-range values name themselves as such rather than index past a table. */
#define NAME_OR_INVALID(table, idx) \
	((unsigned int)(idx) < sizeof(table) / sizeof((table)[0]) ? (table)[idx] : "invalid")

const char *ev_gap__name(enum ev_gap gap)
{
	return NAME_OR_INVALID(gap_names, gap);
}

const char *ev_source__name(enum ev_source source)
{
	return NAME_OR_INVALID(source_names, source);
}

bool ev_source__parse(const char *name, enum ev_source *out)
{
	int i;

	for (i = 0; i < EV_SRC__COUNT; i++)
		if (!strcmp(name, source_names[i])) {
			*out = (enum ev_source)i;
			return true;
		}
	return false;
}

enum ev_source ev_source__keyhog(enum ev_source source)
{
	/*
	 * khbpf's own sources reached user space through system calls: bpf(2)
	 * map reads and iterator reads for bpf-*, read(2) and readlink(2) of
	 * another process's /proc files for proc-pid-* (the crate's proc-self-*
	 * name the profiled process reading its own).
	 */
	return source < EV_SRC_BPF_TRACEPOINT ? source : EV_SRC_SYSTEM_CALL;
}

const char *collector_id__name(enum collector_id id)
{
	return NAME_OR_INVALID(collector_names, id);
}

const char *collector_availability__name(enum collector_availability av)
{
	return NAME_OR_INVALID(availability_names, av);
}

enum ev_gap collector_availability__gap(enum collector_availability av)
{
	switch (av) {
	case AVAIL_DISABLED:
		return EV_GAP_COLLECTOR_DISABLED;
	case AVAIL_PERMISSION_DENIED:
		return EV_GAP_PERMISSION_DENIED;
	case AVAIL_UNSUPPORTED:
		return EV_GAP_UNSUPPORTED;
	default:
		return EV_GAP_UNAVAILABLE;
	}
}

struct ev_u64 ev_u64__recorded(uint64_t value)
{
	return (struct ev_u64){ .recorded = true, .value = value };
}

struct ev_u64 ev_u64__gap(enum ev_gap reason)
{
	return (struct ev_u64){ .recorded = false, .reason = reason };
}

struct ev_u32 ev_u32__recorded(uint32_t value)
{
	return (struct ev_u32){ .recorded = true, .value = value };
}

struct ev_u32 ev_u32__gap(enum ev_gap reason)
{
	return (struct ev_u32){ .recorded = false, .reason = reason };
}

struct sev_u64 sev_u64__recorded(uint64_t value, enum ev_source source)
{
	return (struct sev_u64){ .ev = ev_u64__recorded(value), .source = source };
}

struct sev_u64 sev_u64__gap(enum ev_source source, enum ev_gap reason)
{
	return (struct sev_u64){ .ev = ev_u64__gap(reason), .source = source };
}

struct sev_u32 sev_u32__recorded(uint32_t value, enum ev_source source)
{
	return (struct sev_u32){ .ev = ev_u32__recorded(value), .source = source };
}

struct sev_u32 sev_u32__gap(enum ev_source source, enum ev_gap reason)
{
	return (struct sev_u32){ .ev = ev_u32__gap(reason), .source = source };
}

struct ev_u64 ev_u64__delta(struct ev_u64 end, struct ev_u64 start)
{
	if (!end.recorded)
		return ev_u64__gap(end.reason);
	if (!start.recorded)
		return ev_u64__gap(start.reason);
	return ev_u64__recorded(end.value > start.value ? end.value - start.value : 0);
}

struct sev_u64 sev_u64__delta(struct sev_u64 end, struct sev_u64 start)
{
	return (struct sev_u64){ .ev = ev_u64__delta(end.ev, start.ev), .source = end.source };
}

bool milli_ratio(uint64_t numerator, uint64_t denominator, uint64_t *out)
{
	unsigned __int128 q;

	if (denominator == 0)
		return false;
	q = (unsigned __int128)numerator * 1000u / denominator;
	*out = q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
	return true;
}

struct ev_u64 milli_ratio_ev(uint64_t numerator, uint64_t denominator)
{
	uint64_t v;

	if (!milli_ratio(numerator, denominator, &v))
		return ev_u64__gap(EV_GAP_UNAVAILABLE);
	return ev_u64__recorded(v);
}

struct ev_u64 ev_u64__milli_ratio(struct ev_u64 numerator, struct ev_u64 denominator)
{
	if (!numerator.recorded)
		return ev_u64__gap(numerator.reason);
	if (!denominator.recorded)
		return ev_u64__gap(denominator.reason);
	return milli_ratio_ev(numerator.value, denominator.value);
}

void collector_capability__set(struct collector_capability *cap, enum collector_id id,
			       enum collector_availability av, const char *fmt, ...)
{
	va_list ap;

	cap->collector = id;
	cap->availability = av;
	cap->detail[0] = '\0';
	if (av == AVAIL_AVAILABLE || !fmt)
		return;
	va_start(ap, fmt);
	vsnprintf(cap->detail, sizeof(cap->detail), fmt, ap);
	va_end(ap);
}

void counter_set__between(struct counter_set *out, const struct counter_sample *start,
			  const struct counter_sample *end)
{
	out->cycles = sev_u64__delta(end->cycles, start->cycles);
	out->instructions = sev_u64__delta(end->instructions, start->instructions);
	out->cache_references = sev_u64__delta(end->cache_references, start->cache_references);
	out->cache_misses = sev_u64__delta(end->cache_misses, start->cache_misses);
	out->branch_instructions =
		sev_u64__delta(end->branch_instructions, start->branch_instructions);
	out->branch_misses = sev_u64__delta(end->branch_misses, start->branch_misses);
	out->stalled_cycles_frontend =
		sev_u64__delta(end->stalled_cycles_frontend, start->stalled_cycles_frontend);
	out->stalled_cycles_backend =
		sev_u64__delta(end->stalled_cycles_backend, start->stalled_cycles_backend);
	out->stalled_cycles_memory =
		sev_u64__delta(end->stalled_cycles_memory, start->stalled_cycles_memory);
	out->cpi_milli = ev_u64__milli_ratio(out->cycles.ev, out->instructions.ev);
	out->cache_miss_ratio_milli =
		ev_u64__milli_ratio(out->cache_misses.ev, out->cache_references.ev);
	out->branch_miss_ratio_milli =
		ev_u64__milli_ratio(out->branch_misses.ev, out->branch_instructions.ev);
}

void counter_set__all_gapped(struct counter_set *out, enum ev_source source, enum ev_gap reason)
{
	struct sev_u64 g = sev_u64__gap(source, reason);

	out->cycles = g;
	out->instructions = g;
	out->cache_references = g;
	out->cache_misses = g;
	out->branch_instructions = g;
	out->branch_misses = g;
	out->stalled_cycles_frontend = g;
	out->stalled_cycles_backend = g;
	out->stalled_cycles_memory = sev_u64__gap(EV_SRC_PERF_EVENT_OPEN, EV_GAP_UNSUPPORTED);
	out->cpi_milli = ev_u64__gap(reason);
	out->cache_miss_ratio_milli = ev_u64__gap(reason);
	out->branch_miss_ratio_milli = ev_u64__gap(reason);
}

void scheduler_evidence__between(struct scheduler_evidence *out,
				 const struct scheduler_sample *start,
				 const struct scheduler_sample *end)
{
	out->voluntary_context_switches =
		sev_u64__delta(end->voluntary_context_switches, start->voluntary_context_switches);
	out->involuntary_context_switches = sev_u64__delta(end->involuntary_context_switches,
							   start->involuntary_context_switches);
	out->total_context_switches =
		sev_u64__delta(end->total_context_switches, start->total_context_switches);
	out->cpu_migrations = sev_u64__delta(end->cpu_migrations, start->cpu_migrations);
	out->scheduler_delay_ns = sev_u64__delta(end->runqueue_delay_ns, start->runqueue_delay_ns);
	out->timeslices = sev_u64__delta(end->timeslices, start->timeslices);
}

void scheduler_evidence__all_gapped(struct scheduler_evidence *out, enum ev_source source,
				    enum ev_gap reason)
{
	struct sev_u64 g = sev_u64__gap(source, reason);

	out->voluntary_context_switches = g;
	out->involuntary_context_switches = g;
	out->total_context_switches = g;
	out->cpu_migrations = g;
	out->scheduler_delay_ns = g;
	out->timeslices = g;
}

static int thread_cpu__cmp(const void *a, const void *b)
{
	const struct thread_cpu *x = a, *y = b;

	return x->thread_id < y->thread_id ? -1 : x->thread_id > y->thread_id;
}

/* Sorted copy of a census, so the join below is a linear merge. */
static struct thread_cpu *census_sorted(const struct thread_census *c)
{
	struct thread_cpu *v;

	v = calloc(c->nr_threads ? c->nr_threads : 1, sizeof(*v));
	if (!v)
		return NULL;
	if (c->nr_threads)
		memcpy(v, c->threads, c->nr_threads * sizeof(*v));
	qsort(v, c->nr_threads, sizeof(*v), thread_cpu__cmp);
	return v;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int utilization__compute(struct utilization_evidence *out, const struct utilization_opts *opts)
{
	struct thread_cpu *first = NULL, *last = NULL;
	size_t i = 0, j = 0, nf, nl;
	unsigned __int128 capacity, q;
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->wall_ns = opts->wall_ns;
	out->logical_cpus = opts->logical_cpus;
	out->samples_retained = opts->samples_retained;
	out->dropped_samples = opts->dropped_samples;
	out->dropped_frequency_samples = opts->dropped_frequency_samples;
	out->frequency_availability = opts->frequency_availability;
	out->effective_parallelism_milli = ev_u64__gap(EV_GAP_UNAVAILABLE);
	out->capacity_utilization_milli = ev_u64__gap(EV_GAP_UNAVAILABLE);

	if (opts->nr_frequency_samples) {
		size_t n = opts->nr_frequency_samples;

		out->frequency_samples = calloc(n, sizeof(*out->frequency_samples));
		if (!out->frequency_samples)
			return -ENOMEM;
		memcpy(out->frequency_samples, opts->frequency_samples,
		       n * sizeof(*out->frequency_samples));
		out->nr_frequency_samples = n;
	}

	if (!opts->first || !opts->last)
		return 0;

	nf = opts->first->nr_threads;
	nl = opts->last->nr_threads;
	first = census_sorted(opts->first);
	last = census_sorted(opts->last);
	out->threads = calloc(nf ? nf : 1, sizeof(*out->threads));
	if (!first || !last || !out->threads) {
		err = -ENOMEM;
		goto cleanup;
	}

	while (i < nf || j < nl) {
		if (j == nl || (i < nf && first[i].thread_id < last[j].thread_id)) {
			out->exited_threads++;
			i++;
		} else if (i == nf || last[j].thread_id < first[i].thread_id) {
			out->joined_threads++;
			j++;
		} else {
			struct thread_utilization *t = &out->threads[out->nr_threads++];
			uint64_t a = first[i].cpu_time_ns, b = last[j].cpu_time_ns;

			t->thread_id = first[i].thread_id;
			t->cpu_time_ns = b > a ? b - a : 0;
			t->utilization_milli = milli_ratio_ev(t->cpu_time_ns, opts->wall_ns);
			out->total_thread_cpu_ns =
				sat_add(out->total_thread_cpu_ns, t->cpu_time_ns);
			i++;
			j++;
		}
	}

	out->effective_parallelism_milli = milli_ratio_ev(out->total_thread_cpu_ns, opts->wall_ns);
	capacity = (unsigned __int128)opts->wall_ns * opts->logical_cpus;
	if (capacity) {
		q = (unsigned __int128)out->total_thread_cpu_ns * 1000u / capacity;
		out->capacity_utilization_milli =
			ev_u64__recorded(q > UINT64_MAX ? UINT64_MAX : (uint64_t)q);
	}

cleanup:
	free(last);
	free(first);
	if (err)
		utilization__free(out);
	return err;
}

void utilization__free(struct utilization_evidence *u)
{
	if (!u)
		return;
	free(u->threads);
	free(u->frequency_samples);
	u->threads = NULL;
	u->frequency_samples = NULL;
	u->nr_threads = 0;
	u->nr_frequency_samples = 0;
}

struct ev_u64 span_hardware__cycles(const struct span_hardware *hw)
{
	return ev_u64__delta(hw->cycles_end, hw->cycles_begin);
}

struct ev_u64 span_hardware__instructions(const struct span_hardware *hw)
{
	return ev_u64__delta(hw->instructions_end, hw->instructions_begin);
}

static void span_hw_sum__finish(struct span_hw_sum *sum)
{
	sum->cpi_milli = milli_ratio_ev(sum->cycles, sum->instructions);
}

static void span_hw_sum__add_total(struct span_hw_sum *sum, const struct span_hw_total *t)
{
	sum->span_count = sat_add(sum->span_count, t->with_counters);
	sum->cycles = sat_add(sum->cycles, t->cycles);
	sum->instructions = sat_add(sum->instructions, t->instructions);
}

static int total_ptr_by_metric(const void *a, const void *b)
{
	const struct span_hw_total *x = *(const struct span_hw_total *const *)a;
	const struct span_hw_total *y = *(const struct span_hw_total *const *)b;

	return strcmp(x->metric_id, y->metric_id);
}

static int total_ptr_by_thread(const void *a, const void *b)
{
	const struct span_hw_total *x = *(const struct span_hw_total *const *)a;
	const struct span_hw_total *y = *(const struct span_hw_total *const *)b;

	return x->thread_id < y->thread_id ? -1 : x->thread_id > y->thread_id;
}

int span_hw_aggregation__from_totals(struct span_hw_aggregation *out,
				     const struct span_hw_total *totals, size_t nr)
{
	const struct span_hw_total **v = NULL;
	size_t i, n = 0;
	int err = 0;

	memset(out, 0, sizeof(*out));
	v = calloc(nr ? nr : 1, sizeof(*v));
	out->stages = calloc(nr ? nr : 1, sizeof(*out->stages));
	out->threads = calloc(nr ? nr : 1, sizeof(*out->threads));
	if (!v || !out->stages || !out->threads) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < nr; i++) {
		out->span_count = sat_add(out->span_count, totals[i].calls);
		if (totals[i].hardware)
			v[n++] = &totals[i];
	}
	for (i = 0; i < n; i++)
		span_hw_sum__add_total(&out->run, v[i]);
	span_hw_sum__finish(&out->run);

	qsort(v, n, sizeof(*v), total_ptr_by_metric);
	for (i = 0; i < n; i++) {
		struct stage_hardware *st;

		if (!out->nr_stages ||
		    strcmp(out->stages[out->nr_stages - 1].metric_id, v[i]->metric_id)) {
			st = &out->stages[out->nr_stages++];
			snprintf(st->metric_id, sizeof(st->metric_id), "%s", v[i]->metric_id);
		}
		span_hw_sum__add_total(&out->stages[out->nr_stages - 1].sum, v[i]);
	}
	for (i = 0; i < out->nr_stages; i++)
		span_hw_sum__finish(&out->stages[i].sum);

	qsort(v, n, sizeof(*v), total_ptr_by_thread);
	for (i = 0; i < n; i++) {
		if (!out->nr_threads ||
		    out->threads[out->nr_threads - 1].thread_id != v[i]->thread_id)
			out->threads[out->nr_threads++].thread_id = v[i]->thread_id;
		span_hw_sum__add_total(&out->threads[out->nr_threads - 1].sum, v[i]);
	}
	for (i = 0; i < out->nr_threads; i++)
		span_hw_sum__finish(&out->threads[i].sum);

cleanup:
	free(v);
	if (err)
		span_hw_aggregation__free(out);
	return err;
}

int span_hw_aggregation__compute(struct span_hw_aggregation *out, const struct span_record *spans,
				 size_t nr_spans)
{
	struct span_hw_total *t = calloc(nr_spans ? nr_spans : 1, sizeof(*t));
	size_t i;
	int err;

	if (!t) {
		memset(out, 0, sizeof(*out));
		return -ENOMEM;
	}
	for (i = 0; i < nr_spans; i++) {
		struct ev_u64 cycles = span_hardware__cycles(&spans[i].hardware);
		struct ev_u64 instructions = span_hardware__instructions(&spans[i].hardware);

		t[i].metric_id = spans[i].metric_id;
		t[i].thread_id = spans[i].thread_id;
		t[i].calls = 1;
		t[i].hardware = spans[i].hardware_recorded;
		if (!t[i].hardware)
			continue;
		t[i].with_counters = cycles.recorded || instructions.recorded;
		t[i].cycles = cycles.recorded ? cycles.value : 0;
		t[i].instructions = instructions.recorded ? instructions.value : 0;
	}
	err = span_hw_aggregation__from_totals(out, t, nr_spans);
	free(t);
	return err;
}

void span_hw_aggregation__free(struct span_hw_aggregation *agg)
{
	if (!agg)
		return;
	free(agg->stages);
	free(agg->threads);
	agg->stages = NULL;
	agg->threads = NULL;
	agg->nr_stages = 0;
	agg->nr_threads = 0;
}

uint64_t blocked_evidence__total(const struct blocked_evidence *b)
{
	uint64_t t = 0;
	size_t i;

	for (i = 0; i < BLOCK_CAUSES; i++)
		t += b->ns[i];
	return t;
}

const char *blocked_cause__name(size_t i)
{
	static const char *const names[BLOCK_CAUSES] = { "lock", "io", "sleep", "fault", "other" };

	return i < BLOCK_CAUSES ? names[i] : NULL;
}

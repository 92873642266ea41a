// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "document/blockcause.h"
#include "document/evjson.h"

/* Length of the well-formed UTF-8 sequence at s (Unicode 15, table 3-7), or 0. */
static size_t utf8_seq_len(const unsigned char *s, size_t left)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	/* Second-byte ranges exclude overlongs, surrogates and > U+10FFFF. */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	for (i = 1; i < n; i++) {
		if (i >= left)
			return 0;
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
			return 0;
	}
	return n;
}

/* Bytes of the maximal subpart of an ill-formed sequence starting at s (>= 1). */
static size_t utf8_maximal_subpart(const unsigned char *s, size_t left)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 1;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	for (i = 1; i < n && i < left; i++) {
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
			break;
	}
	return i;
}

char *evjson__utf8_sanitize(const char *bytes, size_t len)
{
	const unsigned char *s = (const unsigned char *)bytes;
	size_t i = 0, o = 0;
	char *out;

	/* Worst case: every byte becomes the 3-byte U+FFFD. */
	out = malloc(len * 3 + 1);
	if (!out)
		return NULL;
	while (i < len && s[i]) {
		size_t n = utf8_seq_len(s + i, len - i);

		if (n) {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
			continue;
		}
		i += utf8_maximal_subpart(s + i, len - i);
		memcpy(out + o, "\xef\xbf\xbd", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}

struct json_object *evjson__string_len(const char *bytes, size_t len)
{
	struct json_object *obj;
	char *clean;

	clean = evjson__utf8_sanitize(bytes ? bytes : "", bytes ? len : 0);
	if (!clean)
		return NULL;
	obj = json_object_new_string(clean);
	free(clean);
	return obj;
}

struct json_object *evjson__string(const char *bytes)
{
	return evjson__string_len(bytes, bytes ? strlen(bytes) : 0);
}

struct json_object *evjson__u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

int evjson__add(struct json_object *obj, const char *key, struct json_object *value)
{
	if (!obj || !value) {
		json_object_put(value);
		return -ENOMEM;
	}
	if (json_object_object_add(obj, key, value)) {
		json_object_put(value);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Builders below collect -ENOMEM in *err and return NULL at the end when
 * anything failed, so callers check once.
 */
static void add(struct json_object *obj, const char *key, struct json_object *value, int *err)
{
	if (evjson__add(obj, key, value))
		*err = -ENOMEM;
}

static struct json_object *finish(struct json_object *obj, int err)
{
	if (err || !obj) {
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

static struct json_object *version_object(int *err)
{
	struct json_object *obj = json_object_new_object();

	add(obj, "version", evjson__u64(EV_COMPONENT_VERSION), err);
	return obj;
}

struct json_object *evjson__gap(enum ev_gap reason)
{
	struct json_object *obj = json_object_new_object();
	int err = 0;

	add(obj, "status", json_object_new_string("unavailable"), &err);
	add(obj, "reason", json_object_new_string(ev_gap__name(reason)), &err);
	return finish(obj, err);
}

struct json_object *evjson__recorded(struct json_object *value)
{
	struct json_object *obj;
	int err = 0;

	if (!value)
		return NULL;
	obj = json_object_new_object();
	add(obj, "status", json_object_new_string("recorded"), &err);
	add(obj, "value", value, &err);
	return finish(obj, err);
}

struct json_object *evjson__ev_u64(struct ev_u64 ev)
{
	return ev.recorded ? evjson__recorded(evjson__u64(ev.value)) : evjson__gap(ev.reason);
}

struct json_object *evjson__partial_u64(uint64_t value, uint64_t covered_calls, uint64_t calls,
					enum ev_gap missing)
{
	struct json_object *obj = json_object_new_object();
	int err = 0;

	add(obj, "status", json_object_new_string("partial"), &err);
	add(obj, "value", evjson__u64(value), &err);
	add(obj, "covered_calls", evjson__u64(covered_calls), &err);
	add(obj, "calls", evjson__u64(calls), &err);
	add(obj, "reason", json_object_new_string(ev_gap__name(missing)), &err);
	return finish(obj, err);
}

struct json_object *evjson__ev_u32(struct ev_u32 ev)
{
	return ev.recorded ? evjson__recorded(evjson__u64(ev.value)) : evjson__gap(ev.reason);
}

struct json_object *evjson__ev_source(struct ev_source_ev ev)
{
	return ev.recorded ? evjson__recorded(json_object_new_string(ev_source__name(ev.value))) :
			     evjson__gap(ev.reason);
}

static struct json_object *sourced(struct json_object *value, enum ev_source source)
{
	struct json_object *obj = json_object_new_object();
	int err = 0;

	add(obj, "value", value, &err);
	add(obj, "source", json_object_new_string(ev_source__name(source)), &err);
	return finish(obj, err);
}

struct json_object *evjson__sev_u64(struct sev_u64 sev)
{
	return sourced(evjson__ev_u64(sev.ev), sev.source);
}

struct json_object *evjson__sev_u32(struct sev_u32 sev)
{
	return sourced(evjson__ev_u32(sev.ev), sev.source);
}

struct json_object *evjson__capability(const struct collector_capability *cap)
{
	int err = 0;
	struct json_object *obj = version_object(&err);

	add(obj, "collector", json_object_new_string(collector_id__name(cap->collector)), &err);
	add(obj, "availability",
	    json_object_new_string(collector_availability__name(cap->availability)), &err);
	/* The schema wants a non-empty detail whenever a collector is not available. */
	if (cap->availability != AVAIL_AVAILABLE)
		add(obj, "detail",
		    evjson__string(cap->detail[0] ? cap->detail : "no detail recorded"), &err);
	return finish(obj, err);
}

struct json_object *evjson__counter_set(const struct counter_set *c)
{
	int err = 0;
	struct json_object *obj = version_object(&err);

	add(obj, "cycles", evjson__sev_u64(c->cycles), &err);
	add(obj, "instructions", evjson__sev_u64(c->instructions), &err);
	add(obj, "cache_references", evjson__sev_u64(c->cache_references), &err);
	add(obj, "cache_misses", evjson__sev_u64(c->cache_misses), &err);
	add(obj, "branch_instructions", evjson__sev_u64(c->branch_instructions), &err);
	add(obj, "branch_misses", evjson__sev_u64(c->branch_misses), &err);
	add(obj, "stalled_cycles_frontend", evjson__sev_u64(c->stalled_cycles_frontend), &err);
	add(obj, "stalled_cycles_backend", evjson__sev_u64(c->stalled_cycles_backend), &err);
	add(obj, "stalled_cycles_memory", evjson__sev_u64(c->stalled_cycles_memory), &err);
	add(obj, "cpi_milli", evjson__ev_u64(c->cpi_milli), &err);
	add(obj, "cache_miss_ratio_milli", evjson__ev_u64(c->cache_miss_ratio_milli), &err);
	add(obj, "branch_miss_ratio_milli", evjson__ev_u64(c->branch_miss_ratio_milli), &err);
	return finish(obj, err);
}

struct json_object *evjson__scheduler(const struct scheduler_evidence *s)
{
	int err = 0;
	struct json_object *obj = version_object(&err);

	add(obj, "voluntary_context_switches", evjson__sev_u64(s->voluntary_context_switches),
	    &err);
	add(obj, "involuntary_context_switches", evjson__sev_u64(s->involuntary_context_switches),
	    &err);
	add(obj, "total_context_switches", evjson__sev_u64(s->total_context_switches), &err);
	add(obj, "cpu_migrations", evjson__sev_u64(s->cpu_migrations), &err);
	add(obj, "scheduler_delay_ns", evjson__sev_u64(s->scheduler_delay_ns), &err);
	add(obj, "timeslices", evjson__sev_u64(s->timeslices), &err);
	return finish(obj, err);
}

struct json_object *evjson__utilization(const struct utilization_evidence *u)
{
	int err = 0;
	struct json_object *obj = version_object(&err);
	struct json_object *threads = json_object_new_array_ext((int)u->nr_threads);
	struct json_object *freq = json_object_new_array_ext((int)u->nr_frequency_samples);
	size_t i;

	add(obj, "wall_ns", evjson__u64(u->wall_ns), &err);
	add(obj, "logical_cpus", evjson__u64(u->logical_cpus), &err);
	add(obj, "total_thread_cpu_ns", evjson__u64(u->total_thread_cpu_ns), &err);
	add(obj, "effective_parallelism_milli", evjson__ev_u64(u->effective_parallelism_milli),
	    &err);
	add(obj, "capacity_utilization_milli", evjson__ev_u64(u->capacity_utilization_milli), &err);
	for (i = 0; threads && i < u->nr_threads; i++) {
		const struct thread_utilization *t = &u->threads[i];
		struct json_object *to = version_object(&err);

		add(to, "thread_id", evjson__u64(t->thread_id), &err);
		add(to, "cpu_time_ns", evjson__u64(t->cpu_time_ns), &err);
		add(to, "utilization_milli", evjson__ev_u64(t->utilization_milli), &err);
		if (!to || json_object_array_add(threads, to))
			err = -ENOMEM;
	}
	add(obj, "threads", threads, &err);
	add(obj, "exited_threads", evjson__u64(u->exited_threads), &err);
	add(obj, "joined_threads", evjson__u64(u->joined_threads), &err);
	add(obj, "samples_retained", evjson__u64(u->samples_retained), &err);
	add(obj, "dropped_samples", evjson__u64(u->dropped_samples), &err);
	for (i = 0; freq && i < u->nr_frequency_samples; i++) {
		const struct cpu_frequency_sample *f = &u->frequency_samples[i];
		struct json_object *fo = version_object(&err);

		add(fo, "elapsed_ns", evjson__u64(f->elapsed_ns), &err);
		add(fo, "min_khz", evjson__u64(f->min_khz), &err);
		add(fo, "max_khz", evjson__u64(f->max_khz), &err);
		add(fo, "mean_khz", evjson__u64(f->mean_khz), &err);
		add(fo, "cpu_count", evjson__u64(f->cpu_count), &err);
		if (!fo || json_object_array_add(freq, fo))
			err = -ENOMEM;
	}
	add(obj, "frequency_samples", freq, &err);
	add(obj, "frequency_availability", evjson__ev_source(u->frequency_availability), &err);
	add(obj, "dropped_frequency_samples", evjson__u64(u->dropped_frequency_samples), &err);
	add(obj, "all_threads_cpu_ns", evjson__ev_u64(u->all_threads_cpu_ns), &err);
	add(obj, "all_threads_parallelism_milli", evjson__ev_u64(u->all_threads_parallelism_milli),
	    &err);
	add(obj, "dropped_threads", evjson__u64(u->dropped_threads), &err);
	return finish(obj, err);
}

struct json_object *evjson__topology(const struct topology_evidence *t)
{
	int err = 0;
	struct json_object *obj = version_object(&err);

	add(obj, "logical_cpus", evjson__u64(t->logical_cpus), &err);
	add(obj, "physical_cores", evjson__sev_u32(t->physical_cores), &err);
	add(obj, "packages", evjson__sev_u32(t->packages), &err);
	add(obj, "numa_nodes", evjson__sev_u32(t->numa_nodes), &err);
	add(obj, "affinity_cpus", evjson__sev_u32(t->affinity_cpus), &err);
	add(obj, "cpu_quota_milli", evjson__sev_u64(t->cpu_quota_milli), &err);
	return finish(obj, err);
}

static void add_hw_sum(struct json_object *obj, const struct span_hw_sum *sum, int *err)
{
	add(obj, "cycles", evjson__u64(sum->cycles), err);
	add(obj, "instructions", evjson__u64(sum->instructions), err);
	add(obj, "cpi_milli", evjson__ev_u64(sum->cpi_milli), err);
}

struct json_object *evjson__span_hw_aggregation(const struct span_hw_aggregation *agg)
{
	int err = 0;
	struct json_object *obj = version_object(&err);
	struct json_object *run = version_object(&err);
	struct json_object *stages = json_object_new_array_ext((int)agg->nr_stages);
	struct json_object *threads = json_object_new_array_ext((int)agg->nr_threads);
	size_t i;

	add(run, "span_count", evjson__u64(agg->span_count), &err);
	add(run, "spans_with_counters", evjson__u64(agg->run.span_count), &err);
	add_hw_sum(run, &agg->run, &err);
	add(obj, "run", run, &err);
	for (i = 0; stages && i < agg->nr_stages; i++) {
		struct json_object *so = version_object(&err);

		add(so, "metric_id", evjson__string(agg->stages[i].metric_id), &err);
		add(so, "span_count", evjson__u64(agg->stages[i].sum.span_count), &err);
		add_hw_sum(so, &agg->stages[i].sum, &err);
		if (!so || json_object_array_add(stages, so))
			err = -ENOMEM;
	}
	add(obj, "stages", stages, &err);
	for (i = 0; threads && i < agg->nr_threads; i++) {
		struct json_object *to = version_object(&err);

		add(to, "thread_id", evjson__u64(agg->threads[i].thread_id), &err);
		add(to, "span_count", evjson__u64(agg->threads[i].sum.span_count), &err);
		add_hw_sum(to, &agg->threads[i].sum, &err);
		if (!to || json_object_array_add(threads, to))
			err = -ENOMEM;
	}
	add(obj, "threads", threads, &err);
	return finish(obj, err);
}

struct json_object *evjson__key(const struct doc_key *k)
{
	int err = 0;
	struct json_object *obj = json_object_new_object();

	add(obj, "text", evjson__string(k->text), &err);
	add(obj, "kind", json_object_new_string(k->is_str ? "str" : "int"), &err);
	add(obj, "truncated", json_object_new_boolean(k->truncated), &err);
	add(obj, "other", json_object_new_boolean(k->other), &err);
	return finish(obj, err);
}

struct json_object *evjson__span_record(const struct span_record *s)
{
	int err = 0;
	struct json_object *obj = version_object(&err);
	struct json_object *hw = NULL;

	add(obj, "span_id", evjson__u64(s->span_id), &err);
	add(obj, "parent_span_id", evjson__ev_u64(s->parent_span_id), &err);
	add(obj, "metric_id", evjson__string(s->metric_id), &err);
	if (s->key.text)
		add(obj, "key", evjson__key(&s->key), &err);
	add(obj, "start_ns", evjson__u64(s->start_ns), &err);
	add(obj, "inclusive_ns", evjson__u64(s->inclusive_ns), &err);
	add(obj, "exclusive_ns", evjson__u64(s->exclusive_ns), &err);
	add(obj, "thread_id", evjson__u64(s->thread_id), &err);
	add(obj, "task_id", evjson__ev_u64(s->task_id), &err);
	add(obj, "worker_id", evjson__ev_u64(s->worker_id), &err);
	add(obj, "work_origin", json_object_new_string("root"), &err);
	if (s->hardware_recorded) {
		hw = version_object(&err);
		add(hw, "cycles_begin", evjson__ev_u64(s->hardware.cycles_begin), &err);
		add(hw, "cycles_end", evjson__ev_u64(s->hardware.cycles_end), &err);
		add(hw, "instructions_begin", evjson__ev_u64(s->hardware.instructions_begin), &err);
		add(hw, "instructions_end", evjson__ev_u64(s->hardware.instructions_end), &err);
		add(obj, "hardware", evjson__recorded(finish(hw, err)), &err);
	} else {
		add(obj, "hardware", evjson__gap(s->hardware_reason), &err);
	}
	if (s->has_ledger)
		add(obj, "scheduler", evjson__span_ledger(&s->ledger), &err);
	return finish(obj, err);
}

static struct json_object *waker_json(const struct waker_row *w, int *err)
{
	struct json_object *obj = json_object_new_object();

	add(obj, "kind", json_object_new_string(blockcause__waker_kind(w->kind) ?: "unknown"), err);
	if (w->kind == WAKER_THREAD) {
		add(obj, "tid", evjson__u64(w->tid), err);
		add(obj, "pid", evjson__u64(w->pid), err);
		add(obj, "comm", evjson__string(w->comm), err);
	}
	add(obj, "ns", evjson__u64(w->ns), err);
	add(obj, "count", evjson__u64(w->count), err);
	if (w->has_last_wakeup)
		add(obj, "last_wakeup_ns", evjson__u64(w->last_wakeup_ns), err);
	return obj;
}

struct json_object *evjson__blocked(const struct blocked_evidence *b)
{
	struct json_object *obj, *by, *c, *wk, *other;
	int err = 0;
	size_t i;

	if (!b->recorded)
		return evjson__gap(b->reason);
	obj = version_object(&err);
	add(obj, "blocked_ns", evjson__u64(blocked_evidence__total(b)), &err);
	by = json_object_new_array();
	for (i = 0; by && i < BLOCK_CAUSES; i++) {
		if (!b->ns[i] && !b->count[i])
			continue;
		c = json_object_new_object();
		add(c, "cause", json_object_new_string(blockcause__name((uint32_t)i)), &err);
		add(c, "ns", evjson__u64(b->ns[i]), &err);
		add(c, "count", evjson__u64(b->count[i]), &err);
		if (json_object_array_add(by, c))
			err = -ENOMEM;
	}
	add(obj, "blocked_by", by, &err);
	add(obj, "unattributed_ns", json_object_new_int64(b->unattributed_ns), &err);
	if (b->has_unseen)
		add(obj, "offcpu_unseen", evjson__u64(b->offcpu_unseen), &err);
	if (b->has_wakers) {
		wk = json_object_new_array();
		for (i = 0; wk && i < b->nr_wakers; i++)
			if (json_object_array_add(wk, waker_json(&b->wakers[i], &err)))
				err = -ENOMEM;
		add(obj, "wakers", wk, &err);
		other = json_object_new_object();
		add(other, "ns", evjson__u64(b->other_wakers_ns), &err);
		add(other, "count", evjson__u64(b->other_wakers_count), &err);
		add(obj, "other_wakers", other, &err);
		add(obj, "without_waker_ns", evjson__u64(b->without_waker_ns), &err);
	}
	return evjson__recorded(finish(obj, err));
}

struct json_object *evjson__span_ledger(const struct span_ledger *l)
{
	int err = 0;
	struct json_object *obj = version_object(&err);

	add(obj, "source", json_object_new_string(ev_source__name(EV_SRC_BPF_UPROBE)), &err);
	add(obj, "on_cpu_ns",
	    l->on_cpu_partial ? evjson__partial_u64(l->on_cpu_ns.value, l->on_cpu_covered_calls,
						    l->on_cpu_calls, EV_GAP_UNAVAILABLE) :
				evjson__ev_u64(l->on_cpu_ns),
	    &err);
	add(obj, "run_delay_ns", evjson__u64(l->run_delay_ns), &err);
	add(obj, "voluntary_context_switches", evjson__u64(l->voluntary_switches), &err);
	add(obj, "involuntary_context_switches", evjson__u64(l->involuntary_switches), &err);
	add(obj, "cpu_migrations", evjson__u64(l->migrations), &err);
	add(obj, "blocked", evjson__blocked(&l->blocked), &err);
	return finish(obj, err);
}

struct json_object *evjson__hardware_run(const struct hardware_run *h)
{
	int err = 0;
	struct json_object *obj = version_object(&err);

	add(obj, "counters", evjson__counter_set(&h->counters), &err);
	add(obj, "scheduler", evjson__scheduler(&h->scheduler), &err);
	add(obj, "utilization", evjson__utilization(&h->utilization), &err);
	add(obj, "topology", evjson__topology(&h->topology), &err);
	if (h->span_aggregation_recorded)
		add(obj, "span_aggregation",
		    evjson__recorded(evjson__span_hw_aggregation(&h->span_aggregation)), &err);
	else
		add(obj, "span_aggregation", evjson__gap(h->span_aggregation_reason), &err);
	return finish(obj, err);
}

const char *evjson__to_string(struct json_object *obj)
{
	return json_object_to_json_string_ext(obj, EVJSON_TO_STRING_FLAGS);
}

/* keyhog-profile's PressureEvidence fields first, then khbpf's other lines and totals. */
static struct json_object *pressure_sample(const struct pressure_sample *s)
{
	static const struct {
		const char *key;
		enum psi_resource r;
		enum psi_kind k;
		bool total;
	} f[] = {
		{ "cpu_some_avg10_milli", PSI_CPU, PSI_SOME, false },
		{ "cpu_full_avg10_milli", PSI_CPU, PSI_FULL, false },
		{ "memory_some_avg10_milli", PSI_MEMORY, PSI_SOME, false },
		{ "io_some_avg10_milli", PSI_IO, PSI_SOME, false },
		{ "memory_full_avg10_milli", PSI_MEMORY, PSI_FULL, false },
		{ "io_full_avg10_milli", PSI_IO, PSI_FULL, false },
		{ "cpu_some_total_us", PSI_CPU, PSI_SOME, true },
		{ "cpu_full_total_us", PSI_CPU, PSI_FULL, true },
		{ "memory_some_total_us", PSI_MEMORY, PSI_SOME, true },
		{ "memory_full_total_us", PSI_MEMORY, PSI_FULL, true },
		{ "io_some_total_us", PSI_IO, PSI_SOME, true },
		{ "io_full_total_us", PSI_IO, PSI_FULL, true },
	};
	int err = 0;
	struct json_object *obj = version_object(&err);
	size_t i;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		add(obj, f[i].key,
		    evjson__sev_u64(f[i].total ? s->total_us[f[i].r][f[i].k] :
						 s->avg10_milli[f[i].r][f[i].k]),
		    &err);
	return finish(obj, err);
}

struct json_object *evjson__pressure_window(const struct pressure_window *w)
{
	int err = 0, r, k;
	struct json_object *obj = version_object(&err), *stall = version_object(&err);
	char key[32];

	add(obj, "path", evjson__string(w->path), &err);
	add(obj, "start", pressure_sample(&w->start), &err);
	add(obj, "end", pressure_sample(&w->end), &err);
	for (r = 0; r < PSI__RESOURCES; r++) {
		for (k = 0; k < PSI__KINDS; k++) {
			snprintf(key, sizeof(key), "%s_%s_us", psi_resource__name(r),
				 psi_kind__name(k));
			add(stall, key, evjson__sev_u64(pressure_window__stall(w, r, k)), &err);
		}
	}
	add(obj, "stall", stall, &err);
	if (w->detail[0])
		add(obj, "detail", evjson__string(w->detail), &err);
	return finish(obj, err);
}

static struct json_object *thermal_sample(const struct thermal_sample *s)
{
	int err = 0;
	struct json_object *obj = version_object(&err);

	add(obj, "max_zone_millicelsius", evjson__sev_u64(s->max_zone_millicelsius), &err);
	add(obj, "throttle_events", evjson__sev_u64(s->throttle_events), &err);
	add(obj, "package_throttle_events", evjson__sev_u64(s->package_throttle_events), &err);
	return finish(obj, err);
}

struct json_object *evjson__thermal_window(const struct thermal_window *w)
{
	int err = 0;
	struct json_object *obj = version_object(&err), *throttle = version_object(&err);

	add(obj, "start", thermal_sample(&w->start), &err);
	add(obj, "end", thermal_sample(&w->end), &err);
	add(throttle, "core_events", evjson__sev_u64(thermal_window__core_events(w)), &err);
	add(throttle, "package_events", evjson__sev_u64(thermal_window__package_events(w)), &err);
	add(obj, "throttle", throttle, &err);
	if (w->detail[0])
		add(obj, "detail", evjson__string(w->detail), &err);
	return finish(obj, err);
}

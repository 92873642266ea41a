// SPDX-License-Identifier: MIT
/* The sections of a document into struct report_doc, in document order. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "report/report_loader.h"

static void load_run(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *o, *v;
	bool rec;

	o = loader__member(ld, root, "", "producer", json_type_object, false);
	d->khbpf_version = loader__get_str(ld, o, "producer", "khbpf_version", false);
	d->kernel_release = loader__get_str(ld, o, "producer", "kernel_release", false);

	o = loader__member(ld, root, "", "target", json_type_object, true);
	d->pid = loader__get_u64(ld, o, "target", "pid");
	d->comm = loader__get_str(ld, o, "target", "comm", true);
	d->mode = loader__get_str(ld, o, "target", "mode", false);
	if (o && json_object_object_get_ex(o, "exe", &v)) {
		enum ev_gap reason;

		v = loader__get_ev(ld, o, "target", "exe", &rec, &reason);
		if (v && json_object_is_type(v, json_type_string))
			d->exe = json_object_get_string(v);
	}
	d->exit_reason = EV_GAP_UNAVAILABLE;
	if (o && json_object_object_get_ex(o, "exit", &v)) {
		v = loader__get_ev(ld, o, "target", "exit", &d->exit_recorded, &d->exit_reason);
		if (v) {
			struct json_object *n;

			d->exit_signaled = json_object_object_get_ex(v, "signal", &n);
			if (!d->exit_signaled && !json_object_object_get_ex(v, "code", &n))
				loader__fail(
					ld,
					"target.exit.value: expected {\"code\": N} or {\"signal\": N}");
			else
				loader__u64_of(ld, n, "target.exit.value",
					       d->exit_signaled ? "signal" : "code",
					       &d->exit_value);
		}
	}

	o = loader__member(ld, root, "", "window", json_type_object, true);
	d->start_unix_ns = loader__get_u64(ld, o, "window", "start_unix_ns");
	d->wall_ns = loader__get_u64(ld, o, "window", "wall_ns");
	d->end_reason = loader__get_str(ld, o, "window", "end_reason", false);
}

static void load_collectors(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *arr = loader__member(ld, root, "", "collectors", json_type_array, true);
	size_t i, n = arr ? json_object_array_length(arr) : 0;
	char w[64];

	if (!n)
		return;
	d->collectors = calloc(n, sizeof(*d->collectors));
	if (!d->collectors) {
		loader__nomem(ld);
		return;
	}
	for (i = 0; i < n && !ld->failed; i++) {
		struct json_object *c = json_object_array_get_idx(arr, i);

		snprintf(w, sizeof(w), "collectors[%zu]", i);
		if (!json_object_is_type(c, json_type_object)) {
			loader__fail(ld, "%s: expected an object", w);
			break;
		}
		d->collectors[i].id = loader__get_str(ld, c, w, "collector", true);
		d->collectors[i].availability = loader__get_str(ld, c, w, "availability", true);
		d->collectors[i].detail = loader__get_str(ld, c, w, "detail", false);
		d->nr_collectors++;
	}
}

static void load_hardware(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	const char *w = "hardware.value";
	struct json_object *hw, *u, *arr, *m;
	size_t i, n;
	char wi[96];

	hw = loader__get_ev(ld, root, "", "hardware", &d->hardware_recorded, &d->hardware_reason);
	d->all_threads_cpu_ns = ev_u64__gap(EV_GAP_UNAVAILABLE);
	d->parallelism_milli = ev_u64__gap(EV_GAP_UNAVAILABLE);
	if (!hw)
		return;
	if (!json_object_is_type(hw, json_type_object)) {
		loader__fail(ld, "%s: expected an object", w);
		return;
	}
	loader__get_sched(ld, hw, w, &d->totals);
	u = loader__member(ld, hw, w, "utilization", json_type_object, true);
	if (!u)
		return;
	w = "hardware.value.utilization";
	d->logical_cpus = (uint32_t)loader__get_u64(ld, u, w, "logical_cpus");
	/* khbpf's own additions: every thread seen, exited ones included. */
	if (json_object_object_get_ex(u, "all_threads_cpu_ns", &m))
		d->all_threads_cpu_ns = loader__get_ev_u64(ld, u, w, "all_threads_cpu_ns");
	if (json_object_object_get_ex(u, "all_threads_parallelism_milli", &m))
		d->parallelism_milli =
			loader__get_ev_u64(ld, u, w, "all_threads_parallelism_milli");
	arr = loader__member(ld, u, w, "frequency_samples", json_type_array, true);
	n = arr ? json_object_array_length(arr) : 0;
	if (!n)
		return;
	d->freq = calloc(n, sizeof(*d->freq));
	if (!d->freq) {
		loader__nomem(ld);
		return;
	}
	for (i = 0; i < n && !ld->failed; i++) {
		struct json_object *s = json_object_array_get_idx(arr, i);

		snprintf(wi, sizeof(wi), "%s.frequency_samples[%zu]", w, i);
		d->freq[i].elapsed_ns = loader__get_u64(ld, s, wi, "elapsed_ns");
		d->freq[i].min_khz = loader__get_u64(ld, s, wi, "min_khz");
		d->freq[i].max_khz = loader__get_u64(ld, s, wi, "max_khz");
		d->freq[i].mean_khz = loader__get_u64(ld, s, wi, "mean_khz");
		d->nr_freq++;
	}
}

static void load_thread(struct loader *ld, struct json_object *t, size_t i, void *arg)
{
	struct report_doc *d = ld->doc;
	struct report_thread *th = &d->threads[i];
	char w[64];

	(void)arg;
	snprintf(w, sizeof(w), "threads[%zu]", i);
	if (!json_object_is_type(t, json_type_object)) {
		loader__fail(ld, "%s: expected an object", w);
		return;
	}
	th->listed = true;
	th->tid = loader__get_u64(ld, t, w, "thread_id");
	/* Documents before target sets name no process: the target's. */
	th->pid = json_object_object_get_ex(t, "pid", NULL) ? loader__get_u64(ld, t, w, "pid") :
							      d->pid;
	th->comm = loader__own(ld, loader__get_str(ld, t, w, "comm", true));
	th->exited = loader__get_bool(ld, t, w, "exited", true);
	th->born = loader__get_bool(ld, t, w, "born", false);
	loader__get_sched(ld, t, w, &th->sched);
	th->on_cpu_ns = loader__get_sev_u64(ld, t, w, "on_cpu_ns");
	loader__get_rq(ld, t, w, "bpf_detail", &th->rq);
	if (th->rq.recorded) {
		struct json_object *v =
			loader__member(ld, t, w, "bpf_detail", json_type_object, false);
		char wb[96];

		snprintf(wb, sizeof(wb), "%s.bpf_detail", w);
		v = v ? loader__member(ld, v, wb, "value", json_type_object, false) : NULL;
		snprintf(wb, sizeof(wb), "%s.bpf_detail.value", w);
		loader__get_blocked(ld, v, wb, "blocked", &th->blocked);
	}
	d->nr_threads++;
}

/*
 * processes[i].title.KEY: a SourcedEvidence<string>; NULL for a gap. Shown
 * without its trailing blanks ("postgres: checkpointer "), which ps shows
 * as nothing; NULL when it is only blanks.
 */
static const char *title_read(struct loader *ld, struct json_object *title, const char *w,
			      const char *key)
{
	struct json_object *v;
	enum ev_gap reason;
	const char *s;
	size_t n, len;
	char wt[80], wk[96], *cut;
	bool rec;

	snprintf(wt, sizeof(wt), "%s.title", w);
	v = loader__member(ld, title, wt, key, json_type_object, true);
	if (!v)
		return NULL;
	snprintf(wk, sizeof(wk), "%s.%s", wt, key);
	v = loader__get_ev(ld, v, wk, "value", &rec, &reason);
	if (!v)
		return NULL;
	if (!json_object_is_type(v, json_type_string) || !json_object_get_string_len(v)) {
		loader__fail(ld, "%s.value.value: expected a non-empty string", wk);
		return NULL;
	}
	s = json_object_get_string(v);
	len = n = (size_t)json_object_get_string_len(v);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n == len || !n)
		return n ? s : NULL;
	/* The outline's string, made the cut one: it lives as long as the document. */
	cut = strndup(s, n);
	if (!cut || json_object_set_string_len(v, cut, (int)n) != 1) {
		free(cut);
		loader__nomem(ld);
		return NULL;
	}
	free(cut);
	return json_object_get_string(v);
}

static void load_process(struct loader *ld, struct json_object *o, size_t i)
{
	struct report_process *p = &ld->doc->processes[i];
	struct json_object *v, *n;
	enum ev_gap reason;
	bool rec;
	char w[64];

	snprintf(w, sizeof(w), "processes[%zu]", i);
	if (!json_object_is_type(o, json_type_object)) {
		loader__fail(ld, "%s: expected an object", w);
		return;
	}
	p->pid = loader__get_u64(ld, o, w, "pid");
	p->ppid = loader__get_ev_u64(ld, o, w, "parent_pid");
	p->comm = loader__get_str(ld, o, w, "comm", true);
	v = loader__member(ld, o, w, "exe", json_type_object, true);
	if (v) {
		char we[80];

		snprintf(we, sizeof(we), "%s.exe", w);
		v = loader__get_ev(ld, v, we, "value", &rec, &reason);
		if (v && json_object_is_type(v, json_type_string))
			p->exe = json_object_get_string(v);
	}
	/* Documents before titles have none. */
	v = loader__member(ld, o, w, "title", json_type_object, false);
	if (v) {
		p->title_join = title_read(ld, v, w, "at_join");
		p->title_end = title_read(ld, v, w, "at_end");
	}
	p->start_unix_ns = loader__get_u64(ld, o, w, "start_unix_ns");
	v = loader__get_ev(ld, o, w, "exit", &p->exit_recorded, &reason);
	if (v) {
		p->exit_signaled = json_object_object_get_ex(v, "signal", &n);
		if (!p->exit_signaled && !json_object_object_get_ex(v, "code", &n))
			loader__fail(ld, "%s.exit.value: expected {\"code\": N} or {\"signal\": N}",
				     w);
		else
			loader__u64_of(ld, n, w, p->exit_signaled ? "signal" : "code",
				       &p->exit_value);
	}
	p->joined = loader__get_str(ld, o, w, "joined", true);
	p->born = loader__get_bool(ld, o, w, "born", true);
	p->exited = loader__get_bool(ld, o, w, "exited", true);
	p->left_cgroup = loader__get_bool(ld, o, w, "left_cgroup", true);
	p->threads = loader__get_u64(ld, o, w, "threads");
	loader__get_sched(ld, o, w, &p->sched);
	p->on_cpu_ns = loader__get_sev_u64(ld, o, w, "on_cpu_ns");
}

/* processes and target.set: documents before target sets have neither. */
static void load_processes(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *arr, *t, *set;
	size_t i, n;

	if (json_object_object_get_ex(root, "target", &t) &&
	    json_object_object_get_ex(t, "set", &set))
		d->set_kind = loader__get_str(ld, set, "target.set", "kind", true);
	if (!json_object_object_get_ex(root, "processes", NULL))
		return;
	arr = loader__member(ld, root, "", "processes", json_type_array, true);
	n = arr ? json_object_array_length(arr) : 0;
	if (!n)
		return;
	d->processes = calloc(n, sizeof(*d->processes));
	if (!d->processes) {
		loader__nomem(ld);
		return;
	}
	for (i = 0; i < n && !ld->failed; i++)
		load_process(ld, json_object_array_get_idx(arr, i), i);
	d->nr_processes = n;
}

static void load_threads(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *arr = loader__member(ld, root, "", "threads", json_type_array, true);
	bool streamed = ld->streams[STREAM_THREADS].on;
	size_t i, n;

	if (!arr)
		return;
	n = streamed ? loader__stream_count(ld, STREAM_THREADS) : json_object_array_length(arr);
	if (!n)
		return;
	d->threads = calloc(n, sizeof(*d->threads));
	if (!d->threads) {
		loader__nomem(ld);
		return;
	}
	if (streamed)
		loader__stream_each(ld, STREAM_THREADS, load_thread, NULL);
	for (i = 0; !streamed && i < n && !ld->failed; i++)
		load_thread(ld, json_object_array_get_idx(arr, i), i, NULL);
	d->nr_listed = d->nr_threads;
}

static size_t metric_index(struct loader *ld, const char *id)
{
	struct report_doc *d = ld->doc;
	static const size_t none = (size_t)-1;
	struct report_metric *m;
	size_t i;

	/* Span metrics are few (at most 1024 per run): a linear search. */
	for (i = 0; i < d->nr_metrics; i++)
		if (!strcmp(d->metrics[i].id, id))
			return i;
	m = realloc(d->metrics, (d->nr_metrics + 1) * sizeof(*m));
	if (!m) {
		loader__nomem(ld);
		return none;
	}
	d->metrics = m;
	memset(&m[d->nr_metrics], 0, sizeof(*m));
	m[d->nr_metrics].id = loader__own(ld, id); /* a record's own: may be freed */
	return d->nr_metrics++;
}

/* A span metric's (or key's) totals, histogram and ledger. */
static void load_metric_fields(struct loader *ld, struct json_object *o, const char *w,
			       struct report_metric *m)
{
	struct json_object *l;
	char wh[160];

	m->has_totals = true;
	m->calls = loader__get_u64(ld, o, w, "calls");
	m->inclusive_ns = loader__get_u64(ld, o, w, "inclusive_ns");
	m->exclusive_ns = loader__get_u64(ld, o, w, "exclusive_ns");
	m->unfinished = loader__get_u64(ld, o, w, "unfinished");
	snprintf(wh, sizeof(wh), "%s.histogram", w);
	m->hist = loader__get_buckets(
		ld, loader__member(ld, o, w, "histogram", json_type_array, false), wh, &m->nr_hist);
	l = loader__member(ld, o, w, "scheduler", json_type_object, false);
	if (l) {
		snprintf(wh, sizeof(wh), "%s.scheduler", w);
		m->has_ledger = true;
		m->on_cpu_ns = loader__get_cov_u64(ld, l, wh, "on_cpu_ns", &m->on_cpu_partial,
						   &m->on_cpu_covered, &m->on_cpu_calls);
		m->run_delay_ns = loader__get_u64(ld, l, wh, "run_delay_ns");
		loader__get_blocked(ld, l, wh, "blocked", &m->blocked);
	}
}

static void load_metrics(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *arr =
		loader__member(ld, root, "", "span_metrics", json_type_array, false);
	size_t i, n = arr ? json_object_array_length(arr) : 0;
	char w[64], wh[160];

	for (i = 0; i < n && !ld->failed; i++) {
		struct json_object *o = json_object_array_get_idx(arr, i), *keys;
		struct report_metric *m;
		const char *id;
		size_t k, nk, j;
		char wk[96];

		snprintf(w, sizeof(w), "span_metrics[%zu]", i);
		id = loader__get_str(ld, o, w, "metric_id", true);
		if (!id)
			break;
		k = metric_index(ld, id);
		if (ld->failed)
			break;
		m = &d->metrics[k];
		if (m->has_totals) {
			loader__fail(ld, "%s: metric '%s' is listed twice", w, id);
			break;
		}
		load_metric_fields(ld, o, w, m);
		m->declared_cause = loader__get_str(ld, o, w, "declared_cause", false);
		if (m->declared_cause)
			m->declared_cause_stretches =
				loader__get_u64(ld, o, w, "declared_cause_stretches");
		keys = loader__member(ld, o, w, "keys", json_type_array, false);
		nk = keys ? json_object_array_length(keys) : 0;
		m->keys = nk ? calloc(nk, sizeof(*m->keys)) : NULL;
		if (nk && !m->keys) {
			loader__nomem(ld);
			break;
		}
		for (j = 0; j < nk && !ld->failed; j++) {
			struct json_object *ko = json_object_array_get_idx(keys, j), *key;
			struct report_metric *km = &m->keys[m->nr_keys++];

			snprintf(wk, sizeof(wk), "%s.keys[%zu]", w, j);
			load_metric_fields(ld, ko, wk, km);
			key = loader__member(ld, ko, wk, "key", json_type_object, true);
			snprintf(wh, sizeof(wh), "%s.key", wk);
			km->id = key ? loader__get_str(ld, key, wh, "text", true) : NULL;
			if (!km->id)
				break;
			km->other = loader__get_bool(ld, key, wh, "other", false);
		}
	}
}

static void load_span_hw(struct loader *ld, struct json_object *o, const char *w,
			 struct report_span *s)
{
	struct json_object *v;
	enum ev_gap reason;
	bool recorded;
	char wv[96];

	if (!json_object_object_get_ex(o, "hardware", &v))
		return;
	v = loader__get_ev(ld, o, w, "hardware", &recorded, &reason);
	s->has_hw = true;
	if (!v) {
		s->hw.cycles_begin = ev_u64__gap(reason);
		s->hw.cycles_end = s->hw.cycles_begin;
		s->hw.instructions_begin = s->hw.cycles_begin;
		s->hw.instructions_end = s->hw.cycles_begin;
		return;
	}
	snprintf(wv, sizeof(wv), "%s.hardware.value", w);
	s->hw.cycles_begin = loader__get_ev_u64(ld, v, wv, "cycles_begin");
	s->hw.cycles_end = loader__get_ev_u64(ld, v, wv, "cycles_end");
	s->hw.instructions_begin = loader__get_ev_u64(ld, v, wv, "instructions_begin");
	s->hw.instructions_end = loader__get_ev_u64(ld, v, wv, "instructions_end");
}

/* khbpf's per-span scheduler ledger; optional. */
static void load_ledger(struct loader *ld, struct json_object *o, const char *w,
			struct report_span *s)
{
	struct json_object *l = loader__member(ld, o, w, "scheduler", json_type_object, false);
	char wl[96];

	if (!l)
		return;
	snprintf(wl, sizeof(wl), "%s.scheduler", w);
	s->has_ledger = true;
	s->ledger.on_cpu_ns = loader__get_ev_u64(ld, l, wl, "on_cpu_ns");
	s->ledger.run_delay_ns = loader__get_u64(ld, l, wl, "run_delay_ns");
	s->ledger.voluntary_switches = loader__get_u64(ld, l, wl, "voluntary_context_switches");
	s->ledger.involuntary_switches = loader__get_u64(ld, l, wl, "involuntary_context_switches");
	s->ledger.migrations = loader__get_u64(ld, l, wl, "cpu_migrations");
	if (json_object_object_get_ex(l, "blocked", NULL)) {
		struct report_blocked b;
		int i;

		loader__get_blocked(ld, l, wl, "blocked", &b);
		s->ledger.blocked_recorded = b.recorded;
		for (i = 0; i < BLOCK_CAUSES; i++)
			s->ledger.blocked_ns += b.ns[i];
		if (b.nr_wakers) {
			s->ledger.wakers = b.wakers;
			s->ledger.nr_wakers = b.nr_wakers;
		} else {
			free(b.wakers);
		}
	}
}

static void load_span(struct loader *ld, struct json_object *o, const char *w,
		      struct report_span *s, bool open)
{
	const char *metric;

	if (!json_object_is_type(o, json_type_object)) {
		loader__fail(ld, "%s: expected an object", w);
		return;
	}
	s->open = open;
	s->span_id = loader__get_u64(ld, o, w, "span_id");
	s->parent_span_id = loader__get_ev_u64(ld, o, w, "parent_span_id");
	metric = loader__get_str(ld, o, w, "metric_id", true);
	s->thread_id = loader__get_u64(ld, o, w, "thread_id");
	s->start_ns = loader__get_u64(ld, o, w, "start_ns");
	if (!open) {
		s->inclusive_ns = loader__get_u64(ld, o, w, "inclusive_ns");
		s->exclusive_ns = loader__get_u64(ld, o, w, "exclusive_ns");
		load_span_hw(ld, o, w, s);
		load_ledger(ld, o, w, s);
	}
	if (metric && !ld->failed)
		s->metric = metric_index(ld, metric);
	if (json_object_object_get_ex(o, "key", NULL)) {
		struct json_object *k = loader__member(ld, o, w, "key", json_type_object, true);
		char wk[96];
		const char *text;

		snprintf(wk, sizeof(wk), "%s.key", w);
		text = k ? loader__get_str(ld, k, wk, "text", true) : NULL;
		s->key = text && !ld->failed ? loader__own(ld, text) : NULL;
	}
}

/*
 * A span not kept: its thread, its metric's counts and its mark for the
 * layout, then it is gone.
 */
static void mark_span(struct loader *ld, const struct report_span *s)
{
	struct report_doc *d = ld->doc;
	size_t t;

	if (ld->failed)
		return;
	if (loader__thread_of(d, &ld->threads, s->thread_id, &t)) {
		loader__nomem(ld);
		return;
	}
	if (t > UINT32_MAX) {
		loader__fail(ld, "more than %" PRIu32 " threads", UINT32_MAX);
		return;
	}
	loader__count_span(&d->metrics[s->metric], s->open, s->inclusive_ns, s->exclusive_ns);
	ld->marks[ld->nr_marks++] =
		(struct span_mark){ s->start_ns, s->inclusive_ns, (uint32_t)t, s->open };
	d->nr_spans++;
}

/* One record or open span (w names it), kept or marked. */
static void add_span(struct loader *ld, struct json_object *o, const char *w, bool open)
{
	struct report_doc *d = ld->doc;
	struct report_span s = { 0 };

	if (!ld->span_summary) {
		load_span(ld, o, w, &d->spans[d->nr_spans++], open);
		return;
	}
	load_span(ld, o, w, &s, open);
	mark_span(ld, &s);
	free(s.ledger.wakers);
}

static void load_record(struct loader *ld, struct json_object *o, size_t i, void *arg)
{
	char w[64];

	(void)arg;
	snprintf(w, sizeof(w), "events.spans[%zu]", i);
	add_span(ld, o, w, false);
}

static void load_spans(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *ev, *spans, *open, *v;
	size_t i, n, nopen;
	bool avail = false, streamed;
	char w[64];

	ev = loader__member(ld, root, "", "events", json_type_object, true);
	v = loader__get_ev(ld, ev, "events", "availability", &d->spans_recorded, &d->spans_reason);
	if (v && !json_object_is_type(v, json_type_boolean))
		loader__fail(ld, "events.availability.value: expected true or false");
	else if (v)
		avail = json_object_get_boolean(v);
	d->spans_recorded = d->spans_recorded && avail;
	d->dropped_span_events = loader__get_u64(ld, ev, "events", "dropped_span_events");
	d->sampled_out_events = loader__get_u64(ld, ev, "events", "sampled_out_events");
	spans = loader__member(ld, ev, "events", "spans", json_type_array, true);
	open = loader__member(ld, root, "", "open_spans", json_type_array, false);
	if (ld->failed)
		return;
	streamed = ld->streams[STREAM_SPANS].on;
	n = streamed ? loader__stream_count(ld, STREAM_SPANS) : json_object_array_length(spans);
	nopen = open ? json_object_array_length(open) : 0;
	if (!n && !nopen)
		return;
	if (!ld->span_summary)
		d->spans = calloc(n + nopen, sizeof(*d->spans));
	else
		ld->marks = calloc(n + nopen, sizeof(*ld->marks));
	if (!d->spans && !ld->marks) {
		loader__nomem(ld);
		return;
	}
	if (streamed)
		loader__stream_each(ld, STREAM_SPANS, load_record, NULL);
	for (i = 0; !streamed && i < n && !ld->failed; i++)
		load_record(ld, json_object_array_get_idx(spans, i), i, NULL);
	for (i = 0; i < nopen && !ld->failed; i++) {
		snprintf(w, sizeof(w), "open_spans[%zu]", i);
		add_span(ld, json_object_array_get_idx(open, i), w, true);
		d->nr_open++;
	}
}

static void load_probes(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *arr =
		loader__member(ld, root, "", "span_probes", json_type_array, false);
	size_t i, n = arr ? json_object_array_length(arr) : 0;
	char w[64];

	if (!n)
		return;
	d->failed_probes = calloc(n, sizeof(*d->failed_probes));
	if (!d->failed_probes) {
		loader__nomem(ld);
		return;
	}
	for (i = 0; i < n && !ld->failed; i++) {
		struct json_object *p = json_object_array_get_idx(arr, i);
		struct report_probe *f = &d->failed_probes[d->nr_failed_probes];
		const char *status;

		snprintf(w, sizeof(w), "span_probes[%zu]", i);
		status = loader__get_str(ld, p, w, "status", true);
		d->nr_probes++;
		if (status && !strcmp(status, "attached")) {
			d->nr_probes_attached++;
			continue;
		}
		f->object = loader__get_str(ld, p, w, "object", true);
		f->symbol = loader__get_str(ld, p, w, "symbol", true);
		f->metric_id = loader__get_str(ld, p, w, "metric_id", true);
		f->reason = loader__get_str(ld, p, w, "reason", false);
		d->nr_failed_probes++;
	}
	arr = loader__member(ld, root, "", "span_counters", json_type_object, false);
	d->cycles_event = loader__get_str(ld, arr, "span_counters", "cycles_event", false);
}

static void load_usdt(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *arr =
		loader__member(ld, root, "", "usdt_counts", json_type_array, false);
	size_t i, j, n = arr ? json_object_array_length(arr) : 0;
	char w[64], wp[96];

	if (!n)
		return;
	d->usdt = calloc(n, sizeof(*d->usdt));
	if (!d->usdt) {
		loader__nomem(ld);
		return;
	}
	for (i = 0; i < n && !ld->failed; i++) {
		struct json_object *o = json_object_array_get_idx(arr, i), *procs, *threads;
		struct report_usdt *u = &d->usdt[d->nr_usdt++];

		snprintf(w, sizeof(w), "usdt_counts[%zu]", i);
		u->probe = loader__get_str(ld, o, w, "probe", true);
		u->hits = loader__get_u64(ld, o, w, "hits");
		procs = loader__member(ld, o, w, "processes", json_type_array, true);
		threads = loader__member(ld, o, w, "threads", json_type_array, true);
		u->nr_processes = procs ? json_object_array_length(procs) : 0;
		u->nr_threads = threads ? json_object_array_length(threads) : 0;
		for (j = 0; j < u->nr_processes && !ld->failed; j++) {
			struct json_object *p = json_object_array_get_idx(procs, j);
			uint64_t hits;

			snprintf(wp, sizeof(wp), "%s.processes[%zu]", w, j);
			hits = loader__get_u64(ld, p, wp, "hits");
			if (hits > u->top_pid_hits) {
				u->top_pid_hits = hits;
				u->top_pid = loader__get_u64(ld, p, wp, "pid");
			}
		}
	}
}

static void load_loss(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *loss = loader__member(ld, root, "", "loss", json_type_object, false);
	size_t n = loss ? (size_t)json_object_object_length(loss) : 0;

	if (!n)
		return;
	d->losses = calloc(n, sizeof(*d->losses));
	if (!d->losses) {
		loader__nomem(ld);
		return;
	}
	json_object_object_foreach(loss, key, val) {
		size_t kl = strlen(key);
		struct ev_u64 ev;

		/* Counters are Evidence<u64>; "version" and the bounds (*_max) are not. */
		if (!json_object_is_type(val, json_type_object))
			continue;
		if (kl > 4 && !strcmp(key + kl - 4, "_max"))
			continue;
		ev = loader__get_ev_u64(ld, loss, "loss", key);
		if (!ev.recorded)
			d->nr_losses_unknown++;
		else if (ev.value)
			d->losses[d->nr_losses++] = (struct report_loss){ key, ev.value };
	}
}

void loader__load_sections(struct loader *ld, struct json_object *root)
{
	load_run(ld, root);
	load_collectors(ld, root);
	load_hardware(ld, root);
	loader__get_rq(ld, root, "", "scheduler_detail", &ld->doc->rq);
	if (ld->doc->rq.recorded) {
		struct json_object *v =
			loader__member(ld, root, "", "scheduler_detail", json_type_object, false);

		v = v ? loader__member(ld, v, "scheduler_detail", "value", json_type_object,
				       false) :
			NULL;
		loader__get_blocked(ld, v, "scheduler_detail.value", "blocked", &ld->doc->blocked);
	}
	load_processes(ld, root);
	load_threads(ld, root);
	load_metrics(ld, root);
	load_spans(ld, root);
	load_probes(ld, root);
	load_usdt(ld, root);
	load_loss(ld, root);
}

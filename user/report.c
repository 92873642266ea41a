// SPDX-License-Identifier: MIT
/* Loading a saved evidence document for `khbpf report`; see report.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "jscan.h"
#include "report.h"

/* json-c's default nesting limit is 32; documents nest about 8 deep. */
#define REPORT_JSON_DEPTH 64
/* Room for a document of 1e6 spans at about 1 KiB each. */
#define REPORT_MAX_BYTES (UINT64_C(1) << 31)

/*
 * The arrays that grow with the work (threads, span records, per-thread
 * utilization): read from the text one element at a time, so that a
 * document of 10^5 spans never exists as one json-c tree (about 8 KiB per
 * span record). The tree holds an empty array in their place.
 */
enum stream_id { STREAM_THREADS, STREAM_SPANS, STREAM_UTIL_THREADS, NR_STREAMS };

static const char *const stream_paths[NR_STREAMS] = {
	[STREAM_THREADS] = "threads",
	[STREAM_SPANS] = "events.spans",
	[STREAM_UTIL_THREADS] = "hardware.value.utilization.threads",
};

struct stream {
	bool on;
	struct jrange range; /* the array in the text */
	struct json_object *placeholder; /* its empty stand-in in the tree */
	/* The gaps found in its elements, spliced in where the walk meets it. */
	struct report_gap *gaps;
	size_t nr_gaps;
	uint64_t gap_fields;
};

struct loader {
	struct report_doc *doc;
	char *err;
	size_t errlen;
	int failed; /* the first error's -errno; later ones keep its message */
	const char *text; /* the document, when arrays are streamed */
	struct stream streams[NR_STREAMS];
	bool element_not_json; /* an element does not parse: read it whole for the message */
};

struct gap_walk;
static void walk_element_gaps(struct loader *ld, enum stream_id id, struct json_object *o,
			      size_t idx);
static struct json_object *parse_element(struct loader *ld, const struct jrange *r);

/*
 * Each element of stream id, parsed on its own and freed after fn; its gaps
 * are collected on the way. The number of elements, or 0 after a failure.
 */
static size_t
stream_each(struct loader *ld, enum stream_id id,
	    void (*fn)(struct loader *ld, struct json_object *o, size_t idx, void *arg), void *arg)
{
	struct stream *st = &ld->streams[id];
	struct jrange e;
	size_t pos = 0, n = 0;
	int r;

	while (!ld->failed && (r = jscan__next(ld->text, &st->range, &pos, &e)) == 1) {
		struct json_object *o = parse_element(ld, &e);

		if (!o)
			return 0;
		if (fn)
			fn(ld, o, n, arg);
		walk_element_gaps(ld, id, o, n);
		json_object_put(o);
		n++;
	}
	if (r < 0 && !ld->failed) {
		ld->element_not_json = true;
		ld->failed = -EINVAL;
	}
	return ld->failed ? 0 : n;
}

static size_t stream_count(struct loader *ld, enum stream_id id)
{
	struct stream *st = &ld->streams[id];
	struct jrange e;
	size_t pos = 0, n = 0;
	int r;

	while ((r = jscan__next(ld->text, &st->range, &pos, &e)) == 1)
		n++;
	if (r < 0) {
		ld->element_not_json = true;
		ld->failed = -EINVAL;
		return 0;
	}
	return n;
}

/* A string of a streamed element, which is freed: the document keeps a copy. */
static const char *own(struct loader *ld, const char *str)
{
	struct report_doc *d = ld->doc;
	char **v, *c;

	if (!str || !ld->text)
		return str;
	if (d->nr_owned == d->cap_owned) {
		size_t cap = d->cap_owned ? 2 * d->cap_owned : 64;

		v = realloc(d->owned, cap * sizeof(*v));
		if (!v)
			goto nomem;
		d->owned = v;
		d->cap_owned = cap;
	}
	c = strdup(str);
	if (!c)
		goto nomem;
	d->owned[d->nr_owned++] = c;
	return c;
nomem:
	if (!ld->failed) {
		ld->failed = -ENOMEM;
		snprintf(ld->err, ld->errlen, "out of memory");
	}
	return NULL;
}

static void fail(struct loader *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Messages quote the document's own strings and keys: their control bytes
 * are written as \xNN, so the message stays one line and cannot drive a
 * terminal.
 */
static void fail(struct loader *ld, const char *fmt, ...)
{
	char msg[512];
	size_t i, n = 0;
	va_list ap;

	if (ld->failed)
		return;
	ld->failed = -EPROTO;
	if (!ld->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (i = 0; msg[i]; i++) {
		unsigned char c = (unsigned char)msg[i];
		bool ctrl = c < 0x20 || c == 0x7f;

		if (n + (ctrl ? 4 : 1) >= ld->errlen)
			break;
		if (ctrl)
			n += (size_t)snprintf(ld->err + n, ld->errlen - n, "\\x%02x", c);
		else
			ld->err[n++] = (char)c;
	}
	ld->err[n] = '\0';
}

static const char *type_word(enum json_type t)
{
	switch (t) {
	case json_type_object:
		return "an object";
	case json_type_array:
		return "an array";
	case json_type_string:
		return "a string";
	case json_type_boolean:
		return "true or false";
	default:
		return "an unsigned integer";
	}
}

/* Member key of obj (at path `where`) of the given type; NULL when absent or wrong. */
static struct json_object *member(struct loader *ld, struct json_object *obj, const char *where,
				  const char *key, enum json_type type, bool required)
{
	struct json_object *m;

	if (!obj || ld->failed)
		return NULL;
	if (!json_object_object_get_ex(obj, key, &m) || !m) {
		if (required)
			fail(ld, "%s%s%s is missing", where, *where ? "." : "", key);
		return NULL;
	}
	if (!json_object_is_type(m, type)) {
		fail(ld, "%s%s%s: expected %s", where, *where ? "." : "", key, type_word(type));
		return NULL;
	}
	return m;
}

static bool u64_of(struct loader *ld, struct json_object *o, const char *where, const char *key,
		   uint64_t *out)
{
	/* json-c keeps integers above INT64_MAX as uint64, below zero as int64. */
	if (!json_object_is_type(o, json_type_int) || json_object_get_int64(o) < 0) {
		fail(ld, "%s%s%s: expected an unsigned integer", where, *where ? "." : "", key);
		return false;
	}
	*out = json_object_get_uint64(o);
	return true;
}

static uint64_t get_u64(struct loader *ld, struct json_object *obj, const char *where,
			const char *key)
{
	struct json_object *m;
	uint64_t v = 0;

	if (!obj || ld->failed)
		return 0;
	if (!json_object_object_get_ex(obj, key, &m) || !m) {
		fail(ld, "%s%s%s is missing", where, *where ? "." : "", key);
		return 0;
	}
	u64_of(ld, m, where, key, &v);
	return v;
}

static const char *get_str(struct loader *ld, struct json_object *obj, const char *where,
			   const char *key, bool required)
{
	struct json_object *m = member(ld, obj, where, key, json_type_string, required);

	return m ? json_object_get_string(m) : NULL;
}

static bool get_bool(struct loader *ld, struct json_object *obj, const char *where, const char *key,
		     bool required)
{
	struct json_object *m = member(ld, obj, where, key, json_type_boolean, required);

	return m && json_object_get_boolean(m);
}

static bool parse_gap(const char *s, enum ev_gap *out)
{
	int i;

	for (i = 0; s && i < EV_GAP__COUNT; i++) {
		if (!strcmp(s, ev_gap__name(i))) {
			*out = i;
			return true;
		}
	}
	return false;
}

/*
 * Evidence<T> at obj.key: returns the recorded value's object (NULL for a
 * gap, with *reason set). *present says whether it was recorded.
 */
static struct json_object *get_ev(struct loader *ld, struct json_object *obj, const char *where,
				  const char *key, bool *recorded, enum ev_gap *reason)
{
	struct json_object *ev = member(ld, obj, where, key, json_type_object, true);
	struct json_object *v;
	const char *status;
	char w[256];

	*recorded = false;
	*reason = EV_GAP_UNAVAILABLE;
	if (!ev)
		return NULL;
	snprintf(w, sizeof(w), "%s%s%s", where, *where ? "." : "", key);
	status = get_str(ld, ev, w, "status", true);
	if (!status)
		return NULL;
	if (!strcmp(status, "unavailable")) {
		if (!parse_gap(get_str(ld, ev, w, "reason", true), reason))
			fail(ld, "%s.reason: not a gap reason of the schema", w);
		return NULL;
	}
	if (strcmp(status, "recorded")) {
		fail(ld, "%s.status: expected \"recorded\" or \"unavailable\"", w);
		return NULL;
	}
	if (!json_object_object_get_ex(ev, "value", &v) || !v) {
		fail(ld, "%s.value is missing", w);
		return NULL;
	}
	*recorded = true;
	return v;
}

static struct ev_u64 get_ev_u64(struct loader *ld, struct json_object *obj, const char *where,
				const char *key)
{
	struct ev_u64 ev = { 0 };
	struct json_object *v = get_ev(ld, obj, where, key, &ev.recorded, &ev.reason);
	char w[256];

	if (v) {
		snprintf(w, sizeof(w), "%s%s%s", where, *where ? "." : "", key);
		if (!u64_of(ld, v, w, "value", &ev.value))
			ev.recorded = false;
	}
	return ev;
}

/* SourcedEvidence<u64>: {"value": Evidence<u64>, "source": SOURCE}. */
static struct sev_u64 get_sev_u64(struct loader *ld, struct json_object *obj, const char *where,
				  const char *key)
{
	struct json_object *sev = member(ld, obj, where, key, json_type_object, true);
	struct sev_u64 out = { 0 };
	const char *src;
	char w[256];
	int i;

	if (!sev)
		return out;
	snprintf(w, sizeof(w), "%s%s%s", where, *where ? "." : "", key);
	out.ev = get_ev_u64(ld, sev, w, "value");
	src = get_str(ld, sev, w, "source", true);
	for (i = 0; src && i < EV_SRC__COUNT; i++)
		if (!strcmp(src, ev_source__name(i)))
			break;
	if (src && i == EV_SRC__COUNT)
		fail(ld, "%s.source: '%s' is not a source of the schema", w, src);
	out.source = i < EV_SRC__COUNT ? i : 0;
	return out;
}

static void get_sched(struct loader *ld, struct json_object *obj, const char *where,
		      struct scheduler_evidence *s)
{
	struct json_object *o = member(ld, obj, where, "scheduler", json_type_object, true);
	char w[256];

	snprintf(w, sizeof(w), "%s%sscheduler", where, *where ? "." : "");
	s->voluntary_context_switches = get_sev_u64(ld, o, w, "voluntary_context_switches");
	s->involuntary_context_switches = get_sev_u64(ld, o, w, "involuntary_context_switches");
	s->total_context_switches = get_sev_u64(ld, o, w, "total_context_switches");
	s->cpu_migrations = get_sev_u64(ld, o, w, "cpu_migrations");
	s->scheduler_delay_ns = get_sev_u64(ld, o, w, "scheduler_delay_ns");
	s->timeslices = get_sev_u64(ld, o, w, "timeslices");
}

static struct report_bucket *get_buckets(struct loader *ld, struct json_object *arr,
					 const char *where, size_t *nr)
{
	struct report_bucket *b;
	size_t i, n;
	char w[256];

	*nr = 0;
	if (!arr || ld->failed)
		return NULL;
	n = json_object_array_length(arr);
	if (!n)
		return NULL;
	b = calloc(n, sizeof(*b));
	if (!b) {
		ld->failed = -ENOMEM;
		snprintf(ld->err, ld->errlen, "out of memory");
		return NULL;
	}
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);

		snprintf(w, sizeof(w), "%s[%zu]", where, i);
		if (!json_object_is_type(e, json_type_object)) {
			fail(ld, "%s: expected an object", w);
			break;
		}
		b[i].lower = get_u64(ld, e, w, "lower_bound");
		b[i].upper = get_u64(ld, e, w, "upper_bound");
		b[i].count = get_u64(ld, e, w, "count");
	}
	*nr = n;
	return b;
}

/* scheduler_detail / bpf_detail: Evidence<{runqueue_* ...}>, absent in old documents. */
static void get_rq(struct loader *ld, struct json_object *obj, const char *where, const char *key,
		   struct report_rq *rq)
{
	struct json_object *v, *m;
	char w[256];

	rq->recorded = false;
	rq->reason = EV_GAP_UNAVAILABLE;
	if (!obj || !json_object_object_get_ex(obj, key, &m))
		return;
	v = get_ev(ld, obj, where, key, &rq->recorded, &rq->reason);
	if (!v)
		return;
	snprintf(w, sizeof(w), "%s%s%s.value", where, *where ? "." : "", key);
	if (!json_object_is_type(v, json_type_object)) {
		fail(ld, "%s: expected an object", w);
		rq->recorded = false;
		return;
	}
	rq->wait_ns = get_u64(ld, v, w, "runqueue_wait_ns");
	rq->waits = get_u64(ld, v, w, "runqueue_waits");
	if (json_object_object_get_ex(v, "unbinned_waits", &m))
		u64_of(ld, m, w, "unbinned_waits", &rq->unbinned_waits);
	if (json_object_object_get_ex(v, "migrations_by_distance", &m) &&
	    json_object_is_type(m, json_type_object)) {
		static const char *const classes[REPORT_MIG_CLASSES] = { "smt_sibling", "same_llc",
									 "other_llc", "other_node",
									 "unknown" };
		char mw[300];
		int i;

		snprintf(mw, sizeof(mw), "%s.migrations_by_distance", w);
		for (i = 0; i < REPORT_MIG_CLASSES; i++)
			rq->mig[i] = get_u64(ld, m, mw, classes[i]);
		/* Documents before loss.migrations_unseen have no "unseen". */
		rq->has_unseen = json_object_object_get_ex(m, "unseen", NULL);
		if (rq->has_unseen)
			rq->mig_unseen = get_u64(ld, m, mw, "unseen");
		rq->has_migrations = true;
	}
	m = member(ld, v, w, "runqueue_histogram", json_type_array, true);
	snprintf(w + strlen(w), sizeof(w) - strlen(w), ".runqueue_histogram");
	rq->buckets = get_buckets(ld, m, w, &rq->nr_buckets);
}

static int nomem(struct loader *ld)
{
	if (!ld->failed) {
		ld->failed = -ENOMEM;
		snprintf(ld->err, ld->errlen, "out of memory");
	}
	return -ENOMEM;
}

static void load_run(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *o, *v;
	bool rec;

	o = member(ld, root, "", "producer", json_type_object, false);
	d->khbpf_version = get_str(ld, o, "producer", "khbpf_version", false);
	d->kernel_release = get_str(ld, o, "producer", "kernel_release", false);

	o = member(ld, root, "", "target", json_type_object, true);
	d->pid = get_u64(ld, o, "target", "pid");
	d->comm = get_str(ld, o, "target", "comm", true);
	d->mode = get_str(ld, o, "target", "mode", false);
	if (o && json_object_object_get_ex(o, "exe", &v)) {
		enum ev_gap reason;

		v = get_ev(ld, o, "target", "exe", &rec, &reason);
		if (v && json_object_is_type(v, json_type_string))
			d->exe = json_object_get_string(v);
	}
	d->exit_reason = EV_GAP_UNAVAILABLE;
	if (o && json_object_object_get_ex(o, "exit", &v)) {
		v = get_ev(ld, o, "target", "exit", &d->exit_recorded, &d->exit_reason);
		if (v) {
			struct json_object *n;

			d->exit_signaled = json_object_object_get_ex(v, "signal", &n);
			if (!d->exit_signaled && !json_object_object_get_ex(v, "code", &n))
				fail(ld,
				     "target.exit.value: expected {\"code\": N} or {\"signal\": N}");
			else
				u64_of(ld, n, "target.exit.value",
				       d->exit_signaled ? "signal" : "code", &d->exit_value);
		}
	}

	o = member(ld, root, "", "window", json_type_object, true);
	d->start_unix_ns = get_u64(ld, o, "window", "start_unix_ns");
	d->wall_ns = get_u64(ld, o, "window", "wall_ns");
	d->end_reason = get_str(ld, o, "window", "end_reason", false);
}

static void load_collectors(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *arr = member(ld, root, "", "collectors", json_type_array, true);
	size_t i, n = arr ? json_object_array_length(arr) : 0;
	char w[64];

	if (!n)
		return;
	d->collectors = calloc(n, sizeof(*d->collectors));
	if (!d->collectors) {
		nomem(ld);
		return;
	}
	for (i = 0; i < n && !ld->failed; i++) {
		struct json_object *c = json_object_array_get_idx(arr, i);

		snprintf(w, sizeof(w), "collectors[%zu]", i);
		if (!json_object_is_type(c, json_type_object)) {
			fail(ld, "%s: expected an object", w);
			break;
		}
		d->collectors[i].id = get_str(ld, c, w, "collector", true);
		d->collectors[i].availability = get_str(ld, c, w, "availability", true);
		d->collectors[i].detail = get_str(ld, c, w, "detail", false);
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

	hw = get_ev(ld, root, "", "hardware", &d->hardware_recorded, &d->hardware_reason);
	d->all_threads_cpu_ns = ev_u64__gap(EV_GAP_UNAVAILABLE);
	d->parallelism_milli = ev_u64__gap(EV_GAP_UNAVAILABLE);
	if (!hw)
		return;
	if (!json_object_is_type(hw, json_type_object)) {
		fail(ld, "%s: expected an object", w);
		return;
	}
	get_sched(ld, hw, w, &d->totals);
	u = member(ld, hw, w, "utilization", json_type_object, true);
	if (!u)
		return;
	w = "hardware.value.utilization";
	d->logical_cpus = (uint32_t)get_u64(ld, u, w, "logical_cpus");
	/* khbpf's own additions: every thread seen, exited ones included. */
	if (json_object_object_get_ex(u, "all_threads_cpu_ns", &m))
		d->all_threads_cpu_ns = get_ev_u64(ld, u, w, "all_threads_cpu_ns");
	if (json_object_object_get_ex(u, "all_threads_parallelism_milli", &m))
		d->parallelism_milli = get_ev_u64(ld, u, w, "all_threads_parallelism_milli");
	arr = member(ld, u, w, "frequency_samples", json_type_array, true);
	n = arr ? json_object_array_length(arr) : 0;
	if (!n)
		return;
	d->freq = calloc(n, sizeof(*d->freq));
	if (!d->freq) {
		nomem(ld);
		return;
	}
	for (i = 0; i < n && !ld->failed; i++) {
		struct json_object *s = json_object_array_get_idx(arr, i);

		snprintf(wi, sizeof(wi), "%s.frequency_samples[%zu]", w, i);
		d->freq[i].elapsed_ns = get_u64(ld, s, wi, "elapsed_ns");
		d->freq[i].min_khz = get_u64(ld, s, wi, "min_khz");
		d->freq[i].max_khz = get_u64(ld, s, wi, "max_khz");
		d->freq[i].mean_khz = get_u64(ld, s, wi, "mean_khz");
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
		fail(ld, "%s: expected an object", w);
		return;
	}
	th->listed = true;
	th->tid = get_u64(ld, t, w, "thread_id");
	th->comm = own(ld, get_str(ld, t, w, "comm", true));
	th->exited = get_bool(ld, t, w, "exited", true);
	th->born = get_bool(ld, t, w, "born", false);
	get_sched(ld, t, w, &th->sched);
	th->on_cpu_ns = get_sev_u64(ld, t, w, "on_cpu_ns");
	get_rq(ld, t, w, "bpf_detail", &th->rq);
	d->nr_threads++;
}

static void load_threads(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *arr = member(ld, root, "", "threads", json_type_array, true);
	bool streamed = ld->streams[STREAM_THREADS].on;
	size_t i, n;

	if (!arr)
		return;
	n = streamed ? stream_count(ld, STREAM_THREADS) : json_object_array_length(arr);
	if (!n)
		return;
	d->threads = calloc(n, sizeof(*d->threads));
	if (!d->threads) {
		nomem(ld);
		return;
	}
	if (streamed)
		stream_each(ld, STREAM_THREADS, load_thread, NULL);
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
		nomem(ld);
		return none;
	}
	d->metrics = m;
	memset(&m[d->nr_metrics], 0, sizeof(*m));
	m[d->nr_metrics].id = own(ld, id); /* a record's own: may be freed */
	return d->nr_metrics++;
}

static void load_metrics(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *arr = member(ld, root, "", "span_metrics", json_type_array, false);
	size_t i, n = arr ? json_object_array_length(arr) : 0;
	char w[64], wh[80];

	for (i = 0; i < n && !ld->failed; i++) {
		struct json_object *o = json_object_array_get_idx(arr, i);
		struct report_metric *m;
		const char *id;
		size_t k;

		snprintf(w, sizeof(w), "span_metrics[%zu]", i);
		id = get_str(ld, o, w, "metric_id", true);
		if (!id)
			break;
		k = metric_index(ld, id);
		if (ld->failed)
			break;
		m = &d->metrics[k];
		if (m->has_totals) {
			fail(ld, "%s: metric '%s' is listed twice", w, id);
			break;
		}
		m->has_totals = true;
		m->calls = get_u64(ld, o, w, "calls");
		m->inclusive_ns = get_u64(ld, o, w, "inclusive_ns");
		m->exclusive_ns = get_u64(ld, o, w, "exclusive_ns");
		m->unfinished = get_u64(ld, o, w, "unfinished");
		snprintf(wh, sizeof(wh), "%s.histogram", w);
		m->hist = get_buckets(ld, member(ld, o, w, "histogram", json_type_array, false), wh,
				      &m->nr_hist);
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
	v = get_ev(ld, o, w, "hardware", &recorded, &reason);
	s->has_hw = true;
	if (!v) {
		s->hw.cycles_begin = ev_u64__gap(reason);
		s->hw.cycles_end = s->hw.cycles_begin;
		s->hw.instructions_begin = s->hw.cycles_begin;
		s->hw.instructions_end = s->hw.cycles_begin;
		return;
	}
	snprintf(wv, sizeof(wv), "%s.hardware.value", w);
	s->hw.cycles_begin = get_ev_u64(ld, v, wv, "cycles_begin");
	s->hw.cycles_end = get_ev_u64(ld, v, wv, "cycles_end");
	s->hw.instructions_begin = get_ev_u64(ld, v, wv, "instructions_begin");
	s->hw.instructions_end = get_ev_u64(ld, v, wv, "instructions_end");
}

/* khbpf's per-span scheduler ledger; optional. */
static void load_ledger(struct loader *ld, struct json_object *o, const char *w,
			struct report_span *s)
{
	struct json_object *l = member(ld, o, w, "scheduler", json_type_object, false);
	char wl[96];

	if (!l)
		return;
	snprintf(wl, sizeof(wl), "%s.scheduler", w);
	s->has_ledger = true;
	s->ledger.on_cpu_ns = get_ev_u64(ld, l, wl, "on_cpu_ns");
	s->ledger.run_delay_ns = get_u64(ld, l, wl, "run_delay_ns");
	s->ledger.voluntary_switches = get_u64(ld, l, wl, "voluntary_context_switches");
	s->ledger.involuntary_switches = get_u64(ld, l, wl, "involuntary_context_switches");
	s->ledger.migrations = get_u64(ld, l, wl, "cpu_migrations");
}

static void load_span(struct loader *ld, struct json_object *o, const char *w,
		      struct report_span *s, bool open)
{
	const char *metric;

	if (!json_object_is_type(o, json_type_object)) {
		fail(ld, "%s: expected an object", w);
		return;
	}
	s->open = open;
	s->span_id = get_u64(ld, o, w, "span_id");
	s->parent_span_id = get_ev_u64(ld, o, w, "parent_span_id");
	metric = get_str(ld, o, w, "metric_id", true);
	s->thread_id = get_u64(ld, o, w, "thread_id");
	s->start_ns = get_u64(ld, o, w, "start_ns");
	if (!open) {
		s->inclusive_ns = get_u64(ld, o, w, "inclusive_ns");
		s->exclusive_ns = get_u64(ld, o, w, "exclusive_ns");
		load_span_hw(ld, o, w, s);
		load_ledger(ld, o, w, s);
	}
	if (metric && !ld->failed)
		s->metric = metric_index(ld, metric);
}

static void load_record(struct loader *ld, struct json_object *o, size_t i, void *arg)
{
	struct report_doc *d = ld->doc;
	char w[64];

	(void)arg;
	snprintf(w, sizeof(w), "events.spans[%zu]", i);
	load_span(ld, o, w, &d->spans[d->nr_spans++], false);
}

static void load_spans(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *ev, *spans, *open, *v;
	size_t i, n, nopen;
	bool avail = false, streamed;
	char w[64];

	ev = member(ld, root, "", "events", json_type_object, true);
	v = get_ev(ld, ev, "events", "availability", &d->spans_recorded, &d->spans_reason);
	if (v && !json_object_is_type(v, json_type_boolean))
		fail(ld, "events.availability.value: expected true or false");
	else if (v)
		avail = json_object_get_boolean(v);
	d->spans_recorded = d->spans_recorded && avail;
	d->dropped_span_events = get_u64(ld, ev, "events", "dropped_span_events");
	d->sampled_out_events = get_u64(ld, ev, "events", "sampled_out_events");
	spans = member(ld, ev, "events", "spans", json_type_array, true);
	open = member(ld, root, "", "open_spans", json_type_array, false);
	if (ld->failed)
		return;
	streamed = ld->streams[STREAM_SPANS].on;
	n = streamed ? stream_count(ld, STREAM_SPANS) : json_object_array_length(spans);
	nopen = open ? json_object_array_length(open) : 0;
	if (!n && !nopen)
		return;
	d->spans = calloc(n + nopen, sizeof(*d->spans));
	if (!d->spans) {
		nomem(ld);
		return;
	}
	if (streamed)
		stream_each(ld, STREAM_SPANS, load_record, NULL);
	for (i = 0; !streamed && i < n && !ld->failed; i++) {
		snprintf(w, sizeof(w), "events.spans[%zu]", i);
		load_span(ld, json_object_array_get_idx(spans, i), w, &d->spans[d->nr_spans++],
			  false);
	}
	for (i = 0; i < nopen && !ld->failed; i++) {
		snprintf(w, sizeof(w), "open_spans[%zu]", i);
		load_span(ld, json_object_array_get_idx(open, i), w, &d->spans[d->nr_spans++],
			  true);
		d->nr_open++;
	}
}

static void load_probes(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *arr = member(ld, root, "", "span_probes", json_type_array, false);
	size_t i, n = arr ? json_object_array_length(arr) : 0;
	char w[64];

	if (!n)
		return;
	d->failed_probes = calloc(n, sizeof(*d->failed_probes));
	if (!d->failed_probes) {
		nomem(ld);
		return;
	}
	for (i = 0; i < n && !ld->failed; i++) {
		struct json_object *p = json_object_array_get_idx(arr, i);
		struct report_probe *f = &d->failed_probes[d->nr_failed_probes];
		const char *status;

		snprintf(w, sizeof(w), "span_probes[%zu]", i);
		status = get_str(ld, p, w, "status", true);
		d->nr_probes++;
		if (status && !strcmp(status, "attached")) {
			d->nr_probes_attached++;
			continue;
		}
		f->object = get_str(ld, p, w, "object", true);
		f->symbol = get_str(ld, p, w, "symbol", true);
		f->metric_id = get_str(ld, p, w, "metric_id", true);
		f->reason = get_str(ld, p, w, "reason", false);
		d->nr_failed_probes++;
	}
	arr = member(ld, root, "", "span_counters", json_type_object, false);
	d->cycles_event = get_str(ld, arr, "span_counters", "cycles_event", false);
}

static void load_loss(struct loader *ld, struct json_object *root)
{
	struct report_doc *d = ld->doc;
	struct json_object *loss = member(ld, root, "", "loss", json_type_object, false);
	size_t n = loss ? (size_t)json_object_object_length(loss) : 0;

	if (!n)
		return;
	d->losses = calloc(n, sizeof(*d->losses));
	if (!d->losses) {
		nomem(ld);
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
		ev = get_ev_u64(ld, loss, "loss", key);
		if (!ev.recorded)
			d->nr_losses_unknown++;
		else if (ev.value)
			d->losses[d->nr_losses++] = (struct report_loss){ key, ev.value };
	}
}

/* ---- gaps ---- */

struct gap_walk {
	struct loader *ld;
	/* Where gaps go: the document's list, or a streamed array's own. */
	struct report_gap **gaps;
	size_t *nr_gaps;
	uint64_t *gap_fields;
	char generic[512];
	char concrete[512];
};

/* One more gap of (pattern, reason), first seen at path, count times. */
static void note_gap(struct gap_walk *gw, const char *path, const char *pattern, enum ev_gap reason,
		     uint64_t count)
{
	struct report_gap *g;
	size_t i;

	*gw->gap_fields += count;
	for (i = 0; i < *gw->nr_gaps; i++) {
		g = &(*gw->gaps)[i];
		if (g->reason != reason || strcmp(g->pattern, pattern))
			continue;
		if (g->count == 1) {
			/* A second one: name them all with [*]. */
			free(g->path);
			g->path = strdup(g->pattern);
			if (!g->path)
				nomem(gw->ld);
		}
		g->count += count;
		return;
	}
	g = realloc(*gw->gaps, (*gw->nr_gaps + 1) * sizeof(*g));
	if (!g) {
		nomem(gw->ld);
		return;
	}
	*gw->gaps = g;
	g = &g[*gw->nr_gaps];
	g->path = strdup(count == 1 ? path : pattern);
	g->pattern = strdup(pattern);
	g->reason = reason;
	g->count = count;
	g->hint = report__gap_hint(pattern, reason);
	(*gw->nr_gaps)++;
	if (!g->path || !g->pattern)
		nomem(gw->ld);
}

static void add_gap(struct gap_walk *gw, struct json_object *ev)
{
	enum ev_gap reason;
	const char *r;

	r = json_object_get_string(json_object_object_get(ev, "reason"));
	if (!parse_gap(r, &reason)) {
		fail(gw->ld, "%s.reason: not a gap reason of the schema", gw->concrete);
		return;
	}
	note_gap(gw, gw->concrete, gw->generic, reason, 1);
}

static bool is_gap(struct json_object *o)
{
	struct json_object *st;

	return json_object_is_type(o, json_type_object) &&
	       json_object_object_get_ex(o, "status", &st) &&
	       json_object_is_type(st, json_type_string) &&
	       !strcmp(json_object_get_string(st), "unavailable");
}

static void walk_gaps(struct gap_walk *gw, struct json_object *o)
{
	size_t gl = strlen(gw->generic), cl = strlen(gw->concrete);
	struct json_object *v;
	int k;

	if (gw->ld->failed)
		return;
	/* A streamed array: its elements' gaps, in their order, here. */
	for (k = 0; k < NR_STREAMS; k++) {
		const struct stream *st = &gw->ld->streams[k];
		size_t i;

		if (!st->on || o != st->placeholder)
			continue;
		for (i = 0; i < st->nr_gaps; i++)
			note_gap(gw, st->gaps[i].path, st->gaps[i].pattern, st->gaps[i].reason,
				 st->gaps[i].count);
		return;
	}
	if (is_gap(o)) {
		add_gap(gw, o);
		return;
	}
	/* A sourced gap is named by its field, not by the inner "value". */
	if (json_object_is_type(o, json_type_object) &&
	    json_object_object_get_ex(o, "source", &v) &&
	    json_object_object_get_ex(o, "value", &v) && is_gap(v)) {
		add_gap(gw, v);
		return;
	}
	if (json_object_is_type(o, json_type_array)) {
		size_t i, n = json_object_array_length(o);

		for (i = 0; i < n; i++) {
			snprintf(gw->generic + gl, sizeof(gw->generic) - gl, "[*]");
			snprintf(gw->concrete + cl, sizeof(gw->concrete) - cl, "[%zu]", i);
			walk_gaps(gw, json_object_array_get_idx(o, i));
		}
	} else if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, key, val) {
			const char *dot = gl ? "." : "";

			snprintf(gw->generic + gl, sizeof(gw->generic) - gl, "%s%s", dot, key);
			snprintf(gw->concrete + cl, sizeof(gw->concrete) - cl, "%s%s", dot, key);
			walk_gaps(gw, val);
		}
	}
	gw->generic[gl] = '\0';
	gw->concrete[cl] = '\0';
}

/* The gaps of element idx of a streamed array, into that array's own list. */
static void walk_element_gaps(struct loader *ld, enum stream_id id, struct json_object *o,
			      size_t idx)
{
	struct stream *st = &ld->streams[id];
	struct gap_walk *gw;

	if (ld->failed)
		return;
	gw = calloc(1, sizeof(*gw));
	if (!gw) {
		nomem(ld);
		return;
	}
	gw->ld = ld;
	gw->gaps = &st->gaps;
	gw->nr_gaps = &st->nr_gaps;
	gw->gap_fields = &st->gap_fields;
	snprintf(gw->generic, sizeof(gw->generic), "%s[*]", stream_paths[id]);
	snprintf(gw->concrete, sizeof(gw->concrete), "%s[%zu]", stream_paths[id], idx);
	walk_gaps(gw, o);
	free(gw);
}

/* ---- loading ---- */

static void line_col(const char *text, size_t off, size_t *line, size_t *col)
{
	size_t i;

	*line = 1;
	*col = 1;
	for (i = 0; i < off; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

static int parse_json(const char *text, size_t len, struct json_object **root, char *err,
		      size_t errlen)
{
	struct json_tokener *tok;
	enum json_tokener_error jerr;
	size_t end, line, col;
	int ret = 0;

	*root = NULL;
	if (len > INT32_MAX) {
		snprintf(err, errlen, "is too large to read (%zu bytes)", len);
		return -EFBIG;
	}
	tok = json_tokener_new_ex(REPORT_JSON_DEPTH);
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	*root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_success) {
		while (end < len && strchr(" \t\r\n", text[end]))
			end++;
		if (end < len)
			jerr = json_tokener_error_parse_unexpected;
	}
	if (jerr != json_tokener_success) {
		if (jerr == json_tokener_continue)
			snprintf(err, errlen, "is not JSON: it ends in the middle of a value");
		else {
			line_col(text, end < len ? end : len, &line, &col);
			snprintf(err, errlen, "is not JSON: %s at line %zu, column %zu",
				 json_tokener_error_desc(jerr), line, col);
		}
		json_object_put(*root);
		*root = NULL;
		ret = -EINVAL;
	}
	json_tokener_free(tok);
	return ret;
}

static int check_schema(struct json_object *root, char *err, size_t errlen)
{
	struct json_object *s, *v, *major;
	const char *want =
		"expected an evidence document written by 'khbpf run -o' or 'khbpf attach -o'";

	if (!json_object_is_type(root, json_type_object)) {
		snprintf(err, errlen, "is not a khbpf evidence document (not a JSON object); %s",
			 want);
		return -EPROTO;
	}
	if (!json_object_object_get_ex(root, "schema", &s)) {
		snprintf(err, errlen, "is not a khbpf evidence document (no \"schema\" field); %s",
			 want);
		return -EPROTO;
	}
	if (!json_object_is_type(s, json_type_string) ||
	    strcmp(json_object_get_string(s), "khbpf-evidence")) {
		snprintf(
			err, errlen,
			"is not a khbpf evidence document (\"schema\" is %.64s, not \"khbpf-evidence\"); %s",
			json_object_to_json_string(s), want);
		return -EPROTO;
	}
	if (!json_object_object_get_ex(root, "schema_version", &v) ||
	    !json_object_object_get_ex(v, "major", &major) ||
	    !json_object_is_type(major, json_type_int)) {
		snprintf(err, errlen, "has no schema_version.major; %s", want);
		return -EPROTO;
	}
	if (json_object_get_int64(major) != REPORT_SCHEMA_MAJOR) {
		snprintf(
			err, errlen,
			"is schema version %.32s.x; this khbpf reads version %d.x: use the khbpf that wrote it",
			json_object_get_string(major), REPORT_SCHEMA_MAJOR);
		return -EPROTO;
	}
	return 0;
}

/* One element of a streamed array, exactly its bytes; NULL when it is not JSON. */
static struct json_object *parse_element(struct loader *ld, const struct jrange *r)
{
	struct json_tokener *tok = json_tokener_new_ex(REPORT_JSON_DEPTH);
	struct json_object *o = NULL;

	if (!tok) {
		nomem(ld);
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, ld->text + r->begin, (int)(r->end - r->begin));
	if (json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != r->end - r->begin) {
		json_object_put(o);
		o = NULL;
		ld->element_not_json = true;
		if (!ld->failed)
			ld->failed = -EINVAL;
	}
	json_tokener_free(tok);
	return o;
}

/*
 * The text with each streamed array replaced by [], to parse as the tree;
 * NULL (and no stream on) when none is found, or the text is not well
 * formed where the scan went (the whole parse then says where).
 */
static char *skeleton(struct loader *ld, const char *text, size_t len, size_t *out_len)
{
	struct jrange r[NR_STREAMS];
	int k, j, order[NR_STREAMS], n = 0;
	size_t at = 0, o = 0;
	char *sk;

	for (k = 0; k < NR_STREAMS; k++) {
		if (jscan__member(text, len, stream_paths[k], &r[k]) || text[r[k].begin] != '[')
			continue;
		/* In text order, for the copy below (streams never nest). */
		for (j = n; j > 0 && r[order[j - 1]].begin > r[k].begin; j--)
			order[j] = order[j - 1];
		order[j] = k;
		n++;
	}
	if (!n)
		return NULL;
	sk = malloc(len + 1);
	if (!sk)
		return NULL;
	for (j = 0; j < n; j++) {
		k = order[j];
		memcpy(sk + o, text + at, r[k].begin - at);
		o += r[k].begin - at;
		memcpy(sk + o, "[]", 2);
		o += 2;
		at = r[k].end;
		ld->streams[k].on = true;
		ld->streams[k].range = r[k];
	}
	memcpy(sk + o, text + at, len - at);
	o += len - at;
	sk[o] = '\0';
	*out_len = o;
	return sk;
}

/* The tree's stand-in for each streamed array, found by its path. */
static void find_placeholders(struct loader *ld, struct json_object *root)
{
	int k;

	for (k = 0; k < NR_STREAMS; k++) {
		struct json_object *o = root;
		char path[64], *key, *save = NULL;

		if (!ld->streams[k].on)
			continue;
		snprintf(path, sizeof(path), "%s", stream_paths[k]);
		for (key = strtok_r(path, ".", &save); key && o; key = strtok_r(NULL, ".", &save))
			if (!json_object_is_type(o, json_type_object) ||
			    !json_object_object_get_ex(o, key, &o))
				o = NULL;
		ld->streams[k].placeholder = o;
		if (!o || !json_object_is_type(o, json_type_array))
			ld->streams[k].on = false; /* then it was never taken out: cannot be */
	}
}

static void free_streams(struct loader *ld)
{
	size_t i;
	int k;

	for (k = 0; k < NR_STREAMS; k++) {
		for (i = 0; i < ld->streams[k].nr_gaps; i++) {
			free(ld->streams[k].gaps[i].path);
			free(ld->streams[k].gaps[i].pattern);
		}
		free(ld->streams[k].gaps);
	}
}

static int load_string(const char *text, size_t len, bool stream, struct report_doc **out,
		       char *err, size_t errlen);

int report_doc__load_string(const char *text, size_t len, struct report_doc **out, char *err,
			    size_t errlen)
{
	int ret = load_string(text, len, true, out, err, errlen);

	/* Not JSON somewhere: the whole parse names the place, as always. */
	if (ret == -EAGAIN)
		ret = load_string(text, len, false, out, err, errlen);
	return ret;
}

static int load_string(const char *text, size_t len, bool stream, struct report_doc **out,
		       char *err, size_t errlen)
{
	struct loader ld = { .err = err, .errlen = errlen };
	struct gap_walk *gw = NULL;
	struct json_object *root;
	struct report_doc *d;
	size_t sk_len = 0;
	char *sk = NULL;
	int ret;

	*out = NULL;
	if (stream && len <= INT32_MAX)
		sk = skeleton(&ld, text, len, &sk_len);
	ret = sk ? parse_json(sk, sk_len, &root, err, errlen) :
		   parse_json(text, len, &root, err, errlen);
	free(sk);
	if (ret && sk) {
		free_streams(&ld);
		return -EAGAIN;
	}
	if (ret)
		return ret;
	if (sk) {
		ld.text = text;
		find_placeholders(&ld, root);
	}
	ret = check_schema(root, err, errlen);
	if (ret) {
		json_object_put(root);
		return ret;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		json_object_put(root);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	d->root = root;
	ld.doc = d;
	load_run(&ld, root);
	load_collectors(&ld, root);
	load_hardware(&ld, root);
	get_rq(&ld, root, "", "scheduler_detail", &d->rq);
	load_threads(&ld, root);
	load_metrics(&ld, root);
	load_spans(&ld, root);
	load_probes(&ld, root);
	load_loss(&ld, root);
	if (ld.streams[STREAM_UTIL_THREADS].on)
		stream_each(&ld, STREAM_UTIL_THREADS, NULL, NULL);
	if (!ld.failed) {
		ret = report_doc__layout(d);
		if (ret)
			ld.failed = ret;
		if (ret == -ENOMEM)
			snprintf(err, errlen, "out of memory");
	}
	if (!ld.failed) {
		gw = calloc(1, sizeof(*gw));
		if (gw) {
			gw->ld = &ld;
			gw->gaps = &d->gaps;
			gw->nr_gaps = &d->nr_gaps;
			gw->gap_fields = &d->gap_fields;
			walk_gaps(gw, root);
			free(gw);
		} else {
			nomem(&ld);
		}
	}
	free_streams(&ld);
	if (ld.failed) {
		report_doc__free(d);
		return ld.element_not_json ? -EAGAIN : ld.failed;
	}
	*out = d;
	return 0;
}

int report_doc__load_file(const char *path, struct report_doc **doc, char *err, size_t errlen)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *nb;
	struct stat st;
	FILE *f;
	int ret;

	*doc = NULL;
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "cannot be read: %s", strerror(-ret));
		return ret;
	}
	if (fstat(fileno(f), &st)) {
		ret = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		snprintf(err, errlen, "cannot be read: %s",
			 ret == -EISDIR ? strerror(EISDIR) : "not a regular file");
		goto cleanup_msg;
	}
	/* The size may change under us: read to EOF, not to st_size. */
	cap = (size_t)st.st_size + 1;
	for (;;) {
		if (cap > REPORT_MAX_BYTES) {
			snprintf(err, errlen, "is too large to read (more than %" PRIu64 " bytes)",
				 REPORT_MAX_BYTES);
			ret = -EFBIG;
			goto cleanup_msg;
		}
		nb = realloc(buf, cap);
		if (!nb) {
			ret = -ENOMEM;
			goto cleanup;
		}
		buf = nb;
		len += fread(buf + len, 1, cap - len, f);
		if (len < cap)
			break;
		cap *= 2;
	}
	if (ferror(f)) {
		ret = -EIO;
		goto cleanup;
	}
	ret = report_doc__load_string(buf, len, doc, err, errlen);
	goto cleanup_msg;

cleanup:
	snprintf(err, errlen, "cannot be read: %s", strerror(-ret));
cleanup_msg:
	free(buf);
	fclose(f);
	return ret;
}

void report_doc__free(struct report_doc *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->nr_threads; i++)
		free(d->threads[i].rq.buckets);
	for (i = 0; i < d->nr_metrics; i++)
		free(d->metrics[i].hist);
	for (i = 0; i < d->nr_gaps; i++) {
		free(d->gaps[i].path);
		free(d->gaps[i].pattern);
	}
	free(d->rq.buckets);
	free(d->freq);
	free(d->collectors);
	free(d->threads);
	free(d->spans);
	free(d->metrics);
	free(d->failed_probes);
	free(d->losses);
	free(d->gaps);
	for (i = 0; i < d->nr_owned; i++)
		free(d->owned[i]);
	free(d->owned);
	json_object_put(d->root);
	free(d);
}

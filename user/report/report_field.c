// SPDX-License-Identifier: MIT
/*
 * Typed members of a document being loaded, each failing the load with a
 * message naming its path when it is missing or of the wrong type; see
 * report_loader.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "report/report_loader.h"

/* Where each streamed array is in the document (report_stream.c reads them). */
const char *const report_stream_paths[NR_STREAMS] = {
	[STREAM_THREADS] = "threads",
	[STREAM_SPANS] = "events.spans",
	[STREAM_UTIL_THREADS] = "hardware.value.utilization.threads",
};

/* A string of a streamed element, which is freed: the document keeps a copy. */
const char *loader__own(struct loader *ld, const char *str)
{
	struct report_doc *d = ld->doc;
	char **v, *c;

	if (!str || !ld->scan)
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

/*
 * Messages quote the document's own strings and keys: their control bytes
 * are written as \xNN, so the message stays one line and cannot drive a
 * terminal.
 */
void loader__fail(struct loader *ld, const char *fmt, ...)
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
struct json_object *loader__member(struct loader *ld, struct json_object *obj, const char *where,
				   const char *key, enum json_type type, bool required)
{
	struct json_object *m;

	if (!obj || ld->failed)
		return NULL;
	if (!json_object_object_get_ex(obj, key, &m) || !m) {
		if (required)
			loader__fail(ld, "%s%s%s is missing", where, *where ? "." : "", key);
		return NULL;
	}
	if (!json_object_is_type(m, type)) {
		loader__fail(ld, "%s%s%s: expected %s", where, *where ? "." : "", key,
			     type_word(type));
		return NULL;
	}
	return m;
}

bool loader__u64_of(struct loader *ld, struct json_object *o, const char *where, const char *key,
		    uint64_t *out)
{
	/* json-c keeps integers above INT64_MAX as uint64, below zero as int64. */
	if (!json_object_is_type(o, json_type_int) || json_object_get_int64(o) < 0) {
		loader__fail(ld, "%s%s%s: expected an unsigned integer", where, *where ? "." : "",
			     key);
		return false;
	}
	*out = json_object_get_uint64(o);
	return true;
}

uint64_t loader__get_u64(struct loader *ld, struct json_object *obj, const char *where,
			 const char *key)
{
	struct json_object *m;
	uint64_t v = 0;

	if (!obj || ld->failed)
		return 0;
	if (!json_object_object_get_ex(obj, key, &m) || !m) {
		loader__fail(ld, "%s%s%s is missing", where, *where ? "." : "", key);
		return 0;
	}
	loader__u64_of(ld, m, where, key, &v);
	return v;
}

const char *loader__get_str(struct loader *ld, struct json_object *obj, const char *where,
			    const char *key, bool required)
{
	struct json_object *m = loader__member(ld, obj, where, key, json_type_string, required);

	return m ? json_object_get_string(m) : NULL;
}

bool loader__get_bool(struct loader *ld, struct json_object *obj, const char *where,
		      const char *key, bool required)
{
	struct json_object *m = loader__member(ld, obj, where, key, json_type_boolean, required);

	return m && json_object_get_boolean(m);
}

bool loader__parse_gap(const char *s, enum ev_gap *out)
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
struct json_object *loader__get_ev(struct loader *ld, struct json_object *obj, const char *where,
				   const char *key, bool *recorded, enum ev_gap *reason)
{
	struct json_object *ev = loader__member(ld, obj, where, key, json_type_object, true);
	struct json_object *v;
	const char *status;
	char w[256];

	*recorded = false;
	*reason = EV_GAP_UNAVAILABLE;
	if (!ev)
		return NULL;
	snprintf(w, sizeof(w), "%s%s%s", where, *where ? "." : "", key);
	status = loader__get_str(ld, ev, w, "status", true);
	if (!status)
		return NULL;
	if (!strcmp(status, "unavailable")) {
		if (!loader__parse_gap(loader__get_str(ld, ev, w, "reason", true), reason))
			loader__fail(ld, "%s.reason: not a gap reason of the schema", w);
		return NULL;
	}
	if (strcmp(status, "recorded")) {
		loader__fail(ld, "%s.status: expected \"recorded\" or \"unavailable\"", w);
		return NULL;
	}
	if (!json_object_object_get_ex(ev, "value", &v) || !v) {
		loader__fail(ld, "%s.value is missing", w);
		return NULL;
	}
	*recorded = true;
	return v;
}

struct ev_u64 loader__get_ev_u64(struct loader *ld, struct json_object *obj, const char *where,
				 const char *key)
{
	struct ev_u64 ev = { 0 };
	struct json_object *v = loader__get_ev(ld, obj, where, key, &ev.recorded, &ev.reason);
	char w[256];

	if (v) {
		snprintf(w, sizeof(w), "%s%s%s", where, *where ? "." : "", key);
		if (!loader__u64_of(ld, v, w, "value", &ev.value))
			ev.recorded = false;
	}
	return ev;
}

struct ev_u64 loader__get_cov_u64(struct loader *ld, struct json_object *obj, const char *where,
				  const char *key, bool *partial, uint64_t *covered,
				  uint64_t *calls)
{
	struct json_object *ev = NULL, *st = NULL;
	struct ev_u64 out = { 0 };
	char w[256];

	*partial = false;
	*covered = *calls = 0;
	if (json_object_object_get_ex(obj, key, &ev) && json_object_is_type(ev, json_type_object) &&
	    json_object_object_get_ex(ev, "status", &st) &&
	    !strcmp(json_object_get_string(st) ?: "", "partial")) {
		snprintf(w, sizeof(w), "%s%s%s", where, *where ? "." : "", key);
		out.value = loader__get_u64(ld, ev, w, "value");
		*covered = loader__get_u64(ld, ev, w, "covered_calls");
		*calls = loader__get_u64(ld, ev, w, "calls");
		if (ld->failed)
			return (struct ev_u64){ 0 };
		if (!loader__parse_gap(loader__get_str(ld, ev, w, "reason", true), &out.reason))
			loader__fail(ld, "%s.reason: not a gap reason of the schema", w);
		if (*covered == 0 || *covered >= *calls)
			loader__fail(ld,
				     "%s: a partial sum covers some of its calls, not %" PRIu64
				     " of %" PRIu64,
				     w, *covered, *calls);
		out.recorded = true;
		*partial = true;
		return out;
	}
	return loader__get_ev_u64(ld, obj, where, key);
}

/* SourcedEvidence<u64>: {"value": Evidence<u64>, "source": SOURCE}. */
struct sev_u64 loader__get_sev_u64(struct loader *ld, struct json_object *obj, const char *where,
				   const char *key)
{
	struct json_object *sev = loader__member(ld, obj, where, key, json_type_object, true);
	struct sev_u64 out = { 0 };
	const char *src;
	char w[256];

	if (!sev)
		return out;
	snprintf(w, sizeof(w), "%s%s%s", where, *where ? "." : "", key);
	out.ev = loader__get_ev_u64(ld, sev, w, "value");
	src = loader__get_str(ld, sev, w, "source", true);
	out.source = 0;
	if (src && !ev_source__parse(src, &out.source))
		loader__fail(ld, "%s.source: '%s' is not a source of the schema", w, src);
	return out;
}

void loader__get_sched(struct loader *ld, struct json_object *obj, const char *where,
		       struct scheduler_evidence *s)
{
	struct json_object *o = loader__member(ld, obj, where, "scheduler", json_type_object, true);
	char w[256];

	snprintf(w, sizeof(w), "%s%sscheduler", where, *where ? "." : "");
	s->voluntary_context_switches = loader__get_sev_u64(ld, o, w, "voluntary_context_switches");
	s->involuntary_context_switches =
		loader__get_sev_u64(ld, o, w, "involuntary_context_switches");
	s->total_context_switches = loader__get_sev_u64(ld, o, w, "total_context_switches");
	s->cpu_migrations = loader__get_sev_u64(ld, o, w, "cpu_migrations");
	s->scheduler_delay_ns = loader__get_sev_u64(ld, o, w, "scheduler_delay_ns");
	s->timeslices = loader__get_sev_u64(ld, o, w, "timeslices");
}

struct report_bucket *loader__get_buckets(struct loader *ld, struct json_object *arr,
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
			loader__fail(ld, "%s: expected an object", w);
			break;
		}
		b[i].lower = loader__get_u64(ld, e, w, "lower_bound");
		b[i].upper = loader__get_u64(ld, e, w, "upper_bound");
		b[i].count = loader__get_u64(ld, e, w, "count");
	}
	*nr = n;
	return b;
}

/* scheduler_detail / bpf_detail: Evidence<{runqueue_* ...}>, absent in old documents. */
void loader__get_rq(struct loader *ld, struct json_object *obj, const char *where, const char *key,
		    struct report_rq *rq)
{
	struct json_object *v, *m;
	char w[256];

	rq->recorded = false;
	rq->reason = EV_GAP_UNAVAILABLE;
	if (!obj || !json_object_object_get_ex(obj, key, &m))
		return;
	v = loader__get_ev(ld, obj, where, key, &rq->recorded, &rq->reason);
	if (!v)
		return;
	snprintf(w, sizeof(w), "%s%s%s.value", where, *where ? "." : "", key);
	if (!json_object_is_type(v, json_type_object)) {
		loader__fail(ld, "%s: expected an object", w);
		rq->recorded = false;
		return;
	}
	rq->wait_ns = loader__get_u64(ld, v, w, "runqueue_wait_ns");
	rq->waits = loader__get_u64(ld, v, w, "runqueue_waits");
	if (json_object_object_get_ex(v, "unbinned_waits", &m))
		loader__u64_of(ld, m, w, "unbinned_waits", &rq->unbinned_waits);
	if (json_object_object_get_ex(v, "migrations_by_distance", &m) &&
	    json_object_is_type(m, json_type_object)) {
		static const char *const classes[REPORT_MIG_CLASSES] = { "smt_sibling", "same_llc",
									 "other_llc", "other_node",
									 "unknown" };
		char mw[300];
		int i;

		snprintf(mw, sizeof(mw), "%s.migrations_by_distance", w);
		for (i = 0; i < REPORT_MIG_CLASSES; i++)
			rq->mig[i] = loader__get_u64(ld, m, mw, classes[i]);
		/* Documents before loss.migrations_unseen have no "unseen". */
		rq->has_unseen = json_object_object_get_ex(m, "unseen", NULL);
		if (rq->has_unseen)
			rq->mig_unseen = loader__get_u64(ld, m, mw, "unseen");
		rq->has_migrations = true;
	}
	m = loader__member(ld, v, w, "runqueue_histogram", json_type_array, true);
	snprintf(w + strlen(w), sizeof(w) - strlen(w), ".runqueue_histogram");
	rq->buckets = loader__get_buckets(ld, m, w, &rq->nr_buckets);
}

int loader__nomem(struct loader *ld)
{
	if (!ld->failed) {
		ld->failed = -ENOMEM;
		snprintf(ld->err, ld->errlen, "out of memory");
	}
	return -ENOMEM;
}

static uint32_t waker_kind_of(const char *s)
{
	if (s && !strcmp(s, "thread"))
		return WAKER_THREAD;
	if (s && !strcmp(s, "interrupt"))
		return WAKER_INTERRUPT;
	if (s && !strcmp(s, "timer"))
		return WAKER_TIMER;
	return 0;
}

static void load_wakers(struct loader *ld, struct json_object *arr, const char *where,
			struct report_blocked *b)
{
	size_t i, n = json_object_array_length(arr);
	char w[320];

	b->wakers = calloc(n ? n : 1, sizeof(*b->wakers));
	if (!b->wakers) {
		loader__nomem(ld);
		return;
	}
	for (i = 0; i < n && !ld->failed; i++) {
		struct json_object *o = json_object_array_get_idx(arr, i);
		struct waker_row *r = &b->wakers[i];
		const char *kind, *comm;

		snprintf(w, sizeof(w), "%s.wakers[%zu]", where, i);
		if (!json_object_is_type(o, json_type_object)) {
			loader__fail(ld, "%s: expected an object", w);
			return;
		}
		kind = loader__get_str(ld, o, w, "kind", true);
		r->kind = waker_kind_of(kind);
		if (!r->kind && kind) {
			loader__fail(ld, "%s.kind: not a waker kind", w);
			return;
		}
		if (r->kind == WAKER_THREAD) {
			r->tid = (uint32_t)loader__get_u64(ld, o, w, "tid");
			r->pid = (uint32_t)loader__get_u64(ld, o, w, "pid");
			comm = loader__get_str(ld, o, w, "comm", true);
			snprintf(r->comm, sizeof(r->comm), "%s", comm ? comm : "");
		}
		r->ns = loader__get_u64(ld, o, w, "ns");
		r->count = loader__get_u64(ld, o, w, "count");
		if (json_object_object_get_ex(o, "last_wakeup_ns", NULL)) {
			r->has_last_wakeup = true;
			r->last_wakeup_ns = loader__get_u64(ld, o, w, "last_wakeup_ns");
		}
		b->nr_wakers++;
	}
}

void loader__get_blocked(struct loader *ld, struct json_object *obj, const char *where,
			 const char *key, struct report_blocked *b)
{
	struct json_object *v, *by, *m;
	char w[256], wc[300];
	size_t i, j, n;

	memset(b, 0, sizeof(*b));
	b->reason = EV_GAP_UNAVAILABLE;
	if (!obj || !json_object_object_get_ex(obj, key, &m))
		return;
	b->present = true;
	v = loader__get_ev(ld, obj, where, key, &b->recorded, &b->reason);
	if (!v)
		return;
	snprintf(w, sizeof(w), "%s%s%s.value", where, *where ? "." : "", key);
	if (!json_object_is_type(v, json_type_object)) {
		loader__fail(ld, "%s: expected an object", w);
		b->recorded = false;
		return;
	}
	by = loader__member(ld, v, w, "blocked_by", json_type_array, true);
	n = by ? json_object_array_length(by) : 0;
	for (i = 0; i < n && !ld->failed; i++) {
		struct json_object *c = json_object_array_get_idx(by, i);
		const char *name;

		snprintf(wc, sizeof(wc), "%s.blocked_by[%zu]", w, i);
		name = loader__get_str(ld, c, wc, "cause", true);
		for (j = 0; name && j < BLOCK_CAUSES && strcmp(name, blocked_cause__name(j)); j++)
			;
		if (!name || j == BLOCK_CAUSES) {
			loader__fail(ld, "%s.cause: not a cause", wc);
			return;
		}
		b->ns[j] = loader__get_u64(ld, c, wc, "ns");
		b->count[j] = loader__get_u64(ld, c, wc, "count");
	}
	if (json_object_object_get_ex(v, "unattributed_ns", &m)) {
		if (!json_object_is_type(m, json_type_int)) {
			loader__fail(ld, "%s.unattributed_ns: expected an integer", w);
			return;
		}
		b->unattributed_ns = json_object_get_int64(m);
	}
	m = loader__member(ld, v, w, "wakers", json_type_array, false);
	if (m)
		load_wakers(ld, m, w, b);
	if (json_object_object_get_ex(v, "without_waker_ns", NULL))
		b->without_waker_ns = loader__get_u64(ld, v, w, "without_waker_ns");
}

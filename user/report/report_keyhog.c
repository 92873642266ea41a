// SPDX-License-Identifier: MIT
/*
 * The keyhog rendering of a document (`--keyhog`, docs/evidence.md section
 * 11): the same document, with every part that the keyhog-profile crate
 * defines in the crate's closed vocabularies, so that its serde types read
 * them. A khbpf-only source becomes the crate's `system-call` and keeps its
 * name in `khbpf_source`; `span-probes` moves to `khbpf_collectors`; span
 * records of a name outside the crate's MetricId list move to
 * `khbpf_spans`, and `span_aggregation` is the crate's own join over the
 * records left (the in-kernel one stays as `khbpf_span_aggregation`).
 *
 * Read as `khbpf report` reads (report_stream.c): the large arrays are
 * never whole in memory; each element is parsed again from the file as its
 * text is written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "document/evjson.h"
#include "lib/jscan.h"
#include "lib/jsonstream.h"
#include "report/report.h"
#include "report/report_loader.h"

/* The crate's event stream and span records are at version 3 (khbpf's: 1). */
#define KEYHOG_EVENTS_VERSION 3
#define KEYHOG_SPAN_VERSION 3

/*
 * keyhog-profile's MetricId (crates/profile/src/metrics.rs at 018712ee7),
 * in its declaration order, which is the crate's sort order for stages.
 */
static const char *const keyhog_metric_ids[] = {
	"source-acquire",
	"source-walk",
	"source-read",
	"preprocess",
	"phase1-triggers",
	"backend-dispatch",
	"hot-patterns",
	"confirmed-patterns",
	"phase2-prefilter",
	"phase2-keyword-ac",
	"phase2-shared-ac",
	"phase2-anchored-verify",
	"phase2-whole-chunk",
	"generic-detection",
	"entropy",
	"machine-learning",
	"decode",
	"suppression",
	"live-verification",
	"reporting",
	"source-queue-wait",
	"incremental-lookup",
	"backend-select",
	"result-merge",
	"scanner-queue-wait",
	"input-bytes",
	"input-units",
	"wall-time",
	"process-cpu-time",
	"resident-memory",
	"virtual-memory",
	"process-threads",
	"phase2-prefilter-mark-calls",
	"phase2-prefilter-gate-skips",
	"phase2-prefilter-per-pattern-work",
	"phase2-prefilter-hs-served",
	"phase2-prefilter-regexset-served",
	"decode-parent-chunks",
	"decode-derived-chunks",
	"decode-extract-calls",
	"decode-extract-bytes",
	"generic-prefilter-calls",
	"generic-keyword-lines",
	"generic-regex-captures",
	"generic-emits",
	"ml-batch-calls",
	"ml-batch-candidates",
	"ml-batch-calls-ge64",
	"ml-batch-candidates-ge64",
	"decode-extract-ns",
	"generic-prefilter-ns",
	"generic-extract-ns",
	"phase2-prefilter-hs-scan-ns",
	"phase2-prefilter-dropped-host-ns",
	"ml-feature-ns",
	"ml-score-ns",
	"ml-batch-size",
	"decode-derived-bytes",
	"hardware-cycles",
	"hardware-instructions",
	"hardware-cache-references",
	"hardware-cache-misses",
	"hardware-branch-instructions",
	"hardware-branch-misses",
	"hardware-stalled-cycles-frontend",
	"hardware-stalled-cycles-backend",
	"scheduler-voluntary-context-switches",
	"scheduler-involuntary-context-switches",
	"scheduler-cpu-migrations",
	"scheduler-delay-ns",
	"gpu-dispatch-calls",
	"gpu-upload-bytes",
	"gpu-readback-bytes",
	"gpu-upload-ns",
	"gpu-readback-ns",
	"gpu-submit-to-complete-ns",
	"gpu-kernel-ns",
	"gpu-queue-wait-ns",
	"gpu-alloc-calls",
	"gpu-alloc-bytes",
	"gpu-free-bytes",
	"gpu-compile-calls",
	"gpu-compile-ns",
	"gpu-pipeline-cache-hits",
	"gpu-pipeline-cache-misses",
	"gpu-faults",
	"gpu-retries",
	"gpu-recoveries",
	"gpu-residual-batches",
	"gpu-overlap-ns",
	"gpu-resident-bytes",
	"gpu-peak-resident-bytes",
	"allocation-count",
	"deallocation-count",
	"allocation-bytes",
	"deallocation-bytes",
	"allocation-live-bytes",
	"allocation-peak-live-bytes",
	"minor-faults",
	"major-faults",
	"io-read-bytes",
	"io-write-bytes",
	"io-read-syscalls",
	"io-write-syscalls",
	"io-cancelled-write-bytes",
	"resident-high-water-bytes",
	"retained-buffer-bytes",
	"retained-buffer-peak-bytes",
	"network-bytes-read",
	"network-bytes-written",
	"network-requests",
	"network-retries",
	"page-cache-cold-observations",
	"page-cache-warm-observations",
	"page-cache-direct-observations",
	"fs-open-latency-ns",
	"fs-read-latency-ns",
	"fs-metadata-latency-ns",
	"network-latency-ns",
	"autoroute-calibration",
	"boundary-scan",
	"detector-load",
	"detector-validate",
	"execution-pack-select",
	"execution-pack-map",
	"backend-acquire",
	"backend-init",
	"teardown",
};

#define NR_KEYHOG_METRICS (sizeof(keyhog_metric_ids) / sizeof(keyhog_metric_ids[0]))
_Static_assert(NR_KEYHOG_METRICS == 128, "the crate's MetricId has 128 names");

int report__keyhog_metric(const char *name)
{
	size_t i;

	for (i = 0; i < NR_KEYHOG_METRICS; i++)
		if (!strcmp(name, keyhog_metric_ids[i]))
			return (int)i;
	return -1;
}

/* Elements of one output array: offsets in the file, or indices into an array of the tree. */
struct kh_list {
	uint64_t *at;
	size_t nr, cap;
};

struct keyhog {
	struct loader ld;
	struct kh_list spans, others, threads, util;
	/* Each kept span's counter deltas, for the crate's join (span_aggregation). */
	struct span_hw_total *tot;
	size_t nr_tot, cap_tot;
};

/* One lazy array: the list, and where its elements come from. */
struct kh_lazy {
	struct keyhog *k;
	const struct kh_list *list;
	enum stream_id id;
	struct json_object *tree; /* the array itself when it was not streamed */
	bool span;
};

static int list_push(struct kh_list *l, uint64_t v)
{
	uint64_t *grown;
	size_t cap;

	if (l->nr == l->cap) {
		cap = l->cap ? l->cap * 2 : 64;
		grown = realloc(l->at, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		l->at = grown;
		l->cap = cap;
	}
	l->at[l->nr++] = v;
	return 0;
}

/* ---- sources ---- */

/* The crate's source for a khbpf source name; NULL (load failed) for a name khbpf does not write. */
static const char *keyhog_source(struct loader *ld, const char *name, bool *mapped)
{
	enum ev_source src;

	if (ev_source__parse(name, &src)) {
		*mapped = ev_source__keyhog(src) != src;
		return ev_source__name(ev_source__keyhog(src));
	}
	loader__fail(
		ld,
		"has a source \"%.64s\" that khbpf does not write; render the document khbpf wrote",
		name);
	return NULL;
}

/*
 * A string that is not UTF-8 as the document khbpf writes (a file edited or
 * damaged since) is repaired as the writer would have (evjson's U+FFFD per
 * maximal ill-formed subsequence): the rendering is UTF-8 whatever it read.
 * A key cannot be renamed in place: the document is refused.
 */
/* ASCII without NUL: what khbpf's own keys and most values are, kept as it is. */
static bool plain_ascii(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] - 1u >= 0x7fu)
			return false;
	return true;
}

static void repair_string(struct loader *ld, struct json_object *o)
{
	const char *str = json_object_get_string(o);
	size_t len = (size_t)json_object_get_string_len(o);
	char *fixed;

	if (plain_ascii(str, len))
		return;
	fixed = evjson__utf8_sanitize(str, len);
	if (!fixed) {
		loader__nomem(ld);
		return;
	}
	if ((strlen(fixed) != len || memcmp(fixed, str, len)) &&
	    json_object_set_string(o, fixed) != 1)
		loader__nomem(ld);
	free(fixed);
}

static bool key_ok(const char *key)
{
	char *fixed;
	bool ok;

	if (plain_ascii(key, strlen(key)))
		return true;
	fixed = evjson__utf8_sanitize(key, strlen(key));
	ok = fixed && !strcmp(fixed, key);

	free(fixed);
	return ok;
}

/*
 * A partial sum (docs/evidence.md 7.3.3) is no Evidence of the crate's: its
 * gap there, the reason of its missing calls, with the sum and its coverage
 * kept beside as khbpf_partial for a reader that knows them.
 */
static void partial_to_gap(struct loader *ld, struct json_object *o)
{
	struct json_object *part = json_object_new_object(), *v;
	static const char *const moved[] = { "value", "covered_calls", "calls" };
	size_t i;

	if (!part) {
		loader__nomem(ld);
		return;
	}
	for (i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
		if (!json_object_object_get_ex(o, moved[i], &v) ||
		    json_object_object_add(part, moved[i], json_object_get(v))) {
			json_object_put(part);
			loader__fail(ld, "a partial sum without its %s", moved[i]);
			return;
		}
		json_object_object_del(o, moved[i]);
	}
	if (json_object_object_add(o, "status", json_object_new_string("unavailable")) ||
	    json_object_object_add(o, "khbpf_partial", part))
		loader__nomem(ld);
}

/*
 * Into the crate's words, however deep: every SourcedEvidence ({"value":
 * Evidence, "source": S}) gets the crate's source, the exact one beside
 * it as khbpf_source; every string is UTF-8.
 */
static void to_crate(struct loader *ld, struct json_object *o)
{
	struct json_object *v, *src, *st;
	const char *to;
	bool mapped = false;
	size_t i, n;

	if (ld->failed)
		return;
	if (json_object_is_type(o, json_type_string)) {
		repair_string(ld, o);
		return;
	}
	if (json_object_is_type(o, json_type_array)) {
		n = json_object_array_length(o);
		for (i = 0; i < n && !ld->failed; i++)
			to_crate(ld, json_object_array_get_idx(o, i));
		return;
	}
	if (!json_object_is_type(o, json_type_object))
		return;
	if (json_object_object_get_ex(o, "status", &st) &&
	    json_object_is_type(st, json_type_string) &&
	    !strcmp(json_object_get_string(st), "partial")) {
		partial_to_gap(ld, o);
		return;
	}
	if (json_object_object_get_ex(o, "source", &src) &&
	    json_object_is_type(src, json_type_string) &&
	    json_object_object_get_ex(o, "value", &v) && json_object_is_type(v, json_type_object) &&
	    json_object_object_get_ex(v, "status", &st)) {
		to = keyhog_source(ld, json_object_get_string(src), &mapped);
		if (!to)
			return;
		if (mapped && (json_object_object_add(o, "khbpf_source", json_object_get(src)) ||
			       json_object_object_add(o, "source", json_object_new_string(to)))) {
			loader__nomem(ld);
			return;
		}
	}
	json_object_object_foreach(o, key, val) {
		if (!key_ok(key)) {
			loader__fail(
				ld, "has a key that is not UTF-8; render the document khbpf wrote");
			return;
		}
		to_crate(ld, val);
		if (ld->failed)
			return;
	}
}

/* ---- the span records: which go to events.spans, and the crate's join over them ---- */

static struct ev_u64 get_ev(struct loader *ld, struct json_object *o, const char *where,
			    const char *key)
{
	return loader__get_ev_u64(ld, o, where, key);
}

static int add_total(struct keyhog *k, struct loader *ld, struct json_object *o, int metric,
		     size_t idx)
{
	struct span_hw_total *t, *grown;
	struct span_hardware hw;
	struct json_object *v;
	struct ev_u64 cycles, instructions;
	enum ev_gap reason;
	bool recorded;
	char where[64];
	size_t cap;

	if (k->nr_tot == k->cap_tot) {
		cap = k->cap_tot ? k->cap_tot * 2 : 64;
		grown = realloc(k->tot, cap * sizeof(*grown));
		if (!grown)
			return loader__nomem(ld);
		k->tot = grown;
		k->cap_tot = cap;
	}
	snprintf(where, sizeof(where), "events.spans[%zu]", idx);
	t = &k->tot[k->nr_tot];
	memset(t, 0, sizeof(*t));
	t->metric_id = keyhog_metric_ids[metric];
	t->thread_id = loader__get_u64(ld, o, where, "thread_id");
	t->calls = 1;
	v = loader__get_ev(ld, o, where, "hardware", &recorded, &reason);
	if (ld->failed)
		return ld->failed;
	t->hardware = recorded;
	if (recorded) {
		snprintf(where, sizeof(where), "events.spans[%zu].hardware", idx);
		hw.cycles_begin = get_ev(ld, v, where, "cycles_begin");
		hw.cycles_end = get_ev(ld, v, where, "cycles_end");
		hw.instructions_begin = get_ev(ld, v, where, "instructions_begin");
		hw.instructions_end = get_ev(ld, v, where, "instructions_end");
		if (ld->failed)
			return ld->failed;
		cycles = span_hardware__cycles(&hw);
		instructions = span_hardware__instructions(&hw);
		t->with_counters = cycles.recorded || instructions.recorded;
		t->cycles = cycles.recorded ? cycles.value : 0;
		t->instructions = instructions.recorded ? instructions.value : 0;
	}
	k->nr_tot++;
	return 0;
}

/* One span record: kept (a name of the crate's) or set aside; at is its place. */
static void sort_span(struct keyhog *k, struct loader *ld, struct json_object *o, size_t idx,
		      uint64_t at)
{
	struct json_object *m;
	int metric;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "metric_id", &m) ||
	    !json_object_is_type(m, json_type_string)) {
		loader__fail(ld, "has a span record without a metric_id (events.spans[%zu])", idx);
		return;
	}
	metric = report__keyhog_metric(json_object_get_string(m));
	if (metric < 0) {
		if (list_push(&k->others, at))
			loader__nomem(ld);
		return;
	}
	if (list_push(&k->spans, at))
		loader__nomem(ld);
	else
		add_total(k, ld, o, metric, idx);
}

static void sort_streamed_span(struct loader *ld, struct json_object *o, size_t idx, void *arg)
{
	sort_span(arg, ld, o, idx, ld->elem_at);
}

static void list_streamed(struct loader *ld, struct json_object *o, size_t idx, void *arg)
{
	(void)o;
	(void)idx;
	if (list_push(arg, ld->elem_at))
		loader__nomem(ld);
}

static int cmp_stage(const void *a, const void *b)
{
	int x = report__keyhog_metric(((const struct stage_hardware *)a)->metric_id);
	int y = report__keyhog_metric(((const struct stage_hardware *)b)->metric_id);

	return x - y;
}

/* The crate's span_aggregation: its join over the records kept, stages in MetricId order. */
static struct json_object *crate_aggregation(struct keyhog *k)
{
	struct span_hw_aggregation agg;
	struct json_object *o;

	if (span_hw_aggregation__from_totals(&agg, k->tot, k->nr_tot))
		return NULL;
	qsort(agg.stages, agg.nr_stages, sizeof(*agg.stages), cmp_stage);
	o = evjson__span_hw_aggregation(&agg);
	span_hw_aggregation__free(&agg);
	return o;
}

/* ---- the output tree ---- */

static struct json_object *build(const void *ctx, size_t i, int *err)
{
	const struct kh_lazy *lz = ctx;
	struct loader *ld = &lz->k->ld;
	struct json_object *o = NULL;

	if (lz->tree)
		o = json_object_get(json_object_array_get_idx(lz->tree, (size_t)lz->list->at[i]));
	else if (loader__element_at(ld, lz->id, lz->list->at[i], &o))
		o = NULL;
	if (o && !ld->failed) {
		to_crate(ld, o);
		if (lz->span && json_object_is_type(o, json_type_object) &&
		    json_object_object_add(o, "version", json_object_new_int(KEYHOG_SPAN_VERSION)))
			loader__nomem(ld);
	}
	if (ld->failed) {
		json_object_put(o);
		*err = -ld->failed;
		return NULL;
	}
	return o;
}

static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v) ?
		       v :
		       NULL;
}

/* o when it is an object (what members may be added to), else NULL. */
static struct json_object *object(struct json_object *o)
{
	return json_object_is_type(o, json_type_object) ? o : NULL;
}

/* The object holding stream id's array in the tree, and the array's key. */
static struct json_object *stream_parent(struct json_object *root, enum stream_id id,
					 const char **key)
{
	switch (id) {
	case STREAM_THREADS:
		*key = "threads";
		return root;
	case STREAM_SPANS:
		*key = "spans";
		return object(member(root, "events"));
	case STREAM_UTIL_THREADS:
		*key = "threads";
		return object(member(member(member(root, "hardware"), "value"), "utilization"));
	default:
		return NULL;
	}
}

/*
 * Stream id's array in the tree becomes a lazy array over list (the array
 * of the tree itself when it was not streamed: its elements are the list).
 */
static int make_lazy(struct keyhog *k, struct json_object *root, enum stream_id id,
		     struct kh_list *list, struct kh_lazy *lz, struct json_object *parent,
		     const char *key)
{
	struct json_object *arr;

	lz->k = k;
	lz->list = list;
	lz->id = id;
	lz->span = id == STREAM_SPANS && parent != root;
	if (!parent)
		return 0;
	arr = jsonstream__lazy_array(lz, list->nr, build);
	if (!arr || json_object_object_add(parent, key, arr))
		return loader__nomem(&k->ld);
	return 0;
}

/* The spans of a document whose span array was not streamed: sorted from the tree. */
static int sort_tree_spans(struct keyhog *k, struct json_object *arr)
{
	size_t i, n = json_object_array_length(arr);

	for (i = 0; i < n && !k->ld.failed; i++)
		sort_span(k, &k->ld, json_object_array_get_idx(arr, i), i, i);
	return k->ld.failed;
}

static int list_tree(struct keyhog *k, struct kh_list *l, struct json_object *arr)
{
	size_t i, n = json_object_array_length(arr);

	for (i = 0; i < n; i++)
		if (list_push(l, i))
			return loader__nomem(&k->ld);
	return 0;
}

struct kh_out {
	struct kh_lazy spans, others, threads, util;
	struct json_object *events_arr, *threads_arr, *util_arr; /* not streamed: the tree's */
};

/* The arrays that grow with the work: listed (spans sorted), from the file or the tree. */
static int gather(struct keyhog *k, struct json_object *root, struct kh_out *out)
{
	struct loader *ld = &k->ld;
	const char *key;
	struct json_object *p;

	p = stream_parent(root, STREAM_SPANS, &key);
	if (ld->streams[STREAM_SPANS].on)
		loader__stream_each(ld, STREAM_SPANS, sort_streamed_span, k);
	else if ((out->events_arr = member(p, key)) &&
		 json_object_is_type(out->events_arr, json_type_array))
		sort_tree_spans(k, json_object_get(out->events_arr));
	else
		out->events_arr = NULL;
	if (ld->streams[STREAM_THREADS].on)
		loader__stream_each(ld, STREAM_THREADS, list_streamed, &k->threads);
	else if ((out->threads_arr = member(root, "threads")) &&
		 json_object_is_type(out->threads_arr, json_type_array))
		list_tree(k, &k->threads, json_object_get(out->threads_arr));
	else
		out->threads_arr = NULL;
	p = stream_parent(root, STREAM_UTIL_THREADS, &key);
	if (ld->streams[STREAM_UTIL_THREADS].on)
		loader__stream_each(ld, STREAM_UTIL_THREADS, list_streamed, &k->util);
	else if ((out->util_arr = member(p, key)) &&
		 json_object_is_type(out->util_arr, json_type_array))
		list_tree(k, &k->util, json_object_get(out->util_arr));
	else
		out->util_arr = NULL;
	return ld->failed;
}

/* collectors: the crate's ids; the others (span-probes) into khbpf_collectors. */
static int split_collectors(struct loader *ld, struct json_object *list, struct json_object **crate,
			    struct json_object **own)
{
	struct json_object *c, *id;
	size_t i, n;
	int j;
	bool known;

	*crate = json_object_new_array();
	*own = json_object_new_array();
	if (!*crate || !*own)
		return loader__nomem(ld);
	n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
	for (i = 0; i < n; i++) {
		c = json_object_array_get_idx(list, i);
		known = false;
		if (json_object_object_get_ex(c, "collector", &id) &&
		    json_object_is_type(id, json_type_string))
			for (j = 0; j < COLLECTOR_SPAN_PROBES; j++)
				known = known ||
					!strcmp(json_object_get_string(id), collector_id__name(j));
		if (json_object_array_add(known ? *crate : *own, json_object_get(c)))
			return loader__nomem(ld);
	}
	return 0;
}

/* hardware.value.span_aggregation: the crate's join; khbpf's beside it. */
static int swap_aggregation(struct keyhog *k, struct json_object *root)
{
	struct json_object *hw = object(member(member(root, "hardware"), "value"));
	struct json_object *agg = member(hw, "span_aggregation"), *st, *mine;

	if (!agg || !json_object_object_get_ex(agg, "status", &st) ||
	    strcmp(json_object_get_string(st), "recorded"))
		return 0;
	mine = crate_aggregation(k);
	if (!mine || json_object_object_add(hw, "khbpf_span_aggregation", json_object_get(agg)) ||
	    json_object_object_add(hw, "span_aggregation", evjson__recorded(mine)))
		return loader__nomem(&k->ld);
	return 0;
}

/* The top level again, in the document's order, the khbpf-only lists after their own. */
static struct json_object *rebuild_top(struct keyhog *k, struct json_object *root,
				       struct json_object *crate_collectors,
				       struct json_object *own_collectors,
				       struct json_object *khbpf_spans)
{
	struct json_object *top = json_object_new_object();
	bool err = !top;

	json_object_object_foreach(root, key, val) {
		if (err)
			break;
		if (!strcmp(key, "schema")) {
			err = json_object_object_add(
				top, key, json_object_new_string("khbpf-evidence-keyhog"));
		} else if (!strcmp(key, "collectors")) {
			err = json_object_object_add(top, key, json_object_get(crate_collectors)) ||
			      json_object_object_add(top, "khbpf_collectors",
						     json_object_get(own_collectors));
		} else if (!strcmp(key, "events")) {
			err = json_object_object_add(top, key, json_object_get(val)) ||
			      json_object_object_add(top, "khbpf_spans",
						     json_object_get(khbpf_spans));
		} else {
			err = json_object_object_add(top, key, json_object_get(val));
		}
	}
	if (err) {
		json_object_put(top);
		loader__nomem(&k->ld);
		return NULL;
	}
	return top;
}

static int render(struct keyhog *k, struct json_object *root, int out_fd)
{
	struct loader *ld = &k->ld;
	struct json_object *crate = NULL, *own = NULL, *kspans = NULL, *events, *top = NULL;
	struct json_object *parent;
	struct kh_out o = { 0 };
	const char *key;
	int err;

	if (gather(k, root, &o))
		goto out;
	/* Everything but the lazy arrays, whose elements are mapped as they are made. */
	to_crate(ld, root);
	if (ld->failed || split_collectors(ld, member(root, "collectors"), &crate, &own) ||
	    swap_aggregation(k, root))
		goto out;
	events = object(member(root, "events"));
	if (events &&
	    json_object_object_add(events, "version", json_object_new_int(KEYHOG_EVENTS_VERSION))) {
		loader__nomem(ld);
		goto out;
	}
	kspans = json_object_new_object();
	if (!kspans || json_object_object_add(kspans, "count", evjson__u64(k->others.nr))) {
		loader__nomem(ld);
		goto out;
	}
	/* The lazy arrays: kept spans, the others, threads, utilization's threads. */
	o.spans.tree = o.events_arr;
	o.others.tree = o.events_arr;
	o.threads.tree = o.threads_arr;
	o.util.tree = o.util_arr;
	parent = stream_parent(root, STREAM_SPANS, &key);
	if (make_lazy(k, root, STREAM_SPANS, &k->spans, &o.spans, parent, key) ||
	    make_lazy(k, root, STREAM_SPANS, &k->others, &o.others, kspans, "spans"))
		goto out;
	o.others.span = false;
	parent = stream_parent(root, STREAM_THREADS, &key);
	if (make_lazy(k, root, STREAM_THREADS, &k->threads, &o.threads,
		      o.threads_arr || ld->streams[STREAM_THREADS].on ? parent : NULL, key))
		goto out;
	parent = stream_parent(root, STREAM_UTIL_THREADS, &key);
	if (make_lazy(k, root, STREAM_UTIL_THREADS, &k->util, &o.util,
		      o.util_arr || ld->streams[STREAM_UTIL_THREADS].on ? parent : NULL, key))
		goto out;
	top = rebuild_top(k, root, crate, own, kspans);
	if (!top)
		goto out;
	err = jsonstream__write(top, EVJSON_TO_STRING_FLAGS, true, out_fd);
	if (err && !ld->failed) {
		if (err == -ENOMEM)
			loader__nomem(ld);
		else {
			ld->failed = err;
			snprintf(ld->err, ld->errlen, "could not be written: %s", strerror(-err));
		}
	}
out:
	json_object_put(top);
	json_object_put(crate);
	json_object_put(own);
	json_object_put(kspans);
	json_object_put(o.events_arr);
	json_object_put(o.threads_arr);
	json_object_put(o.util_arr);
	return ld->failed;
}

int report__keyhog(int in_fd, int out_fd, char *err, size_t errlen)
{
	return report__keyhog_opts(in_fd, out_fd, NULL, err, errlen);
}

int report__keyhog_opts(int in_fd, int out_fd, const struct report_load_opts *opts, char *err,
			size_t errlen)
{
	struct keyhog k = { .ld = { .err = err, .errlen = errlen, .no_gaps = true } };
	struct json_object *root = NULL, *s;
	int ret;

	if (opts) {
		k.ld.outline_max = opts->outline_max;
		k.ld.element_max = opts->element_max;
	}

	ret = jscan__from_fd(in_fd, &k.ld.scan);
	if (ret) {
		snprintf(err, errlen, "out of memory");
		return ret;
	}
	ret = loader__outline(&k.ld, &root);
	if (!ret) {
		loader__find_placeholders(&k.ld, root);
		if (!json_object_object_get_ex(root, "schema", &s) ||
		    !json_object_is_type(s, json_type_string) ||
		    strcmp(json_object_get_string(s), "khbpf-evidence"))
			loader__fail(
				&k.ld,
				"is not a khbpf evidence document; render the one 'khbpf run -o' or 'khbpf attach -o' wrote");
		/* json-c clamps what is past 64 bits: the rendering would not be the document. */
		else if (!loader__check_range(&k.ld, k.ld.scan))
			render(&k, root, out_fd);
	}
	/*
	 * Not JSON comes first, as for `khbpf report`: an element that does
	 * not parse, one after a field found wrong, one of an array given again.
	 */
	if (k.ld.not_json)
		loader__not_json(&k.ld);
	else if (k.ld.failed == -EPROTO || (!k.ld.failed && k.ld.arrays_unread))
		loader__check_json(&k.ld);
	ret = k.ld.failed;
	json_object_put(root);
	jscan__free(k.ld.scan);
	free(k.spans.at);
	free(k.others.at);
	free(k.threads.at);
	free(k.util.at);
	free(k.tot);
	return ret;
}

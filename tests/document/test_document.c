// SPDX-License-Identifier: MIT
/*
 * The whole khbpf document: shape, exact integers, and files for the schema
 * validator (tests/validate_schema.py runs over the .json files in $KHBPF_TEST_OUT).
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
#include <unistd.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "cmd/cli.h"
#include "document/document.h"
#include "document/evjson.h"
#include "lib/jsonstream.h"
#include "lib/output.h"

static const char *out_dir(void)
{
	const char *d = getenv("KHBPF_TEST_OUT");

	return d && *d ? d : "build/test-out";
}

static void save(struct json_object *doc, const char *name)
{
	char path[512];
	const char *text = evjson__to_string(doc);

	mkdir(out_dir(), 0755);
	snprintf(path, sizeof(path), "%s/%s", out_dir(), name);
	assert_int_equal(output__write_file(path, text, strlen(text), NULL), 0);
}

static struct json_object *get(struct json_object *o, const char *path)
{
	char buf[256], *tok, *save_ptr = NULL;
	struct json_object *cur = o;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save_ptr); tok; tok = strtok_r(NULL, ".", &save_ptr)) {
		if (json_object_is_type(cur, json_type_array))
			cur = json_object_array_get_idx(cur, (size_t)atoi(tok));
		else if (!json_object_object_get_ex(cur, tok, &cur))
			cur = NULL;
		assert_non_null(cur);
	}
	return cur;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	long n;
	char *buf;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/*
 * The file `run -o` writes (cli__emit_json_opts: the lazily built document
 * streamed to the temp file) holds byte for byte what the whole tree's text
 * and a newline were, as written before the writer streamed.
 */
static void expect_written_same(const struct evidence_doc *doc, struct json_object *eager)
{
	struct json_object *lazy = evidence_doc__to_json_lazy(doc);
	const char *want = evjson__to_string(eager);
	char path[512];
	size_t len;
	char *got;

	assert_non_null(lazy);
	mkdir(out_dir(), 0755);
	snprintf(path, sizeof(path), "%s/document-streamed.json", out_dir());
	assert_int_equal(cli__emit_json_opts("test", lazy, path, NULL), 0);
	got = slurp(path, &len);
	assert_int_equal(len, strlen(want) + 1);
	assert_memory_equal(got, want, len - 1);
	assert_int_equal(got[len - 1], '\n');
	free(got);
	unlink(path);
	json_object_put(lazy);
}

/*
 * The lazily built document (threads and span records made while the text
 * is written) prints byte for byte as the whole tree does, in every layout,
 * and is written to a file the same.
 */
static void expect_lazy_same_text(const struct evidence_doc *doc, struct json_object *eager)
{
	static const int layouts[] = {
		JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
		JSON_C_TO_STRING_PLAIN,
		JSON_C_TO_STRING_SPACED,
		JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_PRETTY_TAB,
	};
	struct json_object *lazy = evidence_doc__to_json_lazy(doc);
	size_t i;

	assert_non_null(lazy);
	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		char *want = strdup(json_object_to_json_string_ext(eager, layouts[i]));

		assert_non_null(want);
		assert_string_equal(json_object_to_json_string_ext(lazy, layouts[i]), want);
		free(want);
	}
	json_object_put(lazy);
	expect_written_same(doc, eager);
}

/* A document with every part recorded, extreme values and hostile strings. */
static void test_document__full_document(void **state)
{
	struct thread_cpu t0[] = { { 100, 10 }, { 101, 20 } };
	struct thread_cpu t1[] = { { 100, 510 }, { 102, 5 } };
	struct thread_census c0 = { .threads = t0, .nr_threads = 2 };
	struct thread_census c1 = { .elapsed_ns = 1000, .threads = t1, .nr_threads = 2 };
	struct cpu_frequency_sample fs = { 5, 800000, 3600000, 2200000, 2 };
	struct utilization_opts uo = {
		.first = &c0,
		.last = &c1,
		.samples_retained = 2,
		.wall_ns = 1000,
		.logical_cpus = 2,
		.frequency_samples = &fs,
		.nr_frequency_samples = 1,
		.frequency_availability = { .recorded = true, .value = EV_SRC_SYSFS_CPU },
	};
	struct span_record spans[2];
	struct log2_bucket hist[] = { { 1024, 2047, 3 }, { 2048, 4095, UINT64_MAX } };
	struct span_metric metric = { .metric_id = "parse-request",
				      .calls = UINT64_MAX,
				      .inclusive_ns = 5000,
				      .exclusive_ns = 4000,
				      .histogram = hist,
				      .nr_buckets = 2 };
	const struct usdt_count_by by[] = { { .id = 7, .process_start_unix_ns = 11, .hits = 5 },
					    { .id = 7, .hits = 3 },
					    { .id = 9, .hits = 2 } };
	const struct usdt_count usdt = { .metric_id = "libstdcxx-throw",
					 .probe = "libstdcxx:throw",
					 .hits = UINT64_MAX,
					 .processes = by,
					 .nr_processes = 1,
					 .threads = by + 1,
					 .nr_threads = 2 };
	struct span_probe probes[2] = {
		{ .object = "/usr/bin/app",
		  .symbol = "parse",
		  .symbols_from = "/usr/lib/debug/.build-id/ab/cdef.debug",
		  .metric_id = "parse-request",
		  .attached = true },
		{ .object = "/usr/lib/x\xff.so",
		  .symbol = "nope",
		  .metric_id = "nope",
		  .reason = "symbol 'nope' not found in /usr/lib/x.so" },
	};
	struct collector_capability caps[2];
	struct named_u64 loss[] = { { "ringbuf_drops", { .recorded = true, .value = 7 } } };
	struct doc_thread th = { .thread_id = 100, .comm = "we\"ird\\\n\x01\xc3" };
	struct hardware_run hw;
	struct evidence_doc doc;
	struct json_object *obj, *back;
	char *again;

	(void)state;
	memset(&hw, 0, sizeof(hw));
	memset(&doc, 0, sizeof(doc));
	memset(spans, 0, sizeof(spans));
	counter_set__all_gapped(&hw.counters, EV_SRC_PERF_EVENT_OPEN, EV_GAP_UNSUPPORTED);
	scheduler_evidence__all_gapped(&hw.scheduler, EV_SRC_BPF_TRACEPOINT, EV_GAP_UNAVAILABLE);
	hw.scheduler.cpu_migrations = sev_u64__recorded(UINT64_MAX, EV_SRC_BPF_TRACEPOINT);
	assert_int_equal(utilization__compute(&hw.utilization, &uo), 0);
	hw.topology.logical_cpus = 2;
	hw.topology.physical_cores = sev_u32__recorded(2, EV_SRC_SYSFS_CPU);
	hw.topology.packages = sev_u32__recorded(1, EV_SRC_SYSFS_CPU);
	hw.topology.numa_nodes = sev_u32__gap(EV_SRC_SYSFS_CPU, EV_GAP_UNAVAILABLE);
	hw.topology.affinity_cpus = sev_u32__recorded(UINT32_MAX, EV_SRC_SYSTEM_CALL);
	hw.topology.cpu_quota_milli = sev_u64__gap(EV_SRC_SYSFS_CGROUP, EV_GAP_UNAVAILABLE);
	spans[0].span_id = 1;
	spans[0].parent_span_id = ev_u64__gap(EV_GAP_UNAVAILABLE);
	snprintf(spans[0].metric_id, sizeof(spans[0].metric_id), "parse-request");
	spans[0].inclusive_ns = 5000;
	spans[0].exclusive_ns = 4000;
	spans[0].thread_id = 100;
	spans[0].hardware_recorded = true;
	spans[0].hardware.cycles_begin = ev_u64__recorded(0);
	spans[0].hardware.cycles_end = ev_u64__recorded(9000);
	spans[0].hardware.instructions_begin = ev_u64__recorded(0);
	spans[0].hardware.instructions_end = ev_u64__recorded(3000);
	spans[1] = spans[0];
	spans[1].span_id = 2;
	spans[1].parent_span_id = ev_u64__recorded(1);
	spans[1].hardware_recorded = false;
	spans[1].hardware_reason = EV_GAP_UNSUPPORTED;
	assert_int_equal(span_hw_aggregation__compute(&hw.span_aggregation, spans, 2), 0);
	hw.span_aggregation_recorded = true;

	collector_capability__set(&caps[0], COLLECTOR_SCHEDULER_ACTIVITY, AVAIL_AVAILABLE, NULL);
	collector_capability__set(&caps[1], COLLECTOR_HARDWARE_COUNTERS, AVAIL_UNSUPPORTED,
				  "perf_event_open: no PMU");
	th.scheduler = hw.scheduler;
	th.on_cpu_ns = sev_u64__recorded(500, EV_SRC_BPF_TRACEPOINT);

	doc.target.pid = UINT64_MAX;
	snprintf(doc.target.comm, sizeof(doc.target.comm), "app");
	doc.target.exe_recorded = true;
	snprintf(doc.target.exe, sizeof(doc.target.exe), "/opt/\xe2\x82 dir/app");
	doc.target.mode = TARGET_MODE_RUN;
	doc.target.exit_recorded = true;
	doc.target.exit_signaled = true;
	doc.target.exit_value = 9;
	doc.window.start_unix_ns = UINT64_MAX;
	doc.window.wall_ns = 1000;
	doc.window.end_reason = END_REASON_TARGET_EXIT;
	doc.collectors = caps;
	doc.nr_collectors = 2;
	doc.hardware_recorded = true;
	doc.hardware = &hw;
	doc.threads = &th;
	doc.nr_threads = 1;
	doc.events.availability_recorded = true;
	doc.events.availability = true;
	doc.events.dropped_span_events = 3;
	doc.events.spans = spans;
	doc.events.nr_spans = 2;
	doc.span_metrics = &metric;
	doc.nr_span_metrics = 1;
	doc.span_probes = probes;
	doc.nr_span_probes = 2;
	probes[1].site = "usdt-count";
	doc.usdt_counts = &usdt;
	doc.nr_usdt_counts = 1;
	doc.loss = loss;
	doc.nr_loss = 1;

	obj = evidence_doc__to_json(&doc);
	assert_non_null(obj);
	assert_string_equal(json_object_get_string(get(obj, "schema")), "khbpf-evidence");
	assert_int_equal(json_object_get_uint64(get(obj, "schema_version.major")), 1);
	assert_string_equal(json_object_get_string(get(obj, "target.mode")), "run");
	assert_int_equal(json_object_get_uint64(get(obj, "target.exit.value.signal")), 9);
	assert_true(json_object_get_uint64(get(obj, "target.pid")) == UINT64_MAX);
	assert_true(json_object_get_uint64(
			    get(obj, "hardware.value.scheduler.cpu_migrations.value.value")) ==
		    UINT64_MAX);
	assert_int_equal(json_object_get_uint64(get(
				 obj, "hardware.value.span_aggregation.value.run.cpi_milli.value")),
			 3000);
	assert_string_equal(json_object_get_string(get(obj, "span_probes.1.status")), "failed");
	/* A site's role: "function" unless said; a counted probe's hits by process and thread. */
	assert_string_equal(json_object_get_string(get(obj, "span_probes.0.site")), "function");
	assert_string_equal(json_object_get_string(get(obj, "span_probes.1.site")), "usdt-count");
	assert_string_equal(json_object_get_string(get(obj, "usdt_counts.0.probe")),
			    "libstdcxx:throw");
	assert_true(json_object_get_uint64(get(obj, "usdt_counts.0.hits")) == UINT64_MAX);
	assert_int_equal(json_object_get_uint64(get(obj, "usdt_counts.0.processes.0.pid")), 7);
	assert_int_equal(
		json_object_get_uint64(get(obj, "usdt_counts.0.processes.0.process_start_unix_ns")),
		11);
	assert_int_equal(json_object_get_uint64(get(obj, "usdt_counts.0.threads.1.thread_id")), 9);
	assert_int_equal(json_object_get_uint64(get(obj, "usdt_counts.0.threads.1.hits")), 2);
	assert_false(json_object_object_get_ex(get(obj, "usdt_counts.0.threads.1"),
					       "process_start_unix_ns", NULL));
	/* Only a symbol from a debug file says where it came from. */
	assert_string_equal(json_object_get_string(get(obj, "span_probes.0.symbols_from")),
			    "/usr/lib/debug/.build-id/ab/cdef.debug");
	assert_false(json_object_object_get_ex(get(obj, "span_probes.1"), "symbols_from", NULL));
	assert_string_equal(json_object_get_string(get(obj, "window.end_reason")), "target-exit");
	assert_int_equal(json_object_get_uint64(get(obj, "loss.ringbuf_drops.value")), 7);
	assert_int_equal(json_object_get_uint64(get(obj, "events.dropped_point_events")), 0);

	/* Round trip: parse and print again, byte for byte the same. */
	again = strdup(evjson__to_string(obj));
	back = json_tokener_parse(again);
	assert_non_null(back);
	assert_string_equal(evjson__to_string(back), again);
	free(again);
	json_object_put(back);

	expect_lazy_same_text(&doc, obj);
	save(obj, "document-full.json");
	json_object_put(obj);
	utilization__free(&hw.utilization);
	span_hw_aggregation__free(&hw.span_aggregation);
}

/* Nothing measured: every value a gap, and still a valid document. */
static void test_document__all_gaps(void **state)
{
	struct evidence_doc doc;
	struct json_object *obj;

	(void)state;
	memset(&doc, 0, sizeof(doc));
	doc.hardware_recorded = false;
	doc.hardware_reason = EV_GAP_PERMISSION_DENIED;
	doc.events.availability_reason = EV_GAP_COLLECTOR_DISABLED;
	doc.target.exe_reason = EV_GAP_PERMISSION_DENIED;
	doc.target.exit_reason = EV_GAP_UNAVAILABLE;
	obj = evidence_doc__to_json(&doc);
	assert_non_null(obj);
	assert_string_equal(json_object_get_string(get(obj, "hardware.reason")),
			    "permission-denied");
	assert_string_equal(json_object_get_string(get(obj, "events.availability.status")),
			    "unavailable");
	assert_string_equal(json_object_get_string(get(obj, "target.exe.reason")),
			    "permission-denied");
	assert_int_equal(json_object_array_length(get(obj, "threads")), 0);
	expect_lazy_same_text(&doc, obj);
	save(obj, "document-gaps.json");
	json_object_put(obj);
}

/*
 * processes[].title: each read a SourcedEvidence<string> from
 * proc-pid-cmdline, its text made UTF-8, or the gap that says why none.
 */
static void test_document__process_title(void **state)
{
	struct doc_process p[2] = {
		{ .pid = 10,
		  .comm = "postgres",
		  .exe_reason = EV_GAP_UNAVAILABLE,
		  .title_join = "postgres: bench postgres [local] idle",
		  .title_end = "postgres: bench postgres [local] UPDATE \xff" },
		{ .pid = 2,
		  .comm = "kthreadd",
		  .exe_reason = EV_GAP_UNAVAILABLE,
		  .title_join_reason = EV_GAP_UNSUPPORTED,
		  .title_end_reason = EV_GAP_UNAVAILABLE },
	};
	struct evidence_doc doc;
	struct json_object *obj, *t;

	(void)state;
	memset(&doc, 0, sizeof(doc));
	doc.hardware_reason = EV_GAP_COLLECTOR_DISABLED;
	doc.events.availability_reason = EV_GAP_COLLECTOR_DISABLED;
	doc.processes = p;
	doc.nr_processes = 2;
	for (size_t i = 0; i < 2; i++)
		p[i].joined = "walk";
	obj = evidence_doc__to_json(&doc);
	assert_non_null(obj);
	t = get(obj, "processes.0.title");
	assert_int_equal(json_object_get_int(get(t, "version")), 1);
	assert_string_equal(json_object_get_string(get(t, "at_join.value.value")),
			    "postgres: bench postgres [local] idle");
	assert_string_equal(json_object_get_string(get(t, "at_end.value.value")),
			    "postgres: bench postgres [local] UPDATE \xef\xbf\xbd");
	assert_string_equal(json_object_get_string(get(t, "at_join.source")), "proc-pid-cmdline");
	t = get(obj, "processes.1.title");
	assert_string_equal(json_object_get_string(get(t, "at_join.value.status")), "unavailable");
	assert_string_equal(json_object_get_string(get(t, "at_join.value.reason")), "unsupported");
	assert_string_equal(json_object_get_string(get(t, "at_end.value.reason")), "unavailable");
	assert_string_equal(json_object_get_string(get(t, "at_end.source")), "proc-pid-cmdline");
	expect_lazy_same_text(&doc, obj);
	save(obj, "document-titles.json");
	json_object_put(obj);
}

/* A hardware object whose every sub-evidence is gapped, recorded as a whole. */
static void test_document__recorded_hardware_with_gaps(void **state)
{
	struct hardware_run hw;
	struct evidence_doc doc;
	struct utilization_opts uo = { .wall_ns = 0 };
	struct json_object *obj;

	(void)state;
	memset(&hw, 0, sizeof(hw));
	memset(&doc, 0, sizeof(doc));
	counter_set__all_gapped(&hw.counters, EV_SRC_PERF_EVENT_OPEN, EV_GAP_PERMISSION_DENIED);
	scheduler_evidence__all_gapped(&hw.scheduler, EV_SRC_PROC_PID_SCHED, EV_GAP_UNSUPPORTED);
	assert_int_equal(utilization__compute(&hw.utilization, &uo), 0);
	hw.span_aggregation_reason = EV_GAP_COLLECTOR_DISABLED;
	doc.hardware_recorded = true;
	doc.hardware = &hw;
	obj = evidence_doc__to_json(&doc);
	assert_non_null(obj);
	assert_string_equal(json_object_get_string(get(
				    obj, "hardware.value.topology.cpu_quota_milli.value.reason")),
			    "unavailable");
	assert_string_equal(
		json_object_get_string(get(obj, "hardware.value.span_aggregation.reason")),
		"collector-disabled");
	save(obj, "document-hw-gaps.json");
	json_object_put(obj);
	utilization__free(&hw.utilization);
}

static void record_copy(const void *ctx, size_t i, struct span_record *out)
{
	const struct span_record *recs = ctx;

	*out = recs[i];
}

/*
 * Many records of every kind, made one at a time by span_at while the file
 * is written (as `run` does), are the same bytes as the tree built whole
 * from an array of them: nested and root spans, gaps in every optional
 * field, counters and none, open spans, sampled-out and dropped counts.
 */
static void test_document__streamed_spans_same_bytes(void **state)
{
	enum { N = 3000 };
	struct span_record *recs = calloc(N, sizeof(*recs));
	struct open_span open[3];
	struct doc_thread th[2] = { { .thread_id = 7, .comm = "main" },
				    { .thread_id = 8, .comm = "w\xff" } };
	struct evidence_doc doc, streamed;
	struct json_object *eager;
	size_t i;

	(void)state;
	assert_non_null(recs);
	memset(&doc, 0, sizeof(doc));
	memset(open, 0, sizeof(open));
	for (i = 0; i < N; i++) {
		struct span_record *s = &recs[i];

		s->span_id = (i % 2 ? 1ULL << 40 : 2ULL << 40) + i;
		/* Every third a root span: its parent a gap. */
		s->parent_span_id =
			i % 3 ? ev_u64__recorded(s->span_id - 1) : ev_u64__gap(EV_GAP_UNAVAILABLE);
		snprintf(s->metric_id, sizeof(s->metric_id), "%s",
			 i % 5 ? "stage/parse" : "odd\xc3 \"metric\"");
		s->start_ns = i / 2 * 1000; /* pairs start together */
		s->inclusive_ns = i % 7 ? 1000 + i : UINT64_MAX;
		s->exclusive_ns = i % 7 ? 500 : 0;
		s->thread_id = i % 2 ? 7 : 8;
		s->task_id = ev_u64__gap(EV_GAP_UNAVAILABLE);
		s->worker_id = ev_u64__gap(EV_GAP_UNAVAILABLE);
		s->hardware_recorded = i % 4 != 0;
		s->hardware_reason = i % 8 ? EV_GAP_UNSUPPORTED : EV_GAP_COLLECTOR_DISABLED;
		if (s->hardware_recorded) {
			s->hardware.cycles_begin = ev_u64__recorded(i);
			s->hardware.cycles_end =
				i % 6 ? ev_u64__recorded(i * 3) : ev_u64__gap(EV_GAP_UNAVAILABLE);
			s->hardware.instructions_begin = ev_u64__recorded(0);
			s->hardware.instructions_end = ev_u64__recorded(i);
		}
		s->has_ledger = i % 11 != 0;
		s->ledger.on_cpu_ns =
			i % 13 ? ev_u64__recorded(i * 10) : ev_u64__gap(EV_GAP_UNAVAILABLE);
		s->ledger.run_delay_ns = i;
		s->ledger.voluntary_switches = i % 3;
		s->ledger.involuntary_switches = i % 4;
		s->ledger.migrations = i % 2;
	}
	for (i = 0; i < 3; i++) {
		open[i].span_id = 100 + i;
		open[i].parent_span_id =
			i ? ev_u64__recorded(100 + i - 1) : ev_u64__gap(EV_GAP_UNAVAILABLE);
		snprintf(open[i].metric_id, sizeof(open[i].metric_id), "stage/parse");
		open[i].thread_id = 7;
		open[i].start_ns = 5000 + i;
	}
	doc.target.exe_reason = EV_GAP_PERMISSION_DENIED;
	doc.target.exit_reason = EV_GAP_UNAVAILABLE;
	doc.hardware_reason = EV_GAP_UNSUPPORTED;
	doc.threads = th;
	doc.nr_threads = 2;
	doc.events.availability_recorded = true;
	doc.events.availability = true;
	doc.events.dropped_span_events = 17;
	doc.events.sampled_out_events = 123456;
	doc.events.spans = recs;
	doc.events.nr_spans = N;
	doc.open_spans = open;
	doc.nr_open_spans = 3;

	streamed = doc;
	streamed.events.spans = NULL;
	streamed.events.span_at = record_copy;
	streamed.events.span_ctx = recs;

	eager = evidence_doc__to_json(&doc);
	assert_non_null(eager);
	assert_int_equal(json_object_array_length(get(eager, "events.spans")), N);
	expect_lazy_same_text(&streamed, eager);
	/* The array-backed document streams the same too. */
	expect_written_same(&doc, eager);
	json_object_put(eager);
	free(recs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_document__full_document),
		cmocka_unit_test(test_document__all_gaps),
		cmocka_unit_test(test_document__process_title),
		cmocka_unit_test(test_document__recorded_hardware_with_gaps),
		cmocka_unit_test(test_document__streamed_spans_same_bytes),
	};

	return cmocka_run_group_tests_name("document", tests, NULL, NULL);
}

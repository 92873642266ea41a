/* SPDX-License-Identifier: MIT */
/*
 * Small evidence documents for the report tests, built as text: the
 * smallest document report_doc__load_string accepts, with the threads,
 * spans and extra top-level fields a test gives. Include after <cmocka.h>.
 */
#ifndef KHBPF_REPORT_TESTDOC_H
#define KHBPF_REPORT_TESTDOC_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "report/report.h"

#define FIXTURES "tests/fixtures/report"

/* A gapped thread entry, as /proc gives for a thread it missed. */
#define TESTDOC_THREAD(tid, comm)                                                          \
	"{\"version\":1,\"thread_id\":" #tid ",\"comm\":\"" comm "\",\"exited\":false,"    \
	"\"scheduler\":{\"version\":1,"                                                    \
	"\"voluntary_context_switches\":{\"value\":{\"status\":\"recorded\",\"value\":3}," \
	"\"source\":\"proc-pid-sched\"},"                                                  \
	"\"involuntary_context_switches\":{\"value\":{\"status\":\"unavailable\","         \
	"\"reason\":\"unavailable\"},\"source\":\"proc-pid-sched\"},"                      \
	"\"total_context_switches\":{\"value\":{\"status\":\"unavailable\","               \
	"\"reason\":\"unavailable\"},\"source\":\"proc-pid-sched\"},"                      \
	"\"cpu_migrations\":{\"value\":{\"status\":\"recorded\",\"value\":0},"             \
	"\"source\":\"proc-pid-sched\"},"                                                  \
	"\"scheduler_delay_ns\":{\"value\":{\"status\":\"recorded\",\"value\":250000},"    \
	"\"source\":\"proc-pid-schedstat\"},"                                              \
	"\"timeslices\":{\"value\":{\"status\":\"recorded\",\"value\":4},"                 \
	"\"source\":\"proc-pid-schedstat\"}},"                                             \
	"\"on_cpu_ns\":{\"value\":{\"status\":\"recorded\",\"value\":500000},"             \
	"\"source\":\"proc-pid-schedstat\"}}"

/* A root span (parent 0) or a child, with no hardware readings. */
static inline int testdoc_span(char *buf, size_t len, unsigned long long id,
			       unsigned long long parent, const char *metric,
			       unsigned long long start, unsigned long long incl,
			       unsigned long long tid)
{
	char par[96];

	if (parent)
		snprintf(par, sizeof(par), "{\"status\":\"recorded\",\"value\":%llu}", parent);
	else
		snprintf(par, sizeof(par),
			 "{\"status\":\"unavailable\",\"reason\":\"unavailable\"}");
	return snprintf(
		buf, len,
		"{\"version\":1,\"span_id\":%llu,\"parent_span_id\":%s,\"metric_id\":\"%s\","
		"\"start_ns\":%llu,\"inclusive_ns\":%llu,\"exclusive_ns\":%llu,"
		"\"thread_id\":%llu,"
		"\"task_id\":{\"status\":\"unavailable\",\"reason\":\"unavailable\"},"
		"\"worker_id\":{\"status\":\"unavailable\",\"reason\":\"unavailable\"},"
		"\"work_origin\":\"root\","
		"\"hardware\":{\"status\":\"unavailable\",\"reason\":\"unsupported\"}}",
		id, par, metric, start, incl, incl, tid);
}

/*
 * The document: threads and spans are JSON array bodies (may be empty),
 * extra is "" or more top-level members starting with a comma. malloc'd.
 */
static inline char *testdoc(unsigned long long wall_ns, const char *threads, const char *spans,
			    const char *extra)
{
	size_t len = strlen(threads) + strlen(spans) + strlen(extra) + 2048;
	char *buf = malloc(len);

	assert_non_null(buf);
	snprintf(
		buf, len,
		"{\"schema\":\"khbpf-evidence\","
		"\"schema_version\":{\"version\":1,\"major\":1,\"minor\":0},"
		"\"target\":{\"version\":1,\"pid\":7,\"comm\":\"t\",\"mode\":\"attach\"},"
		"\"window\":{\"version\":1,\"start_unix_ns\":0,\"wall_ns\":%llu,"
		"\"end_reason\":\"duration\"},"
		"\"collectors\":[],"
		"\"hardware\":{\"status\":\"unavailable\",\"reason\":\"collector-disabled\"},"
		"\"threads\":[%s],"
		"\"events\":{\"version\":1,\"availability\":{\"status\":\"recorded\",\"value\":true},"
		"\"dropped_events\":0,\"dropped_span_events\":0,\"dropped_point_events\":0,"
		"\"dropped_annotations\":0,\"sampled_out_events\":0,\"spans\":[%s],"
		"\"point_events\":[],\"annotations\":[]}%s}",
		wall_ns, threads, spans, extra);
	return buf;
}

static inline struct report_doc *testdoc_load(const char *text)
{
	struct report_doc *d = NULL;
	char err[512] = "";
	int ret = report_doc__load_string(text, strlen(text), &d, err, sizeof(err));

	if (ret)
		fail_msg("load failed (%d): %s", ret, err);
	return d;
}

static inline struct report_doc *fixture_load(const char *name)
{
	struct report_doc *d = NULL;
	char path[256], err[512] = "";
	int ret;

	snprintf(path, sizeof(path), FIXTURES "/%s", name);
	ret = report_doc__load_file(path, &d, err, sizeof(err));
	if (ret)
		fail_msg("%s: %s", path, err);
	return d;
}

/* The gap at that path of a loaded document; fails the test when there is none. */
static inline const struct report_gap *gap(const struct report_doc *d, const char *path)
{
	size_t i;

	for (i = 0; i < d->nr_gaps; i++)
		if (!strcmp(d->gaps[i].path, path))
			return &d->gaps[i];
	fail_msg("no gap %s", path);
	return NULL;
}

/* One read of a title (processes[].title.at_*): text, or the gap reason named. */
static inline struct json_object *testdoc_title_read(const char *text, const char *gap)
{
	struct json_object *o = json_object_new_object(), *v = json_object_new_object();

	if (text) {
		json_object_object_add(v, "status", json_object_new_string("recorded"));
		json_object_object_add(v, "value", json_object_new_string(text));
	} else {
		json_object_object_add(v, "status", json_object_new_string("unavailable"));
		json_object_object_add(v, "reason", json_object_new_string(gap));
	}
	json_object_object_add(o, "value", v);
	json_object_object_add(o, "source", json_object_new_string("proc-pid-cmdline"));
	return o;
}

/* processes[i].title of a json-c document: at_join and at_end, each text or a gap. */
static inline void testdoc_set_title(struct json_object *root, size_t i, const char *join,
				     const char *join_gap, const char *end, const char *end_gap)
{
	struct json_object *arr, *t = json_object_new_object();

	assert_true(json_object_object_get_ex(root, "processes", &arr));
	json_object_object_add(t, "version", json_object_new_int(1));
	json_object_object_add(t, "at_join", testdoc_title_read(join, join_gap));
	json_object_object_add(t, "at_end", testdoc_title_read(end, end_gap));
	json_object_object_add(json_object_array_get_idx(arr, i), "title", t);
}

#define TESTDOC_LONG_TITLE \
	"postgres: 15/main: autovacuum worker postgres and a tail past the column"

/*
 * tree.json with titles on most of its processes, some as PostgreSQL writes
 * them (malloc'd text): tree (the root) its argv at its join only; tree-a
 * "postgres: checkpointer " at both ends; 22694 a backend, idle at its join
 * and UPDATE at the end; 22695 a backend read at its join only; tree-k a
 * kernel thread's gaps; leaf-gc TESTDOC_LONG_TITLE; the others none.
 */
static inline char *testdoc_titled_tree(void)
{
	struct json_object *root = json_object_from_file(FIXTURES "/tree.json");
	char *text;

	assert_non_null(root);
	testdoc_set_title(root, 0, "build/workloads/tree /tmp/t.jsonl build/workloads/treeleaf",
			  NULL, NULL, "unavailable");
	testdoc_set_title(root, 1, "postgres: checkpointer ", NULL, "postgres: checkpointer ",
			  NULL);
	testdoc_set_title(root, 2, "postgres: bench postgres [local] idle", NULL,
			  "postgres: bench postgres [local] UPDATE", NULL);
	testdoc_set_title(root, 3, "postgres: bench postgres [local] idle in transaction", NULL,
			  NULL, "unavailable");
	testdoc_set_title(root, 4, NULL, "unsupported", NULL, "unsupported");
	testdoc_set_title(root, 8, TESTDOC_LONG_TITLE, NULL, TESTDOC_LONG_TITLE, NULL);
	text = strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
	assert_non_null(text);
	json_object_put(root);
	return text;
}

/* Occurrences of needle in hay. */
static inline size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

#endif /* KHBPF_REPORT_TESTDOC_H */

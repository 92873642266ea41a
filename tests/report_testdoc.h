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

// SPDX-License-Identifier: MIT
/*
 * serve_metrics: the gap metrics from evidence documents (the fixtures khbpf
 * report reads), the labels of group rows, and serve's own connections.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "serve/cglabels.h"
#include "serve/httpd.h"
#include "serve/promtext.h"
#include "serve/serve_groups.h"
#include "serve/serve_metrics.h"
#include "testutil.h"

static char *render(const char *fixture)
{
	struct json_object *doc = NULL;
	struct promtext *p;
	size_t len;
	char *text;

	if (fixture) {
		doc = json_object_from_file(fixture);
		assert_non_null(doc);
	}
	assert_int_equal(promtext__new(&p, false), 0);
	assert_int_equal(serve_metrics__gaps(p, doc), 0);
	text = promtext__finish(p, &len);
	assert_non_null(text);
	json_object_put(doc);
	return text;
}

static void assert_line(const char *text, const char *line)
{
	const char *at = strstr(text, line);

	if (!at || (at != text && at[-1] != '\n') || at[strlen(line)] != '\n')
		fail_msg("no line '%s' in:\n%s", line, text);
}

static size_t count(const char *text, const char *prefix)
{
	size_t n = 0;
	const char *at;

	for (at = text; (at = strstr(at, prefix)); at++)
		n += at == text || at[-1] == '\n';
	return n;
}

/* khbpf_evidence_available samples whose value is 0. */
static size_t zeros(const char *text)
{
	size_t n = 0;
	const char *at;

	for (at = text; (at = strstr(at, "khbpf_evidence_available{")); at++)
		n += strchr(at, '\n')[-1] == '0';
	return n;
}

/* A document full of gaps: each collector and field is 0, with its reason. */
static void test_serve_metrics__gaps_are_series(void **state)
{
	char *t = render("tests/fixtures/report/gaps.json");

	(void)state;
	assert_line(t, "khbpf_evidence_available{collector=\"scheduler-activity\",field=\"*\"} 0");
	assert_line(t, "khbpf_evidence_gap_info{collector=\"scheduler-activity\",field=\"*\","
		       "reason=\"permission-denied\"} 1");
	assert_line(t, "khbpf_evidence_available{collector=\"counters\",field=\"cycles\"} 0");
	assert_line(t, "khbpf_evidence_gap_info{collector=\"counters\",field=\"cycles\","
		       "reason=\"permission-denied\"} 1");
	assert_line(
		t, "khbpf_evidence_gap_info{collector=\"counters\",field=\"stalled_cycles_memory\","
		   "reason=\"unsupported\"} 1");
	/* Every 0 has its reason line, and here nothing is 1. */
	assert_int_equal(count(t, "khbpf_evidence_gap_info{"), zeros(t));
	assert_int_equal(zeros(t), count(t, "khbpf_evidence_available{"));
	free(t);
}

/* A recorded run: the scheduler is available, topology is exported. */
static void test_serve_metrics__recorded_fields(void **state)
{
	struct json_object *doc = json_object_from_file("tests/fixtures/report/sched.json");
	struct json_object *hw, *v, *topo, *cores, *cv;
	char line[160], *t;
	size_t avail0, gaps;

	(void)state;
	assert_non_null(doc);
	assert_true(json_object_object_get_ex(doc, "hardware", &hw));
	assert_true(json_object_object_get_ex(hw, "value", &v));
	assert_true(json_object_object_get_ex(v, "topology", &topo));
	assert_true(json_object_object_get_ex(topo, "physical_cores", &cores));
	assert_true(json_object_object_get_ex(cores, "value", &cv));
	assert_true(json_object_object_get_ex(cv, "value", &cv));
	t = render("tests/fixtures/report/sched.json");
	assert_line(t, "khbpf_evidence_available{collector=\"scheduler-activity\",field=\"*\"} 1");
	assert_line(
		t,
		"khbpf_evidence_available{collector=\"scheduler\",field=\"voluntary_context_switches\"} 1");
	snprintf(line, sizeof(line), "khbpf_topology{field=\"physical_cores\"} %llu",
		 (unsigned long long)json_object_get_uint64(cv));
	assert_line(t, line);
	/* As many gap lines as 0s. */
	avail0 = zeros(t);
	gaps = count(t, "khbpf_evidence_gap_info{");
	assert_int_equal(gaps, avail0);
	assert_true(gaps > 0);
	free(t);
	json_object_put(doc);
}

/* Before the first window: the families exist, with no samples. */
static void test_serve_metrics__no_document(void **state)
{
	char *t = render(NULL);

	(void)state;
	assert_int_equal(count(t, "khbpf_evidence_available{"), 0);
	assert_non_null(strstr(t, "# TYPE khbpf_evidence_available gauge"));
	free(t);
}

#define ID1 "4b1f0a7c2e9d83f5a6b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f70"
#define UID_ "8a6f1e2b_4c3d_4e5f_9a0b_1c2d3e4f5a6b"

static char *render_rows(const struct serve_metrics_src *src, const struct serve_row *rows,
			 size_t nr)
{
	struct promtext *p;
	size_t len;
	char *text;

	assert_int_equal(promtext__new(&p, false), 0);
	assert_int_equal(serve_metrics__rows(p, src, rows, nr), 0);
	text = promtext__finish(p, &len);
	assert_non_null(text);
	return text;
}

/*
 * --labels: each cgroup row's series carry the labels of its path (and a
 * container's name from the file), in every family; a path that gives none
 * keeps its cgroup label alone; --by process rows get none.
 */
static void test_serve_metrics__cgroup_labels(void **state)
{
	struct cglabels_opts lo = { .sz = sizeof(lo), .which = CGLABELS_ALL };
	struct serve_metrics_src src = { .group_by = KHBPF_GROUP_CGROUP };
	char *root = tree_new("serve-labels"), names[PATH_MAX], err[256], *t;
	struct cglabels *labels = NULL;
	struct serve_row rows[3];

	(void)state;
	tree_put(root, "names.json", "{\"" ID1 "\": \"web\"}");
	snprintf(names, sizeof(names), "%s/names.json", root);
	lo.container_names = names;
	assert_int_equal(cglabels__new(&labels, &lo, err, sizeof(err)), 0);
	src.labels = labels;
	memset(rows, 0, sizeof(rows));
	snprintf(rows[0].cgroup, sizeof(rows[0].cgroup),
		 "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		 ".slice/cri-containerd-" ID1 ".scope");
	rows[0].acc.k.nvcsw = 7;
	rows[0].acc.b.wait_hist[0] = 2;
	snprintf(rows[1].cgroup, sizeof(rows[1].cgroup), "/khbpf-x");
	rows[1].acc.k.nvcsw = 3;
	snprintf(rows[2].cgroup, sizeof(rows[2].cgroup), "/system.slice/nginx.service");
	rows[2].acc.k.nvcsw = 5;

	t = render_rows(&src, rows, 3);
	assert_line(t, "khbpf_voluntary_switches_total{cgroup=\"/kubepods.slice/"
		       "kubepods-burstable.slice/kubepods-burstable-pod" UID_
		       ".slice/cri-containerd-" ID1 ".scope\",unit=\"cri-containerd-" ID1
		       ".scope\",container_id=\"" ID1 "\",container_name=\"web\",pod_uid=\""
		       "8a6f1e2b-4c3d-4e5f-9a0b-1c2d3e4f5a6b\",qos=\"Burstable\"} 7");
	assert_line(t, "khbpf_voluntary_switches_total{cgroup=\"/khbpf-x\"} 3");
	assert_line(t, "khbpf_voluntary_switches_total{cgroup=\"/system.slice/nginx.service\","
		       "unit=\"nginx.service\"} 5");
	assert_line(t, "khbpf_migrations_by_distance_total{cgroup=\"/system.slice/nginx.service\","
		       "unit=\"nginx.service\",distance=\"smt\"} 0");
	assert_line(t, "khbpf_runqueue_delay_seconds_count{cgroup=\"/system.slice/nginx.service\","
		       "unit=\"nginx.service\"} 0");
	/* Every series of the container has all five; le comes after them. */
	assert_int_equal(count(t, "khbpf_runqueue_delay_seconds_bucket{"), 3 * KHBPF_RQ_SLOTS);
	assert_non_null(strstr(t, "qos=\"Burstable\",le=\"+Inf\"} 2\n"));
	free(t);

	/* Only the chosen labels. */
	cglabels__free(labels);
	lo.which = CGLABELS_POD;
	lo.container_names = NULL;
	assert_int_equal(cglabels__new(&labels, &lo, err, sizeof(err)), 0);
	src.labels = labels;
	t = render_rows(&src, rows, 3);
	assert_null(strstr(t, "unit="));
	assert_null(strstr(t, "container_id="));
	assert_non_null(strstr(
		t, "\",pod_uid=\"8a6f1e2b-4c3d-4e5f-9a0b-1c2d3e4f5a6b\",qos=\"Burstable\"} 7\n"));
	free(t);

	/* Rows of processes have no cgroup to read. */
	src.group_by = KHBPF_GROUP_PROCESS;
	memset(rows, 0, sizeof(rows));
	snprintf(rows[0].comm, sizeof(rows[0].comm), "nginx");
	t = render_rows(&src, rows, 1);
	assert_line(t, "khbpf_voluntary_switches_total{comm=\"nginx\"} 0");
	free(t);
	cglabels__free(labels);
	tree_free(root);
}

/* Every bound's overflow of httpd, one series each, and the connections open. */
static void test_serve_metrics__http(void **state)
{
	struct httpd_stats st = {
		.connections = 64,
		.shed_addr = 1,
		.shed_total = 2,
		.refused = 3,
		.head_expired = 4,
		.answer_expired = 5,
	};
	struct promtext *p;
	size_t len;
	char *t;

	(void)state;
	assert_int_equal(promtext__new(&p, false), 0);
	assert_int_equal(serve_metrics__http(p, &st), 0);
	t = promtext__finish(p, &len);
	assert_non_null(t);
	assert_line(t, "# TYPE khbpf_http_connections gauge");
	assert_line(t, "khbpf_http_connections 64");
	assert_line(t, "# TYPE khbpf_http_connections_closed_total counter");
	assert_line(t, "khbpf_http_connections_closed_total{reason=\"address_limit\"} 1");
	assert_line(t, "khbpf_http_connections_closed_total{reason=\"total_limit\"} 2");
	assert_line(t, "khbpf_http_connections_closed_total{reason=\"head_deadline\"} 4");
	assert_line(t, "khbpf_http_connections_closed_total{reason=\"answer_deadline\"} 5");
	assert_line(t, "khbpf_http_connections_refused_total 3");
	assert_int_equal(count(t, "khbpf_http_connections_closed_total{"), 4);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serve_metrics__gaps_are_series),
		cmocka_unit_test(test_serve_metrics__recorded_fields),
		cmocka_unit_test(test_serve_metrics__no_document),
		cmocka_unit_test(test_serve_metrics__cgroup_labels),
		cmocka_unit_test(test_serve_metrics__http),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

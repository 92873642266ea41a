// SPDX-License-Identifier: MIT
/* serve_metrics: the gap metrics from evidence documents (the fixtures khbpf report reads). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "promtext.h"
#include "serve_metrics.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serve_metrics__gaps_are_series),
		cmocka_unit_test(test_serve_metrics__recorded_fields),
		cmocka_unit_test(test_serve_metrics__no_document),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

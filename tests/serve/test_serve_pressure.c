// SPDX-License-Identifier: MIT
/* serve's pressure and thermal families from fixture trees: exact decimals, absent gaps. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/promtext.h"
#include "serve/serve_metrics.h"
#include "serve/serve_pressure.h"
#include "testutil.h"

static char *render(const char *root)
{
	struct serve_metrics_src src = { .root = root };
	struct promtext *p;
	size_t len;
	char *text;

	assert_int_equal(promtext__new(&p, false), 0);
	assert_int_equal(serve_pressure__render(p, &src), 0);
	text = promtext__finish(p, &len);
	assert_non_null(text);
	return text;
}

static void assert_line(const char *text, const char *line)
{
	const char *at = strstr(text, line);

	if (!at || (at != text && at[-1] != '\n') || at[strlen(line)] != '\n')
		fail_msg("no line '%s' in:\n%s", line, text);
}

static void test_serve_pressure__host_and_thermal(void **state)
{
	char *dir = tree_new("serve-psi"), *t;

	(void)state;
	tree_put(dir, "proc/pressure/cpu",
		 "some avg10=1.00 avg60=0.00 avg300=0.00 total=2839699468\n"
		 "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	tree_put(dir, "proc/pressure/memory",
		 "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n"
		 "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	tree_put(dir, "proc/pressure/io", "some avg10=0.00 avg60=0.00 avg300=0.00 total=x\n");
	tree_put(dir, "sys/class/thermal/thermal_zone0/temp", "45500\n");
	tree_put(dir, "sys/class/thermal/thermal_zone1/temp", "38000\n");
	tree_put(dir, "sys/devices/system/cpu/online", "0\n");
	tree_put(dir, "sys/devices/system/cpu/cpu0/topology/physical_package_id", "0\n");
	tree_put(dir, "sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count", "3\n");
	t = render(dir);
	/* Microseconds as exact decimal seconds. */
	assert_line(t, "khbpf_pressure_stalled_seconds_total{resource=\"cpu\",kind=\"some\"} "
		       "2839.699468");
	assert_line(t, "khbpf_pressure_stalled_seconds_total{resource=\"memory\",kind=\"some\"} "
		       "0.000001");
	assert_line(t, "khbpf_pressure_stalled_seconds_total{resource=\"memory\",kind=\"full\"} 0");
	/* The system's cpu full is the kernel's constant, and io is malformed: no series. */
	assert_null(strstr(t, "resource=\"cpu\",kind=\"full\""));
	assert_null(strstr(t, "resource=\"io\""));
	assert_line(t, "khbpf_thermal_max_zone_celsius 45.5");
	assert_line(t, "khbpf_thermal_throttle_events_total{kind=\"core\"} 3");
	/* No package_throttle_count: no package series. */
	assert_null(strstr(t, "kind=\"package\""));
	free(t);
	tree_free(dir);
}

static void test_serve_pressure__none(void **state)
{
	char *dir = tree_new("serve-psi"), *t;

	(void)state;
	t = render(dir);
	/* The family is there, with no samples; thermal families are absent. */
	assert_non_null(strstr(t, "# TYPE khbpf_pressure_stalled_seconds_total counter\n"));
	assert_null(strstr(t, "khbpf_pressure_stalled_seconds_total{"));
	assert_null(strstr(t, "thermal"));
	free(t);
	tree_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serve_pressure__host_and_thermal),
		cmocka_unit_test(test_serve_pressure__none),
	};

	return cmocka_run_group_tests_name("serve_pressure", tests, NULL, NULL);
}

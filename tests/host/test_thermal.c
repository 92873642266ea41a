// SPDX-License-Identifier: MIT
/* Thermal zones and thermal_throttle counts on fixture trees, and the live host. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host/thermal.h"
#include "testutil.h"

#define TZ "sys/class/thermal/"
#define CPU "sys/devices/system/cpu/"

static void expect_recorded(struct sev_u64 v, uint64_t want)
{
	assert_true(v.ev.recorded);
	assert_true(v.ev.value == want);
	assert_int_equal(v.source, EV_SRC_SYSFS_THERMAL);
}

static void expect_gap(struct sev_u64 v, enum ev_gap reason)
{
	assert_false(v.ev.recorded);
	assert_int_equal(v.ev.reason, reason);
	assert_int_equal(v.source, EV_SRC_SYSFS_THERMAL);
}

/* Two packages of two CPUs, each with thermal_throttle. */
static char *throttle_tree(void)
{
	char *dir = tree_new("thermal");
	unsigned int cpu;
	char rel[128], text[32];

	tree_put(dir, CPU "online", "0-3\n");
	for (cpu = 0; cpu < 4; cpu++) {
		snprintf(rel, sizeof(rel), CPU "cpu%u/topology/physical_package_id", cpu);
		snprintf(text, sizeof(text), "%u\n", cpu / 2);
		tree_put(dir, rel, text);
		snprintf(rel, sizeof(rel), CPU "cpu%u/thermal_throttle/core_throttle_count", cpu);
		snprintf(text, sizeof(text), "%u\n", 10 * cpu);
		tree_put(dir, rel, text);
		/* Every CPU of a package shows the package's count. */
		snprintf(rel, sizeof(rel), CPU "cpu%u/thermal_throttle/package_throttle_count",
			 cpu);
		snprintf(text, sizeof(text), "%u\n", cpu < 2 ? 5 : 7);
		tree_put(dir, rel, text);
	}
	return dir;
}

static void test_thermal__zones(void **state)
{
	struct thermal_sample s;
	char *dir = throttle_tree(), detail[256] = "";

	(void)state;
	tree_put(dir, TZ "thermal_zone0/temp", "45000\n");
	tree_put(dir, TZ "thermal_zone1/temp", "71500\n");
	tree_put(dir, TZ "thermal_zone2/temp", "-5000\n");
	tree_put(dir, TZ "cooling_device0/cur_state", "0\n"); /* not a zone */
	thermal__sample(dir, &s, detail, sizeof(detail));
	expect_recorded(s.max_zone_millicelsius, 71500);
	expect_recorded(s.throttle_events, 0 + 10 + 20 + 30);
	expect_recorded(s.package_throttle_events, 5 + 7);
	assert_string_equal(detail, "");

	/* A sensor that is off refuses its temp; the hottest of the rest, said so. */
	tree_put(dir, TZ "thermal_zone3/temp", NULL); /* EISDIR */
	thermal__sample(dir, &s, detail, sizeof(detail));
	expect_recorded(s.max_zone_millicelsius, 71500);
	assert_non_null(strstr(detail, "1 of 4 thermal zones unreadable"));
	tree_free(dir);
}

static void test_thermal__none(void **state)
{
	struct thermal_sample s;
	char *dir = tree_new("thermal"), detail[256] = "";

	(void)state;
	tree_put(dir, CPU "online", "0-1\n");
	tree_put(dir, CPU "cpu0/topology/physical_package_id", "0\n");
	tree_put(dir, CPU "cpu1/topology/physical_package_id", "0\n");
	/* No thermal class at all: a kernel without CONFIG_THERMAL. */
	thermal__sample(dir, &s, detail, sizeof(detail));
	expect_gap(s.max_zone_millicelsius, EV_GAP_UNSUPPORTED);
	expect_gap(s.throttle_events, EV_GAP_UNSUPPORTED);
	expect_gap(s.package_throttle_events, EV_GAP_UNSUPPORTED);
	assert_non_null(strstr(detail, "CONFIG_THERMAL"));

	/* The class without zones (this VM), and no thermal_throttle. */
	detail[0] = '\0';
	tree_put(dir, TZ "cooling_device0/cur_state", "0\n");
	thermal__sample(dir, &s, detail, sizeof(detail));
	expect_gap(s.max_zone_millicelsius, EV_GAP_UNSUPPORTED);
	assert_non_null(strstr(detail, "no thermal zones"));
	detail[0] = '\0';
	tree_put(dir, TZ "thermal_zone0/temp", "30000\n");
	thermal__sample(dir, &s, detail, sizeof(detail));
	expect_recorded(s.max_zone_millicelsius, 30000);
	expect_gap(s.throttle_events, EV_GAP_UNSUPPORTED);
	assert_non_null(strstr(detail, "no thermal_throttle directory"));
	tree_free(dir);
}

static void test_thermal__unreadable(void **state)
{
	struct thermal_sample s;
	char *dir = throttle_tree(), detail[256] = "";

	(void)state;
	/* Every zone refuses: unavailable; below 0 °C cannot be a u64. */
	tree_put(dir, TZ "thermal_zone0/temp", "hot\n");
	thermal__sample(dir, &s, detail, sizeof(detail));
	expect_gap(s.max_zone_millicelsius, EV_GAP_UNAVAILABLE);
	assert_non_null(strstr(detail, "1 thermal zones, none readable"));
	detail[0] = '\0';
	tree_put(dir, TZ "thermal_zone0/temp", "-1000\n");
	thermal__sample(dir, &s, detail, sizeof(detail));
	expect_gap(s.max_zone_millicelsius, EV_GAP_UNAVAILABLE);
	assert_non_null(strstr(detail, "below 0"));
	tree_put(dir, TZ "thermal_zone0/temp", "1000\n");

	/* A malformed count: that sum is a gap, never a partial one. */
	detail[0] = '\0';
	tree_put(dir, CPU "cpu2/thermal_throttle/core_throttle_count", "x\n");
	thermal__sample(dir, &s, detail, sizeof(detail));
	expect_gap(s.throttle_events, EV_GAP_UNAVAILABLE);
	expect_recorded(s.package_throttle_events, 12);
	tree_put(dir, CPU "cpu2/thermal_throttle/core_throttle_count", "20\n");

	/* thermal_throttle on some CPUs only: not the host's count. */
	detail[0] = '\0';
	tree_put(dir, CPU "online", "0-4\n");
	tree_put(dir, CPU "cpu4/topology/physical_package_id", "2\n");
	thermal__sample(dir, &s, detail, sizeof(detail));
	expect_gap(s.throttle_events, EV_GAP_UNAVAILABLE);
	expect_gap(s.package_throttle_events, EV_GAP_UNAVAILABLE);
	assert_non_null(strstr(detail, "thermal_throttle on 4 of 5 online CPUs"));
	tree_free(dir);
}

static void test_thermal__window(void **state)
{
	struct thermal_window w = { 0 };
	char *dir = throttle_tree();

	(void)state;
	tree_put(dir, TZ "thermal_zone0/temp", "45000\n");
	thermal_window__read(&w, dir, false);
	tree_put(dir, CPU "cpu1/thermal_throttle/core_throttle_count", "13\n");
	tree_put(dir, CPU "cpu3/thermal_throttle/package_throttle_count", "9\n");
	tree_put(dir, CPU "cpu2/thermal_throttle/package_throttle_count", "9\n");
	tree_put(dir, TZ "thermal_zone0/temp", "50000\n");
	thermal_window__read(&w, dir, true);
	expect_recorded(thermal_window__core_events(&w), 3);
	expect_recorded(thermal_window__package_events(&w), 2);
	expect_recorded(w.start.max_zone_millicelsius, 45000);
	expect_recorded(w.end.max_zone_millicelsius, 50000);
	assert_string_equal(w.detail, "");

	/* A window never read is all gaps. */
	thermal_window__init(&w);
	expect_gap(w.end.max_zone_millicelsius, EV_GAP_UNAVAILABLE);
	expect_gap(thermal_window__core_events(&w), EV_GAP_UNAVAILABLE);
	tree_free(dir);
}

/* The live host: zones and throttle counts recorded where sysfs has them. */
static void test_thermal__live(void **state)
{
	struct thermal_sample s;
	char detail[256] = "";
	bool zones = false;
	struct dirent *de;
	DIR *d;

	(void)state;
	thermal__sample("/", &s, detail, sizeof(detail));
	d = opendir("/sys/class/thermal");
	while (d && (de = readdir(d)))
		zones |= !strncmp(de->d_name, "thermal_zone", 12);
	if (d)
		closedir(d);
	if (!zones)
		expect_gap(s.max_zone_millicelsius, EV_GAP_UNSUPPORTED);
	if (access("/sys/devices/system/cpu/cpu0/thermal_throttle", F_OK))
		expect_gap(s.throttle_events, EV_GAP_UNSUPPORTED);
	else
		assert_true(s.throttle_events.ev.recorded);
	if (!s.max_zone_millicelsius.ev.recorded || !s.throttle_events.ev.recorded)
		assert_true(detail[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thermal__zones),	    cmocka_unit_test(test_thermal__none),
		cmocka_unit_test(test_thermal__unreadable), cmocka_unit_test(test_thermal__window),
		cmocka_unit_test(test_thermal__live),
	};

	return cmocka_run_group_tests_name("thermal", tests, NULL, NULL);
}

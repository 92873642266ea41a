// SPDX-License-Identifier: MIT
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "host/probe.h"
#include "testutil.h"

static void test_probe__perf_errno_mapping(void **state)
{
	char d[256];

	(void)state;
	assert_int_equal(probe__perf_availability(0, 2, d, sizeof(d)), AVAIL_AVAILABLE);
	assert_string_equal(d, "");
	assert_int_equal(probe__perf_availability(-ENOENT, 2, d, sizeof(d)), AVAIL_UNSUPPORTED);
	assert_non_null(strstr(d, "PMU"));
	assert_int_equal(probe__perf_availability(-EOPNOTSUPP, 2, d, sizeof(d)), AVAIL_UNSUPPORTED);
	assert_int_equal(probe__perf_availability(-ENODEV, 2, d, sizeof(d)), AVAIL_UNSUPPORTED);
	assert_int_equal(probe__perf_availability(-EACCES, 3, d, sizeof(d)),
			 AVAIL_PERMISSION_DENIED);
	/* The detail names the paranoid level and the fix. */
	assert_non_null(strstr(d, "perf_event_paranoid=3"));
	assert_non_null(strstr(d, "CAP_PERFMON"));
	assert_int_equal(probe__perf_availability(-EPERM, INT32_MIN, d, sizeof(d)),
			 AVAIL_PERMISSION_DENIED);
	assert_non_null(strstr(d, "perf_event_paranoid=unknown"));
	assert_int_equal(probe__perf_availability(-EMFILE, 2, d, sizeof(d)), AVAIL_UNAVAILABLE);
}

static void test_probe__bpf_errno_mapping(void **state)
{
	char d[256];

	(void)state;
	assert_int_equal(probe__bpf_availability(0, true, d, sizeof(d)), AVAIL_AVAILABLE);
	assert_int_equal(probe__bpf_availability(0, false, d, sizeof(d)), AVAIL_UNSUPPORTED);
	assert_non_null(strstr(d, "CONFIG_DEBUG_INFO_BTF"));
	assert_int_equal(probe__bpf_availability(-EPERM, true, d, sizeof(d)),
			 AVAIL_PERMISSION_DENIED);
	assert_non_null(strstr(d, "CAP_BPF"));
	assert_int_equal(probe__bpf_availability(-EINVAL, true, d, sizeof(d)), AVAIL_UNSUPPORTED);
	assert_int_equal(probe__bpf_availability(-ENOMEM, true, d, sizeof(d)), AVAIL_UNAVAILABLE);
}

static const struct collector_capability *find(const struct probe_report *r, enum collector_id id)
{
	int i;

	for (i = 0; i < PROBE_NR_COLLECTORS; i++)
		if (r->collectors[i].collector == id)
			return &r->collectors[i];
	fail_msg("collector %s missing from the report", collector_id__name(id));
	return NULL;
}

/* The truth on this machine: BPF works as root, the PMU does not exist. */
static void test_probe__live_host(void **state)
{
	struct probe_opts o = { .sz = sizeof(o) };
	struct probe_report r;
	int i;

	(void)state;
	require_or_skip(geteuid() == 0, "loading BPF needs root");
	assert_int_equal(probe__run(&r, &o), 0);
	assert_int_equal(r.checks[PROBE_CHECK_KERNEL_BTF].result, PROBE_RESULT_OK);
	assert_int_equal(r.checks[PROBE_CHECK_BPF_LOAD].result, PROBE_RESULT_OK);
	for (i = PROBE_CHECK_TP_SCHED_SWITCH; i <= PROBE_CHECK_TP_SCHED_PROCESS_EXIT; i++) {
		assert_int_equal(r.checks[i].result, PROBE_RESULT_OK);
		assert_true(r.checks[i].observed > 0 || i == PROBE_CHECK_TP_SCHED_MIGRATE_TASK);
	}
	/* The self-test calls the target exactly three times: an exact count. */
	assert_int_equal(r.checks[PROBE_CHECK_UPROBE].observed, 3);
	assert_int_equal(find(&r, COLLECTOR_SCHEDULER_ACTIVITY)->availability, AVAIL_AVAILABLE);
	assert_int_equal(find(&r, COLLECTOR_SPAN_PROBES)->availability, AVAIL_AVAILABLE);
	assert_int_equal(find(&r, COLLECTOR_CPU_TOPOLOGY)->availability, AVAIL_AVAILABLE);
	assert_int_equal(find(&r, COLLECTOR_THREAD_UTILIZATION)->availability, AVAIL_AVAILABLE);
	assert_int_equal(r.logical_cpus, (uint32_t)sysconf(_SC_NPROCESSORS_ONLN));
	/*
	 * Hardware counters: whatever perf_event_open says here must be what the
	 * collector reports (this VM has no PMU, so unsupported).
	 */
	if (r.checks[PROBE_CHECK_PERF_HARDWARE].result == PROBE_RESULT_OK)
		assert_int_equal(find(&r, COLLECTOR_HARDWARE_COUNTERS)->availability,
				 AVAIL_AVAILABLE);
	else
		assert_int_not_equal(find(&r, COLLECTOR_HARDWARE_COUNTERS)->availability,
				     AVAIL_AVAILABLE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe__perf_errno_mapping),
		cmocka_unit_test(test_probe__bpf_errno_mapping),
		cmocka_unit_test(test_probe__live_host),
	};

	return cmocka_run_group_tests_name("probe", tests, NULL, NULL);
}

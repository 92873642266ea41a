// SPDX-License-Identifier: MIT
/*
 * Documents built from hand-made collected states: what is known is
 * recorded with its source, what is not is a gap with its reason, and every
 * loss counter is listed. The documents are also written to
 * $KHBPF_TEST_OUT for the schema validator.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "session/docbuild.h"
#include "document/evjson.h"
#include "lib/output.h"

struct fixture {
	struct docbuild_opts o;
	struct window_thread threads[2];
	struct thread_cpu first[2], last[2];
	struct cpu_frequency_sample freq[1];
	struct span_run spans;
	struct docbuild *b;
	struct json_object *doc;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct docbuild_opts *o;

	assert_non_null(f);
	assert_int_equal(docbuild__new(&f->b), 0);
	o = &f->o;
	o->sz = sizeof(*o);
	o->mode = TARGET_MODE_ATTACH;
	o->pid = getpid();
	o->target.pid = (uint64_t)getpid();
	o->target.mode = TARGET_MODE_ATTACH;
	snprintf(o->target.comm, sizeof(o->target.comm), "target");
	o->target.exe_reason = EV_GAP_PERMISSION_DENIED;
	o->start_mono = 1000;
	o->end_mono = 1000 + 2000000000ULL;
	o->start_real = 1700000000000000000ULL;
	o->end_reason = END_REASON_DURATION;

	f->threads[0] = (struct window_thread){
		.tid = 100,
		.comm = "main",
		.delta = { .nvcsw = 3,
			   .nivcsw = 2,
			   .nr_migrations = 1,
			   .sum_exec_runtime = 1000,
			   .run_delay = 70,
			   .pcount = 5 },
	};
	f->threads[1] = (struct window_thread){ .tid = 101, .comm = "worker", .exited = true };
	o->win.threads = f->threads;
	o->win.nr_threads = 2;
	o->win.total = f->threads[0].delta;

	f->first[0] = (struct thread_cpu){ .thread_id = 100, .cpu_time_ns = 500 };
	f->last[0] = (struct thread_cpu){ .thread_id = 100, .cpu_time_ns = 1500 };
	o->census[0] = (struct thread_census){ .threads = f->first, .nr_threads = 1 };
	o->census[1] = (struct thread_census){ .elapsed_ns = 2000000000ULL,
					       .threads = f->last,
					       .nr_threads = 1 };
	f->freq[0] = (struct cpu_frequency_sample){ .elapsed_ns = 1,
						    .min_khz = 800000,
						    .max_khz = 2000000,
						    .mean_khz = 1400000,
						    .cpu_count = 2 };
	o->freq = f->freq;
	o->nr_freq = 1;
	o->freq_any = true;
	counter_set__all_gapped(&o->counters, EV_SRC_PERF_EVENT_OPEN, EV_GAP_UNSUPPORTED);
	o->counters_avail = AVAIL_UNSUPPORTED;
	o->counters_detail = "no hardware PMU events on this host";
	o->topo.logical_cpus = 2;
	o->topo.physical_cores = sev_u32__recorded(2, EV_SRC_SYSFS_CPU);
	o->topo.packages = sev_u32__recorded(1, EV_SRC_SYSFS_CPU);
	o->topo.numa_nodes = sev_u32__recorded(1, EV_SRC_SYSFS_CPU);
	o->spans = &f->spans;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	json_object_put(f->doc);
	docbuild__destroy(f->b);
	free(f);
	return 0;
}

/* The /proc fallback, as --no-bpf leaves it. */
static void fallback(struct docbuild_opts *o)
{
	o->no_bpf = true;
	o->use_bpf = false;
	o->bpf_avail = AVAIL_DISABLED;
	o->bpf_detail = "--no-bpf given: kernel counters read from /proc at the window's ends";
	o->stats.sched_info = true;
}

static void save(struct json_object *doc, const char *name)
{
	const char *d = getenv("KHBPF_TEST_OUT"), *text = evjson__to_string(doc);
	char path[512];

	if (!d || !*d)
		d = "build/test-out";
	mkdir(d, 0755);
	snprintf(path, sizeof(path), "%s/%s", d, name);
	assert_int_equal(output__write_file(path, text, strlen(text), NULL), 0);
}

static struct json_object *build(struct fixture *f, const char *name)
{
	json_object_put(f->doc);
	assert_int_equal(docbuild__build(f->b, &f->o), 0);
	f->doc = evidence_doc__to_json(docbuild__doc(f->b));
	assert_non_null(f->doc);
	save(f->doc, name);
	return f->doc;
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
		if (!cur)
			fail_msg("no %s (at %s)", path, tok);
	}
	return cur;
}

static const char *str(struct json_object *o, const char *path)
{
	return json_object_get_string(get(o, path));
}

static uint64_t u64(struct json_object *o, const char *path)
{
	return json_object_get_uint64(get(o, path));
}

/* An evidence value: recorded with this value, or a gap with this reason. */
static void expect_recorded(struct json_object *o, const char *path, uint64_t v)
{
	char p[256];

	snprintf(p, sizeof(p), "%s.status", path);
	assert_string_equal(str(o, p), "recorded");
	snprintf(p, sizeof(p), "%s.value", path);
	assert_int_equal(u64(o, p), v);
}

static void expect_gap(struct json_object *o, const char *path, const char *reason)
{
	char p[256];

	snprintf(p, sizeof(p), "%s.status", path);
	assert_string_not_equal(str(o, p), "recorded");
	snprintf(p, sizeof(p), "%s.reason", path);
	assert_string_equal(str(o, p), reason);
}

/*
 * Without BPF a thread vanished between the two reads and the process clock
 * moved while they were taken: the process totals are gaps, the unseen CPU
 * is counted, and the collector's detail says why.
 */
static void test_docbuild__fallback_vanished_thread(void **state)
{
	struct fixture *f = *state;
	struct docbuild_opts *o = &f->o;
	struct json_object *d;

	fallback(o);
	f->threads[1].vanished = true;
	o->win.vanished_threads = 1;
	o->fb = (struct fallback_witness){ .clock_ok = true, .cpu_start = 0, .cpu_end = 1500 };
	o->proc_read_errors = 4;
	d = build(f, "docbuild-fallback-vanished.json");

	assert_string_equal(str(d, "target.mode"), "attach");
	expect_gap(d, "target.exit", "unavailable");
	assert_string_equal(str(d, "window.end_reason"), "duration");
	assert_int_equal(u64(d, "window.wall_ns"), 2000000000ULL);
	assert_string_equal(str(d, "collectors.0.availability"), "disabled");
	assert_non_null(strstr(str(d, "collectors.0.detail"), "threads may have run unseen"));
	assert_string_equal(str(d, "collectors.4.availability"), "disabled");
	assert_string_equal(str(d, "collectors.4.detail"),
			    "--no-bpf given: spans need BPF uprobes");

	expect_recorded(d, "threads.0.scheduler.total_context_switches.value", 5);
	assert_string_equal(str(d, "threads.0.scheduler.total_context_switches.source"),
			    "proc-pid-sched");
	expect_recorded(d, "threads.0.scheduler.scheduler_delay_ns.value", 70);
	assert_string_equal(str(d, "threads.0.scheduler.scheduler_delay_ns.source"),
			    "proc-pid-schedstat");
	expect_gap(d, "threads.1.scheduler.total_context_switches.value", "unavailable");
	expect_gap(d, "threads.1.on_cpu_ns.value", "unavailable");

	expect_gap(d, "hardware.value.scheduler.total_context_switches.value", "unavailable");
	expect_gap(d, "kernel_run_delay_ns.value", "unavailable");
	expect_recorded(d, "loss.threads_vanished", 1);
	expect_recorded(d, "loss.proc_read_errors", 4);
	expect_recorded(d, "loss.threads_unseen_cpu_ns", 500);
	/* The process clock covers every thread, seen or not. */
	expect_recorded(d, "hardware.value.utilization.all_threads_cpu_ns", 1500);
}

/*
 * run without BPF, threads unseen, but no children waited for: wait4's
 * switches stand in for the process's, every other total stays a gap.
 */
static void test_docbuild__fallback_rusage_switches(void **state)
{
	struct fixture *f = *state;
	struct docbuild_opts *o = &f->o;
	struct json_object *d;

	fallback(o);
	o->mode = o->target.mode = TARGET_MODE_RUN;
	o->end_reason = END_REASON_TARGET_EXIT;
	o->child_reaped = true;
	o->wait_status = 3 << 8;
	o->fb = (struct fallback_witness){ .clock_ok = false,
					   .have_rusage = true,
					   .ru = { .ru_nvcsw = 40, .ru_nivcsw = 2 },
					   .child_faults_known = true };
	d = build(f, "docbuild-fallback-rusage.json");

	assert_int_equal(u64(d, "target.exit.value.code"), 3);
	assert_string_equal(str(d, "window.end_reason"), "target-exit");
	assert_non_null(strstr(str(d, "collectors.0.detail"), "process switches from wait4"));
	expect_recorded(d, "hardware.value.scheduler.voluntary_context_switches.value", 40);
	expect_recorded(d, "hardware.value.scheduler.total_context_switches.value", 42);
	assert_string_equal(str(d, "hardware.value.scheduler.total_context_switches.source"),
			    "system-call");
	expect_gap(d, "hardware.value.scheduler.cpu_migrations.value", "unavailable");
	/* Without a still clock the unseen CPU is not known. */
	expect_gap(d, "loss.threads_unseen_cpu_ns", "unavailable");

	/* Children waited for: their switches are in wait4's too, so no stand-in. */
	o->fb.child_faults = 9;
	d = build(f, "docbuild-fallback-children.json");
	expect_gap(d, "hardware.value.scheduler.total_context_switches.value", "unavailable");
}

/*
 * A complete BPF window of run: every total recorded from the tracepoints,
 * the command's signal as its exit, per-program loss and overhead listed.
 * Built twice, the second document replaces the first (no loss counter
 * listed twice).
 */
static void test_docbuild__bpf_complete(void **state)
{
	struct fixture *f = *state;
	struct docbuild_opts *o = &f->o;
	struct json_object *d, *loss;
	int n;

	o->mode = o->target.mode = TARGET_MODE_RUN;
	o->use_bpf = true;
	o->bpf_avail = AVAIL_AVAILABLE;
	o->bpf_detail = "";
	o->child_reaped = true;
	o->wait_status = SIGKILL;
	o->end_reason = END_REASON_TARGET_EXIT;
	o->stats.sched_info = true;
	o->stats.nr_progs = 1;
	snprintf(o->stats.progs[0].name, sizeof(o->stats.progs[0].name), "khbpf_switch");
	o->stats.progs[0].recursion_known = true;
	o->stats.progs[0].recursion_misses = 2;
	o->stats.exited_overflow = 6;
	f->threads[1].has_bpf = true;
	f->threads[1].bpf.switch_ins = 4;
	f->threads[1].bpf.migrations = 1;
	f->threads[1].delta.nr_migrations = 3;
	d = build(f, "docbuild-bpf-complete.json");

	assert_int_equal(u64(d, "target.exit.value.signal"), SIGKILL);
	assert_string_equal(str(d, "collectors.0.availability"), "available");
	expect_recorded(d, "hardware.value.scheduler.total_context_switches.value", 5);
	assert_string_equal(str(d, "hardware.value.scheduler.total_context_switches.source"),
			    "bpf-tracepoint");
	expect_recorded(d, "kernel_run_delay_ns.value", 70);
	expect_recorded(d, "hardware.value.utilization.all_threads_cpu_ns", 1000);
	/* A migration the classifier did not see is counted as unseen. */
	assert_int_equal(u64(d, "threads.1.bpf_detail.value.switch_ins"), 4);
	assert_int_equal(u64(d, "threads.1.bpf_detail.value.migrations_by_distance.unseen"), 2);
	/* Without BPF-timed fields a thread's detail is a gap. */
	expect_gap(d, "threads.0.bpf_detail", "unavailable");
	expect_recorded(d, "loss.exited_records_overflow", 6);
	expect_recorded(d, "loss.khbpf_switch_recursion_misses", 2);
	/* --bpf-stats not given: run-time stats are off, not missing. */
	expect_gap(d, "overhead.khbpf_switch_run_cnt", "collector-disabled");
	expect_gap(d, "events.availability", "collector-disabled");
	n = json_object_object_length(get(d, "loss"));

	d = build(f, "docbuild-bpf-complete.json");
	loss = get(d, "loss");
	assert_int_equal(json_object_object_length(loss), n);
	assert_int_equal(docbuild__doc(f->b)->nr_loss, (size_t)n - 1); /* less "version" */
}

/*
 * Pressure and thermal: the host's stall is the difference of its totals,
 * the cgroup and thermal values are gaps with their details, and the
 * pressure-thermal collector follows the host's PSI.
 */
static void test_docbuild__pressure_thermal(void **state)
{
	struct fixture *f = *state;
	struct docbuild_opts *o = &f->o;
	struct pressure_window host, cg;
	struct thermal_window th;
	struct json_object *d;

	pressure_window__host(&host, "/nonexistent/khbpf");
	host.start.total_us[PSI_CPU][PSI_SOME] = sev_u64__recorded(1000, EV_SRC_PROC_PRESSURE);
	host.end.total_us[PSI_CPU][PSI_SOME] = sev_u64__recorded(251000, EV_SRC_PROC_PRESSURE);
	host.end.avg10_milli[PSI_CPU][PSI_SOME] = sev_u64__recorded(12340, EV_SRC_PROC_PRESSURE);
	assert_int_equal(pressure_window__cgroup(&cg, "/nonexistent/khbpf", getpid()), -ESRCH);
	pressure_window__read(&cg, false);
	pressure_window__read(&cg, true);
	thermal_window__init(&th);
	thermal_window__read(&th, "/nonexistent/khbpf", false);
	thermal_window__read(&th, "/nonexistent/khbpf", true);
	o->pressure_host = &host;
	o->pressure_cgroup = &cg;
	o->thermal = &th;
	d = build(f, "docbuild-pressure.json");
	assert_string_equal(str(d, "collectors.5.collector"), "pressure-thermal");
	assert_string_equal(str(d, "collectors.5.availability"), "available");
	assert_string_equal(str(d, "pressure.host.path"), "/proc/pressure");
	expect_recorded(d, "pressure.host.stall.cpu_some_us.value", 250000);
	assert_string_equal(str(d, "pressure.host.stall.cpu_some_us.source"), "proc-pressure");
	expect_recorded(d, "pressure.host.end.cpu_some_avg10_milli.value", 12340);
	expect_gap(d, "pressure.host.stall.memory_some_us.value", "unavailable");
	expect_gap(d, "pressure.cgroup.stall.cpu_some_us.value", "unavailable");
	assert_string_equal(str(d, "pressure.cgroup.stall.cpu_some_us.source"), "sysfs-cgroup");
	assert_non_null(strstr(str(d, "pressure.cgroup.detail"), "/cgroup"));
	expect_gap(d, "thermal.end.max_zone_millicelsius.value", "unsupported");
	expect_gap(d, "thermal.throttle.core_events.value", "unavailable");
	assert_string_equal(str(d, "thermal.throttle.core_events.source"), "sysfs-thermal");
	assert_non_null(strstr(str(d, "thermal.detail"), "CONFIG_THERMAL"));

	/* No PSI on the host: the collector says why. */
	pressure_window__read(&host, true);
	d = build(f, "docbuild-pressure-none.json");
	assert_string_equal(str(d, "collectors.5.availability"), "unsupported");
	assert_non_null(strstr(str(d, "collectors.5.detail"), "CONFIG_PSI"));

	/* Nothing read: no sections, and the collector says so. */
	o->pressure_host = o->pressure_cgroup = NULL;
	o->thermal = NULL;
	d = build(f, "docbuild-pressure-unread.json");
	assert_string_equal(str(d, "collectors.5.availability"), "unavailable");
	assert_false(json_object_object_get_ex(d, "pressure", NULL));
	assert_false(json_object_object_get_ex(d, "thermal", NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_docbuild__fallback_vanished_thread, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_docbuild__fallback_rusage_switches, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_docbuild__bpf_complete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_docbuild__pressure_thermal, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

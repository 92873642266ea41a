// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/topology.h"
#include "testutil.h"

#define FIXTURES "tests/fixtures"
#define CPU "sys/devices/system/cpu/"

static void tree_putf(const char *base, const char *text, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void tree_putf(const char *base, const char *text, const char *fmt, ...)
{
	char rel[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	tree_put(base, rel, text);
}

static void assert_recorded(struct sev_u32 v, uint32_t want)
{
	assert_true(v.ev.recorded);
	assert_int_equal(v.ev.value, want);
	assert_int_equal(v.source, EV_SRC_SYSFS_CPU);
}

static void assert_gap(struct sev_u32 v, enum ev_gap reason)
{
	assert_false(v.ev.recorded);
	assert_int_equal(v.ev.reason, reason);
	assert_int_equal(v.source, EV_SRC_SYSFS_CPU);
}

static void test_topology__numa2(void **state)
{
	struct host_topology t;
	uint32_t cpu;

	(void)state;
	assert_int_equal(host_topology__read(&t, FIXTURES "/numa2"), 0);
	assert_int_equal(t.nr_cpu_ids, 16);
	assert_int_equal(t.logical_cpus, 16);
	assert_recorded(t.physical_cores, 8);
	assert_recorded(t.packages, 2);
	assert_recorded(t.numa_nodes, 2);
	assert_int_equal(t.nr_llc_groups, 2);
	for (cpu = 0; cpu < 16; cpu++) {
		const struct cpu_topo *c = &t.cpus[cpu];
		int32_t socket = (cpu % 8) / 4;

		assert_int_equal(c->online, 1);
		assert_int_equal(c->package, socket);
		assert_int_equal(c->node, socket);
		assert_int_equal(c->llc, socket);
		/* Core ids repeat per package; dense core ids must not. */
		assert_int_equal(c->core, cpu % 8);
	}
	host_topology__free(&t);
	assert_null(t.cpus);
}

static void test_topology__distance(void **state)
{
	struct host_topology t;

	(void)state;
	assert_int_equal(host_topology__read(&t, FIXTURES "/numa2"), 0);
	assert_int_equal(host_topology__distance(&t, 5, 5), CPU_DIST_SAME);
	assert_int_equal(host_topology__distance(&t, 0, 8), CPU_DIST_SMT_SIBLING);
	assert_int_equal(host_topology__distance(&t, 13, 5), CPU_DIST_SMT_SIBLING);
	assert_int_equal(host_topology__distance(&t, 0, 1), CPU_DIST_SAME_LLC);
	assert_int_equal(host_topology__distance(&t, 0, 11), CPU_DIST_SAME_LLC);
	/* Same core_id (0), different package: not siblings. */
	assert_int_equal(host_topology__distance(&t, 0, 4), CPU_DIST_OTHER_NODE);
	assert_int_equal(host_topology__distance(&t, 3, 12), CPU_DIST_OTHER_NODE);
	assert_int_equal(host_topology__distance(&t, 0, 16), CPU_DIST_UNKNOWN);
	assert_int_equal(host_topology__distance(&t, 9999, 0), CPU_DIST_UNKNOWN);
	assert_int_equal(host_topology__distance(NULL, 0, 0), CPU_DIST_UNKNOWN);
	host_topology__free(&t);

	assert_string_equal(cpu_distance__name(CPU_DIST_SAME), "same-cpu");
	assert_string_equal(cpu_distance__name(CPU_DIST_SMT_SIBLING), "smt-sibling");
	assert_string_equal(cpu_distance__name(CPU_DIST_SAME_LLC), "same-llc");
	assert_string_equal(cpu_distance__name(CPU_DIST_OTHER_LLC), "other-llc");
	assert_string_equal(cpu_distance__name(CPU_DIST_OTHER_NODE), "other-node");
	assert_string_equal(cpu_distance__name(CPU_DIST_UNKNOWN), "unknown");
	assert_string_equal(cpu_distance__name((enum cpu_distance)42), "unknown");
}

static void test_topology__nofreq(void **state)
{
	struct host_topology t;

	(void)state;
	assert_int_equal(host_topology__read(&t, FIXTURES "/nofreq"), 0);
	assert_int_equal(t.nr_cpu_ids, 4); /* possible 0-3, online 0-2 */
	assert_int_equal(t.logical_cpus, 3);
	assert_recorded(t.physical_cores, 2);
	assert_recorded(t.packages, 1);
	/* No /sys/devices/system/node: one node is not assumed. */
	assert_gap(t.numa_nodes, EV_GAP_UNSUPPORTED);
	assert_int_equal(t.nr_llc_groups, 1);
	assert_int_equal(t.cpus[3].online, 0);
	assert_int_equal(t.cpus[3].package, -1);
	assert_int_equal(t.cpus[3].core, -1);
	assert_int_equal(t.cpus[0].node, -1);
	assert_int_equal(host_topology__distance(&t, 0, 1), CPU_DIST_SMT_SIBLING);
	assert_int_equal(host_topology__distance(&t, 1, 2), CPU_DIST_SAME_LLC);
	assert_int_equal(host_topology__distance(&t, 0, 3), CPU_DIST_UNKNOWN);
	host_topology__free(&t);
}

/*
 * One node, two L3 groups (CCX-like); an Instruction-only cache above L3 must
 * not be taken for the LLC; cpus 2-3 have no core_id, so their core comes
 * from thread_siblings_list.
 */
static void test_topology__other_llc(void **state)
{
	struct host_topology t;
	char *dir = tree_new("topology");
	uint32_t cpu;

	(void)state;
	tree_put(dir, CPU "online", "0-3\n");
	tree_put(dir, "sys/devices/system/node/node0/cpulist", "0-3\n");
	for (cpu = 0; cpu < 4; cpu++) {
		const char *l3 = cpu < 2 ? "0-1\n" : "2-3\n";
		char self[8];

		snprintf(self, sizeof(self), "%u\n", cpu);
		tree_putf(dir, "0\n", CPU "cpu%u/topology/physical_package_id", cpu);
		if (cpu < 2)
			tree_putf(dir, self, CPU "cpu%u/topology/core_id", cpu);
		tree_putf(dir, cpu < 2 ? self : "2-3\n", CPU "cpu%u/topology/thread_siblings_list",
			  cpu);
		tree_putf(dir, "3\n", CPU "cpu%u/cache/index0/level", cpu);
		tree_putf(dir, "Unified\n", CPU "cpu%u/cache/index0/type", cpu);
		tree_putf(dir, l3, CPU "cpu%u/cache/index0/shared_cpu_list", cpu);
		tree_putf(dir, "4\n", CPU "cpu%u/cache/index7/level", cpu);
		tree_putf(dir, "Instruction\n", CPU "cpu%u/cache/index7/type", cpu);
		tree_putf(dir, "0-3\n", CPU "cpu%u/cache/index7/shared_cpu_list", cpu);
	}
	assert_int_equal(host_topology__read(&t, dir), 0);
	assert_int_equal(t.logical_cpus, 4);
	assert_recorded(t.physical_cores, 3);
	assert_recorded(t.packages, 1);
	assert_recorded(t.numa_nodes, 1);
	assert_int_equal(t.nr_llc_groups, 2);
	assert_int_equal(host_topology__distance(&t, 0, 1), CPU_DIST_SAME_LLC);
	assert_int_equal(host_topology__distance(&t, 2, 3), CPU_DIST_SMT_SIBLING);
	assert_int_equal(host_topology__distance(&t, 1, 2), CPU_DIST_OTHER_LLC);
	host_topology__free(&t);
	tree_free(dir);
}

static void test_topology__fallbacks(void **state)
{
	struct host_topology t;
	char *dir = tree_new("topology");

	(void)state;
	/* No online file: possible is used. */
	tree_put(dir, CPU "possible", "0-1\n");
	assert_int_equal(host_topology__read(&t, dir), 0);
	assert_int_equal(t.logical_cpus, 2);
	/* Topology files absent: counts become gaps, not zeros. */
	assert_gap(t.packages, EV_GAP_UNAVAILABLE);
	assert_gap(t.physical_cores, EV_GAP_UNAVAILABLE);
	assert_int_equal(t.nr_llc_groups, 0);
	assert_int_equal(host_topology__distance(&t, 0, 1), CPU_DIST_UNKNOWN);
	host_topology__free(&t);

	/* Neither list: the cpuN directories, minus those whose online is 0. */
	tree_free(dir);
	dir = tree_new("topology");
	tree_put(dir, CPU "cpu0", NULL);
	tree_put(dir, CPU "cpu1/online", "1\n");
	tree_put(dir, CPU "cpu2/online", "0\n");
	tree_put(dir, CPU "cpufreq", NULL);
	tree_put(dir, CPU "cpu3x", NULL);
	assert_int_equal(host_topology__read(&t, dir), 0);
	assert_int_equal(t.logical_cpus, 2);
	assert_int_equal(t.nr_cpu_ids, 2);
	host_topology__free(&t);
	tree_free(dir);
}

static void test_topology__malformed(void **state)
{
	struct host_topology t;
	char *dir = tree_new("topology");

	(void)state;
	tree_put(dir, CPU "online", "0-3x\n");
	assert_int_equal(host_topology__read(&t, dir), -EINVAL);
	assert_int_equal(t.logical_cpus, 0);
	assert_null(t.cpus);
	assert_gap(t.packages, EV_GAP_UNAVAILABLE);
	assert_gap(t.physical_cores, EV_GAP_UNAVAILABLE);
	assert_gap(t.numa_nodes, EV_GAP_UNAVAILABLE);
	host_topology__free(&t);
	tree_free(dir);

	/* A file that is a directory (EISDIR) gaps only its own field. */
	dir = tree_new("topology");
	tree_put(dir, CPU "online", "0\n");
	tree_put(dir, CPU "cpu0/topology/physical_package_id", NULL);
	tree_put(dir, CPU "cpu0/topology/thread_siblings_list", "0\n");
	tree_put(dir, "sys/devices/system/node/node0/cpulist", "0\n");
	assert_int_equal(host_topology__read(&t, dir), 0);
	assert_int_equal(t.logical_cpus, 1);
	assert_gap(t.packages, EV_GAP_UNAVAILABLE);
	assert_recorded(t.physical_cores, 1);
	assert_recorded(t.numa_nodes, 1);
	host_topology__free(&t);
	tree_free(dir);

	/* Nothing there at all. */
	assert_int_equal(host_topology__read(&t, "/nonexistent/khbpf"), -ENOENT);
	assert_int_equal(t.logical_cpus, 0);
	assert_gap(t.packages, EV_GAP_UNAVAILABLE);
	host_topology__free(&t);
	assert_int_equal(host_topology__read(NULL, "/"), -EINVAL);
}

static void test_topology__cpu_id_bound(void **state)
{
	struct host_topology t;
	char *dir = tree_new("topology");

	(void)state;
	tree_put(dir, CPU "online", "0,8191\n");
	assert_int_equal(host_topology__read(&t, dir), 0);
	assert_int_equal(t.nr_cpu_ids, KHBPF_MAX_CPUS);
	assert_int_equal(t.logical_cpus, 2);
	assert_int_equal(t.cpus[8191].online, 1);
	host_topology__free(&t);

	tree_free(dir);
	dir = tree_new("topology");
	tree_put(dir, CPU "online", "0-8192\n");
	assert_int_equal(host_topology__read(&t, dir), -ERANGE);
	assert_int_equal(t.logical_cpus, 0);
	assert_null(t.cpus);
	assert_gap(t.physical_cores, EV_GAP_UNAVAILABLE);
	host_topology__free(&t);
	tree_free(dir);

	dir = tree_new("topology");
	tree_put(dir, CPU "cpu9000", NULL);
	assert_int_equal(host_topology__read(&t, dir), -ERANGE);
	assert_null(t.cpus);
	host_topology__free(&t);
	tree_free(dir);
}

static void test_topology__live(void **state)
{
	struct host_topology t, t2;
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	(void)state;
	assert_int_equal(host_topology__read(&t, "/"), 0);
	assert_int_equal(t.logical_cpus, online);
	assert_true(t.nr_cpu_ids >= t.logical_cpus);
	assert_true(t.physical_cores.ev.recorded);
	assert_true(t.physical_cores.ev.value >= 1 && t.physical_cores.ev.value <= online);
	assert_true(t.packages.ev.recorded);
	assert_true(t.packages.ev.value >= 1 && t.packages.ev.value <= t.physical_cores.ev.value);
	if (!t.numa_nodes.ev.recorded)
		assert_int_equal(t.numa_nodes.ev.reason, EV_GAP_UNSUPPORTED);
	assert_int_equal(host_topology__distance(&t, 0, 0), CPU_DIST_SAME);

	assert_int_equal(host_topology__read(&t2, ""), 0);
	assert_int_equal(t2.logical_cpus, t.logical_cpus);
	assert_int_equal(t2.nr_llc_groups, t.nr_llc_groups);
	host_topology__free(&t2);
	host_topology__free(&t);
}

static void test_topology__affinity_child(void **state)
{
	struct sev_u32 v;
	cpu_set_t set;
	int fds[2], status;
	char c;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(fds[1]);
		/* Blocks until the parent closes its end. */
		_exit(read(fds[0], &c, 1) == 0 ? 0 : 1);
	}
	close(fds[0]);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	assert_int_equal(sched_setaffinity(pid, sizeof(set), &set), 0);

	assert_int_equal(host_affinity__count(pid, &v), 0);
	assert_true(v.ev.recorded);
	assert_int_equal(v.ev.value, 1);
	assert_int_equal(v.source, EV_SRC_SYSTEM_CALL);

	close(fds[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(host_affinity__count(pid, &v), -ESRCH);
	assert_false(v.ev.recorded);
	assert_int_equal(v.ev.reason, EV_GAP_UNAVAILABLE);
	assert_int_equal(v.source, EV_SRC_SYSTEM_CALL);
}

static void test_topology__affinity_self(void **state)
{
	struct sev_u32 v;
	cpu_set_t set;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	assert_int_equal(host_affinity__count(0, &v), 0);
	assert_true(v.ev.recorded);
	assert_int_equal(v.ev.value, CPU_COUNT(&set));
	assert_int_equal(host_affinity__count(getpid(), &v), 0);
	assert_int_equal(v.ev.value, CPU_COUNT(&set));
	assert_int_equal(host_affinity__count(0, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_topology__numa2),
		cmocka_unit_test(test_topology__distance),
		cmocka_unit_test(test_topology__nofreq),
		cmocka_unit_test(test_topology__other_llc),
		cmocka_unit_test(test_topology__fallbacks),
		cmocka_unit_test(test_topology__malformed),
		cmocka_unit_test(test_topology__cpu_id_bound),
		cmocka_unit_test(test_topology__live),
		cmocka_unit_test(test_topology__affinity_child),
		cmocka_unit_test(test_topology__affinity_self),
	};

	return cmocka_run_group_tests_name("topology", tests, NULL, NULL);
}

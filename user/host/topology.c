// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fsutil.h"
#include "host/topology.h"

#define CPU_DIR "/sys/devices/system/cpu"
#define NODE_DIR "/sys/devices/system/node"
#define MASK_BYTES (KHBPF_MAX_CPUS / 8)
/* Far above any kernel's NR_CPUS; stops the EINVAL retry loop. */
#define AFFINITY_MAX_CPUS (1u << 22)

/* A raw sysfs key of one CPU (e.g. package id, or (package, core id)). */
struct topo_key {
	int64_t a, b;
	uint32_t cpu;
};

struct raw_cpu {
	int64_t package;
	int64_t core_a, core_b;
	int64_t llc_level, llc_first;
	int64_t node;
	bool has_package, has_core, has_llc, has_node;
};

/* Parses directory names such as "cpu12", "node1" or "index3". */
static bool parse_numbered(const char *name, const char *prefix, uint64_t *out)
{
	size_t len = strlen(prefix);

	if (strncmp(name, prefix, len) || name[len] < '0' || name[len] > '9')
		return false;
	return fsutil__parse_u64(name + len, out) == 0 && !strchr(name, '\n');
}

static int scan_cpu_dirs(const char *root, uint8_t *mask, uint32_t *count)
{
	char path[PATH_MAX];
	struct dirent *de;
	uint32_t n = 0;
	int err = 0;
	DIR *dir;

	memset(mask, 0, MASK_BYTES);
	err = fsutil__path(path, sizeof(path), root, CPU_DIR);
	if (err < 0)
		return err;
	dir = opendir(path);
	if (!dir)
		return -errno;
	err = 0;
	while ((de = readdir(dir))) {
		char rel[64];
		uint64_t cpu, online;

		if (!parse_numbered(de->d_name, "cpu", &cpu))
			continue;
		if (cpu >= KHBPF_MAX_CPUS) {
			err = -ERANGE;
			break;
		}
		/* cpu0 usually has no "online" file: it cannot go offline. */
		snprintf(rel, sizeof(rel), CPU_DIR "/cpu%u/online", (unsigned int)cpu);
		if (fsutil__read_u64(root, rel, &online) == 0 && online == 0)
			continue;
		if (!fsutil__test_bit(mask, (uint32_t)cpu)) {
			fsutil__set_bit(mask, (uint32_t)cpu);
			n++;
		}
	}
	closedir(dir);
	if (err)
		return err;
	if (!n)
		return -ENOENT;
	if (count)
		*count = n;
	return 0;
}

int host_cpus__online(const char *root, uint8_t *mask, uint32_t *count)
{
	int err;

	if (count)
		*count = 0;
	err = fsutil__read_cpulist(root, CPU_DIR "/online", mask, KHBPF_MAX_CPUS, count);
	if (err != -ENOENT)
		return err;
	err = fsutil__read_cpulist(root, CPU_DIR "/possible", mask, KHBPF_MAX_CPUS, count);
	if (err != -ENOENT)
		return err;
	return scan_cpu_dirs(root, mask, count);
}

static int topo_key__cmp(const void *pa, const void *pb)
{
	const struct topo_key *a = pa, *b = pb;

	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	return a->cpu < b->cpu ? -1 : a->cpu > b->cpu;
}

/*
 * Gives every distinct key a dense id (in key order) stored at byte offset
 * `field` of each CPU's struct cpu_topo; returns the number of distinct keys.
 */
static uint32_t densify(struct host_topology *t, struct topo_key *keys, size_t n, size_t field)
{
	uint32_t distinct = 0;
	size_t i;

	qsort(keys, n, sizeof(*keys), topo_key__cmp);
	for (i = 0; i < n; i++) {
		int32_t *id = (int32_t *)((char *)&t->cpus[keys[i].cpu] + field);

		if (i && (keys[i].a != keys[i - 1].a || keys[i].b != keys[i - 1].b))
			distinct++;
		*id = (int32_t)distinct;
	}
	return n ? distinct + 1 : 0;
}

/* The lowest CPU in a cpu list file, or -errno (-ENODATA for an empty list). */
static int first_cpu_of_list(const char *root, const char *rel, uint8_t *scratch, int64_t *first)
{
	uint32_t cpu;
	int err;

	err = fsutil__read_cpulist(root, rel, scratch, KHBPF_MAX_CPUS, NULL);
	if (err)
		return err;
	for (cpu = 0; cpu < KHBPF_MAX_CPUS; cpu++) {
		if (fsutil__test_bit(scratch, cpu)) {
			*first = cpu;
			return 0;
		}
	}
	return -ENODATA;
}

static void read_package_core(const char *root, uint32_t cpu, struct raw_cpu *raw, uint8_t *scratch,
			      int *pkg_err, int *core_err)
{
	char rel[128];
	int64_t v, first;
	int err;

	snprintf(rel, sizeof(rel), CPU_DIR "/cpu%u/topology/physical_package_id", cpu);
	err = fsutil__read_s64(root, rel, &v);
	if (!err && v >= 0) {
		raw->package = v;
		raw->has_package = true;
	} else if (!*pkg_err) {
		*pkg_err = err ? err : -ENODATA;
	}

	snprintf(rel, sizeof(rel), CPU_DIR "/cpu%u/topology/core_id", cpu);
	err = fsutil__read_s64(root, rel, &v);
	if (!err && v >= 0 && raw->has_package) {
		raw->core_a = raw->package;
		raw->core_b = v;
		raw->has_core = true;
		return;
	}
	if (!err)
		err = -ENODATA;

	/*
	 * Without a usable (package, core_id) pair the SMT sibling list still
	 * names the core; its lowest CPU is unique host-wide, so offset it
	 * past any core_id to keep both kinds of key distinct.
	 */
	snprintf(rel, sizeof(rel), CPU_DIR "/cpu%u/topology/thread_siblings_list", cpu);
	if (first_cpu_of_list(root, rel, scratch, &first)) {
		snprintf(rel, sizeof(rel), CPU_DIR "/cpu%u/topology/core_cpus_list", cpu);
		if (first_cpu_of_list(root, rel, scratch, &first)) {
			if (!*core_err)
				*core_err = err;
			return;
		}
	}
	raw->core_a = -1;
	raw->core_b = ((int64_t)1 << 40) + first;
	raw->has_core = true;
}

/* The highest-level cache that holds data (not "Instruction") names the LLC. */
static void read_llc(const char *root, uint32_t cpu, struct raw_cpu *raw, uint8_t *scratch)
{
	char path[PATH_MAX], rel[128], type[32];
	uint64_t best_index = UINT64_MAX, best_level = 0;
	struct dirent *de;
	DIR *dir;

	if (fsutil__path(path, sizeof(path), root, CPU_DIR "/cpu%u/cache", cpu) < 0)
		return;
	dir = opendir(path);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		uint64_t index, level;

		if (!parse_numbered(de->d_name, "index", &index) || index > UINT32_MAX)
			continue;
		snprintf(rel, sizeof(rel), CPU_DIR "/cpu%u/cache/index%u/type", cpu,
			 (unsigned int)index);
		if (fsutil__read_file(root, rel, type, sizeof(type)) < 0)
			continue;
		type[strcspn(type, "\n")] = '\0';
		if (!strcmp(type, "Instruction"))
			continue;
		snprintf(rel, sizeof(rel), CPU_DIR "/cpu%u/cache/index%u/level", cpu,
			 (unsigned int)index);
		if (fsutil__read_u64(root, rel, &level))
			continue;
		if (best_index == UINT64_MAX || level > best_level ||
		    (level == best_level && index < best_index)) {
			best_index = index;
			best_level = level;
		}
	}
	closedir(dir);
	if (best_index == UINT64_MAX)
		return;

	snprintf(rel, sizeof(rel), CPU_DIR "/cpu%u/cache/index%u/shared_cpu_list", cpu,
		 (unsigned int)best_index);
	if (first_cpu_of_list(root, rel, scratch, &raw->llc_first))
		return;
	if (best_level > INT64_MAX)
		return;
	raw->llc_level = (int64_t)best_level;
	raw->has_llc = true;
}

/* Fills raw[].node from nodeN/cpulist; returns the node count or -errno. */
static int read_nodes(const char *root, struct raw_cpu *raw, uint32_t nr, const uint8_t *online,
		      uint8_t *scratch)
{
	char path[PATH_MAX], rel[64];
	struct dirent *de;
	uint32_t cpu;
	int nodes = 0, err;
	DIR *dir;

	err = fsutil__path(path, sizeof(path), root, NODE_DIR);
	if (err < 0)
		return err;
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		uint64_t node;

		if (!parse_numbered(de->d_name, "node", &node) || node > INT32_MAX)
			continue;
		if (nodes == INT_MAX)
			break;
		nodes++;
		snprintf(rel, sizeof(rel), NODE_DIR "/node%u/cpulist", (unsigned int)node);
		if (fsutil__read_cpulist(root, rel, scratch, KHBPF_MAX_CPUS, NULL))
			continue;
		for (cpu = 0; cpu < nr; cpu++) {
			if (fsutil__test_bit(scratch, cpu) && fsutil__test_bit(online, cpu)) {
				raw[cpu].node = (int64_t)node;
				raw[cpu].has_node = true;
			}
		}
	}
	closedir(dir);
	return nodes;
}

static void host_topology__init(struct host_topology *t, enum ev_gap reason)
{
	memset(t, 0, sizeof(*t));
	t->physical_cores = sev_u32__gap(EV_SRC_SYSFS_CPU, reason);
	t->packages = sev_u32__gap(EV_SRC_SYSFS_CPU, reason);
	t->numa_nodes = sev_u32__gap(EV_SRC_SYSFS_CPU, reason);
}

int host_topology__read(struct host_topology *t, const char *root)
{
	uint8_t *online = NULL, *possible = NULL, *scratch = NULL;
	struct raw_cpu *raw = NULL;
	struct topo_key *keys = NULL;
	uint32_t count, cpu, nr = 0, n;
	int err, pkg_err = 0, core_err = 0, nodes;
	bool all;

	if (!t)
		return -EINVAL;
	host_topology__init(t, EV_GAP_UNAVAILABLE);
	online = calloc(1, MASK_BYTES);
	possible = calloc(1, MASK_BYTES);
	scratch = calloc(1, MASK_BYTES);
	if (!online || !possible || !scratch) {
		err = -ENOMEM;
		goto out;
	}

	err = host_cpus__online(root, online, &count);
	if (!err && !count)
		err = -ENODATA;
	if (err)
		goto out;
	/* possible only widens nr_cpu_ids; it is optional. */
	if (fsutil__read_cpulist(root, CPU_DIR "/possible", possible, KHBPF_MAX_CPUS, NULL))
		memset(possible, 0, MASK_BYTES);
	for (cpu = 0; cpu < KHBPF_MAX_CPUS; cpu++) {
		if (fsutil__test_bit(online, cpu) || fsutil__test_bit(possible, cpu))
			nr = cpu + 1;
	}

	t->cpus = calloc(nr, sizeof(*t->cpus));
	raw = calloc(nr, sizeof(*raw));
	keys = calloc(nr, sizeof(*keys));
	if (!t->cpus || !raw || !keys) {
		err = -ENOMEM;
		goto out;
	}
	t->nr_cpu_ids = nr;
	t->logical_cpus = count;
	for (cpu = 0; cpu < nr; cpu++) {
		t->cpus[cpu] =
			(struct cpu_topo){ .package = -1, .core = -1, .llc = -1, .node = -1 };
		if (!fsutil__test_bit(online, cpu))
			continue;
		t->cpus[cpu].online = 1;
		read_package_core(root, cpu, &raw[cpu], scratch, &pkg_err, &core_err);
		read_llc(root, cpu, &raw[cpu], scratch);
	}

	nodes = read_nodes(root, raw, nr, online, scratch);
	if (nodes == -ENOENT)
		t->numa_nodes = sev_u32__gap(EV_SRC_SYSFS_CPU, EV_GAP_UNSUPPORTED);
	else if (nodes < 0)
		t->numa_nodes = sev_u32__gap(EV_SRC_SYSFS_CPU, fsutil__errno_gap(nodes));
	else if (nodes > 0)
		t->numa_nodes = sev_u32__recorded((uint32_t)nodes, EV_SRC_SYSFS_CPU);

	for (n = 0, all = true, cpu = 0; cpu < nr; cpu++) {
		if (!t->cpus[cpu].online)
			continue;
		if (raw[cpu].has_package)
			keys[n++] = (struct topo_key){ raw[cpu].package, 0, cpu };
		else
			all = false;
	}
	n = densify(t, keys, n, offsetof(struct cpu_topo, package));
	t->packages = all ? sev_u32__recorded(n, EV_SRC_SYSFS_CPU) :
			    sev_u32__gap(EV_SRC_SYSFS_CPU, fsutil__errno_gap(pkg_err));

	for (n = 0, all = true, cpu = 0; cpu < nr; cpu++) {
		if (!t->cpus[cpu].online)
			continue;
		if (raw[cpu].has_core)
			keys[n++] = (struct topo_key){ raw[cpu].core_a, raw[cpu].core_b, cpu };
		else
			all = false;
	}
	n = densify(t, keys, n, offsetof(struct cpu_topo, core));
	t->physical_cores = all ? sev_u32__recorded(n, EV_SRC_SYSFS_CPU) :
				  sev_u32__gap(EV_SRC_SYSFS_CPU, fsutil__errno_gap(core_err));

	for (n = 0, cpu = 0; cpu < nr; cpu++) {
		if (raw[cpu].has_llc)
			keys[n++] =
				(struct topo_key){ raw[cpu].llc_level, raw[cpu].llc_first, cpu };
	}
	t->nr_llc_groups = densify(t, keys, n, offsetof(struct cpu_topo, llc));

	for (n = 0, cpu = 0; cpu < nr; cpu++) {
		if (raw[cpu].has_node)
			keys[n++] = (struct topo_key){ raw[cpu].node, 0, cpu };
	}
	densify(t, keys, n, offsetof(struct cpu_topo, node));
	err = 0;

out:
	if (err) {
		free(t->cpus);
		host_topology__init(t, fsutil__errno_gap(err));
	}
	free(keys);
	free(raw);
	free(scratch);
	free(possible);
	free(online);
	return err;
}

void host_topology__free(struct host_topology *t)
{
	if (!t)
		return;
	free(t->cpus);
	t->cpus = NULL;
	t->nr_cpu_ids = 0;
}

enum cpu_distance host_topology__distance(const struct host_topology *t, uint32_t from, uint32_t to)
{
	const struct cpu_topo *a, *b;

	if (!t || !t->cpus || from >= t->nr_cpu_ids || to >= t->nr_cpu_ids)
		return CPU_DIST_UNKNOWN;
	if (from == to)
		return CPU_DIST_SAME;
	a = &t->cpus[from];
	b = &t->cpus[to];
	if (a->core >= 0 && a->core == b->core)
		return CPU_DIST_SMT_SIBLING;
	if (a->llc >= 0 && a->llc == b->llc)
		return CPU_DIST_SAME_LLC;
	if (a->node < 0 || b->node < 0)
		return CPU_DIST_UNKNOWN;
	if (a->node != b->node)
		return CPU_DIST_OTHER_NODE;
	/* Same node: "other LLC" only when both LLCs are known to differ. */
	if (a->llc >= 0 && b->llc >= 0)
		return CPU_DIST_OTHER_LLC;
	return CPU_DIST_UNKNOWN;
}

const char *cpu_distance__name(enum cpu_distance d)
{
	switch (d) {
	case CPU_DIST_SAME:
		return "same-cpu";
	case CPU_DIST_SMT_SIBLING:
		return "smt-sibling";
	case CPU_DIST_SAME_LLC:
		return "same-llc";
	case CPU_DIST_OTHER_LLC:
		return "other-llc";
	case CPU_DIST_OTHER_NODE:
		return "other-node";
	default:
		return "unknown";
	}
}

int host_affinity__count(pid_t pid, struct sev_u32 *out)
{
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	size_t ncpus = CPU_SETSIZE;
	int err;

	if (!out)
		return -EINVAL;
	if (conf > 0 && (size_t)conf > ncpus)
		ncpus = (size_t)conf;
	for (;;) {
		cpu_set_t *set = CPU_ALLOC(ncpus);
		size_t size = CPU_ALLOC_SIZE(ncpus);

		if (!set) {
			*out = sev_u32__gap(EV_SRC_SYSTEM_CALL, EV_GAP_UNAVAILABLE);
			return -ENOMEM;
		}
		if (sched_getaffinity(pid, size, set) == 0) {
			int n = CPU_COUNT_S(size, set);

			CPU_FREE(set);
			*out = sev_u32__recorded((uint32_t)n, EV_SRC_SYSTEM_CALL);
			return 0;
		}
		err = errno;
		CPU_FREE(set);
		/* EINVAL: the kernel's cpumask is wider than ours. */
		if (err == EINVAL && ncpus < AFFINITY_MAX_CPUS) {
			ncpus *= 2;
			continue;
		}
		*out = sev_u32__gap(EV_SRC_SYSTEM_CALL, fsutil__errno_gap(-err));
		return -err;
	}
}

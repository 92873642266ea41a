/* SPDX-License-Identifier: MIT */
/*
 * Host CPU topology from sysfs (packages, cores, last-level caches, NUMA
 * nodes) and the target's CPU affinity, for TopologyEvidence and for
 * classifying migrations by distance.
 */
#ifndef KHBPF_TOPOLOGY_H
#define KHBPF_TOPOLOGY_H

#include <stdint.h>
#include <sys/types.h>

#include "lib/evidence.h"

/* CPU ids at or above this make the topology a gap rather than a larger table. */
#define KHBPF_MAX_CPUS 8192

struct cpu_topo {
	/* Small dense ids (0, 1, ... in order of the raw sysfs keys); -1 when unknown. */
	int32_t package;
	int32_t core; /* unique across packages */
	int32_t llc;
	int32_t node;
	uint8_t online;
};

struct host_topology {
	uint32_t nr_cpu_ids; /* max cpu id + 1 among possible and online */
	struct cpu_topo *cpus; /* nr_cpu_ids entries, indexed by cpu id; owned */
	uint32_t logical_cpus; /* online CPUs; 0 when sysfs is unreadable */
	struct sev_u32 physical_cores; /* distinct (package, core) among online CPUs */
	struct sev_u32 packages;
	struct sev_u32 numa_nodes; /* "unsupported" without /sys/devices/system/node */
	uint32_t nr_llc_groups;
};

enum cpu_distance {
	CPU_DIST_SAME = 0,
	CPU_DIST_SMT_SIBLING,
	CPU_DIST_SAME_LLC,
	CPU_DIST_OTHER_LLC, /* same NUMA node */
	CPU_DIST_OTHER_NODE,
	CPU_DIST_UNKNOWN,
	CPU_DIST__COUNT,
};

/*
 * Reads root/sys/devices/system/{cpu,node}. Always leaves *t valid for
 * host_topology__free() with every unknown field gapped. Returns 0 when the
 * online CPU list was read (single fields may still be gaps), -ERANGE when a
 * CPU id is >= KHBPF_MAX_CPUS, -ENOMEM, or the -errno of reading the CPU list.
 */
int host_topology__read(struct host_topology *t, const char *root);
void host_topology__free(struct host_topology *t);
enum cpu_distance host_topology__distance(const struct host_topology *t, uint32_t from,
					  uint32_t to);
const char *cpu_distance__name(enum cpu_distance d);

/*
 * The online CPUs: root/sys/devices/system/cpu/online, else possible, else
 * the cpuN directories. mask has KHBPF_MAX_CPUS bits. Returns 0 or -errno.
 */
int host_cpus__online(const char *root, uint8_t *mask, uint32_t *count);

/*
 * Number of CPUs in the affinity mask of pid (0 = the caller), recorded with
 * source "system-call". On failure *out is a gap (ESRCH: unavailable; EPERM:
 * permission-denied) and -errno is returned.
 */
int host_affinity__count(pid_t pid, struct sev_u32 *out);

#endif /* KHBPF_TOPOLOGY_H */

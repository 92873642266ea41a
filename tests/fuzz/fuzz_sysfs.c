// SPDX-License-Identifier: MIT
/*
 * The sysfs and cgroupfs readers. The first byte picks one:
 *   0  fsutil__parse_cpulist: the count is the mask's population, and the
 *      mask written back as a list parses to the same mask; fsutil__parse_u64
 *      and _s64 against strtoull/strtoll
 *   1  host_topology__read and cpufreq__sample on a sysfs tree whose files
 *      (topo_files, in order) are the NUL-separated parts of the rest
 *   2  cgroup__cpu_quota, cgroup_mode__detect and cgroup__v2_mount on a
 *      tree of mountinfo, /proc/PID/cgroup and cgroup files (cg_files)
 * Directories are made once, so every input sees the same tree.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>

#include "host/cgroup.h"
#include "host/cpufreq.h"
#include "lib/fsutil.h"
#include "fuzz.h"
#include "host/topology.h"

#define CPU "sys/devices/system/cpu/"
#define NODE "sys/devices/system/node/"
#define NR_TOPO_CPUS 3

static const char *const topo_files[] = {
	CPU "online", CPU "possible", NODE "node0/cpulist", NODE "node1/cpulist",
#define PER_CPU(n)                                                                                \
	CPU "cpu" #n "/online", CPU "cpu" #n "/topology/physical_package_id",                     \
		CPU "cpu" #n "/topology/core_id", CPU "cpu" #n "/topology/thread_siblings_list",  \
		CPU "cpu" #n "/topology/core_cpus_list", CPU "cpu" #n "/cache/index0/type",       \
		CPU "cpu" #n "/cache/index0/level", CPU "cpu" #n "/cache/index0/shared_cpu_list", \
		CPU "cpu" #n "/cache/index3/type", CPU "cpu" #n "/cache/index3/level",            \
		CPU "cpu" #n "/cache/index3/shared_cpu_list",                                     \
		CPU "cpu" #n "/cpufreq/scaling_cur_freq", CPU "cpu" #n "/cpufreq/cpuinfo_cur_freq"
	PER_CPU(0),   PER_CPU(1),     PER_CPU(2),
};

#define NR_TOPO_FILES (sizeof(topo_files) / sizeof(topo_files[0]))

static const char *const cg_files[] = {
	"proc/self/mountinfo",
	"proc/5/cgroup",
	"sys/fs/cgroup/cgroup.controllers",
	"sys/fs/cgroup/cpu.max",
	"sys/fs/cgroup/a/cpu.max",
	"sys/fs/cgroup/a/b/cpu.max",
	"sys/fs/cgroup/cpu/cpu.cfs_quota_us",
	"sys/fs/cgroup/cpu/cpu.cfs_period_us",
	"sys/fs/cgroup/cpu/a/cpu.cfs_quota_us",
	"sys/fs/cgroup/cpu/a/cpu.cfs_period_us",
	"sys/fs/cgroup/cpu/a/b/cpu.cfs_quota_us",
	"sys/fs/cgroup/cpu/a/b/cpu.cfs_period_us",
};

#define NR_CG_FILES (sizeof(cg_files) / sizeof(cg_files[0]))

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *root = fuzz_tmp_root();
	size_t i;

	(void)argc;
	(void)argv;
	/* Every directory once: a file's absence then never depends on earlier inputs. */
	for (i = 0; i < NR_TOPO_FILES; i++) {
		fuzz_put(root, topo_files[i], "", 0);
		fuzz_put(root, topo_files[i], NULL, 0);
	}
	for (i = 0; i < NR_CG_FILES; i++) {
		fuzz_put(root, cg_files[i], "", 0);
		fuzz_put(root, cg_files[i], NULL, 0);
	}
	return 0;
}

static uint32_t popcount(const uint8_t *mask, uint32_t bits)
{
	uint32_t n = 0, i;

	for (i = 0; i < bits; i++)
		n += fsutil__test_bit(mask, i);
	return n;
}

/* The mask as the kernel writes a cpu list: "0-3,8\n". */
static void write_cpulist(const uint8_t *mask, uint32_t bits, char *out, size_t size)
{
	size_t len = 0;
	uint32_t i = 0, j;

	out[0] = '\0';
	while (i < bits) {
		if (!fsutil__test_bit(mask, i)) {
			i++;
			continue;
		}
		for (j = i; j + 1 < bits && fsutil__test_bit(mask, j + 1); j++)
			;
		len += (size_t)snprintf(out + len, size - len, "%s%u", len ? "," : "", i);
		if (j > i)
			len += (size_t)snprintf(out + len, size - len, "-%u", j);
		FUZZ_CHECK(len < size);
		i = j + 1;
	}
	snprintf(out + len, size - len, "\n");
}

static void check_numbers(const char *text)
{
	static uint8_t mask[KHBPF_MAX_CPUS / 8], again[KHBPF_MAX_CPUS / 8];
	static char list[8 * KHBPF_MAX_CPUS];
	const uint32_t bits[] = { KHBPF_MAX_CPUS, 64, 1 };
	uint32_t count, count2;
	size_t i, len = strlen(text);
	uint64_t u;
	int64_t s;
	int err;

	for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
		err = fsutil__parse_cpulist(text, mask, bits[i], &count);
		FUZZ_CHECK(err == 0 || err == -EINVAL || err == -ERANGE);
		if (err) {
			FUZZ_CHECK(count == 0 && popcount(mask, bits[i]) == 0);
			continue;
		}
		FUZZ_CHECK(count == popcount(mask, bits[i]));
		write_cpulist(mask, bits[i], list, sizeof(list));
		FUZZ_CHECK(fsutil__parse_cpulist(list, again, bits[i], &count2) == 0);
		FUZZ_CHECK(count2 == count && !memcmp(mask, again, (bits[i] + 7) / 8));
	}

	/* Digits with one optional '\n', nothing else: what strtoull reads whole. */
	err = fsutil__parse_u64(text, &u);
	{
		size_t digits = strspn(text, "0123456789");
		bool shape =
			digits && (digits == len || (digits + 1 == len && text[digits] == '\n'));
		unsigned long long ref;

		errno = 0;
		ref = shape ? strtoull(text, NULL, 10) : 0;
		if (!shape)
			FUZZ_CHECK(err == -EINVAL);
		else if (errno == ERANGE)
			FUZZ_CHECK(err == -ERANGE);
		else
			FUZZ_CHECK(err == 0 && u == ref);
	}
	err = fsutil__parse_s64(text, &s);
	{
		const char *d = text + (text[0] == '-');
		size_t digits = strspn(d, "0123456789"), dlen = strlen(d);
		bool shape =
			digits && (digits == dlen || (digits + 1 == dlen && d[digits] == '\n'));
		long long ref;

		errno = 0;
		ref = shape ? strtoll(text, NULL, 10) : 0;
		if (!shape)
			FUZZ_CHECK(err == -EINVAL);
		else if (errno == ERANGE)
			FUZZ_CHECK(err == -ERANGE);
		else
			FUZZ_CHECK(err == 0 && s == ref);
	}
}

static void put_parts(const char *const *files, size_t nr_files, const uint8_t *data, size_t size)
{
	struct fuzz_part parts[64];
	size_t n, i;

	n = fuzz_split(data, size, parts, nr_files);
	for (i = 0; i < nr_files; i++)
		fuzz_put(fuzz_tmp_root(), files[i], i < n ? parts[i].p : NULL,
			 i < n ? parts[i].len : 0);
}

static void check_topology(const uint8_t *data, size_t size)
{
	static uint8_t online[KHBPF_MAX_CPUS / 8];
	const char *root = fuzz_tmp_root();
	struct cpu_frequency_sample fs;
	struct host_topology t;
	uint32_t count = 0, a, b, n;
	enum ev_gap reason = EV_GAP_UNAVAILABLE;
	int err, online_err;

	put_parts(topo_files, NR_TOPO_FILES, data, size);
	online_err = host_cpus__online(root, online, &count);

	err = host_topology__read(&t, root);
	FUZZ_CHECK(err <= 0);
	if (err) {
		FUZZ_CHECK(!t.cpus && !t.nr_cpu_ids && !t.logical_cpus);
	} else {
		FUZZ_CHECK(!online_err && count && t.logical_cpus == count);
		FUZZ_CHECK(t.nr_cpu_ids <= KHBPF_MAX_CPUS);
		for (a = 0, n = 0; a < t.nr_cpu_ids; a++) {
			const struct cpu_topo *c = &t.cpus[a];

			FUZZ_CHECK(c->online == fsutil__test_bit(online, a));
			n += c->online;
			FUZZ_CHECK(c->package >= -1 && c->package < (int32_t)count);
			FUZZ_CHECK(c->core >= -1 && c->core < (int32_t)count);
			FUZZ_CHECK(c->llc >= -1 && c->llc < (int32_t)count);
			FUZZ_CHECK(c->node >= -1 && c->node < (int32_t)count);
			if (!c->online)
				FUZZ_CHECK(c->package == -1 && c->core == -1 && c->llc == -1 &&
					   c->node == -1);
		}
		FUZZ_CHECK(n == count);
		if (t.packages.ev.recorded)
			FUZZ_CHECK(t.packages.ev.value >= 1 && t.packages.ev.value <= count);
		if (t.physical_cores.ev.recorded)
			FUZZ_CHECK(t.physical_cores.ev.value >= 1 &&
				   t.physical_cores.ev.value <= count);
		FUZZ_CHECK(t.nr_llc_groups <= count);
	}
	/* Distance is symmetric, and SAME only from a CPU to itself. */
	for (a = 0; a < t.nr_cpu_ids + 1 && a < 64; a++) {
		for (b = 0; b < t.nr_cpu_ids + 1 && b < 64; b++) {
			enum cpu_distance d = host_topology__distance(&t, a, b);

			FUZZ_CHECK(d < CPU_DIST__COUNT);
			FUZZ_CHECK(d == host_topology__distance(&t, b, a));
			if (a < t.nr_cpu_ids && b < t.nr_cpu_ids)
				FUZZ_CHECK((d == CPU_DIST_SAME) == (a == b));
		}
	}
	host_topology__free(&t);

	err = cpufreq__sample(root, 5, &fs, &reason);
	if (err) {
		FUZZ_CHECK(err == -ENOENT);
		FUZZ_CHECK(reason == EV_GAP_UNSUPPORTED || reason == EV_GAP_UNAVAILABLE ||
			   reason == EV_GAP_PERMISSION_DENIED);
	} else {
		FUZZ_CHECK(!online_err);
		FUZZ_CHECK(fs.elapsed_ns == 5);
		FUZZ_CHECK(fs.cpu_count >= 1 && fs.cpu_count <= count);
		FUZZ_CHECK(fs.min_khz >= 1 && fs.min_khz <= fs.mean_khz &&
			   fs.mean_khz <= fs.max_khz);
		FUZZ_CHECK(cpufreq__present(root));
	}
}

static void check_cgroup(const uint8_t *data, size_t size)
{
	const char *root = fuzz_tmp_root();
	char path[PATH_MAX], mount[PATH_MAX];
	struct sev_u64 quota;
	enum cgroup_mode mode;
	int err;

	put_parts(cg_files, NR_CG_FILES, data, size);
	memset(path, 'x', sizeof(path));
	err = cgroup__cpu_quota(root, 5, &quota, path, sizeof(path));
	FUZZ_CHECK(err <= 0);
	FUZZ_CHECK(memchr(path, '\0', sizeof(path)));
	FUZZ_CHECK(!path[0] || path[0] == '/');
	FUZZ_CHECK(quota.source == EV_SRC_SYSFS_CGROUP);
	if (quota.ev.recorded)
		FUZZ_CHECK(!err);
	if (err)
		FUZZ_CHECK(!quota.ev.recorded);

	mode = cgroup_mode__detect(root);
	FUZZ_CHECK(mode >= CGROUP_MODE_UNKNOWN && mode <= CGROUP_MODE_HYBRID);
	FUZZ_CHECK(cgroup_mode__name(mode)[0]);

	err = cgroup__v2_mount(root, mount, sizeof(mount));
	FUZZ_CHECK(err <= 0);
	if (!err) {
		FUZZ_CHECK(!strncmp(mount, root, strlen(root)));
		FUZZ_CHECK(mode == CGROUP_MODE_V2 || mode == CGROUP_MODE_HYBRID);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
		text = fuzz_strndup(data + 1, size - 1);
		check_numbers(text);
		free(text);
		break;
	case 1:
		check_topology(data + 1, size - 1);
		break;
	case 2:
		check_cgroup(data + 1, size - 1);
		break;
	}
	return 0;
}

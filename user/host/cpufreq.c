// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host/cpufreq.h"
#include "lib/fsutil.h"
#include "host/topology.h"

#define CPU_DIR "/sys/devices/system/cpu"

static bool cpufreq_dir_exists(const char *root, uint32_t cpu)
{
	char path[PATH_MAX];
	struct stat st;

	if (fsutil__path(path, sizeof(path), root, CPU_DIR "/cpu%u/cpufreq", cpu) < 0)
		return false;
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* Current kHz of one CPU; *has_dir tells whether its cpufreq directory exists. */
static int read_cpu_khz(const char *root, uint32_t cpu, uint64_t *khz, bool *has_dir)
{
	char rel[96];
	int err, err2;

	snprintf(rel, sizeof(rel), CPU_DIR "/cpu%u/cpufreq/scaling_cur_freq", cpu);
	err = fsutil__read_u64(root, rel, khz);
	if (err) {
		/* cpuinfo_cur_freq asks the hardware; it is root-only (0400). */
		snprintf(rel, sizeof(rel), CPU_DIR "/cpu%u/cpufreq/cpuinfo_cur_freq", cpu);
		err2 = fsutil__read_u64(root, rel, khz);
		if (!err2 || err == -ENOENT)
			err = err2;
	}
	*has_dir = err != -ENOENT || cpufreq_dir_exists(root, cpu);
	/* Some drivers report 0 when they do not know; that is not a frequency. */
	if (!err && !*khz)
		err = -EINVAL;
	return err;
}

int cpufreq__sample(const char *root, uint64_t elapsed_ns, struct cpu_frequency_sample *out,
		    enum ev_gap *reason)
{
	unsigned __int128 sum = 0;
	bool any_dir = false, denied = false;
	uint64_t khz, min = UINT64_MAX, max = 0;
	uint32_t cpu, count = 0;
	uint8_t *online;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->elapsed_ns = elapsed_ns;

	online = calloc(1, KHBPF_MAX_CPUS / 8);
	if (!online) {
		if (reason)
			*reason = EV_GAP_UNAVAILABLE;
		return -ENOENT;
	}
	err = host_cpus__online(root, online, NULL);
	if (err) {
		free(online);
		if (reason)
			*reason = fsutil__errno_gap(err);
		return -ENOENT;
	}
	for (cpu = 0; cpu < KHBPF_MAX_CPUS; cpu++) {
		bool has_dir;

		if (!fsutil__test_bit(online, cpu))
			continue;
		err = read_cpu_khz(root, cpu, &khz, &has_dir);
		any_dir |= has_dir;
		if (err) {
			denied |= err == -EACCES || err == -EPERM;
			continue;
		}
		sum += khz;
		count++;
		if (khz < min)
			min = khz;
		if (khz > max)
			max = khz;
	}
	free(online);

	if (!count) {
		if (reason) {
			if (!any_dir)
				*reason = EV_GAP_UNSUPPORTED;
			else
				*reason = denied ? EV_GAP_PERMISSION_DENIED : EV_GAP_UNAVAILABLE;
		}
		return -ENOENT;
	}
	out->min_khz = min;
	out->max_khz = max;
	out->mean_khz = (uint64_t)(sum / count);
	out->cpu_count = count;
	return 0;
}

bool cpufreq__present(const char *root)
{
	uint8_t *online = calloc(1, KHBPF_MAX_CPUS / 8);
	bool present = false;
	uint32_t cpu;

	if (!online)
		return false;
	if (!host_cpus__online(root, online, NULL)) {
		for (cpu = 0; cpu < KHBPF_MAX_CPUS && !present; cpu++)
			present = fsutil__test_bit(online, cpu) && cpufreq_dir_exists(root, cpu);
	}
	free(online);
	return present;
}

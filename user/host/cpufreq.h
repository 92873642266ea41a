/* SPDX-License-Identifier: MIT */
/* One CPU frequency sample over the online CPUs (cpufreq's current frequency). */
#ifndef KHBPF_CPUFREQ_H
#define KHBPF_CPUFREQ_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/evidence.h"

/*
 * Reads root/sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq (else
 * cpuinfo_cur_freq) of every online CPU; min/max/floor(mean) kHz over the
 * CPUs with a readable non-zero value, cpu_count of them. Returns 0 when at
 * least one CPU had a value; otherwise -ENOENT with *reason (may be NULL)
 * "unsupported" when no online CPU has a cpufreq directory, "permission-denied"
 * when a value was refused, else "unavailable".
 */
int cpufreq__sample(const char *root, uint64_t elapsed_ns, struct cpu_frequency_sample *out,
		    enum ev_gap *reason);
/* Whether any online CPU has a cpufreq directory (a cpufreq driver is active). */
bool cpufreq__present(const char *root);

#endif /* KHBPF_CPUFREQ_H */

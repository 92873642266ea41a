/* SPDX-License-Identifier: MIT */
/*
 * Thermal state at a window's two ends, in keyhog-profile's ThermalEvidence
 * shape: the hottest thermal zone (temp of each /sys/class/thermal/thermal_zoneN)
 * and the CPUs' thermal_throttle counts (x86's therm_throt driver), whose
 * change over the window is the throttling that happened in it.
 */
#ifndef KHBPF_THERMAL_H
#define KHBPF_THERMAL_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/evidence.h"

/* Zones beyond this many make the hottest zone a gap rather than a guess. */
#define THERMAL_MAX_ZONES 1024

struct thermal_sample {
	struct sev_u64 max_zone_millicelsius; /* the hottest zone that could be read */
	struct sev_u64 throttle_events; /* core_throttle_count summed over online CPUs */
	struct sev_u64 package_throttle_events; /* package_throttle_count, once per package */
};

/*
 * Reads root/sys/class/thermal and root/sys/devices/system/cpu now. Absent
 * facilities are "unsupported" (no zones; no thermal_throttle directory on
 * any online CPU, as in most VMs and on non-Intel CPUs), refused reads
 * "permission-denied", anything else "unavailable", all with source
 * sysfs-thermal. detail (may be NULL) receives the first cause of a gap if
 * it is still empty.
 */
void thermal__sample(const char *root, struct thermal_sample *out, char *detail, size_t detail_len);

/* A window's two readings. */
struct thermal_window {
	struct thermal_sample start, end;
	char detail[384]; /* why values are gaps (zones; throttle counts), "" when none is */
};

/* Every value the gap "unavailable" from sysfs-thermal, until read. */
void thermal_window__init(struct thermal_window *w);
void thermal_window__read(struct thermal_window *w, const char *root, bool at_end);

/* Throttle events in the window: end - start (ev_u64__delta rules). */
struct sev_u64 thermal_window__core_events(const struct thermal_window *w);
struct sev_u64 thermal_window__package_events(const struct thermal_window *w);

#endif /* KHBPF_THERMAL_H */

/* SPDX-License-Identifier: MIT */
/*
 * serve's pressure and thermal families, read from procfs and sysfs when
 * /metrics is scraped (like the CPU frequency), not from a window:
 *
 *   khbpf_pressure_stalled_seconds_total{resource,kind}         the host
 *   khbpf_pressure_stalled_seconds_total{cgroup,resource,kind}  each cgroup
 *       series of --by cgroup (its cgroup v2's *.pressure)
 *   khbpf_thermal_max_zone_celsius                               gauge
 *   khbpf_thermal_throttle_events_total{kind="core"|"package"}  since boot
 *
 * The stall is the kernel's total= in seconds, exactly (microseconds as a
 * decimal). A value that cannot be read has no series: the system's cpu
 * full (the kernel's constant 0), a cgroup without PSI, and the thermal
 * families on a host without zones or thermal_throttle (their gaps and
 * causes are in the window's document).
 */
#ifndef KHBPF_SERVE_PRESSURE_H
#define KHBPF_SERVE_PRESSURE_H

struct promtext;
struct serve_metrics_src;

int serve_pressure__render(struct promtext *p, const struct serve_metrics_src *src);

#endif /* KHBPF_SERVE_PRESSURE_H */

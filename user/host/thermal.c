// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fsutil.h"
#include "host/thermal.h"
#include "host/topology.h"

#define THERMAL_DIR "/sys/class/thermal"
#define CPU_DIR "/sys/devices/system/cpu"

static void note(char *detail, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Zones and throttle counts fail for their own causes: each is added, once. */
static void note(char *detail, size_t len, const char *fmt, ...)
{
	char text[256];
	size_t used;
	va_list ap;

	if (!detail || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (strstr(detail, text))
		return;
	used = strlen(detail);
	snprintf(detail + used, len - used, "%s%s", used ? "; " : "", text);
}

static struct sev_u64 gap(enum ev_gap reason)
{
	return sev_u64__gap(EV_SRC_SYSFS_THERMAL, reason);
}

static bool is_zone(const char *name)
{
	const char *p;

	if (strncmp(name, "thermal_zone", 12) || !name[12])
		return false;
	for (p = name + 12; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
	}
	return true;
}

/* The hottest zone that could be read; zones that refuse (a sensor off) are left out. */
static struct sev_u64 max_zone(const char *root, char *detail, size_t len)
{
	char dir[PATH_MAX], rel[PATH_MAX];
	size_t zones = 0, read = 0;
	int64_t max = INT64_MIN, t;
	bool denied = false;
	struct dirent *de;
	int err = 0, last = 0;
	DIR *d;

	if (fsutil__path(dir, sizeof(dir), root, THERMAL_DIR) < 0) {
		note(detail, len, "%s: path too long", THERMAL_DIR);
		return gap(EV_GAP_UNAVAILABLE);
	}
	d = opendir(dir);
	if (!d) {
		err = -errno;
		note(detail, len, "%s: %s", THERMAL_DIR,
		     err == -ENOENT ? "absent (a kernel without CONFIG_THERMAL)" : strerror(-err));
		return gap(err == -ENOENT ? EV_GAP_UNSUPPORTED : fsutil__errno_gap(err));
	}
	while ((de = readdir(d)) && zones <= THERMAL_MAX_ZONES) {
		if (!is_zone(de->d_name) || ++zones > THERMAL_MAX_ZONES)
			continue;
		snprintf(rel, sizeof(rel), THERMAL_DIR "/%s/temp", de->d_name);
		err = fsutil__read_s64(root, rel, &t);
		if (err) {
			denied |= err == -EACCES || err == -EPERM;
			last = err;
			continue;
		}
		read++;
		if (t > max)
			max = t;
	}
	closedir(d);
	if (zones > THERMAL_MAX_ZONES) {
		note(detail, len, "more than %d thermal zones: not all read", THERMAL_MAX_ZONES);
		return gap(EV_GAP_UNAVAILABLE);
	}
	if (!zones) {
		note(detail, len, "no thermal zones in " THERMAL_DIR " (none on this machine)");
		return gap(EV_GAP_UNSUPPORTED);
	}
	if (!read) {
		note(detail, len, "%zu thermal zones, none readable: %s", zones, strerror(-last));
		return gap(denied ? EV_GAP_PERMISSION_DENIED : EV_GAP_UNAVAILABLE);
	}
	if (max < 0) {
		note(detail, len, "the hottest zone reads %lld millicelsius: below 0, not a u64",
		     (long long)max);
		return gap(EV_GAP_UNAVAILABLE);
	}
	if (read < zones)
		note(detail, len,
		     "%zu of %zu thermal zones unreadable (%s): the hottest of the rest",
		     zones - read, zones, strerror(-last));
	return sev_u64__recorded((uint64_t)max, EV_SRC_SYSFS_THERMAL);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

struct throttle_sum {
	uint32_t cpus, with_dir;
	uint64_t core, package;
	int core_err, package_err;
	bool package_missing;
	int64_t *packages; /* ids already counted */
	size_t nr_packages;
};

/* One online CPU's counts; package counts once per physical package. */
static int throttle_cpu(const char *root, uint32_t cpu, struct throttle_sum *s)
{
	char rel[128];
	uint64_t v;
	int64_t id;
	size_t i;
	int err;

	s->cpus++;
	snprintf(rel, sizeof(rel), CPU_DIR "/cpu%u/thermal_throttle/core_throttle_count", cpu);
	err = fsutil__read_u64(root, rel, &v);
	if (err == -ENOENT)
		return 0;
	s->with_dir++;
	if (err)
		s->core_err = s->core_err ?: err;
	else
		s->core = sat_add(s->core, v);

	snprintf(rel, sizeof(rel), CPU_DIR "/cpu%u/topology/physical_package_id", cpu);
	err = fsutil__read_s64(root, rel, &id);
	if (err) {
		s->package_err = s->package_err ?: err;
		return 0;
	}
	for (i = 0; i < s->nr_packages; i++) {
		if (s->packages[i] == id)
			return 0;
	}
	s->packages[s->nr_packages++] = id;
	snprintf(rel, sizeof(rel), CPU_DIR "/cpu%u/thermal_throttle/package_throttle_count", cpu);
	err = fsutil__read_u64(root, rel, &v);
	if (err == -ENOENT)
		s->package_missing = true; /* the CPU lacks package thermal status */
	else if (err)
		s->package_err = s->package_err ?: err;
	else
		s->package = sat_add(s->package, v);
	return 0;
}

static void throttle(const char *root, struct thermal_sample *out, char *detail, size_t len)
{
	struct throttle_sum s = { 0 };
	uint8_t *online;
	uint32_t cpu;
	int err;

	out->throttle_events = gap(EV_GAP_UNAVAILABLE);
	out->package_throttle_events = gap(EV_GAP_UNAVAILABLE);
	online = calloc(1, KHBPF_MAX_CPUS / 8);
	s.packages = calloc(KHBPF_MAX_CPUS, sizeof(*s.packages));
	if (!online || !s.packages) {
		note(detail, len, "out of memory");
		goto cleanup;
	}
	err = host_cpus__online(root, online, NULL);
	if (err) {
		note(detail, len, CPU_DIR "/online: %s", strerror(-err));
		out->throttle_events = gap(fsutil__errno_gap(err));
		out->package_throttle_events = out->throttle_events;
		goto cleanup;
	}
	for (cpu = 0; cpu < KHBPF_MAX_CPUS; cpu++) {
		if (fsutil__test_bit(online, cpu))
			throttle_cpu(root, cpu, &s);
	}
	if (!s.with_dir) {
		note(detail, len,
		     "no thermal_throttle directory under " CPU_DIR
		     "/cpu*/ (the x86 therm_throt driver: absent in VMs and on other CPUs)");
		out->throttle_events = gap(EV_GAP_UNSUPPORTED);
		out->package_throttle_events = out->throttle_events;
		goto cleanup;
	}
	if (s.with_dir < s.cpus) {
		/* A sum over some CPUs only is not the host's count. */
		note(detail, len, "thermal_throttle on %u of %u online CPUs only", s.with_dir,
		     s.cpus);
		goto cleanup;
	}
	if (s.core_err)
		note(detail, len, "core_throttle_count: %s", strerror(-s.core_err));
	out->throttle_events = s.core_err ? gap(fsutil__errno_gap(s.core_err)) :
					    sev_u64__recorded(s.core, EV_SRC_SYSFS_THERMAL);
	if (s.package_err)
		note(detail, len, "package_throttle_count: %s", strerror(-s.package_err));
	out->package_throttle_events =
		s.package_err	  ? gap(fsutil__errno_gap(s.package_err)) :
		s.package_missing ? gap(EV_GAP_UNSUPPORTED) :
				    sev_u64__recorded(s.package, EV_SRC_SYSFS_THERMAL);
cleanup:
	free(s.packages);
	free(online);
}

void thermal__sample(const char *root, struct thermal_sample *out, char *detail, size_t detail_len)
{
	out->max_zone_millicelsius = max_zone(root, detail, detail_len);
	throttle(root, out, detail, detail_len);
}

void thermal_window__init(struct thermal_window *w)
{
	struct thermal_sample *s[2] = { &w->start, &w->end };
	int i;

	memset(w, 0, sizeof(*w));
	for (i = 0; i < 2; i++) {
		s[i]->max_zone_millicelsius = gap(EV_GAP_UNAVAILABLE);
		s[i]->throttle_events = gap(EV_GAP_UNAVAILABLE);
		s[i]->package_throttle_events = gap(EV_GAP_UNAVAILABLE);
	}
}

void thermal_window__read(struct thermal_window *w, const char *root, bool at_end)
{
	thermal__sample(root, at_end ? &w->end : &w->start, w->detail, sizeof(w->detail));
}

struct sev_u64 thermal_window__core_events(const struct thermal_window *w)
{
	return sev_u64__delta(w->end.throttle_events, w->start.throttle_events);
}

struct sev_u64 thermal_window__package_events(const struct thermal_window *w)
{
	return sev_u64__delta(w->end.package_throttle_events, w->start.package_throttle_events);
}

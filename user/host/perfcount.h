/* SPDX-License-Identifier: MIT */
/*
 * Process-wide perf counters for a target: one counting event per (thread,
 * event), opened with inherit so threads created later are counted too, and
 * read at the end of the window. Every event is opened on its own (no
 * group), so one event the PMU lacks gaps only its own field.
 */
#ifndef KHBPF_PERFCOUNT_H
#define KHBPF_PERFCOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/evidence.h"

#define PERFCOUNT_MAX_EVENTS 9

struct perfcount;

struct perfcount_event {
	uint32_t type; /* PERF_TYPE_* */
	uint64_t config; /* PERF_COUNT_* */
};

struct perfcount_opts {
	size_t sz;
	const struct perfcount_event *events; /* at most PERFCOUNT_MAX_EVENTS */
	size_t nr_events;
	bool enable_on_exec; /* count from the target's exec (run mode) */
};

struct perfcount_value {
	bool recorded;
	enum ev_gap reason; /* when !recorded */
	int err; /* -errno that caused the gap, 0 otherwise */
	uint64_t value;
	bool multiplexed; /* time_running < time_enabled: partial, so gapped */
};

/*
 * Open every event on each tid (inherit=1). Returns 0 when at least the
 * bookkeeping succeeded; per-event open failures become gaps at read time.
 */
int perfcount__open(struct perfcount **out, const pid_t *tids, size_t nr_tids,
		    const struct perfcount_opts *opts);
/* Sum over threads for each event, in the order given at open. */
int perfcount__read(struct perfcount *p, struct perfcount_value *values, size_t nr);
void perfcount__destroy(struct perfcount *p);

/*
 * One counting event for everything on `cpu` (pid -1), for a
 * BPF_MAP_TYPE_PERF_EVENT_ARRAY. Returns the fd or -errno.
 */
int perfcount__open_cpu(const struct perfcount_event *ev, int cpu);
/* The gap a perf_event_open() error means (ENOENT: no such PMU event → unsupported). */
enum ev_gap perfcount__errno_gap(int err);

/* The HardwareCounterSet's events, in counter_set field order (8 events). */
extern const struct perfcount_event perfcount_hw_events[8];

/* Readings of perfcount_hw_events → a counter set (deltas from zero at open). */
void perfcount__counter_set(struct counter_set *out, const struct perfcount_value *values);

#endif /* KHBPF_PERFCOUNT_H */

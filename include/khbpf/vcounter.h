/* SPDX-License-Identifier: MIT */
/*
 * Per-thread virtual perf counters from per-CPU ones.
 *
 * A per-CPU counting event (cycles, instructions) counts whatever runs on
 * that CPU. A thread's own count is the sum, over the stints it spent on a
 * CPU, of the CPU counter's growth from switch-in to switch-out; a reading
 * in the middle of a stint adds the growth since the switch-in. sched_switch
 * and the span uprobes read the counters with bpf_perf_event_read_value(),
 * which also gives the event's enabled and running times: if running grew
 * less than enabled during a stint, the PMU multiplexed the event and the
 * count is partial, so the span's reading becomes a gap.
 *
 * Pure arithmetic on fixed-width fields, compiled into the BPF programs (bpf/khbpf.bpf.h) and
 * into tests/include/test_vcounter.c, which feeds it readings.
 */
#ifndef KHBPF_VCOUNTER_H
#define KHBPF_VCOUNTER_H

#ifndef __BPF__
#include <linux/types.h>
#endif

/* Counter slots in the PERF_EVENT_ARRAY: index cpu * KHBPF_NR_COUNTERS + slot. */
#define KHBPF_CTR_CYCLES 0
#define KHBPF_CTR_INSTRUCTIONS 1
#define KHBPF_NR_COUNTERS 2

/* One reading of a per-CPU event (the layout of struct bpf_perf_event_value). */
struct khbpf_ctr_read {
	__u64 counter;
	__u64 enabled;
	__u64 running;
};

/* A thread's virtual counter for one event. */
struct khbpf_vctr {
	__u64 value; /* counts over the finished stints */
	__u64 lost; /* enabled minus running over the finished stints */
	struct khbpf_ctr_read in; /* the CPU's reading at this stint's switch-in */
	__u64 in_valid; /* 0: this stint has no switch-in reading */
	__u64 broken; /* stints that could not be counted */
};

/* A virtual reading: what a span stores at its start and end. */
struct khbpf_vreading {
	__u64 value;
	__u64 lost;
	__u64 broken;
	__u64 ok; /* 0: no reading (the read failed or the stint is unmeasured) */
};

#ifndef __BPF__
_Static_assert(sizeof(struct khbpf_ctr_read) == 24, "khbpf_ctr_read layout");
_Static_assert(sizeof(struct khbpf_vctr) == 56, "khbpf_vctr layout");
_Static_assert(sizeof(struct khbpf_vreading) == 32, "khbpf_vreading layout");
#endif

/* Why a span's counter delta is not recorded (0: recorded). */
#define KHBPF_VCTR_OK 0
#define KHBPF_VCTR_NO_READING 1 /* a read failed or the stint had no switch-in */
#define KHBPF_VCTR_MULTIPLEXED 2 /* running < enabled while the span was open */
#define KHBPF_VCTR_BROKEN 3 /* a stint inside the span could not be counted */

/* Switch-in (or the first span starting the clock): remember the CPU's reading. */
static inline void khbpf_vctr_in(struct khbpf_vctr *v, const struct khbpf_ctr_read *r, int read_ok)
{
	v->in = *r;
	v->in_valid = read_ok ? 1 : 0;
}

/* Switch-out: add the stint; a stint that cannot be measured is counted broken. */
static inline void khbpf_vctr_out(struct khbpf_vctr *v, const struct khbpf_ctr_read *r, int read_ok)
{
	if (!v->in_valid || !read_ok || r->counter < v->in.counter || r->enabled < v->in.enabled ||
	    r->running < v->in.running) {
		v->broken++;
	} else {
		v->value += r->counter - v->in.counter;
		v->lost += (r->enabled - v->in.enabled) - (r->running - v->in.running);
	}
	v->in_valid = 0;
}

/* The thread's reading now, in the middle of a stint (r: the CPU's reading). */
static inline void khbpf_vctr_now(const struct khbpf_vctr *v, const struct khbpf_ctr_read *r,
				  int read_ok, struct khbpf_vreading *out)
{
	out->broken = v->broken;
	if (!v->in_valid || !read_ok || r->counter < v->in.counter || r->enabled < v->in.enabled ||
	    r->running < v->in.running) {
		out->value = 0;
		out->lost = 0;
		out->ok = 0;
		return;
	}
	out->value = v->value + (r->counter - v->in.counter);
	out->lost = v->lost + (r->enabled - v->in.enabled) - (r->running - v->in.running);
	out->ok = 1;
}

/* A span's status from its start and end readings (KHBPF_VCTR_*). */
static inline __u32 khbpf_vctr_status(const struct khbpf_vreading *begin,
				      const struct khbpf_vreading *end)
{
	if (!begin->ok || !end->ok)
		return KHBPF_VCTR_NO_READING;
	if (end->broken != begin->broken || end->value < begin->value)
		return KHBPF_VCTR_BROKEN;
	if (end->lost != begin->lost)
		return KHBPF_VCTR_MULTIPLEXED;
	return KHBPF_VCTR_OK;
}

#endif /* KHBPF_VCOUNTER_H */

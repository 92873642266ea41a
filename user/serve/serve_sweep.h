/* SPDX-License-Identifier: MIT */
/*
 * The sweep of a kernel table serve keeps bounded (groups, span series):
 * which entries leave after a window, idle for --max-age, or, past 9/10 of
 * the bound, the longest idle until 3/4 are left, so that the kernel never
 * has to spill while user space keeps up. The tables' own code removes
 * them and keeps what they had (serve_groups.c, serve_spans.c).
 */
#ifndef KHBPF_SERVE_SWEEP_H
#define KHBPF_SERVE_SWEEP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An entry's activity (a count that grows while it is used) and since when it has not. */
struct sweep_mark {
	uint64_t activity;
	uint64_t changed_mono;
};

enum sweep_verdict {
	SWEEP_KEEP,
	SWEEP_AGED, /* idle for max_age */
	SWEEP_EVICT, /* the longest idle, past 9/10 of the bound */
};

/* CLOCK_MONOTONIC now, in ns. */
uint64_t serve_sweep__now(void);
/* m seen now with activity (old: NULL for an entry not seen before). */
void serve_sweep__mark(struct sweep_mark *m, const struct sweep_mark *old, uint64_t activity,
		       uint64_t now);
/*
 * The verdict of each of the nr entries marks[i] (max_age 0: 5 minutes),
 * into verdict[]. 0 or -ENOMEM.
 */
int serve_sweep__decide(const struct sweep_mark *const *marks, size_t nr, uint64_t now,
			uint64_t max_age, uint64_t max, uint8_t *verdict);
#endif /* KHBPF_SERVE_SWEEP_H */

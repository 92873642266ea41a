/* SPDX-License-Identifier: MIT */
/* Who woke the threads: the (thread, waker) table made into ranked rows. */
#ifndef KHBPF_WAKERS_H
#define KHBPF_WAKERS_H

#include <stddef.h>

#include "lib/evidence.h"
#include "collect/sched_collector.h"

/* Top wakers listed per thread and per process; the rest are summed. */
#define WAKERS_LISTED 8

/* Entry e as a row. */
void wakers__row(const struct waker_entry *e, struct waker_row *out);
/*
 * Ranks rows[0..n) in place by ns, largest first (ties: fewer first by
 * kind, then tid), and sets b's wakers to the first `max` of them, the
 * rest's sums, and without_waker_ns: b's blocked time beyond all n rows.
 */
void wakers__rank(struct waker_row *rows, size_t n, size_t max, struct blocked_evidence *b);
/*
 * rows[0..n) merged by waker (kind and tid; a thread's comm is its
 * latest), in place; returns how many remain.
 */
size_t wakers__merge(struct waker_row *rows, size_t n);

#endif /* KHBPF_WAKERS_H */

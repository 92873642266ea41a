/* SPDX-License-Identifier: MIT */
/*
 * Who woke the spans (--wakers): each span record's wakeups, merged by
 * waker and kept beside the record; each metric's from the kernel's
 * span_wakers sums; both named from the threads' wakers.
 */
#ifndef KHBPF_SPANWAKES_H
#define KHBPF_SPANWAKES_H

#include <stddef.h>
#include <stdint.h>

#include "lib/evidence.h"
#include "collect/sched_collector.h"

struct span_waker_kept {
	uint32_t kind; /* enum waker_kind */
	uint32_t tid; /* WAKER_THREAD: the waker and its process */
	uint32_t pid;
	uint32_t count;
	uint64_t ns;
	uint64_t last_wake_ns; /* bpf_ktime_get_ns() at its latest wakeup of the span's thread */
};

/* One record's wakers: its SPAN_RECORD_WAKERS largest, the others summed. */
struct span_wakes_kept {
	uint64_t span_id;
	uint32_t nr;
	uint32_t pad;
	struct span_waker_kept w[SPAN_RECORD_WAKERS];
	uint64_t other_ns;
	uint64_t other_count;
};

struct waker_name {
	uint32_t tid;
	uint32_t pid;
	char comm[WAKER_COMM_MAX];
};

struct span_wakes {
	struct span_wakes_kept *recs; /* by span_id after span_wakes__seal */
	size_t nr;
	size_t cap;
	struct waker_name *names; /* by tid */
	size_t nr_names;
};

/*
 * Keeps the wakeups of span span_id (k: as the kernel delivered them),
 * merged by waker. 0, or -ENOMEM (nothing kept).
 */
int span_wakes__add(struct span_wakes *w, uint64_t span_id, const struct khbpf_span_wakes *k);
/*
 * Done adding: sorts the kept records, and names the wakers from the
 * threads' wakers t[0..n) (sched_collector__wakers). 0 or -ENOMEM.
 */
int span_wakes__seal(struct span_wakes *w, const struct waker_entry *t, size_t n);
/* The kept wakers of span_id, or NULL (after span_wakes__seal). */
const struct span_wakes_kept *span_wakes__find(const struct span_wakes *w, uint64_t span_id);
/*
 * b (a recorded blocked_evidence with its totals set) gets k's wakers as
 * rows[0..SPAN_RECORD_WAKERS), their latest wakeups counted from
 * start_mono_ns. A thread that cannot be named is among the others.
 */
void span_wakes__evidence(const struct span_wakes *w, const struct span_wakes_kept *k,
			  uint64_t start_mono_ns, struct waker_row *rows,
			  struct blocked_evidence *b);
/*
 * A metric's wakers, e[0..n) (span_wakers entries of that metric), as
 * rows[0..n) ranked into b: its WAKERS_LISTED largest, the rest summed.
 */
void span_wakes__metric(const struct span_wakes *w, const struct span_waker_entry *e, size_t n,
			struct waker_row *rows, struct blocked_evidence *b);
void span_wakes__free(struct span_wakes *w);

#endif /* KHBPF_SPANWAKES_H */

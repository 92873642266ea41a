/* SPDX-License-Identifier: MIT */
/* BPF ↔ user boundary of span probes (the uprobe programs in bpf/span.bpf.c). */
#ifndef KHBPF_SPANS_H
#define KHBPF_SPANS_H

#ifndef __BPF__
#include <linux/types.h>
#endif

#include "khbpf/sched.h"
#include "khbpf/vcounter.h"

/* Open spans per thread; deeper ones are counted in span_depth_overflow. */
#define KHBPF_SPAN_DEPTH 32
/* Metric ids are the uprobe's bpf_cookie: an index into the loader's table. */
#define KHBPF_MAX_METRICS 1024
/* (thread, metric) aggregates kept in the kernel (--max-span-keys). */
#define KHBPF_DEFAULT_SPAN_KEYS 65536
/*
 * Keys (--key METRIC=argN:str|int): a call of a keyed metric counts under
 * its key's own metric id, KHBPF_KEY_METRIC_BASE + a slot handed out at the
 * key's first call; a call past the metric's bound of keys, or whose
 * argument cannot be read, under KHBPF_OTHER_METRIC_BASE + the metric (its
 * "(other)"). The site's argument spec is span_site_args[slot - 1], slot
 * being the attach cookie's high half (or span_site_slot without cookies).
 */
#define KHBPF_OTHER_METRIC_BASE 0x8000u
#define KHBPF_KEY_METRIC_BASE 0x10000u
/* A str key's bytes, its NUL included: a string of 63 bytes or more is cut to 63. */
#define KHBPF_KEY_STR_MAX 64
/* Keys of all metrics in one window (span_key_ids); more count under "(other)". */
#define KHBPF_MAX_KEYS 16384
#define KHBPF_DEFAULT_KEYS_PER_METRIC 256

enum khbpf_key_kind {
	KHBPF_KEY_NONE,
	KHBPF_KEY_INT,
	KHBPF_KEY_STR,
};
/* In khbpf_key.kind: a str that filled its bytes (63 or more before its NUL). */
#define KHBPF_KEY_F_TRUNCATED 0x100u

/* A metric's key (span_key_conf[metric]). */
struct khbpf_key_conf {
	__u32 kind; /* KHBPF_KEY_* */
	__u32 max_keys; /* keys of this metric; the calls of more go to its "(other)" */
};

enum khbpf_arg_type {
	KHBPF_ARG_NONE,
	KHBPF_ARG_IMM, /* the value is val_off */
	KHBPF_ARG_REG, /* a register */
	KHBPF_ARG_DEREF, /* memory at a register plus val_off */
};

/* How to read a site's keyed argument: a USDT argument spec, or a function's register. */
struct khbpf_arg_spec {
	__s64 val_off;
	__u32 reg_off; /* the register's offset in struct pt_regs */
	__u8 type; /* KHBPF_ARG_* */
	__u8 size; /* 1, 2, 4 or 8 bytes */
	__u8 is_signed;
	__u8 pad;
};

/* A key of one metric (span_key_ids: key → its metric id). */
struct khbpf_key {
	__u32 metric; /* the keyed metric */
	__u32 kind; /* KHBPF_KEY_INT or KHBPF_KEY_STR, | KHBPF_KEY_F_TRUNCATED */
	__u8 bytes[KHBPF_KEY_STR_MAX]; /* a str, NUL-padded; an int's 8 bytes, host order */
};

/* (thread, probe) counts of --usdt probes; more are counted in usdt_hits_lost. */
#define KHBPF_DEFAULT_USDT_HIT_KEYS 65536
#define KHBPF_DEFAULT_MAX_SPANS 100000
/*
 * The span ring buffer (--span-buffer): a power of two from MIN to MAX
 * bytes. Records it has no room for are counted (span_records_dropped_ringbuf).
 */
#define KHBPF_SPAN_RINGBUF_BYTES (1u << 20)
#define KHBPF_SPAN_RINGBUF_MIN (64u << 10)
#define KHBPF_SPAN_RINGBUF_MAX (1u << 30)
/*
 * Without task storage, span state (7.9 KiB each) lives in a preallocated
 * hash of this many threads; a thread beyond it records no spans, counted
 * in span_state_failures.
 */
#define KHBPF_DEFAULT_SPAN_TASKS 4096
/* Span sites one collector attaches (and, without cookies, in span_site_metric). */
#define KHBPF_MAX_SPAN_SITES 4096
/*
 * Span ids are (thread slot << KHBPF_SPAN_SEQ_BITS) | the thread's own span
 * sequence: unique without a shared counter on every span. Threads past
 * KHBPF_SPAN_MAX_SLOT get no spans (counted in span_state_failures).
 */
#define KHBPF_SPAN_SEQ_BITS 40
#define KHBPF_SPAN_MAX_SLOT ((1u << (64 - KHBPF_SPAN_SEQ_BITS)) - 1)

/*
 * Who ended the blocked stretches inside a thread's open spans (--wakers):
 * the last KHBPF_WAKE_LOG such stretches with a waker seen, a ring in the
 * span clock written at the switch-in that ends each. A span's exit
 * itemises those since its entry, into its record and its metric's
 * wakers (span_wakers); stretches the ring no longer holds by then are
 * counted (span_wakes_unlisted) and their time is without a waker.
 */
#define KHBPF_WAKE_LOG 16
/* (metric, waker) entries of span_wakers (--max-span-wakers). */
#define KHBPF_DEFAULT_SPAN_WAKERS 16384

/*
 * 24 bytes: the span state must stay within what a task storage element
 * may be (7.x allocates it with kmalloc_nolock(), at most 8 KiB with its
 * header), so a thread id (below 2^22, PID_MAX_LIMIT) shares a word with
 * the kind.
 */
struct khbpf_span_wake {
	__u64 ns; /* the blocked time this wakeup ended */
	__u64 wake_ns; /* bpf_ktime_get_ns() at the wakeup (sched_waking) */
	__u32 waker; /* KHBPF_WAKE_WAKER(kind, tid): tid of a KHBPF_WAKER_TASK, else 0 */
	__u32 tgid; /* ... and its process */
};
#define KHBPF_WAKE_WAKER(kind, tid) ((__u32)(kind) << 30 | ((tid)&0x3fffffff))
#define KHBPF_WAKE_KIND(w) ((w) >> 30)
#define KHBPF_WAKE_TID(w) ((w)&0x3fffffff)

/*
 * A thread's on-CPU clock, kept while it has open spans, in the thread's
 * span task storage. sched_switch only looks it up, never creates it: a
 * lookup succeeds even while another task-storage access on the CPU holds
 * the per-CPU busy count (a uprobe program preempted mid-access), creation
 * would not (bpf_task_storage_trylock(), kernel/bpf/bpf_task_storage.c).
 */
struct khbpf_span_clock {
	__u64 oncpu_acc; /* on-CPU ns accumulated at switch-outs */
	__u64 switched_in; /* bpf_ktime_get_ns() at the last switch-in */
	__u64 switched_out; /* ... and at the last switch-out */
	__u64 spans_open; /* frames open on this thread */
	/*
	 * Switch-ins that were not seen (the switch-out came first): the
	 * on-CPU time of a span across one is unknown, so it is a gap.
	 */
	__u64 clock_gaps;
	/*
	 * Off-CPU time (runqueue clock) and blocked time by cause, summed at
	 * each switch-in while spans are open (sched.bpf.c).
	 */
	__u64 offcpu_ns;
	struct khbpf_blocked blocked;
	struct khbpf_vctr ctr[KHBPF_NR_COUNTERS];
	__u64 wake_seq; /* stretches written to wake_log: the next goes at wake_seq % LOG */
	struct khbpf_span_wake wake_log[KHBPF_WAKE_LOG];
};

/* The scheduler ledger of one span: what happened while it was open. */
struct khbpf_span_ledger {
	__u64 on_cpu_ns;
	__u64 run_delay_ns;
	__u64 nvcsw;
	__u64 nivcsw;
	__u64 migrations;
	/*
	 * Off-CPU time on the runqueue clock: run_delay_ns + blocked (the sum
	 * of blocked.ns) + what neither explains (a queued migration's skew).
	 */
	__u64 offcpu_ns;
	struct khbpf_blocked blocked;
};

struct khbpf_span_frame {
	__u64 span_id;
	__u64 start_ns; /* bpf_ktime_get_ns() */
	__u64 child_ns; /* inclusive time of direct children */
	__u32 metric; /* the site's: what a return or DONE matches */
	__u32 wake_seq; /* the clock's wake_seq at entry (its low half: differences wrap) */
	__u32 clock_gaps; /* the thread's clock_gaps at entry (its low half: compared) */
	__u32 agg_metric; /* what the call counts under: metric, or its key's (--key) */
	struct khbpf_span_ledger at_start; /* absolute readings at entry */
	struct khbpf_vreading hw[KHBPF_NR_COUNTERS]; /* virtual counters at entry */
};

/* Task storage: a thread's span clock and open spans. */
struct khbpf_span_state {
	struct khbpf_span_clock clock;
	__u64 seq; /* spans begun by this thread */
	__u32 slot; /* 1.. KHBPF_SPAN_MAX_SLOT, 0 until the first span */
	__u32 depth; /* frames in use */
	__u32 overflow; /* entries deeper than KHBPF_SPAN_DEPTH not pushed */
	__u32 pad;
	struct khbpf_span_frame frames[KHBPF_SPAN_DEPTH];
};

/* khbpf_span_event.flags */
#define KHBPF_SPAN_F_CLOCK_GAP 1 /* ledger.on_cpu_ns is unknown (a switch-in was missed) */
#define KHBPF_SPAN_F_OPEN 2 /* still open when its thread exited: only the start is known */

/* A span's counter readings (virtual, the thread's own) and their status. */
struct khbpf_span_hw {
	__u64 begin;
	__u64 end;
	__u32 status; /* KHBPF_VCTR_*; without counters configured the loader ignores it */
	__u32 pad;
};

/* One finished span, through the ring buffer. */
struct khbpf_span_event {
	__u64 span_id;
	__u64 parent_span_id; /* 0: a root span */
	__u64 start_ns;
	__u64 inclusive_ns;
	__u64 exclusive_ns;
	__u32 tid;
	__u32 metric;
	__u32 depth; /* 0 for a root span */
	__u32 flags; /* KHBPF_SPAN_F_* */
	struct khbpf_span_ledger ledger;
	struct khbpf_span_hw hw[KHBPF_NR_COUNTERS];
};

/* Without counters configured a record stops before hw: less to write per span. */
#define KHBPF_SPAN_EVENT_NOHW_SIZE __builtin_offsetof(struct khbpf_span_event, hw)

/*
 * With wakers, a record whose span had blocked stretches with a waker seen
 * is followed, in the same ring buffer record, by these.
 */
struct khbpf_span_wakes {
	__u32 nr; /* entries of wake[] in use, newest first */
	__u32 pad;
	__u64 unlisted; /* the span's stretches with a waker the ring no longer held */
	struct khbpf_span_wake wake[KHBPF_WAKE_LOG];
};

/* A metric's blocked time by waker (span_wakers), summed over its calls. */
struct khbpf_span_waker_key {
	__u32 metric;
	__u32 kind; /* KHBPF_WAKER_* */
	__u32 waker_tid; /* KHBPF_WAKER_TASK; 0 otherwise */
	__u32 pad;
};

struct khbpf_span_waker_val {
	__u64 ns;
	__u64 count;
	__u32 waker_tgid;
	__u32 pad;
};

/* A span site without attach cookies: the probed file and offset in it. */
struct khbpf_site_key {
	__u64 ino; /* the file's inode number */
	__u64 offset; /* file offset of the probed instruction */
};

/*
 * What a site is without attach cookies (span_site_metric): the metric and
 * keyed argument slot of the span program there (entry, or a USDT pair's
 * end) and of the --usdt hit program, which may share the site.
 */
#define KHBPF_SITE_SPAN 0
#define KHBPF_SITE_HIT 1
#define KHBPF_SITE_NONE 0xffffffffu /* no program of that role there */
struct khbpf_site_val {
	__u32 metric[2]; /* by KHBPF_SITE_*; KHBPF_SITE_NONE: none */
	__u32 slot[2]; /* --key: the argument spec's slot, 0: none */
};

struct khbpf_span_key {
	__u32 tid;
	__u32 metric;
};

/*
 * serve (--group-by): a span metric's series per group, summed in the
 * kernel (span_series), where a call counts instead of in span_agg and
 * the ring buffer; a --usdt probe's hits are the calls of its series.
 * --max-span-series bounds them; a call of a series with no room counts in
 * its metric's spill (span_series_spill[metric]) and span_series_overflow.
 */
#define KHBPF_DEFAULT_SPAN_SERIES 4096
#define KHBPF_MAX_SPAN_SERIES (1u << 20)
struct khbpf_span_series_key {
	struct khbpf_group_key group;
	__u32 metric; /* what the call counted under: the metric, or its key's id */
	__u32 pad;
};

/*
 * serve: a call in progress, from the open-series iterator
 * (khbpf_iter_open_series): the series it will close into and when it began
 * (bpf_ktime_get_ns), for the open-spans gauges.
 */
struct khbpf_open_series {
	struct khbpf_span_series_key key;
	__u64 start_ns;
};

/* Exact per (thread, metric) totals, whatever happened to the records. */
struct khbpf_span_agg {
	__u64 calls;
	__u64 inclusive_ns;
	__u64 exclusive_ns;
	struct khbpf_span_ledger ledger; /* on_cpu_ns over the calls without a clock gap */
	__u64 clock_gap_calls; /* calls whose on-CPU time is unknown */
	__u64 hw_calls; /* calls with at least one recorded counter delta */
	__u64 hw_sum[KHBPF_NR_COUNTERS]; /* recorded deltas, per counter */
	__u64 hist[KHBPF_RQ_SLOTS]; /* inclusive duration, log2 ns (khbpf_rq_slot) */
};

#ifndef __BPF__
/* blocked.bpf.h's declared_cause() finds the span state from its clock. */
_Static_assert(__builtin_offsetof(struct khbpf_span_state, clock) == 0,
	       "khbpf_span_clock first in khbpf_span_state");
/* blocked.bpf.h bounds a metric index by masking with KHBPF_MAX_METRICS - 1. */
_Static_assert((KHBPF_MAX_METRICS & (KHBPF_MAX_METRICS - 1)) == 0,
	       "KHBPF_MAX_METRICS is a power of two");
_Static_assert(sizeof(struct khbpf_span_ledger) == 48 + sizeof(struct khbpf_blocked),
	       "khbpf_span_ledger layout");
_Static_assert(sizeof(struct khbpf_span_wake) == 24, "khbpf_span_wake layout");
_Static_assert(sizeof(struct khbpf_span_clock) == 48 + sizeof(struct khbpf_blocked) +
							  56 * KHBPF_NR_COUNTERS + 8 +
							  24 * KHBPF_WAKE_LOG,
	       "khbpf_span_clock layout");
_Static_assert(sizeof(struct khbpf_span_frame) ==
		       40 + sizeof(struct khbpf_span_ledger) + 32 * KHBPF_NR_COUNTERS,
	       "khbpf_span_frame layout");
/* The task storage element's limit on 7.x (see khbpf_span_wake), with room for its header. */
_Static_assert(sizeof(struct khbpf_span_state) <= 8192 - 64, "khbpf_span_state: too large");
_Static_assert(!(KHBPF_WAKE_LOG & (KHBPF_WAKE_LOG - 1)), "KHBPF_WAKE_LOG: a power of two");
_Static_assert(sizeof(struct khbpf_span_wakes) == 16 + 24 * KHBPF_WAKE_LOG,
	       "khbpf_span_wakes layout");
_Static_assert(sizeof(struct khbpf_span_waker_key) == 16, "khbpf_span_waker_key layout");
_Static_assert(sizeof(struct khbpf_span_waker_val) == 24, "khbpf_span_waker_val layout");
_Static_assert(sizeof(struct khbpf_span_hw) == 24, "khbpf_span_hw layout");
_Static_assert(sizeof(struct khbpf_key_conf) == 8, "khbpf_key_conf layout");
_Static_assert(sizeof(struct khbpf_arg_spec) == 16, "khbpf_arg_spec layout");
_Static_assert(sizeof(struct khbpf_key) == 8 + KHBPF_KEY_STR_MAX, "khbpf_key layout");
_Static_assert(sizeof(struct khbpf_site_key) == 16, "khbpf_site_key layout");
_Static_assert(sizeof(struct khbpf_site_val) == 16, "khbpf_site_val layout");
_Static_assert(sizeof(struct khbpf_span_series_key) == sizeof(struct khbpf_group_key) + 8,
	       "khbpf_span_series_key layout");
_Static_assert(sizeof(struct khbpf_open_series) == sizeof(struct khbpf_span_series_key) + 8,
	       "khbpf_open_series layout");
_Static_assert(sizeof(struct khbpf_span_event) ==
		       56 + sizeof(struct khbpf_span_ledger) + 24 * KHBPF_NR_COUNTERS,
	       "khbpf_span_event layout");
_Static_assert(sizeof(struct khbpf_span_agg) == 24 + sizeof(struct khbpf_span_ledger) + 16 +
							8 * KHBPF_NR_COUNTERS + 8 * KHBPF_RQ_SLOTS,
	       "khbpf_span_agg layout");
#endif

#endif /* KHBPF_SPANS_H */

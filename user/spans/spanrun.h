/* SPDX-License-Identifier: MIT */
/*
 * Spans within one session: find the sites, attach them, collect records
 * and aggregates, and turn them into the document's span parts.
 */
#ifndef KHBPF_SPANRUN_H
#define KHBPF_SPANRUN_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "document/document.h"
#include "collect/sched_collector.h"
#include "spans/spanfind.h"
#include "spans/spankeys.h"
#include "spans/spanstore.h"
#include "spans/spanwakes.h"

struct span_run {
	struct span_site *sites;
	size_t nr_sites;
	uint32_t *site_metric; /* metric index (the uprobe cookie) per site */
	char (*metrics)[SPANFIND_METRIC_MAX];
	size_t nr_metrics;
	uint64_t max_records;
	struct span_store events; /* finished spans as delivered */
	uint64_t events_over_cap; /* delivered beyond max_records: counted, not kept */
	struct span_agg_entry *aggs;
	size_t nr_aggs;
	struct usdt_hit_entry
		*hits; /* --usdt probes' hits by thread (sched_collector__usdt_hits) */
	size_t nr_hits;
	bool blocked; /* the collector timed blocked time (the ledgers' `blocked`) */
	bool wakers; /* ... and who woke the threads: records' and metrics' wakers */
	struct span_wakes wakes; /* the records' wakers, beside those that had any */
	uint64_t wakes_lost; /* records kept without their wakers: no memory */
	struct span_waker_entry *metric_wakers; /* by metric (sched_collector__span_wakers) */
	size_t nr_metric_wakers;
	struct waker_row *metric_rows;
	struct waker_row *key_rows; /* ... and the keys' (keys.wakers) */
	enum ev_gap blocked_gap; /* why not, when it did not */
	struct khbpf_span_event *open; /* still open at the end */
	size_t nr_open;
	struct khbpf_span_event *exit_open; /* open when their thread exited (delivered) */
	size_t nr_exit_open;
	size_t exit_open_cap;
	uint64_t exit_open_lost; /* ... not kept: out of memory */
	size_t nr_attached;

	/*
	 * Following the execs of a set that grows (spanexec.c): what was asked,
	 * the objects already searched, and per site, for those found later,
	 * the exec that brought it and how long after it the site was attached.
	 */
	struct sched_collector *coll;
	const struct span_request *reqs;
	size_t nr_reqs;
	struct spanfind_opts find; /* --no-annotations, --debug-dir */
	char **searched;
	size_t nr_searched;
	uint32_t *site_exec_pid; /* 0: found at the start */
	uint64_t *site_exec_delay_ns;
	uint64_t execs_late; /* execs whose binary's sites were attached after them */
	uint64_t exec_search_errors; /* execs whose executable could not be read */
	uint64_t exec_libraries_unsearched; /* execs in another mount namespace: the exe only */
	uint32_t mnt_ns; /* khbpf's own mount namespace (its nsfs inode), against execs' */

	struct span_keys keys; /* --key (spankeys.h) */
	/* --span-cause: each metric's declared cause + 1 (KHBPF_MAX_METRICS), or NULL. */
	uint8_t *metric_cause;
	bool causes_applied; /* the collector took them (it times blocked time) */
	uint64_t *cause_stretches; /* per metric: blocked stretches its declaration named */
	uint64_t *cause_prev; /* serve: the kernel's counts at the last window's end */
	/*
	 * serve: the kernel's (group, metric) series at the last window's end,
	 * sorted by key, so each window's aggregates are what was added since;
	 * by_group once they are (the document then has no per-thread or
	 * per-process split of spans: /metrics has the per-group one).
	 */
	struct span_series_entry *series_prev;
	size_t nr_series_prev;
	struct khbpf_span_agg *spill_prev; /* each metric's spill then (KHBPF_MAX_METRICS) */
	bool by_group;

	/* Document parts, valid after span_run__document. */
	uint64_t start_mono_ns; /* records' start_ns count from it */
	bool counters; /* records carry counter readings */
	enum ev_gap hw_reason; /* else their hardware is this gap */
	struct span_metric *doc_metrics; /* metrics with an attached site */
	size_t nr_doc_metrics;
	struct span_metric *doc_keys; /* their keys (--key), each metric's a run */
	size_t nr_doc_keys;
	struct log2_bucket *buckets;
	struct span_probe *probes;
	struct open_span *doc_open;
};

struct span_run_opts {
	size_t sz;
	const char *root;
	pid_t pid;
	/* run mode: the command's executable, read before it runs; NULL in attach mode. */
	const char *exe;
	/* attach a set: its processes now (pid among them); else NULL, pid alone. */
	const pid_t *pids;
	size_t nr_pids;
	const struct span_request *reqs;
	size_t nr_reqs;
	bool no_annotations;
	/* --debug-dir: where stripped objects' debug files are looked for first */
	const char *const *debug_dirs;
	size_t nr_debug_dirs;
	uint64_t max_records;
	const struct key_request *key_reqs; /* --key */
	size_t nr_key_reqs;
	uint32_t max_keys; /* keys per metric; 0 → KHBPF_DEFAULT_KEYS_PER_METRIC */
	const struct cause_request *cause_reqs; /* --span-cause */
	size_t nr_cause_reqs;
	/*
	 * serve: every process of the host. Each request names its OBJ, a
	 * path or a library name (spanobjects__host_library); the sites are
	 * in those files, attached once per file. An OBJ that cannot be
	 * resolved fails discovery, with the reason in reason.
	 */
	bool host;
	char *reason;
	size_t reason_size;
};

/* Find the sites (never fails for a bad site: the site carries its reason). */
int span_run__discover(struct span_run *r, const struct span_run_opts *opts);
/*
 * After span_run__discover (o the same), before anything is loaded: a
 * request that found no site and names what is not there (a site with
 * absent: no such function, probe or file where it looked), or a --key or
 * --span-cause naming a metric no request and no site has, is a mistake:
 * -ENOENT with one line in buf naming it and why (in run, with how a
 * program the command execs later is named: by its path). 0 otherwise; a
 * request whose sites exist but cannot be probed is no mistake.
 */
int span_run__check(const struct span_run *r, const struct span_run_opts *o, char *buf,
		    size_t size);
/* Sites that can be attached: whether the collector needs span support. */
size_t span_run__usable(const struct span_run *r);
/* What the collector attaches for site s, whose metric's index is metric. */
struct sched_span_site span_run__collector_site(const struct span_site *s, uint32_t metric);
/*
 * Whether some site is of kind, or some request may find one: a USDT pair
 * (SPAN_SITE_USDT_DONE: the collector's opts.span_close) or a counted
 * probe (SPAN_SITE_USDT_COUNT: opts.usdt_hits).
 */
bool span_run__has_kind(const struct span_run *r, const struct span_request *reqs, size_t nr_reqs,
			enum span_site_kind kind);
/* Whether metric is a counted probe (--usdt) with a site attached; *probe its PROVIDER:NAME. */
bool span_run__metric_counted(const struct span_run *r, uint32_t metric, const char **probe);
/* Attach every usable site for pid; failures become the site's reason. */
void span_run__attach(struct span_run *r, struct sched_collector *c, pid_t pid);
/*
 * BPF could not be loaded or attached after all: no site is attached, each
 * says why (and its metric is left out of the document, not reported as 0).
 */
void span_run__unattach(struct span_run *r, const char *why);
/* A metric's index, registered if new; -E2BIG beyond KHBPF_MAX_METRICS. */
int span_run__metric_index(struct span_run *r, const char *name, uint32_t *idx);
/*
 * sched_collector on_exec callback (spanexec.c): a member exec'd; the
 * sites of its executable and the libraries it needs, in objects not
 * searched before, are found and attached for every process.
 */
void span_run__on_exec(void *ctx, const struct khbpf_exec_event *e);
/* The objects searched at the start, so that an exec does not search them again. */
int span_run__searched(struct span_run *r, const char *object);
/* sched_collector on_span callback. */
void span_run__on_event(void *ctx, const struct khbpf_span_event *e,
			const struct khbpf_span_wakes *wakes);
/*
 * serve, at each window's end: the window's aggregates and hits (those of
 * --usdt probes), by metric and key, summed over the groups, from what
 * the kernel's series added since the last window. 0 or -errno.
 */
int span_run__series_window(struct span_run *r, struct sched_collector *c);
/* serve: series key was removed from the kernel's table; made again, it starts at zero. */
void span_run__series_forget(struct span_run *r, const struct khbpf_span_series_key *key);
/* At the window's end: drain, read aggregates and the spans still open. */
int span_run__finish(struct span_run *r, struct sched_collector *c);
/*
 * Build the document's span parts; start_ns of records counts from
 * start_mono_ns (CLOCK_MONOTONIC, as bpf_ktime_get_ns). With counters, each
 * span's hardware holds its readings (a field is a gap when its status is
 * not KHBPF_VCTR_OK); without, every span's hardware is the gap hw_reason.
 * The records are not copied: doc's span_at makes them from r, which must
 * outlive doc's text.
 */
/*
 * With wakers: the threads' wakers t[0..n) (sched_collector__wakers) name
 * the spans' wakers; before span_run__document.
 */
int span_run__name_wakers(struct span_run *r, const struct waker_entry *t, size_t n);
int span_run__document(struct span_run *r, uint64_t start_mono_ns, bool counters,
		       enum ev_gap hw_reason, struct evidence_doc *doc,
		       struct span_hw_aggregation *agg);
/*
 * Record i of the document's (after span_run__document: events in the
 * document's order), made from its compact form: the document's span_at.
 */
void span_run__record(const void *r, size_t i, struct span_record *out);
/* Key k (an index into keys) as the document has it. */
void span_run__doc_key(const struct span_run *r, uint32_t k, struct doc_key *out);
void span_run__free(struct span_run *r);

#endif /* KHBPF_SPANRUN_H */

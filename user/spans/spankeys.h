/* SPDX-License-Identifier: MIT */
/*
 * Keys (--key METRIC=argN:str|int): which metrics are keyed, how each of
 * their sites reads the argument, and, after the window, the keys the
 * kernel saw and what was measured per key. A part of a span run (spanrun.h).
 */
#ifndef KHBPF_SPANKEYS_H
#define KHBPF_SPANKEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/sched_collector.h"
#include "spans/spansite.h"

/* A key seen (--key), or a metric's "(other)". */
struct span_key {
	uint32_t id; /* the metric id its calls counted under in the kernel */
	uint32_t metric; /* the keyed metric's index */
	char text[KHBPF_KEY_STR_MAX +
		  24]; /* a str as read (UTF-8 repaired later), an int in decimal */
	bool is_str, truncated, other;
};

/*
 * A span run's keys: each metric's key kind (KHBPF_KEY_NONE: not keyed)
 * and argument; the argument specs of the keyed sites, by slot - 1. After
 * the window, the keys seen and what was measured per key (the run's own
 * aggregates, hits and open spans are then by their metric again, so that
 * every total is the sum over its keys; records keep their key's id).
 */
struct span_keys {
	uint8_t *kind;
	uint8_t *arg;
	uint32_t max_keys;
	struct khbpf_arg_spec *specs;
	size_t nr_slots;
	struct span_key *v; /* by id */
	size_t nr;
	struct span_agg_entry *aggs; /* key.metric: an index into v */
	size_t nr_aggs;
	struct usdt_hit_entry *hits; /* key.metric: an index into v */
	size_t nr_hits;
	struct span_waker_entry *wakers; /* key.metric: an index into v; sorted */
	size_t nr_wakers;
	uint32_t *open_key; /* per open span: its key's index + 1; 0 none */
};

/* What spankeys__unkey gives back to their metrics: the run's arrays. */
struct span_keys_run {
	struct span_agg_entry **aggs;
	size_t *nr_aggs;
	struct usdt_hit_entry **hits;
	size_t *nr_hits;
	struct span_waker_entry *wakers;
	size_t *nr_wakers;
	struct khbpf_span_event *open;
	size_t nr_open;
};

/*
 * After discovery: each requested metric keyed (metrics[i]: reqs[i]'s
 * index, KHBPF_MAX_METRICS when it has none), and each site of a keyed
 * metric given its argument spec: a site that cannot read it fails with
 * the reason. 0 or -ENOMEM.
 */
int spankeys__setup(struct span_keys *k, const struct key_request *reqs, const uint32_t *metrics,
		    size_t nr, uint32_t max_keys);
/*
 * Site s, of metric index metric: when keyed, its spec, or its failure;
 * with a collector attached (coll, else NULL), the spec is given to it.
 */
void spankeys__site(struct span_keys *k, struct span_site *s, uint32_t metric,
		    struct sched_collector *coll);
/* Before attaching: the keyed metrics and the sites' specs, to the collector. 0 or -errno. */
int spankeys__apply(const struct span_keys *k, struct sched_collector *c);
/*
 * After the window: the keys seen; the run's aggregates, hits, wakers and
 * open spans of keys given back to their metric, each key's own kept in
 * k (aggs, hits, open_key). 0 or -ENOMEM.
 */
int spankeys__unkey(struct span_keys *k, struct sched_collector *c,
		    const struct span_keys_run *run);
/*
 * The keys the kernel has made so far (and each keyed metric's "(other)"),
 * replacing those loaded before: serve names its series with them. 0 or
 * -errno.
 */
int spankeys__load(struct span_keys *k, struct sched_collector *c);
/* The key of kernel metric id, or NULL (a plain metric). */
const struct span_key *spankeys__find(const struct span_keys *k, uint32_t id);
void spankeys__free(struct span_keys *k);

#endif /* KHBPF_SPANKEYS_H */

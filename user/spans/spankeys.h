/* SPDX-License-Identifier: MIT */
/*
 * Keys (--key METRIC=argN:str|int): which metrics are keyed, how each of
 * their sites reads the argument, and, after the window, the keys the
 * kernel saw and what was measured per key. Part of a span_run (spanrun.h).
 */
#ifndef KHBPF_SPANKEYS_H
#define KHBPF_SPANKEYS_H

#include "spans/spanrun.h"

/*
 * After discovery: each requested metric keyed (registered when no site
 * has it yet), and each site of a keyed metric given its argument spec:
 * a site that cannot read it fails with the reason. 0 or -ENOMEM.
 */
int spankeys__setup(struct span_run *r, const struct key_request *reqs, size_t nr,
		    uint32_t max_keys);
/*
 * Site i (a new one: an exec's) of a keyed metric: its spec, or its
 * failure; with the collector attached (r->coll), the spec is given to it.
 */
void spankeys__site(struct span_run *r, size_t i);
/* Before attaching: the keyed metrics and the sites' specs, to the collector. 0 or -errno. */
int spankeys__apply(struct span_run *r, struct sched_collector *c);
/*
 * After the window (span_run__finish): the keys seen; aggregates, hits,
 * wakers, records and open spans of keys given back to their metric, each
 * key's own kept in key_aggs, key_hits, rec_key and open_key. 0 or -ENOMEM.
 */
int spankeys__unkey(struct span_run *r, struct sched_collector *c);
/* The key of kernel metric id, or NULL (a plain metric). */
const struct span_key *spankeys__find(const struct span_run *r, uint32_t id);
void spankeys__free(struct span_run *r);

#endif /* KHBPF_SPANKEYS_H */

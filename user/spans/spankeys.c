// SPDX-License-Identifier: MIT
/* --key: keyed metrics, their sites' argument specs, and the keys seen; see spankeys.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spans/spankeys.h"
#include "spans/usdtarg.h"

static void key_fail(struct span_site *s, const char *why)
{
	span_site__fail(s, -EINVAL, "%.100s: %.60s cannot be keyed: %.80s", s->object,
			s->symbol[0] ? s->symbol : s->metric, why);
}

void spankeys__site(struct span_run *r, size_t i)
{
	struct span_site *s = &r->sites[i];
	uint32_t m = r->site_metric[i];
	struct khbpf_arg_spec spec;
	char why[160];
	int err;

	if (!r->key_kind || s->err || m >= KHBPF_MAX_METRICS || !r->key_kind[m])
		return;
	/* A DONE site closes what its START opened, whose key it already has. */
	if (s->kind == SPAN_SITE_USDT_DONE)
		return;
	if (s->kind == SPAN_SITE_FUNCTION)
		err = usdtarg__function_arg(r->key_arg[m], &spec, why, sizeof(why));
	else
		err = usdtarg__parse(s->args, r->key_arg[m], &spec, why, sizeof(why));
	if (err) {
		key_fail(s, why);
		return;
	}
	if (r->nr_key_slots == KHBPF_MAX_SPAN_SITES) {
		snprintf(why, sizeof(why), "more than %d keyed sites", KHBPF_MAX_SPAN_SITES);
		key_fail(s, why);
		return;
	}
	r->key_specs[r->nr_key_slots++] = spec;
	s->key_slot = (uint32_t)r->nr_key_slots;
	if (r->coll && sched_collector__set_site_arg(r->coll, s->key_slot, &spec))
		key_fail(s, "the collector refused its argument spec");
}

int spankeys__setup(struct span_run *r, const struct key_request *reqs, size_t nr,
		    uint32_t max_keys)
{
	uint32_t m;
	size_t i;

	if (!nr)
		return 0;
	r->key_kind = calloc(KHBPF_MAX_METRICS, sizeof(*r->key_kind));
	r->key_arg = calloc(KHBPF_MAX_METRICS, sizeof(*r->key_arg));
	r->key_specs = calloc(KHBPF_MAX_SPAN_SITES, sizeof(*r->key_specs));
	if (!r->key_kind || !r->key_arg || !r->key_specs)
		return -ENOMEM;
	r->max_keys = max_keys ? max_keys : KHBPF_DEFAULT_KEYS_PER_METRIC;
	for (i = 0; i < nr; i++) {
		/* Registered if no site has it yet: an exec may bring one. */
		if (span_run__metric_index(r, reqs[i].metric, &m))
			continue;
		r->key_kind[m] = (uint8_t)reqs[i].kind;
		r->key_arg[m] = (uint8_t)reqs[i].arg;
	}
	for (i = 0; i < r->nr_sites; i++)
		spankeys__site(r, i);
	return 0;
}

int spankeys__apply(struct span_run *r, struct sched_collector *c)
{
	uint32_t m;
	size_t i;
	int err;

	if (!r->key_kind)
		return 0;
	for (m = 0; m < KHBPF_MAX_METRICS; m++) {
		if (!r->key_kind[m])
			continue;
		err = sched_collector__set_key(c, m, r->key_kind[m], r->max_keys);
		if (err)
			return err;
	}
	for (i = 0; i < r->nr_key_slots; i++) {
		err = sched_collector__set_site_arg(c, (uint32_t)i + 1, &r->key_specs[i]);
		if (err)
			return err;
	}
	return 0;
}

const struct span_key *spankeys__find(const struct span_run *r, uint32_t id)
{
	size_t lo = 0, hi = r->nr_keys, mid;

	if (id < KHBPF_OTHER_METRIC_BASE)
		return NULL;
	/* keys are sorted by id. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (r->keys[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->nr_keys && r->keys[lo].id == id ? &r->keys[lo] : NULL;
}

static int key_cmp(const void *a, const void *b)
{
	const struct span_key *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The keys the kernel made, and each keyed metric's "(other)". */
static int load_keys(struct span_run *r, struct sched_collector *c)
{
	struct key_entry *v = NULL;
	size_t nr = 0, i, n = 0, others = 0;
	uint32_t m;
	int err;

	err = sched_collector__keys(c, &v, &nr);
	if (err)
		return err;
	for (m = 0; m < KHBPF_MAX_METRICS; m++)
		others += r->key_kind[m] != 0;
	r->keys = calloc(nr + others + 1, sizeof(*r->keys));
	if (!r->keys) {
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < nr; i++) {
		struct span_key *k = &r->keys[n];
		const struct khbpf_key *kk = &v[i].key;

		if (kk->metric >= KHBPF_MAX_METRICS || v[i].id < KHBPF_KEY_METRIC_BASE)
			continue;
		k->id = v[i].id;
		k->metric = kk->metric;
		k->is_str = (kk->kind & 0xff) == KHBPF_KEY_STR;
		k->truncated = kk->kind & KHBPF_KEY_F_TRUNCATED;
		if (k->is_str) {
			memcpy(k->text, kk->bytes, sizeof(kk->bytes));
			k->text[sizeof(kk->bytes) - 1] = '\0';
		} else {
			int64_t val;

			memcpy(&val, kk->bytes, sizeof(val));
			snprintf(k->text, sizeof(k->text), "%" PRId64, val);
		}
		n++;
	}
	for (m = 0; m < KHBPF_MAX_METRICS; m++) {
		struct span_key *k = &r->keys[n];

		if (!r->key_kind[m])
			continue;
		k->id = KHBPF_OTHER_METRIC_BASE + m;
		k->metric = m;
		k->other = true;
		k->is_str = r->key_kind[m] == KHBPF_KEY_STR;
		snprintf(k->text, sizeof(k->text), "(other)");
		n++;
	}
	free(v);
	qsort(r->keys, n, sizeof(*r->keys), key_cmp);
	r->nr_keys = n;
	return 0;
}

static void agg_add(struct khbpf_span_agg *d, const struct khbpf_span_agg *a)
{
	size_t i;

	d->calls += a->calls;
	d->inclusive_ns += a->inclusive_ns;
	d->exclusive_ns += a->exclusive_ns;
	d->ledger.on_cpu_ns += a->ledger.on_cpu_ns;
	d->ledger.run_delay_ns += a->ledger.run_delay_ns;
	d->ledger.nvcsw += a->ledger.nvcsw;
	d->ledger.nivcsw += a->ledger.nivcsw;
	d->ledger.migrations += a->ledger.migrations;
	d->ledger.offcpu_ns += a->ledger.offcpu_ns;
	for (i = 0; i < KHBPF_BLOCK_CAUSES; i++) {
		d->ledger.blocked.ns[i] += a->ledger.blocked.ns[i];
		d->ledger.blocked.count[i] += a->ledger.blocked.count[i];
	}
	d->clock_gap_calls += a->clock_gap_calls;
	d->hw_calls += a->hw_calls;
	for (i = 0; i < KHBPF_NR_COUNTERS; i++)
		d->hw_sum[i] += a->hw_sum[i];
	for (i = 0; i < KHBPF_RQ_SLOTS; i++)
		d->hist[i] += a->hist[i];
}

static int agg_key_cmp(const void *a, const void *b)
{
	const struct khbpf_span_key *x = &((const struct span_agg_entry *)a)->key;
	const struct khbpf_span_key *y = &((const struct span_agg_entry *)b)->key;

	if (x->metric != y->metric)
		return x->metric < y->metric ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/*
 * Aggregates under a key's id: kept by key index in key_aggs, and added to
 * their thread's aggregate of the metric, which is made when the thread had
 * no call of it but keyed ones (every call of a keyed metric is keyed).
 */
static int unkey_aggs(struct span_run *r)
{
	struct span_agg_entry *plain, *keyed;
	size_t i, np = 0, nk = 0, j;

	plain = calloc(r->nr_aggs + 1, sizeof(*plain));
	keyed = calloc(r->nr_aggs + 1, sizeof(*keyed));
	if (!plain || !keyed) {
		free(plain);
		free(keyed);
		return -ENOMEM;
	}
	for (i = 0; i < r->nr_aggs; i++) {
		const struct span_key *k = spankeys__find(r, r->aggs[i].key.metric);

		if (!k) {
			plain[np++] = r->aggs[i];
			continue;
		}
		keyed[nk] = r->aggs[i];
		keyed[nk].key.metric = (uint32_t)(k - r->keys);
		nk++;
	}
	/* Then the metric's: one per (thread, metric), the keys' sums. */
	qsort(plain, np, sizeof(*plain), agg_key_cmp);
	for (i = 0; i < nk; i++) {
		struct span_agg_entry want = {
			.key = { .tid = keyed[i].key.tid,
				 .metric = r->keys[keyed[i].key.metric].metric }
		};
		struct span_agg_entry *d = bsearch(&want, plain, np, sizeof(*plain), agg_key_cmp);

		if (!d) {
			/* A new one: appended, and the array sorted again for the next search. */
			plain[np] = want;
			d = &plain[np++];
			agg_add(&d->agg, &keyed[i].agg);
			qsort(plain, np, sizeof(*plain), agg_key_cmp);
			continue;
		}
		agg_add(&d->agg, &keyed[i].agg);
	}
	for (j = 0; j < np; j++)
		r->aggs[j] = plain[j];
	r->nr_aggs = np;
	free(plain);
	r->key_aggs = keyed;
	r->nr_key_aggs = nk;
	return 0;
}

/* Hits of keyed --usdt probes: likewise. */
static int unkey_hits(struct span_run *r)
{
	struct usdt_hit_entry *plain, *keyed;
	size_t i, np = 0, nk = 0, j;

	plain = calloc(r->nr_hits + 1, sizeof(*plain));
	keyed = calloc(r->nr_hits + 1, sizeof(*keyed));
	if (!plain || !keyed) {
		free(plain);
		free(keyed);
		return -ENOMEM;
	}
	for (i = 0; i < r->nr_hits; i++) {
		const struct span_key *k = spankeys__find(r, r->hits[i].key.metric);

		if (!k) {
			plain[np++] = r->hits[i];
			continue;
		}
		keyed[nk] = r->hits[i];
		keyed[nk].key.metric = (uint32_t)(k - r->keys);
		nk++;
		for (j = 0; j < np; j++)
			if (plain[j].key.tid == r->hits[i].key.tid &&
			    plain[j].key.metric == k->metric)
				break;
		if (j == np)
			plain[np++] = (struct usdt_hit_entry){ .key = { .tid = r->hits[i].key.tid,
									.metric = k->metric } };
		plain[j].hits += r->hits[i].hits;
	}
	free(r->hits);
	r->hits = plain;
	r->nr_hits = np;
	r->key_hits = keyed;
	r->nr_key_hits = nk;
	return 0;
}

static int waker_cmp(const void *a, const void *b)
{
	const struct khbpf_span_waker_key *x = &((const struct span_waker_entry *)a)->key;
	const struct khbpf_span_waker_key *y = &((const struct span_waker_entry *)b)->key;

	if (x->metric != y->metric)
		return x->metric < y->metric ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->waker_tid < y->waker_tid ? -1 : x->waker_tid > y->waker_tid;
}

/* The metrics' wakers: a key's are its metric's (summed, in the order the document wants). */
static void unkey_wakers(struct span_run *r)
{
	size_t i, j;

	for (i = 0; i < r->nr_metric_wakers; i++) {
		const struct span_key *k = spankeys__find(r, r->metric_wakers[i].key.metric);

		if (k)
			r->metric_wakers[i].key.metric = k->metric;
	}
	qsort(r->metric_wakers, r->nr_metric_wakers, sizeof(*r->metric_wakers), waker_cmp);
	for (i = 0, j = 0; i < r->nr_metric_wakers; i++) {
		if (j && !waker_cmp(&r->metric_wakers[j - 1], &r->metric_wakers[i])) {
			r->metric_wakers[j - 1].val.ns += r->metric_wakers[i].val.ns;
			r->metric_wakers[j - 1].val.count += r->metric_wakers[i].val.count;
		} else {
			r->metric_wakers[j++] = r->metric_wakers[i];
		}
	}
	r->nr_metric_wakers = j;
}

/* Records and open spans: their metric again, their key beside them. */
static int unkey_events(struct khbpf_span_event *v, size_t n, uint32_t **keys,
			const struct span_run *r)
{
	size_t i;

	*keys = calloc(n + 1, sizeof(**keys));
	if (!*keys)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct span_key *k = spankeys__find(r, v[i].metric);

		if (!k)
			continue;
		(*keys)[i] = (uint32_t)(k - r->keys) + 1;
		v[i].metric = k->metric;
	}
	return 0;
}

int spankeys__unkey(struct span_run *r, struct sched_collector *c)
{
	int err;

	if (!r->key_kind)
		return 0;
	err = load_keys(r, c);
	err = err ?: unkey_aggs(r);
	err = err ?: unkey_hits(r);
	if (err)
		return err;
	unkey_wakers(r);
	/* Records keep their key's id (they are sorted later): span_run__record reads it. */
	return unkey_events(r->open, r->nr_open, &r->open_key, r);
}

void spankeys__free(struct span_run *r)
{
	free(r->key_kind);
	free(r->key_arg);
	free(r->key_specs);
	free(r->keys);
	free(r->key_aggs);
	free(r->key_hits);
	free(r->open_key);
}

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

void spankeys__site(struct span_keys *k, struct span_site *s, uint32_t m,
		    struct sched_collector *coll)
{
	struct khbpf_arg_spec spec;
	char why[160];
	int err;

	if (!k->kind || s->err || m >= KHBPF_MAX_METRICS || !k->kind[m])
		return;
	/* A DONE site closes what its START opened, whose key it already has. */
	if (s->kind == SPAN_SITE_USDT_DONE)
		return;
	if (s->kind == SPAN_SITE_FUNCTION)
		err = usdtarg__function_arg(k->arg[m], &spec, why, sizeof(why));
	else
		err = usdtarg__parse(s->args, k->arg[m], &spec, why, sizeof(why));
	if (err) {
		key_fail(s, why);
		return;
	}
	if (k->nr_slots == KHBPF_MAX_SPAN_SITES) {
		snprintf(why, sizeof(why), "more than %d keyed sites", KHBPF_MAX_SPAN_SITES);
		key_fail(s, why);
		return;
	}
	k->specs[k->nr_slots++] = spec;
	s->key_slot = (uint32_t)k->nr_slots;
	if (coll && sched_collector__set_site_arg(coll, s->key_slot, &spec))
		key_fail(s, "the collector refused its argument spec");
}

int spankeys__setup(struct span_keys *k, const struct key_request *reqs, const uint32_t *metrics,
		    size_t nr, uint32_t max_keys)
{
	uint32_t m;
	size_t i;

	if (!nr)
		return 0;
	k->kind = calloc(KHBPF_MAX_METRICS, sizeof(*k->kind));
	k->arg = calloc(KHBPF_MAX_METRICS, sizeof(*k->arg));
	k->specs = calloc(KHBPF_MAX_SPAN_SITES, sizeof(*k->specs));
	if (!k->kind || !k->arg || !k->specs)
		return -ENOMEM;
	k->max_keys = max_keys ? max_keys : KHBPF_DEFAULT_KEYS_PER_METRIC;
	for (i = 0; i < nr; i++) {
		m = metrics[i];
		if (m >= KHBPF_MAX_METRICS)
			continue;
		k->kind[m] = (uint8_t)reqs[i].kind;
		k->arg[m] = (uint8_t)reqs[i].arg;
	}
	return 0;
}

int spankeys__apply(const struct span_keys *k, struct sched_collector *c)
{
	uint32_t m;
	size_t i;
	int err;

	if (!k->kind)
		return 0;
	for (m = 0; m < KHBPF_MAX_METRICS; m++) {
		if (!k->kind[m])
			continue;
		err = sched_collector__set_key(c, m, k->kind[m], k->max_keys);
		if (err)
			return err;
	}
	for (i = 0; i < k->nr_slots; i++) {
		err = sched_collector__set_site_arg(c, (uint32_t)i + 1, &k->specs[i]);
		if (err)
			return err;
	}
	return 0;
}

const struct span_key *spankeys__find(const struct span_keys *k, uint32_t id)
{
	size_t lo = 0, hi = k->nr, mid;

	if (id < KHBPF_OTHER_METRIC_BASE)
		return NULL;
	/* keys are sorted by id. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (k->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < k->nr && k->v[lo].id == id ? &k->v[lo] : NULL;
}

static int key_cmp(const void *a, const void *b)
{
	const struct span_key *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The keys the kernel made, and each keyed metric's "(other)". */
static int load_keys(struct span_keys *k, struct sched_collector *c)
{
	struct key_entry *v = NULL;
	size_t nr = 0, i, n = 0, others = 0;
	uint32_t m;
	int err;

	free(k->v);
	k->v = NULL;
	k->nr = 0;
	err = sched_collector__keys(c, &v, &nr);
	if (err)
		return err;
	for (m = 0; m < KHBPF_MAX_METRICS; m++)
		others += k->kind[m] != 0;
	k->v = calloc(nr + others + 1, sizeof(*k->v));
	if (!k->v) {
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < nr; i++) {
		struct span_key *key = &k->v[n];
		const struct khbpf_key *kk = &v[i].key;

		if (kk->metric >= KHBPF_MAX_METRICS || v[i].id < KHBPF_KEY_METRIC_BASE)
			continue;
		key->id = v[i].id;
		key->metric = kk->metric;
		key->is_str = (kk->kind & 0xff) == KHBPF_KEY_STR;
		key->truncated = kk->kind & KHBPF_KEY_F_TRUNCATED;
		if (key->is_str) {
			memcpy(key->text, kk->bytes, sizeof(kk->bytes));
			key->text[sizeof(kk->bytes) - 1] = '\0';
		} else {
			int64_t val;

			memcpy(&val, kk->bytes, sizeof(val));
			snprintf(key->text, sizeof(key->text), "%" PRId64, val);
		}
		n++;
	}
	for (m = 0; m < KHBPF_MAX_METRICS; m++) {
		struct span_key *key = &k->v[n];

		if (!k->kind[m])
			continue;
		key->id = KHBPF_OTHER_METRIC_BASE + m;
		key->metric = m;
		key->other = true;
		key->is_str = k->kind[m] == KHBPF_KEY_STR;
		snprintf(key->text, sizeof(key->text), "(other)");
		n++;
	}
	free(v);
	qsort(k->v, n, sizeof(*k->v), key_cmp);
	k->nr = n;
	return 0;
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
static int unkey_aggs(struct span_keys *k, const struct span_keys_run *run)
{
	struct span_agg_entry *plain, *keyed;
	size_t i, np = 0, nk = 0, j;

	plain = calloc((*run->nr_aggs) + 1, sizeof(*plain));
	keyed = calloc((*run->nr_aggs) + 1, sizeof(*keyed));
	if (!plain || !keyed) {
		free(plain);
		free(keyed);
		return -ENOMEM;
	}
	for (i = 0; i < (*run->nr_aggs); i++) {
		const struct span_key *key = spankeys__find(k, (*run->aggs)[i].key.metric);

		if (!key) {
			plain[np++] = (*run->aggs)[i];
			continue;
		}
		keyed[nk] = (*run->aggs)[i];
		keyed[nk].key.metric = (uint32_t)(key - k->v);
		nk++;
	}
	/* Then the metric's: one per (thread, metric), the keys' sums. */
	qsort(plain, np, sizeof(*plain), agg_key_cmp);
	for (i = 0; i < nk; i++) {
		struct span_agg_entry want = {
			.key = { .tid = keyed[i].key.tid,
				 .metric = k->v[keyed[i].key.metric].metric }
		};
		struct span_agg_entry *d = bsearch(&want, plain, np, sizeof(*plain), agg_key_cmp);

		if (!d) {
			/* A new one: appended, and the array sorted again for the next search. */
			plain[np] = want;
			d = &plain[np++];
			sched_collector__span_agg_add(&d->agg, &keyed[i].agg);
			qsort(plain, np, sizeof(*plain), agg_key_cmp);
			continue;
		}
		sched_collector__span_agg_add(&d->agg, &keyed[i].agg);
	}
	for (j = 0; j < np; j++)
		(*run->aggs)[j] = plain[j];
	(*run->nr_aggs) = np;
	free(plain);
	k->aggs = keyed;
	k->nr_aggs = nk;
	return 0;
}

/* Hits of keyed --usdt probes: likewise. */
static int unkey_hits(struct span_keys *k, const struct span_keys_run *run)
{
	struct usdt_hit_entry *plain, *keyed;
	size_t i, np = 0, nk = 0, j;

	plain = calloc((*run->nr_hits) + 1, sizeof(*plain));
	keyed = calloc((*run->nr_hits) + 1, sizeof(*keyed));
	if (!plain || !keyed) {
		free(plain);
		free(keyed);
		return -ENOMEM;
	}
	for (i = 0; i < (*run->nr_hits); i++) {
		const struct span_key *key = spankeys__find(k, (*run->hits)[i].key.metric);

		if (!key) {
			plain[np++] = (*run->hits)[i];
			continue;
		}
		keyed[nk] = (*run->hits)[i];
		keyed[nk].key.metric = (uint32_t)(key - k->v);
		nk++;
		for (j = 0; j < np; j++)
			if (plain[j].key.tid == (*run->hits)[i].key.tid &&
			    plain[j].key.metric == key->metric)
				break;
		if (j == np)
			plain[np++] =
				(struct usdt_hit_entry){ .key = { .tid = (*run->hits)[i].key.tid,
								  .metric = key->metric } };
		plain[j].hits += (*run->hits)[i].hits;
	}
	free((*run->hits));
	(*run->hits) = plain;
	(*run->nr_hits) = np;
	k->hits = keyed;
	k->nr_hits = nk;
	return 0;
}

/*
 * The metrics' wakers: a key's are its metric's too (summed, in the order
 * the document wants); each key's own stay in k->wakers, by key id.
 */
static int unkey_wakers(struct span_keys *k, const struct span_keys_run *run)
{
	size_t i, j, nk = 0;

	if (!*run->nr_wakers)
		return 0;
	k->wakers = calloc(*run->nr_wakers, sizeof(*k->wakers));
	if (!k->wakers)
		return -ENOMEM;
	for (i = 0; i < (*run->nr_wakers); i++) {
		const struct span_key *key = spankeys__find(k, run->wakers[i].key.metric);

		if (!key)
			continue;
		k->wakers[nk] = run->wakers[i];
		k->wakers[nk++].key.metric = (uint32_t)(key - k->v);
		run->wakers[i].key.metric = key->metric;
	}
	k->nr_wakers = nk;
	if (nk)
		qsort(k->wakers, nk, sizeof(*k->wakers), sched_collector__span_waker_cmp);
	qsort(run->wakers, (*run->nr_wakers), sizeof(*run->wakers),
	      sched_collector__span_waker_cmp);
	for (i = 0, j = 0; i < (*run->nr_wakers); i++) {
		if (j && !sched_collector__span_waker_cmp(&run->wakers[j - 1], &run->wakers[i])) {
			run->wakers[j - 1].val.ns += run->wakers[i].val.ns;
			run->wakers[j - 1].val.count += run->wakers[i].val.count;
		} else {
			run->wakers[j++] = run->wakers[i];
		}
	}
	(*run->nr_wakers) = j;
	return 0;
}

/* Records and open spans: their metric again, their key beside them. */
static int unkey_events(struct khbpf_span_event *v, size_t n, uint32_t **keys,
			const struct span_keys *k)
{
	size_t i;

	*keys = calloc(n + 1, sizeof(**keys));
	if (!*keys)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct span_key *key = spankeys__find(k, v[i].metric);

		if (!key)
			continue;
		(*keys)[i] = (uint32_t)(key - k->v) + 1;
		v[i].metric = key->metric;
	}
	return 0;
}

int spankeys__unkey(struct span_keys *k, struct sched_collector *c, const struct span_keys_run *run)
{
	int err;

	if (!k->kind)
		return 0;
	err = load_keys(k, c);
	err = err ?: unkey_aggs(k, run);
	err = err ?: unkey_hits(k, run);
	err = err ?: unkey_wakers(k, run);
	if (err)
		return err;
	/* Records keep their key's id (they are sorted later): span_run__record reads it. */
	return unkey_events(run->open, run->nr_open, &k->open_key, k);
}

void spankeys__free(struct span_keys *k)
{
	free(k->kind);
	free(k->arg);
	free(k->specs);
	free(k->v);
	free(k->aggs);
	free(k->hits);
	free(k->wakers);
	free(k->open_key);
}

int spankeys__load(struct span_keys *k, struct sched_collector *c)
{
	return k->kind ? load_keys(k, c) : 0;
}

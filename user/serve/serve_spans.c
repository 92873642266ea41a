// SPDX-License-Identifier: MIT
/*
 * serve's span series: which of the kernel's (group, metric) series are
 * alive, aged out or evicted, what gone processes added to their comm's
 * series, and the named rows /metrics exports. See serve_spans.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/serve_spans.h"
#include "serve/serve_sweep.h"
#include "spans/spankeys.h"

struct series_track {
	struct khbpf_span_series_key key;
	struct sweep_mark mark; /* calls at the last sweep: unchanged means idle */
};

/* process mode: what gone processes' series added to (comm, metric id). */
struct retired {
	char comm[16];
	uint32_t metric;
	struct khbpf_span_agg agg;
};

struct serve_spans {
	struct serve_spans_opts o;
	struct sched_collector *coll;
	struct span_run *run;
	struct serve_groups *groups;
	uint64_t max_series;
	struct series_track *track; /* sorted by key */
	size_t nr_track;
	struct retired *retired;
	size_t nr_retired;
	uint64_t retired_dropped;
	struct retired *other; /* by metric id, beyond the bound: comm "(other)" */
	size_t nr_other;
	uint64_t aged_out, evicted;
};

static int key_cmp(const void *a, const void *b)
{
	const struct khbpf_span_series_key *x = a, *y = b;

	if (x->group.id != y->group.id)
		return x->group.id < y->group.id ? -1 : 1;
	if (x->group.start_time != y->group.start_time)
		return x->group.start_time < y->group.start_time ? -1 : 1;
	if (x->metric != y->metric)
		return x->metric < y->metric ? -1 : 1;
	return memcmp(x->group.comm, y->group.comm, sizeof(x->group.comm));
}

static int entry_cmp(const void *a, const void *b)
{
	return key_cmp(&((const struct span_series_entry *)a)->key,
		       &((const struct span_series_entry *)b)->key);
}

static struct series_track *track_find(struct serve_spans *s, const struct khbpf_span_series_key *k)
{
	return s->nr_track ? bsearch(k, s->track, s->nr_track, sizeof(*s->track), key_cmp) : NULL;
}

/* A retired (comm, metric) entry of v, made if new and the bound allows; NULL if not. */
static struct retired *retired_slot(struct retired **v, size_t *nr, const char *comm,
				    uint32_t metric, uint64_t bound)
{
	struct retired *grown;
	size_t i;

	for (i = 0; i < *nr; i++)
		if ((*v)[i].metric == metric && !strncmp((*v)[i].comm, comm, 16))
			return &(*v)[i];
	if (*nr >= bound)
		return NULL;
	grown = realloc(*v, (*nr + 1) * sizeof(**v));
	if (!grown)
		return NULL;
	*v = grown;
	memset(&grown[*nr], 0, sizeof(grown[*nr]));
	memcpy(grown[*nr].comm, comm, 16);
	grown[*nr].metric = metric;
	return &grown[(*nr)++];
}

/* A series removed from the kernel: process mode keeps its sums under its comm. */
static void retire(struct serve_spans *s, const struct span_series_entry *e)
{
	struct retired *r;

	if (s->o.group_by != KHBPF_GROUP_PROCESS)
		return;
	r = retired_slot(&s->retired, &s->nr_retired, e->key.group.comm, e->key.metric,
			 s->max_series);
	if (!r) {
		s->retired_dropped++;
		r = retired_slot(&s->other, &s->nr_other, "(other)", e->key.metric, UINT64_MAX);
	}
	if (r)
		sched_collector__span_agg_add(&r->agg, &e->agg);
}

int serve_spans__sweep(struct serve_spans *s)
{
	uint64_t now = serve_sweep__now();
	const struct sweep_mark **marks = NULL;
	struct series_track *next = NULL;
	struct span_series_entry *g = NULL;
	uint8_t *verdict = NULL;
	size_t nr = 0, i, live = 0;
	int err;

	err = sched_collector__span_series(s->coll, &g, &nr);
	if (err)
		return err;
	if (nr)
		qsort(g, nr, sizeof(*g), entry_cmp);
	next = calloc(nr ? nr : 1, sizeof(*next));
	marks = calloc(nr ? nr : 1, sizeof(*marks));
	verdict = calloc(nr ? nr : 1, sizeof(*verdict));
	if (!next || !marks || !verdict) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nr; i++) {
		const struct series_track *old = track_find(s, &g[i].key);

		next[i].key = g[i].key;
		serve_sweep__mark(&next[i].mark, old ? &old->mark : NULL, g[i].agg.calls, now);
		marks[i] = &next[i].mark;
	}
	err = serve_sweep__decide(marks, nr, now, s->o.max_age_ns, s->max_series, verdict);
	for (i = 0; !err && i < nr; i++) {
		if (verdict[i] != SWEEP_KEEP &&
		    !sched_collector__delete_span_series(s->coll, &g[i].key)) {
			span_run__series_forget(s->run, &g[i].key);
			if (verdict[i] == SWEEP_AGED)
				s->aged_out++;
			else
				s->evicted++;
			retire(s, &g[i]);
			continue;
		}
		next[live++] = next[i];
	}
	if (err)
		goto out;
	free(s->track);
	s->track = next;
	s->nr_track = live;
	next = NULL;
out:
	free(next);
	free(marks);
	free(verdict);
	free(g);
	return err;
}

/* A new row for metric id (named from the run's metrics and keys). */
static struct span_row *row_for(struct serve_spans *s, struct span_row **rows, size_t *nr,
				const char *cgroup, const char *comm, uint32_t id)
{
	const struct span_key *k = spankeys__find(&s->run->keys, id);
	uint32_t metric = k ? k->metric : id;
	const char *probe;
	struct span_row *r, *grown;

	if (!(*nr & (*nr - 1))) {
		grown = realloc(*rows, (*nr ? *nr * 2 : 1) * sizeof(**rows));
		if (!grown)
			return NULL;
		*rows = grown;
	}
	r = &(*rows)[(*nr)++];
	memset(r, 0, sizeof(*r));
	snprintf(r->cgroup, sizeof(r->cgroup), "%s", cgroup);
	snprintf(r->comm, sizeof(r->comm), "%s", comm);
	/* Every id the kernel counts under is of a metric the run registered. */
	if (metric < s->run->nr_metrics)
		snprintf(r->metric, sizeof(r->metric), "%s", s->run->metrics[metric]);
	else
		snprintf(r->metric, sizeof(r->metric), "(metric %u)", metric);
	if (k)
		snprintf(r->key, sizeof(r->key), "%s", k->text);
	else if (id >= KHBPF_OTHER_METRIC_BASE)
		snprintf(r->key, sizeof(r->key), "(other)");
	r->counted = span_run__metric_counted(s->run, metric, &probe);
	if (r->counted)
		snprintf(r->probe, sizeof(r->probe), "%s", probe);
	return r;
}

static int row_cmp(const void *a, const void *b)
{
	const struct span_row *x = a, *y = b;
	int c = strcmp(x->metric, y->metric);

	c = c ?: strcmp(x->cgroup, y->cgroup);
	c = c ?: strcmp(x->comm, y->comm);
	return c ?: strcmp(x->key, y->key);
}

size_t span_rows__merge(struct span_row *rows, size_t nr)
{
	size_t i, n = 0;

	if (!nr)
		return 0;
	qsort(rows, nr, sizeof(*rows), row_cmp);
	for (i = 1; i < nr; i++) {
		if (!row_cmp(&rows[n], &rows[i])) {
			sched_collector__span_agg_add(&rows[n].agg, &rows[i].agg);
			rows[n].open += rows[i].open;
			if (rows[i].oldest_ns > rows[n].oldest_ns)
				rows[n].oldest_ns = rows[i].oldest_ns;
		} else {
			rows[++n] = rows[i];
		}
	}
	return n + 1;
}

/* A new row for a kernel series: its group's labels, its metric's. */
static struct span_row *series_row(struct serve_spans *s, struct span_row **rows, size_t *nr,
				   const struct khbpf_span_series_key *key)
{
	char buf[64], comm[17];

	if (s->o.group_by == KHBPF_GROUP_CGROUP)
		return row_for(
			s, rows, nr,
			serve_groups__cgroup_label(s->groups, key->group.id, buf, sizeof(buf)), "",
			key->metric);
	snprintf(comm, sizeof(comm), "%.16s", key->group.comm);
	return row_for(s, rows, nr, "", comm, key->metric);
}

int serve_spans__open(struct serve_spans *s, uint64_t now_ns, struct span_row **out, size_t *nr_out)
{
	struct khbpf_open_series *o = NULL;
	struct span_row *rows = NULL, *r;
	size_t nr = 0, n = 0, i;
	int err;

	err = spankeys__load(&s->run->keys, s->coll);
	err = err ?: sched_collector__open_series(s->coll, &o, &nr);
	if (err)
		return err;
	if (!now_ns)
		now_ns = serve_sweep__now(); /* after the walk: no call in it began later */
	for (i = 0; i < nr && !err; i++) {
		r = series_row(s, &rows, &n, &o[i].key);
		if (!r) {
			err = -ENOMEM;
			break;
		}
		r->open = 1;
		/* Begun after the sample's clock was read: age 0. */
		r->oldest_ns = now_ns > o[i].start_ns ? now_ns - o[i].start_ns : 0;
	}
	free(o);
	if (err) {
		free(rows);
		return err;
	}
	*out = rows;
	*nr_out = span_rows__merge(rows, n);
	return 0;
}

int serve_spans__rows(struct serve_spans *s, struct span_row **out, size_t *nr_out)
{
	struct span_series_entry *g = NULL;
	struct span_row *rows = NULL, *r;
	size_t nr = 0, n = 0, i;
	struct khbpf_span_agg spill;
	char comm[17];
	uint32_t m;
	int err;

	err = spankeys__load(&s->run->keys, s->coll);
	err = err ?: sched_collector__span_series(s->coll, &g, &nr);
	if (err)
		return err;
	for (i = 0; i < nr && !err; i++) {
		r = series_row(s, &rows, &n, &g[i].key);
		if (!r)
			err = -ENOMEM;
		else
			sched_collector__span_agg_add(&r->agg, &g[i].agg);
	}
	for (i = 0; i < s->nr_retired + s->nr_other && !err; i++) {
		const struct retired *t =
			i < s->nr_retired ? &s->retired[i] : &s->other[i - s->nr_retired];

		snprintf(comm, sizeof(comm), "%.16s", t->comm);
		r = row_for(s, &rows, &n, "", comm, t->metric);
		if (!r)
			err = -ENOMEM;
		else
			sched_collector__span_agg_add(&r->agg, &t->agg);
	}
	/* Calls of series the kernel had no room for, per metric. */
	for (m = 0; m < s->run->nr_metrics && !err; m++) {
		if (sched_collector__span_series_spill(s->coll, m, &spill) || !spill.calls)
			continue;
		r = s->o.group_by == KHBPF_GROUP_CGROUP ?
			    row_for(s, &rows, &n, "(overflow)", "", m) :
			    row_for(s, &rows, &n, "", "(overflow)", m);
		if (!r)
			err = -ENOMEM;
		else
			sched_collector__span_agg_add(&r->agg, &spill);
	}
	free(g);
	if (err) {
		free(rows);
		return err;
	}
	*out = rows;
	*nr_out = span_rows__merge(rows, n);
	return 0;
}

int serve_spans__new(struct serve_spans **out, struct sched_collector *coll, struct span_run *run,
		     struct serve_groups *groups, const struct serve_spans_opts *opts)
{
	struct serve_spans *s;

	*out = NULL;
	if (!coll || !run || !groups || !opts || opts->sz < sizeof(*opts))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *opts;
	s->coll = coll;
	s->run = run;
	s->groups = groups;
	s->max_series = s->o.max_series ?: KHBPF_DEFAULT_SPAN_SERIES;
	*out = s;
	return 0;
}

void serve_spans__stats(const struct serve_spans *s, struct serve_spans_stats *out)
{
	out->nr_series = s->nr_track;
	out->max_series = s->max_series;
	out->aged_out = s->aged_out;
	out->evicted = s->evicted;
	out->retired_dropped = s->retired_dropped;
}

void serve_spans__free(struct serve_spans *s)
{
	if (!s)
		return;
	free(s->track);
	free(s->retired);
	free(s->other);
	free(s);
}

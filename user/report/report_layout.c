// SPDX-License-Identifier: MIT
/*
 * A loaded document put in order for the renderers: every span on a listed
 * thread (threads seen only in spans are added), spans sorted by thread and
 * start with their nesting depth, open spans drawn to the window's end, and
 * a color per metric.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_loader.h"

struct tid_index {
	uint64_t tid;
	size_t idx;
};

static int tid_cmp(const void *a, const void *b)
{
	const struct tid_index *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int span_cmp(const void *a, const void *b)
{
	const struct report_span *x = a, *y = b;
	uint64_t xe = x->start_ns + x->inclusive_ns, ye = y->start_ns + y->inclusive_ns;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	/* The enclosing span first: it ends later. */
	if (xe != ye)
		return xe > ye ? -1 : 1;
	return x->span_id < y->span_id ? -1 : x->span_id > y->span_id;
}

/* The same order; marks alike in all three are alike in all, so their order does not matter. */
static int mark_cmp(const void *a, const void *b)
{
	const struct span_mark *x = a, *y = b;
	uint64_t xe = x->start + x->inclusive_ns, ye = y->start + y->inclusive_ns;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return xe > ye ? -1 : xe < ye;
}

void loader__thread_index_free(struct thread_index *ti)
{
	free(ti->byid);
	*ti = (struct thread_index){ 0 };
}

int loader__thread_of(struct report_doc *d, struct thread_index *ti, uint64_t tid, size_t *idx)
{
	struct tid_index key = { .tid = tid }, *hit;
	struct report_thread *t;
	size_t i, k;

	/* The listed threads are all loaded before the first span. */
	if (!ti->built) {
		ti->built = true;
		ti->nr = d->nr_threads;
		if (ti->nr) {
			ti->byid = calloc(ti->nr, sizeof(*ti->byid));
			if (!ti->byid)
				return -ENOMEM;
			for (i = 0; i < ti->nr; i++)
				ti->byid[i] = (struct tid_index){ d->threads[i].tid, i };
			qsort(ti->byid, ti->nr, sizeof(*ti->byid), tid_cmp);
		}
	}
	hit = ti->nr ? bsearch(&key, ti->byid, ti->nr, sizeof(*ti->byid), tid_cmp) : NULL;
	if (hit) {
		*idx = hit->idx;
		return 0;
	}
	for (k = ti->nr; k < d->nr_threads; k++)
		if (d->threads[k].tid == tid)
			break;
	if (k == d->nr_threads) {
		t = realloc(d->threads, (d->nr_threads + 1) * sizeof(*t));
		if (!t)
			return -ENOMEM;
		d->threads = t;
		memset(&t[k], 0, sizeof(*t));
		t[k].tid = tid;
		t[k].comm = "";
		d->nr_threads++;
	}
	*idx = k;
	return 0;
}

/* Give every span a thread, adding a lane for each thread the list lacks. */
static int assign_threads(struct report_doc *d)
{
	struct thread_index ti = { 0 };
	size_t i;
	int err = 0;

	for (i = 0; i < d->nr_spans && !err; i++)
		err = loader__thread_of(d, &ti, d->spans[i].thread_id, &d->spans[i].thread);
	loader__thread_index_free(&ti);
	return err;
}

/* The ends of the spans enclosing the one at hand, on one thread. */
struct nest {
	uint64_t *ends;
	size_t top, cap;
};

/*
 * The next span of a thread, in start order: its depth, or -1 when it
 * crosses a span it does not nest in (records are exact; only a damaged
 * document has such). -ENOMEM as -2.
 */
static long nest__push(struct nest *n, uint64_t start, uint64_t end)
{
	while (n->top && n->ends[n->top - 1] <= start)
		n->top--;
	if (n->top && end > n->ends[n->top - 1])
		return -1;
	if (n->top == n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 16;
		uint64_t *e = realloc(n->ends, cap * sizeof(*e));

		if (!e)
			return -2;
		n->ends = e;
		n->cap = cap;
	}
	n->ends[n->top++] = end;
	return (long)n->top - 1;
}

/* The timeline's end: the window, or the last end of a closed span if later. */
static uint64_t closed_end(uint64_t end, uint64_t start, uint64_t inclusive_ns)
{
	uint64_t e = report__sat_add(start, inclusive_ns);

	return e > end ? e : end;
}

static uint64_t open_inclusive(const struct report_doc *d, uint64_t start)
{
	return d->end_ns > start ? d->end_ns - start : 0;
}

static int layout(struct report_doc *d)
{
	struct nest n = { 0 };
	size_t i;
	long depth;

	d->end_ns = d->wall_ns;
	for (i = 0; i < d->nr_spans; i++)
		if (!d->spans[i].open)
			d->end_ns = closed_end(d->end_ns, d->spans[i].start_ns,
					       d->spans[i].inclusive_ns);
	for (i = 0; i < d->nr_spans; i++)
		if (d->spans[i].open)
			d->spans[i].inclusive_ns = open_inclusive(d, d->spans[i].start_ns);
	if (assign_threads(d))
		return -ENOMEM;
	if (!d->nr_spans)
		return 0;
	qsort(d->spans, d->nr_spans, sizeof(*d->spans), span_cmp);
	for (i = 0; i < d->nr_spans; i++) {
		struct report_span *s = &d->spans[i];
		struct report_thread *t = &d->threads[s->thread];

		if (!i || s->thread != d->spans[i - 1].thread) {
			n.top = 0;
			t->first_span = i;
		}
		t->nr_spans++;
		depth = nest__push(&n, s->start_ns, report__sat_add(s->start_ns, s->inclusive_ns));
		if (depth == -2) {
			free(n.ends);
			return -ENOMEM;
		}
		if (depth < 0) {
			s->overlaps = true;
			d->nr_overlapping++;
			continue;
		}
		s->depth = (unsigned int)depth;
		if (n.top > t->depth)
			t->depth = (unsigned int)n.top;
	}
	free(n.ends);
	return 0;
}

static int metric_id_cmp(const void *a, const void *b)
{
	const struct report_metric *x = *(const struct report_metric *const *)a;
	const struct report_metric *y = *(const struct report_metric *const *)b;

	return strcmp(x->id, y->id);
}

/* Colors by rank of the metric id: the same metric, the same color, in every report. */
static int color_metrics(struct report_doc *d)
{
	struct report_metric **v;
	size_t i;

	if (!d->nr_metrics)
		return 0;
	v = calloc(d->nr_metrics, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < d->nr_metrics; i++)
		v[i] = &d->metrics[i];
	qsort(v, d->nr_metrics, sizeof(*v), metric_id_cmp);
	for (i = 0; i < d->nr_metrics; i++)
		v[i]->color = i;
	free(v);
	return 0;
}

void loader__count_span(struct report_metric *m, bool open, uint64_t inclusive_ns,
			uint64_t exclusive_ns)
{
	/* Metrics only seen in records: their calls are the records'. */
	if (m->has_totals)
		return;
	if (open) {
		m->unfinished++;
		return;
	}
	m->calls++;
	m->inclusive_ns = report__sat_add(m->inclusive_ns, inclusive_ns);
	m->exclusive_ns = report__sat_add(m->exclusive_ns, exclusive_ns);
}

int report_doc__layout(struct report_doc *d)
{
	int err = layout(d);
	size_t i;

	if (err)
		return err;
	for (i = 0; i < d->nr_spans; i++)
		loader__count_span(&d->metrics[d->spans[i].metric], d->spans[i].open,
				   d->spans[i].inclusive_ns, d->spans[i].exclusive_ns);
	return color_metrics(d);
}

int loader__layout_marks(struct report_doc *d, struct span_mark *m, size_t nr)
{
	struct nest n = { 0 };
	size_t i;
	long depth;

	d->end_ns = d->wall_ns;
	for (i = 0; i < nr; i++)
		if (!m[i].open)
			d->end_ns = closed_end(d->end_ns, m[i].start, m[i].inclusive_ns);
	for (i = 0; i < nr; i++)
		if (m[i].open)
			m[i].inclusive_ns = open_inclusive(d, m[i].start);
	if (nr)
		qsort(m, nr, sizeof(*m), mark_cmp);
	for (i = 0; i < nr; i++) {
		struct report_thread *t = &d->threads[m[i].thread];

		if (!i || m[i].thread != m[i - 1].thread)
			n.top = 0;
		t->nr_spans++;
		depth = nest__push(&n, m[i].start, report__sat_add(m[i].start, m[i].inclusive_ns));
		if (depth == -2) {
			free(n.ends);
			return -ENOMEM;
		}
		if (depth < 0)
			d->nr_overlapping++;
		else if (n.top > t->depth)
			t->depth = (unsigned int)n.top;
	}
	free(n.ends);
	return color_metrics(d);
}

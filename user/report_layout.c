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

#include "report.h"

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

/* Give every span a thread, adding a lane for each thread the list lacks. */
static int assign_threads(struct report_doc *d)
{
	struct tid_index *byid = NULL, key, *hit;
	size_t i, k, nr_listed = d->nr_threads;

	if (nr_listed) {
		byid = calloc(nr_listed, sizeof(*byid));
		if (!byid)
			return -ENOMEM;
		for (i = 0; i < nr_listed; i++)
			byid[i] = (struct tid_index){ d->threads[i].tid, i };
		qsort(byid, nr_listed, sizeof(*byid), tid_cmp);
	}
	for (i = 0; i < d->nr_spans; i++) {
		struct report_span *s = &d->spans[i];
		struct report_thread *t;

		key.tid = s->thread_id;
		hit = nr_listed ? bsearch(&key, byid, nr_listed, sizeof(*byid), tid_cmp) : NULL;
		if (hit) {
			s->thread = hit->idx;
			continue;
		}
		for (k = nr_listed; k < d->nr_threads; k++)
			if (d->threads[k].tid == s->thread_id)
				break;
		if (k == d->nr_threads) {
			t = realloc(d->threads, (d->nr_threads + 1) * sizeof(*t));
			if (!t) {
				free(byid);
				return -ENOMEM;
			}
			d->threads = t;
			memset(&t[k], 0, sizeof(*t));
			t[k].tid = s->thread_id;
			t[k].comm = "";
			d->nr_threads++;
		}
		s->thread = k;
	}
	free(byid);
	return 0;
}

static int layout(struct report_doc *d)
{
	uint64_t *stack = NULL;
	size_t i, top = 0;

	d->end_ns = d->wall_ns;
	for (i = 0; i < d->nr_spans; i++)
		if (!d->spans[i].open)
			d->end_ns = d->end_ns > report__sat_add(d->spans[i].start_ns,
								d->spans[i].inclusive_ns) ?
					    d->end_ns :
					    report__sat_add(d->spans[i].start_ns,
							    d->spans[i].inclusive_ns);
	for (i = 0; i < d->nr_spans; i++)
		if (d->spans[i].open)
			d->spans[i].inclusive_ns = d->end_ns > d->spans[i].start_ns ?
							   d->end_ns - d->spans[i].start_ns :
							   0;
	if (assign_threads(d))
		return -ENOMEM;
	if (!d->nr_spans)
		return 0;
	qsort(d->spans, d->nr_spans, sizeof(*d->spans), span_cmp);
	stack = calloc(d->nr_spans, sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	for (i = 0; i < d->nr_spans; i++) {
		struct report_span *s = &d->spans[i];
		struct report_thread *t = &d->threads[s->thread];
		uint64_t end = report__sat_add(s->start_ns, s->inclusive_ns);

		if (!i || s->thread != d->spans[i - 1].thread) {
			top = 0;
			t->first_span = i;
		}
		t->nr_spans++;
		while (top && stack[top - 1] <= s->start_ns)
			top--;
		if (top && end > stack[top - 1]) {
			/* Records are exact; only a damaged document gets here. */
			s->overlaps = true;
			d->nr_overlapping++;
			continue;
		}
		s->depth = (unsigned int)top;
		stack[top++] = end;
		if (top > t->depth)
			t->depth = (unsigned int)top;
	}
	free(stack);
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
	/* Metrics only seen in records: their calls are the records'. */
	for (i = 0; i < d->nr_spans; i++) {
		struct report_span *s = &d->spans[i];
		struct report_metric *m = &d->metrics[s->metric];

		if (m->has_totals)
			continue;
		if (s->open) {
			m->unfinished++;
			continue;
		}
		m->calls++;
		m->inclusive_ns = report__sat_add(m->inclusive_ns, s->inclusive_ns);
		m->exclusive_ns = report__sat_add(m->exclusive_ns, s->exclusive_ns);
	}
	return 0;
}

int report_doc__layout(struct report_doc *d)
{
	int err = layout(d);

	return err ? err : color_metrics(d);
}

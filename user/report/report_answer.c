// SPDX-License-Identifier: MIT
/*
 * What the first screen of the terminal report and of the HTML page
 * answers, ranked the same for both: the busiest processes and threads,
 * the slowest metrics or keys, a keyed metric's keys by time with its
 * (other) in its place, and where a metric's time went in one phrase.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

static uint64_t on_cpu_of(struct sev_u64 v)
{
	return v.ev.recorded ? v.ev.value : 0;
}

/* Busiest first; a gap after every figure; then by id. */
static int by_cpu(struct sev_u64 x, struct sev_u64 y, uint64_t ix, uint64_t iy)
{
	if (x.ev.recorded != y.ev.recorded)
		return x.ev.recorded ? -1 : 1;
	if (on_cpu_of(x) != on_cpu_of(y))
		return on_cpu_of(x) > on_cpu_of(y) ? -1 : 1;
	return ix < iy ? -1 : ix > iy;
}

static int process_cmp(const void *a, const void *b, void *ctx)
{
	const struct report_process *p = ctx, *x = &p[*(const size_t *)a],
				    *y = &p[*(const size_t *)b];

	return by_cpu(x->on_cpu_ns, y->on_cpu_ns, x->pid, y->pid);
}

static int thread_cmp(const void *a, const void *b, void *ctx)
{
	const struct report_thread *t = ctx, *x = &t[*(const size_t *)a],
				   *y = &t[*(const size_t *)b];

	return by_cpu(x->on_cpu_ns, y->on_cpu_ns, x->tid, y->tid);
}

static size_t *order(size_t n, int (*cmp)(const void *, const void *, void *), void *ctx)
{
	size_t *o = calloc(n ? n : 1, sizeof(*o)), i;

	if (!o)
		return NULL;
	for (i = 0; i < n; i++)
		o[i] = i;
	qsort_r(o, n, sizeof(*o), cmp, ctx);
	return o;
}

size_t *report__processes_by_cpu(const struct report_doc *d)
{
	return order(d->nr_processes, process_cmp, d->processes);
}

size_t *report__threads_by_cpu(const struct report_doc *d)
{
	return order(d->nr_listed, thread_cmp, d->threads);
}

/* Most inclusive time first, then by id: the (other) key among the rest. */
static int slower(const struct report_metric *x, const struct report_metric *y)
{
	if (x->inclusive_ns != y->inclusive_ns)
		return x->inclusive_ns > y->inclusive_ns ? -1 : 1;
	return strcmp(x->id ? x->id : "", y->id ? y->id : "");
}

static int key_cmp(const void *a, const void *b)
{
	return slower(*(const struct report_metric *const *)a,
		      *(const struct report_metric *const *)b);
}

const struct report_metric **report__keys_by_inclusive(const struct report_metric *m)
{
	const struct report_metric **v = calloc(m->nr_keys ? m->nr_keys : 1, sizeof(*v));
	size_t i;

	if (!v)
		return NULL;
	for (i = 0; i < m->nr_keys; i++)
		v[i] = &m->keys[i];
	qsort(v, m->nr_keys, sizeof(*v), key_cmp);
	return v;
}

const struct report_metric *report__other_key(const struct report_metric *m)
{
	size_t i;

	for (i = 0; i < m->nr_keys; i++)
		if (m->keys[i].other && (m->keys[i].calls || m->keys[i].unfinished))
			return &m->keys[i];
	return NULL;
}

size_t report__slowest(const struct report_doc *d, struct report_slow *out, size_t max)
{
	size_t n = 0, i, j, k;

	for (i = 0; i < d->nr_metrics; i++) {
		const struct report_metric *m = &d->metrics[i];
		/* A keyed metric by its keys: each is the answer to "which calls". */
		size_t nk = m->nr_keys ? m->nr_keys : 1;

		for (k = 0; k < nk; k++) {
			const struct report_metric *c = m->nr_keys ? &m->keys[k] : m;

			if (!c->calls)
				continue;
			for (j = n; j > 0 && slower(c, out[j - 1].key ? out[j - 1].key :
									out[j - 1].metric) < 0;
			     j--)
				;
			if (j >= max)
				continue;
			memmove(&out[j + 1], &out[j],
				(n < max ? n - j : max - 1 - j) * sizeof(*out));
			out[j].metric = m;
			out[j].key = m->nr_keys ? c : NULL;
			n += n < max;
		}
	}
	return n;
}

void report__where_phrase(const struct report_metric *m, char *buf, size_t len)
{
	const struct report_blocked *b = &m->blocked;
	char on[24], rq[24], bl[24], causes[256];
	int64_t u = b->unattributed_ns;
	size_t at = 0;

	buf[0] = '\0';
	if (!m->has_ledger || !m->calls)
		return;
	report__fmt_ns(rq, sizeof(rq), m->run_delay_ns);
	if (!m->on_cpu_ns.recorded) {
		report__put(buf, len, &at, "on-CPU %s, %s runqueue",
			    ev_gap__name(m->on_cpu_ns.reason), rq);
	} else {
		report__fmt_ns(on, sizeof(on), m->on_cpu_ns.value);
		report__put(buf, len, &at, "%s on-CPU", on);
		if (m->on_cpu_partial)
			report__put(buf, len, &at, " over %" PRIu64 " of %" PRIu64 " calls",
				    m->on_cpu_covered, m->on_cpu_calls);
		report__put(buf, len, &at, " + %s runqueue", rq);
	}
	if (!b->present || !b->recorded || !m->on_cpu_ns.recorded || m->on_cpu_partial) {
		report__put(buf, len, &at, "; blocked time %s",
			    !b->present ? "not in the document" :
			    b->recorded ? "unavailable with on-CPU" :
			    b->reason == EV_GAP_COLLECTOR_DISABLED ?
					  "not timed (--blocked times it)" :
					  ev_gap__name(b->reason));
		return;
	}
	report__fmt_ns(bl, sizeof(bl), report__blocked_total(b));
	report__put(buf, len, &at, " + %s blocked", bl);
	report__causes_phrase(b, causes, sizeof(causes));
	if (causes[0])
		report__put(buf, len, &at, " (%s)", causes);
	if (u) {
		report__fmt_ns(bl, sizeof(bl), (uint64_t)(u < 0 ? -u : u));
		report__put(buf, len, &at, " %c %s unattributed", u < 0 ? '-' : '+', bl);
	}
}

void report__top_waker(const struct report_blocked *b, char *buf, size_t len)
{
	const struct waker_row *w = b->nr_wakers ? &b->wakers[0] : NULL;
	char ns[24];

	buf[0] = '\0';
	if (!b->present || !b->recorded || !w)
		return;
	report__fmt_ns(ns, sizeof(ns), w->ns);
	if (w->kind == WAKER_THREAD)
		snprintf(buf, len, "%s (%" PRIu32 ") %s x%" PRIu64, w->comm, w->tid, ns, w->count);
	else
		snprintf(buf, len, "%s %s x%" PRIu64,
			 w->kind == WAKER_TIMER ? "a timer" : "an interrupt", ns, w->count);
}

void report__share(char *buf, size_t len, uint64_t part, uint64_t whole)
{
	uint64_t pm = whole ? (uint64_t)((unsigned __int128)part * 1000 / whole) : 0;

	if (!whole)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "%%", pm / 10, pm % 10);
}

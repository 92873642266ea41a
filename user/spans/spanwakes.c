// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "spans/spanwakes.h"
#include "collect/wakers.h"

static bool same_waker(const struct span_waker_kept *a, const struct khbpf_span_wake *b)
{
	return a->kind == KHBPF_WAKE_KIND(b->waker) && a->tid == KHBPF_WAKE_TID(b->waker);
}

static int kept_by_ns(const void *a, const void *b)
{
	const struct span_waker_kept *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int span_wakes__add(struct span_wakes *w, uint64_t span_id, const struct khbpf_span_wakes *k)
{
	struct span_waker_kept m[KHBPF_WAKE_LOG];
	struct span_wakes_kept *out;
	size_t n = 0, i, j;

	if (w->nr == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 256;
		struct span_wakes_kept *grown = realloc(w->recs, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		w->recs = grown;
		w->cap = cap;
	}
	/* Merged by waker; newest first, so a waker's first entry has its latest wakeup. */
	for (i = 0; i < k->nr && i < KHBPF_WAKE_LOG; i++) {
		const struct khbpf_span_wake *e = &k->wake[i];

		for (j = 0; j < n && !same_waker(&m[j], e); j++)
			;
		if (j == n) {
			m[n++] = (struct span_waker_kept){ .kind = KHBPF_WAKE_KIND(e->waker),
							   .tid = KHBPF_WAKE_TID(e->waker),
							   .pid = e->tgid,
							   .last_wake_ns = e->wake_ns };
		}
		m[j].ns += e->ns;
		m[j].count++;
	}
	qsort(m, n, sizeof(m[0]), kept_by_ns);
	out = &w->recs[w->nr++];
	memset(out, 0, sizeof(*out));
	out->span_id = span_id;
	out->nr = n < SPAN_RECORD_WAKERS ? (uint32_t)n : SPAN_RECORD_WAKERS;
	memcpy(out->w, m, out->nr * sizeof(m[0]));
	for (i = out->nr; i < n; i++) {
		out->other_ns += m[i].ns;
		out->other_count += m[i].count;
	}
	return 0;
}

static int kept_by_id(const void *a, const void *b)
{
	uint64_t x = ((const struct span_wakes_kept *)a)->span_id;
	uint64_t y = ((const struct span_wakes_kept *)b)->span_id;

	return x < y ? -1 : x > y;
}

static int name_by_tid(const void *a, const void *b)
{
	uint32_t x = ((const struct waker_name *)a)->tid, y = ((const struct waker_name *)b)->tid;

	return x < y ? -1 : x > y;
}

int span_wakes__seal(struct span_wakes *w, const struct waker_entry *t, size_t n)
{
	size_t i, out = 0;

	if (w->nr)
		qsort(w->recs, w->nr, sizeof(*w->recs), kept_by_id);
	free(w->names);
	w->names = calloc(n ? n : 1, sizeof(*w->names));
	w->nr_names = 0;
	if (!w->names)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct waker_row r;

		if (t[i].key.kind != KHBPF_WAKER_TASK)
			continue;
		wakers__row(&t[i], &r);
		w->names[out].tid = r.tid;
		w->names[out].pid = r.pid;
		memcpy(w->names[out].comm, r.comm, sizeof(r.comm));
		out++;
	}
	if (out)
		qsort(w->names, out, sizeof(*w->names), name_by_tid);
	w->nr_names = out;
	return 0;
}

const struct span_wakes_kept *span_wakes__find(const struct span_wakes *w, uint64_t span_id)
{
	struct span_wakes_kept key = { .span_id = span_id };

	if (!w->nr)
		return NULL;
	return bsearch(&key, w->recs, w->nr, sizeof(*w->recs), kept_by_id);
}

/* row for a waker; false for a thread with no name (not among the threads' wakers). */
static bool name_row(const struct span_wakes *w, uint32_t kind, uint32_t tid, uint32_t pid,
		     struct waker_row *row)
{
	struct waker_name key = { .tid = tid }, *n;

	memset(row, 0, sizeof(*row));
	row->kind = kind;
	if (kind != WAKER_THREAD)
		return true;
	n = w->nr_names ? bsearch(&key, w->names, w->nr_names, sizeof(key), name_by_tid) : NULL;
	if (!n)
		return false;
	row->tid = tid;
	row->pid = pid ?: n->pid;
	memcpy(row->comm, n->comm, sizeof(row->comm));
	return true;
}

void span_wakes__evidence(const struct span_wakes *w, const struct span_wakes_kept *k,
			  uint64_t start_mono_ns, struct waker_row *rows,
			  struct blocked_evidence *b)
{
	uint64_t total = blocked_evidence__total(b), listed = 0;
	size_t i;

	b->has_wakers = true;
	b->wakers = rows;
	b->nr_wakers = 0;
	b->other_wakers_ns = k ? k->other_ns : 0;
	b->other_wakers_count = k ? k->other_count : 0;
	for (i = 0; k && i < k->nr; i++) {
		const struct span_waker_kept *e = &k->w[i];
		struct waker_row *r = &rows[b->nr_wakers];

		if (!name_row(w, e->kind, e->tid, e->pid, r)) {
			b->other_wakers_ns += e->ns;
			b->other_wakers_count += e->count;
			continue;
		}
		r->ns = e->ns;
		r->count = e->count;
		r->has_last_wakeup = true;
		r->last_wakeup_ns =
			e->last_wake_ns > start_mono_ns ? e->last_wake_ns - start_mono_ns : 0;
		listed += e->ns;
		b->nr_wakers++;
	}
	listed += b->other_wakers_ns;
	b->without_waker_ns = total > listed ? total - listed : 0;
}

void span_wakes__metric(const struct span_wakes *w, const struct span_waker_entry *e, size_t n,
			struct waker_row *rows, struct blocked_evidence *b)
{
	uint64_t unnamed_ns = 0, unnamed_count = 0;
	size_t i, named = 0;

	for (i = 0; i < n; i++) {
		struct waker_row *r = &rows[named];

		if (!name_row(w, e[i].key.kind, e[i].key.waker_tid, e[i].val.waker_tgid, r)) {
			unnamed_ns += e[i].val.ns;
			unnamed_count += e[i].val.count;
			continue;
		}
		r->ns = e[i].val.ns;
		r->count = e[i].val.count;
		named++;
	}
	wakers__rank(rows, named, WAKERS_LISTED, b);
	b->other_wakers_ns += unnamed_ns;
	b->other_wakers_count += unnamed_count;
	b->without_waker_ns =
		b->without_waker_ns > unnamed_ns ? b->without_waker_ns - unnamed_ns : 0;
}

void span_wakes__free(struct span_wakes *w)
{
	free(w->recs);
	free(w->names);
	memset(w, 0, sizeof(*w));
}

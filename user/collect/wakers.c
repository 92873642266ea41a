// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>

#include "collect/wakers.h"

_Static_assert(WAKER_THREAD == KHBPF_WAKER_TASK && WAKER_INTERRUPT == KHBPF_WAKER_INTERRUPT &&
		       WAKER_TIMER == KHBPF_WAKER_TIMER,
	       "waker kinds");

void wakers__row(const struct waker_entry *e, struct waker_row *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = e->key.kind;
	if (e->key.kind == KHBPF_WAKER_TASK) {
		out->tid = e->key.waker_tid;
		out->pid = e->val.waker_tgid;
		memcpy(out->comm, e->val.comm, sizeof(out->comm));
		out->comm[sizeof(out->comm) - 1] = 0;
	}
	out->ns = e->val.ns;
	out->count = e->val.count;
}

static int by_ns(const void *a, const void *b)
{
	const struct waker_row *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int by_waker(const void *a, const void *b)
{
	const struct waker_row *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

void wakers__rank(struct waker_row *rows, size_t n, size_t max, struct blocked_evidence *b)
{
	uint64_t all = 0, total = blocked_evidence__total(b);
	size_t i;

	if (n)
		qsort(rows, n, sizeof(*rows), by_ns);
	b->has_wakers = true;
	b->wakers = rows;
	b->nr_wakers = n < max ? n : max;
	b->other_wakers_ns = 0;
	b->other_wakers_count = 0;
	for (i = 0; i < n; i++) {
		all += rows[i].ns;
		if (i >= max) {
			b->other_wakers_ns += rows[i].ns;
			b->other_wakers_count += rows[i].count;
		}
	}
	b->without_waker_ns = total > all ? total - all : 0;
}

size_t wakers__merge(struct waker_row *rows, size_t n)
{
	size_t i, out = 0;

	if (!n)
		return 0;
	qsort(rows, n, sizeof(*rows), by_waker);
	for (i = 1; i < n; i++) {
		if (!by_waker(&rows[out], &rows[i])) {
			rows[out].ns += rows[i].ns;
			rows[out].count += rows[i].count;
			continue;
		}
		rows[++out] = rows[i];
	}
	return out + 1;
}

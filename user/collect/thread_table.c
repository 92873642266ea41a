// SPDX-License-Identifier: MIT
/* Thread records sorted by identity (tid, start time): the collector's tables. */
#include <errno.h>
#include <stdlib.h>

#include "collect/thread_table.h"

int thread_table__push(struct thread_table *t, size_t *cap, const struct khbpf_thread_rec *r)
{
	if (t->nr == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		struct khbpf_thread_rec *grown = realloc(t->recs, ncap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		t->recs = grown;
		*cap = ncap;
	}
	t->recs[t->nr++] = *r;
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct khbpf_thread_rec *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start_time < y->start_time ? -1 : x->start_time > y->start_time;
}

void thread_table__sort(struct thread_table *t)
{
	if (t->nr)
		qsort(t->recs, t->nr, sizeof(*t->recs), rec_cmp);
}

const struct khbpf_thread_rec *thread_table__find(const struct thread_table *t, uint32_t tid,
						  uint64_t start_time)
{
	struct khbpf_thread_rec key = { .tid = tid, .start_time = start_time };

	if (!t->nr)
		return NULL;
	return bsearch(&key, t->recs, t->nr, sizeof(*t->recs), rec_cmp);
}

void thread_table__free(struct thread_table *t)
{
	free(t->recs);
	t->recs = NULL;
	t->nr = 0;
}

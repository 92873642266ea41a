// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "spans/spanstore.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

void span_store__init(struct span_store *s, size_t max)
{
	memset(s, 0, sizeof(*s));
	s->max = max;
}

/*
 * Address space for every record, no memory yet (MAP_NORESERVE: nothing is
 * committed until made). Where it cannot be had (strict overcommit, a
 * small address space), the records grow by realloc instead.
 */
static void reserve(struct span_store *s)
{
	void *p;

	if (s->max > SIZE_MAX / sizeof(*s->recs))
		return;
	p = mmap(NULL, s->max * sizeof(*s->recs), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return;
	s->recs = p;
	s->mapped = true;
}

/* The next chunk of the reserved range, made in one call rather than a fault per page. */
static int grow_mapped(struct span_store *s)
{
	size_t per = SPAN_STORE_CHUNK / sizeof(*s->recs), n = s->max - s->cap;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), from, to;

	if (n > per)
		n = per;
	from = (uintptr_t)(s->recs + s->cap) & ~(page - 1);
	to = (uintptr_t)(s->recs + s->cap + n);
	if (!s->no_populate && madvise((void *)from, to - from, MADV_POPULATE_WRITE)) {
		if (errno == ENOMEM)
			return -ENOMEM;
		/* EINVAL: a kernel before 5.14; the pages fault in as they are written. */
		if (errno == EINVAL)
			s->no_populate = true;
	}
	s->cap += n;
	return 0;
}

static int grow_heap(struct span_store *s)
{
	size_t cap = s->cap ? 2 * s->cap : 64;
	struct khbpf_span_event *grown;

	if (cap > s->max)
		cap = s->max;
	grown = realloc(s->recs, cap * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	s->recs = grown;
	s->cap = cap;
	return 0;
}

struct khbpf_span_event *span_store__add(struct span_store *s)
{
	if (s->nr >= s->max)
		return NULL;
	if (!s->recs)
		reserve(s);
	if (s->nr == s->cap && (s->mapped ? grow_mapped(s) : grow_heap(s)))
		return NULL;
	return &s->recs[s->nr++];
}

void span_store__free(struct span_store *s)
{
	if (s->mapped)
		munmap(s->recs, s->max * sizeof(*s->recs));
	else
		free(s->recs);
	span_store__init(s, s->max);
}

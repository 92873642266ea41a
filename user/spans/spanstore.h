/* SPDX-License-Identifier: MIT */
/*
 * The loader's store of span records as they are drained from the ring
 * buffer: an address range reserved for every record it may keep, its
 * memory made a chunk ahead of the records. Drained one by one into fresh
 * pages, each page's first touch was a page fault (in a VM, an exit);
 * those made most of the reader's time per record, which bounds how fast a
 * ring buffer can be drained. Memory still follows the records kept, to
 * within one chunk.
 */
#ifndef KHBPF_SPANSTORE_H
#define KHBPF_SPANSTORE_H

#include <stdbool.h>
#include <stddef.h>

#include "khbpf/spans.h"

/* Memory made ahead of the records (2 MiB: one transparent huge page). */
#define SPAN_STORE_CHUNK (2u << 20)

struct span_store {
	struct khbpf_span_event *recs;
	size_t nr; /* records kept */
	size_t max; /* at most this many */
	size_t cap; /* records the memory behind recs holds now */
	bool mapped; /* recs is the reserved range; else malloc'd, grown by realloc */
	bool no_populate; /* the kernel cannot make memory ahead: pages fault in */
};

/* An empty store for at most max records; nothing is allocated yet. */
void span_store__init(struct span_store *s, size_t max);
/*
 * Room for one more record, to be filled by the caller; NULL when the store
 * is full or no memory can be had (the caller counts the record as lost).
 */
struct khbpf_span_event *span_store__add(struct span_store *s);
void span_store__free(struct span_store *s);

#endif /* KHBPF_SPANSTORE_H */

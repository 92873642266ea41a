/* SPDX-License-Identifier: MIT */
/* Thread records sorted by identity (tid, start time). */
#ifndef KHBPF_THREAD_TABLE_H
#define KHBPF_THREAD_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "khbpf/sched.h"

/* A set of thread records sorted by (tid, start_time). */
struct thread_table {
	struct khbpf_thread_rec *recs;
	size_t nr;
};

void thread_table__sort(struct thread_table *t);
/* Appends r (the table's capacity in *cap); the table is sorted again by the caller. */
int thread_table__push(struct thread_table *t, size_t *cap, const struct khbpf_thread_rec *r);
/* The record with this identity, or NULL. */
const struct khbpf_thread_rec *thread_table__find(const struct thread_table *t, uint32_t tid,
						  uint64_t start_time);
void thread_table__free(struct thread_table *t);

#endif /* KHBPF_THREAD_TABLE_H */

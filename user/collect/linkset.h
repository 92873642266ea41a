/* SPDX-License-Identifier: MIT */
/*
 * A bounded set of BPF links (libbpf's, or bare link fds) taken down
 * together, in the background. A uprobe link's release waits in the kernel
 * for grace periods (about 0.1 s a link here), which a window's document
 * should not wait on. linkset__release_begin starts up to nr_threads
 * threads that destroy the links, each taking the next one not yet taken;
 * linkset__release_wait (and linkset__free) joins them, so everything is
 * detached before the process goes on to exit.
 */
#ifndef KHBPF_LINKSET_H
#define KHBPF_LINKSET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct bpf_link;

#define LINKSET_MAX_THREADS 64

struct linkset_entry {
	struct bpf_link *link; /* NULL: fd is a bare link fd */
	int fd;
};

struct linkset {
	struct linkset_entry *v;
	size_t nr, max;
	atomic_size_t next; /* the next entry a releasing thread takes */
	pthread_t threads[LINKSET_MAX_THREADS];
	unsigned int nr_threads; /* started and not yet joined */
	bool released; /* release begun: adding is refused */
};

/* An empty set of at most max links (memory comes with the first add). */
void linkset__init(struct linkset *s, size_t max);
/*
 * Room for max links now, so that adding cannot fail for memory: 0,
 * -ENOMEM, or -EBUSY once release has begun.
 */
int linkset__prepare(struct linkset *s);
/* 0, -E2BIG past max, -EBUSY once release has begun, -ENOMEM. */
int linkset__add_link(struct linkset *s, struct bpf_link *link);
int linkset__add_fd(struct linkset *s, int fd);
size_t linkset__count(const struct linkset *s);
/*
 * Take every link down with up to nr_threads threads (at least 1, at most
 * LINKSET_MAX_THREADS, never more than there are links), returning at
 * once. The threads share the work (each takes the next link), so those
 * that start do it all; when none can, the links are destroyed here,
 * before returning. Idempotent.
 */
void linkset__release_begin(struct linkset *s, unsigned int nr_threads);
/* Until every link is down (begins the release with one thread if none was). */
void linkset__release_wait(struct linkset *s);
/* Release (waiting for it) and free. */
void linkset__free(struct linkset *s);

#endif /* KHBPF_LINKSET_H */

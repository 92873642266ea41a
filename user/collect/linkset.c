// SPDX-License-Identifier: MIT
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "collect/linkset.h"

void linkset__init(struct linkset *s, size_t max)
{
	memset(s, 0, sizeof(*s));
	s->max = max;
	atomic_init(&s->next, 0);
}

int linkset__prepare(struct linkset *s)
{
	if (s->released)
		return -EBUSY;
	if (!s->v && s->max) {
		s->v = calloc(s->max, sizeof(*s->v));
		if (!s->v)
			return -ENOMEM;
	}
	return 0;
}

static int add(struct linkset *s, struct bpf_link *link, int fd)
{
	int err = linkset__prepare(s);

	if (err)
		return err;
	if (s->nr == s->max)
		return -E2BIG;
	s->v[s->nr++] = (struct linkset_entry){ .link = link, .fd = fd };
	return 0;
}

int linkset__add_link(struct linkset *s, struct bpf_link *link)
{
	return add(s, link, -1);
}

int linkset__add_fd(struct linkset *s, int fd)
{
	return add(s, NULL, fd);
}

size_t linkset__count(const struct linkset *s)
{
	return s->nr;
}

static void *release_some(void *arg)
{
	struct linkset *s = arg;
	size_t i;

	while ((i = atomic_fetch_add(&s->next, 1)) < s->nr) {
		if (s->v[i].link)
			bpf_link__destroy(s->v[i].link);
		else if (s->v[i].fd >= 0)
			close(s->v[i].fd);
	}
	return NULL;
}

void linkset__release_begin(struct linkset *s, unsigned int nr_threads)
{
	sigset_t all, old;
	unsigned int n;

	if (s->released)
		return;
	s->released = true;
	if (!s->nr)
		return;
	n = nr_threads ? nr_threads : 1;
	if (n > LINKSET_MAX_THREADS)
		n = LINKSET_MAX_THREADS;
	if (n > s->nr)
		n = (unsigned int)s->nr;
	/* The caller's signals stay its own (signalfd): the threads block all. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (s->nr_threads = 0; s->nr_threads < n; s->nr_threads++)
		if (pthread_create(&s->threads[s->nr_threads], NULL, release_some, s))
			break;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->nr_threads)
		release_some(s);
}

void linkset__release_wait(struct linkset *s)
{
	unsigned int i;

	linkset__release_begin(s, 1);
	for (i = 0; i < s->nr_threads; i++)
		pthread_join(s->threads[i], NULL);
	s->nr_threads = 0;
}

void linkset__free(struct linkset *s)
{
	linkset__release_wait(s);
	free(s->v);
	s->v = NULL;
	s->nr = 0;
}

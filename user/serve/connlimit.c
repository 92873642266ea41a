// SPDX-License-Identifier: MIT
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/connlimit.h"

/* A peer address: family and up to 16 bytes, the port left out. */
struct peer {
	sa_family_t family;
	unsigned char addr[16];
};

struct connlimit_conn {
	bool used;
	bool busy; /* a request between its head and its end */
	bool displaced; /* shut down by admit; gone at the caller's next remove */
	int fd;
	uint64_t idle_seq; /* when it last became idle, in admit's order */
	struct peer peer;
};

struct connlimit {
	struct connlimit_conn *conns;
	unsigned int max_conns, max_per_addr;
	uint64_t seq;
};

static void peer_of(const struct sockaddr *sa, socklen_t len, struct peer *p)
{
	memset(p, 0, sizeof(*p));
	if (!sa)
		return;
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		p->family = AF_INET;
		memcpy(p->addr, &((const struct sockaddr_in *)sa)->sin_addr,
		       sizeof(struct in_addr));
	} else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		p->family = AF_INET6;
		memcpy(p->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		       sizeof(struct in6_addr));
	}
}

static bool same_peer(const struct peer *a, const struct peer *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, sizeof(a->addr));
}

int connlimit__new(struct connlimit **out, unsigned int max_conns, unsigned int max_per_addr)
{
	struct connlimit *t;

	*out = NULL;
	if (!max_conns || !max_per_addr)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->conns = calloc(max_conns, sizeof(*t->conns));
	if (!t->conns) {
		free(t);
		return -ENOMEM;
	}
	t->max_conns = max_conns;
	t->max_per_addr = max_per_addr;
	*out = t;
	return 0;
}

void connlimit__free(struct connlimit *t)
{
	if (!t)
		return;
	free(t->conns);
	free(t);
}

static unsigned int count_peer(const struct connlimit *t, const struct peer *p)
{
	unsigned int i, n = 0;

	for (i = 0; i < t->max_conns; i++)
		n += t->conns[i].used && !t->conns[i].displaced && same_peer(&t->conns[i].peer, p);
	return n;
}

unsigned int connlimit__count(const struct connlimit *t, const struct sockaddr *sa, socklen_t len)
{
	struct peer p;

	peer_of(sa, len, &p);
	return count_peer(t, &p);
}

/* A linear scan: max_conns is small (64 in serve) and this runs once per accept. */
bool connlimit__admit(struct connlimit *t, const struct sockaddr *sa, socklen_t len, int *evict_fd)
{
	struct connlimit_conn *oldest = NULL;
	struct peer p;
	unsigned int i;

	*evict_fd = -1;
	peer_of(sa, len, &p);
	if (count_peer(t, &p) < t->max_per_addr)
		return true;
	for (i = 0; i < t->max_conns; i++) {
		struct connlimit_conn *c = &t->conns[i];

		if (!c->used || c->displaced || c->busy || !same_peer(&c->peer, &p))
			continue;
		if (!oldest || c->idle_seq < oldest->idle_seq)
			oldest = c;
	}
	if (!oldest)
		return false;
	oldest->displaced = true;
	*evict_fd = oldest->fd;
	return true;
}

struct connlimit_conn *connlimit__add(struct connlimit *t, const struct sockaddr *sa, socklen_t len,
				      int fd)
{
	unsigned int i;

	for (i = 0; i < t->max_conns; i++) {
		struct connlimit_conn *c = &t->conns[i];

		if (c->used)
			continue;
		memset(c, 0, sizeof(*c));
		c->used = true;
		c->fd = fd;
		c->idle_seq = t->seq++;
		peer_of(sa, len, &c->peer);
		return c;
	}
	return NULL;
}

void connlimit__remove(struct connlimit *t, struct connlimit_conn *c)
{
	(void)t;
	if (c)
		memset(c, 0, sizeof(*c));
}

void connlimit__set_busy(struct connlimit *t, struct connlimit_conn *c, bool busy)
{
	if (!c)
		return;
	if (c->busy && !busy)
		c->idle_seq = t->seq++;
	c->busy = busy;
}

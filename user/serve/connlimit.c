// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
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
	bool closing; /* given up (displaced or expired); gone at the caller's next remove */
	int fd;
	uint64_t since_ns; /* opened, or its request began or ended */
	uint64_t seq; /* the order of since_ns, which ties in the tests' clocks */
	struct peer peer;
};

struct connlimit {
	struct connlimit_conn *conns;
	unsigned int nr_slots;
	struct connlimit_limits l;
	struct connlimit_stats st;
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

int connlimit__new(struct connlimit **out, const struct connlimit_limits *l)
{
	struct connlimit *t;

	*out = NULL;
	if (!l->max_conns || !l->max_per_addr || l->slack > UINT_MAX - l->max_conns)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->nr_slots = l->max_conns + l->slack;
	t->conns = calloc(t->nr_slots, sizeof(*t->conns));
	if (!t->conns) {
		free(t);
		return -ENOMEM;
	}
	t->l = *l;
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

static bool counted(const struct connlimit_conn *c)
{
	return c->used && !c->closing;
}

static unsigned int count_peer(const struct connlimit *t, const struct peer *p)
{
	unsigned int i, n = 0;

	for (i = 0; i < t->nr_slots; i++)
		n += counted(&t->conns[i]) && same_peer(&t->conns[i].peer, p);
	return n;
}

unsigned int connlimit__count(const struct connlimit *t, const struct sockaddr *sa, socklen_t len)
{
	struct peer p;

	peer_of(sa, len, &p);
	return count_peer(t, &p);
}

unsigned int connlimit__total(const struct connlimit *t)
{
	unsigned int i, n = 0;

	for (i = 0; i < t->nr_slots; i++)
		n += counted(&t->conns[i]);
	return n;
}

static bool candidate(const struct connlimit_conn *c, const struct peer *p)
{
	return counted(c) && !c->busy && (!p || same_peer(&c->peer, p));
}

/*
 * The connection to give up (of p, or of any address with p NULL): the
 * longest idle one without unread input, else the one with the least
 * (the longest idle of those); NULL when all are busy. Input not yet read
 * may be a whole request head: libmicrohttpd accepts a series of new
 * connections before it reads from those it has, and a client displaced
 * from an address that reconnects at once (and sends a byte) would
 * otherwise displace, within one series, a request come in on it.
 */
static struct connlimit_conn *victim_of(struct connlimit *t, const struct peer *p)
{
	struct connlimit_conn *best = NULL;
	size_t least = SIZE_MAX, n;
	unsigned int i;

	for (i = 0; i < t->nr_slots; i++) {
		struct connlimit_conn *c = &t->conns[i];

		if (candidate(c, p) && (!best || c->seq < best->seq))
			best = c;
	}
	/* The usual case: one question of the caller. */
	if (!best || !t->l.unread || !t->l.unread(best->fd))
		return best;
	for (i = 0; i < t->nr_slots; i++) {
		struct connlimit_conn *c = &t->conns[i];

		if (!candidate(c, p))
			continue;
		n = t->l.unread(c->fd);
		if (n < least || (n == least && c->seq < best->seq)) {
			best = c;
			least = n;
		}
	}
	return best;
}

/* Linear scans: the table is small (128 slots in serve) and this runs once per accept. */
bool connlimit__admit(struct connlimit *t, const struct sockaddr *sa, socklen_t len, int *evict_fd)
{
	struct connlimit_conn *victim;
	bool own;
	struct peer p;

	*evict_fd = -1;
	peer_of(sa, len, &p);
	/* The address pays for its own excess first; only then do others. */
	own = count_peer(t, &p) >= t->l.max_per_addr;
	if (!own && connlimit__total(t) < t->l.max_conns)
		return true;
	victim = victim_of(t, own ? &p : NULL);
	if (!victim) {
		t->st.refused++;
		return false;
	}
	victim->closing = true;
	if (own)
		t->st.shed_addr++;
	else
		t->st.shed_total++;
	*evict_fd = victim->fd;
	return true;
}

struct connlimit_conn *connlimit__add(struct connlimit *t, const struct sockaddr *sa, socklen_t len,
				      int fd, uint64_t now_ns)
{
	unsigned int i;

	for (i = 0; i < t->nr_slots; i++) {
		struct connlimit_conn *c = &t->conns[i];

		if (c->used)
			continue;
		memset(c, 0, sizeof(*c));
		c->used = true;
		c->fd = fd;
		c->since_ns = now_ns;
		c->seq = t->seq++;
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

void connlimit__set_busy(struct connlimit *t, struct connlimit_conn *c, bool busy, uint64_t now_ns)
{
	/* Marked again in the state it is in, it keeps its time (and its deadline). */
	if (!c || c->busy == busy)
		return;
	c->busy = busy;
	c->since_ns = now_ns;
	c->seq = t->seq++;
}

/* c's deadline, UINT64_MAX for none (also one past the clock's end). */
static uint64_t deadline_of(const struct connlimit *t, const struct connlimit_conn *c)
{
	uint64_t d = c->busy ? t->l.answer_ns : t->l.head_ns;

	if (!d)
		return UINT64_MAX;
	return c->since_ns > UINT64_MAX - d ? UINT64_MAX : c->since_ns + d;
}

int connlimit__expire(struct connlimit *t, uint64_t now_ns)
{
	unsigned int i;

	for (i = 0; i < t->nr_slots; i++) {
		struct connlimit_conn *c = &t->conns[i];
		uint64_t d;

		if (!counted(c))
			continue;
		d = deadline_of(t, c);
		if (d == UINT64_MAX || d > now_ns)
			continue;
		c->closing = true;
		if (c->busy)
			t->st.answer_expired++;
		else
			t->st.head_expired++;
		return c->fd;
	}
	return -1;
}

uint64_t connlimit__next_deadline(const struct connlimit *t)
{
	uint64_t next = UINT64_MAX, d;
	unsigned int i;

	for (i = 0; i < t->nr_slots; i++) {
		if (!counted(&t->conns[i]))
			continue;
		d = deadline_of(t, &t->conns[i]);
		if (d < next)
			next = d;
	}
	return next;
}

void connlimit__stats(const struct connlimit *t, struct connlimit_stats *st)
{
	*st = t->st;
}

/* SPDX-License-Identifier: MIT */
/*
 * httpd's connection limits: a table of the open connections, each with its
 * peer address, whether a request is in progress on it (busy: its head is
 * in, its answer not yet sent) and since when it is in its present state.
 *
 * A new connection is admitted by giving up an idle one (no request in
 * progress: never used, still sending its head, or kept alive after its
 * last answer) when a limit is reached, which the caller shuts down:
 *
 *   - an address at max_per_addr gives up its own longest idle connection;
 *   - otherwise, with max_conns open, the longest idle of all goes (the one
 *     that has waited longest for a request head: the oldest or slowest).
 *
 * Of the idle ones, those with input the caller has yet to read (maybe a
 * whole request head, read on the loop's next turn) go last, the one with
 * the least first. A new connection is refused only when every connection
 * it could displace is busy: busy ones are never displaced. So an address
 * that opened and abandoned connections is served again at once, and so
 * is a new address while slow clients hold every connection. Connections
 * are told apart by peer address only (IPv4 or IPv6, the port ignored);
 * other families share one entry.
 *
 * Deadlines: an idle connection must have a whole request head within
 * head_ns of its opening or of its previous answer, and a busy one must
 * have its answer sent within answer_ns of its head, however slowly the
 * bytes come or go; connlimit__expire names those past it, which the
 * caller shuts down too. Times are the caller's (CLOCK_MONOTONIC in ns).
 *
 * A connection given up (displaced or expired) stops counting at once, but
 * keeps its slot until the caller removes it (when the socket is closed):
 * the table has max_conns + slack slots.
 *
 * One thread: libmicrohttpd calls httpd back from the caller's poll loop.
 */
#ifndef KHBPF_CONNLIMIT_H
#define KHBPF_CONNLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct connlimit;
struct connlimit_conn;

struct connlimit_limits {
	unsigned int max_conns; /* open and not given up */
	unsigned int max_per_addr;
	unsigned int slack; /* given up, not yet removed, beyond max_conns */
	uint64_t head_ns; /* 0: no deadline */
	uint64_t answer_ns; /* 0: no deadline */
	/* Bytes of input on fd not yet read (NULL: never asked); see above. */
	size_t (*unread)(int fd);
};

/* Why connections were given up or refused, since the table was made. */
struct connlimit_stats {
	uint64_t shed_addr; /* idle, displaced by a new one from its address */
	uint64_t shed_total; /* idle, displaced by a new one at max_conns */
	uint64_t refused; /* new ones: everything they could displace was busy */
	uint64_t head_expired; /* no whole request head by its deadline */
	uint64_t answer_expired; /* an answer not sent by its deadline */
};

/* -EINVAL without max_conns or max_per_addr. */
int connlimit__new(struct connlimit **out, const struct connlimit_limits *l);
void connlimit__free(struct connlimit *t); /* NULL is fine */

/*
 * Whether a connection from sa may be added: true, with *evict_fd the
 * socket of the connection it displaces (-1: none), which the caller shuts
 * down and which stops counting at once; or false (refused).
 */
bool connlimit__admit(struct connlimit *t, const struct sockaddr *sa, socklen_t len, int *evict_fd);
/* A connection opened at now_ns: its slot, or NULL when all slots are taken. */
struct connlimit_conn *connlimit__add(struct connlimit *t, const struct sockaddr *sa, socklen_t len,
				      int fd, uint64_t now_ns);
void connlimit__remove(struct connlimit *t, struct connlimit_conn *c); /* NULL is fine */
/* A request began (its head is in) or ended (answered, or abandoned) at now_ns. */
void connlimit__set_busy(struct connlimit *t, struct connlimit_conn *c, bool busy, uint64_t now_ns);
/*
 * A connection past its deadline at now_ns: its socket, which the caller
 * shuts down and which stops counting at once; -1 when there is none.
 */
int connlimit__expire(struct connlimit *t, uint64_t now_ns);
/* The earliest deadline of the connections counted, or UINT64_MAX for none. */
uint64_t connlimit__next_deadline(const struct connlimit *t);
/* Connections counted against sa's limit (those given up are not). */
unsigned int connlimit__count(const struct connlimit *t, const struct sockaddr *sa, socklen_t len);
/* Connections counted against max_conns. */
unsigned int connlimit__total(const struct connlimit *t);
void connlimit__stats(const struct connlimit *t, struct connlimit_stats *st);

#endif /* KHBPF_CONNLIMIT_H */

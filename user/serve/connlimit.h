/* SPDX-License-Identifier: MIT */
/*
 * httpd's per-address connection limit: a table of the open connections,
 * each with its peer address and whether a request is in progress on it.
 *
 * At the limit, a new connection from an address is admitted by giving up
 * that address's longest idle connection (no request in progress: never
 * used, or kept alive after its last response), which the caller shuts
 * down; it is refused only when every connection of the address is busy.
 * So an address that opened and abandoned connections is served again at
 * once, and what it can hold stays max_per_addr. Connections are told
 * apart by peer address only (IPv4 or IPv6, the port ignored); other
 * families share one entry.
 *
 * One thread: libmicrohttpd calls httpd back from the caller's poll loop.
 */
#ifndef KHBPF_CONNLIMIT_H
#define KHBPF_CONNLIMIT_H

#include <stdbool.h>
#include <sys/socket.h>

struct connlimit;
struct connlimit_conn;

/* max_conns slots (libmicrohttpd's connection limit), each address up to max_per_addr. */
int connlimit__new(struct connlimit **out, unsigned int max_conns, unsigned int max_per_addr);
void connlimit__free(struct connlimit *t); /* NULL is fine */

/*
 * Whether a connection from sa may be added: true, with *evict_fd the
 * socket of the connection it displaces (-1: none), which the caller shuts
 * down and which stops counting at once; or false (every connection of the
 * address has a request in progress).
 */
bool connlimit__admit(struct connlimit *t, const struct sockaddr *sa, socklen_t len, int *evict_fd);
/* A connection opened: its slot, or NULL when all max_conns are taken. */
struct connlimit_conn *connlimit__add(struct connlimit *t, const struct sockaddr *sa, socklen_t len,
				      int fd);
void connlimit__remove(struct connlimit *t, struct connlimit_conn *c); /* NULL is fine */
/* A request began (its head is in) or ended (answered, or abandoned). */
void connlimit__set_busy(struct connlimit *t, struct connlimit_conn *c, bool busy);
/* Connections counted against sa's limit (those displaced are not). */
unsigned int connlimit__count(const struct connlimit *t, const struct sockaddr *sa, socklen_t len);

#endif /* KHBPF_CONNLIMIT_H */

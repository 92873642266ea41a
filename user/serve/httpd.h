/* SPDX-License-Identifier: MIT */
/*
 * A small read-only HTTP endpoint on libmicrohttpd, driven by the caller's
 * poll loop: no threads inside, so handlers need no locking.
 *
 *   poll httpd__fd(h) for POLLIN with a timeout of httpd__timeout_ms(h)
 *   (together with the caller's own fds), then call httpd__run(h) after
 *   every wake-up, whatever woke it.
 *
 * Requests: GET and HEAD on the routes' exact paths, as sent (no %xx
 * decoding; a query string is ignored). Unknown path → 404; another
 * method on a known path → 405 with "Allow: GET, HEAD"; a request
 * announcing a body (Content-Length above 0 or any Transfer-Encoding) →
 * 413, the body unread and the connection closed. A request line and
 * header fields above max_header_bytes → 431. These answers, like the
 * handlers', carry Content-Type and "Cache-Control: no-store". Past about
 * max_header_bytes + 4 KiB libmicrohttpd refuses the request itself (its
 * own 431, or 414 for a request line alone, with an HTML body and no
 * Cache-Control) and closes the connection.
 *
 * Limits (connlimit.h): a connection over max_per_ip from one address
 * displaces that address's longest idle connection (no request in
 * progress), and one over max_connections the longest idle of all; the
 * connection displaced is closed. When every connection it could displace
 * is busy, the new one is closed at once. So a flood from one address, or
 * slow clients from many, leave room for others, and an address that
 * abandoned connections is served again at once.
 *
 * Deadlines: a connection is closed when it has no whole request head
 * head_timeout_s after it opened or after its previous answer (however
 * slowly the head trickles in; so a connection kept alive idles that long
 * at most), or has not sent an answer answer_timeout_s after its head.
 * libmicrohttpd's idle timeout, timeout_s, also closes a connection with
 * no traffic either way for that long.
 */
#ifndef KHBPF_HTTPD_H
#define KHBPF_HTTPD_H

#include <stddef.h>
#include <stdint.h>

struct httpd;

struct httpd_request {
	const char *path;
	const char *method; /* "GET" or "HEAD"; a handler may answer both alike */
	const char *accept; /* the Accept header, or NULL */
};

struct httpd_response {
	int status; /* 0 → 200 */
	const char *content_type; /* NULL → "text/plain; charset=utf-8" */
	char *body; /* malloc'd by the handler, freed by httpd (also on error) */
	size_t len;
};

/* 0, or -errno: the client gets a 500 and the body is discarded. */
typedef int (*httpd_handler_fn)(void *ctx, const struct httpd_request *req,
				struct httpd_response *resp);

struct httpd_route {
	const char *path; /* exact, e.g. "/metrics"; copied */
	httpd_handler_fn fn;
	void *ctx;
};

struct httpd_opts {
	size_t sz; /* sizeof(struct httpd_opts), libbpf-style */
	/*
	 * "IPV4:PORT" or "[IPV6]:PORT", numeric only (no host names, no
	 * scope ids); port 0 picks a free one. NULL → HTTPD_DEFAULT_LISTEN.
	 */
	const char *listen;
	const struct httpd_route *routes;
	size_t nr_routes;
	unsigned int max_connections; /* 0 → 64 */
	unsigned int timeout_s; /* idle connection timeout; 0 → 10 */
	size_t max_header_bytes; /* request line and headers; 0 → 8192 */
	unsigned int max_per_ip; /* connections from one address; 0 → 8 */
	unsigned int head_timeout_s; /* a whole request head within; 0 → 5 */
	unsigned int answer_timeout_s; /* an answer sent within; 0 → 10 */
};

/* The connections open, and those given up or refused since the start. */
struct httpd_stats {
	uint64_t connections; /* open, counted against max_connections */
	uint64_t shed_addr; /* idle, displaced at max_per_ip */
	uint64_t shed_total; /* idle, displaced at max_connections */
	uint64_t refused; /* new, with every connection it could displace busy */
	uint64_t head_expired; /* past head_timeout_s */
	uint64_t answer_expired; /* past answer_timeout_s */
};

#define HTTPD_DEFAULT_LISTEN "127.0.0.1:9464"

/*
 * Binds, listens and starts serving. 0 or -errno; on error errbuf (if any)
 * gets one line naming the address and what to do, e.g. "cannot listen on
 * 127.0.0.1:9464: Address already in use; choose another with --listen".
 * -EINVAL for a malformed address or options.
 */
int httpd__start(struct httpd **out, const struct httpd_opts *opts, char *errbuf, size_t errlen);
/* 0 when ADDR is a listen address httpd__start accepts, else -EINVAL. */
int httpd__check_listen(const char *addr);
uint16_t httpd__port(const struct httpd *h); /* the bound port */
int httpd__fd(const struct httpd *h); /* poll it for POLLIN */
int httpd__run(struct httpd *h); /* does ready work, never blocks; 0 or -EIO */
/* Longest wait before the next httpd__run, in ms (at most 1000; see httpd.c). */
int httpd__timeout_ms(const struct httpd *h);
void httpd__stats(const struct httpd *h, struct httpd_stats *st);
void httpd__stop(struct httpd *h); /* closes every connection; NULL is fine */

#endif /* KHBPF_HTTPD_H */

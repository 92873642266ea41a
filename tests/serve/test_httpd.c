// SPDX-License-Identifier: MIT
/*
 * httpd against raw sockets: the server runs its poll loop in a helper
 * thread, as khbpf serve runs it in its main loop. Deadlines are generous
 * (socket timeouts of 10 s); nothing waits on a sleep.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "serve/httpd.h"
#include "testutil.h"

#define DEADLINE_S 10
#define FLOOD 200
#define METRICS_BODY "khbpf_up 1\n"
#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct server {
	struct httpd *h;
	pthread_t thread;
	int stop[2];
	uint16_t port;
	atomic_int calls; /* handler calls */
	pthread_mutex_t lock;
	char accept[256]; /* the last Accept header seen, "(none)" when absent */
	char method[8];
	struct httpd_stats stats; /* as server_stop found them */
};

static int on_metrics(void *ctx, const struct httpd_request *req, struct httpd_response *resp)
{
	struct server *s = ctx;

	atomic_fetch_add(&s->calls, 1);
	pthread_mutex_lock(&s->lock);
	snprintf(s->accept, sizeof(s->accept), "%s", req->accept ? req->accept : "(none)");
	snprintf(s->method, sizeof(s->method), "%s", req->method);
	pthread_mutex_unlock(&s->lock);
	resp->body = strdup(METRICS_BODY);
	if (!resp->body)
		return -ENOMEM;
	resp->len = strlen(METRICS_BODY);
	resp->content_type = METRICS_TYPE;
	return 0;
}

/* Status 0, no content type, no body: 200 with an empty text/plain body. */
static int on_health(void *ctx, const struct httpd_request *req, struct httpd_response *resp)
{
	struct server *s = ctx;

	(void)req;
	(void)resp;
	atomic_fetch_add(&s->calls, 1);
	return 0;
}

/* BIG_BODY bytes: more than the socket buffers of a client that does not read hold. */
#define BIG_BODY (8u << 20)

static int on_big(void *ctx, const struct httpd_request *req, struct httpd_response *resp)
{
	struct server *s = ctx;

	(void)req;
	atomic_fetch_add(&s->calls, 1);
	resp->body = malloc(BIG_BODY);
	if (!resp->body)
		return -ENOMEM;
	memset(resp->body, 'b', BIG_BODY);
	resp->len = BIG_BODY;
	return 0;
}

/* Fails after allocating a body, which httpd must free. */
static int on_fail(void *ctx, const struct httpd_request *req, struct httpd_response *resp)
{
	struct server *s = ctx;

	(void)req;
	atomic_fetch_add(&s->calls, 1);
	resp->body = strdup("secret partial output");
	resp->len = 21;
	return -EIO;
}

static void *serve(void *arg)
{
	struct server *s = arg;
	struct pollfd pfd[2] = {
		{ .fd = httpd__fd(s->h), .events = POLLIN },
		{ .fd = s->stop[0], .events = POLLIN },
	};

	for (;;) {
		if (poll(pfd, 2, httpd__timeout_ms(s->h)) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		if (httpd__run(s->h))
			break;
	}
	return NULL;
}

/* Starts s on listen (port 0 in it) with /metrics, /healthz, /fail and /big. */
static int server_start(struct server *s, const char *listen, struct httpd_opts *o)
{
	struct httpd_route routes[] = {
		{ "/metrics", on_metrics, s },
		{ "/healthz", on_health, s },
		{ "/fail", on_fail, s },
		{ "/big", on_big, s },
	};
	struct httpd_opts def = { .sz = sizeof(def) };
	char errbuf[256];
	int err;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	if (!o)
		o = &def;
	o->listen = listen;
	o->routes = routes; /* httpd copies them */
	o->nr_routes = sizeof(routes) / sizeof(routes[0]);
	err = httpd__start(&s->h, o, errbuf, sizeof(errbuf));
	if (err)
		return err;
	assert_string_equal(errbuf, "");
	s->port = httpd__port(s->h);
	assert_true(s->port > 0);
	assert_true(httpd__fd(s->h) >= 0);
	assert_int_equal(pipe(s->stop), 0);
	assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
	return 0;
}

static void server_stop(struct server *s)
{
	assert_int_equal(write(s->stop[1], "x", 1), 1);
	assert_int_equal(pthread_join(s->thread, NULL), 0);
	httpd__stats(s->h, &s->stats);
	httpd__stop(s->h);
	close(s->stop[0]);
	close(s->stop[1]);
	pthread_mutex_destroy(&s->lock);
}

static int setup(void **state)
{
	struct server *s = calloc(1, sizeof(*s));

	if (!s || server_start(s, "127.0.0.1:0", NULL))
		return -1;
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	server_stop(*state);
	free(*state);
	return 0;
}

/* A connected TCP socket from src (NULL: any) with DEADLINE_S timeouts; -errno on failure. */
static int dial(int family, const char *src, const char *dst, uint16_t port)
{
	struct timeval tv = { .tv_sec = DEADLINE_S };
	struct sockaddr_storage a = { 0 }, b = { 0 };
	socklen_t len;
	int fd, err;

	if (family == AF_INET6) {
		struct sockaddr_in6 *d = (struct sockaddr_in6 *)&a;

		d->sin6_family = AF_INET6;
		d->sin6_port = htons(port);
		assert_int_equal(inet_pton(AF_INET6, dst, &d->sin6_addr), 1);
		len = sizeof(*d);
	} else {
		struct sockaddr_in *d = (struct sockaddr_in *)&a, *sb = (struct sockaddr_in *)&b;

		d->sin_family = AF_INET;
		d->sin_port = htons(port);
		assert_int_equal(inet_pton(AF_INET, dst, &d->sin_addr), 1);
		len = sizeof(*d);
		if (src) {
			sb->sin_family = AF_INET;
			assert_int_equal(inet_pton(AF_INET, src, &sb->sin_addr), 1);
		}
	}
	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    (src && bind(fd, (struct sockaddr *)&b, sizeof(struct sockaddr_in))) ||
	    connect(fd, (struct sockaddr *)&a, len)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

struct reply {
	int status; /* 0: the server closed without a response */
	char raw[65536];
	size_t len;
	const char *body; /* after the blank line */
	size_t body_len;
};

/*
 * Sends req and reads until the server closes (requests say Connection:
 * close) or the buffer is full. A send error is not fatal: the server may
 * answer and close before it has read everything.
 */
static void exchange_fd(int fd, const char *req, size_t req_len, struct reply *r)
{
	const char *end;
	ssize_t n;

	memset(r, 0, sizeof(*r));
	while (req_len) {
		n = send(fd, req, req_len, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		req += n;
		req_len -= (size_t)n;
	}
	while (r->len < sizeof(r->raw) - 1) {
		n = recv(fd, r->raw + r->len, sizeof(r->raw) - 1 - r->len, 0);
		if (n <= 0) {
			/* A timeout is a failure, not a close. */
			assert_false(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
			break;
		}
		r->len += (size_t)n;
	}
	r->raw[r->len] = '\0';
	if (sscanf(r->raw, "HTTP/1.%*d %d ", &r->status) != 1)
		r->status = 0;
	end = strstr(r->raw, "\r\n\r\n");
	if (end) {
		r->body = end + 4;
		r->body_len = r->len - (size_t)(r->body - r->raw);
	}
}

static void exchange_from(const char *src, uint16_t port, const char *req, struct reply *r)
{
	int fd = dial(AF_INET, src, "127.0.0.1", port);

	assert_true(fd >= 0);
	exchange_fd(fd, req, strlen(req), r);
	close(fd);
}

static void exchange(uint16_t port, const char *req, struct reply *r)
{
	exchange_from(NULL, port, req, r);
}

/* The value of header name in r, or NULL; copied to buf. */
static const char *header(const struct reply *r, const char *name, char *buf, size_t size)
{
	const char *line = strstr(r->raw, "\r\n"), *end;
	size_t n = strlen(name);

	while (line && line < (r->body ? r->body - 2 : r->raw + r->len)) {
		line += 2;
		end = strstr(line, "\r\n");
		if (!end)
			break;
		if (!strncasecmp(line, name, n) && line[n] == ':') {
			line += n + 1;
			while (*line == ' ')
				line++;
			snprintf(buf, size, "%.*s", (int)(end - line), line);
			return buf;
		}
		line = end;
	}
	return NULL;
}

static void expect_header(const struct reply *r, const char *name, const char *want)
{
	char buf[256];
	const char *v = header(r, name, buf, sizeof(buf));

	if (!v)
		fail_msg("no %s header in: %s", name, r->raw);
	assert_string_equal(v, want);
}

#define GET(path) "GET " path " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

static void test_httpd__get(void **state)
{
	struct server *s = *state;
	struct reply r;

	exchange(s->port,
		 "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text\r\n"
		 "Connection: close\r\n\r\n",
		 &r);
	assert_int_equal(r.status, 200);
	assert_non_null(r.body);
	assert_int_equal(r.body_len, strlen(METRICS_BODY));
	assert_memory_equal(r.body, METRICS_BODY, r.body_len);
	expect_header(&r, "Content-Type", METRICS_TYPE);
	expect_header(&r, "Cache-Control", "no-store");
	expect_header(&r, "Content-Length", "11");
	pthread_mutex_lock(&s->lock);
	assert_string_equal(s->accept, "application/openmetrics-text");
	assert_string_equal(s->method, "GET");
	pthread_mutex_unlock(&s->lock);

	/* A query string does not change the route; HTTP/1.0 works too. */
	exchange(s->port, "GET /metrics?x=1 HTTP/1.0\r\n\r\n", &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, strlen(METRICS_BODY));
	pthread_mutex_lock(&s->lock);
	assert_string_equal(s->accept, "(none)");
	pthread_mutex_unlock(&s->lock);

	exchange(s->port, GET("/healthz"), &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, 0);
	expect_header(&r, "Content-Type", "text/plain; charset=utf-8");
	expect_header(&r, "Cache-Control", "no-store");
	assert_int_equal(atomic_load(&s->calls), 3);
}

/* GET /metrics on a kept-alive connection; asserts the 200 and reads it all. */
static void keepalive_get(int fd)
{
	const char *req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	size_t got = 0, n = strlen(METRICS_BODY);
	char buf[1024];
	ssize_t len;

	assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	/* The response ends with its body. */
	while (got < n || strcmp(buf + got - n, METRICS_BODY)) {
		len = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		assert_true(len > 0);
		got += (size_t)len;
		buf[got] = '\0';
	}
	assert_true(!strncmp(buf, "HTTP/1.1 200 ", 13));
}

/* Whether fd has data (or EOF) to read within ms. */
static bool readable_within(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1;
}

/* Several requests on one kept-alive connection. */
static void test_httpd__keep_alive(void **state)
{
	struct server *s = *state;
	int fd = dial(AF_INET, NULL, "127.0.0.1", s->port);

	assert_true(fd >= 0);
	keepalive_get(fd);
	keepalive_get(fd);
	close(fd);
	assert_int_equal(atomic_load(&s->calls), 2);
}

static void test_httpd__head(void **state)
{
	struct server *s = *state;
	struct reply r;

	exchange(s->port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(r.body);
	assert_int_equal(r.body_len, 0);
	expect_header(&r, "Content-Type", METRICS_TYPE);
	expect_header(&r, "Cache-Control", "no-store");
	pthread_mutex_lock(&s->lock);
	assert_string_equal(s->method, "HEAD");
	pthread_mutex_unlock(&s->lock);
}

static void test_httpd__unknown_path(void **state)
{
	static const char *const reqs[] = {
		GET("/"),
		GET("/nope"),
		GET("/metrics/"),
		GET("/METRICS"),
		GET("/metrics%00"),
		"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
	};
	struct server *s = *state;
	struct reply r;
	size_t i;

	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		exchange(s->port, reqs[i], &r);
		assert_int_equal(r.status, 404);
		expect_header(&r, "Content-Type", "text/plain; charset=utf-8");
		expect_header(&r, "Cache-Control", "no-store");
	}
	assert_int_equal(atomic_load(&s->calls), 0);
}

static void test_httpd__method_not_allowed(void **state)
{
	static const char *const methods[] = { "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "get" };
	struct server *s = *state;
	char req[256];
	struct reply r;
	size_t i;

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		snprintf(req, sizeof(req),
			 "%s /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
			 "Connection: close\r\n\r\n",
			 methods[i]);
		exchange(s->port, req, &r);
		assert_int_equal(r.status, 405);
		expect_header(&r, "Allow", "GET, HEAD");
		expect_header(&r, "Cache-Control", "no-store");
	}
	assert_int_equal(atomic_load(&s->calls), 0);
}

static void test_httpd__body_rejected(void **state)
{
	struct server *s = *state;
	struct reply r;

	exchange(s->port,
		 "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
		 "Connection: close\r\n\r\nhello",
		 &r);
	assert_int_equal(r.status, 413);
	exchange(s->port,
		 "GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
		 "Connection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		 &r);
	assert_int_equal(r.status, 413);
	/* The body is never read: a client waiting for 100-continue gets the 413 at once. */
	exchange(s->port,
		 "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n"
		 "Expect: 100-continue\r\n\r\n",
		 &r);
	assert_int_equal(r.status, 413);
	assert_null(strstr(r.raw, "100 Continue"));
	expect_header(&r, "Cache-Control", "no-store");
	assert_int_equal(atomic_load(&s->calls), 0);

	/* An empty body is no body. */
	exchange(
		s->port,
		"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
		&r);
	assert_int_equal(r.status, 200);
}

static void test_httpd__handler_error(void **state)
{
	struct server *s = *state;
	struct reply r;

	exchange(s->port, GET("/fail"), &r);
	assert_int_equal(r.status, 500);
	assert_null(strstr(r.raw, "secret"));
	expect_header(&r, "Cache-Control", "no-store");
	exchange(s->port, GET("/metrics"), &r);
	assert_int_equal(r.status, 200);
}

/* A request with a header of `size` bytes in X-Big. */
static char *big_request(const char *path, size_t size)
{
	const char *fmt = "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: ";
	size_t head = strlen(fmt) + strlen(path), total = head + size + 8;
	char *req = malloc(total);
	int n;

	assert_non_null(req);
	n = snprintf(req, total, fmt, path);
	memset(req + n, 'a', size);
	strcpy(req + n + size, "\r\n\r\n");
	return req;
}

/*
 * Headers past max_header_bytes (8192 here) get MHD's 431 and a close;
 * a request line past it gets 414. Neither crashes nor blocks the server.
 */
static void test_httpd__header_too_large(void **state)
{
	struct server *s = *state;
	struct reply r;
	char *req, *path;

	req = big_request("/metrics", 2000);
	exchange(s->port, req, &r);
	assert_int_equal(r.status, 200);
	free(req);

	req = big_request("/metrics", 9000);
	exchange(s->port, req, &r);
	assert_int_equal(r.status, 431);
	expect_header(&r, "Cache-Control", "no-store");
	free(req);

	req = big_request("/metrics", 200000);
	exchange(s->port, req, &r);
	assert_int_equal(r.status, 431);
	free(req);

	path = malloc(20001);
	assert_non_null(path);
	memset(path, 'p', 20000);
	path[0] = '/';
	path[20000] = '\0';
	req = big_request(path, 1);
	exchange(s->port, req, &r);
	assert_int_equal(r.status, 414);
	free(req);
	free(path);

	assert_int_equal(atomic_load(&s->calls), 1);
	exchange(s->port, GET("/metrics"), &r);
	assert_int_equal(r.status, 200);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Counts the fds the server has closed (EOF or reset), marking them in closed[]. */
static int count_closed(const int *fds, int n, bool *closed)
{
	int i, count = 0;
	ssize_t got;
	char c;

	for (i = 0; i < n; i++) {
		if (!closed[i]) {
			got = recv(fds[i], &c, 1, MSG_DONTWAIT);
			closed[i] =
				got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
		}
		count += closed[i];
	}
	return count;
}

/* Waits (up to DEADLINE_S) until the server has closed want of fds; the count. */
static int wait_closed(const int *fds, int n, bool *closed, int want)
{
	int64_t deadline = now_ms() + DEADLINE_S * 1000;
	int nr;

	while ((nr = count_closed(fds, n, closed)) < want && now_ms() < deadline)
		poll(NULL, 0, 20);
	return nr;
}

/*
 * 200 connections from 127.0.0.1, held open and silent: each past the
 * per-address limit (8) displaces the longest idle one, so the 8 newest
 * stay and the rest are closed. Another address (127.0.0.2) is served
 * meanwhile, and so is 127.0.0.1 itself, at once (displacing one more);
 * the ones kept still work. Then a flood of used connections (a request
 * answered on each, kept alive) is displaced alike.
 */
static void test_httpd__flood_per_ip(void **state)
{
	struct server *s = *state;
	bool closed[FLOOD] = { false };
	int fds[FLOOD], i;
	int64_t start;
	struct reply r;

	for (i = 0; i < FLOOD; i++) {
		fds[i] = dial(AF_INET, "127.0.0.1", "127.0.0.1", s->port);
		assert_true(fds[i] >= 0);
	}
	exchange_from("127.0.0.2", s->port, GET("/metrics"), &r);
	assert_int_equal(r.status, 200);
	start = now_ms();
	exchange_from("127.0.0.1", s->port, GET("/metrics"), &r);
	assert_int_equal(r.status, 200);
	/* Served at once, not after the idle timeout (10 s); generous for a loaded host. */
	assert_true(now_ms() - start < 2000);

	/* The oldest went first: the 7 newest are left. */
	assert_int_equal(wait_closed(fds, FLOOD, closed, FLOOD - 7), FLOOD - 7);
	for (i = 0; i < FLOOD; i++)
		assert_int_equal(closed[i], i < FLOOD - 7);
	exchange_fd(fds[FLOOD - 1], GET("/metrics"), strlen(GET("/metrics")), &r);
	assert_int_equal(r.status, 200);
	for (i = 0; i < FLOOD; i++)
		close(fds[i]);

	/* Used and abandoned: each answered once, then left open. */
	memset(closed, 0, sizeof(closed));
	for (i = 0; i < FLOOD; i++) {
		fds[i] = dial(AF_INET, "127.0.0.1", "127.0.0.1", s->port);
		assert_true(fds[i] >= 0);
		keepalive_get(fds[i]);
	}
	assert_int_equal(wait_closed(fds, FLOOD, closed, FLOOD - 8), FLOOD - 8);
	exchange_from("127.0.0.1", s->port, GET("/metrics"), &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(wait_closed(fds, FLOOD, closed, FLOOD - 7), FLOOD - 7);
	for (i = 0; i < FLOOD; i++)
		close(fds[i]);
}

/*
 * A connection with a request in progress is never displaced: two (the
 * limit here) stuck sending a body their client does not read keep a
 * third connection from that address out, not another address; once
 * they are done, the address is served again.
 */
static void test_httpd__busy_not_displaced(void **state)
{
	struct httpd_opts o = { .sz = sizeof(o), .max_per_ip = 2 };
	const char *req = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
	int held[2], i;
	struct server s;
	struct reply r;
	char buf[65536];
	int64_t deadline;
	size_t got;
	ssize_t n;

	(void)state;
	assert_int_equal(server_start(&s, "127.0.0.1:0", &o), 0);
	for (i = 0; i < 2; i++) {
		held[i] = dial(AF_INET, "127.0.0.3", "127.0.0.1", s.port);
		assert_true(held[i] >= 0);
		assert_int_equal(send(held[i], req, strlen(req), MSG_NOSIGNAL),
				 (ssize_t)strlen(req));
	}
	/* Both requests reached the handler: their bodies are being sent. */
	deadline = now_ms() + DEADLINE_S * 1000;
	while (atomic_load(&s.calls) < 2 && now_ms() < deadline)
		poll(NULL, 0, 20);
	assert_int_equal(atomic_load(&s.calls), 2);
	exchange_from("127.0.0.3", s.port, GET("/metrics"), &r);
	assert_int_equal(r.status, 0);
	exchange_from("127.0.0.4", s.port, GET("/metrics"), &r);
	assert_int_equal(r.status, 200);

	/* Read both bodies to their end: the connections are idle again. */
	for (i = 0; i < 2; i++) {
		got = 0;
		while (got < BIG_BODY) {
			n = recv(held[i], buf, sizeof(buf), 0);
			assert_true(n > 0);
			got += (size_t)n;
		}
	}
	exchange_from("127.0.0.3", s.port, GET("/metrics"), &r);
	assert_int_equal(r.status, 200);
	for (i = 0; i < 2; i++)
		close(held[i]);
	server_stop(&s);
}

/*
 * At max_connections a new connection is served at once: it displaces the
 * longest idle of all (here kept alive after its answer), which is closed;
 * the others stay. Before, libmicrohttpd stopped accepting, and the new one
 * waited in the listen backlog until a held one closed.
 */
static void test_httpd__total_limit(void **state)
{
	struct httpd_opts o = { .sz = sizeof(o), .max_connections = 16, .max_per_ip = 1000 };
	bool closed[16] = { false };
	int held[16], fd, i;
	struct server s;
	int64_t start;
	struct reply r;

	(void)state;
	assert_int_equal(server_start(&s, "127.0.0.1:0", &o), 0);
	for (i = 0; i < 16; i++) {
		held[i] = dial(AF_INET, NULL, "127.0.0.1", s.port);
		assert_true(held[i] >= 0);
		keepalive_get(held[i]);
	}
	/* Kept open: the next one finds all 16 taken again. */
	start = now_ms();
	fd = dial(AF_INET, NULL, "127.0.0.1", s.port);
	assert_true(fd >= 0);
	keepalive_get(fd);
	assert_true(now_ms() - start < 2000);
	exchange_from("127.0.0.2", s.port, GET("/metrics"), &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(wait_closed(held, 16, closed, 2), 2);
	for (i = 0; i < 16; i++)
		assert_int_equal(closed[i], i < 2);
	keepalive_get(held[15]);
	keepalive_get(fd);
	close(fd);
	for (i = 0; i < 16; i++)
		close(held[i]);
	server_stop(&s);
	assert_int_equal(s.stats.shed_total, 2);
	assert_int_equal(s.stats.shed_addr, 0);
	assert_int_equal(s.stats.refused, 0);
}

/*
 * A connection must have its request head in head_timeout_s after it
 * opened, however it trickles in (a byte every 100 ms here, each one
 * resetting libmicrohttpd's idle timeout), and its next one as long after
 * its answer when kept alive. Either way, it is closed at that deadline.
 */
static void test_httpd__head_deadline(void **state)
{
	struct httpd_opts o = { .sz = sizeof(o), .head_timeout_s = 1 };
	const char *head = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaa";
	int slow, kept, fd, i;
	int64_t start, took;
	struct server s;
	struct reply r;
	char c;

	(void)state;
	assert_int_equal(server_start(&s, "127.0.0.1:0", &o), 0);
	slow = dial(AF_INET, NULL, "127.0.0.1", s.port);
	assert_true(slow >= 0);
	kept = dial(AF_INET, NULL, "127.0.0.1", s.port);
	assert_true(kept >= 0);
	start = now_ms();
	keepalive_get(kept);
	for (i = 0; head[i] && !readable_within(slow, 100); i++)
		if (send(slow, &head[i], 1, MSG_NOSIGNAL) != 1)
			break;
	took = now_ms() - start;
	assert_true(readable_within(slow, 0));
	assert_int_equal(recv(slow, &c, 1, 0), 0);
	/* At 1 s, give or take the loop's turn; the head had 50 bytes to go. */
	assert_true(took >= 900 && took < 2500);
	/* The kept one's next head was due 1 s after its answer. */
	assert_true(readable_within(kept, 2000));
	assert_int_equal(recv(kept, &c, 1, 0), 0);
	close(slow);
	close(kept);

	/* A head sent whole in time is served, and its deadline is not its answer's. */
	fd = dial(AF_INET, NULL, "127.0.0.1", s.port);
	assert_true(fd >= 0);
	poll(NULL, 0, 500);
	exchange_fd(fd, GET("/metrics"), strlen(GET("/metrics")), &r);
	assert_int_equal(r.status, 200);
	close(fd);
	server_stop(&s);
	assert_int_equal(s.stats.head_expired, 2);
	assert_int_equal(s.stats.answer_expired, 0);
}

/*
 * An answer its client does not take within answer_timeout_s is cut off:
 * the connection is closed, though the client kept it busy.
 */
static void test_httpd__answer_deadline(void **state)
{
	struct httpd_opts o = { .sz = sizeof(o), .answer_timeout_s = 1 };
	const char *req = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
	char buf[65536];
	struct server s;
	size_t got = 0;
	int64_t start;
	ssize_t n;
	int fd;

	(void)state;
	assert_int_equal(server_start(&s, "127.0.0.1:0", &o), 0);
	fd = dial(AF_INET, NULL, "127.0.0.1", s.port);
	assert_true(fd >= 0);
	start = now_ms();
	assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	poll(NULL, 0, 1500);
	/* What the socket buffers held, then the end (or a reset): not the whole body. */
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		got += (size_t)n;
	assert_true(n == 0 || errno == ECONNRESET);
	assert_true(got < BIG_BODY);
	assert_true(now_ms() - start < 5000);
	close(fd);
	server_stop(&s);
	assert_int_equal(s.stats.answer_expired, 1);
}

/*
 * libmicrohttpd's idle timeout (timeout_s) closes a silent connection
 * before its head deadline (5 s) when it is shorter.
 */
static void test_httpd__idle_timeout(void **state)
{
	struct httpd_opts o = { .sz = sizeof(o), .timeout_s = 1 };
	bool closed[4] = { false };
	int held[4], i;
	struct server s;
	int64_t start;

	(void)state;
	assert_int_equal(server_start(&s, "127.0.0.1:0", &o), 0);
	start = now_ms();
	for (i = 0; i < 4; i++) {
		held[i] = dial(AF_INET, NULL, "127.0.0.1", s.port);
		assert_true(held[i] >= 0);
	}
	assert_int_equal(wait_closed(held, 4, closed, 4), 4);
	assert_true(now_ms() - start < 4000);
	for (i = 0; i < 4; i++)
		close(held[i]);
	server_stop(&s);
	assert_int_equal(s.stats.head_expired, 0);
}

static void expect_bad_listen(const char *listen)
{
	struct httpd_route route = { "/metrics", on_health, NULL };
	struct httpd_opts o = {
		.sz = sizeof(o), .listen = listen, .routes = &route, .nr_routes = 1
	};
	struct httpd *h = (struct httpd *)&o;
	char errbuf[256], want[256];

	assert_int_equal(httpd__start(&h, &o, errbuf, sizeof(errbuf)), -EINVAL);
	assert_null(h);
	snprintf(
		want, sizeof(want),
		"invalid listen address '%s': expected IPV4:PORT or [IPV6]:PORT, e.g. 127.0.0.1:9464 or [::1]:9464",
		listen);
	assert_string_equal(errbuf, want);
}

static void test_httpd__bad_listen(void **state)
{
	static const char *const bad[] = {
		"",
		"localhost:9464",
		"127.0.0.1",
		"127.0.0.1:",
		"127.0.0.1:65536",
		"127.0.0.1:-1",
		"127.0.0.1:+80",
		"127.0.0.1:94a",
		"127.0.0.1:123456",
		"127.0.0.1:9464 ",
		" 127.0.0.1:9464",
		"1.2.3:80",
		"1.2.3.4.5:80",
		"01.2.3.4:80",
		"::1:9464",
		"[::1]",
		"[::1]:",
		"[::1]9464",
		"[127.0.0.1]:80",
		"[fe80::1%lo]:80",
		"[::1]:80:80",
		"*:9464",
		":9464",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		expect_bad_listen(bad[i]);
		/* The command line's own check agrees with httpd__start. */
		assert_int_equal(httpd__check_listen(bad[i]), -EINVAL);
	}
	assert_int_equal(httpd__check_listen("127.0.0.1:0"), 0);
	assert_int_equal(httpd__check_listen("[::1]:65535"), 0);
}

static void test_httpd__bad_opts(void **state)
{
	struct httpd_route route = { "/metrics", on_health, NULL };
	struct httpd_route relative = { "metrics", on_health, NULL };
	struct httpd_route nofn = { "/metrics", NULL, NULL };
	struct httpd_opts o = { .sz = sizeof(o), .listen = "127.0.0.1:0" };
	struct httpd *h;
	char errbuf[256];

	(void)state;
	assert_int_equal(httpd__start(&h, NULL, errbuf, sizeof(errbuf)), -EINVAL);
	assert_string_equal(errbuf, "httpd: no routes to serve");
	assert_int_equal(httpd__start(&h, &o, NULL, 0), -EINVAL);
	o.routes = &relative;
	o.nr_routes = 1;
	assert_int_equal(httpd__start(&h, &o, errbuf, sizeof(errbuf)), -EINVAL);
	assert_non_null(strstr(errbuf, "route 0"));
	o.routes = &nofn;
	assert_int_equal(httpd__start(&h, &o, errbuf, sizeof(errbuf)), -EINVAL);
	o.routes = &route;
	o.sz = offsetof(struct httpd_opts, routes); /* too small to hold the routes */
	assert_int_equal(httpd__start(&h, &o, errbuf, sizeof(errbuf)), -EINVAL);
	/* Fields past a shorter sz take their defaults. */
	o.sz = offsetof(struct httpd_opts, max_connections);
	o.max_per_ip = 12345;
	assert_int_equal(httpd__start(&h, &o, errbuf, sizeof(errbuf)), 0);
	httpd__stop(h);
	httpd__stop(NULL);
}

static void test_httpd__port_in_use(void **state)
{
	struct server *s = *state;
	struct httpd_route route = { "/metrics", on_health, NULL };
	struct httpd_opts o = { .sz = sizeof(o), .routes = &route, .nr_routes = 1 };
	char listen[64], errbuf[256], want[256];
	struct httpd *h;
	struct reply r;

	snprintf(listen, sizeof(listen), "127.0.0.1:%u", s->port);
	o.listen = listen;
	assert_int_equal(httpd__start(&h, &o, errbuf, sizeof(errbuf)), -EADDRINUSE);
	snprintf(want, sizeof(want),
		 "cannot listen on %s: Address already in use; choose another with --listen",
		 listen);
	assert_string_equal(errbuf, want);
	/* The first server is unharmed. */
	exchange(s->port, GET("/metrics"), &r);
	assert_int_equal(r.status, 200);
}

static void test_httpd__ipv6(void **state)
{
	struct server s;
	struct reply r;
	int err, fd;

	(void)state;
	err = server_start(&s, "[::1]:0", NULL);
	if (err == -EADDRNOTAVAIL || err == -EAFNOSUPPORT) {
		/* Hosts without IPv6 loopback exist even in CI containers. */
		fprintf(stderr, "SKIP %s: no IPv6 loopback (%s)\n", __func__, strerror(-err));
		skip();
	}
	assert_int_equal(err, 0);
	fd = dial(AF_INET6, NULL, "::1", s.port);
	assert_true(fd >= 0);
	exchange_fd(fd, GET("/metrics"), strlen(GET("/metrics")), &r);
	close(fd);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, strlen(METRICS_BODY));
	server_stop(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_httpd__get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_httpd__keep_alive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_httpd__head, setup, teardown),
		cmocka_unit_test_setup_teardown(test_httpd__unknown_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_httpd__method_not_allowed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_httpd__body_rejected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_httpd__handler_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_httpd__header_too_large, setup, teardown),
		cmocka_unit_test_setup_teardown(test_httpd__flood_per_ip, setup, teardown),
		cmocka_unit_test(test_httpd__busy_not_displaced),
		cmocka_unit_test(test_httpd__total_limit),
		cmocka_unit_test(test_httpd__head_deadline),
		cmocka_unit_test(test_httpd__answer_deadline),
		cmocka_unit_test(test_httpd__idle_timeout),
		cmocka_unit_test(test_httpd__bad_listen),
		cmocka_unit_test(test_httpd__bad_opts),
		cmocka_unit_test_setup_teardown(test_httpd__port_in_use, setup, teardown),
		cmocka_unit_test(test_httpd__ipv6),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>

#include "serve/connlimit.h"
#include "serve/httpd.h"

/* An opts field, or def when it is 0 or beyond the caller's opts->sz. */
#define OPT(o, f, def) \
	((o)->sz >= offsetof(struct httpd_opts, f) + sizeof((o)->f) && (o)->f ? (o)->f : (def))

#define TEXT_PLAIN "text/plain; charset=utf-8"
#define ALLOW "GET, HEAD"
/* Room in libmicrohttpd's per-connection pool beyond the request headers. */
#define POOL_SLACK 4096
#define LISTEN_BACKLOG 128
#define NS_PER_SEC UINT64_C(1000000000)
#define NS_PER_MS UINT64_C(1000000)

/*
 * libmicrohttpd's own connection limit is max_connections + CLOSING_SLACK:
 * a connection httpd gave up (shut down) counts there until libmicrohttpd
 * closes it, on the loop's next turn, and at its limit libmicrohttpd stops
 * accepting, so accept_policy would not be asked to displace anything.
 * One per connection: every one may be given up at once (all past their
 * head deadline) and as many new ones taken before any is closed.
 */
#define CLOSING_SLACK(max) (max)

struct httpd {
	struct MHD_Daemon *mhd;
	struct connlimit *limit; /* the limits and deadlines, kept here (see accept_policy) */
	struct httpd_route *routes;
	size_t nr_routes;
	size_t max_header_bytes;
	uint16_t port;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

union sockaddr_any {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
};

/* "IPV4:PORT" or "[IPV6]:PORT", digits only in the port. */
static int parse_listen(const char *s, union sockaddr_any *a, socklen_t *alen)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon, *port, *c;
	unsigned long v = 0;
	size_t n;

	memset(a, 0, sizeof(*a));
	if (s[0] == '[') {
		colon = strstr(s, "]:");
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - (s + 1));
		port = colon + 2;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - s);
		port = colon + 1;
	}
	if (!n || n >= sizeof(host) || !*port || strlen(port) > 5)
		return -EINVAL;
	for (c = port; *c; c++) {
		if (*c < '0' || *c > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(*c - '0');
	}
	if (v > 65535)
		return -EINVAL;
	memcpy(host, s[0] == '[' ? s + 1 : s, n);
	host[n] = '\0';
	if (s[0] == '[') {
		if (inet_pton(AF_INET6, host, &a->in6.sin6_addr) != 1)
			return -EINVAL;
		a->in6.sin6_family = AF_INET6;
		a->in6.sin6_port = htons((uint16_t)v);
		*alen = sizeof(a->in6);
	} else {
		if (inet_pton(AF_INET, host, &a->in4.sin_addr) != 1)
			return -EINVAL;
		a->in4.sin_family = AF_INET;
		a->in4.sin_port = htons((uint16_t)v);
		*alen = sizeof(a->in4);
	}
	return 0;
}

int httpd__check_listen(const char *addr)
{
	union sockaddr_any a;
	socklen_t alen;

	return parse_listen(addr, &a, &alen);
}

static int listen_on(const union sockaddr_any *a, socklen_t alen, uint16_t *port)
{
	union sockaddr_any bound;
	socklen_t blen = sizeof(bound);
	int fd, one = 1, err;

	fd = socket(a->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A restarted daemon must not wait out its old connections' TIME_WAIT. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) || bind(fd, &a->sa, alen) ||
	    listen(fd, LISTEN_BACKLOG) || getsockname(fd, &bound.sa, &blen)) {
		err = -errno;
		close(fd);
		return err;
	}
	*port = ntohs(a->sa.sa_family == AF_INET6 ? bound.in6.sin6_port : bound.in4.sin_port);
	return fd;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status,
			     const char *content_type, char *body, size_t len, bool allow)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (body)
		r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	else
		r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) != MHD_YES ||
	    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") != MHD_YES ||
	    (allow && MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, ALLOW) != MHD_YES)) {
		MHD_destroy_response(r);
		return MHD_NO;
	}
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned int status,
				  const char *text, bool allow)
{
	char *body = strdup(text);

	if (!body)
		return MHD_NO;
	return reply(conn, status, TEXT_PLAIN, body, strlen(text), allow);
}

static bool has_body(struct MHD_Connection *conn, size_t upload_size)
{
	const char *cl =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	if (upload_size ||
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		return true;
	return cl && strcmp(cl, "0");
}

static enum MHD_Result add_field(void *cls, enum MHD_ValueKind kind, const char *key,
				 size_t key_size, const char *value, size_t value_size)
{
	size_t *total = cls;

	/* "key: value\r\n", or "key=value&" in the query */
	*total += key_size + value_size + (kind == MHD_HEADER_KIND ? 4 : 2);
	(void)key;
	(void)value;
	return MHD_YES;
}

/* The request line and header fields as sent, give or take a few bytes. */
static size_t request_head_bytes(struct MHD_Connection *conn, const char *url, const char *method,
				 const char *version)
{
	size_t total = strlen(method) + strlen(url) + strlen(version) + 6;

	MHD_get_connection_values_n(conn, MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND, add_field,
				    &total);
	return total;
}

/* The connection's entry in h->limit (NULL: not tracked, see on_connection). */
static struct connlimit_conn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *info =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return info ? info->socket_context : NULL;
}

/*
 * First called once a request's headers are in: refusals are answered
 * then, so libmicrohttpd never reads a body (it closes the connection
 * instead). A request we serve is answered on the second call, since an
 * answer on the first also costs the connection its keep-alive.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct httpd *h = cls;
	const struct httpd_route *route = NULL;
	struct httpd_response resp = { 0 };
	struct httpd_request req;
	size_t i;
	int err;

	(void)upload_data;
	connlimit__set_busy(h->limit, conn_of(conn), true, now_ns());
	/* MHD's pool refuses far larger heads by itself, with its own 431. */
	if (!*con_cls && request_head_bytes(conn, url, method, version) > h->max_header_bytes)
		return reply_text(conn, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE,
				  "request header fields too large\n", false);
	for (i = 0; i < h->nr_routes && !route; i++)
		if (!strcmp(url, h->routes[i].path))
			route = &h->routes[i];
	if (!route)
		return reply_text(conn, MHD_HTTP_NOT_FOUND, "not found\n", false);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n", true);
	if (has_body(conn, *upload_data_size))
		return reply_text(conn, MHD_HTTP_CONTENT_TOO_LARGE, "no request body allowed\n",
				  false);
	if (!*con_cls) {
		*con_cls = h;
		return MHD_YES;
	}

	req.path = url;
	req.method = method;
	req.accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	err = route->fn(route->ctx, &req, &resp);
	if (!err && !resp.status)
		resp.status = MHD_HTTP_OK;
	if (err || resp.status < 100 || resp.status > 599) {
		free(resp.body);
		return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error\n", false);
	}
	return reply(conn, (unsigned int)resp.status, resp.content_type ?: TEXT_PLAIN, resp.body,
		     resp.body ? resp.len : 0, false);
}

/* A request ends: answered, or its connection closed under it. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	struct httpd *h = cls;

	(void)con_cls;
	(void)why;
	connlimit__set_busy(h->limit, conn_of(conn), false, now_ns());
}

static socklen_t sockaddr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/*
 * Every connection is in h->limit from its start to its close. A shut
 * down socket reads end-of-file, so libmicrohttpd closes the connection
 * on its next run, as if the peer had; the peer sees the close.
 */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
			  enum MHD_ConnectionNotificationCode code)
{
	const union MHD_ConnectionInfo *fd, *addr;
	struct httpd *h = cls;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		connlimit__remove(h->limit, *socket_ctx);
		*socket_ctx = NULL;
		return;
	}
	fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	addr = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!fd)
		return;
	if (addr && addr->client_addr)
		*socket_ctx =
			connlimit__add(h->limit, addr->client_addr, sockaddr_len(addr->client_addr),
				       fd->connect_fd, now_ns());
	/* Not reached (the table holds libmicrohttpd's limit): refuse what is not counted. */
	if (!*socket_ctx)
		shutdown(fd->connect_fd, SHUT_RDWR);
}

/*
 * The per-address and total limits. libmicrohttpd's own
 * (PER_IP_CONNECTION_LIMIT, CONNECTION_LIMIT) refuse an address, or stop
 * accepting, until a connection closes, and connections left silent, or
 * trickling a byte at a time, close only at the idle timeout or never:
 * one address that opened and abandoned connections was refused for 10 s,
 * and 64 trickling ones from 8 addresses kept every new client waiting in
 * the backlog. Here a new connection displaces the longest idle one of its
 * address, or at the total limit of all, instead (connlimit.h); busy ones
 * are never displaced.
 */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *sa, socklen_t len)
{
	struct httpd *h = cls;
	int fd;

	if (!connlimit__admit(h->limit, sa, len, &fd))
		return MHD_NO;
	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
	return MHD_YES;
}

/* Bytes in fd's receive queue: libmicrohttpd has yet to read them. */
static size_t unread_bytes(int fd)
{
	int n = 0;

	return !ioctl(fd, FIONREAD, &n) && n > 0 ? (size_t)n : 0;
}

/* Paths match as sent: no %xx decoding, so no "/metrics%00" alias of "/metrics". */
static size_t no_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	(void)cls;
	(void)conn;
	return strlen(s);
}

/* Connection-level noise (resets, limits) is not the daemon's to print. */
static void on_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	(void)fmt;
	(void)ap;
}

static void err_line(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void err_line(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errbuf || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

static void free_routes(struct httpd_route *routes, size_t nr)
{
	size_t i;

	for (i = 0; routes && i < nr; i++)
		free((char *)routes[i].path);
	free(routes);
}

int httpd__start(struct httpd **out, const struct httpd_opts *opts, char *errbuf, size_t errlen)
{
	const char *addr;
	union sockaddr_any sa;
	socklen_t salen;
	struct connlimit_limits limits = { 0 };
	struct httpd *h = NULL;
	size_t i, header_bytes;
	int fd = -1, err;

	*out = NULL;
	err_line(errbuf, errlen, "%s", "");
	if (!opts || opts->sz < offsetof(struct httpd_opts, nr_routes) + sizeof(size_t) ||
	    !opts->routes || !opts->nr_routes) {
		err_line(errbuf, errlen, "httpd: no routes to serve");
		return -EINVAL;
	}
	addr = OPT(opts, listen, HTTPD_DEFAULT_LISTEN);
	if (parse_listen(addr, &sa, &salen)) {
		err_line(
			errbuf, errlen,
			"invalid listen address '%s': expected IPV4:PORT or [IPV6]:PORT, e.g. %s or [::1]:9464",
			addr, HTTPD_DEFAULT_LISTEN);
		return -EINVAL;
	}
	header_bytes = OPT(opts, max_header_bytes, 8192);
	if (header_bytes > SIZE_MAX / 2) {
		err_line(errbuf, errlen, "httpd: max_header_bytes %zu is too large", header_bytes);
		return -EINVAL;
	}

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->max_header_bytes = header_bytes;
	limits.max_conns = OPT(opts, max_connections, 64U);
	limits.max_per_addr = OPT(opts, max_per_ip, 8U);
	limits.slack = CLOSING_SLACK(limits.max_conns);
	limits.head_ns = OPT(opts, head_timeout_s, 5U) * NS_PER_SEC;
	limits.answer_ns = OPT(opts, answer_timeout_s, 10U) * NS_PER_SEC;
	limits.unread = unread_bytes;
	err = connlimit__new(&h->limit, &limits);
	if (err) {
		if (err == -EINVAL)
			err_line(errbuf, errlen, "httpd: max_connections %u is too large",
				 limits.max_conns);
		goto cleanup;
	}
	h->routes = calloc(opts->nr_routes, sizeof(*h->routes));
	if (!h->routes) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < opts->nr_routes; i++) {
		const struct httpd_route *r = &opts->routes[i];

		if (!r->path || r->path[0] != '/' || !r->fn) {
			err_line(errbuf, errlen,
				 "httpd: route %zu needs a path starting with '/' and a handler",
				 i);
			err = -EINVAL;
			goto cleanup;
		}
		h->routes[i] = *r;
		h->routes[i].path = strdup(r->path);
		h->nr_routes = i + 1;
		if (!h->routes[i].path) {
			err = -ENOMEM;
			goto cleanup;
		}
	}

	fd = listen_on(&sa, salen, &h->port);
	if (fd < 0) {
		err = fd;
		err_line(errbuf, errlen, "cannot listen on %s: %s; choose another with --listen",
			 addr, strerror(-err));
		goto cleanup;
	}
	/* MHD_USE_ERROR_LOG only routes MHD's messages to on_log. */
	errno = 0;
	h->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, accept_policy, h,
				  on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_log, NULL,
				  MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
				  limits.max_conns + limits.slack, MHD_OPTION_NOTIFY_CONNECTION,
				  on_connection, h, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				  MHD_OPTION_CONNECTION_TIMEOUT, OPT(opts, timeout_s, 10U),
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, header_bytes + POOL_SLACK,
				  MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL, MHD_OPTION_END);
	if (!h->mhd) {
		err = errno ? -errno : -EIO;
		/*
		 * Whether MHD closed the socket it was handed depends on where it
		 * failed; nothing else runs here to reuse the number meanwhile.
		 */
		if (fcntl(fd, F_GETFD) >= 0)
			close(fd);
		err_line(errbuf, errlen, "cannot serve HTTP on %s: %s", addr, strerror(-err));
		goto cleanup;
	}
	*out = h;
	return 0;

cleanup:
	connlimit__free(h->limit);
	free_routes(h->routes, h->nr_routes);
	free(h);
	return err;
}

uint16_t httpd__port(const struct httpd *h)
{
	return h->port;
}

int httpd__fd(const struct httpd *h)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);

	return info ? info->epoll_fd : -EINVAL;
}

static unsigned int nr_connections(const struct httpd *h)
{
	const union MHD_DaemonInfo *info =
		MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	return info ? info->num_connections : 0;
}

/*
 * Connections past their deadline are shut down first, so this very run
 * closes them. libmicrohttpd drops its listening socket from the epoll set
 * at its connection limit and adds it back only at the start of a run, so
 * a run that closed connections is followed by another: otherwise a client
 * waiting in the backlog would not wake the caller's poll.
 */
int httpd__run(struct httpd *h)
{
	unsigned int before;
	int fd;

	while ((fd = connlimit__expire(h->limit, now_ns())) >= 0)
		shutdown(fd, SHUT_RDWR);
	/* Ends: the count falls on every repeat. */
	do {
		before = nr_connections(h);
		if (MHD_run(h->mhd) != MHD_YES)
			return -EIO;
	} while (nr_connections(h) < before);
	return 0;
}

/*
 * Seen here: after a flood of half-open connections from one address,
 * libmicrohttpd 0.9.75 (epoll mode) sometimes noticed that the peers had
 * closed only at the idle timeout (10 s). An MHD_run at least once a
 * second bounds that to a second; an idle daemon wakes once a second for
 * it. (Such connections no longer keep their address out meanwhile:
 * accept_policy displaces idle ones.)
 */
#define MAX_SLEEP_MS 1000

int httpd__timeout_ms(const struct httpd *h)
{
	uint64_t next = connlimit__next_deadline(h->limit), now = now_ns(), wait;
	MHD_UNSIGNED_LONG_LONG ms;

	if (MHD_get_timeout(h->mhd, &ms) != MHD_YES || ms > MAX_SLEEP_MS)
		ms = MAX_SLEEP_MS;
	/* Rounded up: woken before the deadline, the run would find nothing to do. */
	wait = next <= now ? 0 : (next - now + NS_PER_MS - 1) / NS_PER_MS;
	return (int)(wait < ms ? wait : ms);
}

void httpd__stats(const struct httpd *h, struct httpd_stats *st)
{
	struct connlimit_stats cs;

	connlimit__stats(h->limit, &cs);
	st->connections = connlimit__total(h->limit);
	st->shed_addr = cs.shed_addr;
	st->shed_total = cs.shed_total;
	st->refused = cs.refused;
	st->head_expired = cs.head_expired;
	st->answer_expired = cs.answer_expired;
}

void httpd__stop(struct httpd *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->mhd); /* closes every connection, removing each from h->limit */
	connlimit__free(h->limit);
	free_routes(h->routes, h->nr_routes);
	free(h);
}

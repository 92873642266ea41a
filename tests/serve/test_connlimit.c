// SPDX-License-Identifier: MIT
/* The per-address connection table of httpd, without sockets: fds are labels here. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "serve/connlimit.h"

static struct sockaddr_in v4(const char *addr, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	assert_int_equal(inet_pton(AF_INET, addr, &a.sin_addr), 1);
	return a;
}

static struct sockaddr_in6 v6(const char *addr, uint16_t port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

	assert_int_equal(inet_pton(AF_INET6, addr, &a.sin6_addr), 1);
	return a;
}

#define SA(a) ((const struct sockaddr *)&(a)), sizeof(a)

/* admit, then add with fd: the slot; *evicted gets what admit displaced. */
static struct connlimit_conn *open_conn(struct connlimit *t, const struct sockaddr *sa,
					socklen_t len, int fd, int *evicted)
{
	struct connlimit_conn *c;

	assert_true(connlimit__admit(t, sa, len, evicted));
	c = connlimit__add(t, sa, len, fd);
	assert_non_null(c);
	return c;
}

static void test_connlimit__bad_args(void **state)
{
	struct connlimit *t = (struct connlimit *)state;

	assert_int_equal(connlimit__new(&t, 0, 8), -EINVAL);
	assert_null(t);
	assert_int_equal(connlimit__new(&t, 64, 0), -EINVAL);
	assert_null(t);
	connlimit__free(NULL);
}

/*
 * Up to the limit nothing is displaced; past it, the address's longest
 * idle connection is, and stops counting at once; other addresses and
 * ports of the same address are unaffected or alike.
 */
static void test_connlimit__displaces_oldest_idle(void **state)
{
	struct sockaddr_in a = v4("10.0.0.1", 1000), a2 = v4("10.0.0.1", 2000),
			   b = v4("10.0.0.2", 1000);
	struct connlimit_conn *c[4], *cb;
	struct connlimit *t;
	int ev;

	(void)state;
	assert_int_equal(connlimit__new(&t, 16, 3), 0);
	c[0] = open_conn(t, SA(a), 10, &ev);
	assert_int_equal(ev, -1);
	c[1] = open_conn(t, SA(a2), 11, &ev); /* another port, the same address */
	assert_int_equal(ev, -1);
	cb = open_conn(t, SA(b), 20, &ev);
	assert_int_equal(ev, -1);
	c[2] = open_conn(t, SA(a), 12, &ev);
	assert_int_equal(ev, -1);
	assert_int_equal(connlimit__count(t, SA(a)), 3);
	assert_int_equal(connlimit__count(t, SA(b)), 1);

	/* At the limit: 10 is the oldest idle one of 10.0.0.1. */
	c[3] = open_conn(t, SA(a2), 13, &ev);
	assert_int_equal(ev, 10);
	assert_int_equal(connlimit__count(t, SA(a)), 3);
	/* Displaced but not yet removed: not displaced twice. */
	assert_true(connlimit__admit(t, SA(a), &ev));
	assert_int_equal(ev, 11);
	connlimit__remove(t, c[0]);
	connlimit__remove(t, c[1]);
	assert_int_equal(connlimit__count(t, SA(a)), 2);
	assert_int_equal(connlimit__count(t, SA(b)), 1);
	connlimit__remove(t, cb);
	assert_int_equal(connlimit__count(t, SA(b)), 0);
	connlimit__free(t);
}

/*
 * A busy connection is never displaced; with all of an address's
 * connections busy it is refused. A connection whose request ended is
 * the newest idle one, so an idle one older than it goes first.
 */
static void test_connlimit__busy_kept(void **state)
{
	struct sockaddr_in6 a = v6("2001:db8::1", 1), b = v6("2001:db8::2", 1);
	struct connlimit_conn *c0, *c1;
	struct connlimit *t;
	int ev;

	(void)state;
	assert_int_equal(connlimit__new(&t, 8, 2), 0);
	c0 = open_conn(t, SA(a), 30, &ev);
	c1 = open_conn(t, SA(a), 31, &ev);
	connlimit__set_busy(t, c0, true);
	connlimit__set_busy(t, c1, true);
	ev = 99;
	assert_false(connlimit__admit(t, SA(a), &ev));
	assert_int_equal(ev, -1);
	assert_true(connlimit__admit(t, SA(b), &ev));
	assert_int_equal(ev, -1);

	/* c0's request ended first, then c1's: c0 has been idle longer. */
	connlimit__set_busy(t, c0, false);
	connlimit__set_busy(t, c1, false);
	assert_true(connlimit__admit(t, SA(a), &ev));
	assert_int_equal(ev, 30);
	connlimit__remove(t, c0);

	/* c1 busy again and back to idle: newer than 32, opened meanwhile. */
	c0 = open_conn(t, SA(a), 32, &ev);
	assert_int_equal(ev, -1);
	connlimit__set_busy(t, c1, true);
	connlimit__set_busy(t, c1, false);
	assert_true(connlimit__admit(t, SA(a), &ev));
	assert_int_equal(ev, 32);
	/* Marking idle what is idle does not make it newer than 33. */
	connlimit__remove(t, c0);
	c0 = open_conn(t, SA(a), 33, &ev);
	assert_int_equal(ev, -1);
	connlimit__set_busy(t, c1, false);
	assert_true(connlimit__admit(t, SA(a), &ev));
	assert_int_equal(ev, 31);
	connlimit__free(t);
}

/* Each family's address in full: v4 and its v4-mapped v6 form are two addresses. */
static void test_connlimit__addresses(void **state)
{
	struct sockaddr_in a = v4("192.0.2.7", 1);
	struct sockaddr_in6 m = v6("::ffff:192.0.2.7", 1), x = v6("2001:db8::7", 1),
			    y = v6("2001:db8::7:0", 1);
	struct connlimit *t;
	int ev;

	(void)state;
	assert_int_equal(connlimit__new(&t, 8, 1), 0);
	open_conn(t, SA(a), 1, &ev);
	open_conn(t, SA(m), 2, &ev);
	assert_int_equal(ev, -1);
	open_conn(t, SA(x), 3, &ev);
	open_conn(t, SA(y), 4, &ev);
	assert_int_equal(ev, -1);
	assert_int_equal(connlimit__count(t, SA(a)), 1);
	assert_int_equal(connlimit__count(t, SA(x)), 1);
	/* A short length is no address: all such share one entry. */
	assert_int_equal(connlimit__count(t, (const struct sockaddr *)&x, sizeof(a)), 0);
	open_conn(t, (const struct sockaddr *)&x, sizeof(a), 5, &ev);
	assert_int_equal(ev, -1);
	open_conn(t, NULL, 0, 6, &ev);
	assert_int_equal(ev, 5);
	connlimit__free(t);
}

/* A full table adds nothing; NULL slots are ignored. */
static void test_connlimit__full(void **state)
{
	struct sockaddr_in a = v4("10.0.0.1", 1), b = v4("10.0.0.2", 1);
	struct connlimit_conn *c;
	struct connlimit *t;
	int ev;

	(void)state;
	assert_int_equal(connlimit__new(&t, 2, 8), 0);
	c = open_conn(t, SA(a), 1, &ev);
	open_conn(t, SA(b), 2, &ev);
	assert_null(connlimit__add(t, SA(a), 3));
	connlimit__remove(t, c);
	assert_non_null(connlimit__add(t, SA(a), 3));
	connlimit__remove(t, NULL);
	connlimit__set_busy(t, NULL, true);
	connlimit__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connlimit__bad_args),
		cmocka_unit_test(test_connlimit__displaces_oldest_idle),
		cmocka_unit_test(test_connlimit__busy_kept),
		cmocka_unit_test(test_connlimit__addresses),
		cmocka_unit_test(test_connlimit__full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * The connection table of httpd, without sockets or a clock: fds are labels
 * here, and times are given (T0 and seconds after it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
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
#define NS_PER_SEC UINT64_C(1000000000)
#define T0 (1000 * NS_PER_SEC)
#define AT(sec) (T0 + (uint64_t)((sec)*1e9))

/* A table of max_conns (slack as many), per_addr an address, no deadlines. */
static struct connlimit *table(unsigned int max_conns, unsigned int per_addr)
{
	struct connlimit_limits l = { .max_conns = max_conns,
				      .max_per_addr = per_addr,
				      .slack = max_conns };
	struct connlimit *t;

	assert_int_equal(connlimit__new(&t, &l), 0);
	return t;
}

/* admit, then add with fd at when: the slot; *evicted gets what admit displaced. */
static struct connlimit_conn *open_at(struct connlimit *t, const struct sockaddr *sa, socklen_t len,
				      int fd, uint64_t when, int *evicted)
{
	struct connlimit_conn *c;

	assert_true(connlimit__admit(t, sa, len, evicted));
	c = connlimit__add(t, sa, len, fd, when);
	assert_non_null(c);
	return c;
}

static struct connlimit_conn *open_conn(struct connlimit *t, const struct sockaddr *sa,
					socklen_t len, int fd, int *evicted)
{
	return open_at(t, sa, len, fd, T0, evicted);
}

static void test_connlimit__bad_args(void **state)
{
	struct connlimit_limits l = { .max_conns = 0, .max_per_addr = 8 };
	struct connlimit *t = (struct connlimit *)state;

	assert_int_equal(connlimit__new(&t, &l), -EINVAL);
	assert_null(t);
	l.max_conns = 64;
	l.max_per_addr = 0;
	assert_int_equal(connlimit__new(&t, &l), -EINVAL);
	assert_null(t);
	l.max_per_addr = 8;
	l.slack = UINT_MAX - 63;
	assert_int_equal(connlimit__new(&t, &l), -EINVAL);
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
	t = table(16, 3);
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
	t = table(8, 2);
	c0 = open_conn(t, SA(a), 30, &ev);
	c1 = open_conn(t, SA(a), 31, &ev);
	connlimit__set_busy(t, c0, true, T0);
	connlimit__set_busy(t, c1, true, T0);
	ev = 99;
	assert_false(connlimit__admit(t, SA(a), &ev));
	assert_int_equal(ev, -1);
	assert_true(connlimit__admit(t, SA(b), &ev));
	assert_int_equal(ev, -1);

	/* c0's request ended first, then c1's: c0 has been idle longer. */
	connlimit__set_busy(t, c0, false, T0);
	connlimit__set_busy(t, c1, false, T0);
	assert_true(connlimit__admit(t, SA(a), &ev));
	assert_int_equal(ev, 30);
	connlimit__remove(t, c0);

	/* c1 busy again and back to idle: newer than 32, opened meanwhile. */
	c0 = open_conn(t, SA(a), 32, &ev);
	assert_int_equal(ev, -1);
	connlimit__set_busy(t, c1, true, T0);
	connlimit__set_busy(t, c1, false, T0);
	assert_true(connlimit__admit(t, SA(a), &ev));
	assert_int_equal(ev, 32);
	/* Marking idle what is idle does not make it newer than 33. */
	connlimit__remove(t, c0);
	c0 = open_conn(t, SA(a), 33, &ev);
	assert_int_equal(ev, -1);
	connlimit__set_busy(t, c1, false, T0);
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
	t = table(8, 1);
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

/*
 * Given up connections keep their slots until removed: the table holds
 * max_conns + slack, past which nothing is added. NULL slots are ignored.
 */
static void test_connlimit__full(void **state)
{
	struct connlimit_limits l = { .max_conns = 2, .max_per_addr = 8, .slack = 1 };
	struct sockaddr_in a = v4("10.0.0.1", 1), b = v4("10.0.0.2", 1);
	struct connlimit_conn *c;
	struct connlimit *t;
	int ev;

	(void)state;
	assert_int_equal(connlimit__new(&t, &l), 0);
	c = open_conn(t, SA(a), 1, &ev);
	open_conn(t, SA(b), 2, &ev);
	open_conn(t, SA(b), 3, &ev);
	assert_int_equal(ev, 1);
	assert_true(connlimit__admit(t, SA(a), &ev));
	assert_int_equal(ev, 2);
	assert_null(connlimit__add(t, SA(a), 4, T0));
	connlimit__remove(t, c);
	assert_non_null(connlimit__add(t, SA(a), 4, T0));
	assert_int_equal(connlimit__total(t), 2);
	connlimit__remove(t, NULL);
	connlimit__set_busy(t, NULL, true, T0);
	connlimit__free(t);
}

/*
 * At the total limit a new address displaces the idle connection that has
 * waited longest for a request head, of any address: opened first, or
 * answered longest ago (a connection answered just now is the newest idle
 * one, whenever it opened). Busy ones are never displaced; with all of
 * them busy the new one is refused. An address at its own limit displaces
 * its own, even with older idle ones elsewhere.
 */
static void test_connlimit__sheds_oldest_idle(void **state)
{
	struct sockaddr_in a = v4("10.0.0.1", 1), b = v4("10.0.0.2", 1), c = v4("10.0.0.3", 1),
			   d = v4("10.0.0.4", 1);
	struct connlimit_conn *a1, *a2, *b1, *b2, *c1, *d1, *d2;
	struct connlimit_stats st;
	struct connlimit *t;
	int ev;

	(void)state;
	t = table(4, 2);
	a1 = open_at(t, SA(a), 11, AT(1), &ev);
	a2 = open_at(t, SA(a), 12, AT(2), &ev);
	b1 = open_at(t, SA(b), 21, AT(3), &ev);
	b2 = open_at(t, SA(b), 22, AT(4), &ev);
	assert_int_equal(ev, -1);
	assert_int_equal(connlimit__total(t), 4);

	/* Full: 11 opened first. It stops counting at once. */
	c1 = open_at(t, SA(c), 31, AT(5), &ev);
	assert_int_equal(ev, 11);
	assert_int_equal(connlimit__total(t), 4);
	assert_int_equal(connlimit__count(t, SA(a)), 1);
	connlimit__remove(t, a1);

	/* 12 busy, then answered at 7 s: after 21, 22 and 31 as the longest idle. */
	connlimit__set_busy(t, a2, true, AT(6));
	connlimit__set_busy(t, a2, false, AT(7));
	d1 = open_at(t, SA(d), 41, AT(8), &ev);
	assert_int_equal(ev, 21);
	connlimit__remove(t, b1);
	d2 = open_at(t, SA(d), 42, AT(9), &ev);
	assert_int_equal(ev, 22);
	connlimit__remove(t, b2);
	/* 10.0.0.4 at its limit (2) displaces its own 41, not the older 31 or 12. */
	assert_true(connlimit__admit(t, SA(d), &ev));
	assert_int_equal(ev, 41);
	connlimit__remove(t, d1);
	a1 = connlimit__add(t, SA(a), 13, AT(10));
	assert_non_null(a1);
	assert_int_equal(connlimit__total(t), 4);

	/* 31 (opened at 5 s), then 12 (answered at 7 s); 42 and 13, busy, stay. */
	connlimit__set_busy(t, a1, true, AT(11));
	connlimit__set_busy(t, d2, true, AT(11));
	assert_true(connlimit__admit(t, SA(b), &ev));
	assert_int_equal(ev, 31);
	connlimit__remove(t, c1);
	b1 = connlimit__add(t, SA(b), 23, AT(12));
	connlimit__set_busy(t, b1, true, AT(12));
	assert_true(connlimit__admit(t, SA(c), &ev));
	assert_int_equal(ev, 12);
	connlimit__stats(t, &st);
	assert_int_equal(st.shed_total, 5);
	assert_int_equal(st.shed_addr, 1);
	assert_int_equal(st.refused, 0);
	connlimit__free(t);
}

/* Every connection busy at the total limit: refused, counted, nothing displaced. */
static void test_connlimit__all_busy_refused(void **state)
{
	struct sockaddr_in a = v4("10.0.0.1", 1), b = v4("10.0.0.2", 1);
	struct connlimit_conn *c[3];
	struct connlimit_stats st;
	struct connlimit *t;
	int ev, i;

	(void)state;
	t = table(3, 8);
	for (i = 0; i < 3; i++) {
		c[i] = open_at(t, SA(a), i, AT(i), &ev);
		connlimit__set_busy(t, c[i], true, AT(5));
	}
	ev = 99;
	assert_false(connlimit__admit(t, SA(b), &ev));
	assert_int_equal(ev, -1);
	assert_false(connlimit__admit(t, SA(a), &ev));
	assert_int_equal(connlimit__total(t), 3);
	/* One answered: it goes for the next. */
	connlimit__set_busy(t, c[1], false, AT(6));
	assert_true(connlimit__admit(t, SA(b), &ev));
	assert_int_equal(ev, 1);
	connlimit__stats(t, &st);
	assert_int_equal(st.refused, 2);
	assert_int_equal(st.shed_total, 1);
	connlimit__free(t);
}

/* Bytes of input not yet read on each label (fd), for test_connlimit__unread_last. */
static size_t unread_bytes[8];

static size_t fake_unread(int fd)
{
	return fd >= 0 && fd < 8 ? unread_bytes[fd] : 0;
}

/*
 * Idle connections with input not yet read go last, whatever their age
 * (it may be a whole request head, displaced by a client on its address
 * that reconnects at once), the one with the least first (a trickled byte
 * before a head), then the longest idle. Only busy ones are never given up.
 */
static void test_connlimit__unread_last(void **state)
{
	struct connlimit_limits l = {
		.max_conns = 3, .max_per_addr = 2, .slack = 5, .unread = fake_unread
	};
	struct sockaddr_in a = v4("10.0.0.1", 1), b = v4("10.0.0.2", 1), c = v4("10.0.0.3", 1),
			   d = v4("10.0.0.4", 1);
	struct connlimit_conn *a1, *c6;
	struct connlimit_stats st;
	struct connlimit *t;
	int ev;

	(void)state;
	memset(unread_bytes, 0, sizeof(unread_bytes));
	assert_int_equal(connlimit__new(&t, &l), 0);
	a1 = open_at(t, SA(a), 1, AT(1), &ev);
	open_at(t, SA(a), 2, AT(2), &ev);
	open_at(t, SA(b), 3, AT(3), &ev);
	unread_bytes[1] = 60;
	/* Its address's limit: 1 has a head in, 2 goes though younger. */
	assert_true(connlimit__admit(t, SA(a), &ev));
	assert_int_equal(ev, 2);
	assert_non_null(connlimit__add(t, SA(a), 4, AT(4)));
	unread_bytes[4] = 1;
	/* Both with input: 4's byte before 1's head. */
	assert_true(connlimit__admit(t, SA(a), &ev));
	assert_int_equal(ev, 4);
	assert_non_null(connlimit__add(t, SA(a), 5, AT(5)));
	unread_bytes[5] = 1;
	/* The total: 3, the only idle one without input. */
	assert_true(connlimit__admit(t, SA(c), &ev));
	assert_int_equal(ev, 3);
	c6 = connlimit__add(t, SA(c), 6, AT(6));
	assert_non_null(c6);
	unread_bytes[6] = 1;
	/* 5 and 6 a byte each: the longer idle, 5. */
	assert_true(connlimit__admit(t, SA(b), &ev));
	assert_int_equal(ev, 5);
	assert_non_null(connlimit__add(t, SA(b), 7, AT(7)));
	connlimit__set_busy(t, a1, true, AT(8));
	connlimit__set_busy(t, c6, true, AT(8));
	assert_true(connlimit__admit(t, SA(d), &ev));
	assert_int_equal(ev, 7);
	connlimit__stats(t, &st);
	assert_int_equal(st.shed_addr, 2);
	assert_int_equal(st.shed_total, 3);
	assert_int_equal(st.refused, 0);
	connlimit__free(t);
}

/*
 * A request head within head_ns of the opening or of the previous answer
 * (a connection kept alive idles that long), an answer within answer_ns
 * of its head. However often a connection is marked in the state it is
 * in, its deadline stays. Those past it go one by one, and stop counting.
 */
static void test_connlimit__deadlines(void **state)
{
	struct connlimit_limits l = {
		.max_conns = 8,
		.max_per_addr = 8,
		.head_ns = 5 * NS_PER_SEC,
		.answer_ns = 10 * NS_PER_SEC,
	};
	struct sockaddr_in a = v4("10.0.0.1", 1);
	struct connlimit_conn *c1, *c2, *c3;
	struct connlimit_stats st;
	struct connlimit *t;
	int ev;

	(void)state;
	assert_int_equal(connlimit__new(&t, &l), 0);
	assert_int_equal(connlimit__next_deadline(t), UINT64_MAX);
	assert_int_equal(connlimit__expire(t, UINT64_MAX), -1);
	c1 = open_at(t, SA(a), 1, AT(0), &ev);
	c2 = open_at(t, SA(a), 2, AT(1), &ev);
	c3 = open_at(t, SA(a), 3, AT(2), &ev);
	assert_int_equal(connlimit__next_deadline(t), AT(5));
	assert_int_equal(connlimit__expire(t, AT(4.999)), -1);
	/* Idle (trickling or silent, alike here) until 5 s: gone. */
	assert_int_equal(connlimit__expire(t, AT(5)), 1);
	assert_int_equal(connlimit__expire(t, AT(5)), -1);
	assert_int_equal(connlimit__total(t), 2);
	connlimit__remove(t, c1);

	/* 2's head is in at 3 s: answered by 13 s, or gone. */
	connlimit__set_busy(t, c2, true, AT(3));
	connlimit__set_busy(t, c2, true, AT(4)); /* the handler's second call */
	assert_int_equal(connlimit__next_deadline(t), AT(7));
	assert_int_equal(connlimit__expire(t, AT(7)), 3);
	connlimit__remove(t, c3);
	assert_int_equal(connlimit__next_deadline(t), AT(13));
	assert_int_equal(connlimit__expire(t, AT(12.9)), -1);
	/* Answered at 12 s, kept alive: its next head by 17 s. */
	connlimit__set_busy(t, c2, false, AT(12));
	connlimit__set_busy(t, c2, false, AT(16));
	assert_int_equal(connlimit__next_deadline(t), AT(17));
	assert_int_equal(connlimit__expire(t, AT(16.9)), -1);
	/* A second request, its answer never taken: gone at 30 s. */
	connlimit__set_busy(t, c2, true, AT(20));
	assert_int_equal(connlimit__expire(t, AT(29.9)), -1);
	assert_int_equal(connlimit__expire(t, AT(30)), 2);
	assert_int_equal(connlimit__next_deadline(t), UINT64_MAX);
	/* Given up: neither displaced nor expired again. */
	assert_true(connlimit__admit(t, SA(a), &ev));
	assert_int_equal(ev, -1);
	assert_int_equal(connlimit__expire(t, UINT64_MAX), -1);
	connlimit__stats(t, &st);
	assert_int_equal(st.head_expired, 2);
	assert_int_equal(st.answer_expired, 1);
	connlimit__free(t);
}

/* Without deadlines (0), nothing expires; a deadline past the clock's end saturates. */
static void test_connlimit__no_deadlines(void **state)
{
	struct connlimit_limits l = { .max_conns = 2, .max_per_addr = 2, .head_ns = NS_PER_SEC };
	struct sockaddr_in a = v4("10.0.0.1", 1);
	struct connlimit_conn *c;
	struct connlimit *t;
	int ev;

	(void)state;
	t = table(2, 2);
	c = open_at(t, SA(a), 1, AT(0), &ev);
	assert_int_equal(connlimit__expire(t, UINT64_MAX), -1);
	connlimit__set_busy(t, c, true, AT(1));
	assert_int_equal(connlimit__expire(t, UINT64_MAX), -1);
	assert_int_equal(connlimit__next_deadline(t), UINT64_MAX);
	connlimit__free(t);

	assert_int_equal(connlimit__new(&t, &l), 0);
	c = open_at(t, SA(a), 1, UINT64_MAX - 1, &ev);
	assert_int_equal(connlimit__next_deadline(t), UINT64_MAX);
	connlimit__set_busy(t, c, true, AT(0)); /* no answer deadline */
	assert_int_equal(connlimit__expire(t, UINT64_MAX), -1);
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
		cmocka_unit_test(test_connlimit__sheds_oldest_idle),
		cmocka_unit_test(test_connlimit__all_busy_refused),
		cmocka_unit_test(test_connlimit__unread_last),
		cmocka_unit_test(test_connlimit__deadlines),
		cmocka_unit_test(test_connlimit__no_deadlines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * linkset: bounded, released once, by threads sharing the work, every link
 * closed when release_wait returns. Bare fds (eventfds) stand in for links.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <cmocka.h>

#include "collect/linkset.h"

#define N 300

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void fill(struct linkset *s, int *fds, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		fds[i] = eventfd(0, EFD_CLOEXEC);
		assert_true(fds[i] >= 0);
		assert_int_equal(linkset__add_fd(s, fds[i]), 0);
	}
}

static void test_linkset__threads_close_every_fd(void **state)
{
	static const unsigned int threads[] = { 0, 1, 4, LINKSET_MAX_THREADS, 1000 };
	struct linkset s;
	int fds[N], i;
	size_t t;

	(void)state;
	for (t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
		linkset__init(&s, N);
		fill(&s, fds, N);
		assert_int_equal(linkset__count(&s), N);
		linkset__release_begin(&s, threads[t]);
		/* Begun once: a second call, and adding, change nothing. */
		linkset__release_begin(&s, threads[t]);
		assert_int_equal(linkset__add_fd(&s, 0), -EBUSY);
		linkset__release_wait(&s);
		assert_true(s.nr_threads == 0);
		for (i = 0; i < N; i++)
			assert_false(is_open(fds[i]));
		linkset__free(&s);
	}
}

static void test_linkset__bounded(void **state)
{
	struct linkset s;
	int fds[3];

	(void)state;
	linkset__init(&s, 3);
	fill(&s, fds, 3);
	assert_int_equal(linkset__add_fd(&s, 0), -E2BIG);
	assert_int_equal(linkset__count(&s), 3);
	/* free alone releases and waits. */
	linkset__free(&s);
	assert_false(is_open(fds[0]) || is_open(fds[1]) || is_open(fds[2]));
}

static void test_linkset__empty(void **state)
{
	struct linkset s;

	(void)state;
	linkset__init(&s, 0);
	assert_int_equal(linkset__add_fd(&s, 0), -E2BIG);
	linkset__release_begin(&s, 8);
	linkset__release_wait(&s);
	linkset__free(&s);
	linkset__init(&s, 4);
	linkset__free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linkset__threads_close_every_fd),
		cmocka_unit_test(test_linkset__bounded),
		cmocka_unit_test(test_linkset__empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

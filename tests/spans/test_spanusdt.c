// SPDX-License-Identifier: MIT
/*
 * spanusdt: the sites of a --usdt-span pair in real objects nobody here
 * wrote (Debian's CPython 3.11 and libstdc++, as usdtnote reads them), and
 * through spanfind, the errors of a pair that is not there whole.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spans/spanfind.h"
#include "spans/spanusdt.h"
#include "spans/usdtnote.h"

#define PYTHON "/usr/bin/python3.11"
#define LIBSTDCXX "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"

static const struct usdt_site *note_of(const struct usdt_list *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (!strcmp(l->v[i].provider, "python") && !strcmp(l->v[i].name, name))
			return &l->v[i];
	return NULL;
}

static void parse(const char *arg, struct span_request *r, char *buf, size_t size)
{
	assert_int_equal(span_request__parse_usdt(arg, r, buf, size), 0);
}

/* gc__start and gc__done: one site each, where the notes say, with their semaphores. */
static void test_spanusdt__python_pair(void **state)
{
	struct site_vec vec = { 0 };
	struct usdt_list l = { 0 };
	const struct usdt_site *u;
	struct span_request r;
	char buf[256], reason[256];
	size_t i, matched = 99;

	(void)state;
	parse("python:gc__start,gc__done=gc", &r, buf, sizeof(buf));
	assert_int_equal(usdtnote__read(PYTHON, PYTHON, &l, reason, sizeof(reason)), 0);
	assert_int_equal(spanusdt__scan(&vec, PYTHON, PYTHON, &r, &matched, reason, sizeof(reason)),
			 0);
	assert_int_equal(matched, 2);
	assert_int_equal(vec.n, 2);
	for (i = 0; i < vec.n; i++) {
		const struct span_site *s = &vec.v[i];
		bool start = s->kind == SPAN_SITE_USDT_START;

		assert_true(start || s->kind == SPAN_SITE_USDT_DONE);
		u = note_of(&l, start ? "gc__start" : "gc__done");
		assert_non_null(u);
		assert_int_equal(s->err, 0);
		assert_string_equal(s->object, PYTHON);
		assert_string_equal(s->symbol, start ? "python:gc__start" : "python:gc__done");
		assert_string_equal(s->metric, "gc");
		assert_int_equal(s->offset, u->offset);
		/* CPython guards its probes with semaphores: the kernel must raise them. */
		assert_int_not_equal(u->semaphore_offset, 0);
		assert_int_equal(s->ref_ctr_offset, u->semaphore_offset);
	}
	assert_int_not_equal(vec.v[0].kind, vec.v[1].kind);
	usdtnote__free(&l);
	spanfind__free(vec.v, vec.n);
}

/* An object with neither probe adds nothing; with one of the two, one error. */
static void test_spanusdt__half_or_none(void **state)
{
	struct site_vec vec = { 0 };
	struct span_request r;
	char buf[256], reason[256];
	size_t matched = 99;

	(void)state;
	parse("libstdcxx:throw,catch", &r, buf, sizeof(buf));
	assert_int_equal(spanusdt__scan(&vec, PYTHON, PYTHON, &r, &matched, reason, sizeof(reason)),
			 0);
	assert_int_equal(matched, 0);
	assert_int_equal(vec.n, 0);

	parse("libstdcxx:throw,no_such_probe", &r, buf, sizeof(buf));
	assert_int_equal(spanusdt__scan(&vec, "libstdc++.so.6", LIBSTDCXX, &r, &matched, reason,
					sizeof(reason)),
			 0);
	assert_int_equal(matched, 0);
	assert_int_equal(vec.n, 1);
	assert_int_equal(vec.v[0].err, -ENOENT);
	assert_true(vec.v[0].absent);
	assert_string_equal(
		vec.v[0].reason,
		"libstdc++.so.6 has the USDT probe libstdcxx:throw but not libstdcxx:no_such_probe, and a span needs both");
	spanfind__free(vec.v, vec.n);
	vec = (struct site_vec){ 0 };

	assert_int_equal(spanusdt__scan(&vec, "/etc/passwd", "/etc/passwd", &r, &matched, reason,
					sizeof(reason)),
			 -ENOEXEC);
	assert_int_equal(vec.n, 0);
}

/* --usdt: each probe matching the globs, its own metric; no match adds nothing. */
static void test_spanusdt__counted_globs(void **state)
{
	struct site_vec vec = { 0 };
	struct span_request r;
	char buf[256], reason[256];
	size_t matched = 99, i;

	(void)state;
	assert_int_equal(span_request__parse_usdt_count("libstdcxx:*", &r, buf, sizeof(buf)), 0);
	assert_int_equal(
		spanusdt__scan(&vec, LIBSTDCXX, LIBSTDCXX, &r, &matched, reason, sizeof(reason)),
		0);
	/* throw, rethrow and catch: one site each (readelf -n agrees: list_usdt.sh). */
	assert_int_equal(matched, 3);
	assert_int_equal(vec.n, 3);
	for (i = 0; i < vec.n; i++) {
		char want[64];

		assert_int_equal(vec.v[i].kind, SPAN_SITE_USDT_COUNT);
		assert_int_equal(vec.v[i].err, 0);
		assert_int_equal(strncmp(vec.v[i].symbol, "libstdcxx:", 10), 0);
		snprintf(want, sizeof(want), "libstdcxx-%s", vec.v[i].symbol + 10);
		assert_string_equal(vec.v[i].metric, want);
	}
	spanfind__free(vec.v, vec.n);
	vec = (struct site_vec){ 0 };

	assert_int_equal(span_request__parse_usdt_count("python:gc__[sd]*", &r, buf, sizeof(buf)),
			 0);
	assert_int_equal(spanusdt__scan(&vec, PYTHON, PYTHON, &r, &matched, reason, sizeof(reason)),
			 0);
	assert_int_equal(matched, 2);
	spanfind__free(vec.v, vec.n);
	vec = (struct site_vec){ 0 };

	assert_int_equal(
		spanusdt__scan(&vec, LIBSTDCXX, LIBSTDCXX, &r, &matched, reason, sizeof(reason)),
		0);
	assert_int_equal(matched, 0);
	assert_int_equal(vec.n, 0);
}

/*
 * Through spanfind (run mode, host paths): without OBJECT a pair is looked
 * for in the executable and every library; one found nowhere is one error.
 */
static void test_spanusdt__discover(void **state)
{
	char *objects[] = { (char *)PYTHON, (char *)LIBSTDCXX };
	const struct spanfind_opts no_notes = { .no_annotations = true };
	struct span_request r[3];
	struct span_site *sites = NULL;
	char buf[3][256];
	size_t nr = 0, i, starts = 0, dones = 0, errors = 0;

	(void)state;
	parse("python:gc__start,gc__done", &r[0], buf[0], sizeof(buf[0]));
	parse("libstdcxx:throw,catch=cxx", &r[1], buf[1], sizeof(buf[1]));
	parse("nosuch:a__start,a__done", &r[2], buf[2], sizeof(buf[2]));
	assert_int_equal(spanfind__discover_list("/", objects, 2, r, 3, &no_notes, &sites, &nr), 0);
	for (i = 0; i < nr; i++) {
		if (sites[i].err) {
			errors++;
			assert_true(sites[i].absent);
			assert_int_equal(sites[i].request, 3);
			assert_string_equal(sites[i].metric, "nosuch-a");
			assert_non_null(
				strstr(sites[i].reason, "nosuch:a__start or nosuch:a__done"));
			continue;
		}
		starts += sites[i].kind == SPAN_SITE_USDT_START;
		dones += sites[i].kind == SPAN_SITE_USDT_DONE;
		assert_int_equal(sites[i].request, strcmp(sites[i].metric, "cxx") ? 1 : 2);
		if (!strcmp(sites[i].metric, "cxx"))
			assert_string_equal(sites[i].object, LIBSTDCXX);
		else
			assert_string_equal(sites[i].metric, "python-gc");
	}
	assert_int_equal(errors, 1);
	assert_int_equal(starts, 2);
	assert_int_equal(dones, 2);
	spanfind__free(sites, nr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spanusdt__python_pair),
		cmocka_unit_test(test_spanusdt__half_or_none),
		cmocka_unit_test(test_spanusdt__counted_globs),
		cmocka_unit_test(test_spanusdt__discover),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * spansite: --span request parsing, metric names, and the error sentences
 * a site carries.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khbpf/sched.h"
#include "khbpf/span.h"
#include "khbpf/spans.h"
#include "spans/spansite.h"

static void test_spansite__request_parse(void **state)
{
	static const char m63[] = "a23456789-123456789-123456789-123456789-123456789-123456789-123";
	struct {
		const char *arg, *object, *symbol, *metric;
	} good[] = {
		{ "foo", NULL, "foo", NULL },
		{ "foo=bar-baz", NULL, "foo", "bar-baz" },
		{ "libc.so.6:getpid", "libc.so.6", "getpid", NULL },
		{ "/usr/lib/x.so:f=m1", "/usr/lib/x.so", "f", "m1" },
		{ "stage_*=stages", NULL, "stage_*", "stages" },
		{ "a:b:c", "a:b", "c", NULL },
		{ "x:[a-c]?_$.@!^*=0", "x", "[a-c]?_$.@!^*", "0" },
		{ "f=a-b-c9", NULL, "f", "a-b-c9" },
	};
	char sym256[300], obj4096[PATH_MAX + 8], metric64[80], buf[PATH_MAX + 16];
	const char *bad[] = {
		"",	  ":",	   "x:",	 ":f",	      "f=",    "=m",	"f=Bad",
		"f=a--b", "f=-a",  "f=a-",	 "f=a_b",     "f=a:b", "f=a=b", "f g",
		"f\n",	  "x\t:f", "f,g",	 "f/g",	      "a=b:c", "f=a b", "o:f=",
		":f=m",	  "f()",   "f=\xc3\xa9", "lib\x01:f", "f=a.b",
	};
	struct span_request r, pristine;
	size_t i;

	(void)state;
	assert_int_equal(strlen(m63), 63);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		memset(&r, 0x5a, sizeof(r));
		assert_int_equal(span_request__parse(good[i].arg, &r, buf, sizeof(buf)), 0);
		if (good[i].object)
			assert_string_equal(r.object, good[i].object);
		else
			assert_null(r.object);
		assert_string_equal(r.symbol, good[i].symbol);
		if (good[i].metric)
			assert_string_equal(r.metric, good[i].metric);
		else
			assert_null(r.metric);
	}
	snprintf(buf, sizeof(buf), "f=%s", m63);
	assert_int_equal(span_request__parse(buf, &r, metric64, sizeof(metric64)), 0);
	assert_string_equal(r.metric, m63);

	/* Failures leave out and buf as they were. */
	memset(&pristine, 0x5a, sizeof(pristine));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = pristine;
		memset(buf, 'Q', sizeof(buf));
		assert_int_equal(span_request__parse(bad[i], &r, buf, sizeof(buf)), -EINVAL);
		assert_memory_equal(&r, &pristine, sizeof(r));
		assert_true(buf[0] == 'Q' && buf[sizeof(buf) - 1] == 'Q');
	}
	snprintf(metric64, sizeof(metric64), "f=%s3", m63);
	assert_int_equal(span_request__parse(metric64, &r, buf, sizeof(buf)), -EINVAL);
	memset(sym256, 'a', 256);
	sym256[256] = '\0';
	assert_int_equal(span_request__parse(sym256, &r, buf, sizeof(buf)), -EINVAL);
	sym256[255] = '\0';
	assert_int_equal(span_request__parse(sym256, &r, buf, sizeof(buf)), 0);
	assert_int_equal(strlen(r.symbol), 255);
	memset(obj4096, 'o', PATH_MAX);
	memcpy(obj4096 + PATH_MAX, ":f", 3);
	assert_int_equal(span_request__parse(obj4096, &r, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(span_request__parse(obj4096 + 1, &r, buf, sizeof(buf)), 0);
	assert_int_equal(strlen(r.object), PATH_MAX - 1);

	/* "ab:f" needs 5 bytes; 4 is -ENAMETOOLONG, untouched. */
	r = pristine;
	memset(buf, 'Q', 8);
	assert_int_equal(span_request__parse("ab:f", &r, buf, 4), -ENAMETOOLONG);
	assert_memory_equal(&r, &pristine, sizeof(r));
	assert_memory_equal(buf, "QQQQ", 4);
	assert_int_equal(span_request__parse("ab:f", &r, buf, 5), 0);
	assert_string_equal(r.object, "ab");
	assert_string_equal(r.symbol, "f");
	assert_int_equal(span_request__parse(NULL, &r, buf, 5), -EINVAL);
}

static void test_spansite__usdt_request_parse(void **state)
{
	struct {
		const char *arg, *object, *symbol, *provider, *start, *done, *metric;
	} good[] = {
		{ "postgresql:query__start,query__done", NULL,
		  "postgresql:query__start,query__done", "postgresql", "query__start",
		  "query__done", "postgresql-query" },
		{ "postgresql:query__start,query__done=query", NULL,
		  "postgresql:query__start,query__done", "postgresql", "query__start",
		  "query__done", "query" },
		{ "/usr/bin/python3.11:python:gc__start,gc__done", "/usr/bin/python3.11",
		  "python:gc__start,gc__done", "python", "gc__start", "gc__done", "python-gc" },
		{ "a:b:p:import__find__load__start,import__find__load__done", "a:b",
		  "p:import__find__load__start,import__find__load__done", "p",
		  "import__find__load__start", "import__find__load__done", "p-import-find-load" },
		/* A common prefix ending inside a word is cut back to its '_'. */
		{ "p:foo_begin,foo_bar", NULL, "p:foo_begin,foo_bar", "p", "foo_begin", "foo_bar",
		  "p-foo" },
		/* Nothing in common: PROVIDER-START. */
		{ "P:Open,close", NULL, "P:Open,close", "P", "Open", "close", "p-open" },
		{ "p:s,d=m-1", NULL, "p:s,d", "p", "s", "d", "m-1" },
	};
	const char *bad[] = {
		"",
		"p:s",
		"s,d",
		":s,d",
		"p:,d",
		"p:s,",
		"p:s,s",
		"p:s,d,e",
		"p:s*,d",
		"p:s,d=",
		"p:s,d=Bad",
		"p-q:s,d",
		":p:s,d",
		"o\n:p:s,d",
		"p:s.x,d",
		/* The default metric would pass 63 bytes: give one. */
		"provider_with_a_long_name:a_really_quite_long_probe_name_that_starts,other_done",
	};
	struct span_request r;
	char buf[1024];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		memset(&r, 0x5a, sizeof(r));
		assert_int_equal(span_request__parse_usdt(good[i].arg, &r, buf, sizeof(buf)), 0);
		if (good[i].object)
			assert_string_equal(r.object, good[i].object);
		else
			assert_null(r.object);
		assert_string_equal(r.symbol, good[i].symbol);
		assert_string_equal(r.provider, good[i].provider);
		assert_string_equal(r.start, good[i].start);
		assert_string_equal(r.done, good[i].done);
		assert_string_equal(r.metric, good[i].metric);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&r, 0x5a, sizeof(r));
		assert_int_equal(span_request__parse_usdt(bad[i], &r, buf, sizeof(buf)), -EINVAL);
		/* Untouched on error. */
		assert_ptr_equal(r.symbol, (const char *)0x5a5a5a5a5a5a5a5aULL);
	}
	/* The buffer: twice the argument and a metric. */
	assert_int_equal(span_request__parse_usdt("p:s,d", &r, buf, 2 * 6 + SPANFIND_METRIC_MAX),
			 0);
	assert_int_equal(
		span_request__parse_usdt("p:s,d", &r, buf, 2 * 6 + SPANFIND_METRIC_MAX - 1),
		-ENAMETOOLONG);
	/* --span leaves the USDT fields NULL. */
	memset(&r, 0x5a, sizeof(r));
	assert_int_equal(span_request__parse("f", &r, buf, sizeof(buf)), 0);
	assert_null(r.provider);
	assert_null(r.start);
	assert_null(r.done);
}

static void test_spansite__usdt_count_parse(void **state)
{
	struct {
		const char *arg, *object, *symbol, *provider, *name;
	} good[] = {
		{ "libstdcxx:throw", NULL, "libstdcxx:throw", "libstdcxx", "throw" },
		{ "libstdcxx:*", NULL, "libstdcxx:*", "libstdcxx", "*" },
		{ "libstdc++.so.6:libstdcxx:[tc]*", "libstdc++.so.6", "libstdcxx:[tc]*",
		  "libstdcxx", "[tc]*" },
		{ "/a:b:p?:n_!^", "/a:b", "p?:n_!^", "p?", "n_!^" },
	};
	const char *bad[] = { "", "p", ":n", "p:", "p:n=m", "p:n,d", "p-q:n", ":p:n", "p:n.x" };
	char buf[256], metric[SPANFIND_METRIC_MAX];
	struct span_request r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		memset(&r, 0x5a, sizeof(r));
		assert_int_equal(span_request__parse_usdt_count(good[i].arg, &r, buf, sizeof(buf)),
				 0);
		if (good[i].object)
			assert_string_equal(r.object, good[i].object);
		else
			assert_null(r.object);
		assert_string_equal(r.symbol, good[i].symbol);
		assert_string_equal(r.provider, good[i].provider);
		assert_string_equal(r.start, good[i].name);
		assert_null(r.done);
		assert_null(r.metric);
		assert_true(r.count);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&r, 0x5a, sizeof(r));
		assert_int_equal(span_request__parse_usdt_count(bad[i], &r, buf, sizeof(buf)),
				 -EINVAL);
		assert_ptr_equal(r.symbol, (const char *)0x5a5a5a5a5a5a5a5aULL);
	}
	assert_int_equal(span_request__parse_usdt_count("p:n", &r, buf, 8), 0);
	assert_int_equal(span_request__parse_usdt_count("p:n", &r, buf, 7), -ENAMETOOLONG);

	assert_int_equal(spansite__usdt_count_metric("libstdcxx", "throw", metric), 0);
	assert_string_equal(metric, "libstdcxx-throw");
	assert_int_equal(spansite__usdt_count_metric("postgresql", "query__start", metric), 0);
	assert_string_equal(metric, "postgresql-query-start");
	assert_int_equal(spansite__usdt_count_metric("provider_with_a_long_name",
						     "and_a_long_probe_name_that_is_too_long",
						     metric),
			 -EINVAL);
}

/* Each kind of request as its option was given (the metric left out), and its metric. */
static void test_spansite__describe_and_metric(void **state)
{
	struct {
		char opt; /* 'S' --span, 'U' --usdt-span, 'u' --usdt */
		const char *arg, *shown, *has, *hasnt;
	} cases[] = {
		{ 'S', "malloc", "--span malloc", "malloc", "free" },
		{ 'S', "libc.so.6:Stage_Outer2", "--span libc.so.6:Stage_Outer2", "stage-outer2",
		  "stage-outer" },
		/* The metric is left out: SYMBOL is what the errors are about. */
		{ 'S', "/a:b/x.so:f=mine", "--span /a:b/x.so:f", "mine", "f" },
		/* A glob's metrics are its matches': none is known from the request. */
		{ 'S', "stage_*", "--span stage_*", NULL, "stage" },
		{ 'U', "postgresql:no__such,query__done",
		  "--usdt-span postgresql:no__such,query__done", "postgresql-no-such",
		  "postgresql-query" },
		{ 'U', "/usr/bin/python3.11:python:gc__start,gc__done=gc",
		  "--usdt-span /usr/bin/python3.11:python:gc__start,gc__done", "gc", "python-gc" },
		{ 'u', "libstdcxx:throw", "--usdt libstdcxx:throw", "libstdcxx-throw",
		  "libstdcxx" },
		{ 'u', "libstdc++.so.6:libstdcxx:*", "--usdt libstdc++.so.6:libstdcxx:*", NULL,
		  "libstdcxx-throw" },
	};
	char buf[512], shown[512];
	struct span_request r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err =
			cases[i].opt == 'S' ?
				span_request__parse(cases[i].arg, &r, buf, sizeof(buf)) :
			cases[i].opt == 'U' ?
				span_request__parse_usdt(cases[i].arg, &r, buf, sizeof(buf)) :
				span_request__parse_usdt_count(cases[i].arg, &r, buf, sizeof(buf));

		assert_int_equal(err, 0);
		span_request__describe(&r, shown, sizeof(shown));
		assert_string_equal(shown, cases[i].shown);
		if (cases[i].has)
			assert_true(span_request__has_metric(&r, cases[i].has));
		assert_false(span_request__has_metric(&r, cases[i].hasnt));
	}
	/* Cut short, and terminated. */
	assert_int_equal(span_request__parse("libc.so.6:malloc", &r, buf, sizeof(buf)), 0);
	span_request__describe(&r, shown, 10);
	assert_string_equal(shown, "--span li");
}

static void test_spansite__key_parse(void **state)
{
	const char *bad[] = { "",
			      "query",
			      "query=",
			      "query=arg0",
			      "query=arg0:",
			      "query=arg:str",
			      "query=arg12:str",
			      "query=arg01:str",
			      "Query=arg0:str",
			      "query=argx:int",
			      "query=arg0:string",
			      "=arg0:str",
			      "q=arg-1:int",
			      "q=arg0:int:x" };
	struct key_request k;
	size_t i;

	(void)state;
	assert_int_equal(key_request__parse("query=arg0:str", &k), 0);
	assert_string_equal(k.metric, "query");
	assert_int_equal(k.arg, 0);
	assert_int_equal(k.kind, KHBPF_KEY_STR);
	assert_int_equal(key_request__parse("python-gc=arg11:int", &k), 0);
	assert_string_equal(k.metric, "python-gc");
	assert_int_equal(k.arg, 11);
	assert_int_equal(k.kind, KHBPF_KEY_INT);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (key_request__parse(bad[i], &k) != -EINVAL)
			fail_msg("'%s' was taken", bad[i]);
}

static void test_spansite__cause_parse(void **state)
{
	static const char *const bad[] = {
		"lock-wait",	   "lock-wait=",      "=lock",		"lock-wait=fault",
		"lock-wait=LOCK",  "lock-wait=lock ", "Lock-Wait=lock", "lock--wait=io",
		"lock-wait=lock=", "lock-wait:lock",
	};
	struct cause_request c;
	size_t i;

	(void)state;
	assert_int_equal(cause_request__parse("lock-wait=lock", &c), 0);
	assert_string_equal(c.metric, "lock-wait");
	assert_int_equal(c.cause, KHBPF_BLOCK_LOCK);
	assert_int_equal(cause_request__parse("q=io", &c), 0);
	assert_int_equal(c.cause, KHBPF_BLOCK_IO);
	assert_int_equal(cause_request__parse("nap=sleep", &c), 0);
	assert_int_equal(c.cause, KHBPF_BLOCK_SLEEP);
	assert_int_equal(cause_request__parse("x=other", &c), 0);
	assert_int_equal(c.cause, KHBPF_BLOCK_OTHER);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (cause_request__parse(bad[i], &c) != -EINVAL)
			fail_msg("'%s' was taken", bad[i]);
}

static void test_spansite__metric_from_symbol(void **state)
{
	char out[KHBPF_METRIC_MAX + 1], sym[200];

	(void)state;
	assert_int_equal(spansite__metric_from_symbol("Stage_Outer2", out), 0);
	assert_string_equal(out, "stage-outer2");
	assert_int_equal(spansite__metric_from_symbol("__x86.get_pc_thunk.bx", out), 0);
	assert_string_equal(out, "x86-get-pc-thunk-bx");
	assert_true(spansite__metric_valid(out));
	assert_int_equal(spansite__metric_from_symbol("_Z3fooi", out), 0);
	assert_string_equal(out, "z3fooi");
	assert_int_equal(spansite__metric_from_symbol("__$$__", out), -EINVAL);
	assert_int_equal(spansite__metric_from_symbol("", out), -EINVAL);
	/* Cut at the longest valid name: never a trailing '-'. */
	memset(sym, 'a', sizeof(sym));
	sym[KHBPF_METRIC_MAX - 1] = '_';
	sym[sizeof(sym) - 1] = '\0';
	assert_int_equal(spansite__metric_from_symbol(sym, out), 0);
	assert_int_equal(strlen(out), KHBPF_METRIC_MAX - 1);
	assert_true(spansite__metric_valid(out));
	assert_false(spansite__metric_valid("a--b"));
	assert_false(spansite__metric_valid("-a"));
	assert_true(spansite__metric_valid_n("ab-c=", 4));
}

static void test_spansite__fail_escapes_and_hand_over(void **state)
{
	struct site_vec vec = { 0 };
	struct span_site *s, *sites = NULL;
	size_t nr = 0, i;

	(void)state;
	for (i = 0; i < 40; i++) {
		s = site_vec__push(&vec, "/lib/x.so", "/proc/1/root/lib/x.so", i & 1);
		assert_non_null(s);
		s->offset = i;
	}
	s = &vec.v[3];
	span_site__fail(s, -ENOENT, "no '%s' in %s", "a\nb\x7f", "x");
	assert_int_equal(s->err, -ENOENT);
	assert_string_equal(s->reason, "no 'a\\x0ab\\x7f' in x");
	assert_int_equal(site_vec__push_not_found(&vec, false, "/lib/x.so", "p", "f*", "m"), 0);
	assert_int_equal(vec.v[40].err, -ENOENT);
	assert_non_null(strstr(vec.v[40].reason, "stripped"));
	assert_string_equal(vec.v[40].metric, "m");
	assert_int_equal(site_vec__push_file_error(&vec, "o", "p", "f", NULL, false, -EISDIR,
						   "o is not a regular file"),
			 -EISDIR);
	assert_string_equal(vec.v[41].reason, "cannot look up 'f': o is not a regular file");

	/* Appended after what the caller has, twice. */
	assert_int_equal(site_vec__hand_over(&vec, &sites, &nr), 0);
	assert_int_equal(site_vec__hand_over(&vec, &sites, &nr), 0);
	assert_int_equal(nr, 84);
	assert_int_equal(sites[42 + 39].offset, 39);
	assert_true(sites[42 + 1].from_note);
	assert_string_equal(sites[42 + 3].reason, "no 'a\\x0ab\\x7f' in x");
	free(vec.v);
	spanfind__free(sites, nr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spansite__request_parse),
		cmocka_unit_test(test_spansite__usdt_request_parse),
		cmocka_unit_test(test_spansite__usdt_count_parse),
		cmocka_unit_test(test_spansite__describe_and_metric),
		cmocka_unit_test(test_spansite__key_parse),
		cmocka_unit_test(test_spansite__cause_parse),
		cmocka_unit_test(test_spansite__metric_from_symbol),
		cmocka_unit_test(test_spansite__fail_escapes_and_hand_over),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

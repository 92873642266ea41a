// SPDX-License-Identifier: MIT
/* report_field: typed members of a document, and the messages when they are wrong. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "report/report_loader.h"

struct fx {
	struct report_doc doc;
	struct loader ld;
	char err[256];
	struct json_object *root;
};

static void fx_init(struct fx *f, const char *json)
{
	memset(f, 0, sizeof(*f));
	f->ld.doc = &f->doc;
	f->ld.err = f->err;
	f->ld.errlen = sizeof(f->err);
	f->root = json_tokener_parse(json);
	assert_non_null(f->root);
}

static void test_report_field__members(void **state)
{
	struct fx f;
	uint64_t v = 7;

	(void)state;
	fx_init(&f, "{\"n\":18446744073709551615,\"s\":\"x\",\"b\":true,\"neg\":-1,\"o\":{}}");
	assert_true(loader__get_u64(&f.ld, f.root, "", "n") == UINT64_MAX);
	assert_string_equal(loader__get_str(&f.ld, f.root, "", "s", true), "x");
	assert_true(loader__get_bool(&f.ld, f.root, "", "b", true));
	assert_null(loader__get_str(&f.ld, f.root, "", "absent", false));
	assert_int_equal(f.ld.failed, 0);
	assert_false(loader__u64_of(&f.ld, json_object_object_get(f.root, "neg"), "t", "neg", &v));
	assert_int_equal(v, 7);
	assert_int_equal(f.ld.failed, -EPROTO);
	assert_string_equal(f.err, "t.neg: expected an unsigned integer");
	/* The first failure's message stays; readers give up once failed. */
	assert_null(loader__member(&f.ld, f.root, "", "o", json_type_object, true));
	assert_string_equal(f.err, "t.neg: expected an unsigned integer");
	json_object_put(f.root);

	fx_init(&f, "{\"o\":{\"k\":\"v\"}}");
	assert_null(loader__member(&f.ld, f.root, "top", "o", json_type_array, true));
	assert_string_equal(f.err, "top.o: expected an array");
	json_object_put(f.root);
	fx_init(&f, "{}");
	assert_int_equal(loader__get_u64(&f.ld, f.root, "a.b", "c"), 0);
	assert_string_equal(f.err, "a.b.c is missing");
	json_object_put(f.root);

	/* Control bytes of the document's keys are written as \xNN. */
	fx_init(&f, "{}");
	loader__fail(&f.ld, "key %s is bad", "a\x1b[2Jb");
	assert_string_equal(f.err, "key a\\x1b[2Jb is bad");
	assert_int_equal(loader__nomem(&f.ld), -ENOMEM);
	assert_int_equal(f.ld.failed, -EPROTO);
	json_object_put(f.root);
}

static void test_report_field__evidence(void **state)
{
	struct fx f;
	struct ev_u64 ev;
	struct sev_u64 sev;
	enum ev_gap g;

	(void)state;
	fx_init(&f,
		"{\"r\":{\"status\":\"recorded\",\"value\":42},"
		"\"u\":{\"status\":\"unavailable\",\"reason\":\"permission-denied\"},"
		"\"s\":{\"value\":{\"status\":\"recorded\",\"value\":5},\"source\":\"proc-pid-sched\"}}");
	ev = loader__get_ev_u64(&f.ld, f.root, "", "r");
	assert_true(ev.recorded);
	assert_int_equal(ev.value, 42);
	ev = loader__get_ev_u64(&f.ld, f.root, "", "u");
	assert_false(ev.recorded);
	assert_int_equal(ev.reason, EV_GAP_PERMISSION_DENIED);
	sev = loader__get_sev_u64(&f.ld, f.root, "", "s");
	assert_true(sev.ev.recorded);
	assert_int_equal(sev.ev.value, 5);
	assert_string_equal(ev_source__name(sev.source), "proc-pid-sched");
	assert_int_equal(f.ld.failed, 0);
	assert_true(loader__parse_gap("unsupported", &g));
	assert_int_equal(g, EV_GAP_UNSUPPORTED);
	assert_false(loader__parse_gap("nope", &g));
	assert_false(loader__parse_gap(NULL, &g));
	json_object_put(f.root);

	fx_init(&f, "{\"x\":{\"status\":\"maybe\"}}");
	ev = loader__get_ev_u64(&f.ld, f.root, "w", "x");
	assert_false(ev.recorded);
	assert_string_equal(f.err, "w.x.status: expected \"recorded\" or \"unavailable\"");
	json_object_put(f.root);
	fx_init(&f,
		"{\"s\":{\"value\":{\"status\":\"recorded\",\"value\":1},\"source\":\"guess\"}}");
	loader__get_sev_u64(&f.ld, f.root, "", "s");
	assert_string_equal(f.err, "s.source: 'guess' is not a source of the schema");
	json_object_put(f.root);
}

static void test_report_field__buckets_and_own(void **state)
{
	struct report_bucket *b;
	const char *c;
	struct fx f;
	size_t n = 9;

	(void)state;
	fx_init(&f, "{\"h\":[{\"lower_bound\":0,\"upper_bound\":1,\"count\":3},"
		    "{\"lower_bound\":1,\"upper_bound\":2,\"count\":4}]}");
	b = loader__get_buckets(&f.ld, json_object_object_get(f.root, "h"), "h", &n);
	assert_int_equal(n, 2);
	assert_int_equal(b[1].upper, 2);
	assert_int_equal(b[1].count, 4);
	free(b);
	/* Not streamed: strings are the tree's own; streamed: the document keeps a copy. */
	c = loader__own(&f.ld, "abc");
	assert_string_equal(c, "abc");
	assert_int_equal(jscan__from_mem("{}", 2, &f.ld.scan), 0);
	c = loader__own(&f.ld, json_object_get_string(json_object_object_get(f.root, "h")));
	assert_int_equal(f.doc.nr_owned, 1);
	assert_ptr_equal(c, f.doc.owned[0]);
	free(f.doc.owned[0]);
	free(f.doc.owned);
	jscan__free(f.ld.scan);
	json_object_put(f.root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_field__members),
		cmocka_unit_test(test_report_field__evidence),
		cmocka_unit_test(test_report_field__buckets_and_own),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

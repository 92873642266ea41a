// SPDX-License-Identifier: MIT
/* jscan.c: members and array elements found in JSON text, against the bytes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "jscan.h"

/* The member's bytes, or the error as text. */
static const char *member(const char *text, const char *path)
{
	static char out[256];
	struct jrange r;
	int err = jscan__member(text, strlen(text), path, &r);

	if (err) {
		snprintf(out, sizeof(out), "error %d", err);
		return out;
	}
	snprintf(out, sizeof(out), "%.*s", (int)(r.end - r.begin), text + r.begin);
	return out;
}

static void test_jscan__member(void **state)
{
	const char *doc = " { \"a\" : 1 , \"threads\": [ {\"x\": \"]}\\\"\"} , 2 ] ,"
			  "\"events\":{\"n\":null,\"spans\":[]}, \"s\": \"t\\\\\" }";

	(void)state;
	assert_string_equal(member(doc, "a"), "1");
	assert_string_equal(member(doc, "threads"), "[ {\"x\": \"]}\\\"\"} , 2 ]");
	assert_string_equal(member(doc, "events.spans"), "[]");
	assert_string_equal(member(doc, "events"), "{\"n\":null,\"spans\":[]}");
	assert_string_equal(member(doc, "s"), "\"t\\\\\"");
	assert_string_equal(member(doc, "b"), "error -2");
	assert_string_equal(member(doc, "a.b"), "error -2");
	assert_string_equal(member(doc, "events.nope"), "error -2");
	/* Raw bytes only: an escaped spelling of the key is not the key. */
	assert_string_equal(member("{\"\\u0061\":1}", "a"), "error -2");
	/* A prefix of a key is not the key. */
	assert_string_equal(member("{\"ab\":1,\"a\":2}", "a"), "2");
	assert_string_equal(member("[1]", "a"), "error -2");
}

static void test_jscan__malformed(void **state)
{
	char deep[200];
	size_t i;

	(void)state;
	assert_string_equal(member("{\"a\":[1,2}", "a"), "error -22");
	assert_string_equal(member("{\"a\":\"x", "a"), "error -22");
	assert_string_equal(member("{\"a\" 1}", "a"), "error -22");
	assert_string_equal(member("{\"a\":1 \"b\":2}", "b"), "error -22");
	assert_string_equal(member("{\"a\":\"\x01\"}", "a"), "error -22");
	assert_string_equal(member("{\"a\":[1,]}", "a"), "error -22");
	/* Nesting past the bound is refused, not followed. */
	memset(deep, 0, sizeof(deep));
	strcpy(deep, "{\"a\":");
	for (i = 0; i < JSCAN_MAX_DEPTH + 1; i++)
		strcat(deep, "[");
	assert_string_equal(member(deep, "a"), "error -7");
}

static void test_jscan__elements(void **state)
{
	const char *doc = "{\"t\": [ {\"a\":[1,{}]} ,\"x,]\", 3 ,[ ] ]}";
	const char *want[] = { "{\"a\":[1,{}]}", "\"x,]\"", "3", "[ ]" };
	struct jrange arr, e;
	size_t pos = 0, n = 0;
	int r;

	(void)state;
	assert_int_equal(jscan__member(doc, strlen(doc), "t", &arr), 0);
	while ((r = jscan__next(doc, &arr, &pos, &e)) == 1) {
		assert_true(n < 4);
		assert_int_equal(e.end - e.begin, strlen(want[n]));
		assert_memory_equal(doc + e.begin, want[n], e.end - e.begin);
		n++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(n, 4);
	/* Again at the end: still the end. */
	assert_int_equal(jscan__next(doc, &arr, &pos, &e), 0);

	doc = "{\"t\":[]}";
	pos = 0;
	assert_int_equal(jscan__member(doc, strlen(doc), "t", &arr), 0);
	assert_int_equal(jscan__next(doc, &arr, &pos, &e), 0);

	doc = "{\"t\":1}";
	pos = 0;
	assert_int_equal(jscan__member(doc, strlen(doc), "t", &arr), 0);
	assert_int_equal(jscan__next(doc, &arr, &pos, &e), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jscan__member),
		cmocka_unit_test(test_jscan__malformed),
		cmocka_unit_test(test_jscan__elements),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

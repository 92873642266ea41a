// SPDX-License-Identifier: MIT
/*
 * Lazy arrays and the streamed text: byte for byte json-c's own for the same
 * tree built whole, in every layout, wherever the arrays sit.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "lib/jsonstream.h"

static const int layouts[] = {
	JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
	JSON_C_TO_STRING_PLAIN,
	JSON_C_TO_STRING_SPACED,
	JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_PRETTY_TAB,
};

/* Element i: nested objects, an array, and a string json-c must escape. */
static struct json_object *item(size_t i)
{
	struct json_object *o = json_object_new_object(), *inner = json_object_new_object();
	struct json_object *arr = json_object_new_array();
	char s[64];

	snprintf(s, sizeof(s), "n\"%zu\n\x01/\t", i);
	json_object_object_add(o, "id", json_object_new_uint64(UINT64_MAX - i));
	json_object_object_add(o, "name", json_object_new_string(s));
	json_object_object_add(inner, "empty", json_object_new_object());
	json_object_array_add(arr, json_object_new_uint64(i));
	json_object_array_add(arr, json_object_new_boolean(i & 1));
	json_object_object_add(inner, "list", arr);
	json_object_object_add(o, "inner", inner);
	return o;
}

static size_t built, fail_at = SIZE_MAX;

static struct json_object *build(const void *ctx, size_t i, int *err)
{
	(void)ctx;
	built++;
	if (i == fail_at) {
		*err = -ENOMEM;
		return NULL;
	}
	return item(i);
}

static struct json_object *eager_array(size_t n)
{
	struct json_object *arr = json_object_new_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_object_array_add(arr, item(i));
	return arr;
}

/*
 * {"a": [n], "mid": {"b": [m], "x": 1}, "none": [], "c": [1], "end": "\u0001"}: lazy or
 * eager arrays at levels 1 and 2, empty, one element, and a key after them.
 */
static struct json_object *tree(bool lazy, size_t n, size_t m)
{
	struct json_object *root = json_object_new_object(), *mid = json_object_new_object();

	json_object_object_add(root, "a",
			       lazy ? jsonstream__lazy_array(NULL, n, build) : eager_array(n));
	json_object_object_add(mid, "b",
			       lazy ? jsonstream__lazy_array(NULL, m, build) : eager_array(m));
	json_object_object_add(mid, "x", json_object_new_int(1));
	json_object_object_add(root, "mid", mid);
	json_object_object_add(root, "none",
			       lazy ? jsonstream__lazy_array(NULL, 0, build) :
				      json_object_new_array());
	json_object_object_add(root, "c",
			       lazy ? jsonstream__lazy_array(NULL, 1, build) : eager_array(1));
	json_object_object_add(root, "end", json_object_new_string("\x01"));
	return root;
}

/* What jsonstream__write put in a file, NUL-terminated (malloc'd). */
static char *streamed(struct json_object *obj, int flags, bool newline, int *err)
{
	int fd = memfd_create("jsonstream", 0);
	off_t len;
	char *buf;

	assert_true(fd >= 0);
	*err = jsonstream__write(obj, flags, newline, fd);
	len = lseek(fd, 0, SEEK_END);
	assert_true(len >= 0);
	buf = malloc((size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)len, 0), len);
	buf[len] = '\0';
	close(fd);
	return buf;
}

static void expect_same(size_t n, size_t m)
{
	struct json_object *eager = tree(false, n, m), *lazy = tree(true, n, m);
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const char *want = json_object_to_json_string_ext(eager, layouts[i]);
		size_t want_len = strlen(want);
		char *got;
		int err;

		/* Made whole by json-c, the lazy tree's text is the same... */
		assert_string_equal(json_object_to_json_string_ext(lazy, layouts[i]), want);
		/* ...and streamed, with and without the newline. */
		got = streamed(lazy, layouts[i], false, &err);
		assert_int_equal(err, 0);
		assert_string_equal(got, want);
		free(got);
		got = streamed(lazy, layouts[i], true, &err);
		assert_int_equal(err, 0);
		assert_int_equal(strlen(got), want_len + 1);
		assert_int_equal(got[want_len], '\n');
		assert_memory_equal(got, want, want_len);
		free(got);
	}
	json_object_put(eager);
	json_object_put(lazy);
}

static void test_jsonstream__same_bytes_as_whole_tree(void **state)
{
	(void)state;
	expect_same(0, 0);
	expect_same(3, 2);
}

/* Far more text than the write buffer: flushed in pieces, still the same. */
static void test_jsonstream__larger_than_buffer(void **state)
{
	(void)state;
	expect_same(5000, 1200);
}

/* Each element is made once per text, as it is written; a failed one fails the write. */
static void test_jsonstream__element_failure(void **state)
{
	struct json_object *lazy = tree(true, 10, 5);
	char *got;
	int err;

	(void)state;
	built = 0;
	got = streamed(lazy, layouts[0], true, &err);
	assert_int_equal(err, 0);
	assert_int_equal(built, 10 + 5 + 1);
	free(got);
	fail_at = 7;
	got = streamed(lazy, layouts[0], true, &err);
	fail_at = SIZE_MAX;
	assert_int_equal(err, -ENOMEM);
	free(got);
	json_object_put(lazy);
}

/* The fd's errors come back as they are (here: not open for writing). */
static void test_jsonstream__write_error(void **state)
{
	struct json_object *lazy = tree(true, 100, 0);
	int fd = open("/dev/null", O_RDONLY);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(jsonstream__write(lazy, layouts[0], true, fd), -EBADF);
	close(fd);
	json_object_put(lazy);
}

/* Lazy or whole, an array's length is its elements' count; nothing else has one. */
static void test_jsonstream__length(void **state)
{
	struct json_object *lazy = jsonstream__lazy_array(NULL, 37112, build);
	struct json_object *eager = eager_array(3), *obj = json_object_new_object();

	(void)state;
	built = 0;
	assert_int_equal(jsonstream__length(lazy), 37112);
	assert_int_equal(built, 0);
	assert_int_equal(jsonstream__length(eager), 3);
	assert_int_equal(jsonstream__length(obj), 0);
	assert_int_equal(jsonstream__length(NULL), 0);
	json_object_put(lazy);
	json_object_put(eager);
	json_object_put(obj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jsonstream__same_bytes_as_whole_tree),
		cmocka_unit_test(test_jsonstream__larger_than_buffer),
		cmocka_unit_test(test_jsonstream__element_failure),
		cmocka_unit_test(test_jsonstream__write_error),
		cmocka_unit_test(test_jsonstream__length),
	};

	return cmocka_run_group_tests_name("jsonstream", tests, NULL, NULL);
}

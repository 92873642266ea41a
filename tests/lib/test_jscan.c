// SPDX-License-Identifier: MIT
/* jscan.c: JSON structure read a piece at a time, from memory and from files. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/jscan.h"

/* A file holding len bytes of text, open at its start. */
static int file_of(const char *text, size_t len)
{
	FILE *f = tmpfile();
	int fd;

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fflush(f), 0);
	fd = dup(fileno(f));
	fclose(f);
	assert_true(fd >= 0);
	return fd;
}

/* The value at the start of text skipped: its bytes, or the error as text. */
static const char *skip_one(const char *text)
{
	static char out[256];
	struct jscan *s;
	uint64_t begin;
	int err;

	assert_int_equal(jscan__from_mem(text, strlen(text), &s), 0);
	jscan__peek(s);
	begin = jscan__tell(s);
	err = jscan__skip_value(s);
	if (err)
		snprintf(out, sizeof(out), "error %d at %d", err, (int)jscan__tell(s));
	else
		snprintf(out, sizeof(out), "%.*s", (int)(jscan__tell(s) - begin), text + begin);
	jscan__free(s);
	return out;
}

static void test_jscan__values(void **state)
{
	(void)state;
	assert_string_equal(skip_one(" { \"a\" : [ {\"x\": \"]}\\\"\"} , 2 ] } ,"),
			    "{ \"a\" : [ {\"x\": \"]}\\\"\"} , 2 ] }");
	assert_string_equal(skip_one("\"t\\\\\" 1"), "\"t\\\\\"");
	assert_string_equal(skip_one("123,"), "123");
	assert_string_equal(skip_one("-1.5E+3"), "-1.5E+3"); /* a number at the end */
	assert_string_equal(skip_one("true]"), "true");
	assert_string_equal(skip_one("[ ]x"), "[ ]");
	assert_string_equal(skip_one("{}"), "{}");
	assert_string_equal(skip_one("[[],{},[{}]]"), "[[],{},[{}]]");
	/* Never stricter than json-c: its literals, control bytes in strings. */
	assert_string_equal(skip_one("[NaN,-Infinity,\"\x01\t\"]"), "[NaN,-Infinity,\"\x01\t\"]");
	assert_string_equal(skip_one("1x2 3"), "1x2");
}

static void test_jscan__malformed(void **state)
{
	char deep[200];
	size_t i;

	(void)state;
	/* The cursor stays at the byte that is wrong, or at the end. */
	assert_string_equal(skip_one("[1,2}"), "error -22 at 4");
	assert_string_equal(skip_one("\"x"), "error -22 at 2");
	assert_string_equal(skip_one("{\"a\" 1}"), "error -22 at 5");
	assert_string_equal(skip_one("{\"a\":1 \"b\":2}"), "error -22 at 7");
	assert_string_equal(skip_one("[1,]"), "error -22 at 3");
	assert_string_equal(skip_one("{\"a\":1,}"), "error -22 at 7");
	assert_string_equal(skip_one("[1"), "error -22 at 2");
	assert_string_equal(skip_one("}"), "error -22 at 0");
	assert_string_equal(skip_one(""), "error -22 at 0");
	/* Nesting past the bound is refused, not followed. */
	memset(deep, 0, sizeof(deep));
	for (i = 0; i < JSCAN_MAX_DEPTH + 1; i++)
		strcat(deep, "[");
	assert_string_equal(skip_one(deep), "error -7 at 64");
}

static void test_jscan__keys(void **state)
{
	const char *doc = "{ \"threads\" :[1], \"t\\u0061\": 2, \"a-very-long-key-indeed\":3}";
	struct jscan *s;
	char key[8];

	(void)state;
	assert_int_equal(jscan__from_mem(doc, strlen(doc), &s), 0);
	assert_int_equal(jscan__peek(s), '{');
	jscan__take(s);
	assert_int_equal(jscan__key(s, key, sizeof(key)), 7);
	assert_string_equal(key, "threads");
	/* Past the ':' and the blanks: at the value. */
	assert_int_equal(jscan__tell(s), 13);
	assert_int_equal(jscan__skip_value(s), 0);
	assert_int_equal(jscan__peek(s), ',');
	jscan__take(s);
	/* Raw bytes: the escape as written. */
	assert_int_equal(jscan__key(s, key, sizeof(key)), 7);
	assert_string_equal(key, "t\\u0061");
	assert_int_equal(jscan__skip_value(s), 0);
	jscan__take(s);
	/* Longer than the room: cut, with its whole length. */
	assert_int_equal(jscan__key(s, key, sizeof(key)), 22);
	assert_string_equal(key, "a-very-");
	assert_int_equal(jscan__skip_value(s), 0);
	assert_int_equal(jscan__peek(s), '}');
	jscan__take(s);
	assert_int_equal(jscan__peek(s), -ENODATA);
	jscan__free(s);

	assert_int_equal(jscan__from_mem("{1:2}", 5, &s), 0);
	jscan__take(s);
	assert_int_equal(jscan__key(s, key, sizeof(key)), -EINVAL);
	jscan__free(s);
	assert_int_equal(jscan__from_mem("{\"a\" 2}", 7, &s), 0);
	jscan__take(s);
	assert_int_equal(jscan__key(s, key, sizeof(key)), -EINVAL);
	jscan__free(s);
}

struct tapped {
	char *buf;
	size_t len;
	uint64_t next; /* where the next piece must start */
	int fail_after; /* fail the piece that crosses this many bytes (0: never) */
};

static int tap(void *ctx, uint64_t off, const char *p, size_t n)
{
	struct tapped *t = ctx;

	assert_int_equal(off, t->next);
	memcpy(t->buf + t->len, p, n);
	t->len += n;
	t->next = off + n;
	return t->fail_after && t->len >= (size_t)t->fail_after ? -ECANCELED : 0;
}

/*
 * A document of 3 MiB whose values fall across the file's pieces at every
 * kind of place: the same values, offsets and tapped bytes from a file as
 * from memory.
 */
static void test_jscan__pieces(void **state)
{
	size_t cap = 3u << 20, len = 0, i, n = 0;
	char *doc = malloc(cap), *p;
	struct tapped t = { 0 };
	struct jscan *mem, *file;
	int fd, c;

	(void)state;
	assert_non_null(doc);
	len += (size_t)snprintf(doc, cap, "[");
	for (i = 0; len < cap - 4096; i++) {
		p = doc + len;
		len += (size_t)snprintf(
			p, cap - len,
			"%s{\"k%zu\":\"%.*s\\\"\",\"n\":[%zu,-%zu.5e3,true,{}],\"s\":\"%*s\"}",
			i ? ",\n " : "", i, (int)(i % 37), "abcdefghijklmnopqrstuvwxyz0123456789",
			i * 7919, i, (int)(i % 53), "");
	}
	len += (size_t)snprintf(doc + len, cap - len, "]  ");
	t.buf = malloc(len);
	assert_non_null(t.buf);
	fd = file_of(doc, len);
	assert_int_equal(jscan__from_mem(doc, len, &mem), 0);
	assert_int_equal(jscan__from_fd(fd, &file), 0);
	jscan__tap(file, tap, &t);
	assert_int_equal(jscan__peek(mem), '[');
	assert_int_equal(jscan__peek(file), '[');
	jscan__take(mem);
	jscan__take(file);
	for (;;) {
		assert_int_equal(jscan__skip_value(mem), 0);
		assert_int_equal(jscan__skip_value(file), 0);
		assert_int_equal(jscan__tell(mem), jscan__tell(file));
		n++;
		c = jscan__peek(file);
		assert_int_equal(jscan__peek(mem), c);
		jscan__take(mem);
		jscan__take(file);
		if (c == ']')
			break;
		assert_int_equal(c, ',');
	}
	assert_int_equal(n, i);
	assert_int_equal(jscan__drain(file), 0);
	assert_int_equal(jscan__untap(file), 0);
	/* The tap saw every byte once, in order. */
	assert_int_equal(t.len, len);
	assert_memory_equal(t.buf, doc, len);

	/* A tap that fails stops the cursor; a seek starts it again. */
	t.len = 0;
	t.next = 0;
	t.fail_after = 300000;
	jscan__seek(file, 0);
	jscan__tap(file, tap, &t);
	assert_int_equal(jscan__skip_value(file), -ECANCELED);
	jscan__untap(file);
	jscan__seek(file, 1);
	assert_int_equal(jscan__skip_value(file), 0);
	assert_int_equal(jscan__peek(file), ',');

	jscan__free(mem);
	jscan__free(file);
	close(fd);
	free(t.buf);
	free(doc);
}

/* Every value, key, object and array of what a skip went over, however deep. */
static void test_jscan__counts(void **state)
{
	const char *doc = "{\"a\": [1, {\"b\": null}, [], \"s\"], \"c\": {}} [7]";
	struct jscan_counts n;
	struct jscan *s;

	(void)state;
	assert_int_equal(jscan__from_mem(doc, strlen(doc), &s), 0);
	jscan__counts(s, &n);
	assert_int_equal(n.values + n.keys + n.objects + n.arrays, 0);
	assert_int_equal(jscan__skip_value(s), 0);
	jscan__counts(s, &n);
	assert_int_equal(n.values, 8); /* the root, a, 1, {b}, null, [], "s", c */
	assert_int_equal(n.keys, 3);
	assert_int_equal(n.objects, 3);
	assert_int_equal(n.arrays, 2);
	/* A key read on its own counts too; the counts only grow. */
	jscan__seek(s, 0);
	jscan__take(s);
	assert_int_equal(jscan__key(s, NULL, 0), 1);
	jscan__counts(s, &n);
	assert_int_equal(n.keys, 4);
	jscan__free(s);
}

/* The offset of the first integer literal out of 64 bits text holds, or -1. */
static int64_t range_at(const char *text, size_t len)
{
	struct jscan *s;
	uint64_t at;

	assert_int_equal(jscan__from_mem(text, len, &s), 0);
	assert_int_equal(jscan__skip_value(s), 0);
	at = jscan__range_at(s);
	jscan__free(s);
	return at == UINT64_MAX ? -1 : (int64_t)at;
}

static int64_t range_of(const char *text)
{
	return range_at(text, strlen(text));
}

static void test_jscan__int_range(void **state)
{
	size_t n = 100000, len, i;
	char *big, *p;
	struct jscan *s;
	int fd;

	(void)state;
	/* The bounds themselves are json-c's; one past them is not. */
	assert_int_equal(range_of("[18446744073709551615, -9223372036854775808]"), -1);
	assert_int_equal(range_of("[1, 18446744073709551616]"), 4);
	assert_int_equal(range_of("[-9223372036854775809]"), 1);
	assert_int_equal(range_of("{\"a\": 99999999999999999999}"), 6);
	assert_int_equal(range_of("[9999999999999999999, -999999999999999999]"), -1);
	/* Leading zeros (json-c takes "-01" and "00") are not digits of the value. */
	assert_int_equal(
		range_of(
			"[-0000000000000000000000000001, 000000000000000000000018446744073709551615]"),
		-1);
	assert_int_equal(range_of("[000000000000000000000018446744073709551616]"), 1);
	/* Not integer literals: json-c's doubles, literals, what it refuses. */
	assert_int_equal(range_of("[18446744073709551616.0, 1e999, 184467440737095516160e-1]"), -1);
	assert_int_equal(range_of("[-18446744073709551616x, --18446744073709551616, NaN]"), -1);
	/* The first one counts; a scalar at the end of the text too. */
	assert_int_equal(range_of("[1, 18446744073709551617, -9223372036854775809]"), 4);
	assert_int_equal(range_of("18446744073709551616"), 0);

	/* 100000 digits, in memory and across a file's pieces: found, and fast. */
	len = n + JSCAN_READ_SIZE;
	big = malloc(len + 16);
	assert_non_null(big);
	p = big;
	*p++ = '[';
	memset(p, ' ', JSCAN_READ_SIZE - 1000);
	p += JSCAN_READ_SIZE - 1000;
	for (i = 0; i < n; i++)
		*p++ = (char)('1' + i % 9);
	*p++ = ']';
	len = (size_t)(p - big);
	assert_int_equal(range_at(big, len), JSCAN_READ_SIZE - 999);
	fd = file_of(big, len);
	assert_int_equal(jscan__from_fd(fd, &s), 0);
	assert_int_equal(jscan__skip_value(s), 0);
	assert_int_equal(jscan__range_at(s), JSCAN_READ_SIZE - 999);
	jscan__free(s);
	close(fd);
	/* ... and one that turns out a double far past the piece is none. */
	p[-1] = 'e';
	*p++ = '1';
	*p++ = ']';
	len = (size_t)(p - big);
	fd = file_of(big, len);
	assert_int_equal(jscan__from_fd(fd, &s), 0);
	assert_int_equal(jscan__skip_value(s), 0);
	assert_int_equal(jscan__range_at(s), UINT64_MAX);
	jscan__free(s);
	close(fd);
	free(big);
}

static void test_jscan__path_and_scalar(void **state)
{
	const char *doc =
		"{\"threads\": [{\"tid\": 1}, {\"tid\": 18446744073709551616, \"x\": [[0, 5]]}],"
		" \"window\": {\"wall_ns\": 2},"
		" \"a-key-of-more-than-sixty-four-bytes-which-a-path-cuts-short-here-xyz\": 3}";
	char path[128], num[8];
	struct jscan *s;

	(void)state;
	assert_int_equal(jscan__from_mem(doc, strlen(doc), &s), 0);
	assert_int_equal(
		jscan__path_at(s, (uint64_t)(strstr(doc, "1844") - doc), path, sizeof(path)), 0);
	assert_string_equal(path, "threads[1].tid");
	assert_int_equal(
		jscan__path_at(s, (uint64_t)(strstr(doc, "5]]") - doc), path, sizeof(path)), 0);
	assert_string_equal(path, "threads[1].x[0][1]");
	assert_int_equal(jscan__path_at(s, (uint64_t)(strstr(doc, "2}") - doc), path, sizeof(path)),
			 0);
	assert_string_equal(path, "window.wall_ns");
	assert_int_equal(jscan__path_at(s, (uint64_t)(strstr(doc, "3}") - doc), path, sizeof(path)),
			 0);
	assert_string_equal(path,
			    "a-key-of-more-than-sixty-four-bytes-which-a-path-cuts-short-here...");
	assert_int_equal(jscan__path_at(s, 0, path, sizeof(path)), 0);
	assert_string_equal(path, "");
	/* Cut to the room given. */
	assert_int_equal(jscan__path_at(s, (uint64_t)(strstr(doc, "5]]") - doc), path, 10), 0);
	assert_string_equal(path, "threads[1");

	/* A scalar's bytes, cut to fit, with its whole length. */
	jscan__seek(s, (uint64_t)(strstr(doc, "1844") - doc));
	assert_int_equal(jscan__scalar(s, num, sizeof(num)), 20);
	assert_string_equal(num, "1844674");
	assert_int_equal(jscan__peek(s), ',');
	assert_int_equal(jscan__scalar(s, num, sizeof(num)), -EINVAL);
	jscan__free(s);
}

static void test_jscan__line_col(void **state)
{
	const char *doc = "{\n  \"a\": 1,\n\n  \"b\": x}";
	struct jscan *s;
	size_t line, col;
	int fd = file_of(doc, strlen(doc));

	(void)state;
	assert_int_equal(jscan__from_fd(fd, &s), 0);
	assert_int_equal(jscan__line_col(s, (uint64_t)(strchr(doc, 'x') - doc), &line, &col), 0);
	assert_int_equal(line, 4);
	assert_int_equal(col, 8);
	assert_int_equal(jscan__line_col(s, 0, &line, &col), 0);
	assert_int_equal(line, 1);
	assert_int_equal(col, 1);
	/* Left at the offset. */
	assert_int_equal(jscan__line_col(s, 2, &line, &col), 0);
	assert_int_equal(jscan__peek(s), '"');
	jscan__free(s);
	close(fd);

	/* A read that fails says so. */
	fd = file_of(doc, strlen(doc));
	close(fd);
	assert_int_equal(jscan__from_fd(fd, &s), 0);
	assert_int_equal(jscan__peek(s), -EBADF);
	assert_int_equal(jscan__skip_value(s), -EBADF);
	jscan__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jscan__values),
		cmocka_unit_test(test_jscan__malformed),
		cmocka_unit_test(test_jscan__keys),
		cmocka_unit_test(test_jscan__pieces),
		cmocka_unit_test(test_jscan__line_col),
		cmocka_unit_test(test_jscan__counts),
		cmocka_unit_test(test_jscan__int_range),
		cmocka_unit_test(test_jscan__path_and_scalar),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

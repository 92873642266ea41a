// SPDX-License-Identifier: MIT
/* proctitle.c: /proc/PID/cmdline as ps shows it, parsed and read, with its bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/proctitle.h"
#include "testutil.h"

#define BIG (PROCTITLE_MAX + 1)

static char out[BIG];

static size_t parse(const char *raw, size_t len, bool more, bool *truncated)
{
	memset(out, 'Z', sizeof(out));
	return proctitle__parse(raw, len, more, out, sizeof(out), truncated);
}

/* An argv as exec gave it: NUL after each argument, each shown as a space but the last. */
static void test_proctitle__nul_separated(void **state)
{
	static const char raw[] = "/usr/lib/postgresql/15/bin/postgres\0-D\0/var/lib/pg\0";
	bool cut = true;

	(void)state;
	assert_int_equal(parse(raw, sizeof(raw) - 1, false, &cut),
			 strlen("/usr/lib/postgresql/15/bin/postgres -D /var/lib/pg"));
	assert_string_equal(out, "/usr/lib/postgresql/15/bin/postgres -D /var/lib/pg");
	assert_false(cut);
	/* An empty argument keeps its place: two spaces. */
	assert_int_equal(parse("a\0\0b\0", 5, false, &cut), 4);
	assert_string_equal(out, "a  b");
}

/*
 * A title written over the arguments (PostgreSQL's set_ps_display() on
 * Linux pads with NULs; its own trailing space is the title's), or, the
 * last argument's NUL overwritten, one string the kernel reads to its NUL.
 */
static void test_proctitle__rewritten_trailing_nuls(void **state)
{
	static const char pg[] = "postgres: checkpointer \0\0\0\0\0\0\0\0\0\0\0\0\0\0\0";
	static const char one[] = "postgres: bench postgres [local] UPDATE waiting";
	bool cut = true;

	(void)state;
	assert_int_equal(parse(pg, sizeof(pg) - 1, false, &cut), 23);
	assert_string_equal(out, "postgres: checkpointer ");
	assert_false(cut);
	assert_int_equal(parse(one, sizeof(one), false, &cut), sizeof(one) - 1);
	assert_string_equal(out, one);
	assert_false(cut);
	/* A newline is shown as a space, as procps shows it. */
	assert_int_equal(parse("sshd: a\nb\0", 10, false, &cut), 9);
	assert_string_equal(out, "sshd: a b");
	/* Bytes that are not UTF-8 are kept as they are (the document repairs them). */
	assert_int_equal(parse("x\xff\0", 3, false, &cut), 2);
	assert_string_equal(out, "x\xff");
}

/* Empty: a kernel thread's or a zombie's file, or only NULs. */
static void test_proctitle__empty(void **state)
{
	bool cut = true;

	(void)state;
	assert_int_equal(parse("", 0, false, &cut), 0);
	assert_string_equal(out, "");
	assert_false(cut);
	assert_int_equal(parse("\0\0\0", 3, false, &cut), 0);
	assert_string_equal(out, "");
	assert_false(cut);
	/* No room at all: nothing written. */
	assert_int_equal(proctitle__parse("abc", 3, false, out, 0, &cut), 0);
}

/* Longer than the bound: its first PROCTITLE_MAX bytes, marked cut; NULs past it do not count. */
static void test_proctitle__oversize(void **state)
{
	char *raw = malloc(3 * PROCTITLE_MAX);
	bool cut = false;

	(void)state;
	assert_non_null(raw);
	memset(raw, 'x', 3 * PROCTITLE_MAX);
	assert_int_equal(parse(raw, 3 * PROCTITLE_MAX, false, &cut), PROCTITLE_MAX);
	assert_true(cut);
	assert_int_equal(strlen(out), PROCTITLE_MAX);
	/* Exactly the bound, then only NULs: whole. */
	memset(raw + PROCTITLE_MAX, 0, PROCTITLE_MAX);
	assert_int_equal(parse(raw, 2 * PROCTITLE_MAX, false, &cut), PROCTITLE_MAX);
	assert_false(cut);
	/* The bound's last byte a separator, an argument after it: cut, the separator a space. */
	raw[PROCTITLE_MAX - 1] = '\0';
	raw[PROCTITLE_MAX + 5] = 'y';
	assert_int_equal(parse(raw, 2 * PROCTITLE_MAX, false, &cut), PROCTITLE_MAX);
	assert_true(cut);
	assert_int_equal(out[PROCTITLE_MAX - 1], ' ');
	/* What the reader saw past the bound (more) cuts it too. */
	memset(raw, 'x', PROCTITLE_MAX);
	assert_int_equal(parse(raw, PROCTITLE_MAX, true, &cut), PROCTITLE_MAX);
	assert_true(cut);
	assert_int_equal(parse(raw, PROCTITLE_MAX, false, &cut), PROCTITLE_MAX);
	assert_false(cut);
	/* A small buffer: its size less one. */
	assert_int_equal(proctitle__parse("abcdefgh\0", 9, false, out, 5, &cut), 4);
	assert_string_equal(out, "abcd");
	assert_true(cut);
	free(raw);
}

static void put_bytes(const char *dir, const char *rel, const char *bytes, size_t len)
{
	char path[512];
	FILE *f;

	tree_put(dir, rel, "");
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* The file read whole, its bound kept, and the gap that says why when there is no title. */
static void test_proctitle__read(void **state)
{
	char *dir = tree_new("proctitle"), *big = malloc(3 * PROCTITLE_MAX);
	struct proctitle t;

	(void)state;
	assert_non_null(big);
	put_bytes(dir, "proc/100/cmdline", "nginx: worker process\0\0\0", 24);
	/* kthreadd: PF_KTHREAD (0x200000) in stat's flags, its ninth field. */
	tree_put(dir, "proc/101/cmdline", "");
	tree_put(dir, "proc/101/stat", "101 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0\n");
	/* A zombie: no memory either, not a kernel thread ("a) b" to test the last ')'). */
	tree_put(dir, "proc/102/cmdline", "");
	tree_put(dir, "proc/102/stat", "102 (a) b) Z 1 102 102 0 -1 4227084 0 0\n");
	memset(big, 'y', 3 * PROCTITLE_MAX);
	put_bytes(dir, "proc/104/cmdline", big, 3 * PROCTITLE_MAX);
	memset(big + PROCTITLE_MAX, 0, 2 * PROCTITLE_MAX);
	put_bytes(dir, "proc/105/cmdline", big, 3 * PROCTITLE_MAX);
	/* The bound, then NULs, then an argument: cut. */
	big[2 * PROCTITLE_MAX + 7] = 'z';
	put_bytes(dir, "proc/106/cmdline", big, 3 * PROCTITLE_MAX);

	assert_int_equal(proctitle__read(dir, 100, &t), 0);
	assert_true(t.recorded);
	assert_false(t.truncated);
	assert_string_equal(t.text, "nginx: worker process");
	proctitle__free(&t);
	assert_null(t.text);

	assert_int_equal(proctitle__read(dir, 101, &t), 0);
	assert_false(t.recorded);
	assert_int_equal(t.reason, EV_GAP_UNSUPPORTED);
	assert_null(t.text);
	assert_int_equal(proctitle__read(dir, 102, &t), 0);
	assert_false(t.recorded);
	assert_int_equal(t.reason, EV_GAP_UNAVAILABLE);
	/* Gone. */
	assert_int_equal(proctitle__read(dir, 103, &t), 0);
	assert_false(t.recorded);
	assert_int_equal(t.reason, EV_GAP_UNAVAILABLE);

	assert_int_equal(proctitle__read(dir, 104, &t), 0);
	assert_true(t.recorded);
	assert_true(t.truncated);
	assert_int_equal(strlen(t.text), PROCTITLE_MAX);
	proctitle__free(&t);
	assert_int_equal(proctitle__read(dir, 105, &t), 0);
	assert_true(t.recorded);
	assert_false(t.truncated);
	assert_int_equal(strlen(t.text), PROCTITLE_MAX);
	proctitle__free(&t);
	assert_int_equal(proctitle__read(dir, 106, &t), 0);
	assert_true(t.recorded);
	assert_true(t.truncated);
	proctitle__free(&t);
	free(big);
	tree_free(dir);
}

/* This process's own file: the arguments cmocka's runner was started with. */
static void test_proctitle__self(void **state)
{
	struct proctitle t;
	char want[PROCTITLE_MAX + 1];
	FILE *f = fopen("/proc/self/cmdline", "r");
	size_t n, i;

	(void)state;
	assert_non_null(f);
	n = fread(want, 1, PROCTITLE_MAX, f);
	fclose(f);
	while (n && !want[n - 1])
		n--;
	for (i = 0; i < n; i++)
		want[i] = want[i] ? want[i] : ' ';
	want[n] = '\0';
	assert_int_equal(proctitle__read("/", (uint32_t)getpid(), &t), 0);
	assert_true(t.recorded);
	assert_string_equal(t.text, want);
	proctitle__free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proctitle__nul_separated),
		cmocka_unit_test(test_proctitle__rewritten_trailing_nuls),
		cmocka_unit_test(test_proctitle__empty),
		cmocka_unit_test(test_proctitle__oversize),
		cmocka_unit_test(test_proctitle__read),
		cmocka_unit_test(test_proctitle__self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

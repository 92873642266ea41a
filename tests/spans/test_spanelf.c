// SPDX-License-Identifier: MIT
/*
 * spanelf against this test's own executable: the sites of its functions
 * must be where their bytes are in the file, and files that are not ELF
 * objects must say so.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spans/spanelf.h"
#include "testutil.h"

static volatile int sink;

__attribute__((noinline, used)) static int spanelf_marker_one(int x)
{
	for (int i = 0; i < x; i++)
		sink += i * 7;
	return sink;
}

__attribute__((noinline, used)) static int spanelf_marker_two(int x)
{
	for (int i = 0; i < x; i++)
		sink ^= i * 13;
	return sink + 1;
}

static void assert_bytes_at(const char *path, uint64_t off, const void *mem, size_t n)
{
	unsigned char buf[16];
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_true(n <= sizeof(buf));
	assert_int_equal(pread(fd, buf, n, (off_t)off), (ssize_t)n);
	assert_memory_equal(buf, mem, n);
	close(fd);
}

static void test_spanelf__symbols_self(void **state)
{
	struct site_vec vec = { 0 };
	struct elf_file f;
	char exe[PATH_MAX], reason[256];
	size_t matched = 99;
	const struct span_site *one, *two;

	(void)state;
	assert_non_null(realpath("/proc/self/exe", exe));
	assert_int_equal(elf_file__open(&f, exe, "self", reason, sizeof(reason)), 0);
	assert_int_equal(elf_file__load_syms(&f), 0);
	assert_true(f.has_symtab);
	assert_int_equal(
		spanelf__symbols_scan(&vec, &f, "self", exe, "spanelf_marker_*", NULL, &matched),
		0);
	assert_int_equal(matched, 2);
	assert_int_equal(vec.n, 2);
	/* Address order; which marker the linker put first is its choice. */
	one = !strcmp(vec.v[0].symbol, "spanelf_marker_one") ? &vec.v[0] : &vec.v[1];
	two = one == &vec.v[0] ? &vec.v[1] : &vec.v[0];
	assert_string_equal(one->symbol, "spanelf_marker_one");
	assert_string_equal(two->symbol, "spanelf_marker_two");
	assert_true(vec.v[0].vaddr < vec.v[1].vaddr);
	assert_string_equal(one->metric, "spanelf-marker-one");
	assert_int_equal(one->err, 0);
	assert_false(one->from_note);
	assert_string_equal(one->object, "self");
	assert_string_equal(one->open_path, exe);
	/* Text is not relocated: the file holds the bytes that run. */
	assert_bytes_at(exe, one->offset, (const void *)spanelf_marker_one, 12);
	assert_bytes_at(exe, two->offset, (const void *)spanelf_marker_two, 12);
	assert_int_equal(two->offset - one->offset, two->vaddr - one->vaddr);

	/* A given metric, and a glob that matches nothing. */
	vec.n = 0;
	assert_int_equal(
		spanelf__symbols_scan(&vec, &f, "self", exe, "spanelf_marker_two", "m2", &matched),
		0);
	assert_int_equal(matched, 1);
	assert_string_equal(vec.v[0].metric, "m2");
	vec.n = 0;
	assert_int_equal(
		spanelf__symbols_scan(&vec, &f, "self", exe, "no_such_fn_*", NULL, &matched), 0);
	assert_int_equal(matched, 0);
	assert_int_equal(vec.n, 0);
	/* This test has no span notes. */
	assert_int_equal(spanelf__notes_scan(&vec, &f, "self", exe), 0);
	assert_int_equal(vec.n, 0);
	elf_file__close(&f);
	assert_int_equal(f.fd, -1);
	assert_null(f.elf);
	free(vec.v);
	assert_int_equal(spanelf_marker_one(2) + spanelf_marker_two(2) > -100, 1);
}

static void test_spanelf__open_errors(void **state)
{
	char *root = tree_new("spanelf"), path[PATH_MAX], reason[256];
	struct elf_file f;

	(void)state;
	tree_put(root, "text", "not an ELF file\n");
	tree_put(root, "dir", NULL);
	snprintf(path, sizeof(path), "%s/text", root);
	assert_int_equal(elf_file__open(&f, path, "/lib/t.so", reason, sizeof(reason)), -ENOEXEC);
	assert_string_equal(reason, "/lib/t.so is not an ELF file");
	assert_int_equal(f.fd, -1);
	snprintf(path, sizeof(path), "%s/dir", root);
	assert_int_equal(elf_file__open(&f, path, "/lib/d", reason, sizeof(reason)), -EISDIR);
	assert_string_equal(reason, "/lib/d is a directory, not a regular file");
	/* A FIFO with no writer: refused at once, not waited on (issue 39). */
	snprintf(path, sizeof(path), "%s/fifo", root);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(elf_file__open(&f, path, "/lib/f.so", reason, sizeof(reason)), -ENOEXEC);
	assert_string_equal(reason, "/lib/f.so is a FIFO (named pipe), not a regular file");
	assert_int_equal(f.fd, -1);
	snprintf(path, sizeof(path), "%s/gone", root);
	assert_int_equal(elf_file__open(&f, path, "/lib/g.so (deleted)", reason, sizeof(reason)),
			 -ENOENT);
	assert_string_equal(
		reason,
		"cannot open /lib/g.so (deleted): No such file or directory (deleted after it was mapped)");
	tree_free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spanelf__symbols_self),
		cmocka_unit_test(test_spanelf__open_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

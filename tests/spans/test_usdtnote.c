// SPDX-License-Identifier: MIT
/*
 * usdtnote.c: SDT note descriptors parsed (either byte order, strings
 * bounded, arguments counted), and the probes of Debian's libstdc++ read
 * from the file as readelf prints them (tests/integration/list_usdt.sh
 * compares whole binaries).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "spans/usdtnote.h"

static size_t desc(unsigned char *buf, bool be, uint64_t pc, uint64_t base, uint64_t sema,
		   const char *strs, size_t strs_len)
{
	uint64_t v[3] = { pc, base, sema };
	int i, b;

	for (i = 0; i < 3; i++)
		for (b = 0; b < 8; b++)
			buf[i * 8 + b] = (unsigned char)(v[i] >> (8 * (be ? 7 - b : b)));
	memcpy(buf + 24, strs, strs_len);
	return 24 + strs_len;
}

static void test_usdtnote__parse_desc(void **state)
{
	static const char strs[] = "postgresql\0query__start\0008@%rbx -4@$1  8@-144(%rbp)";
	unsigned char buf[512];
	struct usdt_site s;
	uint64_t base = 0;
	size_t n;
	int be;

	(void)state;
	for (be = 0; be < 2; be++) {
		memset(&s, 0, sizeof(s));
		n = desc(buf, be, 0x4722d3, 0x8cc5a0, 0x88595e, strs, sizeof(strs));
		assert_int_equal(usdtnote__parse_desc(buf, n, be, &s, &base), 0);
		assert_int_equal(s.addr, 0x4722d3);
		assert_int_equal(base, 0x8cc5a0);
		assert_int_equal(s.semaphore, 0x88595e);
		assert_string_equal(s.provider, "postgresql");
		assert_string_equal(s.name, "query__start");
		assert_string_equal(s.args, "8@%rbx -4@$1  8@-144(%rbp)");
		assert_int_equal(s.nr_args, 3);
	}
	/* No arguments at all: an empty string. */
	n = desc(buf, false, 1, 2, 0, "p\0n\0", 5);
	assert_int_equal(usdtnote__parse_desc(buf, n, false, &s, &base), 0);
	assert_int_equal(s.nr_args, 0);
	/* Short, a string missing or unterminated, an empty provider. */
	assert_int_equal(usdtnote__parse_desc(buf, 20, false, &s, &base), -EINVAL);
	n = desc(buf, false, 1, 2, 0, "p\0n", 3);
	assert_int_equal(usdtnote__parse_desc(buf, n, false, &s, &base), -EINVAL);
	n = desc(buf, false, 1, 2, 0, "p\0n\0args", 8);
	assert_int_equal(usdtnote__parse_desc(buf, n, false, &s, &base), -EINVAL);
	n = desc(buf, false, 1, 2, 0, "\0n\0\0", 4);
	assert_int_equal(usdtnote__parse_desc(buf, n, false, &s, &base), -EINVAL);
	/* A name that is no identifier, arguments with a control byte: not shown, not parsed. */
	n = desc(buf, false, 1, 2, 0, "p\nq\0n\0\0", 7);
	assert_int_equal(usdtnote__parse_desc(buf, n, false, &s, &base), -EINVAL);
	n = desc(buf, false, 1, 2, 0, "p\0n\0008@%rbx\t\0", 12);
	assert_int_equal(usdtnote__parse_desc(buf, n, false, &s, &base), -EINVAL);
	n = desc(buf, false, 1, 2, 0, "lib.x-y\0n_1\0\0", 13);
	assert_int_equal(usdtnote__parse_desc(buf, n, false, &s, &base), 0);
}

static void test_usdtnote__name_bound(void **state)
{
	unsigned char buf[512];
	char strs[200];
	struct usdt_site s;
	uint64_t base;
	size_t n;

	(void)state;
	/* A 63-byte name fits with its NUL; 64 bytes do not. */
	memset(strs, 'a', sizeof(strs));
	strs[63] = '\0';
	strs[64] = 'n';
	strs[65] = '\0';
	strs[66] = '\0';
	n = desc(buf, false, 1, 2, 0, strs, 67);
	assert_int_equal(usdtnote__parse_desc(buf, n, false, &s, &base), 0);
	assert_int_equal(strlen(s.provider), 63);
	memset(strs, 'a', sizeof(strs));
	strs[64] = '\0';
	strs[65] = 'n';
	strs[66] = '\0';
	strs[67] = '\0';
	n = desc(buf, false, 1, 2, 0, strs, 68);
	assert_int_equal(usdtnote__parse_desc(buf, n, false, &s, &base), -EINVAL);
}

static void test_usdtnote__libstdcxx(void **state)
{
	const char *lib = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
	struct usdt_list l = { 0 };
	char reason[256] = "";
	size_t i, throws = 0;

	(void)state;
	assert_int_equal(usdtnote__read(lib, lib, &l, reason, sizeof(reason)), 0);
	assert_int_equal(l.nr, 3);
	assert_int_equal(l.dropped, 0);
	for (i = 0; i < l.nr; i++) {
		assert_int_equal(l.v[i].err, 0);
		assert_string_equal(l.v[i].provider, "libstdcxx");
		assert_int_equal(l.v[i].semaphore, 0);
		assert_int_equal(l.v[i].nr_args, 2);
		/* A shared library's text is mapped at its file offset. */
		assert_int_equal(l.v[i].offset, l.v[i].addr);
		throws += !strcmp(l.v[i].name, "throw");
	}
	assert_int_equal(throws, 1);
	usdtnote__free(&l);
	assert_int_equal(usdtnote__read("/etc/passwd", "/etc/passwd", &l, reason, sizeof(reason)),
			 -ENOEXEC);
	assert_non_null(strstr(reason, "/etc/passwd"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_usdtnote__parse_desc),
		cmocka_unit_test(test_usdtnote__name_bound),
		cmocka_unit_test(test_usdtnote__libstdcxx),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

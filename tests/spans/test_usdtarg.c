// SPDX-License-Identifier: MIT
/*
 * usdtarg: argument specs as SDT notes write them, into what the BPF side
 * reads (register offsets are struct pt_regs', which on x86-64 is the
 * user ABI's struct user_regs_struct); and every argument of the probes
 * Debian's PostgreSQL 15, CPython 3.11 and libstdc++ ship is either read or
 * refused with its reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/user.h>

#include "spans/usdtarg.h"
#include "spans/usdtnote.h"

#define OFF(r) ((uint32_t)offsetof(struct user_regs_struct, r))

static void test_usdtarg__forms(void **state)
{
	struct {
		const char *args;
		unsigned int n;
		uint8_t type, size, is_signed;
		uint32_t reg_off;
		int64_t val_off;
	} good[] = {
		{ "8@%rbx", 0, KHBPF_ARG_REG, 8, 0, OFF(rbx), 0 },
		{ "8@%rbx -4@%r13d", 1, KHBPF_ARG_REG, 4, 1, OFF(r13), 0 },
		{ "-4@$1", 0, KHBPF_ARG_IMM, 4, 1, 0, 1 },
		{ "8@$-77", 0, KHBPF_ARG_IMM, 8, 0, 0, -77 },
		{ "-4@112(%rsp)", 0, KHBPF_ARG_DEREF, 4, 1, OFF(rsp), 112 },
		{ "a 8@-16(%rbp)", 1, KHBPF_ARG_DEREF, 8, 0, OFF(rbp), -16 },
		{ "1@(%rdi)", 0, KHBPF_ARG_DEREF, 1, 0, OFF(rdi), 0 },
		{ "  2@%ax   -1@%sil ", 1, KHBPF_ARG_REG, 1, 1, OFF(rsi), 0 },
		{ "8@%r15", 0, KHBPF_ARG_REG, 8, 0, OFF(r15), 0 },
	};
	struct {
		const char *args, *why;
		unsigned int n;
	} bad[] = {
		{ "8@sym(%rip)", "is RIP-relative", 0 },
		{ "4@(%rax,%rbx,4)", "has an index register", 0 },
		{ "8@%rbx", "has 1 argument, not an argument 1", 1 },
		{ "", "has 0 arguments", 0 },
		{ "3@%rax", "is not a spec", 0 },
		{ "8@%xmm0", "is not a spec", 0 },
		{ "8@$x", "is not a spec", 0 },
		{ "8%rax", "is not a spec", 0 },
	};
	struct khbpf_arg_spec a;
	char why[160];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(usdtarg__parse(good[i].args, good[i].n, &a, why, sizeof(why)), 0);
		assert_int_equal(a.type, good[i].type);
		assert_int_equal(a.size, good[i].size);
		assert_int_equal(a.is_signed, good[i].is_signed);
		assert_int_equal(a.reg_off, good[i].reg_off);
		assert_true(a.val_off == good[i].val_off);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		assert_int_equal(usdtarg__parse(bad[i].args, bad[i].n, &a, why, sizeof(why)),
				 -EINVAL);
		if (!strstr(why, bad[i].why))
			fail_msg("'%s': %s", bad[i].args, why);
		assert_int_equal(a.type, KHBPF_ARG_NONE);
	}
	assert_int_equal(usdtarg__function_arg(0, &a, why, sizeof(why)), 0);
	assert_int_equal(a.reg_off, OFF(rdi));
	assert_int_equal(a.type, KHBPF_ARG_REG);
	assert_int_equal(a.size, 8);
	assert_int_equal(usdtarg__function_arg(5, &a, why, sizeof(why)), 0);
	assert_int_equal(a.reg_off, OFF(r9));
	assert_int_equal(usdtarg__function_arg(6, &a, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "only the first 6"));
}

/* Every argument of the probes real packages ship: read, or refused for RIP-relative. */
static void test_usdtarg__real_probes(void **state)
{
	const char *files[] = { "/usr/lib/postgresql/15/bin/postgres", "/usr/bin/python3.11",
				"/usr/lib/x86_64-linux-gnu/libstdc++.so.6" };
	size_t f, i, read = 0, rip = 0;

	(void)state;
	for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct usdt_list l = { 0 };
		char reason[256];

		assert_int_equal(usdtnote__read(files[f], files[f], &l, reason, sizeof(reason)), 0);
		for (i = 0; i < l.nr; i++) {
			struct khbpf_arg_spec a;
			unsigned int n;
			char why[160];

			for (n = 0; n < l.v[i].nr_args; n++) {
				if (!usdtarg__parse(l.v[i].args, n, &a, why, sizeof(why))) {
					read++;
					continue;
				}
				if (!strstr(why, "RIP-relative"))
					fail_msg("%s %s:%s: %s", files[f], l.v[i].provider,
						 l.v[i].name, why);
				rip++;
			}
			assert_int_equal(
				usdtarg__parse(l.v[i].args, l.v[i].nr_args, &a, why, sizeof(why)),
				-EINVAL);
		}
		usdtnote__free(&l);
	}
	/* PostgreSQL's buffer__sync__done and checkpoint__done use sym(%rip) (libbpf 1.1 too refuses it). */
	assert_true(read > 100);
	assert_true(rip > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_usdtarg__forms),
		cmocka_unit_test(test_usdtarg__real_probes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * The USDT span benchmark's workload (`make bench-usdt`, tools/bench_usdt.py):
 * one thread runs a loop of --calls N iterations, each a trivial body between
 * two USDT probes,
 *	usdtbench:op__start(text, kind)   text: a string, kind: an int (i % 4)
 *	usdtbench:op__done(kind)
 * and prints
 *	{"site": "nop", "calls": N, "elapsed_ns": T}
 * with T the loop's CLOCK_MONOTONIC time; exit 1 if the body did not count
 * exactly N. The probes come from <sys/sdt.h> (Debian's systemtap-sdt-dev)
 * without semaphores: each site is one nop whether probed or not, so the
 * unprobed loop pays nothing for them and no tool has a counter to raise.
 * --site nop5 runs the same loop between usdtbench:op5__start and
 * op5__done, whose sites are one 5-byte NOP each instead of sdt.h's 1-byte
 * one: the kind of site kernels from 6.18 probe without a trap.
 *
 * Usage: usdtbench [--site nop|nop5] [--calls N] [--text STRING] [--wait]
 * --text is op__start's string (default "SELECT 1"), the str key's value.
 * --wait prints "ready" on stdout, then reads stdin until a byte or EOF
 * before the loop, so that probes can be attached first; after the loop's
 * line it reads stdin to EOF before it exits, so that a tool that ends with
 * the process (bpftrace -p) can have its programs read first.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/sdt.h>

#include "workload.h"

/* noinline: the two loops stay apart, each with its own pair of sites. */
static __attribute__((noinline)) unsigned long loop_nop(unsigned long calls, const char *text)
{
	unsigned long count = 0, i;
	int kind;

	for (i = 0; i < calls; i++) {
		kind = (int)(i & 3);
		/* text from argv: a register or stack argument, never RIP-relative. */
		STAP_PROBE2(usdtbench, op__start, text, kind);
		count++;
		KEEP(count);
		STAP_PROBE1(usdtbench, op__done, kind);
	}
	return count;
}

/*
 * sdt.h has no knob for its nop (it is the 1-byte one on x86): the probes
 * below expand after this redefinition. Statements, since a macro argument
 * cannot hold the commas of `nopl 0x0(%rax,%rax,1)`.
 */
/* clang-format off */
#if defined(__x86_64__)
#undef _SDT_NOP
#define _SDT_NOP .byte 0x0f; .byte 0x1f; .byte 0x44; .byte 0x00; .byte 0x00
#endif
/* clang-format on */

static __attribute__((noinline)) unsigned long loop_nop5(unsigned long calls, const char *text)
{
	unsigned long count = 0, i;
	int kind;

	for (i = 0; i < calls; i++) {
		kind = (int)(i & 3);
		STAP_PROBE2(usdtbench, op5__start, text, kind);
		count++;
		KEEP(count);
		STAP_PROBE1(usdtbench, op5__done, kind);
	}
	return count;
}

static int usage(void)
{
	fprintf(stderr, "usdtbench: usage: usdtbench [--site nop|nop5] [--calls 1..1000000000] "
			"[--text STRING] [--wait]\n");
	return 2;
}

int main(int argc, char **argv)
{
	unsigned long (*loop)(unsigned long, const char *) = loop_nop;
	unsigned long calls = 200000, count;
	const char *text = "SELECT 1", *site = "nop";
	bool wait = false;
	uint64_t t0, t1;
	int a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--wait")) {
			wait = true;
		} else if (!strcmp(argv[a], "--calls") && a + 1 < argc) {
			if (parse_ulong(argv[++a], 1, 1000000000, &calls))
				return usage();
		} else if (!strcmp(argv[a], "--site") && a + 1 < argc) {
			site = argv[++a];
			if (!strcmp(site, "nop5"))
				loop = loop_nop5;
			else if (strcmp(site, "nop"))
				return usage();
		} else if (!strcmp(argv[a], "--text") && a + 1 < argc) {
			text = argv[++a];
		} else {
			return usage();
		}
	}
	if (wait) {
		printf("ready\n");
		fflush(stdout);
		read_byte(STDIN_FILENO);
	}

	t0 = now_ns();
	count = loop(calls, text);
	t1 = now_ns();

	printf("{\"site\": \"%s\", \"calls\": %lu, \"elapsed_ns\": %llu}\n", site, count,
	       (unsigned long long)(t1 - t0));
	fflush(stdout);
	while (wait && read_byte(STDIN_FILENO))
		;
	if (count != calls) {
		fprintf(stderr, "usdtbench: counted %lu calls, expected %lu\n", count, calls);
		return 1;
	}
	return 0;
}

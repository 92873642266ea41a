// SPDX-License-Identifier: MIT
/*
 * The span benchmark's workload (`make bench`, tools/bench_spans.py): one
 * thread calls one function --calls N times in a tight loop and prints
 *	{"site": "annotated", "calls": N, "elapsed_ns": T}
 * with T the loop's CLOCK_MONOTONIC time; exit 1 if the function did not
 * count exactly N calls.
 *
 * Usage: spanbench --site annotated|plain [--calls N] [--wait]
 *  annotated  bench_annotated(), KHBPF_SPAN "bench-annotated": built with
 *             clang (see the Makefile) it starts with one 5-byte NOP
 *  plain      bench_plain(), the same body without the annotation: an
 *             ordinary first instruction, for --span and other tools
 * --wait prints "ready" on stdout, then reads stdin until a byte or EOF
 * before the loop, so that probes can be attached first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../include/khbpf/span.h"
#include "workload.h"

/* Keeps the compiler from folding the calls or their results away. */

/* Non-static, so both are in the symbol table by these names. */
unsigned long bench_annotated(unsigned long *count, unsigned long x);
unsigned long bench_plain(unsigned long *count, unsigned long x);

KHBPF_SPAN(bench_annotated, "bench-annotated")
unsigned long bench_annotated(unsigned long *count, unsigned long x)
{
	(*count)++;
	KEEP(x);
	return x * 3 + 1;
}

__attribute__((noinline, used)) unsigned long bench_plain(unsigned long *count, unsigned long x)
{
	(*count)++;
	KEEP(x);
	return x * 3 + 1;
}

static int usage(void)
{
	fprintf(stderr, "spanbench: usage: spanbench --site annotated|plain "
			"[--calls 1..1000000000] [--wait]\n");
	return 2;
}

int main(int argc, char **argv)
{
	unsigned long (*fn)(unsigned long *, unsigned long) = NULL;
	unsigned long calls = 200000, count = 0, v = 0, i;
	const char *site = NULL;
	bool wait = false;
	uint64_t t0, t1;
	int a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--wait")) {
			wait = true;
		} else if (!strcmp(argv[a], "--site") && a + 1 < argc) {
			site = argv[++a];
		} else if (!strcmp(argv[a], "--calls") && a + 1 < argc) {
			if (parse_ulong(argv[++a], 1, 1000000000, &calls))
				return usage();
		} else {
			return usage();
		}
	}
	if (site && !strcmp(site, "annotated"))
		fn = bench_annotated;
	else if (site && !strcmp(site, "plain"))
		fn = bench_plain;
	else
		return usage();
	if (wait) {
		printf("ready\n");
		fflush(stdout);
		read_byte(STDIN_FILENO);
	}

	t0 = now_ns();
	for (i = 0; i < calls; i++) {
		v = fn(&count, v + i);
		KEEP(v);
	}
	t1 = now_ns();

	printf("{\"site\": \"%s\", \"calls\": %lu, \"elapsed_ns\": %llu}\n", site, count,
	       (unsigned long long)(t1 - t0));
	if (count != calls) {
		fprintf(stderr, "spanbench: %lu calls counted, expected %lu\n", count, calls);
		return 1;
	}
	return 0;
}

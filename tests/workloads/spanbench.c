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
#include <pthread.h>
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
			"[--calls 1..1000000000] [--threads 1..64] [--wait]\n");
	return 2;
}

struct loop {
	pthread_t thread;
	unsigned long (*fn)(unsigned long *, unsigned long);
	unsigned long calls, count;
};

static pthread_barrier_t start;

static void *run_loop(void *arg)
{
	struct loop *l = arg;
	unsigned long v = 0, i;

	pthread_barrier_wait(&start);
	for (i = 0; i < l->calls; i++) {
		v = l->fn(&l->count, v + i);
		KEEP(v);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long (*fn)(unsigned long *, unsigned long) = NULL;
	unsigned long calls = 200000, threads = 1, total = 0, t;
	struct loop loops[64];
	const char *site = NULL;
	bool wait = false, ok = true;
	uint64_t t0, t1;
	int a, err;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--wait")) {
			wait = true;
		} else if (!strcmp(argv[a], "--site") && a + 1 < argc) {
			site = argv[++a];
		} else if (!strcmp(argv[a], "--calls") && a + 1 < argc) {
			if (parse_ulong(argv[++a], 1, 1000000000, &calls))
				return usage();
		} else if (!strcmp(argv[a], "--threads") && a + 1 < argc) {
			if (parse_ulong(argv[++a], 1, 64, &threads))
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

	/* The main thread is one of the loops: one thread stays one thread. */
	pthread_barrier_init(&start, NULL, (unsigned int)threads);
	for (t = 0; t < threads; t++)
		loops[t] = (struct loop){ .fn = fn, .calls = calls };
	for (t = 1; t < threads; t++) {
		err = pthread_create(&loops[t].thread, NULL, run_loop, &loops[t]);
		if (err) {
			fprintf(stderr, "spanbench: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	t0 = now_ns();
	run_loop(&loops[0]);
	for (t = 1; t < threads; t++)
		pthread_join(loops[t].thread, NULL);
	t1 = now_ns();

	for (t = 0; t < threads; t++) {
		total += loops[t].count;
		if (loops[t].count != calls) {
			fprintf(stderr, "spanbench: thread %lu counted %lu calls, expected %lu\n",
				t, loops[t].count, calls);
			ok = false;
		}
	}
	printf("{\"site\": \"%s\", \"threads\": %lu, \"calls\": %lu, \"elapsed_ns\": %llu}\n", site,
	       threads, total, (unsigned long long)(t1 - t0));
	return ok ? 0 : 1;
}

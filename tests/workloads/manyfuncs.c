// SPDX-License-Identifier: MIT
/*
 * The many-sites workload (tests/integration/spans_many.sh,
 * tools/bench_span_attach.py): 1000 small functions, many_1000 .. many_1999,
 * for `--span 'many_1*'`. Each of --threads threads (default 2) calls
 * many_1NNN exactly (NNN % 7 + 1) * --calls times, then it prints
 *	{"functions": 1000, "threads": T, "calls": TOTAL}
 * and exits 1 if a function did not count what it was called.
 *
 * Usage: manyfuncs [--calls N] [--threads T] [--wait]
 * --wait prints "ready" on stdout, then reads stdin until a byte or EOF
 * before the calls, so that probes can be attached first.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "workload.h"

#define NR_FUNCS 1000
#define FIRST 1000

/* One counter per function and thread: each body differs, so none is folded into another. */
static unsigned long hits[64][NR_FUNCS];

/* clang-format off */
#define FN(n)								\
	__attribute__((noinline, used)) void many_##n(unsigned long *h); \
	__attribute__((noinline, used)) void many_##n(unsigned long *h)	\
	{								\
		h[n - FIRST]++;						\
		KEEP(h);						\
	}
#define FN10(p)	FN(p##0) FN(p##1) FN(p##2) FN(p##3) FN(p##4) \
		FN(p##5) FN(p##6) FN(p##7) FN(p##8) FN(p##9)
#define FN100(p) FN10(p##0) FN10(p##1) FN10(p##2) FN10(p##3) FN10(p##4) \
		 FN10(p##5) FN10(p##6) FN10(p##7) FN10(p##8) FN10(p##9)
FN100(10) FN100(11) FN100(12) FN100(13) FN100(14)
FN100(15) FN100(16) FN100(17) FN100(18) FN100(19)

#define PTR(n) many_##n,
#define PTR10(p) PTR(p##0) PTR(p##1) PTR(p##2) PTR(p##3) PTR(p##4) \
		 PTR(p##5) PTR(p##6) PTR(p##7) PTR(p##8) PTR(p##9)
#define PTR100(p) PTR10(p##0) PTR10(p##1) PTR10(p##2) PTR10(p##3) PTR10(p##4) \
		  PTR10(p##5) PTR10(p##6) PTR10(p##7) PTR10(p##8) PTR10(p##9)
static void (*const funcs[NR_FUNCS])(unsigned long *) = {
	PTR100(10) PTR100(11) PTR100(12) PTR100(13) PTR100(14)
	PTR100(15) PTR100(16) PTR100(17) PTR100(18) PTR100(19)
};
/* clang-format on */

static unsigned long calls = 1;

static unsigned long times(unsigned long i)
{
	return (i % 7 + 1) * calls;
}

static void *run(void *arg)
{
	unsigned long *h = arg, i, k;

	for (i = 0; i < NR_FUNCS; i++)
		for (k = 0; k < times(i); k++)
			funcs[i](h);
	return NULL;
}

static int usage(void)
{
	fprintf(stderr,
		"manyfuncs: usage: manyfuncs [--calls 1..100000] [--threads 1..64] [--wait]\n");
	return 2;
}

int main(int argc, char **argv)
{
	unsigned long threads = 2, total = 0, t, i;
	pthread_t tids[64];
	bool wait = false, ok = true;
	int a, err;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--wait")) {
			wait = true;
		} else if (!strcmp(argv[a], "--calls") && a + 1 < argc) {
			if (parse_ulong(argv[++a], 1, 100000, &calls))
				return usage();
		} else if (!strcmp(argv[a], "--threads") && a + 1 < argc) {
			if (parse_ulong(argv[++a], 1, 64, &threads))
				return usage();
		} else {
			return usage();
		}
	}
	if (wait) {
		printf("ready\n");
		fflush(stdout);
		read_byte(STDIN_FILENO);
	}
	/* The main thread is the first caller: one thread stays one thread. */
	for (t = 1; t < threads; t++) {
		err = pthread_create(&tids[t], NULL, run, hits[t]);
		if (err) {
			fprintf(stderr, "manyfuncs: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	run(hits[0]);
	for (t = 1; t < threads; t++)
		pthread_join(tids[t], NULL);
	for (t = 0; t < threads; t++) {
		for (i = 0; i < NR_FUNCS; i++) {
			total += hits[t][i];
			if (hits[t][i] != times(i)) {
				fprintf(stderr,
					"manyfuncs: thread %lu: many_%lu counted %lu, expected %lu\n",
					t, i + FIRST, hits[t][i], times(i));
				ok = false;
			}
		}
	}
	printf("{\"functions\": %d, \"threads\": %lu, \"calls\": %lu}\n", NR_FUNCS, threads, total);
	return ok ? 0 : 1;
}

// SPDX-License-Identifier: MIT
/*
 * The annotated workload of the span tests. Each of --threads N threads
 * (default 2) runs --iterations M rounds (default 10) of:
 *	stage-outer -> stage-middle -> stage-inner    nested three deep
 *	stage-recurse                                  5 nested calls of itself
 *	stage-sib-a, then stage-sib-b                  siblings
 *	stage-sleep                                    usleep(1000) inside
 *	stage-spin                                     ~3 ms on the CPU
 *	stage-migrate                                  moves itself to another CPU
 *	                                               (sched_setaffinity), ~2 ms on it
 * so every stage is called N*M times, stage-recurse 5*N*M. The calls are
 * counted as they happen and printed at the end as one JSON line on stdout,
 *	{"stage-outer": 20, ..., "stage-recurse": 100, ...}
 * after checking they equal those formulas (exit 1 if not).
 *
 * Usage: spanned [--threads N] [--iterations M] [--wait] [--hold]
 * --wait prints "ready" on stdout once started, then reads stdin until a
 * byte or EOF before the rounds begin, so a test or loader can attach first.
 * --hold: after the rounds, the main thread enters stage-hold, prints
 * "holding" and stays inside it until stdin gives a byte or EOF: a span
 * that is still open when a collection window ends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../include/khbpf/span.h"
#include "workload.h"

#define RECURSE_DEPTH 5
#define SPIN_NS 3000000ull

/* Each thread counts into its own struct: no shared writes, no races. */
struct counts {
	unsigned long outer, middle, inner, recurse, sib_a, sib_b, sleep, spin, migrate;
};

/* Non-static spans have prototypes for -Wmissing-prototypes. */
int stage_outer(struct counts *c, int x);
int stage_sib_a(struct counts *c, int x);
int stage_spin(struct counts *c);
int stage_migrate(struct counts *c);

KHBPF_SPAN(stage_inner, "stage-inner")
static int stage_inner(struct counts *c, int x)
{
	c->inner++;
	KEEP(x);
	return x * 3 + 1;
}

KHBPF_SPAN(stage_middle, "stage-middle")
static int stage_middle(struct counts *c, int x)
{
	int r;

	c->middle++;
	r = stage_inner(c, x + 1);
	KEEP(r);
	return r + 2;
}

KHBPF_SPAN(stage_outer, "stage-outer")
int stage_outer(struct counts *c, int x)
{
	int r;

	c->outer++;
	r = stage_middle(c, x + 1);
	KEEP(r);
	return r + 3;
}

KHBPF_SPAN(stage_recurse, "stage-recurse")
static int stage_recurse(struct counts *c, int depth)
{
	int r = 0;

	c->recurse++;
	if (depth > 1)
		r = stage_recurse(c, depth - 1);
	KEEP(r);
	return r + depth;
}

KHBPF_SPAN(stage_sib_a, "stage-sib-a")
int stage_sib_a(struct counts *c, int x)
{
	c->sib_a++;
	KEEP(x);
	return x ^ 0x5a;
}

KHBPF_SPAN(stage_sib_b, "stage-sib-b")
static int stage_sib_b(struct counts *c, int x)
{
	c->sib_b++;
	KEEP(x);
	return x + 0x77;
}

KHBPF_SPAN(stage_sleep, "stage-sleep")
static int stage_sleep(struct counts *c)
{
	int r;

	c->sleep++;
	r = usleep(1000);
	KEEP(r);
	return r;
}

KHBPF_SPAN(stage_spin, "stage-spin")
int stage_spin(struct counts *c)
{
	uint64_t end;
	int loops = 0;

	c->spin++;
	end = now_ns() + SPIN_NS;
	do {
		loops++;
		KEEP(loops);
	} while (now_ns() < end);
	return loops;
}

/*
 * On a machine with one allowed CPU there is nowhere to go: the span then
 * just spins. Otherwise sched_setaffinity() to a CPU other than the current
 * one makes the kernel move the thread before the call returns.
 */
KHBPF_SPAN(stage_migrate, "stage-migrate")
int stage_migrate(struct counts *c)
{
	cpu_set_t orig, to;
	int cpu = sched_getcpu(), i, moved = 0;

	c->migrate++;
	if (sched_getaffinity(0, sizeof(orig), &orig))
		return 0;
	for (i = 0; i < CPU_SETSIZE; i++) {
		if (i == cpu || !CPU_ISSET(i, &orig))
			continue;
		CPU_ZERO(&to);
		CPU_SET(i, &to);
		moved = !sched_setaffinity(0, sizeof(to), &to);
		break;
	}
	spin_for(2000000);
	if (moved)
		sched_setaffinity(0, sizeof(orig), &orig);
	return moved;
}

struct worker {
	pthread_t thread;
	unsigned long iterations;
	struct counts counts;
	int sink;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned long i;
	int v = 0;

	for (i = 0; i < w->iterations; i++) {
		v += stage_outer(&w->counts, (int)i);
		KEEP(v);
		v += stage_recurse(&w->counts, RECURSE_DEPTH);
		KEEP(v);
		v += stage_sib_a(&w->counts, v);
		KEEP(v);
		v += stage_sib_b(&w->counts, v);
		KEEP(v);
		v += stage_sleep(&w->counts);
		KEEP(v);
		v += stage_spin(&w->counts) & 1;
		KEEP(v);
		v += stage_migrate(&w->counts);
		KEEP(v);
	}
	w->sink = v;
	return NULL;
}

KHBPF_SPAN(stage_hold, "stage-hold")
static int stage_hold(void)
{
	printf("holding\n");
	fflush(stdout);
	return read_byte(STDIN_FILENO);
}

static int usage(void)
{
	fprintf(stderr, "spanned: usage: spanned [--threads 1..1024] [--iterations 0..1000000] "
			"[--wait] [--hold]\n");
	return 2;
}

int main(int argc, char **argv)
{
	unsigned long nthreads = 2, iterations = 10, n, i;
	struct counts sum = { 0 };
	struct worker *w;
	bool wait = false, hold = false;
	unsigned long held = 0;
	int a, err;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--wait")) {
			wait = true;
		} else if (!strcmp(argv[a], "--hold")) {
			hold = true;
		} else if (!strcmp(argv[a], "--threads") && a + 1 < argc) {
			if (parse_ulong(argv[++a], 1, 1024, &nthreads))
				return usage();
		} else if (!strcmp(argv[a], "--iterations") && a + 1 < argc) {
			if (parse_ulong(argv[++a], 0, 1000000, &iterations))
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

	w = calloc(nthreads, sizeof(*w));
	if (!w)
		return 1;
	for (i = 0; i < nthreads; i++) {
		w[i].iterations = iterations;
		err = pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
		if (err) {
			fprintf(stderr, "spanned: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(w[i].thread, NULL);
		sum.outer += w[i].counts.outer;
		sum.middle += w[i].counts.middle;
		sum.inner += w[i].counts.inner;
		sum.recurse += w[i].counts.recurse;
		sum.sib_a += w[i].counts.sib_a;
		sum.sib_b += w[i].counts.sib_b;
		sum.sleep += w[i].counts.sleep;
		sum.spin += w[i].counts.spin;
		sum.migrate += w[i].counts.migrate;
	}
	free(w);
	if (hold) {
		stage_hold();
		held = 1;
	}

	n = nthreads * iterations;
	printf("{\"stage-outer\": %lu, \"stage-middle\": %lu, \"stage-inner\": %lu, "
	       "\"stage-recurse\": %lu, \"stage-sib-a\": %lu, \"stage-sib-b\": %lu, "
	       "\"stage-sleep\": %lu, \"stage-spin\": %lu, \"stage-migrate\": %lu, "
	       "\"stage-hold\": %lu}\n",
	       sum.outer, sum.middle, sum.inner, sum.recurse, sum.sib_a, sum.sib_b, sum.sleep,
	       sum.spin, sum.migrate, held);
	if (sum.outer != n || sum.middle != n || sum.inner != n ||
	    sum.recurse != n * RECURSE_DEPTH || sum.sib_a != n || sum.sib_b != n ||
	    sum.sleep != n || sum.spin != n || sum.migrate != n) {
		fprintf(stderr, "spanned: call counts differ from the expected %lu per stage\n", n);
		return 1;
	}
	return 0;
}

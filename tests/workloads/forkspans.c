// SPDX-License-Identifier: MIT
/*
 * forkspans [--workers N] [--calls K] [--wait]: annotated functions
 * (KHBPF_SPAN) called in processes the main one forks during its run, for
 * the span tests of target sets (tests/integration/set_spans.sh). Worker i
 * is forked; odd workers exec this binary again (--worker), even ones run
 * on in the forked copy; each runs two threads that call work-unit K times
 * each (work-unit calls work-step once per call), then exits. The main
 * process calls work-unit K times itself, then reaps everything and prints
 * {"work-unit": U, "work-step": S, "workers": [pids]} with the totals every
 * process counted, so U = S = (2 N + 1) K.
 *
 * --wait: print "ready" and read a byte (or EOF) from stdin before forking,
 * so that a test can attach first and every worker is forked in its window.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "../../include/khbpf/span.h"
#include "workload.h"

int work_step(unsigned long *n);
int work_unit(unsigned long *n);

KHBPF_SPAN(work_step, "work-step")
int work_step(unsigned long *n)
{
	burn(20000);
	return (int)++*n;
}

KHBPF_SPAN(work_unit, "work-unit")
int work_unit(unsigned long *n)
{
	int r = work_step(n);

	KEEP(r);
	return r + 1;
}

static unsigned long calls = 50;

static void *caller(void *arg)
{
	unsigned long *count = arg, i;

	for (i = 0; i < calls; i++)
		work_unit(count);
	return NULL;
}

/* Two threads calling K times each; their calls as the process's exit status would not fit. */
static unsigned long worker(void)
{
	unsigned long a = 0, b = 0;
	pthread_t t1, t2;

	if (pthread_create(&t1, NULL, caller, &a) || pthread_create(&t2, NULL, caller, &b))
		_exit(3);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	return a + b;
}

int main(int argc, char **argv)
{
	unsigned long workers = 3, i, mine = 0, *counts;
	bool wait = false;
	pid_t *pids;
	int a, st;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--workers") && a + 1 < argc &&
		    !parse_ulong(argv[a + 1], 1, 64, &workers)) {
			a++;
		} else if (!strcmp(argv[a], "--calls") && a + 1 < argc &&
			   !parse_ulong(argv[a + 1], 1, 100000, &calls)) {
			a++;
		} else if (!strcmp(argv[a], "--wait")) {
			wait = true;
		} else if (!strcmp(argv[a], "--worker") && a + 2 < argc &&
			   !parse_ulong(argv[a + 2], 1, 100000, &calls)) {
			/* An exec'd worker: its count goes to the shared page by its fd. */
			unsigned long idx, *shared;
			int fd = atoi(argv[a + 1]);

			shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (shared == MAP_FAILED || parse_ulong(argv[a + 3], 0, 63, &idx))
				return 4;
			shared[idx] = worker();
			return 0;
		} else {
			fprintf(stderr, "usage: forkspans [--workers N] [--calls K] [--wait]\n");
			return 2;
		}
	}
	/* A page the workers, exec'd or not, leave their counts in. */
	st = memfd_create("forkspans", 0);
	if (st < 0 || ftruncate(st, 4096))
		return 1;
	counts = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, st, 0);
	pids = calloc(workers, sizeof(*pids));
	if (counts == MAP_FAILED || !pids)
		return 1;
	if (wait) {
		printf("ready\n");
		fflush(stdout);
		read_byte(0);
	}
	for (i = 0; i < workers; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return 1;
		if (pids[i])
			continue;
		if (i % 2) {
			char fd[24], k[24], idx[24];

			snprintf(fd, sizeof(fd), "%d", st);
			snprintf(k, sizeof(k), "%lu", calls);
			snprintf(idx, sizeof(idx), "%lu", i);
			execl("/proc/self/exe", argv[0], "--worker", fd, k, idx, (char *)NULL);
			_exit(5);
		}
		counts[i] = worker();
		_exit(0);
	}
	for (i = 0; i < calls; i++)
		work_unit(&mine);
	for (i = 0; i < workers; i++)
		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st))
			return 6;
	for (i = 0; i < workers; i++)
		mine += counts[i];
	if (mine != (2 * workers + 1) * calls)
		return 7;
	printf("{\"work-unit\": %lu, \"work-step\": %lu, \"workers\": [", mine, mine);
	for (i = 0; i < workers; i++)
		printf("%s%d", i ? ", " : "", (int)pids[i]);
	printf("]}\n");
	return 0;
}

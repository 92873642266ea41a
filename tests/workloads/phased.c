// SPDX-License-Identifier: MIT
/*
 * A workload whose threads are blocked except while told to work, so that
 * /proc readings taken while it is idle bracket a collection window exactly.
 *
 * Usage: phased [--threads N] [--retitle]
 * Reads one byte per burst from stdin: on each, every worker does 20
 * usleep(500) rounds with ~0.2 ms of spinning between them, and one helper
 * thread is created and joined (born and exited inside the burst). Prints
 * "ready" after start and "done N" after each burst to stdout. EOF ends it.
 * --retitle: before each burst's "done", its title (what ps shows,
 * /proc/PID/cmdline) becomes "phased: burst N", written over its arguments
 * the way setproctitle(3) does, the rest of them NULs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 20

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER;
static unsigned long generation;
static int busy;
static atomic_int stop;

static void spin_us(long us)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static void *short_lived(void *arg)
{
	spin_us(300);
	usleep(500);
	return arg;
}

static void *worker(void *arg)
{
	unsigned long seen = 0;
	pthread_t t;
	int i;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (generation == seen && !atomic_load(&stop))
			pthread_cond_wait(&go, &lock);
		seen = generation;
		pthread_mutex_unlock(&lock);
		if (atomic_load(&stop))
			return NULL;
		for (i = 0; i < ROUNDS; i++) {
			spin_us(200);
			usleep(500);
		}
		if (pthread_create(&t, NULL, short_lived, NULL) == 0)
			pthread_join(t, NULL);
		pthread_mutex_lock(&lock);
		if (--busy == 0)
			pthread_cond_signal(&idle);
		pthread_mutex_unlock(&lock);
	}
}

/* Over the argument strings, which the kernel keeps contiguous from argv[0]. */
static void retitle(int argc, char **argv, int burst)
{
	char *start = argv[0], *end = argv[argc - 1] + strlen(argv[argc - 1]);
	size_t room = (size_t)(end - start);

	memset(start, 0, room);
	snprintf(start, room, "phased: burst %d", burst);
}

int main(int argc, char **argv)
{
	int n = 3, i, bursts = 0;
	bool titles = false;
	pthread_t *th;
	char c;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			n = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--retitle")) {
			titles = true;
		} else {
			fprintf(stderr, "phased: usage: phased [--threads N] [--retitle]\n");
			return 2;
		}
	}
	if (n < 1 || n > 1000) {
		fprintf(stderr, "phased: --threads must be 1..1000\n");
		return 2;
	}
	th = calloc((size_t)n, sizeof(*th));
	if (!th)
		return 1;
	for (i = 0; i < n; i++) {
		char name[16];

		pthread_create(&th[i], NULL, worker, NULL);
		snprintf(name, sizeof(name), "phased-w%d", i);
		pthread_setname_np(th[i], name);
	}
	printf("ready\n");
	fflush(stdout);
	while (read(STDIN_FILENO, &c, 1) == 1) {
		pthread_mutex_lock(&lock);
		busy = n;
		generation++;
		pthread_cond_broadcast(&go);
		while (busy)
			pthread_cond_wait(&idle, &lock);
		pthread_mutex_unlock(&lock);
		if (titles)
			retitle(argc, argv, bursts + 1);
		printf("done %d\n", ++bursts);
		fflush(stdout);
	}
	atomic_store(&stop, 1);
	pthread_mutex_lock(&lock);
	pthread_cond_broadcast(&go);
	pthread_mutex_unlock(&lock);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	free(th);
	return 0;
}

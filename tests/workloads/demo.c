// SPDX-License-Identifier: MIT
/*
 * demo: the workload of `make demo`. Nine named threads, each showing one
 * thing khbpf reports: sleeping, spinning, yielding, contending for the CPUs,
 * migrating and waking each other through pipes.
 *
 *   demo [--duration-ms N]      (default 3000)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

#define DEFAULT_DURATION_MS 3000
#define MAX_DURATION_MS 86400000ull
#define NSEC_PER_MSEC 1000000ull
#define MOVE_PERIOD_NS (5 * NSEC_PER_MSEC)

enum role {
	ROLE_SLEEPER,
	ROLE_SPINNER,
	ROLE_YIELDER,
	ROLE_WORKER1,
	ROLE_WORKER2,
	ROLE_WORKER3,
	ROLE_MOVER,
	ROLE_PING,
	ROLE_PONG,
	NR_ROLES,
};

/* Set before the threads start. */
static int to_pong[2], to_ping[2];
static int move_cpu[2];
static bool can_move;
/* Each written by one thread, read by main after the join. */
static uint64_t round_trips, moves;

static void run_sleeper(void)
{
	while (!stopped())
		usleep(1000);
}

static void run_spinner(void)
{
	while (!stopped())
		spin_for(NSEC_PER_MSEC);
}

static void run_yielder(void)
{
	while (!stopped()) {
		burn(5000);
		sched_yield();
	}
}

static void run_worker(void)
{
	while (!stopped())
		burn(100000);
}

static void run_mover(void)
{
	bool moving = can_move;
	cpu_set_t set;

	while (!stopped()) {
		if (moving) {
			CPU_ZERO(&set);
			CPU_SET(move_cpu[moves & 1], &set);
			if (sched_setaffinity(0, sizeof(set), &set))
				moving = false;
			else
				moves++;
		}
		spin_for(MOVE_PERIOD_NS);
	}
}

/* ping sends 'p' and waits for the echo; after the stop it sends 'q' and pong ends. */
static void run_ping(void)
{
	while (!stopped()) {
		write_byte(to_pong[1], 'p');
		if (!read_byte(to_ping[0]))
			break;
		round_trips++;
	}
	write_byte(to_pong[1], 'q');
}

static void run_pong(void)
{
	while (read_byte(to_pong[0]) == 'p')
		write_byte(to_ping[1], 'p');
}

static const struct role_desc {
	const char *name;
	void (*run)(void);
} roles[NR_ROLES] = {
	[ROLE_SLEEPER] = { "demo-sleeper", run_sleeper },
	[ROLE_SPINNER] = { "demo-spinner", run_spinner },
	[ROLE_YIELDER] = { "demo-yielder", run_yielder },
	[ROLE_WORKER1] = { "demo-worker1", run_worker },
	[ROLE_WORKER2] = { "demo-worker2", run_worker },
	[ROLE_WORKER3] = { "demo-worker3", run_worker },
	[ROLE_MOVER] = { "demo-mover", run_mover },
	[ROLE_PING] = { "demo-ping", run_ping },
	[ROLE_PONG] = { "demo-pong", run_pong },
};

static void *thread_main(void *arg)
{
	enum role role = (enum role)(intptr_t)arg;

	pthread_setname_np(pthread_self(), roles[role].name);
	roles[role].run();
	return NULL;
}

/* The number of CPUs this process may use; the first two are the mover's. */
static int usable_cpus(void)
{
	cpu_set_t set;
	int cpu, n = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		if (n < 2)
			move_cpu[n] = cpu;
		n++;
	}
	can_move = n >= 2;
	return n ? n : 1;
}

static bool parse_ms(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > MAX_DURATION_MS)
			return false;
	}
	*out = v;
	return v > 0;
}

static int usage_error(const char *fmt, const char *arg)
{
	fputs("demo: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("; usage: demo [--duration-ms N]\n", stderr);
	return 2;
}

int main(int argc, char **argv)
{
	struct timespec ts;
	pthread_t threads[NR_ROLES];
	uint64_t duration_ms = DEFAULT_DURATION_MS, start, deadline;
	const char *v;
	int i, cpus, started = 0, err = 0;
	char span[32];

	for (i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--duration-ms=", 14)) {
			v = argv[i] + 14;
		} else if (!strcmp(argv[i], "--duration-ms")) {
			if (i + 1 >= argc)
				return usage_error("%s needs a value", argv[i]);
			v = argv[++i];
		} else {
			return usage_error("unknown argument '%s'", argv[i]);
		}
		if (!parse_ms(v, &duration_ms))
			return usage_error("bad --duration-ms '%s' (1..86400000)", v);
	}
	if (pipe2(to_pong, O_CLOEXEC) || pipe2(to_ping, O_CLOEXEC)) {
		fprintf(stderr, "demo: pipe: %s\n", strerror(errno));
		return 1;
	}
	cpus = usable_cpus();
	if (duration_ms % 1000)
		snprintf(span, sizeof(span), "%" PRIu64 " ms", duration_ms);
	else
		snprintf(span, sizeof(span), "%" PRIu64 " s", duration_ms / 1000);
	fprintf(stderr,
		"demo: %d threads for %s in pid %d: spinner + 3 workers contend for %d CPU%s, "
		"%s, ping/pong wake each other, sleeper and yielder\n",
		NR_ROLES, span, (int)getpid(), cpus, cpus == 1 ? "" : "s",
		can_move ? "mover migrates" : "mover cannot migrate on 1 CPU");

	start = now_ns();
	for (i = 0; i < NR_ROLES; i++) {
		err = pthread_create(&threads[i], NULL, thread_main, (void *)(intptr_t)i);
		if (err) {
			fprintf(stderr, "demo: pthread_create: %s\n", strerror(err));
			break;
		}
		started++;
	}
	if (!err) {
		deadline = start + duration_ms * NSEC_PER_MSEC;
		ts.tv_sec = (time_t)(deadline / 1000000000ull);
		ts.tv_nsec = (long)(deadline % 1000000000ull);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	atomic_store(&stop, true);
	/* ping without a pong waits for an echo: give it one so it sees the stop. */
	if (started == ROLE_PONG)
		write_byte(to_ping[1], 'x');
	for (i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	close(to_pong[0]);
	close(to_pong[1]);
	close(to_ping[0]);
	close(to_ping[1]);
	if (err)
		return 1;
	fprintf(stderr,
		"demo: done after %.2f s: %" PRIu64 " ping-pong round trips, %" PRIu64
		" moves between CPUs\n",
		(double)(now_ns() - start) / 1e9, round_trips, moves);
	return 0;
}

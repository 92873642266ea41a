/* SPDX-License-Identifier: MIT */
/*
 * Shared by the workloads (standalone programs: no khbpf code, so that a
 * khbpf bug cannot agree with itself). Include once, after the system
 * headers, in a file that defines _GNU_SOURCE.
 */
#ifndef KHBPF_WORKLOAD_H
#define KHBPF_WORKLOAD_H

#include <errno.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* Keeps a call from being a tail call, so each span has its own frame. */
#define KEEP(v) __asm__ volatile("" : "+r"(v) : : "memory")

/* A decimal argument in [min, max]; -EINVAL otherwise. */
static inline int parse_ulong(const char *s, unsigned long min, unsigned long max,
			      unsigned long *out)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoul(s, &end, 10);
	if (errno || *end || *out < min || *out > max)
		return -EINVAL;
	return 0;
}

/* Set by the main thread when the run's time is up. */
static atomic_bool stop;

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline bool stopped(void)
{
	return atomic_load_explicit(&stop, memory_order_relaxed);
}

/* Pure CPU work the compiler cannot drop. */
static inline void burn(unsigned int iterations)
{
	volatile uint64_t x = 1;
	unsigned int i;

	for (i = 0; i < iterations; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
}

static inline void spin_for(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end && !stopped())
		;
}

static inline void write_byte(int fd, char c)
{
	while (write(fd, &c, 1) < 0 && errno == EINTR)
		;
}

/* The byte read, or 0 at end of file or on error. */
static inline char read_byte(int fd)
{
	ssize_t n;
	char c;

	do {
		n = read(fd, &c, 1);
	} while (n < 0 && errno == EINTR);
	return n == 1 ? c : 0;
}

#endif /* KHBPF_WORKLOAD_H */

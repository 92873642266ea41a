// SPDX-License-Identifier: MIT
/*
 * cgroupload: a process born inside a cgroup v2 (clone3 CLONE_INTO_CGROUP),
 * so every switch of every thread it ever has happens in that cgroup, then
 * a known mix of scheduler behaviour, then quiet, for `khbpf serve` tests.
 *
 *   cgroupload CGROUP_DIR [--threads N] [--ms M] [--wait 1]
 *
 * The child re-executes itself (a raw clone3 leaves libc's thread state
 * stale), then runs N threads for M ms: each sleeps 1 ms at a time (voluntary
 * switches), and there are more spinners than CPUs (involuntary ones and
 * runqueue waits). Then every thread blocks, the child prints "idle" on
 * stdout, and waits for stdin to close before it exits. With --wait 1 it
 * first prints "ready PID" and starts only after a line on stdin, so that
 * tools can attach to PID first. The parent waits for it and exits with its
 * status.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "workload.h"

static unsigned long run_ms = 1500, wait_go;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t done;

static void *worker(void *arg)
{
	uint64_t end = now_ns() + run_ms * 1000000ull;
	unsigned long spin = (unsigned long)(uintptr_t)arg, x = 0;
	struct timespec ms = { 0, 1000000 };

	while (now_ns() < end) {
		if (spin) {
			for (int i = 0; i < 100000; i++)
				KEEP(x);
		} else {
			nanosleep(&ms, NULL);
		}
	}
	pthread_barrier_wait(&done);
	/* Quiet from here on: blocked until the process exits. */
	pthread_mutex_lock(&lock);
	for (;;)
		pthread_cond_wait(&never, &lock);
	return NULL;
}

static int child(unsigned long threads)
{
	pthread_t t;
	char buf[64];
	unsigned long i;

	if (wait_go) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		/* One line: the go. The rest of stdin is the end. */
		do {
			if (read(STDIN_FILENO, buf, 1) != 1)
				return 1;
		} while (buf[0] != '\n');
	}
	pthread_barrier_init(&done, NULL, (unsigned)threads + 1);
	for (i = 0; i < threads; i++) {
		/* Odd threads spin: with 2 CPUs, enough of them to preempt each other. */
		if (pthread_create(&t, NULL, worker, (void *)(uintptr_t)(i & 1)))
			return 1;
	}
	pthread_barrier_wait(&done);
	printf("idle\n");
	fflush(stdout);
	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
	return 0;
}

static int usage(void)
{
	fprintf(stderr,
		"cgroupload: usage: cgroupload CGROUP_DIR [--threads 1..64] [--ms 1..60000] "
		"[--wait 0|1]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct clone_args ca = { .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD };
	unsigned long threads = 6;
	int fd, status, a;
	long pid;

	if (argc < 2)
		return usage();
	for (a = 2; a + 1 < argc; a += 2) {
		if (!strcmp(argv[a], "--in-cgroup"))
			continue;
		if (!strcmp(argv[a], "--threads")) {
			if (parse_ulong(argv[a + 1], 1, 64, &threads))
				return usage();
		} else if (!strcmp(argv[a], "--wait")) {
			if (parse_ulong(argv[a + 1], 0, 1, &wait_go))
				return usage();
		} else if (!strcmp(argv[a], "--ms")) {
			if (parse_ulong(argv[a + 1], 1, 60000, &run_ms))
				return usage();
		} else {
			return usage();
		}
	}
	if (a != argc)
		return usage();
	if (argc > 3 && !strcmp(argv[argc - 2], "--in-cgroup"))
		return child(threads);
	fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "cgroupload: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	ca.cgroup = (uint64_t)fd;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0) {
		fprintf(stderr, "cgroupload: clone3 into %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (pid == 0) {
		char t[24], m[24], w[4];

		snprintf(t, sizeof(t), "%lu", threads);
		snprintf(m, sizeof(m), "%lu", run_ms);
		snprintf(w, sizeof(w), "%lu", wait_go);
		char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		/* By its own path, so that its comm stays "cgroupload". */
		if (n <= 0)
			_exit(127);
		self[n] = '\0';
		execl(self, argv[0], argv[1], "--threads", t, "--ms", m, "--wait", w, "--in-cgroup",
		      "1", (char *)NULL);
		_exit(127);
	}
	close(fd);
	if (waitpid((pid_t)pid, &status, 0) != pid)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

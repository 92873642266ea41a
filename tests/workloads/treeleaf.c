// SPDX-License-Identifier: MIT
/*
 * treeleaf FD MODE: the binary tree.c execs (tests/integration/tree.sh).
 * MODE leaf: a thread, and a child forked without exec that exits 7;
 * MODE quick: nothing but its own counters (tree.c vforks it). Writes to
 * FD as tree.c's processes do (selfcount.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "workload.h"
#include "selfcount.h"

static int out = -1;

static void *leaf_thread(void *arg)
{
	unsigned int i;

	(void)arg;
	prctl(PR_SET_NAME, "leaf-t");
	for (i = 0; i < 4; i++) {
		spin_for(2000000);
		usleep(2000);
	}
	selfcount_record(out, "leaf-t");
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long fd;
	pthread_t t;
	pid_t pid;
	int st;

	if (argc != 3 || parse_ulong(argv[1], 0, 1 << 20, &fd)) {
		fprintf(stderr, "usage: treeleaf FD leaf|quick\n");
		return 2;
	}
	out = (int)fd;
	if (!strcmp(argv[2], "quick")) {
		process_emit(out, "leaf-quick", (int)getppid());
		selfcount_record(out, "leaf-quick");
		return 0;
	}
	process_emit(out, "leaf", (int)getppid());
	if (pthread_create(&t, NULL, leaf_thread, NULL))
		return 3;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_NAME, "leaf-gc");
		process_emit(out, "leaf-gc", (int)getppid());
		spin_for(6000000);
		selfcount_record(out, "leaf-gc");
		_exit(7);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || pthread_join(t, NULL))
		return 4;
	selfcount_record(out, "leaf");
	return 0;
}

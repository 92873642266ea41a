// SPDX-License-Identifier: MIT
/*
 * tree OUT LEAF: a process tree for khbpf's target sets
 * (tests/integration/tree.sh). The root forks, reaps, forks again, execs
 * another binary (LEAF, tests/workloads/treeleaf.c), double-forks (the
 * orphan comes back to the root, a child subreaper), vforks, clones a new
 * process, has a child killed by a signal, and runs threads in several of
 * them; one child exits before the next starts, and everything is reaped.
 *
 * Every thread appends its own counters to OUT as the last thing it does
 * (selfcount.h), every process a line saying who it is, and the root,
 * after reaping everything, getrusage(RUSAGE_SELF) and (RUSAGE_CHILDREN)
 * between two readings of its main thread's own counters (the first
 * written with role tree-before-rusage).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "workload.h"
#include "selfcount.h"

static int out = -1;
static const char *leaf;

struct job {
	const char *name;
	unsigned int rounds;
	uint64_t spin_ns, sleep_ns;
};

static void nap(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void *worker(void *arg)
{
	const struct job *j = arg;
	unsigned int i;

	prctl(PR_SET_NAME, j->name);
	for (i = 0; i < j->rounds; i++) {
		spin_for(j->spin_ns);
		nap(j->sleep_ns);
	}
	selfcount_record(out, j->name);
	return NULL;
}

static void start(pthread_t *t, struct job *j)
{
	if (pthread_create(t, NULL, worker, j))
		_exit(92);
}

static void join(pthread_t t)
{
	if (pthread_join(t, NULL))
		_exit(93);
}

static void become(const char *name, int parent)
{
	prctl(PR_SET_NAME, name);
	process_emit(out, name, parent);
}

/* A: two threads, one spinning, one sleeping; exits before B starts. */
static void child_a(int parent)
{
	struct job spin = { "tree-a-spin", 6, 5000000, 100000 };
	struct job sleeper = { "tree-a-sleep", 10, 100000, 2000000 };
	pthread_t t1, t2;

	become("tree-a", parent);
	start(&t1, &spin);
	start(&t2, &sleeper);
	join(t1);
	join(t2);
	selfcount_record(out, "tree-a");
	exit(0);
}

/* D: forked by C, which exits at once: D is an orphan, reparented to the root. */
static void child_d(int parent)
{
	struct job j = { "tree-d-t", 3, 3000000, 3000000 };
	pthread_t t;

	become("tree-d", parent);
	/* Until C is gone and D belongs to the subreaper. */
	while (getppid() == parent)
		nap(1000000);
	start(&t, &j);
	join(t);
	selfcount_record(out, "tree-d");
	exit(5);
}

static void child_c(int parent)
{
	int me = (int)getpid();
	pid_t d;

	become("tree-c", parent);
	d = fork();
	if (d < 0)
		_exit(94);
	if (d == 0)
		child_d(me);
	selfcount_record(out, "tree-c");
	exit(0);
}

static void child_k(int parent)
{
	become("tree-k", parent);
	spin_for(2000000);
	selfcount_record(out, "tree-k");
	kill(getpid(), SIGTERM);
	nap(1000000000);
	_exit(95);
}

static int child_clone(void *arg)
{
	become("tree-clone", (int)(intptr_t)arg);
	spin_for(3000000);
	selfcount_record(out, "tree-clone");
	return 0;
}

int main(int argc, char **argv)
{
	static char clone_stack[256 * 1024];
	struct job rootw = { "tree-rootw", 5, 4000000, 3000000 };
	struct rusage self, kids;
	struct selfcount me, before;
	char line[512], outfd[16];
	pthread_t t;
	int root = (int)getpid(), st, n;
	pid_t pid;

	if (argc != 3) {
		fprintf(stderr, "usage: tree OUT LEAF\n");
		return 2;
	}
	leaf = argv[2];
	out = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (out < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		perror("tree");
		return 1;
	}
	become("tree", (int)getppid());
	start(&t, &rootw);

	pid = fork();
	if (pid == 0)
		child_a(root);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 3;

	/* B execs another binary, which forks a child of its own. */
	snprintf(outfd, sizeof(outfd), "%d", out);
	pid = fork();
	if (pid == 0) {
		/* The descriptor goes across the exec; treeleaf writes to it. */
		fcntl(out, F_SETFD, 0);
		execl(leaf, "treeleaf", outfd, "leaf", (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return 3;

	pid = fork();
	if (pid == 0)
		child_c(root);
	pid = fork();
	if (pid == 0)
		child_k(root);
	/* vfork: the child only execs, keeping OUT across it. */
	fcntl(out, F_SETFD, 0);
	pid = vfork();
	if (pid == 0) {
		execl(leaf, "treeleaf", outfd, "quick", (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return 3;
	fcntl(out, F_SETFD, FD_CLOEXEC);
	pid = clone(child_clone, clone_stack + sizeof(clone_stack), SIGCHLD,
		    (void *)(intptr_t)root);
	if (pid < 0)
		return 3;

	/* Everything, the orphan D included (this is its subreaper). */
	while (wait(&st) > 0)
		;
	if (errno != ECHILD)
		return 4;
	join(t);
	/* Its own counters on both sides: what rusage has of this thread lies between. */
	if (selfcount_read(&before))
		return 5;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	if (selfcount_read(&me))
		return 5;
	selfcount_emit(out, "tree-before-rusage", &before);
	n = snprintf(
		line, sizeof(line),
		"{\"kind\": \"rusage\", \"pid\": %d, \"self_nvcsw\": %ld, \"self_nivcsw\": %ld, "
		"\"self_cpu_us\": %lld, \"children_nvcsw\": %ld, \"children_nivcsw\": %ld, "
		"\"children_cpu_us\": %lld}\n",
		root, self.ru_nvcsw, self.ru_nivcsw,
		(long long)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) * 1000000 +
			self.ru_utime.tv_usec + self.ru_stime.tv_usec,
		kids.ru_nvcsw, kids.ru_nivcsw,
		(long long)(kids.ru_utime.tv_sec + kids.ru_stime.tv_sec) * 1000000 +
			kids.ru_utime.tv_usec + kids.ru_stime.tv_usec);
	if (write(out, line, (size_t)n) != n)
		return 6;
	selfcount_emit(out, "tree", &me);
	return 0;
}

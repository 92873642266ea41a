// SPDX-License-Identifier: MIT
/*
 * The fault workload of tests/integration/faults.sh: a target that does the
 * things a collector must survive, and prints what it did (the ground truth)
 * as one JSON line on stdout.
 *
 * Usage: faults MODE [ARGS] [--wait]
 *  threads N [B]  N threads besides main, at most B alive at once (default
 *                 N: all alive together, 64 KiB stacks); each spins ~0.2 ms;
 *                 prints {"tids": [main, ...], "process_cpu_ns": N} (every
 *                 thread that ran; the process's CPU clock after the joins)
 *  comm           main renames itself "fa-first" then "fa-final"; a thread
 *                 names itself "th-first" then "th-final" and stays alive
 *                 until main ends; a second one names itself "th-gone" and
 *                 exits; prints their tids and final names
 *  exec-self      main execs "faults after-exec" (same pid, new image)
 *  exec-thread    3 threads; a non-leader one prints {"before_exec": [main,
 *                 t1, t2, t3], "exec_by": tid} and execs "faults after-exec"
 *                 (the kernel gives it the leader's pid and ends the others)
 *  after-exec     spins ~50 ms and prints {"after_exec": tid, "comm": its
 *                 comm, "cpu_ns": its thread CPU clock}
 *  fork-exec      forks a child that execs "faults after-exec"; waits for it;
 *                 prints {"parent": pid, "child": pid}
 *  leader-exit    main starts 2 threads, prints "ready" and calls
 *                 pthread_exit (a zombie while the process runs on); the
 *                 threads wait for a byte on stdin, spin ~20 ms each and
 *                 exit, the last printing {"leader": pid, "threads": [..]}
 *  die-in-span N [T]  N threads enter die-outer -> die-inner and block
 *                 there; once all are inside, main enters die-outer -> die-kill,
 *                 calls die-tick T times (default 0) and
 *                 prints {"ticks": T, "open": [[tid, depth], ...]}, SIGKILLs the
 *                 process: every span is left open
 *  rusage N      N threads that each sleep 1 ms 5 times, joined and gone
 *                 from /proc/self/task; then main's getrusage(RUSAGE_SELF)
 *                 (every thread's switches, less each exited one's last) taken
 *                 with no switch of main around it, and main's own counts:
 *                 prints {"ru_nvcsw": N, "ru_nivcsw": N, "main_nvcsw": N,
 *                 "main_nivcsw": N, "main": tid}
 * --wait prints "ready", then reads one byte (or EOF) from stdin first.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../../include/khbpf/span.h"
#include "workload.h"

#define STACK_BYTES (64 * 1024)

static const char *self_exe = "/proc/self/exe";

static pid_t tid_self(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static uint64_t cpu_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int usage(void)
{
	fprintf(stderr, "faults: usage: faults threads N [B] | comm | exec-self | exec-thread | "
			"after-exec | fork-exec | leader-exit | die-in-span N [T] | rusage N  "
			"[--wait]\n");
	return 2;
}

/* rusage: the calling thread's own switch counts, from /proc/thread-self/status. */
static int own_switches(unsigned long long *vol, unsigned long long *invol)
{
	char line[256];
	int found = 0;
	FILE *f = fopen("/proc/thread-self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		found += sscanf(line, "voluntary_ctxt_switches: %llu", vol) == 1;
		found += sscanf(line, "nonvoluntary_ctxt_switches: %llu", invol) == 1;
	}
	fclose(f);
	return found == 2 ? 0 : -1;
}

static int tasks_listed(void)
{
	struct dirent *e;
	int n = 0;
	DIR *d = opendir("/proc/self/task");

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void *sleeper_thread(void *arg)
{
	struct timespec ms = { 0, 1000000 };
	int i;

	(void)arg;
	for (i = 0; i < 5; i++)
		nanosleep(&ms, NULL);
	return NULL;
}

static int mode_rusage(unsigned long n)
{
	unsigned long long v1, iv1, v2, iv2;
	struct rusage ru;
	pthread_t *th = calloc(n, sizeof(*th));
	unsigned long i;

	if (!th)
		return 1;
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, sleeper_thread, NULL))
			return 1;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	/* Joined is not yet released (__exit_signal): wait until they are. */
	while (tasks_listed() != 1)
		sched_yield();
	do {
		if (own_switches(&v1, &iv1) || getrusage(RUSAGE_SELF, &ru) ||
		    own_switches(&v2, &iv2))
			return 1;
	} while (v1 != v2 || iv1 != iv2);
	printf("{\"ru_nvcsw\": %ld, \"ru_nivcsw\": %ld, \"main_nvcsw\": %llu, "
	       "\"main_nivcsw\": %llu, \"main\": %d}\n",
	       ru.ru_nvcsw, ru.ru_nivcsw, v1, iv1, (int)tid_self());
	free(th);
	return 0;
}

/* threads: every thread records its tid at its own index. */
static pid_t *tids;

static void *spin_thread(void *arg)
{
	tids[(size_t)arg] = tid_self();
	spin_for(200000);
	return NULL;
}

static pthread_barrier_t all_alive;

static void *barrier_thread(void *arg)
{
	tids[(size_t)arg] = tid_self();
	pthread_barrier_wait(&all_alive);
	spin_for(200000);
	return NULL;
}

static int mode_threads(unsigned long n, unsigned long batch)
{
	pthread_attr_t attr;
	pthread_t *th;
	unsigned long i, done = 0;
	bool together = batch >= n;
	int err;

	tids = calloc(n + 1, sizeof(*tids));
	th = calloc(n ? n : 1, sizeof(*th));
	if (!tids || !th)
		return 1;
	tids[0] = tid_self();
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, STACK_BYTES);
	if (together)
		pthread_barrier_init(&all_alive, NULL, (unsigned int)n + 1);
	for (i = 0; i < n; i++) {
		if (!together && i - done == batch)
			pthread_join(th[done++], NULL);
		err = pthread_create(&th[i], &attr, together ? barrier_thread : spin_thread,
				     (void *)(i + 1));
		if (err) {
			fprintf(stderr, "faults: pthread_create %lu: %s\n", i, strerror(err));
			return 1;
		}
	}
	if (together)
		pthread_barrier_wait(&all_alive);
	for (i = done; i < n; i++)
		pthread_join(th[i], NULL);
	printf("{\"tids\": [");
	for (i = 0; i <= n; i++)
		printf("%s%d", i ? ", " : "", (int)tids[i]);
	printf("], \"process_cpu_ns\": %llu}\n",
	       (unsigned long long)cpu_ns(CLOCK_PROCESS_CPUTIME_ID));
	return 0;
}

static atomic_int comm_stage;
static pid_t comm_tids[2];

static void *comm_thread(void *arg)
{
	comm_tids[0] = tid_self();
	prctl(PR_SET_NAME, "th-first");
	spin_for(2000000);
	prctl(PR_SET_NAME, "th-final");
	atomic_fetch_add(&comm_stage, 1);
	while (atomic_load(&comm_stage) < 3)
		usleep(1000);
	return arg;
}

static void *gone_thread(void *arg)
{
	comm_tids[1] = tid_self();
	prctl(PR_SET_NAME, "th-gone");
	spin_for(1000000);
	return arg;
}

static int mode_comm(void)
{
	pthread_t a, b;

	prctl(PR_SET_NAME, "fa-first");
	spin_for(2000000);
	if (pthread_create(&a, NULL, comm_thread, NULL) ||
	    pthread_create(&b, NULL, gone_thread, NULL))
		return 1;
	pthread_join(b, NULL);
	while (atomic_load(&comm_stage) < 1)
		usleep(1000);
	prctl(PR_SET_NAME, "fa-final");
	spin_for(2000000);
	printf("{\"main\": [%d, \"fa-final\"], \"thread\": [%d, \"th-final\"], "
	       "\"gone\": [%d, \"th-gone\"]}\n",
	       (int)tid_self(), (int)comm_tids[0], (int)comm_tids[1]);
	fflush(stdout);
	atomic_store(&comm_stage, 3);
	pthread_join(a, NULL);
	return 0;
}

static void exec_after(void)
{
	char *argv[] = { "faults", "after-exec", NULL };

	fflush(stdout);
	execv(self_exe, argv);
	fprintf(stderr, "faults: execv: %s\n", strerror(errno));
	_exit(1);
}

static int mode_after_exec(void)
{
	char comm[32] = "";
	FILE *f;

	spin_for(50000000);
	f = fopen("/proc/thread-self/comm", "r");
	if (!f || !fgets(comm, sizeof(comm), f))
		return 1;
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	printf("{\"after_exec\": %d, \"comm\": \"%s\", \"cpu_ns\": %llu}\n", (int)tid_self(), comm,
	       (unsigned long long)cpu_ns(CLOCK_THREAD_CPUTIME_ID));
	return 0;
}

static pid_t exec_tids[4];
static atomic_int exec_started;

static void *exec_thread(void *arg)
{
	int i = atomic_fetch_add(&exec_started, 1) + 1;

	exec_tids[i] = tid_self();
	spin_for(5000000);
	if (arg) {
		while (atomic_load(&exec_started) < 3)
			usleep(1000);
		printf("{\"before_exec\": [%d, %d, %d, %d], \"exec_by\": %d}\n", (int)exec_tids[0],
		       (int)exec_tids[1], (int)exec_tids[2], (int)exec_tids[3], (int)tid_self());
		exec_after();
	}
	for (;;)
		usleep(1000);
	return NULL;
}

static int mode_exec_thread(void)
{
	pthread_t t;
	int i;

	exec_tids[0] = tid_self();
	for (i = 0; i < 3; i++)
		if (pthread_create(&t, NULL, exec_thread, i == 2 ? (void *)1 : NULL))
			return 1;
	spin_for(2000000);
	for (;;)
		usleep(1000);
}

static int mode_fork_exec(void)
{
	int status;
	pid_t child;

	spin_for(5000000);
	fflush(stdout);
	child = fork();
	if (child < 0)
		return 1;
	if (!child)
		exec_after();
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	printf("{\"parent\": %d, \"child\": %d}\n", (int)getpid(), (int)child);
	return 0;
}

/* leader-exit: the threads that outlive main. */
static pid_t le_tids[2];
static atomic_int le_go, le_done;

static void *le_thread(void *arg)
{
	size_t i = (size_t)arg;

	le_tids[i] = tid_self();
	if (i == 0) {
		read_byte(STDIN_FILENO);
		atomic_store(&le_go, 1);
	}
	while (!atomic_load(&le_go))
		usleep(1000);
	spin_for(20000000);
	if (atomic_fetch_add(&le_done, 1) == 1) {
		printf("{\"leader\": %d, \"threads\": [%d, %d]}\n", (int)getpid(), (int)le_tids[0],
		       (int)le_tids[1]);
		fflush(stdout);
	}
	return NULL;
}

static int mode_leader_exit(void)
{
	pthread_t t;
	size_t i;

	for (i = 0; i < 2; i++)
		if (pthread_create(&t, NULL, le_thread, (void *)i))
			return 1;
	printf("ready\n");
	fflush(stdout);
	pthread_exit(NULL);
}

static atomic_int inside;

/* die-in-span: the spans every thread is in when the process is killed. */
int die_inner(int fd);
int die_outer(int fd, int kill_it);
int die_kill(void);

KHBPF_SPAN(die_inner, "die-inner")
int die_inner(int fd)
{
	atomic_fetch_add(&inside, 1);
	return read_byte(fd); /* a pipe nobody writes: blocks until the end */
}

static pid_t die_tids[1025];
static unsigned long die_n, die_ticks;

int die_tick(unsigned long i);

KHBPF_SPAN(die_tick, "die-tick")
int die_tick(unsigned long i)
{
	KEEP(i);
	return (int)i;
}

KHBPF_SPAN(die_kill, "die-kill")
int die_kill(void)
{
	unsigned long i;

	int r = 0;

	while (atomic_load(&inside) < (int)die_n)
		usleep(1000);
	for (i = 0; i < die_ticks; i++) {
		r += die_tick(i);
		KEEP(r);
	}
	printf("{\"ticks\": %lu, \"open\": [[%d, 2]", die_ticks, (int)tid_self());
	for (i = 0; i < die_n; i++)
		printf(", [%d, 2]", (int)die_tids[i]);
	printf("]}\n");
	fflush(stdout);
	kill(getpid(), SIGKILL);
	return 0;
}

KHBPF_SPAN(die_outer, "die-outer")
int die_outer(int fd, int kill_it)
{
	int r = kill_it ? die_kill() : die_inner(fd);

	KEEP(r);
	return r;
}

static int die_fd;

static void *die_thread(void *arg)
{
	die_tids[(size_t)arg] = tid_self();
	return (void *)(long)die_outer(die_fd, 0);
}

static int mode_die_in_span(unsigned long n, unsigned long ticks)
{
	int p[2];
	pthread_t t;
	unsigned long i;

	if (pipe(p))
		return 1;
	die_fd = p[0];
	die_n = n;
	die_ticks = ticks;
	for (i = 0; i < n; i++)
		if (pthread_create(&t, NULL, die_thread, (void *)i))
			return 1;
	return die_outer(p[0], 1);
}

int main(int argc, char **argv)
{
	unsigned long n = 0, b = 0;
	const char *mode;
	int a = 2;

	if (argc < 2)
		return usage();
	mode = argv[1];
	if (!strcmp(mode, "rusage")) {
		if (argc < 3 || parse_ulong(argv[2], 1, 1000, &n))
			return usage();
		a = 3;
	}
	if (!strcmp(mode, "threads") || !strcmp(mode, "die-in-span")) {
		if (argc < 3 ||
		    parse_ulong(argv[2], 1, !strcmp(mode, "threads") ? 100000 : 1024, &n))
			return usage();
		b = !strcmp(mode, "threads") ? n : 0;
		a = 3;
		if (argc > 3 && argv[3][0] != '-') {
			if (parse_ulong(argv[3], !strcmp(mode, "threads"),
					!strcmp(mode, "threads") ? n : 10000000, &b))
				return usage();
			a = 4;
		}
	}
	if (a < argc) {
		if (strcmp(argv[a], "--wait") || a + 1 != argc)
			return usage();
		printf("ready\n");
		fflush(stdout);
		read_byte(STDIN_FILENO);
	}
	if (!strcmp(mode, "threads"))
		return mode_threads(n, b);
	if (!strcmp(mode, "comm"))
		return mode_comm();
	if (!strcmp(mode, "exec-self"))
		exec_after();
	if (!strcmp(mode, "exec-thread"))
		return mode_exec_thread();
	if (!strcmp(mode, "after-exec"))
		return mode_after_exec();
	if (!strcmp(mode, "fork-exec"))
		return mode_fork_exec();
	if (!strcmp(mode, "leader-exit"))
		return mode_leader_exit();
	if (!strcmp(mode, "die-in-span"))
		return mode_die_in_span(n, b);
	if (!strcmp(mode, "rusage"))
		return mode_rusage(n);
	return usage();
}

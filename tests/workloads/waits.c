// SPDX-License-Identifier: MIT
/*
 * The blocked-time workload: threads that know their own timeline. Each
 * "waiter" thread enters one annotated span and inside it waits in one
 * known way for a named partner thread, `rounds` times:
 *	w-mutex    wait-mutex    pthread_mutex_lock() of a mutex w-holder holds
 *	                         for --hold-ms                       (lock, w-holder)
 *	w-pipe     wait-pipe     read() of a pipe w-writer writes after --hold-ms
 *	                                                             (io, w-writer)
 *	w-sleep    wait-sleep    nanosleep(--hold-ms)                (sleep, a timer)
 *	w-cond     wait-cond     pthread_cond_wait() until w-signal signals after
 *	                         --hold-ms                           (lock, w-signal)
 *	w-nest     wait-outer    spins 2 ms, then wait-inner: nanosleep(--hold-ms)
 *	                         (both decomposed; sleep, a timer)
 *	w-preempt  wait-preempt  spins --hold-ms of wall time on one CPU beside
 *	                         w-spinner spinning there too (runqueue wait, not
 *	                         blocked); the others keep off that CPU
 * Each waiter reads its run delay (/proc/thread-self/schedstat), its CPU time
 * and CLOCK_MONOTONIC first and last thing inside its span, and prints one JSON
 * line per call on stdout once every thread is done:
 *	{"metric": "wait-mutex", "tid": T, "comm": "w-mutex", "wall_ns": W,
 *	 "on_cpu_ns": C, "run_delay_ns": R, "cause": "lock",
 *	 "waker_tid": P, "waker_comm": "w-holder", "slept_ns": S}
 * (waker_tid 0 and waker_comm "(timer)" for a timer, "" where the thread is
 * not woken); then one per thread, the same clocks read first and last thing
 * in its start routine (its whole life but the thread's creation and exit):
 *	{"life": true, "tid": T, "wall_ns": W, "on_cpu_ns": C, "run_delay_ns": R,
 *	 "outside_ns": O, "slept_ns": S}
 * O: the time from before its creation to its first reading and from its
 * last to its join, which hold its creation and exit. S: the kernel's own
 * blocked time between the readings (schedstats' sum_sleep_runtime), null
 * where the kernel keeps none (no CONFIG_SCHEDSTATS, or
 * kernel.sched_schedstats off).
 * Exit 1 if a round went wrong (a thread could not be made).
 *
 * Usage: waits [--rounds N] [--hold-ms MS] [--wait]
 * --wait prints "ready", then reads stdin until a byte or EOF before the
 * threads start, so a loader can attach first.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "../../include/khbpf/span.h"
#include "workload.h"

struct truth {
	uint64_t t, on_cpu, run_delay, slept;
};

/*
 * The kernel's own blocked time of the thread, where it keeps one:
 * sum_sleep_runtime in /proc/thread-self/sched, which enqueue_sleeper()
 * adds to at each wakeup on the runqueue clock (sleep_start or block_start,
 * set at the dequeue, to the enqueue) with CONFIG_SCHEDSTATS and
 * kernel.sched_schedstats=1. Decided once, by main.
 */
static bool have_slept;

static unsigned long rounds = 3, hold_ms = 30;

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* schedstat's run delay and timeslices: the delay only grows while off-CPU. */
static int schedstat(unsigned long *run_delay, unsigned long *slices)
{
	char buf[128];
	unsigned long oncpu;
	ssize_t n;
	int fd = open("/proc/thread-self/schedstat", O_RDONLY), ok = 0;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = 0;
		ok = sscanf(buf, "%lu %lu %lu", &oncpu, run_delay, slices) == 3;
	}
	close(fd);
	return ok;
}

/* sum_sleep_runtime ("se.statistics." before 5.14), printed as ms.nnnnnn. */
static int slept(uint64_t *ns)
{
	char buf[8192], *p;
	unsigned long ms, frac;
	ssize_t n;
	int fd = open("/proc/thread-self/sched", O_RDONLY), ok = 0;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strstr(buf, "sum_sleep_runtime");
	p = p ? strchr(p, ':') : NULL;
	if (p && sscanf(p + 1, " %lu.%6lu", &ms, &frac) == 2) {
		*ns = ms * 1000000ull + frac;
		ok = 1;
	}
	return ok;
}

/*
 * The thread's own clocks now: its run delay (schedstat), its CPU time
 * (CLOCK_THREAD_CPUTIME_ID: schedstat's first field is only brought up to
 * date at the kernel's next update_curr()) and the time, read again when a
 * switch came between (schedstat's timeslice count moved).
 */
static void look(struct truth *t)
{
	unsigned long before, after, rd;
	struct timespec ts;
	int tries;

	for (tries = 0; tries < 100; tries++) {
		if (!schedstat(&rd, &before))
			exit(1);
		/* Only a wakeup adds to it: the timeslice count moves too. */
		if (have_slept && !slept(&t->slept))
			exit(1);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		t->t = now_ns();
		if (!schedstat(&t->run_delay, &after))
			exit(1);
		if (before == after)
			break;
	}
	t->on_cpu = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * One call's result, kept in a slot taken without a lock or a system call
 * (the spans' ends would otherwise hold the printing's own waits); main
 * prints them all at the end.
 */
struct result {
	const char *metric, *comm, *cause, *waker_comm;
	pid_t tid, waker;
	struct truth a, b;
};

static struct result *results;
static atomic_ulong nr_results;
static unsigned long max_results;

static void report(const char *metric, const char *comm, const struct truth *a,
		   const struct truth *b, const char *cause, pid_t waker, const char *waker_comm)
{
	unsigned long i = atomic_fetch_add(&nr_results, 1);

	if (i >= max_results)
		exit(1);
	results[i] = (struct result){ metric, comm, cause, waker_comm, gettid_(), waker, *a, *b };
}

/*
 * Each thread's whole life as it saw it: its clocks first and last thing
 * in its start routine (life_main), printed as {"life": true, ...}.
 */
struct life {
	void *(*main)(void *);
	pid_t tid;
	struct truth a, b;
	/*
	 * Before pthread_create() and once it is seen joined: the thread's
	 * creation and exit lie between them and its own readings.
	 */
	uint64_t created, joined;
};

static void *life_main(void *arg)
{
	struct life *l = arg;
	void *r;

	look(&l->a);
	r = l->main(NULL);
	l->tid = gettid_();
	look(&l->b);
	return r;
}

/* The line's end: the kernel's blocked time between the two looks, or null. */
static void print_slept(const struct truth *a, const struct truth *b)
{
	if (have_slept)
		printf(", \"slept_ns\": %lu}\n", b->slept - a->slept);
	else
		printf(", \"slept_ns\": null}\n");
}

static void print_lives(const struct life *lives, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct life *l = &lives[i];

		printf("{\"life\": true, \"tid\": %d, \"wall_ns\": %lu, \"on_cpu_ns\": %lu, "
		       "\"run_delay_ns\": %lu, \"outside_ns\": %lu",
		       l->tid, l->b.t - l->a.t, l->b.on_cpu - l->a.on_cpu,
		       l->b.run_delay - l->a.run_delay,
		       (l->a.t - l->created) + (l->joined - l->b.t));
		print_slept(&l->a, &l->b);
	}
}

static void print_results(void)
{
	unsigned long i, n = atomic_load(&nr_results);

	for (i = 0; i < n; i++) {
		const struct result *r = &results[i];

		printf("{\"metric\": \"%s\", \"tid\": %d, \"comm\": \"%s\", \"wall_ns\": %lu, "
		       "\"on_cpu_ns\": %lu, \"run_delay_ns\": %lu, \"cause\": \"%s\", "
		       "\"waker_tid\": %d, \"waker_comm\": \"%s\"",
		       r->metric, r->tid, r->comm, r->b.t - r->a.t, r->b.on_cpu - r->a.on_cpu,
		       r->b.run_delay - r->a.run_delay, r->cause, r->waker, r->waker_comm);
		print_slept(&r->a, &r->b);
	}
}

/* A thread's first looks fault in what look() touches, outside any span. */
static void warm(void)
{
	struct truth t;

	look(&t);
	look(&t);
}

static void sleep_ms(unsigned long ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void spin_ns(uint64_t ns)
{
	uint64_t end = now_ns() + ns;
	int loops = 0;

	do {
		loops++;
		KEEP(loops);
	} while (now_ns() < end);
}

/* Partners: a pair of semaphores so each round starts with both ready. */
struct pair {
	sem_t go, done;
	_Atomic pid_t partner_tid;
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool signalled;
	int pipe[2];
};

static struct pair mutex_pair, pipe_pair, cond_pair;

/*
 * The two spinners share the first allowed CPU; every other thread keeps
 * off it where there is another, so that a waiter is not preempted at its
 * span's edges, outside what it measures.
 */
static cpu_set_t spin_cpu, other_cpus;

static void pin(const cpu_set_t *s)
{
	sched_setaffinity(0, sizeof(*s), s);
}

/* Every thread named, pinned and warm before any round starts. */
static pthread_barrier_t started;

static void name(const char *n)
{
	prctl(PR_SET_NAME, n);
	if (strcmp(n, "w-spinner") && strcmp(n, "w-preempt"))
		pin(&other_cpus);
	warm();
	pthread_barrier_wait(&started);
}

/* ---- wait-mutex ---- */

KHBPF_SPAN(wait_mutex, "wait-mutex")
static int wait_mutex(void)
{
	struct truth a, b;

	look(&a);
	pthread_mutex_lock(&mutex_pair.m);
	pthread_mutex_unlock(&mutex_pair.m);
	look(&b);
	report("wait-mutex", "w-mutex", &a, &b, "lock", mutex_pair.partner_tid, "w-holder");
	return 0;
}

static void *holder_main(void *arg)
{
	unsigned long i;

	(void)arg;
	name("w-holder");
	mutex_pair.partner_tid = gettid_();
	for (i = 0; i < rounds; i++) {
		pthread_mutex_lock(&mutex_pair.m);
		sem_post(&mutex_pair.go);
		sleep_ms(hold_ms);
		pthread_mutex_unlock(&mutex_pair.m);
		sem_wait(&mutex_pair.done);
	}
	return NULL;
}

static void *mutex_main(void *arg)
{
	unsigned long i;
	int r = 0;

	(void)arg;
	name("w-mutex");
	for (i = 0; i < rounds; i++) {
		sem_wait(&mutex_pair.go);
		/* The holder is asleep holding it by the time we try. */
		sleep_ms(hold_ms / 3);
		r += wait_mutex();
		KEEP(r);
		sem_post(&mutex_pair.done);
	}
	return NULL;
}

/* ---- wait-pipe ---- */

KHBPF_SPAN(wait_pipe, "wait-pipe")
static int wait_pipe(void)
{
	struct truth a, b;
	char c;
	ssize_t n;

	look(&a);
	n = read(pipe_pair.pipe[0], &c, 1);
	look(&b);
	report("wait-pipe", "w-pipe", &a, &b, "io", pipe_pair.partner_tid, "w-writer");
	return (int)n;
}

static void *writer_main(void *arg)
{
	unsigned long i;

	(void)arg;
	name("w-writer");
	pipe_pair.partner_tid = gettid_();
	for (i = 0; i < rounds; i++) {
		sem_wait(&pipe_pair.go);
		sleep_ms(hold_ms);
		if (write(pipe_pair.pipe[1], "x", 1) != 1)
			exit(1);
		sem_wait(&pipe_pair.done);
	}
	return NULL;
}

static void *pipe_main(void *arg)
{
	unsigned long i;
	int r = 0;

	(void)arg;
	name("w-pipe");
	for (i = 0; i < rounds; i++) {
		sem_post(&pipe_pair.go);
		r += wait_pipe();
		KEEP(r);
		sem_post(&pipe_pair.done);
	}
	return NULL;
}

/* ---- wait-cond ---- */

KHBPF_SPAN(wait_cond, "wait-cond")
static int wait_cond(void)
{
	struct truth a, b;

	look(&a);
	pthread_mutex_lock(&cond_pair.m);
	sem_post(&cond_pair.go);
	while (!cond_pair.signalled)
		pthread_cond_wait(&cond_pair.cv, &cond_pair.m);
	cond_pair.signalled = false;
	pthread_mutex_unlock(&cond_pair.m);
	look(&b);
	report("wait-cond", "w-cond", &a, &b, "lock", cond_pair.partner_tid, "w-signal");
	return 0;
}

static void *signal_main(void *arg)
{
	unsigned long i;

	(void)arg;
	name("w-signal");
	cond_pair.partner_tid = gettid_();
	for (i = 0; i < rounds; i++) {
		sem_wait(&cond_pair.go);
		sleep_ms(hold_ms);
		pthread_mutex_lock(&cond_pair.m);
		cond_pair.signalled = true;
		pthread_cond_signal(&cond_pair.cv);
		pthread_mutex_unlock(&cond_pair.m);
		sem_wait(&cond_pair.done);
	}
	return NULL;
}

static void *cond_main(void *arg)
{
	unsigned long i;
	int r = 0;

	(void)arg;
	name("w-cond");
	for (i = 0; i < rounds; i++) {
		r += wait_cond();
		KEEP(r);
		sem_post(&cond_pair.done);
	}
	return NULL;
}

/* ---- wait-sleep, and wait-outer around wait-inner ---- */

KHBPF_SPAN(wait_sleep, "wait-sleep")
static int wait_sleep(void)
{
	struct truth a, b;

	look(&a);
	sleep_ms(hold_ms);
	look(&b);
	report("wait-sleep", "w-sleep", &a, &b, "sleep", 0, "(timer)");
	return 0;
}

static void *sleep_main(void *arg)
{
	unsigned long i;
	int r = 0;

	(void)arg;
	name("w-sleep");
	for (i = 0; i < rounds; i++) {
		r += wait_sleep();
		KEEP(r);
	}
	return NULL;
}

KHBPF_SPAN(wait_inner, "wait-inner")
static int wait_inner(void)
{
	struct truth a, b;

	look(&a);
	sleep_ms(hold_ms);
	look(&b);
	report("wait-inner", "w-nest", &a, &b, "sleep", 0, "(timer)");
	return 0;
}

KHBPF_SPAN(wait_outer, "wait-outer")
static int wait_outer(void)
{
	struct truth a, b;
	int r;

	look(&a);
	spin_ns(2000000);
	r = wait_inner();
	KEEP(r);
	look(&b);
	report("wait-outer", "w-nest", &a, &b, "sleep", 0, "(timer)");
	return r;
}

static void *nest_main(void *arg)
{
	unsigned long i;
	int r = 0;

	(void)arg;
	name("w-nest");
	for (i = 0; i < rounds; i++) {
		r += wait_outer();
		KEEP(r);
	}
	return NULL;
}

/* ---- wait-preempt: two spinners on one CPU ---- */

static atomic_bool preempt_done;

KHBPF_SPAN(wait_preempt, "wait-preempt")
static int wait_preempt(void)
{
	struct truth a, b;

	look(&a);
	spin_ns(hold_ms * 1000000ull);
	look(&b);
	report("wait-preempt", "w-preempt", &a, &b, "none", 0, "");
	return 0;
}

static void *spinner_main(void *arg)
{
	(void)arg;
	name("w-spinner");
	pin(&spin_cpu);
	while (!atomic_load(&preempt_done))
		spin_ns(1000000);
	return NULL;
}

static void *preempt_main(void *arg)
{
	unsigned long i;
	int r = 0;

	(void)arg;
	name("w-preempt");
	pin(&spin_cpu);
	for (i = 0; i < rounds; i++) {
		r += wait_preempt();
		KEEP(r);
	}
	atomic_store(&preempt_done, true);
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "waits: usage: waits [--rounds 1..1000] [--hold-ms 1..10000] [--wait]\n");
	return 2;
}

int main(int argc, char **argv)
{
	void *(*mains[])(void *) = { holder_main,  mutex_main,	writer_main, pipe_main,
				     signal_main,  cond_main,	sleep_main,  nest_main,
				     spinner_main, preempt_main };
	pthread_t t[sizeof(mains) / sizeof(mains[0])];
	struct life lives[sizeof(mains) / sizeof(mains[0])];
	struct pair *pairs[] = { &mutex_pair, &pipe_pair, &cond_pair };
	bool wait = false;
	size_t i, left;
	int a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--rounds") && a + 1 < argc) {
			if (parse_ulong(argv[++a], 1, 1000, &rounds))
				return usage();
		} else if (!strcmp(argv[a], "--wait")) {
			wait = true;
		} else if (!strcmp(argv[a], "--hold-ms") && a + 1 < argc) {
			if (parse_ulong(argv[++a], 1, 10000, &hold_ms))
				return usage();
		} else {
			return usage();
		}
	}
	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		if (sem_init(&pairs[i]->go, 0, 0) || sem_init(&pairs[i]->done, 0, 0) ||
		    pthread_mutex_init(&pairs[i]->m, NULL) ||
		    pthread_cond_init(&pairs[i]->cv, NULL))
			return 1;
	}
	if (pipe(pipe_pair.pipe))
		return 1;
	/*
	 * Every page in memory from the start, the threads' stacks too: a
	 * span's only wait is then the one it makes, not a page fault's.
	 */
	mlockall(MCL_CURRENT | MCL_FUTURE);
	{
		uint64_t ns;

		have_slept = slept(&ns);
	}
	if (pthread_barrier_init(&started, NULL, sizeof(mains) / sizeof(mains[0])))
		return 1;
	if (sched_getaffinity(0, sizeof(other_cpus), &other_cpus))
		return 1;
	CPU_ZERO(&spin_cpu);
	for (i = 0; i < CPU_SETSIZE; i++) {
		if (CPU_ISSET(i, &other_cpus)) {
			CPU_SET(i, &spin_cpu);
			if (CPU_COUNT(&other_cpus) > 1)
				CPU_CLR(i, &other_cpus);
			break;
		}
	}
	/* Every slot touched now: no page fault inside a span. */
	max_results = 7 * rounds;
	results = calloc(max_results, sizeof(*results));
	if (!results)
		return 1;
	memset(results, 0xff, max_results * sizeof(*results));
	if (wait) {
		printf("ready\n");
		fflush(stdout);
		read_byte(STDIN_FILENO);
	}
	memset(lives, 0, sizeof(lives));
	for (i = 0; i < sizeof(mains) / sizeof(mains[0]); i++) {
		lives[i].main = mains[i];
		lives[i].created = now_ns();
		if (pthread_create(&t[i], NULL, life_main, &lives[i]))
			return 1;
	}
	/* Each thread's exit as soon as it is over, not in creation order. */
	for (left = sizeof(mains) / sizeof(mains[0]); left;) {
		for (i = 0; i < sizeof(mains) / sizeof(mains[0]); i++) {
			if (!lives[i].joined && !pthread_tryjoin_np(t[i], NULL)) {
				lives[i].joined = now_ns();
				left--;
			}
		}
		if (left)
			usleep(100);
	}
	print_results();
	print_lives(lives, sizeof(mains) / sizeof(mains[0]));
	return 0;
}

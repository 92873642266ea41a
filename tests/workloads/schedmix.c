// SPDX-License-Identifier: MIT
/*
 * schedmix: the accuracy workload. A fixed cast of threads, each exercising
 * one scheduler behaviour, runs for --duration-ms; then every thread's own
 * /proc/thread-self/{sched,schedstat} counters, read by the thread itself as
 * its last act, are written as JSON lines for comparison with khbpf's.
 *
 *   schedmix [--duration-ms N] [--out FILE] [--wait-traced PIDFILE]
 *
 * --wait-traced writes the process id to PIDFILE and starts no thread until
 * a tracer has attached (TracerPid in /proc/self/status), so that
 * tests/helpers/finalcount, PTRACE_O_TRACECLONE following, sees every
 * thread's exit and reads its final counters.
 *
 * Standalone on purpose (cc -O2 -pthread): it must not share khbpf's parser,
 * or a parsing bug would agree with itself.
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

#define DEFAULT_DURATION_MS 1500
#define MAX_DURATION_MS 86400000ull
#define SCHED_TEXT_MAX 16384
#define SCHEDSTAT_TEXT_MAX 128
#define COMM_MAX 64
#define MOVE_PERIOD_NS 2000000ull
#define NSEC_PER_MSEC 1000000ull
#define TRACER_WAIT_MS 30000

enum role {
	ROLE_SLEEP,
	ROLE_SPIN,
	ROLE_PING,
	ROLE_PONG,
	ROLE_YIELD,
	ROLE_HOG1,
	ROLE_HOG2,
	ROLE_MOVER,
	ROLE_SHORT,
	ROLE_MAIN,
	NR_ROLES,
};

struct record {
	pid_t tid;
	int err; /* errno of the final reads; 0 when they worked */
	const char *what; /* the file that failed */
	char comm[COMM_MAX];
	char sched[SCHED_TEXT_MAX];
	char schedstat[SCHEDSTAT_TEXT_MAX];
};

static struct record records[NR_ROLES];
/* Written before the threads start, read-only afterwards. */
static int to_pong[2], to_ping[2];
static int move_cpu[2];
static bool can_move;
static uint64_t short_ns;

static void sleep_until(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Whole file into buf, NUL-terminated; 0 or an errno (EFBIG when it does not fit). */
static int read_text(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	for (;;) {
		if (len == size - 1) {
			err = EFBIG;
			break;
		}
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return err;
}

/*
 * The calling thread's counters over its whole life: callers make this their
 * last act, and nothing between the reads and the return allocates or blocks.
 */
static void record_self(struct record *r)
{
	char comm[COMM_MAX], sched[SCHED_TEXT_MAX], schedstat[SCHEDSTAT_TEXT_MAX];
	const char *what = "/proc/thread-self/comm";
	int err;

	r->tid = gettid();
	err = read_text(what, comm, sizeof(comm));
	if (!err) {
		what = "/proc/thread-self/sched";
		err = read_text(what, sched, sizeof(sched));
	}
	if (!err) {
		what = "/proc/thread-self/schedstat";
		err = read_text(what, schedstat, sizeof(schedstat));
	}
	r->err = err;
	r->what = what;
	if (err)
		return;
	memcpy(r->comm, comm, sizeof(comm));
	memcpy(r->sched, sched, sizeof(sched));
	memcpy(r->schedstat, schedstat, sizeof(schedstat));
}

static void run_sleep(void)
{
	while (!stopped())
		usleep(1000);
}

static void run_spin(void)
{
	struct timespec ts;

	while (!stopped())
		clock_gettime(CLOCK_MONOTONIC, &ts);
}

/* ping sends 'p' and waits for the echo; after the stop it sends 'q' and pong ends. */
static void run_ping(void)
{
	while (!stopped()) {
		write_byte(to_pong[1], 'p');
		if (!read_byte(to_ping[0]))
			break;
	}
	write_byte(to_pong[1], 'q');
}

static void run_pong(void)
{
	while (read_byte(to_pong[0]) == 'p')
		write_byte(to_ping[1], 'p');
}

static void run_yield(void)
{
	while (!stopped()) {
		burn(2000);
		sched_yield();
	}
}

static void run_hog(void)
{
	while (!stopped())
		burn(100000);
}

static void run_mover(void)
{
	bool moving = can_move;
	cpu_set_t set;
	unsigned int i;

	for (i = 0; !stopped(); i++) {
		if (moving) {
			CPU_ZERO(&set);
			CPU_SET(move_cpu[i & 1], &set);
			if (sched_setaffinity(0, sizeof(set), &set)) {
				fprintf(stderr,
					"schedmix: mix-mover: sched_setaffinity: %s; not moving\n",
					strerror(errno));
				moving = false;
			}
		}
		spin_for(MOVE_PERIOD_NS);
	}
}

/* Born and gone well inside the window: a little spinning and sleeping. */
static void run_short(void)
{
	uint64_t end = now_ns() + short_ns;

	while (now_ns() < end && !stopped()) {
		spin_for(NSEC_PER_MSEC / 2);
		usleep(500);
	}
}

static const struct role_desc {
	const char *name;
	void (*run)(void);
} roles[NR_ROLES] = {
	[ROLE_SLEEP] = { "mix-sleep", run_sleep },
	[ROLE_SPIN] = { "mix-spin", run_spin },
	[ROLE_PING] = { "mix-ping", run_ping },
	[ROLE_PONG] = { "mix-pong", run_pong },
	[ROLE_YIELD] = { "mix-yield", run_yield },
	[ROLE_HOG1] = { "mix-hog1", run_hog },
	[ROLE_HOG2] = { "mix-hog2", run_hog },
	[ROLE_MOVER] = { "mix-mover", run_mover },
	[ROLE_SHORT] = { "mix-short", run_short },
	/* The main thread keeps the process name; "main" only labels messages. */
	[ROLE_MAIN] = { "main", NULL },
};

/*
 * Long-running threads wait for each other after their loops, then read
 * themselves and exit one at a time, in the order main joins them: each
 * final read and exit happens with no other thread of the workload runnable,
 * so what the exit adds to the thread's own reading is as small as it gets.
 */
static pthread_mutex_t quiet_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t quiet_cond = PTHREAD_COND_INITIALIZER;
static int quiet_done, quiet_expected = -1, exit_turn = -1;

static void wait_turn(enum role role)
{
	pthread_mutex_lock(&quiet_lock);
	quiet_done++;
	pthread_cond_broadcast(&quiet_cond);
	while (quiet_expected < 0 || quiet_done < quiet_expected || exit_turn != (int)role)
		pthread_cond_wait(&quiet_cond, &quiet_lock);
	pthread_mutex_unlock(&quiet_lock);
}

static void give_turn(int role)
{
	pthread_mutex_lock(&quiet_lock);
	exit_turn = role;
	pthread_cond_broadcast(&quiet_cond);
	pthread_mutex_unlock(&quiet_lock);
}

static void *thread_main(void *arg)
{
	enum role role = (enum role)(intptr_t)arg;

	pthread_setname_np(pthread_self(), roles[role].name);
	roles[role].run();
	if (role != ROLE_SHORT)
		wait_turn(role);
	record_self(&records[role]);
	return NULL;
}

/* Two CPUs the process may run on, so the mover can alternate between them. */
static void pick_move_cpus(void)
{
	cpu_set_t set;
	int cpu, n = 0;

	if (sched_getaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "schedmix: sched_getaffinity: %s; mix-mover will not move\n",
			strerror(errno));
		return;
	}
	for (cpu = 0; cpu < CPU_SETSIZE && n < 2; cpu++) {
		if (CPU_ISSET(cpu, &set))
			move_cpu[n++] = cpu;
	}
	can_move = n == 2;
	if (!can_move)
		fprintf(stderr, "schedmix: only 1 usable CPU; mix-mover will not move\n");
}

/* TracerPid of /proc/self/status: 1 when traced, 0 not, -1 unreadable. */
static int traced(void)
{
	char line[256];
	int ret = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "TracerPid:", 10)) {
			ret = atol(line + 10) != 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* Publish our pid (temp file, then rename) and wait for the tracer. */
static int wait_traced(const char *pid_path)
{
	char tmp[4200];
	FILE *f;
	int i, t;

	snprintf(tmp, sizeof(tmp), "%s.tmp", pid_path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) || rename(tmp, pid_path)) {
		fprintf(stderr, "schedmix: %s: %s\n", pid_path, strerror(errno));
		return -1;
	}
	for (i = 0; i < TRACER_WAIT_MS; i++) {
		t = traced();
		if (t < 0) {
			fprintf(stderr, "schedmix: /proc/self/status: no TracerPid\n");
			return -1;
		}
		if (t)
			return 0;
		usleep(1000);
	}
	fprintf(stderr, "schedmix: no tracer attached within %d ms\n", TRACER_WAIT_MS);
	return -1;
}

static bool parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!len)
		return false;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The value of the line "KEY<blanks>:<blanks>N" of a sched file; the key matches whole. */
static bool sched_value(const char *text, const char *key, uint64_t *out)
{
	const char *line, *eol, *colon, *k, *ke, *v, *ve;
	size_t klen = strlen(key);

	for (line = text; *line; line = *eol ? eol + 1 : eol) {
		eol = strchrnul(line, '\n');
		colon = memchr(line, ':', (size_t)(eol - line));
		if (!colon)
			continue;
		for (k = line; k < colon && is_blank(*k); k++)
			;
		for (ke = colon; ke > k && is_blank(ke[-1]); ke--)
			;
		if ((size_t)(ke - k) != klen || memcmp(k, key, klen))
			continue;
		for (v = colon + 1; v < eol && is_blank(*v); v++)
			;
		for (ve = eol; ve > v && is_blank(ve[-1]); ve--)
			;
		return parse_u64(v, (size_t)(ve - v), out);
	}
	return false;
}

/* "RUNTIME RUN_DELAY PCOUNT\n" */
static bool schedstat_values(const char *text, uint64_t out[3])
{
	const char *p = text, *start;
	int i;

	for (i = 0; i < 3; i++) {
		if (i && *p++ != ' ')
			return false;
		for (start = p; *p >= '0' && *p <= '9'; p++)
			;
		if (!parse_u64(start, (size_t)(p - start), &out[i]))
			return false;
	}
	return !strcmp(p, "\n") || !*p;
}

/* comm is raw kernel bytes; any non-ASCII byte becomes U+FFFD so the line stays JSON. */
static void put_json_string(FILE *f, const char *s)
{
	const unsigned char *p;

	fputc('"', f);
	for (p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else if (*p >= 0x80)
			fputs("\\ufffd", f);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static int write_record(FILE *f, const char *name, struct record *r)
{
	uint64_t vol, invol, migr, ss[3];
	size_t len;

	if (r->err) {
		fprintf(stderr, "schedmix: %s: %s: %s\n", name, r->what, strerror(r->err));
		return -1;
	}
	if (!sched_value(r->sched, "nr_voluntary_switches", &vol) ||
	    !sched_value(r->sched, "nr_involuntary_switches", &invol) ||
	    !sched_value(r->sched, "se.nr_migrations", &migr)) {
		fprintf(stderr, "schedmix: %s: malformed /proc/thread-self/sched\n", name);
		return -1;
	}
	if (!schedstat_values(r->schedstat, ss)) {
		fprintf(stderr, "schedmix: %s: malformed /proc/thread-self/schedstat\n", name);
		return -1;
	}
	len = strlen(r->comm);
	if (len && r->comm[len - 1] == '\n')
		r->comm[len - 1] = '\0';
	fprintf(f, "{\"tid\": %d, \"comm\": ", (int)r->tid);
	put_json_string(f, r->comm);
	fprintf(f,
		", \"nr_voluntary_switches\": %" PRIu64 ", \"nr_involuntary_switches\": %" PRIu64
		", \"nr_migrations\": %" PRIu64 ", \"sum_exec_runtime_ns\": %" PRIu64
		", \"run_delay_ns\": %" PRIu64 ", \"pcount\": %" PRIu64 "}\n",
		vol, invol, migr, ss[0], ss[1], ss[2]);
	return 0;
}

static int usage_error(const char *fmt, const char *arg)
{
	fputs("schedmix: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("; usage: schedmix [--duration-ms N] [--out FILE] [--wait-traced PIDFILE]\n", stderr);
	return 2;
}

/*
 * "--name V" or "--name=V" at argv[*i]: 1 with *value set, -1 when V is
 * missing, 0 when argv[*i] is another argument.
 */
static int option_value(int argc, char **argv, int *i, const char *name, const char **value)
{
	size_t len = strlen(name);

	if (strncmp(argv[*i], name, len))
		return 0;
	if (argv[*i][len] == '=') {
		*value = argv[*i] + len + 1;
		return 1;
	}
	if (argv[*i][len])
		return 0;
	if (*i + 1 >= argc)
		return -1;
	*value = argv[++*i];
	return 1;
}

int main(int argc, char **argv)
{
	pthread_t threads[NR_ROLES];
	uint64_t duration_ms = DEFAULT_DURATION_MS, start;
	const char *out_path = NULL, *pid_path = NULL, *v = NULL;
	int i, found, started = 0, err;
	bool ok = true;
	FILE *out = stdout;

	for (i = 1; i < argc; i++) {
		if ((found = option_value(argc, argv, &i, "--duration-ms", &v))) {
			if (found < 0)
				return usage_error("%s needs a value", argv[i]);
			if (!parse_u64(v, strlen(v), &duration_ms) || !duration_ms ||
			    duration_ms > MAX_DURATION_MS)
				return usage_error("bad --duration-ms '%s' (1..86400000)", v);
		} else if ((found = option_value(argc, argv, &i, "--out", &v))) {
			if (found < 0)
				return usage_error("%s needs a value", argv[i]);
			out_path = v;
		} else if ((found = option_value(argc, argv, &i, "--wait-traced", &v))) {
			if (found < 0)
				return usage_error("%s needs a value", argv[i]);
			pid_path = v;
		} else {
			return usage_error("unknown argument '%s'", argv[i]);
		}
	}

	if (out_path && strcmp(out_path, "-")) {
		out = fopen(out_path, "w");
		if (!out) {
			fprintf(stderr, "schedmix: %s: %s\n", out_path, strerror(errno));
			return 1;
		}
	}
	if (pipe2(to_pong, O_CLOEXEC) || pipe2(to_ping, O_CLOEXEC)) {
		fprintf(stderr, "schedmix: pipe: %s\n", strerror(errno));
		return 1;
	}
	if (pid_path && wait_traced(pid_path))
		return 1;
	pick_move_cpus();
	short_ns = duration_ms * NSEC_PER_MSEC / 10;
	if (short_ns > 100 * NSEC_PER_MSEC)
		short_ns = 100 * NSEC_PER_MSEC;

	start = now_ns();
	for (i = 0; i < ROLE_SHORT; i++) {
		err = pthread_create(&threads[i], NULL, thread_main, (void *)(intptr_t)i);
		if (err) {
			fprintf(stderr, "schedmix: pthread_create: %s\n", strerror(err));
			ok = false;
			break;
		}
		started++;
	}
	pthread_mutex_lock(&quiet_lock);
	quiet_expected = started;
	pthread_cond_broadcast(&quiet_cond);
	pthread_mutex_unlock(&quiet_lock);
	if (ok) {
		sleep_until(start + duration_ms * NSEC_PER_MSEC / 2);
		err = pthread_create(&threads[ROLE_SHORT], NULL, thread_main,
				     (void *)(intptr_t)ROLE_SHORT);
		if (err) {
			fprintf(stderr, "schedmix: pthread_create: %s\n", strerror(err));
			ok = false;
		} else {
			pthread_join(threads[ROLE_SHORT], NULL);
			sleep_until(start + duration_ms * NSEC_PER_MSEC);
		}
	}
	atomic_store(&stop, true);
	/* ping without a pong waits for an echo: give it one so it sees the stop. */
	if (started == ROLE_PONG)
		write_byte(to_ping[1], 'x');
	for (i = 0; i < started; i++) {
		give_turn(i);
		pthread_join(threads[i], NULL);
	}
	record_self(&records[ROLE_MAIN]);

	for (i = 0; ok && i < NR_ROLES; i++) {
		if (write_record(out, roles[i].name, &records[i]))
			ok = false;
	}
	close(to_pong[0]);
	close(to_pong[1]);
	close(to_ping[0]);
	close(to_ping[1]);
	if (fflush(out) || ferror(out)) {
		fprintf(stderr, "schedmix: writing %s: %s\n", out_path ? out_path : "stdout",
			strerror(errno));
		ok = false;
	}
	if (out != stdout && fclose(out)) {
		fprintf(stderr, "schedmix: closing %s: %s\n", out_path, strerror(errno));
		ok = false;
	}
	return ok ? 0 : 1;
}

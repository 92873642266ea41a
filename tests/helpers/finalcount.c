// SPDX-License-Identifier: MIT
/*
 * finalcount --pid PID --dir DIR [--timeout-ms N]
 *
 * The kernel's own final counters of every thread of process PID, read
 * after the thread's last context switch: the ground truth for what khbpf
 * records at a thread's final sched_switch.
 *
 * A thread that exits is gone from /proc (release_task(), called from
 * exit_notify() for a thread nobody traces) before its final switch in
 * do_task_dead(), so nothing outside can read what that switch and the exit
 * path before it added. A ptraced thread instead stays a zombie until its
 * tracer waits for it, with its task_struct, its /proc/PID/task/TID
 * directory and its final counters intact. So: PTRACE_SEIZE every thread
 * (PTRACE_O_TRACECLONE follows the ones it creates), and for each thread
 * that exits, waitid(WNOWAIT) to see the zombie, wait for its final switch
 * (wait_switched_out()), copy its
 * /proc/PID/task/TID/{sched,schedstat,comm} into DIR/TID/, then reap it (a
 * group leader is handed on to its real parent, which gets its wait4 as
 * before). The ptrace stops (clone events, the new threads' first stop) are
 * context switches like any other: khbpf and the kernel both count them.
 *
 * Writes DIR/ready once every thread is traced, and exits 0 when the last
 * thread (the leader) has been read; 1 on any failure, with one line on
 * stderr.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_THREADS 4096
#define FILE_MAX 65536
#define DEFAULT_TIMEOUT_MS 120000L
#define WAIT_OFF_CPU_MS 10000

static pid_t tgid;
static const char *out_dir;
static pid_t seized[MAX_THREADS];
static int nr_seized;

static bool is_seized(pid_t tid)
{
	int i;

	for (i = 0; i < nr_seized; i++) {
		if (seized[i] == tid)
			return true;
	}
	return false;
}

/* Auto-attached by PTRACE_O_TRACECLONE already: TracerPid is us. */
static bool traced_by_us(pid_t tid)
{
	char path[96], line[256];
	bool ours = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)tgid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "TracerPid:", 10)) {
			ours = atol(line + 10) == (long)getpid();
			break;
		}
	}
	fclose(f);
	return ours;
}

/* Seize every thread of tgid not yet traced; the number newly seized, or -1. */
static int seize_threads(void)
{
	char path[64];
	struct dirent *e;
	int n = 0;
	pid_t tid;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)tgid);
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "finalcount: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		tid = (pid_t)atol(e->d_name);
		if (tid <= 0 || is_seized(tid))
			continue;
		if (nr_seized == MAX_THREADS) {
			fprintf(stderr, "finalcount: more than %d threads\n", MAX_THREADS);
			n = -1;
			break;
		}
		if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)PTRACE_O_TRACECLONE)) {
			if (errno == ESRCH) /* it exited meanwhile: not ours to read */
				continue;
			if (errno == EPERM && traced_by_us(tid)) {
				seized[nr_seized++] = tid;
				continue;
			}
			fprintf(stderr, "finalcount: PTRACE_SEIZE %d: %s\n", (int)tid,
				strerror(errno));
			n = -1;
			break;
		}
		seized[nr_seized++] = tid;
		n++;
	}
	closedir(d);
	return n;
}

static int copy_file(const char *from, const char *to)
{
	static char buf[FILE_MAX];
	ssize_t len;
	int in, out, err = 0;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	len = read(in, buf, sizeof(buf));
	if (len < 0)
		err = -errno;
	close(in);
	if (err)
		return err;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0)
		return -errno;
	if (write(out, buf, (size_t)len) != len)
		err = errno ? -errno : -EIO;
	if (close(out) && !err)
		err = -errno;
	return err;
}

/*
 * A thread is a zombie (exit_notify()) before its final switch, and may go
 * on running for a while (milliseconds on an emulated CPU): its counters are
 * final only once do_task_dead() has switched it out. /proc/PID/task/TID/
 * syscall tells: task_current_syscall() answers "running" while the task's
 * state is still TASK_RUNNING, and otherwise waits in wait_task_inactive()
 * until the task is off its CPU, so any other answer comes after the switch.
 */
static int wait_switched_out(pid_t tid)
{
	char path[96], buf[64];
	ssize_t len;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)tgid, (int)tid);
	for (i = 0; i < WAIT_OFF_CPU_MS * 10; i++) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "finalcount: %s: %s\n", path, strerror(errno));
			return -1;
		}
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len < 0) {
			fprintf(stderr, "finalcount: reading %s: %s\n", path, strerror(errno));
			return -1;
		}
		buf[len] = 0;
		if (strncmp(buf, "running", 7))
			return 0;
		usleep(100);
	}
	fprintf(stderr, "finalcount: thread %d still running %d ms after it exited\n", (int)tid,
		WAIT_OFF_CPU_MS);
	return -1;
}

/* Copy the zombie thread's counters to DIR/TID/ once they cannot change. */
static int read_final(pid_t tid)
{
	static const char *const files[] = { "sched", "schedstat", "comm" };
	char from[96], dir[4096], to[4200];
	size_t i;
	int err;

	if (wait_switched_out(tid))
		return -1;
	snprintf(dir, sizeof(dir), "%s/%d", out_dir, (int)tid);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "finalcount: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(from, sizeof(from), "/proc/%d/task/%d/%s", (int)tgid, (int)tid, files[i]);
		snprintf(to, sizeof(to), "%s/%s", dir, files[i]);
		err = copy_file(from, to);
		if (err) {
			fprintf(stderr, "finalcount: copying %s: %s\n", from, strerror(-err));
			return -1;
		}
	}
	return 0;
}

/* Let a stopped tracee go on: group-stops listen, the rest continue. */
static int resume(pid_t tid, int st)
{
	int sig = WSTOPSIG(st), event = (unsigned int)st >> 16;
	long req = PTRACE_CONT, data = 0;

	if (event == PTRACE_EVENT_STOP) {
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
			req = PTRACE_LISTEN;
	} else if (!event) {
		data = sig; /* signal-delivery-stop: deliver it */
	}
	if (ptrace(req, tid, NULL, (void *)data) && errno != ESRCH) {
		fprintf(stderr, "finalcount: resuming %d: %s\n", (int)tid, strerror(errno));
		return -1;
	}
	return 0;
}

static int watch(void)
{
	siginfo_t si;
	int st;

	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WSTOPPED | WNOWAIT | __WALL)) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "finalcount: waitid: %s\n", strerror(errno));
			return -1;
		}
		if (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED ||
		    si.si_code == CLD_DUMPED) {
			if (read_final(si.si_pid))
				return -1;
			if (waitpid(si.si_pid, &st, __WALL) < 0) {
				fprintf(stderr, "finalcount: reaping %d: %s\n", (int)si.si_pid,
					strerror(errno));
				return -1;
			}
			if (si.si_pid == tgid)
				return 0;
			continue;
		}
		if (waitpid(si.si_pid, &st, __WALL) < 0) {
			fprintf(stderr, "finalcount: waitpid %d: %s\n", (int)si.si_pid,
				strerror(errno));
			return -1;
		}
		if (WIFSTOPPED(st) && resume(si.si_pid, st))
			return -1;
	}
}

static void timed_out(int sig)
{
	static const char msg[] = "finalcount: timed out; every tracee is detached\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

static int usage(const char *what)
{
	fprintf(stderr, "finalcount: %s; usage: finalcount --pid PID --dir DIR [--timeout-ms N]\n",
		what);
	return 2;
}

int main(int argc, char **argv)
{
	long timeout_ms = DEFAULT_TIMEOUT_MS, v;
	char ready[4200], *end;
	int i, n, fd;

	for (i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			return usage("every option needs a value");
		if (!strcmp(argv[i], "--pid")) {
			v = strtol(argv[++i], &end, 10);
			if (*end || v <= 0 || v > 1L << 22)
				return usage("bad --pid");
			tgid = (pid_t)v;
		} else if (!strcmp(argv[i], "--dir")) {
			out_dir = argv[++i];
		} else if (!strcmp(argv[i], "--timeout-ms")) {
			timeout_ms = strtol(argv[++i], &end, 10);
			if (*end || timeout_ms <= 0 || timeout_ms > 86400000L)
				return usage("bad --timeout-ms (1..86400000)");
		} else {
			return usage("unknown argument");
		}
	}
	if (!tgid || !out_dir)
		return usage("--pid and --dir are required");
	/* Dying detaches every tracee (exit_ptrace()): nothing stays stopped. */
	signal(SIGALRM, timed_out);
	alarm((unsigned int)((timeout_ms + 999) / 1000));

	/* Threads may be created while we seize: again until none is new. */
	do {
		n = seize_threads();
		if (n < 0)
			return 1;
	} while (n > 0);
	if (!nr_seized) {
		fprintf(stderr, "finalcount: process %d has no threads to trace\n", (int)tgid);
		return 1;
	}
	snprintf(ready, sizeof(ready), "%s/ready", out_dir);
	fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "finalcount: %s: %s\n", ready, strerror(errno));
		return 1;
	}
	close(fd);
	return watch() ? 1 : 0;
}

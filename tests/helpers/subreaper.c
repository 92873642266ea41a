// SPDX-License-Identifier: MIT
/*
 * subreaper [--grace MS] [--leaks FILE] -- CMD [ARG...]
 *
 * Runs CMD as a child subreaper (PR_SET_CHILD_SUBREAPER, Linux 3.4): every
 * process CMD starts, however it detaches (double fork, setsid, `&` and
 * exit), is reparented to us instead of init when its parent dies. When CMD
 * exits, whatever of its descendants is still alive after the grace period
 * (default 5000 ms: traps that kill without waiting) was left behind by it.
 * Each is listed ("PID COMM CMDLINE", one a line) in FILE, or on stderr
 * without --leaks, then killed with SIGKILL and reaped, so nothing outlives
 * the test whatever the verdict. Exits with CMD's status (128+N for signal N).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LEFT 4096

static int status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

/* Our children now: their /proc/PID/stat ppid (field 4) is us. */
static int children(pid_t *out, int max)
{
	char path[300], buf[512], *p;
	struct dirent *e;
	int n = 0;
	long ppid;
	FILE *f;
	DIR *d = opendir("/proc");

	if (!d)
		return -errno;
	while ((e = readdir(d)) && n < max) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		/* After "comm)": " S PPID ..."; comm may hold spaces and ')'. */
		if (p && sscanf(p + 1, " %*c %ld", &ppid) == 1 && ppid == getpid())
			out[n++] = (pid_t)atol(e->d_name);
	}
	closedir(d);
	return n;
}

static void describe(FILE *f, pid_t pid)
{
	char path[64], comm[64] = "?", cmd[512];
	size_t len = 0, i;
	FILE *in;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	in = fopen(path, "re");
	if (in) {
		if (fgets(comm, sizeof(comm), in))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(in);
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	in = fopen(path, "re");
	if (in) {
		len = fread(cmd, 1, sizeof(cmd) - 1, in);
		fclose(in);
	}
	for (i = 0; i < len; i++)
		if (cmd[i] == '\0' || cmd[i] == '\n')
			cmd[i] = ' ';
	cmd[len] = '\0';
	fprintf(f, "%d %s %s\n", pid, comm, cmd);
}

static void reap_exited(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	static pid_t left[MAX_LEFT];
	const char *leaks = NULL;
	long grace_ms = 5000, waited;
	int i = 1, st, n, k;
	FILE *out = stderr;
	pid_t cmd, w;

	for (; i < argc && strncmp(argv[i], "--", 2) == 0 && argv[i][2]; i++) {
		if (!strcmp(argv[i], "--grace") && i + 1 < argc)
			grace_ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "--leaks") && i + 1 < argc)
			leaks = argv[++i];
		else
			break;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc) {
		fprintf(stderr,
			"subreaper: usage: subreaper [--grace MS] [--leaks FILE] -- CMD [ARG...]\n");
		return 2;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
		perror("subreaper: PR_SET_CHILD_SUBREAPER");
		return 2;
	}
	cmd = fork();
	if (cmd < 0) {
		perror("subreaper: fork");
		return 2;
	}
	if (cmd == 0) {
		execvp(argv[i], argv + i);
		fprintf(stderr, "subreaper: %s: %s\n", argv[i], strerror(errno));
		_exit(127);
	}
	/* Orphans reparented to us may exit before CMD does: reap them too. */
	for (;;) {
		w = waitpid(-1, &st, 0);
		if (w == cmd)
			break;
		if (w < 0 && errno != EINTR) {
			perror("subreaper: waitpid");
			return 2;
		}
	}
	for (waited = 0;; waited += 50) {
		reap_exited();
		n = children(left, MAX_LEFT);
		if (n <= 0 || waited >= grace_ms)
			break;
		sleep_ms(50);
	}
	if (n > 0) {
		if (leaks) {
			out = fopen(leaks, "we");
			if (!out)
				out = stderr;
		}
		for (k = 0; k < n; k++) {
			describe(out, left[k]);
			kill(left[k], SIGKILL);
		}
		if (out != stderr)
			fclose(out);
		/* Killed ones may have children of their own, reparented to us. */
		for (waited = 0; waited < 10000; waited += 50) {
			reap_exited();
			n = children(left, MAX_LEFT);
			if (n <= 0)
				break;
			for (k = 0; k < n; k++)
				kill(left[k], SIGKILL);
			sleep_ms(50);
		}
	}
	return status_code(st);
}

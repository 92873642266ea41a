// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/fsutil.h"
#include "host/procsched.h"
#include "collect/proctarget.h"

#define NS_PER_SEC UINT64_C(1000000000)

static int errf(char *buf, size_t len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int errf(char *buf, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return err;
}

/* /proc/PID/stat into buf; *after points past the last ')' (comm may hold any). */
static int proc_stat_read(const char *root, pid_t pid, char *buf, size_t size, char **after)
{
	char path[64];
	int n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = fsutil__read_file(root, path, buf, size);
	if (n < 0)
		return n == -ENOENT ? -ESRCH : n;
	*after = strrchr(buf, ')');
	return *after ? 0 : -EINVAL;
}

int proctarget__state(const char *root, pid_t pid, char *state, unsigned long *flags)
{
	char buf[1024], *p;
	int err = proc_stat_read(root, pid, buf, sizeof(buf), &p);

	/* After ") ": state ppid pgrp session tty_nr tpgid flags */
	if (!err && sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", state, flags) != 2)
		err = -EINVAL;
	return err;
}

int proctarget__start_ticks(const char *root, pid_t pid, uint64_t *ticks, bool *alive)
{
	unsigned long long t;
	char buf[1024], *p, state;
	int err = proc_stat_read(root, pid, buf, sizeof(buf), &p);

	/* After ") ": fields 3..22 of proc(5), starttime the last of them. */
	if (!err &&
	    sscanf(p + 1,
		   " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		   &state, &t) != 2)
		err = -EINVAL;
	if (err)
		return err;
	*ticks = t;
	*alive = state != 'Z' && state != 'X';
	return 0;
}

#define PF_KTHREAD 0x00200000UL

int proctarget__child_faults(const char *root, pid_t pid, uint64_t *faults)
{
	unsigned long long cmin, cmaj;
	char buf[1024], *p;
	int err = proc_stat_read(root, pid, buf, sizeof(buf), &p);

	/* ... flags minflt cminflt majflt cmajflt */
	if (!err &&
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %llu %*u %llu", &cmin, &cmaj) != 2)
		err = -EINVAL;
	if (!err)
		*faults = cmin + cmaj;
	return err;
}

int proctarget__cpu_ns(pid_t pid, uint64_t *ns)
{
	struct timespec ts;
	clockid_t id;
	int err = clock_getcpuclockid(pid, &id);

	if (err)
		return -err;
	if (clock_gettime(id, &ts))
		return -errno;
	*ns = (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
	return 0;
}

/*
 * A zombie main thread with other threads still listed: the main thread
 * called pthread_exit and the process runs on (exited threads other than
 * the leader are reaped at once, so any other entry is a live thread).
 */
static bool other_threads_listed(const char *root, pid_t pid)
{
	char path[PATH_MAX];
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (fsutil__path(path, sizeof(path), root, "/proc/%d/task", (int)pid) < 0)
		return false;
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (de = readdir(d)))
		found = de->d_name[0] != '.' && strtol(de->d_name, NULL, 10) != pid;
	closedir(d);
	return found;
}

/* The process a thread id belongs to (Tgid of /proc/PID/status), or -errno. */
static long tgid_of(const char *root, pid_t pid)
{
	char path[64], buf[4096], *t;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	r = fsutil__read_file(root, path, buf, sizeof(buf));
	if (r < 0)
		return r;
	t = strstr(buf, "\nTgid:");
	return t ? strtol(t + 6, NULL, 10) : -EIO;
}

int proctarget__check_attach(const char *root, pid_t pid, char *errbuf, size_t errlen)
{
	unsigned long flags = 0;
	char state = 0;
	long tgid;
	int err;

	if (pid <= 0)
		return errf(errbuf, errlen, -EINVAL, "--pid %d: not a process id", (int)pid);
	err = proctarget__state(root, pid, &state, &flags);
	if (err == -ESRCH)
		return errf(errbuf, errlen, err, "--pid %d: no such process", (int)pid);
	if (err)
		return errf(errbuf, errlen, err, "--pid %d: cannot read /proc/%d/stat: %s",
			    (int)pid, (int)pid, strerror(-err));
	if (flags & PF_KTHREAD)
		return errf(errbuf, errlen, -EINVAL,
			    "--pid %d is a kernel thread; khbpf watches user processes", (int)pid);
	/* /proc/TID exists (unlisted) for every thread: a thread id names its process. */
	tgid = tgid_of(root, pid);
	if (tgid > 0 && tgid != pid)
		return errf(errbuf, errlen, -EINVAL,
			    "--pid %d is a thread of process %ld; give --pid %ld", (int)pid, tgid,
			    tgid);
	if ((state == 'Z' || state == 'X') && !other_threads_listed(root, pid))
		return errf(errbuf, errlen, -ESRCH,
			    "--pid %d is a zombie (exited, not yet reaped); nothing left to watch",
			    (int)pid);
	return 0;
}

/* comm and exe, read while the target lives; a later successful read wins. */
void proctarget__fill(const char *root, pid_t pid, enum target_mode mode, struct doc_target *t)
{
	char path[64], buf[DOC_COMM_MAX], exe[PATH_MAX];
	ssize_t n;
	int r;

	t->pid = (uint64_t)pid;
	t->mode = mode;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	r = fsutil__read_file(root, path, buf, sizeof(buf));
	if (r > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(t->comm, sizeof(t->comm), "%s", buf);
	}
	r = fsutil__path(path, sizeof(path), root, "/proc/%d/exe", (int)pid);
	n = r < 0 ? -1 : readlink(path, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		memcpy(t->exe, exe, (size_t)n + 1);
		t->exe_recorded = true;
	} else if (!t->exe_recorded) {
		t->exe_reason = fsutil__errno_gap(n < 0 ? -errno : -EINVAL);
	}
}

/* procfs fallback: the kernel's counters as a thread table. */
int proctarget__snapshot(const char *root, pid_t pid, size_t max_threads, struct thread_table *out,
			 uint64_t *read_errors)
{
	struct procsched_snapshot snap;
	size_t i;
	int err;

	memset(out, 0, sizeof(*out));
	err = procsched__read(root, pid, max_threads, &snap);
	if (err)
		return err;
	out->recs = calloc(snap.nr_threads ? snap.nr_threads : 1, sizeof(*out->recs));
	if (!out->recs) {
		procsched__free(&snap);
		return -ENOMEM;
	}
	for (i = 0; i < snap.nr_threads; i++) {
		const struct procsched_thread *p = &snap.threads[i];
		struct khbpf_thread_rec *r = &out->recs[out->nr];

		if (!p->has_sched || !p->has_schedstat) {
			(*read_errors)++;
			continue;
		}
		r->tid = (uint32_t)p->tid;
		r->tgid = (uint32_t)pid;
		snprintf(r->comm, sizeof(r->comm), "%.15s", p->comm);
		r->k.nvcsw = p->nr_voluntary_switches;
		r->k.nivcsw = p->nr_involuntary_switches;
		r->k.nr_migrations = p->nr_migrations;
		r->k.sum_exec_runtime = p->sum_exec_runtime_ns;
		r->k.run_delay = p->run_delay_ns;
		r->k.pcount = p->pcount;
		if (p->exited)
			r->flags |= KHBPF_REC_ZOMBIE;
		out->nr++;
	}
	*read_errors += snap.dropped_threads;
	procsched__free(&snap);
	thread_table__sort(out);
	return 0;
}

static int pids_push(pid_t **v, size_t *nr, size_t max, pid_t pid)
{
	pid_t *grown;
	size_t i;

	for (i = 0; i < *nr; i++)
		if ((*v)[i] == pid)
			return 0;
	if (*nr >= max)
		return -E2BIG;
	grown = realloc(*v, (*nr + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	*v = grown;
	grown[(*nr)++] = pid;
	return 0;
}

/* Adds the pids listed in one /proc children file (space-separated). */
static int push_children(const char *root, pid_t pid, const char *tid, pid_t **v, size_t *nr,
			 size_t max)
{
	char path[PATH_MAX], buf[16384], *p, *end;
	long c;
	int r;

	if (fsutil__path(path, sizeof(path), root, "/proc/%d/task/%s/children", (int)pid, tid) < 0)
		return 0;
	r = fsutil__read_file("", path, buf, sizeof(buf));
	if (r <= 0)
		return 0;
	for (p = buf;; p = end) {
		c = strtol(p, &end, 10);
		if (end == p)
			return 0;
		r = pids_push(v, nr, max, (pid_t)c);
		if (r)
			return r;
	}
}

int proctarget__descendants(const char *root, const pid_t *pids, size_t n, size_t max, pid_t **out,
			    size_t *nr)
{
	char path[PATH_MAX];
	struct dirent *de;
	size_t i;
	int err = 0;
	DIR *d;

	*out = NULL;
	*nr = 0;
	for (i = 0; i < n && !err; i++)
		err = pids_push(out, nr, max, pids[i]);
	/* Breadth first: the list grows as it is walked. */
	for (i = 0; i < *nr && !err; i++) {
		if (fsutil__path(path, sizeof(path), root, "/proc/%d/task", (int)(*out)[i]) < 0)
			continue;
		d = opendir(path);
		while (d && !err && (de = readdir(d)))
			if (de->d_name[0] != '.')
				err = push_children(root, (*out)[i], de->d_name, out, nr, max);
		if (d)
			closedir(d);
	}
	return err == -E2BIG ? 0 : err;
}

int proctarget__cgroup_pids(const char *dir, size_t max, pid_t **out, size_t *nr, int depth)
{
	char path[PATH_MAX + 16], line[32];
	struct dirent *de;
	int err = 0;
	FILE *f;
	DIR *d;

	if (!depth) {
		*out = NULL;
		*nr = 0;
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	while (f && !err && fgets(line, sizeof(line), f))
		err = pids_push(out, nr, max, (pid_t)atoi(line));
	if (f)
		fclose(f);
	if (err || depth > 32)
		return err == -E2BIG ? 0 : err;
	d = opendir(dir);
	while (d && !err && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		err = proctarget__cgroup_pids(path, max, out, nr, depth + 1);
	}
	if (d)
		closedir(d);
	return err == -E2BIG ? 0 : err;
}

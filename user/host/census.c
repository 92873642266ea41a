// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/census.h"
#include "lib/fsutil.h"
#include "host/procsched.h"

enum census_mode {
	CENSUS_MODE_UNKNOWN = 0,
	CENSUS_MODE_SCHEDSTAT,
	CENSUS_MODE_STAT,
};

/* utime and stime are fields 14 and 15 of stat; fields 3.. follow the comm's ')'. */
#define STAT_UTIME_AFTER_COMM 11

static int read_task_file(const char *root, pid_t pid, pid_t tid, const char *name, char *buf,
			  size_t size)
{
	char rel[128];
	int n;

	snprintf(rel, sizeof(rel), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
	n = fsutil__read_file(root, rel, buf, size);
	if (n == -EFBIG)
		return -EINVAL;
	if (n >= 0 && memchr(buf, '\0', (size_t)n))
		return -EINVAL;
	return n < 0 ? n : 0;
}

static bool task_dir_exists(const char *root, pid_t pid, pid_t tid)
{
	char path[PATH_MAX];
	struct stat st;

	if (fsutil__path(path, sizeof(path), root, "/proc/%d/task/%d", (int)pid, (int)tid) < 0)
		return false;
	return !stat(path, &st);
}

/* schedstat: "sum_exec_runtime run_delay timeslices\n", nanoseconds first. */
static int read_schedstat(const char *root, pid_t pid, pid_t tid, uint64_t *ns)
{
	struct procsched_thread t = { 0 };
	char buf[128];
	int err;

	err = read_task_file(root, pid, tid, "schedstat", buf, sizeof(buf));
	if (err)
		return err;
	/* Malformed or out of range alike are -EINVAL, as census__read documents. */
	if (procsched__parse_schedstat(buf, &t))
		return -EINVAL;
	*ns = t.sum_exec_runtime_ns;
	return 0;
}

static int ticks_to_ns(uint64_t ticks, uint64_t *ns)
{
	long hz = sysconf(_SC_CLK_TCK);
	unsigned __int128 v;

	if (hz <= 0)
		return -EINVAL;
	v = (unsigned __int128)ticks * 1000000000u / (unsigned long)hz;
	*ns = v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
	return 0;
}

/* stat: "tid (comm) state ..."; comm may hold spaces and ')', so the last ')' ends it. */
static int read_task_stat(const char *root, pid_t pid, pid_t tid, uint64_t *ns)
{
	char buf[4096], *p, *tok, *save = NULL;
	uint64_t utime = 0, stime = 0;
	int i, err;

	err = read_task_file(root, pid, tid, "stat", buf, sizeof(buf));
	if (err)
		return err;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -EINVAL;
	tok = strtok_r(p + 1, " \n", &save);
	for (i = 0; tok && i <= STAT_UTIME_AFTER_COMM + 1; i++) {
		if (i == STAT_UTIME_AFTER_COMM && fsutil__parse_u64(tok, &utime))
			return -EINVAL;
		if (i == STAT_UTIME_AFTER_COMM + 1 && fsutil__parse_u64(tok, &stime))
			return -EINVAL;
		tok = strtok_r(NULL, " \n", &save);
	}
	if (i <= STAT_UTIME_AFTER_COMM + 1)
		return -EINVAL;
	return ticks_to_ns(utime > UINT64_MAX - stime ? UINT64_MAX : utime + stime, ns);
}

static int read_thread(const char *root, pid_t pid, pid_t tid, enum census_mode *mode, uint64_t *ns)
{
	int err;

	if (*mode != CENSUS_MODE_STAT) {
		err = read_schedstat(root, pid, tid, ns);
		if (!err)
			*mode = CENSUS_MODE_SCHEDSTAT;
		if (err != -ENOENT || *mode == CENSUS_MODE_SCHEDSTAT)
			return err;
		/* No schedstat: the thread exited, or the kernel lacks CONFIG_SCHED_INFO. */
		if (!task_dir_exists(root, pid, tid))
			return -ENOENT;
		*mode = CENSUS_MODE_STAT;
	}
	return read_task_stat(root, pid, tid, ns);
}

int census__read(const char *root, pid_t pid, uint64_t elapsed_ns, struct thread_census *out,
		 enum ev_source *source)
{
	enum census_mode mode = CENSUS_MODE_UNKNOWN;
	struct thread_cpu *threads = NULL;
	size_t nr_tids, i, stored = 0;
	uint64_t dropped = 0;
	pid_t *tids;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (pid <= 0)
		return -ESRCH;
	err = fsutil__list_tids(root, pid, &tids, &nr_tids);
	if (err)
		return err;
	if (nr_tids) {
		size_t cap = nr_tids < EV_MAX_SAMPLE_THREADS ? nr_tids : EV_MAX_SAMPLE_THREADS;

		threads = calloc(cap, sizeof(*threads));
		if (!threads) {
			free(tids);
			return -ENOMEM;
		}
	}
	for (i = 0; i < nr_tids; i++) {
		uint64_t ns;

		if (stored == EV_MAX_SAMPLE_THREADS) {
			dropped = nr_tids - i;
			break;
		}
		err = read_thread(root, pid, tids[i], &mode, &ns);
		if (err == -ENOENT || err == -ESRCH) {
			err = 0;
			continue;
		}
		if (err)
			break;
		threads[stored].thread_id = (uint64_t)tids[i];
		threads[stored].cpu_time_ns = ns;
		stored++;
	}
	free(tids);
	/* Every thread gone (or none listed): the process has exited. */
	if (!err && !stored)
		err = -ESRCH;
	if (err) {
		free(threads);
		return err;
	}
	out->elapsed_ns = elapsed_ns;
	out->threads = threads;
	out->nr_threads = stored;
	out->dropped_threads = dropped;
	if (source)
		*source = mode == CENSUS_MODE_STAT ? EV_SRC_PROC_PID_TASK_STAT :
						     EV_SRC_PROC_PID_SCHEDSTAT;
	return 0;
}

void census__free(struct thread_census *c)
{
	if (!c)
		return;
	free(c->threads);
	c->threads = NULL;
	c->nr_threads = 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * A thread's own kernel counters, read by itself from
 * /proc/thread-self/{sched,schedstat} as one consistent reading, and
 * written as one JSON line: the ground truth the process-tree workloads
 * (tree.c, treeleaf.c) leave for tests/integration/tree.sh. Standalone: no
 * khbpf code. Include after workload.h.
 */
#ifndef KHBPF_SELFCOUNT_H
#define KHBPF_SELFCOUNT_H

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

struct selfcount {
	unsigned long long nvcsw, nivcsw, migrations; /* sched */
	unsigned long long runtime, run_delay, pcount; /* schedstat */
};

static inline int read_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static inline unsigned long long sched_field(const char *text, const char *name)
{
	const char *p = strstr(text, name);

	if (!p)
		return ~0ull;
	p = strchr(p, ':');
	return p ? strtoull(p + 1, NULL, 10) : ~0ull;
}

/*
 * The two files are read apart, so a switch between them would pair old
 * switch counts with a new pcount: sched is read again after schedstat,
 * and the reading taken again until nr_switches did not move meanwhile.
 */
static inline int selfcount_read(struct selfcount *c)
{
	char a[4096], b[4096], st[256];
	int tries;

	for (tries = 0; tries < 100; tries++) {
		if (read_text("/proc/thread-self/sched", a, sizeof(a)) ||
		    read_text("/proc/thread-self/schedstat", st, sizeof(st)) ||
		    read_text("/proc/thread-self/sched", b, sizeof(b)))
			return -1;
		if (sched_field(a, "nr_switches") != sched_field(b, "nr_switches"))
			continue;
		c->nvcsw = sched_field(b, "nr_voluntary_switches");
		c->nivcsw = sched_field(b, "nr_involuntary_switches");
		c->migrations = sched_field(b, "se.nr_migrations");
		if (sscanf(st, "%llu %llu %llu", &c->runtime, &c->run_delay, &c->pcount) != 3)
			return -1;
		return 0;
	}
	return -1;
}

/* One line, one write(2) to an O_APPEND file: lines of several processes never mix. */
static inline void selfcount_emit(int fd, const char *role, const struct selfcount *c)
{
	char line[512];
	int n;

	n = snprintf(line, sizeof(line),
		     "{\"kind\": \"thread\", \"pid\": %d, \"tid\": %ld, \"role\": \"%s\", "
		     "\"nvcsw\": %llu, \"nivcsw\": %llu, \"migrations\": %llu, \"runtime\": %llu, "
		     "\"run_delay\": %llu, \"pcount\": %llu}\n",
		     (int)getpid(), (long)syscall(SYS_gettid), role, c->nvcsw, c->nivcsw,
		     c->migrations, c->runtime, c->run_delay, c->pcount);
	if (write(fd, line, (size_t)n) != n)
		_exit(90);
}

/* Reads this thread's counters and writes them, named role; a failed read ends the process. */
static inline void selfcount_record(int fd, const char *role)
{
	struct selfcount c;

	if (selfcount_read(&c))
		_exit(91);
	selfcount_emit(fd, role, &c);
}

/* A process line: who it is and who forked it. */
static inline void process_emit(int fd, const char *role, int parent)
{
	char line[256];
	int n = snprintf(line, sizeof(line),
			 "{\"kind\": \"process\", \"pid\": %d, \"parent\": %d, \"role\": \"%s\"}\n",
			 (int)getpid(), parent, role);

	if (write(fd, line, (size_t)n) != n)
		_exit(90);
}

#endif /* KHBPF_SELFCOUNT_H */

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/fsutil.h"
#include "host/procsched.h"

/*
 * One buffer serves every file of a thread. A sched file is about 2 KiB, or
 * 5 KiB with schedstats on; NUMA adds a line per node.
 */
#define PROCSCHED_BUF_SIZE (64 * 1024)

static const char *const sched_keys[] = {
	"nr_voluntary_switches",
	"nr_involuntary_switches",
	"se.nr_migrations",
};

#define NR_SCHED_KEYS (sizeof(sched_keys) / sizeof(sched_keys[0]))

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* fsutil__parse_u64 over s[0..len), without the optional '\n'. */
static int parse_u64_span(const char *s, size_t len, uint64_t *out)
{
	bool overflow = false;
	uint64_t v = 0;
	size_t i;

	if (!len)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		unsigned int d = (unsigned int)(s[i] - '0');

		if (!is_digit(s[i]))
			return -EINVAL;
		if (v > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			v = v * 10 + d;
	}
	if (overflow)
		return -ERANGE;
	*out = v;
	return 0;
}

/*
 * Malformed input wins over overflow, as in fsutil__parse_u64, so the
 * verdict does not depend on which bad field comes first.
 */
static int worse_error(int err, int next)
{
	return err == -EINVAL || !next ? err : next;
}

static int sched_key_index(const char *key, size_t len)
{
	size_t i;

	for (i = 0; i < NR_SCHED_KEYS; i++) {
		if (strlen(sched_keys[i]) == len && !memcmp(sched_keys[i], key, len))
			return (int)i;
	}
	return -1;
}

/*
 * The header line "COMM (PID, #threads: N)" also holds a ':', but the text
 * before it ends in "#threads" and so never equals a key, whatever COMM is.
 */
int procsched__parse_sched(const char *text, struct procsched_thread *out)
{
	uint64_t vals[NR_SCHED_KEYS];
	bool seen[NR_SCHED_KEYS] = { false };
	const char *line, *eol, *colon, *k, *ke, *v, *ve;
	int err = 0, idx;
	size_t i;

	if (!text || !out)
		return -EINVAL;
	for (line = text; *line; line = *eol ? eol + 1 : eol) {
		eol = strchrnul(line, '\n');
		colon = memchr(line, ':', (size_t)(eol - line));
		if (!colon)
			continue;
		for (k = line; k < colon && is_blank(*k); k++)
			;
		for (ke = colon; ke > k && is_blank(ke[-1]); ke--)
			;
		idx = sched_key_index(k, (size_t)(ke - k));
		if (idx < 0)
			continue;
		if (seen[idx])
			return -EINVAL;
		seen[idx] = true;
		for (v = colon + 1; v < eol && is_blank(*v); v++)
			;
		for (ve = eol; ve > v && is_blank(ve[-1]); ve--)
			;
		err = worse_error(err, parse_u64_span(v, (size_t)(ve - v), &vals[idx]));
	}
	for (i = 0; i < NR_SCHED_KEYS; i++) {
		if (!seen[i])
			return -EINVAL;
	}
	if (err)
		return err;
	out->has_sched = true;
	out->nr_voluntary_switches = vals[0];
	out->nr_involuntary_switches = vals[1];
	out->nr_migrations = vals[2];
	return 0;
}

int procsched__parse_schedstat(const char *text, struct procsched_thread *out)
{
	uint64_t vals[3];
	const char *p, *start;
	int err = 0;
	size_t i;

	if (!text || !out)
		return -EINVAL;
	p = text;
	for (i = 0; i < 3; i++) {
		if (i && *p++ != ' ')
			return -EINVAL;
		for (start = p; is_digit(*p); p++)
			;
		err = worse_error(err, parse_u64_span(start, (size_t)(p - start), &vals[i]));
		if (err == -EINVAL)
			return err;
	}
	if (*p == '\n')
		p++;
	if (*p)
		return -EINVAL;
	if (err)
		return err;
	out->has_schedstat = true;
	out->sum_exec_runtime_ns = vals[0];
	out->run_delay_ns = vals[1];
	out->pcount = vals[2];
	return 0;
}

static int read_task_file(const char *root, pid_t pid, pid_t tid, const char *name, char *buf,
			  size_t size)
{
	char rel[96];
	int n;

	snprintf(rel, sizeof(rel), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
	n = fsutil__read_file(root, rel, buf, size);
	if (n == -EFBIG)
		return -EINVAL;
	if (n < 0)
		return n;
	/* The parsers see C strings; a NUL would hide the rest of the file. */
	if (memchr(buf, '\0', (size_t)n))
		return -EINVAL;
	return n;
}

static bool task_dir_exists(const char *root, pid_t pid, pid_t tid)
{
	char path[PATH_MAX];
	struct stat st;

	if (fsutil__path(path, sizeof(path), root, "/proc/%d/task/%d", (int)pid, (int)tid) < 0)
		return false;
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/*
 * A file that is not there either went with its thread (-ESRCH) or was never
 * built into this kernel (-ENOENT). procfs answers -ESRCH itself when the
 * task dies between open and read.
 */
static int classify_missing(const char *root, pid_t pid, pid_t tid, int err)
{
	if (err == -ENOENT && !task_dir_exists(root, pid, tid))
		return -ESRCH;
	return err;
}

static void set_comm(struct procsched_thread *out, const char *s, size_t len)
{
	if (len > sizeof(out->comm) - 1)
		len = sizeof(out->comm) - 1;
	memcpy(out->comm, s, len);
	out->comm[len] = '\0';
}

/* stat: "TID (COMM) S ..."; COMM may hold ')' itself, so the last ')' ends it. */
static int comm_from_stat(const char *buf, struct procsched_thread *out)
{
	const char *open = strchr(buf, '('), *close = strrchr(buf, ')');

	if (!open || !close || close < open)
		return -EINVAL;
	set_comm(out, open + 1, (size_t)(close - open - 1));
	return 0;
}

int procsched__parse_stat_state(const char *text, struct procsched_thread *out)
{
	const char *close = strrchr(text, ')');

	if (!close || close[1] != ' ' || !close[2] || close[2] == ' ')
		return -EINVAL;
	out->exited = close[2] == 'Z' || close[2] == 'X';
	return 0;
}

static int read_comm(const char *root, pid_t pid, pid_t tid, struct procsched_thread *out,
		     char *buf, size_t size)
{
	int n;

	n = classify_missing(root, pid, tid, read_task_file(root, pid, tid, "comm", buf, size));
	if (n >= 0) {
		if (n && buf[n - 1] == '\n')
			n--;
		set_comm(out, buf, (size_t)n);
		return 0;
	}
	if (n != -ENOENT)
		return n;
	n = classify_missing(root, pid, tid, read_task_file(root, pid, tid, "stat", buf, size));
	if (n >= 0)
		return comm_from_stat(buf, out);
	return n == -ENOENT ? 0 : n;
}

static int read_thread(const char *root, pid_t pid, pid_t tid, struct procsched_thread *out,
		       char *buf, size_t size)
{
	int err;

	memset(out, 0, sizeof(*out));
	out->tid = (uint64_t)tid;
	err = read_comm(root, pid, tid, out, buf, size);
	if (err)
		goto fail;

	err = classify_missing(root, pid, tid, read_task_file(root, pid, tid, "sched", buf, size));
	if (err >= 0)
		err = procsched__parse_sched(buf, out);
	if (err && err != -ENOENT)
		goto fail;

	err = classify_missing(root, pid, tid,
			       read_task_file(root, pid, tid, "schedstat", buf, size));
	if (err >= 0)
		err = procsched__parse_schedstat(buf, out);
	if (err && err != -ENOENT)
		goto fail;

	/*
	 * A run's command is a zombie at the window's end until the loader
	 * reaps it: exited, as BPF's exit record says (exit_notify() set
	 * exit_state before its last switch).
	 */
	err = classify_missing(root, pid, tid, read_task_file(root, pid, tid, "stat", buf, size));
	if (err >= 0)
		err = procsched__parse_stat_state(buf, out);
	if (err && err != -ENOENT)
		goto fail;
	return 0;

fail:
	memset(out, 0, sizeof(*out));
	return err;
}

int procsched__read_thread(const char *root, pid_t pid, pid_t tid, struct procsched_thread *out)
{
	char *buf;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (pid <= 0 || tid <= 0)
		return -ESRCH;
	buf = malloc(PROCSCHED_BUF_SIZE);
	if (!buf)
		return -ENOMEM;
	err = read_thread(root, pid, tid, out, buf, PROCSCHED_BUF_SIZE);
	free(buf);
	return err;
}

int procsched__read(const char *root, pid_t pid, size_t max_threads, struct procsched_snapshot *out)
{
	struct procsched_thread *threads = NULL;
	uint64_t dropped = 0, vanished = 0;
	size_t nr_tids = 0, i, stored = 0;
	pid_t *tids = NULL;
	char *buf = NULL;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!max_threads)
		return -EINVAL;
	if (pid <= 0)
		return -ESRCH;
	err = fsutil__list_tids(root, pid, &tids, &nr_tids);
	if (err)
		return err;
	if (!nr_tids) {
		err = -ESRCH;
		goto out;
	}
	buf = malloc(PROCSCHED_BUF_SIZE);
	threads = calloc(nr_tids < max_threads ? nr_tids : max_threads, sizeof(*threads));
	if (!buf || !threads) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nr_tids; i++) {
		if (stored == max_threads) {
			dropped = nr_tids - i;
			break;
		}
		err = read_thread(root, pid, tids[i], &threads[stored], buf, PROCSCHED_BUF_SIZE);
		if (err == -ESRCH) {
			vanished++;
			err = 0;
			continue;
		}
		if (err)
			goto out;
		stored++;
	}
	/* Every listed thread gone: the process exited. */
	if (!stored) {
		err = -ESRCH;
		goto out;
	}
	out->threads = threads;
	out->nr_threads = stored;
	out->dropped_threads = dropped;
	out->vanished_threads = vanished;
	threads = NULL;
out:
	free(threads);
	free(buf);
	free(tids);
	return err;
}

void procsched__free(struct procsched_snapshot *s)
{
	if (!s)
		return;
	free(s->threads);
	memset(s, 0, sizeof(*s));
}

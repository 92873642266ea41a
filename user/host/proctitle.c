// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fsutil.h"
#include "host/proctitle.h"

/* include/linux/sched.h: the task is a kernel thread. */
#define PF_KTHREAD 0x00200000u

size_t proctitle__parse(const char *raw, size_t len, bool more, char *out, size_t size,
			bool *truncated)
{
	size_t n = len, i, keep = size ? size - 1 : 0;

	*truncated = false;
	if (!size)
		return 0;
	/* Cut only when something other than NUL lies past the bound. */
	for (i = keep; i < len && !*truncated; i++)
		*truncated = raw[i] != '\0';
	*truncated = *truncated || (more && len >= keep);
	if (!*truncated) {
		while (n && raw[n - 1] == '\0')
			n--;
		/* Only NULs lie past the bound. */
		if (n > keep)
			n = keep;
	} else {
		n = keep;
	}
	for (i = 0; i < n; i++)
		out[i] = raw[i] == '\0' || raw[i] == '\n' ? ' ' : raw[i];
	out[n] = '\0';
	return n;
}

/* stat's flags (its ninth field), after the last ')' that ends COMM. */
static bool is_kthread(const char *root, uint32_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long flags;
	int field;

	if (fsutil__path(path, sizeof(path), root, "/proc/%u/stat", pid) < 0 ||
	    fsutil__read_file("", path, buf, sizeof(buf)) <= 0)
		return false;
	p = strrchr(buf, ')');
	/* ") S ppid pgrp session tty_nr tpgid flags": the sixth field after the state. */
	for (field = 0; p && field < 7; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return false;
	errno = 0;
	flags = strtoul(p + 1, NULL, 10);
	return !errno && (flags & PF_KTHREAD);
}

int proctitle__read(const char *root, uint32_t pid, struct proctitle *t)
{
	char path[64], *raw, scratch[4096], *out;
	size_t len = 0, n;
	bool more = false;
	ssize_t r = 0;
	int fd, err;

	memset(t, 0, sizeof(*t));
	t->reason = EV_GAP_UNAVAILABLE;
	if (fsutil__path(path, sizeof(path), root, "/proc/%u/cmdline", pid) < 0)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		t->reason = fsutil__errno_gap(-errno);
		return 0;
	}
	raw = malloc(PROCTITLE_MAX);
	out = malloc(PROCTITLE_MAX + 1);
	if (!raw || !out) {
		free(raw);
		free(out);
		close(fd);
		return -ENOMEM;
	}
	while (len < PROCTITLE_MAX) {
		r = read(fd, raw + len, PROCTITLE_MAX - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	/*
	 * Past the bound: only whether anything but NUL follows (an argument
	 * area can be megabytes; a rewritten title is a page at most).
	 */
	while (r > 0 && len == PROCTITLE_MAX && !more) {
		r = read(fd, scratch, sizeof(scratch));
		if (r < 0 && errno == EINTR) {
			r = 1;
			continue;
		}
		for (n = 0; r > 0 && n < (size_t)r && !more; n++)
			more = scratch[n] != '\0';
	}
	err = r < 0 ? -errno : 0;
	close(fd);
	if (err) {
		/* ESRCH: it was reaped while read. */
		t->reason = fsutil__errno_gap(err);
		free(raw);
		free(out);
		return 0;
	}
	n = proctitle__parse(raw, len, more, out, PROCTITLE_MAX + 1, &t->truncated);
	free(raw);
	if (!n) {
		/* A kernel thread has no user memory; a zombie has let its go. */
		t->reason = is_kthread(root, pid) ? EV_GAP_UNSUPPORTED : EV_GAP_UNAVAILABLE;
		free(out);
		return 0;
	}
	t->text = realloc(out, n + 1) ?: out;
	t->recorded = true;
	return 0;
}

void proctitle__free(struct proctitle *t)
{
	free(t->text);
	memset(t, 0, sizeof(*t));
}

/* SPDX-License-Identifier: MIT */
/*
 * A process's title as ps(1) shows it: /proc/PID/cmdline, the arguments
 * the process was started with, or the text a server wrote over them
 * (PostgreSQL's set_ps_display(), setproctitle(3)). The kernel hands back
 * the argument area with its NUL separators, or, when the byte that ended
 * the last argument was overwritten, one string read from the start of it
 * (get_mm_cmdline() in fs/proc/base.c). Shown as procps shows it: trailing
 * NULs dropped, every other NUL and newline a space.
 */
#ifndef KHBPF_PROCTITLE_H
#define KHBPF_PROCTITLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/evidence.h"

/* Bytes of a title kept: the kernel's own bound on a rewritten one (a page). */
#define PROCTITLE_MAX 4096

struct proctitle {
	bool recorded;
	enum ev_gap reason; /* when !recorded */
	bool truncated; /* recorded, and cut to its first PROCTITLE_MAX bytes */
	char *text; /* malloc'd when recorded; never empty */
};

/*
 * The title of raw[0..len), the start of a cmdline file, into out (size
 * bytes): its first size - 1 bytes, NUL-terminated. more: bytes other than
 * NUL followed raw in the file (raw then holds at least size - 1 bytes).
 * *truncated is set when the title is longer than size - 1 bytes (then it
 * is cut there, nothing stripped); otherwise its trailing NULs are dropped.
 * Returns the title's length: 0 for a file that is empty or only NULs (and
 * when size is 0, nothing is written).
 */
size_t proctitle__parse(const char *raw, size_t len, bool more, char *out, size_t size,
			bool *truncated);

/*
 * Reads root/proc/PID/cmdline (to its end, keeping PROCTITLE_MAX bytes)
 * into *t: recorded, or a gap. An empty file is a kernel thread's
 * (PF_KTHREAD in its stat: "unsupported", it has no command line) or a
 * zombie's ("unavailable"); a process gone is "unavailable"; EACCES/EPERM
 * (/proc mounted with hidepid) "permission-denied". Returns 0 or -ENOMEM.
 */
int proctitle__read(const char *root, uint32_t pid, struct proctitle *t);

void proctitle__free(struct proctitle *t);

#endif /* KHBPF_PROCTITLE_H */

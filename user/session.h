/* SPDX-License-Identifier: MIT */
/*
 * One collection session for `attach` and `run`: set up the target and the
 * collector, wait for the end of the window (duration, signal, or target
 * exit), and assemble the evidence document. session.c runs attach and
 * run, session_collect.c the collector, session_serve.c serve's windows;
 * runner.c holds run's command and docbuild.c makes the document.
 */
#ifndef KHBPF_SESSION_H
#define KHBPF_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "document.h"
#include "sched_collector.h"
#include "spanfind.h"

struct session;
struct json_object;

struct session_opts {
	size_t sz;
	enum target_mode mode; /* TARGET_MODE_ATTACH or TARGET_MODE_RUN */
	pid_t pid; /* attach: the target */
	char *const *argv; /* run: the command */
	uint64_t duration_ns; /* 0: until the target exits or a signal */
	uint64_t interval_ns; /* frequency sampling period; 0 → 1 s */
	bool as_root; /* run: do not drop to SUDO_UID */
	bool no_bpf; /* use the /proc fallback even when BPF works */
	uint32_t max_exited; /* exited-thread records kept in the kernel; 0 → default */
	uint32_t max_threads; /* threads listed in the document; 0 → default */
	const char *root; /* procfs/sysfs root; NULL → "/" */
	FILE *log; /* progress lines (stderr); NULL → quiet */
	const struct span_request *span_reqs; /* --span */
	size_t nr_span_reqs;
	bool no_annotations; /* ignore KHBPF_SPAN notes */
	uint64_t max_spans; /* span records kept; 0 → default */
	uint32_t span_buffer; /* the span ring buffer's bytes (--span-buffer); 0 → default */
	enum sched_counters span_counters; /* per-span counter readings */
	bool bpf_stats; /* BPF run-time stats (system-wide) for the window */
	bool blocked; /* --blocked: blocked time by cause */
	bool wakers; /* --wakers: and who woke each thread */
	enum sched_span_links span_links; /* --span-links */
	/*
	 * The target set. attach: the processes (pids; pid is the first),
	 * with children their descendants; or the cgroup v2 subtrees
	 * (cgroup_paths, resolved here; serve passes cgroup_ids and levels
	 * itself). run: CMD and every process it starts, unless no_children.
	 * serve: the processes (none: every task), or the cgroup filters.
	 */
	const pid_t *pids;
	size_t nr_pids;
	bool children;
	bool no_children;
	const char *const *cgroup_paths;
	size_t nr_cgroup_paths;
	uint32_t max_processes; /* processes in the set over the window; 0 → default */
	/* The generic sched_switch program even where the set's can be used (a test aid). */
	bool generic_switch;
	const uint64_t *cgroup_ids;
	const uint32_t *cgroup_levels;
	size_t nr_cgroups;
	uint32_t group_by; /* KHBPF_GROUP_* */
	uint32_t max_groups;
};

#define SESSION_DEFAULT_MAX_THREADS 65536

/*
 * Runs the whole session. On success *out holds the result (also when the
 * window ended by signal). Errors are -errno with a one-line message
 * already in `errbuf`. In run mode, a command that cannot be executed is
 * -ENOEXEC with errbuf naming it, and session__exit_code() gives 126/127.
 */
int session__run(struct session **out, const struct session_opts *opts, char *errbuf,
		 size_t errlen);
struct json_object *session__document(const struct session *s);
/*
 * run: when the window ended before the command did (duration, or a second
 * signal), wait for it after the document is out. No-op otherwise.
 */
int session__finish(struct session *s);
/* run: the command's exit status (128+signal when killed); attach: 0. */
int session__exit_code(const struct session *s);
void session__destroy(struct session *s);

/* Formats the one-line error into buf and returns err: `return session__errf(...)`. */
int session__errf(char *buf, size_t len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * After the collector is attached (session__run does it itself; serve once
 * its socket listens): drop every capability the mode no longer needs, from
 * the effective, permitted, ambient and bounding sets, and set
 * no_new_privs. Kept: CAP_KILL in run when CMD runs as the invoking user
 * (signals are passed to it); nothing otherwise. Under sudo the file-system
 * ids become SUDO_UID/SUDO_GID (with that user's groups), so output files
 * are created as that user (privs__writer_begin assumes the same ids for a
 * check before it). Must run while single-threaded. 0 or -errno with
 * errbuf set.
 */
int session__drop_privileges(struct session *s, char *errbuf, size_t errlen);

/*
 * serve: a session with no end. Its windows end when session__serve_rotate
 * is called, which returns that window's document as one line of text
 * (caller frees; ends in a newline) and its summary tree without the
 * per-thread and per-span arrays, which are written straight into the text
 * (caller puts it), and starts the next window at the same instant.
 * SIGINT/SIGTERM/SIGHUP are blocked and readable from session__signal_fd.
 */
int session__serve_open(struct session **out, const struct session_opts *opts, char *errbuf,
			size_t errlen);
int session__serve_rotate(struct session *s, struct json_object **doc, char **text, size_t *len);
struct sched_collector *session__collector(const struct session *s);
int session__signal_fd(const struct session *s);

#endif /* KHBPF_SESSION_H */

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

#include "session/session_opts.h"

struct session;
struct json_object;

#define SESSION_DEFAULT_MAX_THREADS 65536

/*
 * Runs the whole session. On success *out holds the result (also when the
 * window ended by signal). Errors are -errno with a one-line message
 * already in `errbuf`. In run mode, a command that cannot be executed is
 * -ENOEXEC with errbuf naming it, and session__exit_code() gives 126/127;
 * a mistake in a request is SESSION_ERR_USAGE, with nothing run.
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
/*
 * Holds SIGINT, SIGTERM and SIGHUP from now on, the first thing run, attach
 * and serve do: one that comes at any moment of the setup after this is
 * read by the window (session__setup_signals' signalfd) and ends it, never
 * killing khbpf half way through loading or attaching. 0 or -errno.
 */
int session__hold_signals(void);

/* For session_serve.c: the steps session__run takes, and serve's windows too. */
/* A zeroed session with opts copied and defaults set; NULL when out of memory. */
struct session *session__alloc(const struct session_opts *opts);
int session__setup_signals(struct session *s, char *errbuf, size_t errlen);
/* The document of the window just computed (s->win), from what s collected. */
int session__build_document(struct session *s);

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
/* serve: the span sites and names (--span, --usdt-span, --usdt), or NULL without any. */
struct span_run *session__spans(struct session *s);
int session__signal_fd(const struct session *s);

#endif /* KHBPF_SESSION_H */

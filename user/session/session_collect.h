/* SPDX-License-Identifier: MIT */
/*
 * A session's collection steps, in the order a window takes them: the
 * collector set up, the baseline and attach, the set's walk, the samples,
 * and the window's end (session_collect.c; session.c and session_serve.c
 * call them).
 */
#ifndef KHBPF_SESSION_COLLECT_H
#define KHBPF_SESSION_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session/session_state.h"

/*
 * Span sites, before anything is loaded: the notes of every object the
 * set's processes map (attach), of the command (run) or of the named files
 * (serve), and the --span, --usdt-span and --usdt requests. A request
 * naming what is not there, or a --key or --span-cause naming no metric
 * (span_run__check), is SESSION_ERR_USAGE with errbuf saying which; with
 * --no-bpf the requests are checked so and nothing is kept. Other
 * failures are logged: the sites say why. 0 or SESSION_ERR_USAGE.
 */
int session__discover_spans(struct session *s, char *errbuf, size_t errlen);
/*
 * Load the collector and mark the target, with the sites
 * session__discover_spans found; attach comes after the baseline.
 */
void session__setup_collector(struct session *s);
/* The window's start: baseline (attach mode), then the tracepoints. */
int session__start_collecting(struct session *s);
/*
 * The set's walk (sched_collector__join): threads that join are stamped as
 * `how` says, their records added to the baseline (attach; not run's), the
 * executables of their processes read; *joined counts them.
 */
int session__join(struct session *s, uint32_t how, size_t *joined);
void session__sample_frequency(struct session *s);
/*
 * Pressure and thermal readings at the window's start (the target's cgroup
 * is found then, and kept for the window) or end.
 */
void session__sample_pressure(struct session *s, bool at_end);
/* serve: the next window starts from this one's end readings. */
void session__pressure_advance(struct session *s);
/*
 * Hardware counters for the target's threads, inherited by threads created
 * later. run: opened on the held child, enabled at its exec.
 */
void session__open_counters(struct session *s, const struct thread_table *threads);
/* The window's end: the end readings, the exit records, and the window computed. */
int session__finish_window(struct session *s);
/* A census of live threads' absolute on-CPU ns, bounded like the seed's. */
int session__census(struct thread_census *c, const struct thread_table *t,
		    const struct thread_table *exited, uint64_t elapsed_ns);
#endif /* KHBPF_SESSION_COLLECT_H */

/* SPDX-License-Identifier: MIT */
/*
 * The session object, shared by session.c (attach and run: collection and
 * the wait loop) and session_serve.c (serve's windows). Not for callers:
 * they have session.h.
 */
#ifndef KHBPF_SESSION_INT_H
#define KHBPF_SESSION_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "cpufreq.h"
#include "docbuild.h"
#include "perfcount.h"
#include "pressure.h"
#include "runner.h"
#include "sched_collector.h"
#include "sched_window.h"
#include "proc_window.h"
#include "session.h"
#include "spanrun.h"
#include "thermal.h"
#include "topology.h"

#define NS_PER_SEC UINT64_C(1000000000)

struct session {
	struct session_opts opts;
	const char *root;
	pid_t pid;
	int pidfd;
	int sigfd;
	int timerfd;
	struct runner *runner; /* run: the command */
	bool child_reaped;
	int wait_status;

	struct host_topology topo;
	struct sched_collector *coll;
	enum collector_availability bpf_avail;
	char bpf_detail[256];
	bool use_bpf;
	bool have_btf;

	uint64_t start_mono, start_real, start_boot, end_mono;
	enum end_reason end_reason;
	int signal_seen;

	struct thread_table base, end, exited;
	/*
	 * The target set (KHBPF_SET_*): its processes as the kernel kept them,
	 * the executables read while they lived, the roots' pidfds (attach:
	 * the window ends when every root has exited), threads that joined
	 * after the start (cgroup moves), and attach --cgroup's cgroups.
	 */
	uint32_t set_mode;
	struct proc_entry *procs;
	size_t nr_procs;
	struct proc_exe *exes;
	size_t nr_exes;
	int *root_fds; /* -1: no pidfd (polled) */
	bool *root_done;
	size_t nr_root_fds;
	uint64_t late_joins;
	uint64_t start_join_end; /* CLOCK_MONOTONIC when the start's walk was done */
	uint64_t end_snapshot_mono; /* ... and when the end's snapshot began */
	char cg_mount[PATH_MAX]; /* attach --cgroup: where cgroup v2 is mounted */
	uint64_t cg_ids[KHBPF_MAX_CGROUP_FILTERS];
	uint32_t cg_levels[KHBPF_MAX_CGROUP_FILTERS];
	struct proc_window pwin;
	struct waker_entry *wakers; /* who woke the threads (run, attach) */
	size_t nr_wakers;
	struct sched_window win;
	struct sched_collector_stats stats;
	uint64_t proc_read_errors;

	struct thread_census census[2];
	struct cpu_frequency_sample freq[EV_MAX_SAMPLES];
	size_t nr_freq;
	uint64_t freq_dropped;
	enum ev_gap freq_gap;
	bool freq_any;

	struct perfcount *perf;
	struct counter_set counters;
	enum collector_availability counters_avail;
	char counters_detail[256];

	struct docbuild *build;
	struct doc_target target; /* read while the target was alive */
	struct span_run spans;
	bool spans_discovered;
	struct fallback_witness fb;

	/* Pressure (host, the target's cgroup v2) and thermal state at the window's ends. */
	struct pressure_window psi_host, psi_cgroup;
	struct thermal_window thermal;
};

static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

void session__logf(const struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A zeroed session with opts copied and defaults set; NULL when out of memory. */
struct session *session__alloc(const struct session_opts *opts);
int session__setup_signals(struct session *s, char *errbuf, size_t errlen);
/* Load the collector and mark the target; attach comes after the baseline. */
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
/* The document of the window just computed (s->win), from what s collected. */
int session__build_document(struct session *s);

#endif /* KHBPF_SESSION_INT_H */

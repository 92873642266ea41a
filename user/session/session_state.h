/* SPDX-License-Identifier: MIT */
/*
 * The session object, shared by session.c (attach and run: the wait loop
 * and the document), session_collect.c (the collection steps) and
 * session_serve.c (serve's windows). Not for callers: they have session.h.
 */
#ifndef KHBPF_SESSION_STATE_H
#define KHBPF_SESSION_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "host/cpufreq.h"
#include "session/docbuild.h"
#include "host/perfcount.h"
#include "host/pressure.h"
#include "collect/runner.h"
#include "collect/sched_collector.h"
#include "collect/sched_window.h"
#include "collect/proc_window.h"
#include "session/session_opts.h"
#include "spans/spanrun.h"
#include "host/thermal.h"
#include "host/topology.h"

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
	/* Titles read as processes joined and at the end; procs_joined when last looked. */
	struct proc_title *titles;
	size_t nr_titles;
	uint64_t titles_procs_seen;
	size_t titles_again; /* titles to read again at the next tick (proc_title.join_again) */
	bool titles_now; /* the start's titles are read: a later walk reads its own */
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
	char span_reason[512]; /* serve: why discovery failed (an OBJ not found) */
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

/*
 * After the start's walk: every --pid joined the set (else -ESRCH, gone
 * by then, or -ENOENT, alive but hidden from BPF, with one line in
 * errbuf); a cgroup set that joined no one is said so on the log.
 */
int session__check_roots(struct session *s, char *errbuf, size_t errlen);

#endif /* KHBPF_SESSION_STATE_H */

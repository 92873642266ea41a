/* SPDX-License-Identifier: MIT */
/*
 * The evidence document of one window, assembled from what was collected:
 * the window's thread deltas, the collector's statistics, the /proc
 * fallback's witnesses, counters, frequency samples and span records. What
 * cannot be known becomes a gap with its reason, and every loss counter is
 * listed, zero or not.
 */
#ifndef KHBPF_DOCBUILD_H
#define KHBPF_DOCBUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "document/document.h"
#include "lib/evidence.h"
#include "host/pressure.h"
#include "collect/proc_window.h"
#include "collect/sched_collector.h"
#include "collect/sched_window.h"
#include "spans/spanrun.h"
#include "host/thermal.h"
#include "host/topology.h"

struct docbuild;

/*
 * Without BPF, /proc shows only the threads alive when it is read. The
 * process's CPU clock (all its threads, dead ones included; not its
 * children) says whether any ran unseen: at a moment when it does not
 * move while the threads are read, it equals their sum exactly. In run,
 * wait4's rusage gives the switches of every thread that ever ran.
 */
struct fallback_witness {
	bool clock_ok; /* both ends read with the clock still */
	uint64_t cpu_start, cpu_end;
	bool have_rusage;
	struct rusage ru;
	bool child_faults_known;
	uint64_t child_faults; /* cminflt + cmajflt: children CMD waited for */
};

/*
 * The collected state of one window. Structures are copied shallowly:
 * what they point to (the window's threads, the frequency samples, the
 * span run) must outlive the document.
 */
struct docbuild_opts {
	size_t sz;
	enum target_mode mode;
	pid_t pid; /* affinity and CPU quota are read for it */
	const char *root; /* procfs/sysfs root; NULL → "/" */
	bool no_bpf; /* --no-bpf was given */
	bool bpf_stats; /* --bpf-stats was given */
	enum sched_counters span_counters; /* requested per-span counters */
	struct doc_target target;
	bool child_reaped; /* run: wait_status is the command's */
	int wait_status;
	uint64_t start_mono, start_real, end_mono;
	enum end_reason end_reason;
	bool use_bpf; /* the window was collected by BPF, else from /proc */
	enum collector_availability bpf_avail;
	const char *bpf_detail;
	struct sched_window win;
	/*
	 * The target set: its kind (KHBPF_SET_*), roots and cgroups as given,
	 * its processes over the window, and threads that joined after the
	 * start (found by a later walk).
	 */
	uint32_t set_mode;
	const pid_t *set_pids;
	size_t nr_set_pids;
	const char *const *set_cgroups;
	size_t nr_set_cgroups;
	const struct proc_window *pwin; /* NULL: no processes listed */
	uint64_t late_joins;
	uint64_t start_join_end; /* CLOCK_MONOTONIC when the start's walk was done */
	struct sched_collector_stats stats;
	/* Who woke the threads, sorted by (tid, start_time) (sched_collector__wakers). */
	const struct waker_entry *wakers;
	size_t nr_wakers;
	uint64_t proc_read_errors;
	struct fallback_witness fb;
	struct thread_census census[2]; /* the window's first and last */
	const struct cpu_frequency_sample *freq;
	size_t nr_freq;
	uint64_t freq_dropped;
	enum ev_gap freq_gap; /* why there is no sample, when freq_any is false */
	bool freq_any;
	struct counter_set counters;
	enum collector_availability counters_avail;
	const char *counters_detail;
	struct host_topology topo;
	struct span_run *spans; /* its document parts are made here; NULL: no spans */
	/* Read at the window's two ends; NULL: the collector says they were not. */
	const struct pressure_window *pressure_host;
	const struct pressure_window *pressure_cgroup;
	const struct thermal_window *thermal;
};

int docbuild__new(struct docbuild **out);
/*
 * Builds the document from opts, replacing the one built before. 0 or
 * -errno (-ENOMEM). The document refers to b and to what opts points to.
 */
int docbuild__build(struct docbuild *b, const struct docbuild_opts *opts);
const struct evidence_doc *docbuild__doc(const struct docbuild *b);
/* Frees what the last document owns (serve, once it is written). */
void docbuild__reset(struct docbuild *b);
void docbuild__destroy(struct docbuild *b);

#endif /* KHBPF_DOCBUILD_H */

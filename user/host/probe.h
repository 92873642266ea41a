/* SPDX-License-Identifier: MIT */
/*
 * `khbpf probe`: what each collector can do on this host for this user, and
 * why not. Every answer comes from trying the real thing (loading and
 * attaching BPF, opening perf events, reading sysfs), not from guessing by
 * kernel version.
 */
#ifndef KHBPF_PROBE_USER_H
#define KHBPF_PROBE_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/evidence.h"
#include "host/kfeatures.h"

enum probe_check_id {
	PROBE_CHECK_KERNEL_BTF = 0,
	PROBE_CHECK_CAPABILITIES,
	PROBE_CHECK_BPF_LOAD,
	PROBE_CHECK_TP_SCHED_SWITCH,
	PROBE_CHECK_TP_SCHED_WAKEUP,
	PROBE_CHECK_TP_SCHED_WAKEUP_NEW,
	PROBE_CHECK_TP_SCHED_MIGRATE_TASK,
	PROBE_CHECK_TP_SCHED_PROCESS_EXIT,
	PROBE_CHECK_UPROBE,
	PROBE_CHECK_RINGBUF,
	PROBE_CHECK_TASK_STORAGE,
	PROBE_CHECK_PERF_HARDWARE,
	PROBE_CHECK_PERF_SOFTWARE,
	PROBE_CHECK_TRACEFS,
	PROBE_CHECK_PROC_TASKS,
	PROBE_CHECK_TOPOLOGY,
	PROBE_CHECK_CPUFREQ,
	PROBE_CHECK_CGROUP,
	PROBE_CHECK__COUNT,
};

enum probe_result { PROBE_RESULT_OK = 0, PROBE_RESULT_FAILED, PROBE_RESULT_SKIPPED };

struct probe_check {
	enum probe_result result;
	int err; /* -errno of the failing step, 0 when ok */
	uint64_t observed; /* events seen (tracepoints, uprobe), when meaningful */
	char detail[256];
};

#define PROBE_NR_COLLECTORS 5

struct probe_report {
	struct probe_check checks[PROBE_CHECK__COUNT];
	struct collector_capability collectors[PROBE_NR_COLLECTORS];
	char kernel_release[65];
	uint32_t logical_cpus;
	struct sev_u32 physical_cores;
	struct sev_u32 packages;
	struct sev_u32 numa_nodes;
	uint32_t llc_groups;
	const char *cgroup_mode;
	int perf_event_paranoid; /* INT32_MIN when unreadable */
	struct kfeatures features; /* kernel features and how khbpf uses each */
};

struct probe_opts {
	size_t sz;
	const char *root; /* sysfs/procfs root for host readers; NULL → "/" */
	bool verbose; /* keep libbpf's log of failing probes on stderr */
};

const char *probe_check__name(enum probe_check_id id);
const char *probe_result__name(enum probe_result r);

/* Run every check; always fills the whole report. Returns 0 or -ENOMEM. */
int probe__run(struct probe_report *report, const struct probe_opts *opts);

/*
 * perf_event_open errno → availability and a detail saying what to do:
 * ENOENT/EOPNOTSUPP/ENODEV → unsupported; EACCES/EPERM → permission-denied
 * naming perf_event_paranoid (pass INT32_MIN when unknown); else unavailable.
 */
enum collector_availability probe__perf_availability(int err, int paranoid, char *detail,
						     size_t size);
/* BPF load/attach errno → availability, same contract. */
enum collector_availability probe__bpf_availability(int err, bool have_btf, char *detail,
						    size_t size);

/* perf_event_open of cycles and instructions for pid (0 = self): 0 or -errno. */
int probe__perf_hw_open(pid_t pid);
/* kernel.perf_event_paranoid, or INT32_MIN when unreadable. */
int probe__perf_paranoid(const char *root);

/* Callable target of the uprobe self-test; kept out of line and not merged. */
void khbpf_probe_uprobe_target(int arg);

#endif /* KHBPF_PROBE_USER_H */

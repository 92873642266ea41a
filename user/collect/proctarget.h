/* SPDX-License-Identifier: MIT */
/*
 * The target process as /proc shows it: whether it can be watched, its
 * state, name and executable, its CPU clock, and its threads' kernel
 * counters as a thread table (the fallback when BPF is unavailable).
 */
#ifndef KHBPF_PROCTARGET_H
#define KHBPF_PROCTARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "document/document.h"
#include "collect/sched_collector.h"

/* State letter and flags of /proc/PID/stat; -ESRCH when there is no such process. */
int proctarget__state(const char *root, pid_t pid, char *state, unsigned long *flags);
/*
 * pid's start time (/proc/PID/stat's starttime, clock ticks after boot)
 * and whether it is alive (not a zombie): a process told apart from a
 * later one given the same pid. -ESRCH when there is no such process.
 */
int proctarget__start_ticks(const char *root, pid_t pid, uint64_t *ticks, bool *alive);
/* cminflt + cmajflt of /proc/PID/stat: page faults of the children pid waited for. */
int proctarget__child_faults(const char *root, pid_t pid, uint64_t *faults);
/* The process CPU clock of pid (clock_getcpuclockid(3)): every thread, dead ones too. */
int proctarget__cpu_ns(pid_t pid, uint64_t *ns);
/*
 * Whether attach can watch pid: a user process, not a kernel thread, not a
 * zombie with nothing left running. 0, or -errno with errbuf naming why.
 */
int proctarget__check_attach(const char *root, pid_t pid, char *errbuf, size_t errlen);
/*
 * pid, mode, comm and exe into t, read while the target lives; a field
 * that cannot be read keeps what an earlier call found.
 */
void proctarget__fill(const char *root, pid_t pid, enum target_mode mode, struct doc_target *t);
/*
 * The kernel's counters of pid's threads (at most max_threads) as a sorted
 * thread table; threads that could not be read, and those past
 * max_threads, are added to *read_errors. 0 or -errno (-ESRCH: gone).
 */
int proctarget__snapshot(const char *root, pid_t pid, size_t max_threads, struct thread_table *out,
			 uint64_t *read_errors);

/*
 * The processes pids and every descendant of them now (/proc/PID/task/TID/
 * children), at most max, into *out (malloc'd): where a set's spans are
 * looked for. Descendants forked meanwhile may be missed; they share their
 * parent's mappings anyway.
 */
int proctarget__descendants(const char *root, const pid_t *pids, size_t n, size_t max, pid_t **out,
			    size_t *nr);
/* The processes of the cgroup directory dir and those below it (depth 0 at the top). */
int proctarget__cgroup_pids(const char *dir, size_t max, pid_t **out, size_t *nr, int depth);

#endif /* KHBPF_PROCTARGET_H */

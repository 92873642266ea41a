/* SPDX-License-Identifier: MIT */
/* Per-thread CPU time census of a target process from /proc/PID/task. */
#ifndef KHBPF_CENSUS_H
#define KHBPF_CENSUS_H

#include <stdint.h>
#include <sys/types.h>

#include "lib/evidence.h"

/*
 * Reads every thread of pid below root/proc/PID/task: schedstat's
 * sum_exec_runtime (source proc-pid-schedstat), or, on kernels without
 * schedstat, utime + stime of task/TID/stat (source proc-pid-task-stat).
 * Threads that exit during the census are skipped. At most
 * EV_MAX_SAMPLE_THREADS threads, the lowest tids, are stored sorted by
 * thread_id; the rest are counted in dropped_threads. source may be NULL.
 * Returns 0; -ESRCH when the process does not exist; -EACCES/-EPERM;
 * -EINVAL for malformed files; -ENOMEM. On error *out is empty.
 */
int census__read(const char *root, pid_t pid, uint64_t elapsed_ns, struct thread_census *out,
		 enum ev_source *source);
void census__free(struct thread_census *c);

#endif /* KHBPF_CENSUS_H */

/* SPDX-License-Identifier: MIT */
/*
 * The kernel's own per-thread scheduler counters from procfs
 * (/proc/PID/task/TID/{sched,schedstat,comm}): khbpf's fallback collector
 * when BPF cannot be loaded, and the ground truth its tests compare against.
 */
#ifndef KHBPF_PROCSCHED_H
#define KHBPF_PROCSCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct procsched_thread {
	uint64_t tid;
	char comm[64]; /* from task/TID/comm (or stat), raw bytes, NUL-terminated */
	/* from task/TID/sched; has_sched false when the file is missing */
	bool has_sched;
	uint64_t nr_voluntary_switches, nr_involuntary_switches, nr_migrations;
	/* from task/TID/schedstat: "runtime_ns run_delay_ns pcount"; has_schedstat false if absent */
	bool has_schedstat;
	uint64_t sum_exec_runtime_ns, run_delay_ns, pcount;
	/*
	 * task/TID/stat's state is Z or X: the thread has exited and waits to
	 * be reaped (its counters are final). false when stat is absent.
	 */
	bool exited;
};

struct procsched_snapshot {
	struct procsched_thread *threads; /* owned; sorted by tid */
	size_t nr_threads;
	uint64_t dropped_threads; /* beyond max_threads, counted */
	uint64_t vanished_threads; /* listed in task/ but gone before read */
};

/*
 * Reads one thread below root ("/", "" or NULL is the live host). A sched or
 * schedstat file that does not exist while the thread does (a kernel built
 * without it) leaves has_sched/has_schedstat false; comm falls back to the
 * name in task/TID/stat, and is "" when neither file exists; the state in
 * task/TID/stat sets exited. Returns 0;
 * -ESRCH when the process or thread does not exist (or exits meanwhile);
 * -EACCES/-EPERM; -EINVAL/-ERANGE for malformed files; another -errno when
 * a file cannot be read. *out is zeroed on error.
 */
int procsched__read_thread(const char *root, pid_t pid, pid_t tid, struct procsched_thread *out);

/*
 * Reads every thread listed in root/proc/PID/task. The max_threads lowest
 * tids are stored (max_threads must be > 0), the rest counted in
 * dropped_threads unread; threads that exit between the listing and their
 * read are counted in vanished_threads. Returns 0; -ESRCH when the process
 * does not exist or every listed thread vanished; -EINVAL; -ENOMEM; or the
 * first other error of procsched__read_thread. *out is empty on error.
 */
int procsched__read(const char *root, pid_t pid, size_t max_threads,
		    struct procsched_snapshot *out);
void procsched__free(struct procsched_snapshot *s);

/*
 * Parse the text of a sched file / schedstat file (exposed for tests and
 * fuzzing). On success the parsed fields and has_sched/has_schedstat are
 * set and nothing else is touched; on error *out is unchanged.
 *
 * sched: the lines "nr_voluntary_switches : N", "nr_involuntary_switches : N"
 * and "se.nr_migrations : N" (blanks around ':' and after N are free, the key
 * must match exactly); other lines are ignored. -EINVAL when a key is
 * missing or repeated or its value is not a plain decimal, -ERANGE when it
 * does not fit 64 bits.
 *
 * schedstat: exactly "N N N" with one optional trailing '\n'.
 */
int procsched__parse_sched(const char *text, struct procsched_thread *out);
int procsched__parse_schedstat(const char *text, struct procsched_thread *out);
/*
 * stat: "TID (COMM) S ...", COMM ending at the last ')': sets exited from
 * the state S (Z, zombie; X, dead). -EINVAL when there is no state.
 */
int procsched__parse_stat_state(const char *text, struct procsched_thread *out);

#endif /* KHBPF_PROCSCHED_H */

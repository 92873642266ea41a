/* SPDX-License-Identifier: MIT */
/*
 * The processes of a window: the set's process records (the kernel's) and
 * the window's threads grouped by their process, each process with its
 * threads' sums. Pure: tests feed it tables.
 */
#ifndef KHBPF_PROC_WINDOW_H
#define KHBPF_PROC_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/sched_collector.h"
#include "collect/sched_window.h"
#include "host/proctitle.h"

/* An executable read while its process lived (readlink of /proc/PID/exe). */
struct proc_exe {
	uint32_t pid;
	uint64_t start_time;
	char *path; /* malloc'd */
};

/*
 * A process's title (host/proctitle.h): read when the loader learned it had
 * joined, and at the window's end. A read not made (join_read, end_read
 * false) is the gap "unavailable".
 */
struct proc_title {
	uint32_t pid;
	uint64_t start_time;
	bool join_read, end_read;
	bool join_again; /* forked, and read with its parent's title: read at the next tick too */
	struct proctitle join, end;
};

struct window_process {
	uint32_t pid;
	uint64_t start_time; /* the leader's, monotonic ns (task->start_time) */
	bool have_rec; /* the kernel kept a record of it (else: known from its threads) */
	struct khbpf_proc_rec rec;
	/*
	 * What it ran: a path read from /proc while it lived (exe_read), or
	 * the path given to the exec it (or, forked without exec, the process
	 * it was forked from) last made; NULL when neither is known.
	 */
	const char *exe;
	bool exe_read;
	const struct proc_title *title; /* NULL: never read */
	char comm[16]; /* its leader's last, else the record's */
	size_t first_thread; /* its threads: indexes into thread_index[first..first+nr) */
	size_t nr_threads;
	uint64_t vanished_threads; /* threads of it gone without an exit record: sums unknown */
	bool born; /* started inside the window */
	bool exited; /* its last thread exited inside the window */
	bool left; /* a thread of it left the set's cgroups */
	bool all_bpf; /* every thread of it has BPF-timed fields */
	struct khbpf_task_counters total;
	struct khbpf_task_bpf total_bpf;
};

struct proc_window_opts {
	const struct sched_window *win;
	const struct proc_entry *procs; /* sorted by (pid, start_time) */
	size_t nr_procs;
	const struct proc_exe *exes; /* sorted by (pid, start_time) */
	size_t nr_exes;
	const struct proc_title *titles; /* sorted by (pid, start_time) */
	size_t nr_titles;
	uint64_t start_boot_ns; /* processes started at or after it were born in the window */
	/* Records of processes that joined after this (the end's snapshot): not in the window. */
	uint64_t end_mono_ns;
};

struct proc_window {
	struct window_process *procs; /* sorted by (pid, start_time) */
	size_t nr;
	/* The window's threads, grouped by process (each group in tid order). */
	size_t *thread_index;
	/* For each of the window's threads, its process's index in procs. */
	size_t *proc_of_thread;
};

int proc_window__compute(struct proc_window *pw, const struct proc_window_opts *o);
void proc_window__free(struct proc_window *pw);

/* Executables: sorted, found, freed. */
void proc_exes__sort(struct proc_exe *v, size_t nr);
const struct proc_exe *proc_exes__find(const struct proc_exe *v, size_t nr, uint32_t pid,
				       uint64_t start_time);
void proc_exes__free(struct proc_exe *v, size_t nr);

/* Titles: sorted, found, freed. */
void proc_titles__sort(struct proc_title *v, size_t nr);
const struct proc_title *proc_titles__find(const struct proc_title *v, size_t nr, uint32_t pid,
					   uint64_t start_time);
void proc_titles__free(struct proc_title *v, size_t nr);

#endif /* KHBPF_PROC_WINDOW_H */

/* SPDX-License-Identifier: MIT */
/*
 * serve's --pid and --cgroup filters, as the host has them. A filter that
 * matches no process would export no series at all, or series that stop
 * moving, and either reads as an idle workload: so each must match one
 * when serve starts (else an error), and at each window's end each one is
 * looked at again, exported as khbpf_filter_matches and logged when it
 * stops or starts matching.
 *
 *   --pid P        the process P (the one serve started with: its start
 *                  time, not a later process given the same pid) lives
 *   --children     any process of the kernel's set lives (the roots, their
 *                  descendants, and every process forked from the set)
 *   --cgroup PATH  a process is in that cgroup or one below it
 */
#ifndef KHBPF_SERVE_FILTERS_H
#define KHBPF_SERVE_FILTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct promtext;
struct sched_collector;
struct serve_filters;

struct serve_filters_opts {
	size_t sz;
	const char *root; /* procfs root; NULL → "/" */
	const char *cg_mount; /* the cgroup v2 mount (as seen under root), for cgroups */
	const pid_t *pids; /* --pid: checked live by the session before this */
	size_t nr_pids;
	bool children;
	struct sched_collector *coll; /* the set's processes, with --children */
	const char *const *cgroups; /* --cgroup paths, normalized */
	size_t nr_cgroups;
	FILE *log; /* a line when a filter stops or starts matching; NULL: none */
};

/*
 * The filters, each looked at now. -ENOENT, with one line in errbuf, when
 * a --cgroup holds no process (its service not started, or a typo of a
 * cgroup that exists); -ESRCH when a --pid is gone; -errno otherwise.
 */
int serve_filters__new(struct serve_filters **out, const struct serve_filters_opts *o, char *errbuf,
		       size_t errlen);
void serve_filters__free(struct serve_filters *f); /* NULL is fine */

/* At a window's end (the window's number, for the log): each filter looked at again. */
void serve_filters__update(struct serve_filters *f, uint64_t window);

/* khbpf_filter_matches{filter, value}: 1 or 0 for each filter. No filter: no family. */
int serve_filters__render(const struct serve_filters *f, struct promtext *p);

#endif /* KHBPF_SERVE_FILTERS_H */

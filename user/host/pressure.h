/* SPDX-License-Identifier: MIT */
/*
 * Pressure stall information (PSI) at a window's two ends: the host's
 * /proc/pressure/{cpu,memory,io} and one cgroup v2 directory's
 * {cpu,memory,io}.pressure. avg10 is kept in thousandths of a percent, read
 * from the kernel's decimal text without floating point; total= in
 * microseconds, so the stall over the window is an exact difference.
 */
#ifndef KHBPF_PRESSURE_H
#define KHBPF_PRESSURE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/evidence.h"

enum psi_resource { PSI_CPU = 0, PSI_MEMORY, PSI_IO, PSI__RESOURCES };
enum psi_kind { PSI_SOME = 0, PSI_FULL, PSI__KINDS };

/* "cpu", "memory", "io"; "some", "full". */
const char *psi_resource__name(enum psi_resource r);
const char *psi_kind__name(enum psi_kind k);

/* One line of a PSI file; averages in thousandths of a percent (12.34 → 12340). */
struct psi_line {
	bool present;
	uint64_t avg10_milli;
	uint64_t avg60_milli;
	uint64_t avg300_milli;
	uint64_t total_us;
};

/*
 * Parses a PSI file: a "some" line, then optionally a "full" line, each
 * exactly "KIND avg10=A avg60=B avg300=C total=T" and a newline, where the
 * averages are decimals with at most three digits after the point (the
 * kernel writes two) and T an unsigned integer. Anything else is refused,
 * never guessed at: -EINVAL with the first fault in errbuf (may be NULL),
 * and out as it was. Returns 0 with out[PSI_FULL].present telling whether
 * there was a full line.
 */
int psi__parse(const char *text, struct psi_line out[PSI__KINDS], char *errbuf, size_t errlen);

/* One reading of the three files; values the files did not give are gaps. */
struct pressure_sample {
	struct sev_u64 avg10_milli[PSI__RESOURCES][PSI__KINDS];
	struct sev_u64 total_us[PSI__RESOURCES][PSI__KINDS];
};

/*
 * One scope (the host, or a cgroup) over a window, set up by
 * pressure_window__host or __cgroup: until read, every value is the gap
 * "unavailable" (or the reason the scope could not be found).
 */
struct pressure_window {
	bool cgroup; /* files NAME.pressure of a cgroup, else the host's /proc/pressure/NAME */
	bool usable; /* dir is set; otherwise every value is the gap `gap` */
	enum ev_gap gap;
	char path[PATH_MAX]; /* for the document: "/proc/pressure", or the cgroup v2 path */
	char dir[PATH_MAX]; /* where the files are, root included */
	uint64_t dir_ino; /* the cgroup directory at the start: a new one of that name is not it */
	struct pressure_sample start, end;
	char detail[256]; /* the first unexpected gap's cause, "" when none */
};

/* w for the host: root/proc/pressure (root NULL, "" or "/": the live host). */
void pressure_window__host(struct pressure_window *w, const char *root);

/*
 * w for pid's cgroup v2: the "0::" line of root/proc/PID/cgroup, under the
 * cgroup2 mount of root/proc/self/mountinfo. When it cannot be found, w is
 * not usable: "unsupported" without cgroup v2, else the error's gap, with a
 * detail. Returns 0 or the -errno.
 */
int pressure_window__cgroup(struct pressure_window *w, const char *root, pid_t pid);

/* Reads the start (at_end false) or end of the window into w. */
void pressure_window__read(struct pressure_window *w, bool at_end);

/* The stall over the window: end total - start total (ev_u64__delta rules). */
struct sev_u64 pressure_window__stall(const struct pressure_window *w, enum psi_resource r,
				      enum psi_kind k);

/*
 * One reading of dir now: files cpu, memory, io (source proc-pressure) or,
 * for a cgroup, cpu.pressure... (sysfs-cgroup). system: the system-wide
 * group (the host, or the root cgroup), whose cpu full is the gap
 * "unsupported". detail (may be NULL) receives the first cause of a gap.
 */
void pressure__sample(const char *dir, bool cgroup, bool system, struct pressure_sample *out,
		      char *detail, size_t detail_len);

#endif /* KHBPF_PRESSURE_H */

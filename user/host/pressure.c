// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host/cgroup.h"
#include "lib/fsutil.h"
#include "host/pressure.h"

/* A PSI file is two lines of about 70 bytes. */
#define PSI_FILE_MAX 512
#define PSI_FIELDS 5

static const char *const resource_names[PSI__RESOURCES] = { "cpu", "memory", "io" };
static const char *const kind_names[PSI__KINDS] = { "some", "full" };
static const char *const field_names[PSI_FIELDS - 1] = { "avg10=", "avg60=", "avg300=", "total=" };

const char *psi_resource__name(enum psi_resource r)
{
	return r < PSI__RESOURCES ? resource_names[r] : "unknown";
}

const char *psi_kind__name(enum psi_kind k)
{
	return k < PSI__KINDS ? kind_names[k] : "unknown";
}

static int fault(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fault(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Decimal text to thousandths: "12.34" → 12340; at most three decimals, no sign. */
static bool parse_milli(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i, frac = 0;
	bool point = false;

	if (!len || s[0] == '.')
		return false;
	for (i = 0; i < len; i++) {
		if (s[i] == '.' && !point) {
			point = true;
			continue;
		}
		if (s[i] < '0' || s[i] > '9' || (point && ++frac > 3))
			return false;
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (point && !frac)
		return false;
	for (; frac < 3; frac++) {
		if (v > UINT64_MAX / 10)
			return false;
		v *= 10;
	}
	*out = v;
	return true;
}

/* total=: the digits of a u64 (20 at most), nothing else. */
static bool parse_total(const char *s, size_t len, uint64_t *out)
{
	char buf[24];

	if (!len || len > 20)
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return !fsutil__parse_u64(buf, out);
}

/* One line without its newline: "KIND avg10=A avg60=B avg300=C total=T". */
static int parse_line(const char *line, size_t len, unsigned int no, enum psi_kind kind,
		      struct psi_line *out, char *errbuf, size_t errlen)
{
	const char *tok[PSI_FIELDS];
	size_t tlen[PSI_FIELDS], n = 0, i, plen;
	const char *p = line, *end = line + len;
	uint64_t *vals[PSI_FIELDS - 1] = { &out->avg10_milli, &out->avg60_milli, &out->avg300_milli,
					   &out->total_us };

	/* Fields are separated by exactly one space. */
	while (p <= end) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		size_t l = sp ? (size_t)(sp - p) : (size_t)(end - p);

		if (n == PSI_FIELDS)
			return fault(errbuf, errlen, "line %u: more than %d fields", no,
				     PSI_FIELDS);
		tok[n] = p;
		tlen[n++] = l;
		if (!sp)
			break;
		p = sp + 1;
	}
	if (tlen[0] != strlen(kind_names[kind]) || memcmp(tok[0], kind_names[kind], tlen[0]))
		return fault(errbuf, errlen, "line %u: starts with \"%.*s\", expected \"%s\"", no,
			     (int)(tlen[0] > 16 ? 16 : tlen[0]), tok[0], kind_names[kind]);
	if (n != PSI_FIELDS)
		return fault(errbuf, errlen, "line %u: %zu fields, expected %d", no, n, PSI_FIELDS);
	for (i = 1; i < PSI_FIELDS; i++) {
		const char *name = field_names[i - 1];
		bool ok;

		plen = strlen(name);
		if (tlen[i] < plen || memcmp(tok[i], name, plen))
			return fault(errbuf, errlen,
				     "line %u: field %zu is \"%.*s\", expected %s...", no, i + 1,
				     (int)(tlen[i] > 24 ? 24 : tlen[i]), tok[i], name);
		ok = i < PSI_FIELDS - 1 ? parse_milli(tok[i] + plen, tlen[i] - plen, vals[i - 1]) :
					  parse_total(tok[i] + plen, tlen[i] - plen, vals[i - 1]);
		if (!ok)
			return fault(errbuf, errlen, "line %u: %.*s \"%.*s\" is not %s", no,
				     (int)plen - 1, name,
				     (int)(tlen[i] - plen > 24 ? 24 : tlen[i] - plen),
				     tok[i] + plen,
				     i < PSI_FIELDS - 1 ?
					     "a decimal with at most 3 digits after the point" :
					     "an unsigned 64-bit integer");
	}
	out->present = true;
	return 0;
}

int psi__parse(const char *text, struct psi_line out[PSI__KINDS], char *errbuf, size_t errlen)
{
	struct psi_line lines[PSI__KINDS] = { 0 };
	const char *p = text;
	unsigned int no;
	int err;

	if (!text || !*text)
		return fault(errbuf, errlen, "empty file");
	for (no = 1; *p; no++) {
		const char *nl = strchr(p, '\n');

		if (no > PSI__KINDS)
			return fault(errbuf, errlen, "line %u: more than %d lines", no, PSI__KINDS);
		if (!nl)
			return fault(errbuf, errlen, "line %u: no newline at its end", no);
		err = parse_line(p, (size_t)(nl - p), no, (enum psi_kind)(no - 1), &lines[no - 1],
				 errbuf, errlen);
		if (err)
			return err;
		p = nl + 1;
	}
	memcpy(out, lines, sizeof(lines));
	return 0;
}

static void note(char *detail, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Keeps the first cause only: later ones usually follow from it. */
static void note(char *detail, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!detail || !len || detail[0])
		return;
	va_start(ap, fmt);
	vsnprintf(detail, len, fmt, ap);
	va_end(ap);
}

static void sample_gapped(struct pressure_sample *s, enum ev_source src, enum ev_gap gap)
{
	int r, k;

	for (r = 0; r < PSI__RESOURCES; r++) {
		for (k = 0; k < PSI__KINDS; k++) {
			s->avg10_milli[r][k] = sev_u64__gap(src, gap);
			s->total_us[r][k] = sev_u64__gap(src, gap);
		}
	}
}

static const char *errno_hint(int err)
{
	if (err == -ENOENT)
		return "no such file (a kernel without CONFIG_PSI, or booted with psi=0)";
	if (err == -EOPNOTSUPP)
		return "PSI is off here (cgroup.pressure is 0, or the kernel was booted with psi=0)";
	return strerror(-err);
}

/* One file into lines; 0, or the -errno of reading it, or -EINVAL with why. */
static int read_psi_file(const char *path, struct psi_line lines[PSI__KINDS], char *why,
			 size_t why_len)
{
	char buf[PSI_FILE_MAX];
	int n = fsutil__read_file(NULL, path, buf, sizeof(buf));

	if (n < 0) {
		snprintf(why, why_len, "%s", errno_hint(n));
		return n;
	}
	if (memchr(buf, '\0', (size_t)n)) {
		snprintf(why, why_len, "a NUL byte in the text");
		return -EINVAL;
	}
	return psi__parse(buf, lines, why, why_len);
}

void pressure__sample(const char *dir, bool cgroup, bool system, struct pressure_sample *out,
		      char *detail, size_t detail_len)
{
	enum ev_source src = cgroup ? EV_SRC_SYSFS_CGROUP : EV_SRC_PROC_PRESSURE;
	char path[PATH_MAX], why[160];
	int r, k, err;

	sample_gapped(out, src, EV_GAP_UNAVAILABLE);
	for (r = 0; r < PSI__RESOURCES; r++) {
		struct psi_line lines[PSI__KINDS];
		enum ev_gap gap;

		if (snprintf(path, sizeof(path), "%s/%s%s", dir, resource_names[r],
			     cgroup ? ".pressure" : "") >= (int)sizeof(path)) {
			note(detail, detail_len, "%s: path too long", dir);
			continue;
		}
		err = read_psi_file(path, lines, why, sizeof(why));
		if (err) {
			/* Absent, or present but switched off: PSI is not provided here. */
			gap = err == -ENOENT || err == -EOPNOTSUPP ? EV_GAP_UNSUPPORTED :
								     fsutil__errno_gap(err);
			note(detail, detail_len, "%s: %s", path, why);
			for (k = 0; k < PSI__KINDS; k++) {
				out->avg10_milli[r][k] = sev_u64__gap(src, gap);
				out->total_us[r][k] = sev_u64__gap(src, gap);
			}
			continue;
		}
		for (k = 0; k < PSI__KINDS; k++) {
			if (!lines[k].present)
				continue;
			out->avg10_milli[r][k] = sev_u64__recorded(lines[k].avg10_milli, src);
			out->total_us[r][k] = sev_u64__recorded(lines[k].total_us, src);
		}
		/*
		 * No full line: cpu before 5.13. The system's cpu full (the host's,
		 * and the root cgroup's, which is the same group) is a constant 0
		 * the kernel writes for compatibility ("undefined at the system
		 * level"), not a measurement.
		 */
		if (!lines[PSI_FULL].present || (system && r == PSI_CPU)) {
			out->avg10_milli[r][PSI_FULL] = sev_u64__gap(src, EV_GAP_UNSUPPORTED);
			out->total_us[r][PSI_FULL] = sev_u64__gap(src, EV_GAP_UNSUPPORTED);
		}
	}
}

static void window_reset(struct pressure_window *w, bool cgroup)
{
	enum ev_source src = cgroup ? EV_SRC_SYSFS_CGROUP : EV_SRC_PROC_PRESSURE;

	memset(w, 0, sizeof(*w));
	w->cgroup = cgroup;
	w->gap = EV_GAP_UNAVAILABLE;
	sample_gapped(&w->start, src, EV_GAP_UNAVAILABLE);
	sample_gapped(&w->end, src, EV_GAP_UNAVAILABLE);
}

void pressure_window__host(struct pressure_window *w, const char *root)
{
	window_reset(w, false);
	snprintf(w->path, sizeof(w->path), "/proc/pressure");
	if (fsutil__path(w->dir, sizeof(w->dir), root, "/proc/pressure") < 0) {
		note(w->detail, sizeof(w->detail), "the root directory's path is too long");
		return;
	}
	w->usable = true;
}

/* The v2 path of pid's cgroup: the "0::" line of /proc/PID/cgroup. */
static int pid_v2_cgroup(const char *root, pid_t pid, char *out, size_t size)
{
	char rel[64], buf[8192], *line, *next;
	int n;

	snprintf(rel, sizeof(rel), "/proc/%d/cgroup", (int)pid);
	n = fsutil__read_file(root, rel, buf, sizeof(buf));
	if (n == -ENOENT)
		return -ESRCH;
	if (n < 0)
		return n;
	for (line = buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, "0::/", 4))
			continue;
		if (strlen(line + 3) >= size)
			return -ENAMETOOLONG;
		strcpy(out, line + 3);
		return 0;
	}
	return -ENOENT;
}

int pressure_window__cgroup(struct pressure_window *w, const char *root, pid_t pid)
{
	char mount[PATH_MAX];
	struct stat st;
	int err;

	window_reset(w, true);
	err = pid_v2_cgroup(root, pid, w->path, sizeof(w->path));
	if (err == -ENOENT) {
		w->gap = EV_GAP_UNSUPPORTED;
		note(w->detail, sizeof(w->detail),
		     "pid %d is in no cgroup v2 (cgroup v1 only): per-cgroup PSI needs cgroup v2",
		     (int)pid);
		return err;
	}
	if (err) {
		w->gap = fsutil__errno_gap(err);
		note(w->detail, sizeof(w->detail), "cannot read /proc/%d/cgroup: %s", (int)pid,
		     strerror(-err));
		return err;
	}
	err = cgroup__v2_mount(root, mount, sizeof(mount));
	if (err) {
		w->gap = err == -ENOENT ? EV_GAP_UNSUPPORTED : fsutil__errno_gap(err);
		note(w->detail, sizeof(w->detail), "cgroup v2 is not mounted here%s%s",
		     err == -ENOENT ? "" : ": ", err == -ENOENT ? "" : strerror(-err));
		return err;
	}
	/* The root cgroup's path is "/": its files are in the mount point itself. */
	if (snprintf(w->dir, sizeof(w->dir), "%s%s", mount, strcmp(w->path, "/") ? w->path : "") >=
	    (int)sizeof(w->dir)) {
		note(w->detail, sizeof(w->detail), "the cgroup's path is too long");
		return -ENAMETOOLONG;
	}
	if (stat(w->dir, &st)) {
		err = -errno;
		w->gap = fsutil__errno_gap(err);
		note(w->detail, sizeof(w->detail), "%s: %s", w->dir, strerror(-err));
		return err;
	}
	w->dir_ino = (uint64_t)st.st_ino;
	w->usable = true;
	return 0;
}

void pressure_window__read(struct pressure_window *w, bool at_end)
{
	struct pressure_sample *s = at_end ? &w->end : &w->start;
	enum ev_source src = w->cgroup ? EV_SRC_SYSFS_CGROUP : EV_SRC_PROC_PRESSURE;
	struct stat st;

	if (!w->usable) {
		sample_gapped(s, src, w->gap);
		return;
	}
	/* Removed, or removed and made again: its counters are not the start's. */
	if (w->cgroup && at_end && (stat(w->dir, &st) || (uint64_t)st.st_ino != w->dir_ino)) {
		sample_gapped(s, src, EV_GAP_UNAVAILABLE);
		note(w->detail, sizeof(w->detail), "cgroup %s was removed during the window",
		     w->path);
		return;
	}
	pressure__sample(w->dir, w->cgroup, !w->cgroup || !strcmp(w->path, "/"), s, w->detail,
			 sizeof(w->detail));
}

struct sev_u64 pressure_window__stall(const struct pressure_window *w, enum psi_resource r,
				      enum psi_kind k)
{
	return sev_u64__delta(w->end.total_us[r][k], w->start.total_us[r][k]);
}

/* SPDX-License-Identifier: MIT */
/*
 * `khbpf report`: a saved evidence document read back (no BPF, no root, any
 * host) and shown as a terminal report, one self-contained HTML page or a
 * Chrome/Perfetto trace. report.c loads and checks the document into the
 * read-only model below; report_text.c, report_html.c and report_trace.c
 * render it. Strings point into the parsed document and live as long as it.
 */
#ifndef KHBPF_REPORT_H
#define KHBPF_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/report_model.h"

/*
 * Read and check the document at path, a piece at a time: its text is
 * never whole in memory, nor its large arrays as json-c objects. On failure
 * returns -errno (-EINVAL: not JSON, -EPROTO: JSON but not a khbpf
 * document it can read) and puts one sentence saying what is wrong and
 * where into err. opts may be NULL (spans kept).
 */
int report_doc__load_file(const char *path, struct report_doc **doc, char *err, size_t errlen);
int report_doc__load_file_opts(const char *path, struct report_doc **doc,
			       const struct report_load_opts *opts, char *err, size_t errlen);
/* The same from the regular file open at fd, from its start (fd stays the caller's). */
int report_doc__load_fd(int fd, struct report_doc **doc, const struct report_load_opts *opts,
			char *err, size_t errlen);
/* The same from text in memory (len bytes, no NUL needed). */
int report_doc__load_string(const char *text, size_t len, struct report_doc **doc, char *err,
			    size_t errlen);
int report_doc__load_string_opts(const char *text, size_t len, struct report_doc **doc,
				 const struct report_load_opts *opts, char *err, size_t errlen);
void report_doc__free(struct report_doc *doc);

/*
 * The keyhog rendering (docs/evidence.md section 11) of the document in the
 * regular file in_fd, read from its start a piece at a time, written to
 * out_fd as it is made. 0, or -errno with one sentence in err (-EINVAL: not
 * JSON, -EPROTO: not a khbpf document, -ENOMEM, a write's -errno); on
 * error part of the text may have been written.
 */
int report__keyhog(int in_fd, int out_fd, char *err, size_t errlen);
/* The same within opts' bounds (outline_max, element_max; the rest unused); NULL: the defaults. */
int report__keyhog_opts(int in_fd, int out_fd, const struct report_load_opts *opts, char *err,
			size_t errlen);
/* The index of name in keyhog-profile's MetricId list, or -1 when it is not one. */
int report__keyhog_metric(const char *name);

/*
 * Whom a gap is for: one the user can fix (collect again otherwise), one
 * with nothing to fix (the hint says so: not applicable, not observable),
 * one this host, kernel or CPU cannot give (unsupported). The renderers put
 * the first first and fold the others into a line per reason.
 */
enum report_gap_kind { REPORT_GAP_FIXABLE, REPORT_GAP_NOTHING_TO_FIX, REPORT_GAP_HOST_CANNOT };
enum report_gap_kind report__gap_kind(const struct report_gap *g);
/* Blocked time: its total, "lock 98.2%, sleep 1.8%", "w-holder (1234) 58.1 ms x3, ...". */
uint64_t report__blocked_total(const struct report_blocked *b);
void report__causes_phrase(const struct report_blocked *b, char *buf, size_t len);
/* Appends to buf at *at, never past len; the text is cut where it does not fit. */
void report__put(char *buf, size_t len, size_t *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void report__wakers_phrase(const struct report_blocked *b, size_t max, char *buf, size_t len);
/* What to do about a gap of the field at path ("[*]" for indices). */
const char *report__gap_hint(const char *path, enum ev_gap reason);
/* What to do about a collector that is not available, when it gives no detail. */
const char *report__availability_hint(const char *availability);

/*
 * ns for humans with three significant digits, rounded: "812 ns", "1.23 us",
 * "45.6 ms", "302 ms", "1.00 s", "3600 s". Integer arithmetic only.
 */
void report__fmt_ns(char *buf, size_t len, uint64_t ns);

/*
 * The metrics by exclusive time, largest first, ties by id (malloc'd; NULL
 * on ENOMEM), and the sum of their exclusive times.
 */
const struct report_metric **report__metrics_by_exclusive(const struct report_doc *doc,
							  uint64_t *total);

/*
 * A process as the renderers name it: its title (at the window's end,
 * else at its join) where one was recorded, else its comm.
 */
const char *report__process_name(const struct report_process *p);
/*
 * The role a title names: its leading words that end in ':' (a program
 * that writes its own title: "postgres:", with cluster_name "postgres:
 * 15/main:") and up to REPORT_ROLE_WORDS words after them, one space
 * apart, into buf. "postgres: bench postgres [local] idle" is "postgres:
 * bench postgres [local]" (PostgreSQL's user, database and host before the
 * activity), "postgres: checkpointer " is "postgres: checkpointer". false
 * (buf "") when the title's first word does not end in ':'.
 */
#define REPORT_ROLE_WORDS 3
bool report__title_role(const char *title, char *buf, size_t len);

/*
 * The answer both renderers put first (report_answer.c). The processes,
 * and the listed threads, busiest first: by on-CPU, a gap after every
 * figure, then by pid or tid; indices, malloc'd (NULL on ENOMEM).
 */
#define REPORT_ANSWER_BUSIEST 5
#define REPORT_ANSWER_SLOWEST 5
size_t *report__processes_by_cpu(const struct report_doc *doc);
size_t *report__threads_by_cpu(const struct report_doc *doc);
/* A keyed metric's keys by inclusive time, most first, then by text: its (other) among them. */
const struct report_metric **report__keys_by_inclusive(const struct report_metric *m);
/* The metric's (other) key when it holds a call or an open span (its keys overflowed), else NULL. */
const struct report_metric *report__other_key(const struct report_metric *m);
/* One of the slowest: a metric without keys (key NULL), or a key of a keyed metric. */
struct report_slow {
	const struct report_metric *metric;
	const struct report_metric *key;
};
/* Up to max metrics and keys with calls, by inclusive time (most first, then by id) into out. */
size_t report__slowest(const struct report_doc *doc, struct report_slow *out, size_t max);
/*
 * Where a metric's (or key's) time went, in one phrase: "11.7 ms on-CPU +
 * 4.10 ms runqueue + 2.00 ms blocked (sleep 100.0%)", or what is not known
 * ("; blocked time not timed (--blocked times it)"); "" without its ledger.
 */
void report__where_phrase(const struct report_metric *m, char *buf, size_t len);
/* The waker listed first (most blocked time woken): "w-holder (1234) 58.1 ms x3"; "" when none. */
void report__top_waker(const struct report_blocked *b, char *buf, size_t len);
/* part of whole as "12.3%" (rounded down), "-" when whole is 0. */
void report__share(char *buf, size_t len, uint64_t part, uint64_t whole);

/* "exited with 0", "killed by signal 9", "still running when the window ended"... */
void report__exit_phrase(const struct report_doc *doc, char *buf, size_t len);

/* The terminal report. Returns 0 or -EIO. */
int report__text(const struct report_doc *doc, FILE *f);
/*
 * The same; all: every process and thread, not the busiest
 * REPORT_TEXT_PROCESSES processes and their threads.
 */
#define REPORT_TEXT_PROCESSES 20
int report__text_all(const struct report_doc *doc, FILE *f, bool all);

/* HTML-escaped, UTF-8-sanitized copy of s (malloc'd), or NULL on ENOMEM. */
char *report_html__escape(const char *s);
/* The self-contained HTML page; *buf is malloc'd. 0, -ENOMEM, -EINVAL (spans summarized). */
int report__html(const struct report_doc *doc, char **buf, size_t *len);

/* Trace-event JSON (Chrome, Perfetto); *buf is malloc'd. Returns 0 or -ENOMEM. */
int report__trace(const struct report_doc *doc, char **buf, size_t *len);
/*
 * The same written to f as it is made (f's buffer aside, never whole in
 * memory). 0, -ENOMEM, -EIO (f failed), -EINVAL (spans summarized).
 */
int report__trace_write(const struct report_doc *doc, FILE *f);

#endif /* KHBPF_REPORT_H */

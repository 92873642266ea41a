/* SPDX-License-Identifier: MIT */
/*
 * Span sites while spanfind builds them: a growable array handed over to
 * the caller's once per public call, the error sentences a site carries,
 * and the metric names of include/khbpf/span.h. Internal to spanfind;
 * callers use spanfind.h.
 */
#ifndef KHBPF_SPANSITE_H
#define KHBPF_SPANSITE_H

#include <stdbool.h>
#include <stddef.h>

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

/* Includes the NUL: a metric is kebab-case [a-z0-9]+(-[a-z0-9]+)*, at most 63 bytes. */
#define SPANFIND_METRIC_MAX 64
#define SPANFIND_SYMBOL_MAX 256
#define SPANFIND_SITES_MAX 4096
#define SPANFIND_OBJECTS_MAX 4096
/* A USDT provider or probe name in a request, with its NUL (usdtnote's USDT_NAME_MAX). */
#define USDT_REQUEST_NAME_MAX 64

/* What a site does with a span. */
enum span_site_kind {
	SPAN_SITE_FUNCTION, /* a function's entry opens it, its return closes it */
	SPAN_SITE_USDT_START, /* a USDT probe that opens it (--usdt-span START) */
	SPAN_SITE_USDT_DONE, /* a USDT probe that closes it (--usdt-span DONE) */
	SPAN_SITE_USDT_COUNT, /* a USDT probe whose hits are counted (--usdt): no span */
};

/* The document's words for a kind: "function", "usdt-start", "usdt-done", "usdt-count". */
const char *span_site_kind__name(enum span_site_kind k);

/* A parsed --key METRIC=argN:str|int. */
struct key_request {
	char metric[SPANFIND_METRIC_MAX];
	uint32_t arg; /* N, 0-based */
	uint32_t kind; /* KHBPF_KEY_INT or KHBPF_KEY_STR */
};

/*
 * Parses a --key argument into out: METRIC a
 * kebab-case metric, N from 0 to 11 (USDT probes have at most 12
 * arguments). 0 or -EINVAL.
 */
int key_request__parse(const char *arg, struct key_request *out);

/* A parsed --span-cause METRIC=CAUSE. */
struct cause_request {
	char metric[SPANFIND_METRIC_MAX];
	uint32_t cause; /* KHBPF_BLOCK_LOCK, _IO, _SLEEP or _OTHER */
};

/*
 * Parses a --span-cause argument into out: METRIC a kebab-case metric,
 * CAUSE one of lock, io, sleep, other (fault is the kernel's to say).
 * 0 or -EINVAL.
 */
int cause_request__parse(const char *arg, struct cause_request *out);

/*
 * Which file an object is, as fstat and fstatfs said when it was opened.
 * On overlayfs st_dev is the overlay mount's, st_ino the file's below it,
 * where uprobes go (d_real_inode()): two containers' overlays of one
 * image show one file under two devices.
 */
struct span_file_id {
	uint64_t dev, ino, size, mtime_ns;
	bool overlay;
};

struct span_site {
	/* Path as the target sees it (from /proc/PID/maps), e.g. /usr/lib/x.so. */
	char object[PATH_MAX];
	/* Path khbpf opens and attaches to: ROOT/proc/PID/root + object. */
	char open_path[PATH_MAX];
	/*
	 * "" when unknown: a stripped object without the function in .dynsym
	 * or a debug file. A USDT site's is PROVIDER:NAME.
	 */
	char symbol[SPANFIND_SYMBOL_MAX];
	/*
	 * The separate debug file whose .symtab gave symbol (the object is
	 * stripped), as the target sees it or under a --debug-dir; "" when the
	 * object's own tables or a note did.
	 */
	char symbols_from[PATH_MAX];
	char metric[SPANFIND_METRIC_MAX];
	uint64_t vaddr; /* link-time address */
	uint64_t offset; /* file offset for the uprobe */
	/* A USDT site's argument specs as the note writes them ("8@%rbx -4@$1"). */
	char args[256];
	/* A USDT semaphore's file offset, the uprobe's ref_ctr_offset; 0: none. */
	uint64_t ref_ctr_offset;
	/* The file read when found (span_file_id); all 0 for a site that has err. */
	struct span_file_id file;
	enum span_site_kind kind;
	/* --key: the slot of its keyed argument's spec (spankeys.c), 1-based; 0: none. */
	uint32_t key_slot;
	bool from_note; /* an annotation, not a --span request */
	/* The request (reqs[request - 1]) that found it; 0: an annotation. */
	uint32_t request;
	int err; /* 0, or -errno: why this site cannot be attached */
	/*
	 * With err: what the request names is not there (no such function or
	 * probe in the object, no such object): a mistake in the request,
	 * which span_run__check refuses, not a site that could not be probed.
	 */
	bool absent;
	/* when err != 0: one sentence naming object and symbol (and a debug file) */
	char reason[512];
};

/*
 * A parsed --span [OBJECT:]SYMBOL[=metric]. object is NULL for the main
 * executable, metric NULL to derive one from each matched symbol's name.
 * Or a parsed --usdt-span [OBJECT:]PROVIDER:START,DONE[=metric] (provider
 * non-NULL): symbol is "PROVIDER:START,DONE" as shown in errors, metric
 * always set, and object NULL for the executable and every library it maps.
 */
struct span_request {
	const char *object;
	const char *symbol;
	const char *metric;
	const char *provider, *start, *done; /* --usdt-span only, else NULL */
	/*
	 * --usdt [OBJECT:]PROVIDER:NAME: provider and start are fnmatch(3)
	 * globs, done and metric NULL (each probe found is its own metric).
	 */
	bool count;
};

/*
 * Parses arg into out, whose strings point into buf (strlen(arg) + 1 bytes
 * are enough). The first '=' starts the metric; the last ':' before it ends
 * OBJECT, so OBJECT may hold ':' but not '='. SYMBOL is a name or an
 * fnmatch(3) glob of [A-Za-z0-9_.$@*?[]!^-], at most 255 bytes; OBJECT is
 * non-empty when the ':' is there, below PATH_MAX and without control
 * characters. Returns 0; -EINVAL when malformed, -ENAMETOOLONG when buf is
 * too small; on error out and buf are untouched.
 */
int span_request__parse(const char *arg, struct span_request *out, char *buf, size_t buflen);

/*
 * Parses a --usdt-span argument into out, its strings in buf, which takes
 * 2 * (strlen(arg) + 1) + SPANFIND_METRIC_MAX bytes. PROVIDER, START and
 * DONE are names of [A-Za-z0-9_] (no globs: a span is one pair), below
 * USDT_NAME_MAX; START and DONE differ. The metric defaults to PROVIDER
 * and the names' common prefix in kebab-case ("postgresql:query__start,
 * query__done" gives "postgresql-query"), or PROVIDER-START without one.
 * 0; -EINVAL when malformed or the default metric is over 63 bytes,
 * -ENAMETOOLONG when buf is too small; on error out is untouched.
 */
int span_request__parse_usdt(const char *arg, struct span_request *out, char *buf, size_t buflen);

/*
 * Parses a --usdt [OBJECT:]PROVIDER:NAME argument into out (count set),
 * its strings in buf, which takes 2 * (strlen(arg) + 1) bytes. PROVIDER
 * and NAME are globs of [A-Za-z0-9_*?[]!^], below USDT_NAME_MAX. 0;
 * -EINVAL when malformed, -ENAMETOOLONG when buf is too small; on error out
 * is untouched.
 */
int span_request__parse_usdt_count(const char *arg, struct span_request *out, char *buf,
				   size_t buflen);

/*
 * The request as its option was given, without a metric: "--span
 * libc.so.6:malloc", "--usdt-span postgresql:query__start,query__done",
 * "--usdt python:gc__*", into buf (always terminated).
 */
void span_request__describe(const struct span_request *req, char *buf, size_t size);

/*
 * Whether req measures metric: its =metric, or, without one, the metric
 * its SYMBOL (a --usdt request's PROVIDER:NAME) makes when it is a name,
 * not a glob. The metrics of a glob are known from the sites it finds.
 */
bool span_request__has_metric(const struct span_request *req, const char *metric);

/*
 * The metric of a counted probe: PROVIDER-NAME in kebab-case into out
 * (SPANFIND_METRIC_MAX bytes); -EINVAL when it would pass 63 bytes.
 */
int spansite__usdt_count_metric(const char *provider, const char *name, char *out);

/* Frees an array of sites and its strings. */
void spanfind__free(struct span_site *sites, size_t nr);

struct site_vec {
	struct span_site *v;
	size_t n, cap;
};

/* Copies src into dst of size bytes, cut short and always terminated. */
void spansite__copy_str(char *dst, size_t size, const char *src);

/* A zeroed site naming object and open_path at the end of vec; NULL without memory. */
struct span_site *site_vec__push(struct site_vec *vec, const char *object, const char *open_path,
				 bool from_note);

/* Appends vec's sites to *sites (one reallocation); 0 or -ENOMEM. vec is kept. */
int site_vec__hand_over(struct site_vec *vec, struct span_site **sites, size_t *nr);

/* Sets s->err and s->reason; control bytes of the reason are written as \xNN. */
__attribute__((format(printf, 3, 4))) void span_site__fail(struct span_site *s, int err,
							   const char *fmt, ...);

/* A kebab-case metric name of at most KHBPF_METRIC_MAX bytes: m's first len, or m. */
bool spansite__metric_valid_n(const char *m, size_t len);
bool spansite__metric_valid(const char *m);

/*
 * A metric named after a symbol, "Stage_Outer2" -> "stage-outer2", into out
 * (KHBPF_METRIC_MAX + 1 bytes); -EINVAL when no letter or digit is left.
 */
int spansite__metric_from_symbol(const char *sym, char *out);

/* One error site: no function of object matches glob (saying whether it is stripped). */
int site_vec__push_not_found(struct site_vec *vec, bool has_symtab, const char *object,
			     const char *open_path, const char *glob, const char *metric);

/* One error site for an object that cannot be read; err is returned unless memory ran out. */
int site_vec__push_file_error(struct site_vec *vec, const char *object, const char *open_path,
			      const char *symbol, const char *metric, bool from_note, int err,
			      const char *reason);

#endif /* KHBPF_SPANSITE_H */

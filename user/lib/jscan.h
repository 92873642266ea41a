/* SPDX-License-Identifier: MIT */
/*
 * JSON structure without a tree, read a piece at a time: a cursor over a
 * file (or bytes in memory) that skips whitespace, member keys and whole
 * values, so that a reader can find a document's large arrays and hand
 * their elements to json-c one at a time (report_stream.c) without ever
 * holding the document's text or its tree. Only the structure is checked
 * (strings, nesting, separators); the values are left to the parser.
 *
 * A tap sees every byte the cursor consumes, in order, with its offset:
 * that is how the bytes outside the large arrays reach json-c. The cursor
 * counts the values it goes over, so that a reader can bound what json-c
 * would build of them before it builds it, and notes integer literals
 * beyond 64 bits, which json-c would clamp without a word.
 */
#ifndef KHBPF_JSCAN_H
#define KHBPF_JSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deeper nesting than this is refused (-E2BIG). */
#define JSCAN_MAX_DEPTH 64
/* What one read of a file asks for: the cursor's only buffer. */
#define JSCAN_READ_SIZE (256u << 10)

struct jscan;

/* What the cursor went over: every value (nested ones too), member key, object and array. */
struct jscan_counts {
	uint64_t values, keys, objects, arrays;
};

/* The integer literals json-c holds: -2^63 to 2^64-1. */
#define JSCAN_INT_MIN "-9223372036854775808"
#define JSCAN_INT_MAX "18446744073709551615"

/* Gets the bytes consumed from off on; a negative return stops the cursor with it. */
typedef int (*jscan_tap_fn)(void *ctx, uint64_t off, const char *p, size_t n);

/* A cursor at offset 0 of the file fd (read with pread; fd stays the caller's). */
int jscan__from_fd(int fd, struct jscan **out);
/* The same over len bytes at text, which must outlive the cursor. */
int jscan__from_mem(const char *text, size_t len, struct jscan **out);
void jscan__free(struct jscan *s);

/* The offset of the next byte. */
uint64_t jscan__tell(const struct jscan *s);
/* Read on from off (the tap must be off), past an earlier failure too. */
void jscan__seek(struct jscan *s, uint64_t off);

/*
 * Past any whitespace: the next byte (0..255), not consumed; -ENODATA at
 * the end; -errno when a read (or the tap) failed.
 */
int jscan__peek(struct jscan *s);
/* Consume the byte jscan__peek returned. */
void jscan__take(struct jscan *s);
/*
 * Past one value starting after any whitespace. 0; -EINVAL when it is not
 * well formed as far as it goes (the cursor stays at the byte that is
 * wrong, or at the end); -E2BIG when nested too deep; -errno of a read.
 */
int jscan__skip_value(struct jscan *s);
/*
 * A member key after any whitespace, then its ':' and the whitespace after:
 * its raw bytes (escapes as written) into buf, NUL-terminated. The key's
 * length, which is cap or more when it did not fit; -EINVAL, -errno.
 */
int jscan__key(struct jscan *s, char *buf, size_t cap);
/* Consume everything up to the end (so the tap sees it). 0 or -errno. */
int jscan__drain(struct jscan *s);
/*
 * The number or literal at the cursor after any whitespace: its bytes into
 * buf, cut to fit, NUL-terminated. Its length; -EINVAL when there is none.
 */
int64_t jscan__scalar(struct jscan *s, char *buf, size_t cap);

/* The counts of everything the cursor went over so far, passes over the same bytes included. */
void jscan__counts(const struct jscan *s, struct jscan_counts *out);
/*
 * The offset of the first integer literal (digits, a '-' before them) out
 * of JSCAN_INT_MIN..JSCAN_INT_MAX that any pass went over; UINT64_MAX when
 * none was.
 */
uint64_t jscan__range_at(const struct jscan *s);
/*
 * Where the innermost value holding offset off is, from the value at the
 * start: members as "a.b" (raw bytes, a key cut at 64 with "..."),
 * elements as "[3]"; "" for the value at the start. 0, -EINVAL (not well
 * formed up to off), -errno; the cursor is left anywhere.
 */
int jscan__path_at(struct jscan *s, uint64_t off, char *buf, size_t cap);

/* From here on every byte consumed goes to fn (one tap at a time). */
void jscan__tap(struct jscan *s, jscan_tap_fn fn, void *ctx);
/* What was consumed since the last call goes to the tap now; its return. */
int jscan__flush(struct jscan *s);
/* Flush, and stop tapping. */
int jscan__untap(struct jscan *s);

/*
 * Line and column (from 1, in bytes) of offset off, read from the start;
 * the cursor is left at off. 0 or -errno.
 */
int jscan__line_col(struct jscan *s, uint64_t off, size_t *line, size_t *col);

#endif /* KHBPF_JSCAN_H */

/* SPDX-License-Identifier: MIT */
/*
 * Finding values in JSON text without building it: the byte range of a
 * member of the root object, and the elements of an array one by one, so
 * that a reader can parse a document's large arrays an element at a time
 * (report.c) instead of holding all of them as json-c objects at once.
 * Only the structure is checked (strings, nesting, separators); the values
 * are left to the parser.
 */
#ifndef KHBPF_JSCAN_H
#define KHBPF_JSCAN_H

#include <stddef.h>

/* Deeper nesting than this is refused (-E2BIG). */
#define JSCAN_MAX_DEPTH 64

struct jrange {
	size_t begin; /* the value's first byte */
	size_t end; /* one past its last */
};

/*
 * The value of the member at path ("events.spans": keys of nested objects,
 * none escaped) of the root object of text. 0; -ENOENT when it is not there
 * (or a parent is not an object); -EINVAL when the text is not well formed
 * as far as it was scanned; -E2BIG when nested too deep.
 */
int jscan__member(const char *text, size_t len, const char *path, struct jrange *out);
/*
 * The elements of the array at arr, in order: *pos is 0 before the first
 * call. 1 with *elem set; 0 after the last; -EINVAL when arr is not a well
 * formed array; -E2BIG when nested too deep.
 */
int jscan__next(const char *text, const struct jrange *arr, size_t *pos, struct jrange *elem);

#endif /* KHBPF_JSCAN_H */

/* SPDX-License-Identifier: MIT */
/*
 * Output files: written whole or not at all. A temp file in the target's
 * directory is filled, fsync'd and renamed over the target, then the
 * directory is fsync'd, so a reader never sees a partial document.
 */
#ifndef KHBPF_OUTPUT_H
#define KHBPF_OUTPUT_H

#include <stddef.h>
#include <sys/types.h>

struct output_opts {
	size_t sz; /* sizeof(struct output_opts), libbpf-style */
	mode_t mode; /* 0 → 0644 */
};

/*
 * Write len bytes to path ("-" → stdout). Refuses to replace anything but a
 * regular file (a FIFO, directory or device), and never follows a symlink
 * at path: rename replaces the link itself. Returns 0 or -errno (-EEXIST:
 * path exists and is not a regular file or symlink); on error nothing is
 * left behind and path is untouched.
 */
int output__write_file(const char *path, const void *data, size_t len,
		       const struct output_opts *opts);

#endif /* KHBPF_OUTPUT_H */

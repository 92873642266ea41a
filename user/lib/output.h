/* SPDX-License-Identifier: MIT */
/*
 * Output files: written whole or not at all. An unnamed file (O_TMPFILE;
 * else an O_EXCL temp file) in the target's directory is filled, fsync'd,
 * given a temporary name and renamed over the target, then the directory is
 * fsync'd, so a reader never sees a partial document and a killed writer
 * leaves none behind.
 */
#ifndef KHBPF_OUTPUT_H
#define KHBPF_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct output_opts {
	size_t sz; /* sizeof(struct output_opts), libbpf-style */
	mode_t mode; /* 0 → 0644; set exactly, whatever the umask */
	bool newline; /* write a newline after the data */
};

/* Mode of files written with --private. */
#define OUTPUT_MODE_PRIVATE 0600

/*
 * Before any work: could output__write_file(path) succeed with the caller's
 * current credentials? path must be a regular file or not exist, and a file
 * must be creatable in its directory (one is created O_EXCL and removed).
 * "-" is always fine. Returns 0 or -errno: -ELOOP path is a symbolic link,
 * -EEXIST path exists and is not a regular file, else why the directory
 * refused (-ENOENT, -EACCES, -EROFS, -ENOSPC, ...).
 */
int output__check(const char *path);

/*
 * Write len bytes to path ("-" → stdout). The temp file is unnamed or
 * created O_EXCL (never through a link), with exactly opts->mode. A path that is a symlink
 * is refused (-ELOOP), as is anything but a regular file (-EEXIST: a FIFO,
 * directory, socket or device); should path become a symlink meanwhile,
 * rename replaces the link itself and never writes through it. Returns 0
 * or -errno; on error nothing is left behind and path is untouched.
 */
int output__write_file(const char *path, const void *data, size_t len,
		       const struct output_opts *opts);

/* Writes the whole contents to fd (the temp file, or stdout); 0 or -errno. */
typedef int (*output_fill_fn)(int fd, void *ctx);
/*
 * The same, with contents that fill writes as it makes them, so they need
 * not be in memory at once (opts->newline is fill's business). A failing
 * fill leaves nothing behind and path untouched, as a failed write does;
 * to stdout ("-") what fill wrote before failing stays written.
 */
int output__write_with(const char *path, output_fill_fn fill, void *ctx,
		       const struct output_opts *opts);

/*
 * For appending (serve --ndjson): open path, creating it with exactly mode
 * (0 → 0644) when missing; an existing file keeps its mode and owner. Never
 * through a symlink (-ELOOP), never anything but a regular file (-EEXIST;
 * a FIFO is refused at once, not waited on). Returns the fd or -errno.
 */
int output__open_append(const char *path, mode_t mode);

/*
 * Append one record to a regular file from output__open_append, whole or
 * not at all: on a failed write (disk full) the file is cut back to its
 * size before, so no partial record stays. Any other fd (stdout): plain
 * writes. 0 or -errno.
 */
int output__append(int fd, const void *data, size_t len);

/*
 * Scratch space: an unnamed file open for reading and writing (O_TMPFILE;
 * else one created O_EXCL, mode 0600, and unlinked at once) in $TMPDIR
 * when that is an absolute path, else /tmp. Nothing else can open it, and
 * it is gone when closed. The fd or -errno; *dir: where it was asked for.
 */
int output__scratch(const char **dir);

/* Writes all of data to fd, again after EINTR and short writes: 0 or -errno. */
int output__write_all(int fd, const void *data, size_t len);

#endif /* KHBPF_OUTPUT_H */

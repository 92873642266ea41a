/* SPDX-License-Identifier: MIT */
/*
 * Small helpers for reading /proc and /sys below a root directory prefix,
 * so that every reader can run against the live host ("/" or "") or a
 * fixture tree. All functions return 0 (or a byte count) or -errno.
 */
#ifndef KHBPF_FSUTIL_H
#define KHBPF_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "lib/evidence.h"

/*
 * out = root + printf(fmt, ...). A NULL, "" or "/" root is the live host;
 * trailing slashes of root are dropped and exactly one '/' joins the parts.
 * Returns the length, or -ENAMETOOLONG when out is too small.
 */
int fsutil__path(char *out, size_t size, const char *root, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Opens path, a file a user named (a document, an object to probe, a
 * debug file), to read, without waiting: a FIFO with no writer, or a
 * device, would hold open() or the first read forever, past every
 * signal. O_NONBLOCK for the open, then fstat into *st: anything but a
 * regular file is closed again and refused, -EISDIR for a directory and
 * -EINVAL otherwise, with *st saying what it was (fsutil__file_kind). The
 * fd returned reads as usual (O_NONBLOCK is cleared), O_CLOEXEC.
 */
int fsutil__open_regular(const char *path, struct stat *st);
/* "a FIFO (named pipe)", "a directory", ... for a message: what st_mode is. */
const char *fsutil__file_kind(mode_t mode);

/*
 * Reads the whole file root + path into buf and NUL-terminates it. Returns
 * the number of bytes read, or -errno; -EFBIG when it does not fit in
 * size - 1 bytes (a partial read is never returned as success).
 */
int fsutil__read_file(const char *root, const char *path, char *buf, size_t size);

/* Strict decimal: digits only, optionally one trailing '\n'. -EINVAL or -ERANGE. */
int fsutil__parse_u64(const char *s, uint64_t *out);
/* As fsutil__parse_u64 with an optional leading '-' (sysfs ids may be -1). */
int fsutil__parse_s64(const char *s, int64_t *out);
int fsutil__read_u64(const char *root, const char *path, uint64_t *out);
int fsutil__read_s64(const char *root, const char *path, int64_t *out);

/*
 * Parses a kernel cpu list ("0-3,8,10-11\n"; "" or "\n" is the empty list)
 * into mask, a bitmap of mask_bits bits which is cleared first. count (may be
 * NULL) receives the number of distinct CPUs. -EINVAL when malformed, -ERANGE
 * when a CPU id is >= mask_bits.
 */
int fsutil__parse_cpulist(const char *s, uint8_t *mask, uint32_t mask_bits, uint32_t *count);
/* fsutil__parse_cpulist of the file root + path (lists up to 64 KiB). */
int fsutil__read_cpulist(const char *root, const char *path, uint8_t *mask, uint32_t mask_bits,
			 uint32_t *count);

static inline bool fsutil__test_bit(const uint8_t *mask, uint32_t bit)
{
	return mask[bit / 8] & (1u << (bit % 8));
}

static inline void fsutil__set_bit(uint8_t *mask, uint32_t bit)
{
	mask[bit / 8] |= (uint8_t)(1u << (bit % 8));
}

/*
 * Lists the threads of pid from root/proc/PID/task: entries named by 1 to
 * INT_MAX in plain digits, others skipped. *out (the caller frees it, NULL
 * when empty) is sorted ascending, *nr its length. -ESRCH when the task
 * directory does not exist; another -errno (readdir errors included) as is.
 */
int fsutil__list_tids(const char *root, pid_t pid, pid_t **out, size_t *nr);

/*
 * The gap an error implies: -EACCES/-EPERM are "permission-denied", anything
 * else "unavailable". Callers that know absence means the facility does not
 * exist choose "unsupported" themselves.
 */
enum ev_gap fsutil__errno_gap(int err);

#endif /* KHBPF_FSUTIL_H */

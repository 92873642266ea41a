// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fsutil.h"

/* Largest cpu list read: a sparse list of 8192 ids needs about 40 KiB. */
#define FSUTIL_CPULIST_MAX (64 * 1024)

int fsutil__path(char *out, size_t size, const char *root, const char *fmt, ...)
{
	size_t rlen = root ? strlen(root) : 0;
	size_t n;
	va_list ap;
	int ret;

	if (!out || !size || !fmt)
		return -EINVAL;
	out[0] = '\0';
	while (rlen && root[rlen - 1] == '/')
		rlen--;
	if (rlen >= size)
		return -ENAMETOOLONG;
	if (rlen)
		memcpy(out, root, rlen);

	va_start(ap, fmt);
	ret = vsnprintf(out + rlen, size - rlen, fmt, ap);
	va_end(ap);
	if (ret < 0) {
		out[0] = '\0';
		return -EINVAL;
	}
	n = (size_t)ret;
	if (n >= size - rlen)
		goto too_long;
	if (out[rlen] != '/') {
		if (rlen + n + 1 >= size)
			goto too_long;
		memmove(out + rlen + 1, out + rlen, n + 1);
		out[rlen] = '/';
		n++;
	}
	if (rlen + n > INT_MAX)
		goto too_long;
	return (int)(rlen + n);

too_long:
	out[0] = '\0';
	return -ENAMETOOLONG;
}

int fsutil__open_regular(const char *path, struct stat *st)
{
	int fd, err;

	memset(st, 0, sizeof(*st));
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		/* A socket cannot be opened at all (ENXIO): say what it is. */
		if (err == -ENXIO && !stat(path, st) && !S_ISREG(st->st_mode))
			return -EINVAL;
		return err;
	}
	if (fstat(fd, st)) {
		err = -errno;
		goto fail;
	}
	if (!S_ISREG(st->st_mode)) {
		err = S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
		goto fail;
	}
	if (fcntl(fd, F_SETFL, 0)) {
		err = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}

const char *fsutil__file_kind(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO (named pipe)";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFSOCK:
		return "a socket";
	}
	return "not a regular file";
}

static ssize_t read_retry(int fd, void *buf, size_t len)
{
	ssize_t n;

	do {
		n = read(fd, buf, len);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

int fsutil__read_file(const char *root, const char *path, char *buf, size_t size)
{
	char full[PATH_MAX];
	size_t len = 0;
	ssize_t n;
	int fd, err = 0;

	if (!buf || !size || size > INT_MAX || !path)
		return -EINVAL;
	buf[0] = '\0';
	err = fsutil__path(full, sizeof(full), root, "%s", path);
	if (err < 0)
		return err;
	err = 0;

	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (len == size - 1) {
			char extra;

			/* Full buffer: succeed only if the file really ended here. */
			n = read_retry(fd, &extra, 1);
			if (n < 0)
				err = (int)n;
			else if (n > 0)
				err = -EFBIG;
			break;
		}
		n = read_retry(fd, buf + len, size - 1 - len);
		if (n < 0) {
			err = (int)n;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (err) {
		buf[0] = '\0';
		return err;
	}
	buf[len] = '\0';
	return (int)len;
}

/* Digits of *p as an unsigned value; false when there is no digit. */
static bool scan_digits(const char **p, uint64_t *out, bool *overflow)
{
	const char *s = *p;
	uint64_t v = 0;

	*overflow = false;
	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			*overflow = true;
		else
			v = v * 10 + d;
	}
	*p = s;
	*out = v;
	return true;
}

int fsutil__parse_u64(const char *s, uint64_t *out)
{
	bool overflow;
	uint64_t v;

	if (!s || !out)
		return -EINVAL;
	if (!scan_digits(&s, &v, &overflow))
		return -EINVAL;
	if (*s == '\n')
		s++;
	if (*s)
		return -EINVAL;
	if (overflow)
		return -ERANGE;
	*out = v;
	return 0;
}

int fsutil__parse_s64(const char *s, int64_t *out)
{
	bool neg = false;
	uint64_t v;
	int err;

	if (!s || !out)
		return -EINVAL;
	if (*s == '-') {
		neg = true;
		s++;
	}
	err = fsutil__parse_u64(s, &v);
	if (err)
		return err;
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	} else {
		if (v > INT64_MAX)
			return -ERANGE;
		*out = (int64_t)v;
	}
	return 0;
}

/* Reads a short one-value file; embedded NULs are malformed input. */
static int read_small(const char *root, const char *path, char *buf, size_t size)
{
	int n = fsutil__read_file(root, path, buf, size);

	if (n < 0)
		return n;
	if (memchr(buf, '\0', (size_t)n))
		return -EINVAL;
	return 0;
}

int fsutil__read_u64(const char *root, const char *path, uint64_t *out)
{
	char buf[64];
	int err = read_small(root, path, buf, sizeof(buf));

	if (err == -EFBIG)
		return -EINVAL;
	return err ? err : fsutil__parse_u64(buf, out);
}

int fsutil__read_s64(const char *root, const char *path, int64_t *out)
{
	char buf[64];
	int err = read_small(root, path, buf, sizeof(buf));

	if (err == -EFBIG)
		return -EINVAL;
	return err ? err : fsutil__parse_s64(buf, out);
}

int fsutil__parse_cpulist(const char *s, uint8_t *mask, uint32_t mask_bits, uint32_t *count)
{
	bool out_of_range = false, overflow;
	uint32_t n = 0;
	uint64_t lo, hi, cpu;

	if (count)
		*count = 0;
	if (!s || !mask)
		return -EINVAL;
	memset(mask, 0, (mask_bits + 7u) / 8u);
	if (*s == '\n' && s[1] == '\0')
		return 0;
	if (*s == '\0')
		return 0;

	for (;;) {
		if (!scan_digits(&s, &lo, &overflow))
			goto malformed;
		if (overflow)
			out_of_range = true;
		hi = lo;
		if (*s == '-') {
			s++;
			if (!scan_digits(&s, &hi, &overflow))
				goto malformed;
			if (overflow)
				out_of_range = true;
			else if (hi < lo)
				goto malformed;
		}
		if (hi >= mask_bits) {
			out_of_range = true;
		} else if (!out_of_range) {
			for (cpu = lo; cpu <= hi; cpu++) {
				if (!fsutil__test_bit(mask, (uint32_t)cpu)) {
					fsutil__set_bit(mask, (uint32_t)cpu);
					n++;
				}
			}
		}
		if (*s == ',') {
			s++;
			continue;
		}
		if (*s == '\n')
			s++;
		if (*s)
			goto malformed;
		break;
	}
	if (out_of_range) {
		memset(mask, 0, (mask_bits + 7u) / 8u);
		return -ERANGE;
	}
	if (count)
		*count = n;
	return 0;

malformed:
	memset(mask, 0, (mask_bits + 7u) / 8u);
	return -EINVAL;
}

int fsutil__read_cpulist(const char *root, const char *path, uint8_t *mask, uint32_t mask_bits,
			 uint32_t *count)
{
	char *buf = malloc(FSUTIL_CPULIST_MAX);
	int err;

	if (count)
		*count = 0;
	if (!buf)
		return -ENOMEM;
	err = read_small(root, path, buf, FSUTIL_CPULIST_MAX);
	if (!err)
		err = fsutil__parse_cpulist(buf, mask, mask_bits, count);
	free(buf);
	return err;
}

static int pid__cmp(const void *pa, const void *pb)
{
	pid_t a = *(const pid_t *)pa, b = *(const pid_t *)pb;

	return a < b ? -1 : a > b;
}

/* A task/ entry that can be a thread: digits only, 1..INT_MAX. */
static bool parse_tid(const char *name, pid_t *tid)
{
	uint64_t v;

	if (name[0] < '0' || name[0] > '9' || name[strspn(name, "0123456789")] != '\0')
		return false;
	if (fsutil__parse_u64(name, &v) || !v || v > INT_MAX)
		return false;
	*tid = (pid_t)v;
	return true;
}

int fsutil__list_tids(const char *root, pid_t pid, pid_t **out, size_t *nr)
{
	char path[PATH_MAX];
	pid_t *tids = NULL, *grown, tid;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int err;
	DIR *dir;

	if (!out || !nr)
		return -EINVAL;
	*out = NULL;
	*nr = 0;
	err = fsutil__path(path, sizeof(path), root, "/proc/%d/task", (int)pid);
	if (err < 0)
		return err;
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ESRCH : -errno;
	err = 0;
	for (;;) {
		errno = 0;
		de = readdir(dir);
		if (!de) {
			err = -errno;
			break;
		}
		if (!parse_tid(de->d_name, &tid))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			grown = realloc(tids, cap * sizeof(*tids));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			tids = grown;
		}
		tids[n++] = tid;
	}
	closedir(dir);
	if (err) {
		free(tids);
		return err;
	}
	if (n)
		qsort(tids, n, sizeof(*tids), pid__cmp);
	*out = tids;
	*nr = n;
	return 0;
}

enum ev_gap fsutil__errno_gap(int err)
{
	if (err < 0)
		err = -err;
	if (err == EACCES || err == EPERM)
		return EV_GAP_PERMISSION_DENIED;
	return EV_GAP_UNAVAILABLE;
}

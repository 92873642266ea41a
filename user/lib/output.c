// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/output.h"

int output__write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int fsync_dir(const char *dir)
{
	int fd, err = 0;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) && errno != EINVAL)
		err = -errno;
	close(fd);
	return err;
}

/* path's directory into dir: dirname(3) of a copy. */
static int dir_of(const char *path, char *dir, size_t size)
{
	char copy[PATH_MAX];

	if (snprintf(copy, sizeof(copy), "%s", path) >= (int)sizeof(copy))
		return -ENAMETOOLONG;
	if (snprintf(dir, size, "%s", dirname(copy)) >= (int)size)
		return -ENAMETOOLONG;
	return 0;
}

static int check_target(const char *path)
{
	struct stat st;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		return -errno;
	}
	if (S_ISLNK(st.st_mode))
		return -ELOOP;
	return S_ISREG(st.st_mode) ? 0 : -EEXIST;
}

/* mkostemp: O_CREAT|O_EXCL, so never through a link; mode 0600 until fchmod. */
static int make_temp(const char *dir, char *tmp, size_t size)
{
	int fd;

	if (snprintf(tmp, size, "%s/.khbpf-out.XXXXXX", dir) >= (int)size)
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * An unnamed file in dir (O_TMPFILE): until it is complete it has no name,
 * so nothing is left behind even if khbpf is killed while writing.
 * -EOPNOTSUPP when the file system has none.
 */
static int open_unnamed(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);

	if (fd >= 0)
		return fd;
	/* EISDIR: kernels before 3.11; EINVAL/EOPNOTSUPP: the file system. */
	return errno == EISDIR || errno == EINVAL || errno == EOPNOTSUPP ? -EOPNOTSUPP : -errno;
}

static bool fowner_effective(void)
{
	cap_flag_value_t v = CAP_CLEAR;
	cap_t caps = cap_get_proc();

	if (caps) {
		cap_get_flag(caps, CAP_FOWNER, CAP_EFFECTIVE, &v);
		cap_free(caps);
	}
	return v == CAP_SET;
}

/*
 * The kernel's rule for renaming over a file in a sticky directory (/tmp),
 * ahead of time: the file or the directory must be ours, or CAP_FOWNER.
 */
static int check_sticky(const char *path, const char *dir)
{
	uid_t fsuid = (uid_t)setfsuid((uid_t)-1);
	struct stat st, d;

	if (lstat(path, &st) || stat(dir, &d) || !(d.st_mode & S_ISVTX))
		return 0;
	if (st.st_uid == fsuid || d.st_uid == fsuid || fowner_effective())
		return 0;
	return -EPERM;
}

int output__check(const char *path)
{
	char dir[PATH_MAX], tmp[PATH_MAX];
	int fd, err;

	if (!path || !*path)
		return -EINVAL;
	if (!strcmp(path, "-"))
		return 0;
	err = check_target(path);
	err = err ?: dir_of(path, dir, sizeof(dir));
	err = err ?: check_sticky(path, dir);
	if (err)
		return err;
	fd = open_unnamed(dir);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (fd != -EOPNOTSUPP)
		return fd;
	fd = make_temp(dir, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	close(fd);
	unlink(tmp);
	return 0;
}

int output__scratch(const char **dir)
{
	const char *tmpdir = getenv("TMPDIR");
	char tmp[PATH_MAX];
	int fd;

	*dir = tmpdir && tmpdir[0] == '/' ? tmpdir : "/tmp";
	fd = open(*dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	if (errno != EISDIR && errno != EINVAL && errno != EOPNOTSUPP)
		return -errno;
	fd = make_temp(*dir, tmp, sizeof(tmp));
	if (fd >= 0)
		unlink(tmp);
	return fd;
}

/* fchmod (exact mode, no umask), the contents, fsync. */
static int fill_temp(int fd, mode_t mode, output_fill_fn fill, void *ctx)
{
	int err;

	if (fchmod(fd, mode & 07777))
		return -errno;
	err = fill(fd, ctx);
	if (!err && fsync(fd))
		err = -errno;
	return err;
}

/*
 * Give the complete unnamed file a temporary name for the rename. Through
 * /proc/self/fd: linkat's AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH. linkat
 * never follows or replaces an existing name, so a planted one is skipped.
 */
static int name_unnamed(int fd, const char *dir, char *tmp, size_t size)
{
	char proc[64];
	unsigned int i;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	for (i = 0; i < 64; i++) {
		if (snprintf(tmp, size, "%s/.khbpf-out.%d.%u", dir, (int)getpid(), i) >= (int)size)
			return -ENAMETOOLONG;
		if (!linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW))
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* The complete document under a temporary name in dir, in tmp. */
static int write_temp(const char *dir, char *tmp, size_t size, mode_t mode, output_fill_fn fill,
		      void *ctx)
{
	int fd, err;

	fd = open_unnamed(dir);
	if (fd >= 0) {
		err = fill_temp(fd, mode, fill, ctx);
		err = err ?: name_unnamed(fd, dir, tmp, size);
		close(fd);
		/* ENOENT: no /proc to name it through; write a named one instead. */
		if (err != -ENOENT)
			return err;
	} else if (fd != -EOPNOTSUPP) {
		return fd;
	}
	fd = make_temp(dir, tmp, size);
	if (fd < 0)
		return fd;
	err = fill_temp(fd, mode, fill, ctx);
	if (close(fd) && !err)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int output__write_with(const char *path, output_fill_fn fill, void *ctx,
		       const struct output_opts *opts)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	mode_t mode = opts && opts->mode ? opts->mode : 0644;
	int err;

	if (!path || !*path)
		return -EINVAL;
	if (!strcmp(path, "-"))
		return fill(STDOUT_FILENO, ctx);
	err = check_target(path);
	err = err ?: dir_of(path, dir, sizeof(dir));
	err = err ?: write_temp(dir, tmp, sizeof(tmp), mode, fill, ctx);
	if (err)
		return err;
	if (rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
		return err;
	}
	return fsync_dir(dir);
}

struct data_fill {
	const void *data;
	size_t len;
	bool newline;
};

/* The data, then a newline if asked for: the caller needs no copy to add it. */
static int fill_data(int fd, void *ctx)
{
	const struct data_fill *d = ctx;
	int err = output__write_all(fd, d->data, d->len);

	return err ?: d->newline ? output__write_all(fd, "\n", 1) : 0;
}

int output__write_file(const char *path, const void *data, size_t len,
		       const struct output_opts *opts)
{
	struct data_fill d = { .data = data, .len = len, .newline = opts && opts->newline };

	return output__write_with(path, fill_data, &d, opts);
}

int output__open_append(const char *path, mode_t mode)
{
	const int flags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
	struct stat st;
	int fd, err;

	if (!mode)
		mode = 0644;
	fd = open(path, flags | O_CREAT | O_EXCL, 0600);
	if (fd >= 0) {
		if (fchmod(fd, mode & 07777)) {
			err = -errno;
			close(fd);
			unlink(path);
			return err;
		}
	} else {
		if (errno != EEXIST)
			return -errno;
		/* O_NONBLOCK: a FIFO without a reader fails (ENXIO) instead of waiting. */
		fd = open(path, flags);
		if (fd < 0)
			return errno == ENXIO ? -EEXIST : -errno;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EEXIST;
		goto fail;
	}
	if (fcntl(fd, F_SETFL, O_APPEND)) {
		err = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}

int output__append(int fd, const void *data, size_t len)
{
	struct stat st;
	int err;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return output__write_all(fd, data, len);
	err = output__write_all(fd, data, len);
	/* O_APPEND and one writer: what follows st_size is this record's. */
	if (err && ftruncate(fd, st.st_size))
		return -errno;
	return err;
}

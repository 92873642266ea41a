// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output.h"

static int write_all(int fd, const void *data, size_t len)
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
	if (err)
		return err;
	fd = make_temp(dir, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	close(fd);
	unlink(tmp);
	return 0;
}

int output__write_file(const char *path, const void *data, size_t len,
		       const struct output_opts *opts)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	mode_t mode = opts && opts->mode ? opts->mode : 0644;
	int fd = -1, err = 0;

	if (!path || !*path)
		return -EINVAL;
	if (!strcmp(path, "-"))
		return write_all(STDOUT_FILENO, data, len);
	err = check_target(path);
	err = err ?: dir_of(path, dir, sizeof(dir));
	if (err)
		return err;
	fd = make_temp(dir, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	if (fchmod(fd, mode & 07777)) {
		err = -errno;
		goto cleanup;
	}
	err = write_all(fd, data, len);
	if (err)
		goto cleanup;
	if (fsync(fd)) {
		err = -errno;
		goto cleanup;
	}
	if (close(fd)) {
		fd = -1;
		err = -errno;
		goto cleanup;
	}
	fd = -1;
	if (rename(tmp, path)) {
		err = -errno;
		goto cleanup;
	}
	return fsync_dir(dir);

cleanup:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return err;
}

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

int output__write_file(const char *path, const void *data, size_t len,
		       const struct output_opts *opts)
{
	char tmp[PATH_MAX], dircopy[PATH_MAX];
	mode_t mode = opts && opts->mode ? opts->mode : 0644;
	const char *dir;
	struct stat st;
	int fd = -1, err = 0;

	if (!path || !*path)
		return -EINVAL;
	if (!strcmp(path, "-")) {
		return write_all(STDOUT_FILENO, data, len);
	}
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
		return -EEXIST;
	if (snprintf(dircopy, sizeof(dircopy), "%s", path) >= (int)sizeof(dircopy))
		return -ENAMETOOLONG;
	dir = dirname(dircopy);
	if (snprintf(tmp, sizeof(tmp), "%s/.khbpf-out.XXXXXX", dir) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;

	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
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

/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the libFuzzer harnesses: a private directory tree per
 * process for the readers that take a root directory, splitting one input
 * into parts, and a property check that aborts (a crash libFuzzer saves).
 */
#ifndef KHBPF_FUZZ_H
#define KHBPF_FUZZ_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/*
 * A broken property: print it and abort, so libFuzzer keeps the input.
 * Straight to fd 2: a harness may point stderr elsewhere.
 */
#define FUZZ_CHECK(cond)                                                                        \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			dprintf(STDERR_FILENO, "fuzz property failed at %s:%d: %s\n", __FILE__, \
				__LINE__, #cond);                                               \
			abort();                                                                \
		}                                                                               \
	} while (0)

static char fuzz_root[256];

static inline int fuzz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void fuzz_rm_root(void)
{
	if (fuzz_root[0])
		nftw(fuzz_root, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The process's private root directory, made once and removed at exit. */
static inline const char *fuzz_tmp_root(void)
{
	if (!fuzz_root[0]) {
		const char *tmp = getenv("TMPDIR");

		snprintf(fuzz_root, sizeof(fuzz_root), "%s/khbpf-fuzz-XXXXXX",
			 tmp && *tmp == '/' && strlen(tmp) < 200 ? tmp : "/tmp");
		if (!mkdtemp(fuzz_root)) {
			perror("mkdtemp");
			abort();
		}
		atexit(fuzz_rm_root);
	}
	return fuzz_root;
}

/* mkdir -p of root/rel's parent directories. */
static inline void fuzz_mkdirs(const char *root, const char *rel)
{
	char path[4096];
	char *p;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
}

/* Writes root/rel (directories made), or removes it when data is NULL. */
static inline void fuzz_put(const char *root, const char *rel, const void *data, size_t len)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (!data) {
		unlink(path);
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 && errno == ENOENT) {
		fuzz_mkdirs(root, rel);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	}
	if (fd < 0) {
		perror(path);
		abort();
	}
	while (len) {
		ssize_t n = write(fd, data, len);

		if (n <= 0) {
			perror(path);
			abort();
		}
		data = (const char *)data + n;
		len -= (size_t)n;
	}
	close(fd);
}

/* One part of an input split at NUL bytes: start and length. */
struct fuzz_part {
	const uint8_t *p;
	size_t len;
};

/* Splits data at NUL bytes into at most max parts; returns how many. */
static inline size_t fuzz_split(const uint8_t *data, size_t size, struct fuzz_part *parts,
				size_t max)
{
	size_t n = 0, start = 0, i;

	if (!max)
		return 0;
	for (i = 0; i <= size && n < max; i++) {
		if (i == size || (!data[i] && n + 1 < max)) {
			parts[n].p = data + start;
			parts[n].len = i - start;
			n++;
			start = i + 1;
		}
	}
	return n;
}

/* A NUL-terminated copy of len bytes (malloc'd; aborts when memory runs out). */
static inline char *fuzz_strndup(const uint8_t *p, size_t len)
{
	char *s = malloc(len + 1);

	if (!s)
		abort();
	memcpy(s, p, len);
	s[len] = '\0';
	return s;
}

/* Independent UTF-8 check (RFC 3629: no overlongs, surrogates or > U+10FFFF). */
static inline bool fuzz_utf8_valid(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		uint32_t cp;
		size_t n, k;

		if (u[i] < 0x80) {
			i++;
			continue;
		}
		if ((u[i] & 0xe0) == 0xc0) {
			n = 2;
			cp = u[i] & 0x1f;
		} else if ((u[i] & 0xf0) == 0xe0) {
			n = 3;
			cp = u[i] & 0x0f;
		} else if ((u[i] & 0xf8) == 0xf0) {
			n = 4;
			cp = u[i] & 0x07;
		} else {
			return false;
		}
		if (i + n > len)
			return false;
		for (k = 1; k < n; k++) {
			if ((u[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (u[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n;
	}
	return true;
}

/*
 * A metric name as the span annotations define it: kebab-case, 1 to 63
 * bytes (KHBPF_METRIC_MAX), no leading, trailing or doubled '-'. Written
 * here from docs/spans.md's rule, not with spanfind's own check.
 */
static inline bool fuzz_kebab(const char *m)
{
	size_t len = strnlen(m, 64), i;

	if (!len || len > 63 || m[0] == '-' || m[len - 1] == '-')
		return false;
	for (i = 0; i < len; i++) {
		if (m[i] == '-' && m[i + 1] == '-')
			return false;
		if (!((m[i] >= 'a' && m[i] <= 'z') || (m[i] >= '0' && m[i] <= '9') || m[i] == '-'))
			return false;
	}
	return true;
}

#endif /* KHBPF_FUZZ_H */

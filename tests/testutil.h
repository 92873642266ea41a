/* SPDX-License-Identifier: MIT */
/* Shared by the cmocka tests; include after <cmocka.h>. */
#ifndef KHBPF_TESTUTIL_H
#define KHBPF_TESTUTIL_H

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * A test that cannot run here: in CI (CI=true) that is a failure, since CI
 * runs as root on a BPF-capable kernel; elsewhere skip, saying why.
 */
#define require_or_skip(cond, reason)                                                   \
	do {                                                                            \
		if (!(cond)) {                                                          \
			const char *ci_ = getenv("CI");                                 \
			if (ci_ && !strcmp(ci_, "true"))                                \
				fail_msg("required in CI but unavailable: %s", reason); \
			fprintf(stderr, "SKIP %s: %s\n", __func__, reason);             \
			skip();                                                         \
		}                                                                       \
	} while (0)

/*
 * Throwaway fixture trees under /tmp for readers that take a root
 * directory. Mode 0755 so an unprivileged child can traverse it.
 */
static inline char *tree_new(const char *name)
{
	char *dir = malloc(PATH_MAX);

	assert_non_null(dir);
	snprintf(dir, PATH_MAX, "/tmp/khbpf-%s-XXXXXX", name);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	return dir;
}

static inline int tree_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void tree_free(char *dir)
{
	nftw(dir, tree_rm_entry, 64, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

/* Creates base/rel and its parents; a NULL text makes rel a directory. */
static inline void tree_put(const char *base, const char *rel, const char *text)
{
	char path[PATH_MAX], *p;
	FILE *f;

	assert_true(snprintf(path, sizeof(path), "%s/%s", base, rel) < (int)sizeof(path));
	for (p = path + strlen(base) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	if (!text) {
		assert_int_equal(mkdir(path, 0755), 0);
		return;
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

#endif /* KHBPF_TESTUTIL_H */

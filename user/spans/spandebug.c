// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <elfutils/libdwelf.h>
#include <zlib.h>

#include "lib/fsutil.h"
#include "spans/spandebug.h"

/* Longer build-ids than any linker makes (sha1: 20 bytes) are not looked up. */
#define BUILD_ID_MAX 64

/* A search for one object's debug file: what candidates must match, and the first refusal. */
struct search {
	struct elf_file *f;
	const char *root;
	pid_t pid;
	struct stat object_st;
	bool have_object_st;
	const void *build_id;
	size_t build_id_len;
	GElf_Word crc;
	char *why;
	size_t why_size;
	bool refused;
};

/* The first refusal is kept: the likeliest file (a --debug-dir's, or by build-id). */
static void refuse(struct search *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(struct search *s, const char *fmt, ...)
{
	va_list ap;

	if (s->refused)
		return;
	s->refused = true;
	va_start(ap, fmt);
	vsnprintf(s->why, s->why_size, fmt, ap);
	va_end(ap);
}

/* snprintf that says whether it all fit: a cut path names another file. */
static bool fits(char *out, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool fits(char *out, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, size, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < size;
}

/* The CRC32 of the whole file (zlib's is the one .gnu_debuglink holds), from libelf's image. */
static int file_crc(Elf *elf, GElf_Word *crc)
{
	size_t size, n;
	const char *raw = elf_rawfile(elf, &size);
	uLong c = crc32(0L, Z_NULL, 0);

	if (!raw)
		return -EINVAL;
	for (; size; raw += n, size -= n) {
		n = size < (1u << 30) ? size : (1u << 30);
		c = crc32(c, (const Bytef *)raw, (uInt)n);
	}
	*crc = (GElf_Word)c;
	return 0;
}

/*
 * One candidate, opened at open_path and named shown. 1 when its functions
 * were added; 0 when it is not there or was refused; -ENOMEM.
 */
static int try_file(struct search *s, const char *open_path, const char *shown, bool by_build_id)
{
	struct elf_file *d;
	char reason[256];
	const void *id;
	struct stat st;
	GElf_Word crc;
	ssize_t len;
	int err;

	if (stat(open_path, &st)) {
		if (errno != ENOENT && errno != ENOTDIR)
			refuse(s, "debug file %s was refused: %s", shown, strerror(errno));
		return 0;
	}
	/* A debuglink naming the object's own file name, in its own directory. */
	if (s->have_object_st && st.st_dev == s->object_st.st_dev &&
	    st.st_ino == s->object_st.st_ino)
		return 0;
	d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = elf_file__open(d, open_path, shown, reason, sizeof(reason));
	if (err) {
		refuse(s, "a debug file was refused: %s", reason);
		goto out;
	}
	if (by_build_id) {
		len = dwelf_elf_gnu_build_id(d->elf, &id);
		if (len != (ssize_t)s->build_id_len || memcmp(id, s->build_id, s->build_id_len)) {
			refuse(s, "debug file %s was refused: its build-id is not the object's",
			       shown);
			goto out;
		}
	} else {
		if (file_crc(d->elf, &crc)) {
			refuse(s, "debug file %s was refused: libelf cannot read it whole: %s",
			       shown, elf_errmsg(-1));
			goto out;
		}
		if (crc != s->crc) {
			refuse(s,
			       "debug file %s was refused: its CRC32 is %08x, the object's .gnu_debuglink says %08x",
			       shown, (unsigned int)crc, (unsigned int)s->crc);
			goto out;
		}
	}
	err = elf_file__add_debug(s->f, d, shown);
	if (!err)
		return 1;
	if (err == -ENOENT)
		refuse(s, "debug file %s was refused: it has no .symtab with functions", shown);
out:
	elf_file__close(d);
	free(d);
	return err == -ENOMEM ? err : 0;
}

/* A candidate in the target's root: path as the target sees it. */
static int try_target(struct search *s, const char *path, bool by_build_id)
{
	char open_path[PATH_MAX];
	int n;

	/* Not spanobjects__open_path: a debug file is never mapped, so no map_files. */
	if (s->pid)
		n = fsutil__path(open_path, sizeof(open_path), s->root, "/proc/%d/root%s",
				 (int)s->pid, path);
	else
		n = fsutil__path(open_path, sizeof(open_path), s->root, "%s", path);
	return n < 0 ? 0 : try_file(s, open_path, path, by_build_id);
}

/* The debuglink's name, when it is one: a path would reach outside the directories searched. */
static const char *debuglink_name(struct search *s, GElf_Word *crc)
{
	const char *link = dwelf_elf_gnu_debuglink(s->f->elf, crc);

	if (!link)
		return NULL;
	if (!*link || strchr(link, '/') || !strcmp(link, ".") || !strcmp(link, "..")) {
		refuse(s, "its .gnu_debuglink names '%.64s', which is not a file name", link);
		return NULL;
	}
	return link;
}

int spandebug__load(struct elf_file *f, const char *root, pid_t pid, const char *object,
		    const char *const *dirs, size_t nr_dirs, char *why, size_t size)
{
	struct search s = { .f = f, .root = root, .pid = pid, .why = why, .why_size = size };
	char id_rel[sizeof(".build-id/") + 2 * BUILD_ID_MAX + sizeof("/.debug")] = "";
	const char *slash = strrchr(object, '/'), *link;
	int dir_len = slash ? (int)(slash - object) : -1;
	char path[PATH_MAX];
	ssize_t len;
	size_t i, n, dlen;
	int ret = 0;

	*why = '\0';
	len = dwelf_elf_gnu_build_id(f->elf, &s.build_id);
	if (len >= 2 && len <= BUILD_ID_MAX) {
		const unsigned char *id = s.build_id;

		s.build_id_len = (size_t)len;
		n = (size_t)snprintf(id_rel, sizeof(id_rel), ".build-id/%02x/", id[0]);
		for (i = 1; i < s.build_id_len; i++)
			n += (size_t)snprintf(id_rel + n, sizeof(id_rel) - n, "%02x", id[i]);
		snprintf(id_rel + n, sizeof(id_rel) - n, ".debug");
	}
	link = debuglink_name(&s, &s.crc);
	if (!*id_rel && !link) {
		if (!s.refused)
			snprintf(why, size,
				 "it has no build-id or .gnu_debuglink to find a debug file by");
		return -ENOENT;
	}
	s.have_object_st = !fstat(f->fd, &s.object_st);

	for (i = 0; !ret && i < nr_dirs; i++) {
		for (dlen = strlen(dirs[i]); dlen && dirs[i][dlen - 1] == '/'; dlen--)
			;
		if (*id_rel && fits(path, sizeof(path), "%.*s/%s", (int)dlen, dirs[i], id_rel))
			ret = try_file(&s, path, path, true);
		if (!ret && link && dir_len >= 0 &&
		    fits(path, sizeof(path), "%.*s%.*s/%s", (int)dlen, dirs[i], dir_len, object,
			 link))
			ret = try_file(&s, path, path, false);
	}
	if (!ret && *id_rel && fits(path, sizeof(path), SPANDEBUG_SYSTEM_DIR "/%s", id_rel))
		ret = try_target(&s, path, true);
	if (!ret && link && dir_len >= 0 &&
	    fits(path, sizeof(path), "%.*s/%s", dir_len, object, link))
		ret = try_target(&s, path, false);
	if (!ret && link && dir_len >= 0 &&
	    fits(path, sizeof(path), "%.*s/.debug/%s", dir_len, object, link))
		ret = try_target(&s, path, false);
	if (!ret && link && dir_len >= 0 &&
	    fits(path, sizeof(path), SPANDEBUG_SYSTEM_DIR "%.*s/%s", dir_len, object, link))
		ret = try_target(&s, path, false);
	if (ret < 0)
		return ret;
	if (ret) {
		*why = '\0'; /* a refusal before the file used is no news */
		return 0;
	}
	if (!s.refused)
		snprintf(
			why, size,
			"no debug file of it was found (install its -dbgsym package, or give --debug-dir)");
	return -ENOENT;
}

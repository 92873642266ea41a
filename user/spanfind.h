/* SPDX-License-Identifier: MIT */
/*
 * Finding span probe sites in a target process: the .note.khbpf annotations
 * of include/khbpf/span.h in every object the process maps executable, and
 * the functions named by --span [OBJECT:]SYMBOL[=metric] requests. A site is
 * a (path, file offset) pair a uprobe attaches to, or an error saying why
 * that function cannot be probed.
 *
 * Site arrays belong to the caller: *sites and *nr start as NULL and 0 (or
 * an array these functions returned), sites are appended, and
 * spanfind__free releases them. Objects are read with libelf; only 64-bit
 * executables and shared objects are accepted.
 *
 * Bounds: at most SPANFIND_SITES_MAX sites per object in one call (notes of
 * one object, or the matches of one request in one object); the excess is
 * dropped and one more site, with err -E2BIG, says how many. A site is about
 * 8.5 KiB (two PATH_MAX paths), so a full object takes about 35 MiB. At most
 * SPANFIND_OBJECTS_MAX distinct mapped objects per process.
 */
#ifndef KHBPF_SPANFIND_H
#define KHBPF_SPANFIND_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <libelf.h>

/* Includes the NUL: a metric is kebab-case [a-z0-9]+(-[a-z0-9]+)*, at most 63 bytes. */
#define SPANFIND_METRIC_MAX 64
#define SPANFIND_SYMBOL_MAX 256
#define SPANFIND_SITES_MAX 4096
#define SPANFIND_OBJECTS_MAX 4096

struct span_site {
	/* Path as the target sees it (from /proc/PID/maps), e.g. /usr/lib/x.so. */
	char object[PATH_MAX];
	/* Path khbpf opens and attaches to: ROOT/proc/PID/root + object. */
	char open_path[PATH_MAX];
	/* "" when unknown: a stripped object without the function in .dynsym. */
	char symbol[SPANFIND_SYMBOL_MAX];
	char metric[SPANFIND_METRIC_MAX];
	uint64_t vaddr; /* link-time address */
	uint64_t offset; /* file offset for the uprobe */
	bool from_note; /* an annotation, not a --span request */
	int err; /* 0, or -errno: why this site cannot be attached */
	char reason[256]; /* when err != 0: one sentence naming object and symbol */
};

/*
 * A parsed --span [OBJECT:]SYMBOL[=metric]. object is NULL for the main
 * executable, metric NULL to derive one from each matched symbol's name.
 */
struct span_request {
	const char *object;
	const char *symbol;
	const char *metric;
};

/*
 * Parses arg into out, whose strings point into buf (strlen(arg) + 1 bytes
 * are enough). The first '=' starts the metric; the last ':' before it ends
 * OBJECT, so OBJECT may hold ':' but not '='. SYMBOL is a name or an
 * fnmatch(3) glob of [A-Za-z0-9_.$@*?[]!^-], at most 255 bytes; OBJECT is
 * non-empty when the ':' is there, below PATH_MAX and without control
 * characters. Returns 0; -EINVAL when malformed, -ENAMETOOLONG when buf is
 * too small; on error out and buf are untouched.
 */
int span_request__parse(const char *arg, struct span_request *out, char *buf, size_t buflen);

/*
 * Appends a site per span note of the ELF file open_path, naming it object.
 * A malformed note (wrong type, short descriptor, flags set, bad metric,
 * address outside every executable segment, annotated twice with different
 * metrics) becomes a site with err -EINVAL (-EEXIST for the last) and a
 * reason; the other notes are still read. An identical second note of one
 * function is dropped. Returns 0, also when there are no notes. When the
 * file cannot be read at all, one site with err and a reason is appended
 * and that err returned: open(2)'s -errno, -EISDIR for a directory,
 * -ENOEXEC when it is not a 64-bit ELF executable or shared object, -EINVAL
 * when it is cut short or libelf rejects it. -ENOMEM appends nothing.
 */
int spanfind__notes(const char *open_path, const char *object, struct span_site **sites,
		    size_t *nr);

/*
 * Appends a site per function (STT_FUNC or STT_GNU_IFUNC, defined, size >
 * 0) of .symtab and .dynsym whose name matches glob, one per address: of
 * aliases, the global one before weak before local, then the smallest
 * name. Sites are in address order. metric (NULL: derived from each name,
 * lowercased with every run of other characters made one '-') applies to
 * every match. An IFUNC's address is its resolver's. Returns 0 when
 * something matched; -ENOENT with one error site saying so (and whether the
 * object is stripped) when nothing did; file errors as spanfind__notes;
 * -EINVAL (nothing appended) for a NULL or empty glob or an invalid metric.
 */
int spanfind__symbols(const char *open_path, const char *object, const char *glob,
		      const char *metric, struct span_site **sites, size_t *nr);

/*
 * Link-time address to file offset through the executable PT_LOAD segments
 * (the address must be within p_filesz). -ENOENT when no such segment holds
 * it, -EINVAL for a NULL elf or unreadable program headers.
 */
int spanfind__vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *offset);

/*
 * Every distinct file-backed path mapped executable by pid, from
 * root/proc/PID/maps, in order of first appearance and spelled as the
 * kernel prints it (a " (deleted)" suffix included). Open one through
 * root/proc/PID/root + path, so objects of another mount namespace work.
 * Returns 0; -ESRCH when the process does not exist, -EACCES, -EINVAL for a
 * malformed line, -E2BIG beyond SPANFIND_OBJECTS_MAX, -ENOMEM. On error
 * *objects is NULL and *nr 0. Free with spanfind__free_objects.
 */
int spanfind__mapped_objects(const char *root, pid_t pid, char ***objects, size_t *nr);
void spanfind__free_objects(char **objects, size_t nr);

/*
 * The whole discovery for pid: the notes of every mapped object (unless
 * no_annotations; objects that are not ELF files are skipped, unreadable
 * ones give an error site), then each request. A request's OBJECT is:
 * absent, the main executable (the mapped object that is root/proc/PID/exe);
 * an absolute path, that path in the target's root, mapped yet or not;
 * another path with a '/', the mapped objects whose path ends with it at a
 * '/'; a name without '/', the mapped objects with that basename, or else
 * those whose basename starts with it and a '.' ("libz.so.1" finds
 * libz.so.1.2.13). A request that resolves to nothing gives one error site:
 * not mapped, not an ELF file, no such symbol, stripped without it. Sites
 * equal to an earlier one (object, offset and metric) are dropped. Returns
 * 0 with every site appended; -ESRCH and the other errors of
 * spanfind__mapped_objects, -EINVAL for a request without a symbol or with
 * an invalid metric, -ENOMEM; on error nothing is appended.
 */
int spanfind__discover(const char *root, pid_t pid, const struct span_request *reqs, size_t nr_reqs,
		       bool no_annotations, struct span_site **sites, size_t *nr);

/*
 * As spanfind__discover, for a command not started yet (run mode): objects
 * are host paths, objects[0] the executable (what a request without OBJECT
 * means), and none need be mapped by anyone.
 */
/*
 * As spanfind__discover for pids[0], then, for each other process, the
 * sites it adds in objects none of the ones before it maps (annotations,
 * and the requests it resolves; one it cannot resolve was said for the
 * first). A set's processes: sites attached per file cover them all.
 */
int spanfind__discover_pids(const char *root, const pid_t *pids, size_t nr_pids,
			    const struct span_request *reqs, size_t nr_reqs, bool no_annotations,
			    struct span_site **sites, size_t *nr);
int spanfind__discover_list(const char *root, char **objects, size_t nr_objects,
			    const struct span_request *reqs, size_t nr_reqs, bool no_annotations,
			    struct span_site **sites, size_t *nr);

/*
 * The absolute executable path exe, then the shared libraries its dynamic
 * loader will map at start, as that loader resolves them (`PT_INTERP
 * --list exe`; only a root-owned interpreter nobody else can write is
 * run). A static executable or a script gives exe alone. Libraries the
 * program dlopen()s later are not known. Returns 0; -EPERM (untrusted
 * interpreter), -ECHILD (the loader failed), -EINVAL, -ENOMEM, with a
 * reason; then *objects is NULL. Free with spanfind__free_objects.
 */
int spanfind__needed_objects(const char *exe, char ***objects, size_t *nr, char *reason,
			     size_t size);

void spanfind__free(struct span_site *sites, size_t nr);

#endif /* KHBPF_SPANFIND_H */

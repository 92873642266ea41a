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
 * 13 KiB (three PATH_MAX paths), so a full object takes about 52 MiB. At most
 * SPANFIND_OBJECTS_MAX distinct mapped objects per process.
 */
#ifndef KHBPF_SPANFIND_H
#define KHBPF_SPANFIND_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "spans/spanelf.h"
#include "spans/spanobjects.h"
#include "spans/spansite.h"

/* How discovery looks; a NULL opts is all zero. */
struct spanfind_opts {
	bool no_annotations; /* ignore .note.khbpf */
	/*
	 * --debug-dir: host directories searched first for the debug file of
	 * a stripped object a --span request looks in (spandebug.h).
	 */
	const char *const *debug_dirs;
	size_t nr_debug_dirs;
};

/*
 * The whole discovery for pid: the notes of every mapped object (unless
 * opts->no_annotations; objects that are not ELF files are skipped, unreadable
 * ones give an error site), then each request. A request's OBJECT is:
 * absent, the main executable (the mapped object that is root/proc/PID/exe);
 * an absolute path, that path in the target's root, mapped yet or not;
 * another path with a '/', the mapped objects whose path ends with it at a
 * '/'; a name without '/', the mapped objects with that basename, or else
 * those whose basename starts with it and a '.' ("libz.so.1" finds
 * libz.so.1.2.13). In an object without .symtab (stripped), a request
 * looks in its debug file too, when there is one (spandebug__load), and a
 * site of a function only that file has names it in symbols_from. A
 * request that resolves to nothing gives one error site: not mapped, not
 * an ELF file, no such symbol, stripped without it (and what became of its
 * debug file). Each site names its request (request, 1-based; 0 for a
 * note); an error site whose request names what is not there (no such
 * object, no such function in an object whose .symtab or debug file names
 * them all, no such probe) is absent. Sites
 * equal to an earlier one (object, offset and metric) are dropped. Returns
 * 0 with every site appended; -ESRCH and the other errors of
 * spanfind__mapped_objects, -EINVAL for a request without a symbol or with
 * an invalid metric, -ENOMEM; on error nothing is appended.
 */
int spanfind__discover(const char *root, pid_t pid, const struct span_request *reqs, size_t nr_reqs,
		       const struct spanfind_opts *opts, struct span_site **sites, size_t *nr);

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
			    const struct span_request *reqs, size_t nr_reqs,
			    const struct spanfind_opts *opts, struct span_site **sites, size_t *nr);
int spanfind__discover_list(const char *root, char **objects, size_t nr_objects,
			    const struct span_request *reqs, size_t nr_reqs,
			    const struct spanfind_opts *opts, struct span_site **sites, size_t *nr);

#endif /* KHBPF_SPANFIND_H */

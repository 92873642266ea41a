// SPDX-License-Identifier: MIT
/*
 * spanfind__discover: the annotations of every object, then each --span
 * request resolved to the objects it names. Reading one ELF file is
 * spanelf's; finding and opening a process's objects is spanobjects'.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/fsutil.h"
#include "spans/spandebug.h"
#include "spans/spanelf.h"
#include "spans/spanfind.h"
#include "spans/spanobjects.h"
#include "spans/spanusdt.h"

/* Index of the mapped object that is the process's executable, or -1. */
static ssize_t main_object(const char *root, pid_t pid, char **objects, size_t nr)
{
	char path[PATH_MAX];
	struct stat exe, st;
	size_t i;

	if (!pid)
		return nr ? 0 : -1; /* the command comes first in its list */
	if (fsutil__path(path, sizeof(path), root, "/proc/%d/exe", (int)pid) < 0 ||
	    stat(path, &exe))
		return -1;
	for (i = 0; i < nr; i++) {
		if (spanobjects__open_path(path, root, pid, objects[i]) || stat(path, &st))
			continue;
		if (st.st_dev == exe.st_dev && st.st_ino == exe.st_ino)
			return (ssize_t)i;
	}
	return -1;
}

/*
 * The sites found in f from vec's first on keep which file it is: a site
 * found again at a later exec is known by it, not by its path then (a
 * container's root is gone with its processes).
 */
static void sites_of_file(struct site_vec *vec, size_t first, const struct elf_file *f)
{
	size_t i;

	for (i = first; i < vec->n; i++)
		if (!vec->v[i].err)
			vec->v[i].file = f->id;
}

static int annotations_of(struct site_vec *vec, const char *root, pid_t pid, const char *object)
{
	char open_path[PATH_MAX], reason[256];
	size_t first = vec->n;
	struct elf_file f;
	int err;

	if (spanobjects__open_path(open_path, root, pid, object)) {
		snprintf(reason, sizeof(reason), "the path of %s in process %d is too long", object,
			 (int)pid);
		err = site_vec__push_file_error(vec, object, "", NULL, NULL, true, -ENAMETOOLONG,
						reason);
		return err == -ENOMEM ? err : 0;
	}
	err = elf_file__open(&f, open_path, object, reason, sizeof(reason));
	/* Only an ELF file can carry notes: nothing is missed in one that is not. */
	if (err == -ENOEXEC)
		return 0;
	if (err) {
		err = site_vec__push_file_error(vec, object, open_path, NULL, NULL, true, err,
						reason);
		return err == -ENOMEM ? err : 0;
	}
	err = elf_file__load_syms(&f);
	if (!err)
		err = spanelf__notes_scan(vec, &f, object, open_path);
	sites_of_file(vec, first, &f);
	elf_file__close(&f);
	return err;
}

static bool object_matches(const char *mapped, const char *want, bool prefix)
{
	const char *base = strrchr(mapped, '/');
	size_t len = strlen(want), mlen = strlen(mapped);

	base = base ? base + 1 : mapped;
	if (want[0] == '/')
		return !strcmp(mapped, want);
	if (strchr(want, '/'))
		return mlen > len && !strcmp(mapped + mlen - len, want) &&
		       mapped[mlen - len - 1] == '/';
	if (prefix)
		return !strncmp(base, want, len) && base[len] == '.';
	return !strcmp(base, want);
}

/* What one request found in one object, for the error when nothing matched anywhere. */
struct request_result {
	size_t matched;
	bool opened, has_symtab;
	char open_path[PATH_MAX];
	/* Stripped: the debug file read too, or why none was. */
	char debug_path[PATH_MAX];
	char debug_why[320];
};

/* Sites of one request in one object; file errors become error sites. */
static int request_in(struct site_vec *vec, const char *root, pid_t pid, const char *object,
		      const struct span_request *req, const struct spanfind_opts *opts,
		      struct request_result *res)
{
	char reason[256];
	size_t first = vec->n;
	struct elf_file f;
	int err;

	res->matched = 0;
	res->opened = false;
	res->debug_path[0] = '\0';
	res->debug_why[0] = '\0';
	if (spanobjects__open_path(res->open_path, root, pid, object)) {
		snprintf(reason, sizeof(reason), "the path of %s in process %d is too long", object,
			 (int)pid);
		err = site_vec__push_file_error(vec, object, "", req->symbol, req->metric, false,
						-ENAMETOOLONG, reason);
		return err == -ENOMEM ? err : 0;
	}
	err = elf_file__open(&f, res->open_path, object, reason, sizeof(reason));
	if (err) {
		err = site_vec__push_file_error(vec, object, res->open_path, req->symbol,
						req->metric, false, err, reason);
		return err == -ENOMEM ? err : 0;
	}
	res->opened = true;
	if (req->provider) {
		elf_file__close(&f);
		err = spanusdt__scan(vec, object, res->open_path, req, &res->matched, reason,
				     sizeof(reason));
		sites_of_file(vec, first, &f);
		if (err && err != -ENOMEM)
			err = site_vec__push_file_error(vec, object, res->open_path, req->symbol,
							req->metric, false, err, reason);
		return err == -ENOMEM ? err : 0;
	}
	err = elf_file__load_syms(&f);
	/* Stripped: its static functions, and maybe the one asked for, are in a debug file. */
	if (!err && !f.has_symtab) {
		err = spandebug__load(&f, root, pid, object, opts->debug_dirs, opts->nr_debug_dirs,
				      res->debug_why, sizeof(res->debug_why));
		if (!err)
			spansite__copy_str(res->debug_path, sizeof(res->debug_path), f.debug_path);
		else if (err == -ENOENT)
			err = 0;
	}
	if (!err)
		err = spanelf__symbols_scan(vec, &f, object, res->open_path, req->symbol,
					    req->metric, &res->matched);
	res->has_symtab = f.has_symtab;
	sites_of_file(vec, first, &f);
	elf_file__close(&f);
	return err;
}

/* No function matched in object: what its tables and its debug file (res) said. */
static int request_not_found(struct site_vec *vec, const char *object,
			     const struct request_result *res, const struct span_request *req)
{
	struct span_site *s;
	int err;

	err = site_vec__push_not_found(vec, res->has_symtab, object, res->open_path, req->symbol,
				       req->metric);
	if (err)
		return err;
	s = &vec->v[vec->n - 1];
	/*
	 * Its .symtab, or a stripped object's debug file, names every function:
	 * the request is wrong. Stripped without one, a static function may be
	 * there unnamed: the site fails, saying what would name it.
	 */
	s->absent = res->has_symtab || res->debug_path[0];
	if (res->has_symtab)
		return 0;
	if (res->debug_path[0])
		span_site__fail(s, -ENOENT,
				"no function of %s or of its debug file %s matches '%s'", object,
				res->debug_path, req->symbol);
	else
		span_site__fail(
			s, -ENOENT,
			"%s is stripped (no .symtab), no function in its .dynsym matches '%s', and %s",
			object, req->symbol, res->debug_why);
	return 0;
}

/*
 * Marks the mapped objects a request names (see spanfind__discover); returns
 * how many. A USDT pair without OBJECT looks in every object (all_objects).
 */
static size_t request_objects(char **objects, size_t nr, ssize_t main_idx, const char *want,
			      bool all_objects, bool *match)
{
	bool prefix = false;
	size_t i, found;

	for (;;) {
		for (i = 0, found = 0; i < nr; i++) {
			match[i] = want	       ? object_matches(objects[i], want, prefix) :
				   all_objects ? true :
						 (ssize_t)i == main_idx;
			found += match[i];
		}
		if (found || prefix || !want || strchr(want, '/'))
			return found;
		prefix = true;
	}
}

/* Whether an object already said what is wrong with a USDT request (one probe of two). */
static bool usdt_said(const struct site_vec *vec, const struct span_request *req)
{
	size_t i;

	if (req->count)
		return false;
	for (i = 0; i < vec->n; i++)
		if (vec->v[i].err && vec->v[i].kind != SPAN_SITE_FUNCTION &&
		    !strcmp(vec->v[i].metric, req->metric))
			return true;
	return false;
}

/*
 * Neither probe of a pair anywhere it looked: object, or (NULL) every mapped
 * object of pid (0: the command's objects, run).
 */
static int usdt_not_found(struct site_vec *vec, const char *object, const char *open_path,
			  const struct span_request *req, pid_t pid)
{
	const char *list = pid ? "`khbpf list --usdt --pid PID`" : "`khbpf list --usdt CMD`";
	const char *whose = pid ? "the target" : "the command";

	struct span_site *s =
		site_vec__push(vec, object ? object : "", object ? open_path : "", false);

	if (!s)
		return -ENOMEM;
	s->absent = true;
	spansite__copy_str(s->symbol, sizeof(s->symbol), req->symbol);
	if (req->count) {
		s->kind = SPAN_SITE_USDT_COUNT;
		if (object)
			span_site__fail(
				s, -ENOENT,
				"%s has no USDT probe matching %s:%s (`khbpf list --usdt %s` lists those it has)",
				object, req->provider, req->start, object);
		else
			span_site__fail(
				s, -ENOENT,
				"no object of %s has a USDT probe matching %s:%s (%s lists those it has)",
				whose, req->provider, req->start, list);
		return 0;
	}
	spansite__copy_str(s->metric, sizeof(s->metric), req->metric);
	s->kind = SPAN_SITE_USDT_START;
	if (object)
		span_site__fail(
			s, -ENOENT,
			"%s has no USDT probe %s:%s or %s:%s (`khbpf list --usdt %s` lists those it has)",
			object, req->provider, req->start, req->provider, req->done, object);
	else
		span_site__fail(
			s, -ENOENT,
			"no object of %s has the USDT probe %s:%s or %s:%s (%s lists those it has)",
			whose, req->provider, req->start, req->provider, req->done, list);
	return 0;
}

static int resolve_request(struct site_vec *vec, const char *root, pid_t pid, char **objects,
			   size_t nr, ssize_t main_idx, const struct span_request *req,
			   const struct spanfind_opts *opts)
{
	struct request_result res, last = { 0 };
	const char *want = req->object, *last_obj = NULL;
	size_t i, found, total = 0, first = vec->n;
	struct span_site *s;
	bool *match;
	int err = 0;

	match = calloc(nr ? nr : 1, sizeof(*match));
	if (!match)
		return -ENOMEM;
	found = request_objects(objects, nr, main_idx, want, req->provider != NULL, match);
	if (!found && !want) {
		s = site_vec__push(vec, "", "", false);
		if (!s) {
			err = -ENOMEM;
			goto out;
		}
		spansite__copy_str(s->symbol, sizeof(s->symbol), req->symbol);
		span_site__fail(
			s, -ENOENT,
			"the main executable of process %d is not among its mapped objects, so '%s' cannot be looked up",
			(int)pid, req->symbol);
		goto out;
	}
	/* An absolute path need not be mapped yet: a uprobe waits for its inode. */
	if (!found && want[0] == '/') {
		err = request_in(vec, root, pid, want, req, opts, &last);
		total = last.matched;
		last_obj = want;
		/* No such file where the target looks: the path is wrong. */
		if (!err && !last.opened && vec->n > first &&
		    (vec->v[vec->n - 1].err == -ENOENT || vec->v[vec->n - 1].err == -ENOTDIR))
			vec->v[vec->n - 1].absent = true;
	} else if (!found) {
		s = site_vec__push(vec, want, "", false);
		if (!s) {
			err = -ENOMEM;
			goto out;
		}
		s->absent = true;
		spansite__copy_str(s->symbol, sizeof(s->symbol), req->symbol);
		if (req->metric)
			spansite__copy_str(s->metric, sizeof(s->metric), req->metric);
		if (pid)
			span_site__fail(
				s, -ENOENT,
				"%s is not mapped by process %d, so '%s' cannot be probed there",
				want, (int)pid, req->symbol);
		else
			span_site__fail(
				s, -ENOENT,
				"%s is not among the command's libraries as ld.so resolves them (a library it dlopen()s later is not known before it runs; give its path or use `attach`), so '%s' cannot be probed there",
				want, req->symbol);
		goto out;
	}
	for (i = 0; i < nr && !err; i++) {
		if (!match[i])
			continue;
		err = request_in(vec, root, pid, objects[i], req, opts, &res);
		total += res.matched;
		if (res.opened) {
			last = res;
			last_obj = objects[i];
		}
	}
	/* One error for the request, whichever objects it looked in. */
	if (!err && !total && last.opened && req->provider && !usdt_said(vec, req))
		err = usdt_not_found(vec, want ? last_obj : NULL, last.open_path, req, pid);
	else if (!err && !total && last.opened && !req->provider)
		err = request_not_found(vec, last_obj, &last, req);
out:
	/* A USDT request's file errors are sites of its kind too. */
	for (i = first; req->provider && i < vec->n; i++)
		if (vec->v[i].kind == SPAN_SITE_FUNCTION)
			vec->v[i].kind = req->count ? SPAN_SITE_USDT_COUNT : SPAN_SITE_USDT_START;
	free(match);
	return err;
}

static int requests_valid(const struct span_request *reqs, size_t nr_reqs)
{
	size_t i;

	for (i = 0; i < nr_reqs; i++)
		if (!reqs[i].symbol || !*reqs[i].symbol ||
		    (reqs[i].metric && !spansite__metric_valid(reqs[i].metric)) ||
		    (reqs[i].object && !*reqs[i].object) ||
		    (reqs[i].provider && !reqs[i].count &&
		     (!reqs[i].start || !reqs[i].done || !reqs[i].metric)) ||
		    (reqs[i].count && (!reqs[i].provider || !reqs[i].start)))
			return -EINVAL;
	return 0;
}

/* Notes of every object, then each request among them; pid 0: host paths. */
static int discover_in(const char *root, pid_t pid, char **objects, size_t nr_objects,
		       const struct span_request *reqs, size_t nr_reqs,
		       const struct spanfind_opts *opts, struct span_site **sites, size_t *nr)
{
	struct site_vec vec = { 0 };
	ssize_t main_idx;
	size_t i;
	int err = 0;

	for (i = 0; !opts->no_annotations && i < nr_objects; i++) {
		err = annotations_of(&vec, root, pid, objects[i]);
		if (err)
			goto out;
	}
	main_idx = main_object(root, pid, objects, nr_objects);
	for (i = 0; i < nr_reqs; i++) {
		size_t first = vec.n, j;

		err = resolve_request(&vec, root, pid, objects, nr_objects, main_idx, &reqs[i],
				      opts);
		if (err)
			goto out;
		for (j = first; j < vec.n; j++)
			vec.v[j].request = (uint32_t)i + 1;
	}
	err = site_vec__hand_over(&vec, sites, nr);
out:
	free(vec.v);
	return err;
}

static const struct spanfind_opts default_opts;

int spanfind__discover(const char *root, pid_t pid, const struct span_request *reqs, size_t nr_reqs,
		       const struct spanfind_opts *opts, struct span_site **sites, size_t *nr)
{
	char **objects = NULL;
	size_t nr_objects = 0;
	int err;

	if (!sites || !nr || (nr_reqs && !reqs) || pid <= 0)
		return -EINVAL;
	opts = opts ?: &default_opts;
	err = requests_valid(reqs, nr_reqs);
	err = err ?: spanfind__mapped_objects(root, pid, &objects, &nr_objects);
	if (err)
		return err;
	err = discover_in(root, pid, objects, nr_objects, reqs, nr_reqs, opts, sites, nr);
	spanfind__free_objects(objects, nr_objects);
	return err;
}

static bool site_known(const struct span_site *v, size_t n, const struct span_site *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].offset == s->offset && !strcmp(v[i].object, s->object) &&
		    !strcmp(v[i].metric, s->metric))
			return true;
	return false;
}

int spanfind__discover_pids(const char *root, const pid_t *pids, size_t nr_pids,
			    const struct span_request *reqs, size_t nr_reqs,
			    const struct spanfind_opts *opts, struct span_site **sites, size_t *nr)
{
	char **seen = NULL, **objects = NULL, **fresh, **more_seen;
	size_t nr_seen = 0, nr_objects = 0, nr_fresh, i, j, k;
	struct span_site *more = NULL, *grown;
	size_t nr_more = 0;
	int err;

	if (!nr_pids)
		return -EINVAL;
	opts = opts ?: &default_opts;
	err = spanfind__discover(root, pids[0], reqs, nr_reqs, opts, sites, nr);
	if (err)
		return err;
	err = spanfind__mapped_objects(root, pids[0], &seen, &nr_seen);
	for (i = 1; !err && i < nr_pids; i++) {
		/* A process gone meanwhile, or unreadable, adds nothing. */
		if (spanfind__mapped_objects(root, pids[i], &objects, &nr_objects))
			continue;
		fresh = calloc(nr_objects + 1, sizeof(*fresh));
		if (!fresh) {
			err = -ENOMEM;
			break;
		}
		for (j = 0, nr_fresh = 0; j < nr_objects; j++) {
			for (k = 0; k < nr_seen && strcmp(seen[k], objects[j]); k++)
				;
			if (k == nr_seen)
				fresh[nr_fresh++] = objects[j];
		}
		if (nr_fresh && !discover_in(root, pids[i], fresh, nr_fresh, reqs, nr_reqs, opts,
					     &more, &nr_more)) {
			/* Only what it adds: a request it cannot resolve was said for the first. */
			for (j = 0; j < nr_more && !err; j++) {
				if (more[j].err || site_known(*sites, *nr, &more[j]))
					continue;
				grown = realloc(*sites, (*nr + 1) * sizeof(*grown));
				if (!grown) {
					err = -ENOMEM;
					break;
				}
				*sites = grown;
				grown[(*nr)++] = more[j];
			}
			spanfind__free(more, nr_more);
			more = NULL;
			nr_more = 0;
		}
		/* Its objects are seen now: the array takes them over, the rest are freed. */
		more_seen = realloc(seen, (nr_seen + nr_fresh + 1) * sizeof(*more_seen));
		if (!more_seen) {
			err = -ENOMEM;
		} else {
			seen = more_seen;
			for (j = 0; j < nr_fresh; j++)
				seen[nr_seen++] = fresh[j];
		}
		for (j = 0; j < nr_objects; j++) {
			for (k = 0; k < nr_fresh && fresh[k] != objects[j]; k++)
				;
			if (k == nr_fresh || err)
				free(objects[j]);
		}
		free(objects);
		objects = NULL;
		free(fresh);
	}
	spanfind__free_objects(seen, nr_seen);
	return err;
}

int spanfind__discover_list(const char *root, char **objects, size_t nr_objects,
			    const struct span_request *reqs, size_t nr_reqs,
			    const struct spanfind_opts *opts, struct span_site **sites, size_t *nr)
{
	int err;

	if (!sites || !nr || (nr_reqs && !reqs) || !nr_objects)
		return -EINVAL;
	err = requests_valid(reqs, nr_reqs);
	return err   ?:
		       discover_in(root, 0, objects, nr_objects, reqs, nr_reqs,
				   opts ?: &default_opts, sites, nr);
}

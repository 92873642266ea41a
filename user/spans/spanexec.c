// SPDX-License-Identifier: MIT
/*
 * Span sites of binaries a set's processes exec during the window: a
 * process that execs a binary none of the set's objects was gets its sites
 * (its annotations, and the --span requests it resolves) in its executable
 * and the libraries it needs found and attached, once per object, for
 * every process, as the exec is reported (set_events). Calls it makes
 * before that are not measured: each such exec is counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "spans/spanrun.h"
#include "spans/spankeys.h"

static bool was_searched(const struct span_run *r, const char *object)
{
	size_t i;

	for (i = 0; i < r->nr_searched; i++)
		if (!strcmp(r->searched[i], object))
			return true;
	return false;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Grows the site arrays by n; 0 or -ENOMEM (nothing changed). */
static int grow_sites(struct span_run *r, size_t n)
{
	size_t total = r->nr_sites + n;
	struct span_site *sites = realloc(r->sites, total * sizeof(*sites));
	uint32_t *metric, *pid;
	uint64_t *delay;

	if (!sites)
		return -ENOMEM;
	r->sites = sites;
	metric = realloc(r->site_metric, total * sizeof(*metric));
	if (!metric)
		return -ENOMEM;
	r->site_metric = metric;
	pid = realloc(r->site_exec_pid, total * sizeof(*pid));
	if (!pid)
		return -ENOMEM;
	r->site_exec_pid = pid;
	delay = realloc(r->site_exec_delay_ns, total * sizeof(*delay));
	if (!delay)
		return -ENOMEM;
	r->site_exec_delay_ns = delay;
	return 0;
}

/*
 * What the process runs: its executable (a script's interpreter), else the
 * path it exec'd when absolute (in its root: a container's is held open).
 */
static bool exe_of(const struct khbpf_exec_event *e, char *exe, size_t size)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%u/exe", e->pid);
	n = readlink(link, exe, size - 1);
	if (n > 0) {
		exe[n] = '\0';
		return true;
	}
	if (e->path[0] != '/')
		return false;
	snprintf(exe, size, "%s", e->path);
	return true;
}

/*
 * Whether two sites' files are one: the same device and inode as read
 * when each was found (not by path now: a container's root is gone with
 * its processes); or, both on overlayfs, the same inode below, size and
 * modification time (each overlay mount is a device of its own).
 */
static bool same_file(const struct span_file_id *a, const struct span_file_id *b)
{
	if (!a->ino || a->ino != b->ino)
		return false;
	if (a->dev == b->dev)
		return true;
	return a->overlay && b->overlay && a->size == b->size && a->mtime_ns == b->mtime_ns;
}

/* A site already attached: the same file, offset, metric and role. */
static bool site_attached(const struct span_run *r, const struct span_site *s)
{
	size_t i;

	for (i = 0; i < r->nr_sites; i++) {
		const struct span_site *t = &r->sites[i];

		if (!t->err && t->offset == s->offset && t->kind == s->kind &&
		    same_file(&t->file, &s->file) && !strcmp(t->metric, s->metric))
			return true;
	}
	return false;
}

void span_run__on_exec(void *ctx, const struct khbpf_exec_event *e)
{
	struct span_run *r = ctx;
	char exe[PATH_MAX], key[PATH_MAX + 64], **objects = NULL, **fresh, reason[256], root[64];
	bool foreign;
	struct span_site *found = NULL;
	struct sched_span_site *v;
	size_t nr_objects = 0, nr_fresh = 0, nr_found = 0, i, n = 0, nv = 0, first;
	uint64_t now;
	int err, rootfd = -1;

	/*
	 * A process of another mount namespace (a container) sees other files
	 * at these paths: its executable is read through /proc/PID/root, and
	 * the libraries its own loader would map are not known here (the
	 * host's loader would resolve the host's): they are not searched,
	 * counted in span_exec_libraries_unsearched. Requests naming an
	 * absolute OBJECT are resolved in its root all the same. Which
	 * namespace is the one the exec ran in (the event's), not /proc's
	 * now: the process may be gone.
	 */
	foreign = e->mnt_ns != r->mnt_ns;
	if (foreign)
		r->exec_libraries_unsearched++;
	if (!r->coll) {
		r->exec_search_errors++;
		return;
	}
	/*
	 * A container's root is held open for the search: its process may end
	 * meanwhile, and its files are read all the same. One already gone
	 * took its root with it: its executable is unreadable.
	 */
	if (foreign) {
		snprintf(root, sizeof(root), "/proc/%u/root", e->pid);
		rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rootfd < 0) {
			r->exec_search_errors++;
			return;
		}
		snprintf(root, sizeof(root), "/proc/self/fd/%d", rootfd);
	}
	if (!exe_of(e, exe, sizeof(exe))) {
		r->exec_search_errors++;
		goto out;
	}
	/*
	 * Another root's path names another file, and its absolute OBJECTs
	 * are its own: searched once per namespace (by its id: an nsfs inode
	 * number is reused once its namespace is gone) and path; at every exec
	 * where the kernel's BTF has no such id.
	 */
	if (foreign)
		snprintf(key, sizeof(key), "mnt:%llu:%s", (unsigned long long)e->mnt_ns_id, exe);
	if (foreign ? e->mnt_ns_id && was_searched(r, key) : was_searched(r, exe))
		goto out;
	if (!foreign &&
	    spanfind__needed_objects(exe, &objects, &nr_objects, reason, sizeof(reason))) {
		/* The executable first: a --span without an object names a function of it. */
		nr_objects = 0;
	}
	fresh = calloc(nr_objects + 1, sizeof(*fresh));
	if (!fresh) {
		spanfind__free_objects(objects, nr_objects);
		goto out;
	}
	fresh[nr_fresh++] = exe;
	for (i = 0; i < nr_objects; i++)
		if (strcmp(objects[i], exe) && !was_searched(r, objects[i]))
			fresh[nr_fresh++] = objects[i];
	err = spanfind__discover_list(foreign ? root : "/", fresh, nr_fresh, r->reqs, r->nr_reqs,
				      &r->find, &found, &nr_found);
	if (!foreign || e->mnt_ns_id)
		span_run__searched(r, foreign ? key : exe);
	for (i = 1; i < nr_fresh; i++)
		span_run__searched(r, fresh[i]);
	free(fresh);
	spanfind__free_objects(objects, nr_objects);
	/*
	 * What it could not resolve was said at the start; only what it adds is
	 * kept: not a site attached already (a request naming an absolute
	 * OBJECT resolves to the same file at every exec).
	 */
	for (i = 0; !err && i < nr_found; i++) {
		if (!found[i].err && site_attached(r, &found[i]))
			found[i].err = -EEXIST;
		n += !found[i].err;
	}
	if (err || !n || grow_sites(r, n)) {
		spanfind__free(found, nr_found);
		goto out;
	}
	v = calloc(n, sizeof(*v));
	if (!v) {
		spanfind__free(found, nr_found);
		goto out;
	}
	first = r->nr_sites;
	for (i = 0, n = 0; i < nr_found; i++) {
		uint32_t metric;

		if (found[i].err || span_run__metric_index(r, found[i].metric, &metric))
			continue;
		r->sites[first + n] = found[i];
		r->site_metric[first + n] = metric;
		r->site_exec_pid[first + n] = e->pid;
		r->site_exec_delay_ns[first + n] = 0;
		/* A site whose key cannot be read is not attached (its reason says why). */
		spankeys__site(&r->keys, &r->sites[first + n], metric, r->coll);
		if (!r->sites[first + n].err)
			v[nv++] = span_run__collector_site(&r->sites[first + n], metric);
		n++;
	}
	spanfind__free(found, nr_found);
	r->nr_sites += n;
	err = nv ? sched_collector__attach_spans(r->coll, v, nv, -1) : 0;
	now = mono_ns();
	for (i = 0, nv = 0; i < n; i++) {
		struct span_site *s = &r->sites[first + i];

		if (s->err)
			continue;
		r->site_exec_delay_ns[first + i] = now > e->ns ? now - e->ns : 0;
		if (err < 0 || v[nv++].err) {
			s->err = err < 0 ? err : v[nv - 1].err;
			snprintf(s->reason, sizeof(s->reason),
				 "%.100s: cannot attach uprobes at offset 0x%llx: %.60s", s->object,
				 (unsigned long long)s->offset, strerror(-s->err));
			continue;
		}
		r->nr_attached++;
	}
	if (err > 0)
		r->execs_late++;
	free(v);
out:
	if (rootfd >= 0)
		close(rootfd);
}

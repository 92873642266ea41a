// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/proctarget.h"
#include "collect/sched_collector.h"
#include "serve/promtext.h"
#include "serve/serve_filters.h"

enum filter_kind {
	FILTER_PID,
	FILTER_CHILDREN,
	FILTER_CGROUP,
};

struct filter {
	enum filter_kind kind;
	char value[32]; /* the pid, as a label ("" for children) */
	const char *path; /* cgroup: the normalized path (the caller's) */
	pid_t pid;
	uint64_t start_ticks; /* pid: the process serve started with */
	bool matches;
};

struct serve_filters {
	struct filter *v;
	size_t nr;
	const char *root;
	char cg_mount[PATH_MAX];
	struct sched_collector *coll;
	FILE *log;
};

static bool pid_matches(const struct serve_filters *f, const struct filter *x)
{
	uint64_t ticks;
	bool alive;

	return !proctarget__start_ticks(f->root, x->pid, &ticks, &alive) && alive &&
	       ticks == x->start_ticks;
}

/* A process of the kernel's set has not exited (its record is not drained yet, or lives). */
static bool set_matches(const struct serve_filters *f)
{
	struct proc_entry *v;
	size_t nr, i;
	bool any = false;

	if (sched_collector__processes(f->coll, &v, &nr))
		return true; /* unread: not said to be empty */
	for (i = 0; i < nr && !any; i++)
		any = !(v[i].rec.flags & KHBPF_PROC_EXITED);
	free(v);
	return any;
}

/* One process in the cgroup's subtree is enough: cgroup.procs, depth first. */
static bool cgroup_matches(const struct serve_filters *f, const struct filter *x)
{
	char dir[PATH_MAX + 8];
	pid_t *pids = NULL;
	size_t nr = 0;

	if (snprintf(dir, sizeof(dir), "%s%s", f->cg_mount, x->path) >= (int)sizeof(dir))
		return false;
	if (proctarget__cgroup_pids(dir, 1, &pids, &nr, 0))
		nr = 0;
	free(pids);
	return nr > 0;
}

static bool matches(const struct serve_filters *f, const struct filter *x)
{
	switch (x->kind) {
	case FILTER_PID:
		return pid_matches(f, x);
	case FILTER_CHILDREN:
		return set_matches(f);
	case FILTER_CGROUP:
		return cgroup_matches(f, x);
	}
	return false;
}

static const char *kind_name(enum filter_kind k)
{
	return k == FILTER_PID ? "pid" : k == FILTER_CHILDREN ? "children" : "cgroup";
}

int serve_filters__new(struct serve_filters **out, const struct serve_filters_opts *o, char *errbuf,
		       size_t errlen)
{
	struct serve_filters *f;
	size_t i, n;
	bool alive;
	int err = 0;

	*out = NULL;
	n = o->nr_pids + (o->children && o->nr_pids) + o->nr_cgroups;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->v = calloc(n ? n : 1, sizeof(*f->v)))) {
		free(f);
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	f->root = o->root ?: "/";
	snprintf(f->cg_mount, sizeof(f->cg_mount), "%s", o->cg_mount ?: "");
	f->coll = o->coll;
	f->log = o->log;
	for (i = 0; i < o->nr_pids && !err; i++) {
		struct filter *x = &f->v[f->nr++];

		x->kind = FILTER_PID;
		x->pid = o->pids[i];
		snprintf(x->value, sizeof(x->value), "%d", (int)x->pid);
		err = proctarget__start_ticks(f->root, x->pid, &x->start_ticks, &alive);
		if (!err && !alive)
			err = -ESRCH;
		if (err)
			snprintf(errbuf, errlen, "--pid %d: exited before serve could start",
				 (int)x->pid);
		x->matches = !err;
	}
	if (!err && o->children && o->nr_pids && o->coll) {
		struct filter *x = &f->v[f->nr++];

		x->kind = FILTER_CHILDREN;
		x->matches = set_matches(f);
	}
	for (i = 0; i < o->nr_cgroups && !err; i++) {
		struct filter *x = &f->v[f->nr++];

		x->kind = FILTER_CGROUP;
		x->path = o->cgroups[i];
		x->matches = cgroup_matches(f, x);
		if (!x->matches) {
			err = -ENOENT;
			snprintf(
				errbuf, errlen,
				"--cgroup %s: no process in it now, so nothing of it would be exported; start what runs in it first, or name a cgroup above it",
				x->path);
		}
	}
	if (err) {
		serve_filters__free(f);
		return err;
	}
	*out = f;
	return 0;
}

void serve_filters__free(struct serve_filters *f)
{
	if (!f)
		return;
	free(f->v);
	free(f);
}

void serve_filters__update(struct serve_filters *f, uint64_t window)
{
	size_t i;

	for (i = 0; f && i < f->nr; i++) {
		struct filter *x = &f->v[i];
		bool now = matches(f, x);

		if (now != x->matches && f->log)
			fprintf(f->log,
				now ? "khbpf serve: window %llu: --%s %s matches a process again\n" :
				      "khbpf serve: window %llu: --%s %s matches no process now; its series stop moving (khbpf_filter_matches 0)\n",
				(unsigned long long)window, kind_name(x->kind),
				x->kind == FILTER_CGROUP ? x->path :
				x->kind == FILTER_PID	 ? x->value :
							   "(the set of --pid)");
		x->matches = now;
	}
}

int serve_filters__render(const struct serve_filters *f, struct promtext *p)
{
	struct prom_label l[2];
	size_t i;
	int err;

	if (!f || !f->nr)
		return 0;
	err = promtext__family(
		p, "khbpf_filter_matches", PROM_GAUGE, NULL,
		"1 when the --pid/--cgroup filter matched a process at the last window's end, 0 when it matched none (its series then stop moving)");
	for (i = 0; !err && i < f->nr; i++) {
		const struct filter *x = &f->v[i];

		l[0] = (struct prom_label){ "filter", kind_name(x->kind) };
		l[1] = (struct prom_label){ "value",
					    x->kind == FILTER_CGROUP ? x->path : x->value };
		err = promtext__u64(p, l, x->kind == FILTER_CHILDREN ? 1 : 2, x->matches);
	}
	return err;
}

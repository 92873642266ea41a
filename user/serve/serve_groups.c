// SPDX-License-Identifier: MIT
/*
 * serve's groups: which of the kernel's groups are alive, aged out or
 * evicted, what gone processes added to their comm's series, and the rows
 * (labels and sums) /metrics exports. See serve_groups.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/cgroup.h"
#include "serve/serve_groups.h"
#include "serve/serve_sweep.h"

/* Cgroups named in labels: a bound on the scan of the v2 tree. */
#define MAX_CGROUP_NAMES 65536

/* The u64 fields of an accumulator, before comm. */
#define ACC_WORDS (offsetof(struct khbpf_group_acc, comm) / sizeof(uint64_t))

struct group_track {
	struct khbpf_group_key key;
	struct sweep_mark mark; /* switch-outs at the last sweep: unchanged means idle */
	bool top; /* process --top: exported with its pid, from `offset` on */
	struct khbpf_group_acc offset;
};

/* process mode: what groups that are gone added to their comm's series. */
struct retired {
	char comm[16];
	struct khbpf_group_acc acc;
};

struct serve_groups {
	struct serve_groups_opts o;
	struct sched_collector *coll;
	uint64_t max_groups;

	char cg_mount[PATH_MAX];
	bool have_cg_mount;
	struct cgroup_name *names;
	size_t nr_names;
	uint64_t names_dropped;
	bool names_fresh; /* scanned during this render: unknown ids are gone */

	struct group_track *track; /* sorted by key */
	size_t nr_track;
	struct retired *retired;
	size_t nr_retired;
	uint64_t retired_dropped; /* distinct comms beyond max_groups: in "(other)" */
	struct retired other;
	uint64_t aged_out, evicted;
};

static void acc_add(struct khbpf_group_acc *t, const struct khbpf_group_acc *a)
{
	uint64_t *tw = (uint64_t *)t;
	const uint64_t *aw = (const uint64_t *)a;
	size_t i;

	for (i = 0; i < ACC_WORDS; i++)
		tw[i] += aw[i];
}

static void acc_sub(struct khbpf_group_acc *t, const struct khbpf_group_acc *a)
{
	uint64_t *tw = (uint64_t *)t;
	const uint64_t *aw = (const uint64_t *)a;
	size_t i;

	for (i = 0; i < ACC_WORDS; i++)
		tw[i] = tw[i] > aw[i] ? tw[i] - aw[i] : 0;
}

static int key_cmp(const void *a, const void *b)
{
	const struct khbpf_group_key *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if (x->start_time != y->start_time)
		return x->start_time < y->start_time ? -1 : 1;
	return memcmp(x->comm, y->comm, sizeof(x->comm));
}

static int entry_cmp(const void *a, const void *b)
{
	return key_cmp(&((const struct group_entry *)a)->key,
		       &((const struct group_entry *)b)->key);
}

static struct group_track *track_find(struct serve_groups *s, const struct khbpf_group_key *k)
{
	return s->nr_track ? bsearch(k, s->track, s->nr_track, sizeof(*s->track), key_cmp) : NULL;
}

static void retire(struct serve_groups *s, const struct group_entry *e, const struct group_track *t)
{
	struct retired *r = NULL, *grown;
	size_t i;

	/* cgroup series and --top processes end with their group. */
	if (s->o.group_by != KHBPF_GROUP_PROCESS || (t && t->top))
		return;
	for (i = 0; i < s->nr_retired; i++) {
		if (!strncmp(s->retired[i].comm, e->acc.comm, sizeof(e->acc.comm))) {
			r = &s->retired[i];
			break;
		}
	}
	if (!r && s->nr_retired < s->max_groups) {
		grown = realloc(s->retired, (s->nr_retired + 1) * sizeof(*s->retired));
		if (grown) {
			s->retired = grown;
			r = &s->retired[s->nr_retired++];
			memset(r, 0, sizeof(*r));
			memcpy(r->comm, e->acc.comm, sizeof(r->comm));
		}
	}
	if (!r) {
		s->retired_dropped++;
		r = &s->other;
	}
	acc_add(&r->acc, &e->acc);
}

/*
 * Groups leave as serve_sweep__decide says: idle for max_age, or the
 * longest idle past 9/10 of the table; what they had is retired.
 */
int serve_groups__sweep(struct serve_groups *s)
{
	uint64_t now = serve_sweep__now();
	const struct sweep_mark **marks = NULL;
	struct group_track *next = NULL;
	struct group_entry *g = NULL;
	uint8_t *verdict = NULL;
	size_t nr = 0, i, live = 0;
	int err;

	err = sched_collector__groups(s->coll, &g, &nr);
	if (err)
		return err;
	if (nr)
		qsort(g, nr, sizeof(*g), entry_cmp);
	next = calloc(nr ? nr : 1, sizeof(*next));
	marks = calloc(nr ? nr : 1, sizeof(*marks));
	verdict = calloc(nr ? nr : 1, sizeof(*verdict));
	if (!next || !marks || !verdict) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nr; i++) {
		const struct group_track *old = track_find(s, &g[i].key);

		if (old)
			next[i] = *old;
		next[i].key = g[i].key;
		serve_sweep__mark(&next[i].mark, old ? &old->mark : NULL, g[i].acc.switch_outs,
				  now);
		marks[i] = &next[i].mark;
	}
	err = serve_sweep__decide(marks, nr, now, s->o.max_age_ns, s->max_groups, verdict);
	for (i = 0; !err && i < nr; i++) {
		if (verdict[i] != SWEEP_KEEP &&
		    !sched_collector__delete_group(s->coll, &g[i].key)) {
			if (verdict[i] == SWEEP_AGED)
				s->aged_out++;
			else
				s->evicted++;
			retire(s, &g[i], &next[i]);
			continue;
		}
		next[live++] = next[i];
	}
	if (err)
		goto out;
	free(s->track);
	s->track = next;
	s->nr_track = live;
	next = NULL;
out:
	free(next);
	free(marks);
	free(verdict);
	free(g);
	return err;
}

const char *serve_groups__cgroup_label(struct serve_groups *s, uint64_t id, char *buf, size_t size)
{
	const struct cgroup_name *n = cgroup_names__find(s->names, s->nr_names, id);

	/* At most one scan per scrape, however many ids are unknown. */
	if (!n && s->have_cg_mount && !s->names_fresh) {
		struct cgroup_name *v;
		size_t nr;
		uint64_t dropped;

		/* A cgroup made since the last scan. */
		s->names_fresh = true;
		if (!cgroup_names__scan(s->cg_mount, MAX_CGROUP_NAMES, &v, &nr, &dropped)) {
			if (cgroup_names__keep_gone(&v, &nr, s->names, s->nr_names,
						    MAX_CGROUP_NAMES, &dropped))
				cgroup_names__free(s->names, s->nr_names);
			s->names = v;
			s->nr_names = nr;
			s->names_dropped = dropped;
			n = cgroup_names__find(s->names, s->nr_names, id);
		}
	}
	if (n)
		return n->path;
	/* Removed before it could be named: the id stays distinct. */
	snprintf(buf, size, "(cgroup id %llu)", (unsigned long long)id);
	return buf;
}

/* Promote the busiest processes to their own series until --top are. */
static void pick_top(struct serve_groups *s, const struct group_entry *g, size_t nr)
{
	size_t tops = 0, i;

	for (i = 0; i < s->nr_track; i++)
		tops += s->track[i].top;
	while (tops < s->o.top) {
		struct group_track *best = NULL;
		const struct group_entry *be = NULL;

		for (i = 0; i < nr; i++) {
			struct group_track *t = track_find(s, &g[i].key);

			if (!t || t->top)
				continue;
			if (!be || g[i].acc.k.sum_exec_runtime > be->acc.k.sum_exec_runtime) {
				best = t;
				be = &g[i];
			}
		}
		if (!best)
			break;
		/* What it had so far stays in its comm's series: both only grow. */
		best->top = true;
		best->offset = be->acc;
		retire(s, be, NULL);
		tops++;
	}
}

/* A new row; rows with the same labels are merged after (serve_rows__merge). */
static struct serve_row *row_for(struct serve_row **rows, size_t *nr, const char *cgroup,
				 const char *comm, const char *pid)
{
	struct serve_row *r, *grown;

	/* Doubling: *nr is a power of two exactly when the array is full. */
	if (!(*nr & (*nr - 1))) {
		grown = realloc(*rows, (*nr ? *nr * 2 : 1) * sizeof(**rows));
		if (!grown)
			return NULL;
		*rows = grown;
	}
	r = &(*rows)[(*nr)++];
	memset(r, 0, sizeof(*r));
	snprintf(r->cgroup, sizeof(r->cgroup), "%s", cgroup);
	snprintf(r->comm, sizeof(r->comm), "%s", comm);
	snprintf(r->pid, sizeof(r->pid), "%s", pid);
	return r;
}

static int row_cmp(const void *a, const void *b)
{
	const struct serve_row *x = a, *y = b;
	int c = strcmp(x->cgroup, y->cgroup);

	c = c ?: strcmp(x->comm, y->comm);
	return c ?: strcmp(x->pid, y->pid);
}

size_t serve_rows__merge(struct serve_row *rows, size_t nr)
{
	size_t i, n = 0;

	if (!nr)
		return 0;
	if (nr)
		qsort(rows, nr, sizeof(*rows), row_cmp);
	for (i = 1; i < nr; i++) {
		if (!row_cmp(&rows[n], &rows[i]))
			acc_add(&rows[n].acc, &rows[i].acc);
		else
			rows[++n] = rows[i];
	}
	return n + 1;
}

int serve_groups__rows(struct serve_groups *s, struct serve_row **out, size_t *nr_out)
{
	struct group_entry *g = NULL;
	struct khbpf_group_acc spill;
	struct serve_row *rows = NULL, *r;
	size_t nr = 0, n = 0, i;
	char buf[64], comm[17];
	int err;

	err = sched_collector__groups(s->coll, &g, &nr);
	if (err)
		return err;
	if (nr)
		qsort(g, nr, sizeof(*g), entry_cmp);
	s->names_fresh = false;
	if (s->o.group_by == KHBPF_GROUP_PROCESS && s->o.top)
		pick_top(s, g, nr);
	for (i = 0; i < nr && !err; i++) {
		const struct group_track *t = track_find(s, &g[i].key);
		struct khbpf_group_acc a = g[i].acc;

		if (s->o.group_by == KHBPF_GROUP_CGROUP) {
			r = row_for(&rows, &n,
				    serve_groups__cgroup_label(s, g[i].key.id, buf, sizeof(buf)),
				    "", "");
		} else {
			snprintf(comm, sizeof(comm), "%.16s", g[i].acc.comm);
			if (t && t->top) {
				snprintf(buf, sizeof(buf), "%llu", (unsigned long long)g[i].key.id);
				acc_sub(&a, &t->offset);
			} else {
				buf[0] = '\0';
			}
			r = row_for(&rows, &n, "", comm, buf);
		}
		if (!r)
			err = -ENOMEM;
		else
			acc_add(&r->acc, &a);
	}
	for (i = 0; i < s->nr_retired && !err; i++) {
		snprintf(comm, sizeof(comm), "%.16s", s->retired[i].comm);
		r = row_for(&rows, &n, "", comm, "");
		if (!r)
			err = -ENOMEM;
		else
			acc_add(&r->acc, &s->retired[i].acc);
	}
	if (!err && s->retired_dropped) {
		r = row_for(&rows, &n, "", "(other)", "");
		if (!r)
			err = -ENOMEM;
		else
			acc_add(&r->acc, &s->other.acc);
	}
	/* What the kernel could not give a group of its own. */
	if (!err && !sched_collector__group_spill(s->coll, &spill) && spill.switch_outs) {
		r = s->o.group_by == KHBPF_GROUP_CGROUP ? row_for(&rows, &n, "(overflow)", "", "") :
							  row_for(&rows, &n, "", "(overflow)", "");
		if (!r)
			err = -ENOMEM;
		else
			acc_add(&r->acc, &spill);
	}
	free(g);
	if (err) {
		free(rows);
		return err;
	}
	*out = rows;
	*nr_out = serve_rows__merge(rows, n);
	return 0;
}

int serve_groups__new(struct serve_groups **out, struct sched_collector *coll,
		      const struct serve_groups_opts *opts)
{
	struct serve_groups *s;

	*out = NULL;
	if (!coll || !opts || opts->sz < sizeof(*opts))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *opts;
	s->coll = coll;
	s->max_groups = s->o.max_groups ?: KHBPF_DEFAULT_MAX_GROUPS;
	if (s->o.cg_mount) {
		snprintf(s->cg_mount, sizeof(s->cg_mount), "%s", s->o.cg_mount);
		s->have_cg_mount = true;
	}
	s->o.cg_mount = NULL; /* the copy above is ours; theirs may go */
	*out = s;
	return 0;
}

void serve_groups__stats(const struct serve_groups *s, struct serve_groups_stats *out)
{
	out->nr_groups = s->nr_track;
	out->max_groups = s->max_groups;
	out->aged_out = s->aged_out;
	out->evicted = s->evicted;
	out->retired_dropped = s->retired_dropped;
	out->names_dropped = s->names_dropped;
}

void serve_groups__free(struct serve_groups *s)
{
	if (!s)
		return;
	cgroup_names__free(s->names, s->nr_names);
	free(s->track);
	free(s->retired);
	free(s);
}

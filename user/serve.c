// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cgroup.h"
#include "cpufreq.h"
#include "httpd.h"
#include "output.h"
#include "promtext.h"
#include "sched_window.h"
#include "serve.h"
#include "session.h"

#define NS_PER_SEC UINT64_C(1000000000)
#define DEFAULT_INTERVAL_NS (15 * NS_PER_SEC)
#define DEFAULT_MAX_AGE_NS (300 * NS_PER_SEC)
/* The first window is short, so /evidence and the gap metrics exist soon. */
#define FIRST_WINDOW_NS NS_PER_SEC
/* Cgroups named in labels: a bound on the scan of the v2 tree. */
#define MAX_CGROUP_NAMES 65536
/* The kernel table is swept back to 3/4 when it passes 9/10 full. */
#define EVICT_HIGH(max) ((uint64_t)(max)*9 / 10)
#define EVICT_LOW(max) ((uint64_t)(max)*3 / 4)
#define LABEL_MAX 256

/* The u64 fields of an accumulator, before comm. */
#define ACC_WORDS (offsetof(struct khbpf_group_acc, comm) / sizeof(uint64_t))

struct group_track {
	struct khbpf_group_key key;
	uint64_t switch_outs; /* at the last sweep: unchanged means idle */
	uint64_t changed_mono;
	bool top; /* process --top: exported with its pid, from `offset` on */
	struct khbpf_group_acc offset;
};

/* process mode: what groups that are gone added to their comm's series. */
struct retired {
	char comm[16];
	struct khbpf_group_acc acc;
};

struct row {
	char cgroup[LABEL_MAX];
	char comm[17];
	char pid[24];
	struct khbpf_group_acc acc;
};

struct serve {
	struct serve_opts o;
	struct session *sess;
	struct sched_collector *coll;
	struct httpd *http;
	int timerfd;
	bool first_window;
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

	char *doc; /* the last window's document, compact JSON */
	size_t doc_len;
	struct json_object *doc_obj;
	int ndjson_fd;
	uint64_t windows, scrapes, window_errors;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

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
	return x->start_time < y->start_time ? -1 : x->start_time > y->start_time;
}

static int entry_cmp(const void *a, const void *b)
{
	return key_cmp(&((const struct group_entry *)a)->key,
		       &((const struct group_entry *)b)->key);
}

static struct group_track *track_find(struct serve *s, const struct khbpf_group_key *k)
{
	return s->nr_track ? bsearch(k, s->track, s->nr_track, sizeof(*s->track), key_cmp) : NULL;
}

static void retire(struct serve *s, const struct group_entry *e, const struct group_track *t)
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

static int idle_cmp(const void *a, const void *b)
{
	const struct group_track *x = *(struct group_track *const *)a;
	const struct group_track *y = *(struct group_track *const *)b;

	return x->changed_mono < y->changed_mono ? -1 : x->changed_mono > y->changed_mono;
}

/*
 * Age out groups idle for max_age, and when the kernel table passes 9/10
 * full, evict the longest idle down to 3/4: the kernel never has to spill
 * into the overflow group while userspace keeps up.
 */
static int sweep(struct serve *s)
{
	uint64_t now = mono_ns(), max_age = s->o.max_age_ns ?: DEFAULT_MAX_AGE_NS;
	struct group_track *next = NULL, **order = NULL;
	struct group_entry *g = NULL;
	size_t nr = 0, i, live = 0;
	int err;

	err = sched_collector__groups(s->coll, &g, &nr);
	if (err)
		return err;
	if (nr)
		qsort(g, nr, sizeof(*g), entry_cmp);
	next = calloc(nr ? nr : 1, sizeof(*next));
	order = calloc(nr ? nr : 1, sizeof(*order));
	if (!next || !order) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nr; i++) {
		const struct group_track *old = track_find(s, &g[i].key);
		struct group_track *t = &next[live];

		if (old) {
			*t = *old;
		} else {
			memset(t, 0, sizeof(*t));
			t->key = g[i].key;
			t->changed_mono = now;
		}
		if (!old || old->switch_outs != g[i].acc.switch_outs) {
			t->switch_outs = g[i].acc.switch_outs;
			t->changed_mono = now;
		}
		if (now - t->changed_mono >= max_age &&
		    !sched_collector__delete_group(s->coll, &g[i].key)) {
			s->aged_out++;
			retire(s, &g[i], t);
			continue;
		}
		g[live] = g[i];
		order[live] = t;
		live++;
	}
	if (live > EVICT_HIGH(s->max_groups)) {
		size_t left = live;

		if (live)
			qsort(order, live, sizeof(*order), idle_cmp);
		for (i = 0; i < live && left > EVICT_LOW(s->max_groups); i++) {
			struct group_track *t = order[i];
			struct group_entry *e = bsearch(&t->key, g, live, sizeof(*g), entry_cmp);

			if (!e || sched_collector__delete_group(s->coll, &t->key))
				continue;
			s->evicted++;
			left--;
			retire(s, e, t);
			t->switch_outs = UINT64_MAX; /* marked gone */
		}
	}
	free(s->track);
	s->track = next;
	s->nr_track = 0;
	for (i = 0; i < live; i++) {
		if (next[i].switch_outs != UINT64_MAX)
			next[s->nr_track++] = next[i];
	}
	next = NULL;
out:
	free(next);
	free(order);
	free(g);
	return err;
}

static const char *cgroup_label(struct serve *s, uint64_t id, char *buf, size_t size)
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
static void pick_top(struct serve *s, const struct group_entry *g, size_t nr)
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

/* A new row; rows with the same labels are merged after (merge_rows). */
static struct row *row_for(struct row **rows, size_t *nr, const char *cgroup, const char *comm,
			   const char *pid)
{
	struct row *r, *grown;

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
	const struct row *x = a, *y = b;
	int c = strcmp(x->cgroup, y->cgroup);

	c = c ?: strcmp(x->comm, y->comm);
	return c ?: strcmp(x->pid, y->pid);
}

static size_t merge_rows(struct row *rows, size_t nr)
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

static int build_rows(struct serve *s, struct row **out, size_t *nr_out)
{
	struct group_entry *g = NULL;
	struct khbpf_group_acc spill;
	struct row *rows = NULL, *r;
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
			r = row_for(&rows, &n, cgroup_label(s, g[i].key.id, buf, sizeof(buf)), "",
				    "");
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
	*nr_out = merge_rows(rows, n);
	return 0;
}

static size_t row_labels(const struct serve *s, const struct row *r, struct prom_label *l,
			 const char *extra_name, const char *extra_value)
{
	size_t n = 0;

	if (s->o.group_by == KHBPF_GROUP_CGROUP) {
		l[n++] = (struct prom_label){ "cgroup", r->cgroup };
	} else {
		l[n++] = (struct prom_label){ "comm", r->comm };
		if (s->o.top)
			l[n++] = (struct prom_label){ "pid", r->pid };
	}
	if (extra_name)
		l[n++] = (struct prom_label){ extra_name, extra_value };
	return n;
}

enum field { F_ONCPU, F_VOL, F_INVOL, F_SLICES, F_MIGR, F_UNBINNED, F_UNBINNED_NS };

static const struct {
	const char *name;
	enum prom_type type;
	const char *unit;
	enum field f;
	const char *help;
} group_families[] = {
	{ "khbpf_oncpu_seconds", PROM_COUNTER, "seconds", F_ONCPU,
	  "CPU time of the group's threads (se.sum_exec_runtime)" },
	{ "khbpf_voluntary_switches", PROM_COUNTER, NULL, F_VOL,
	  "Voluntary context switches (nvcsw): the thread blocked" },
	{ "khbpf_involuntary_switches", PROM_COUNTER, NULL, F_INVOL,
	  "Involuntary context switches (nivcsw): the thread was preempted" },
	{ "khbpf_timeslices", PROM_COUNTER, NULL, F_SLICES,
	  "Timeslices begun on a CPU (sched_info.pcount)" },
	{ "khbpf_migrations", PROM_COUNTER, NULL, F_MIGR,
	  "Moves to another CPU (se.nr_migrations)" },
	{ "khbpf_runqueue_unbinned_waits", PROM_COUNTER, NULL, F_UNBINNED,
	  "Runqueue waits seen only as a sum (thread not looked at between them), not in the "
	  "histogram" },
	{ "khbpf_runqueue_unbinned_delay_seconds", PROM_COUNTER, "seconds", F_UNBINNED_NS,
	  "Total of the unbinned runqueue waits" },
};

static uint64_t field_of(const struct khbpf_group_acc *a, enum field f)
{
	switch (f) {
	case F_ONCPU:
		return a->k.sum_exec_runtime;
	case F_VOL:
		return a->k.nvcsw;
	case F_INVOL:
		return a->k.nivcsw;
	case F_SLICES:
		return a->k.pcount;
	case F_MIGR:
		return a->k.nr_migrations;
	case F_UNBINNED:
		return a->b.unbinned_waits;
	case F_UNBINNED_NS:
		return a->b.unbinned_ns;
	}
	return 0;
}

static const char *const mig_names[KHBPF_MIG_CLASSES] = { "smt", "llc", "other-llc", "other-node",
							  "unknown" };

static int render_groups(struct serve *s, struct promtext *p)
{
	struct prom_label l[4];
	struct row *rows = NULL;
	size_t nr = 0, i, j, n;
	int err;

	err = build_rows(s, &rows, &nr);
	if (err)
		return err;
	for (j = 0; j < sizeof(group_families) / sizeof(group_families[0]) && !err; j++) {
		err = promtext__family(p, group_families[j].name, group_families[j].type,
				       group_families[j].unit, group_families[j].help);
		for (i = 0; i < nr && !err; i++) {
			uint64_t v = field_of(&rows[i].acc, group_families[j].f);

			n = row_labels(s, &rows[i], l, NULL, NULL);
			err = group_families[j].unit ? promtext__ns_as_seconds(p, l, n, v) :
						       promtext__u64(p, l, n, v);
		}
	}
	err = err   ?:
		      promtext__family(p, "khbpf_migrations_by_distance", PROM_COUNTER, NULL,
				       "Moves to another CPU by topological distance "
				       "(sched_migrate_task)");
	for (i = 0; i < nr && !err; i++) {
		for (j = 0; j < KHBPF_MIG_CLASSES && !err; j++) {
			n = row_labels(s, &rows[i], l, "distance", mig_names[j]);
			err = promtext__u64(p, l, n, rows[i].acc.b.mig_class[j]);
		}
	}
	err = err   ?:
		      promtext__family(p, "khbpf_runqueue_delay_seconds", PROM_HISTOGRAM, "seconds",
				       "Runqueue waits, each timed by the kernel (sched_info "
				       "run_delay at each arrival)");
	for (i = 0; i < nr && !err; i++) {
		uint64_t hist[KHBPF_RQ_SLOTS];

		n = row_labels(s, &rows[i], l, NULL, NULL);
		for (j = 0; j < KHBPF_RQ_SLOTS; j++)
			hist[j] = rows[i].acc.b.wait_hist[j];
		err = promtext__histogram_log2_ns(p, l, n, hist, KHBPF_RQ_SLOTS,
						  rows[i].acc.b.wait_ns);
	}
	free(rows);
	return err;
}

static int family_u64(struct promtext *p, const char *name, enum prom_type type, const char *help,
		      uint64_t v)
{
	int err = promtext__family(p, name, type, NULL, help);

	return err ?: promtext__u64(p, NULL, 0, v);
}

/* Collector health: the table, its evictions, and every loss counter. */
static int render_self(struct serve *s, struct promtext *p)
{
	struct sched_collector_stats st;
	struct prom_label l[1];
	size_t i;
	int err;

	err = sched_collector__stats(s->coll, &st);
	err = err   ?:
		      family_u64(p, "khbpf_groups", PROM_GAUGE,
				 "Groups (cgroups or processes) in the kernel's table",
				 s->nr_track);
	err = err   ?:
		      family_u64(p, "khbpf_groups_max", PROM_GAUGE,
				 "Bound of the kernel's group table (--max-groups)", s->max_groups);
	err = err   ?:
		      family_u64(p, "khbpf_groups_created", PROM_COUNTER,
				 "Groups the kernel added to its table", st.groups_made);
	err = err   ?:
		      family_u64(p, "khbpf_group_evictions", PROM_COUNTER,
				 "Groups removed to keep the table under its bound (least recently "
				 "active first)",
				 s->evicted);
	err = err   ?:
		      family_u64(p, "khbpf_groups_aged_out", PROM_COUNTER,
				 "Groups removed after --max-age without activity", s->aged_out);
	err = err   ?:
		      family_u64(
			      p, "khbpf_group_overflow_switches", PROM_COUNTER,
			      "Switch-outs summed into the (overflow) series: the table was full",
			      st.group_overflow);
	err = err   ?:
		      family_u64(p, "khbpf_windows", PROM_COUNTER,
				 "Evidence windows completed (--interval)", s->windows);
	err = err   ?:
		      family_u64(p, "khbpf_window_errors", PROM_COUNTER,
				 "Windows whose document could not be built", s->window_errors);
	err = err   ?:
		      promtext__family(p, "khbpf_loss_events", PROM_COUNTER, NULL,
				       "Events khbpf could not account, by cause (none is dropped "
				       "silently)");
#define LOSS(name, v)                                          \
	do {                                                   \
		l[0] = (struct prom_label){ "counter", name }; \
		err = err ?: promtext__u64(p, l, 1, (v));      \
	} while (0)
	LOSS("task_storage_failures", st.storage_failures);
	LOSS("exited_records_overflow", st.exited_overflow);
	LOSS("final_switch_unmatched", st.final_unmatched);
	LOSS("iterator_write_errors", st.iter_write_errors);
	LOSS("retired_comms_beyond_bound", s->retired_dropped);
	LOSS("cgroup_names_beyond_bound", s->names_dropped);
	for (i = 0; i < st.nr_progs; i++) {
		char name[64];

		/* No series where the kernel does not count them (before 5.12). */
		if (!st.progs[i].recursion_known)
			continue;
		snprintf(name, sizeof(name), "%s_recursion_misses", st.progs[i].name);
		LOSS(name, st.progs[i].recursion_misses);
	}
#undef LOSS
	if (!st.run_stats_enabled)
		return err;
	err = err   ?:
		      promtext__family(p, "khbpf_bpf_run_seconds", PROM_COUNTER, "seconds",
				       "Time in khbpf's BPF programs (--bpf-stats)");
	for (i = 0; i < st.nr_progs && !err; i++) {
		l[0] = (struct prom_label){ "program", st.progs[i].name };
		err = promtext__ns_as_seconds(p, l, 1, st.progs[i].run_time_ns);
	}
	err = err   ?:
		      promtext__family(p, "khbpf_bpf_runs", PROM_COUNTER, NULL,
				       "Runs of khbpf's BPF programs (--bpf-stats)");
	for (i = 0; i < st.nr_progs && !err; i++) {
		l[0] = (struct prom_label){ "program", st.progs[i].name };
		err = promtext__u64(p, l, 1, st.progs[i].run_cnt);
	}
	return err;
}

struct gap_walk {
	struct promtext *p;
	int pass; /* 0: available, 1: gap_info, 2: topology gauges */
	int err;
};

/* Evidence values of the last document: "status" recorded or unavailable. */
static void walk_evidence(struct gap_walk *w, const char *collector, const char *field,
			  struct json_object *o)
{
	struct json_object *status, *reason, *value;
	struct prom_label l[3] = { { "collector", collector }, { "field", field } };

	if (w->err || !json_object_is_type(o, json_type_object))
		return;
	if (json_object_object_get_ex(o, "status", &status)) {
		const char *st = json_object_get_string(status);
		bool ok = !strcmp(st, "recorded");

		if (w->pass == 0) {
			w->err = promtext__u64(w->p, l, 2, ok);
		} else if (w->pass == 1 && !ok && json_object_object_get_ex(o, "reason", &reason)) {
			l[2] = (struct prom_label){ "reason", json_object_get_string(reason) };
			w->err = promtext__u64(w->p, l, 3, 1);
		} else if (w->pass == 2 && ok && !strcmp(collector, "topology") &&
			   json_object_object_get_ex(o, "value", &value) &&
			   json_object_is_type(value, json_type_int)) {
			l[0] = (struct prom_label){ "field", field };
			w->err = promtext__u64(w->p, l, 1, json_object_get_uint64(value));
		}
		return;
	}
	json_object_object_foreach(o, key, child) {
		char path[128];

		if (!json_object_is_type(child, json_type_object))
			continue;
		/* {"version", "value": {...}} wrappers add no name. */
		if (!strcmp(key, "value"))
			snprintf(path, sizeof(path), "%s", field);
		else
			snprintf(path, sizeof(path), "%s%s%s", field, field[0] ? "." : "", key);
		walk_evidence(w, collector, path, child);
	}
}

static void walk_document(struct gap_walk *w, struct json_object *doc)
{
	struct json_object *hw, *hv, *cols;
	size_t i;

	if (json_object_object_get_ex(doc, "collectors", &cols) && w->pass < 2) {
		for (i = 0; i < json_object_array_length(cols) && !w->err; i++) {
			struct json_object *c = json_object_array_get_idx(cols, i), *name, *av;
			struct prom_label l[3];
			bool ok;

			if (!json_object_object_get_ex(c, "collector", &name) ||
			    !json_object_object_get_ex(c, "availability", &av))
				continue;
			ok = !strcmp(json_object_get_string(av), "available");
			l[0] = (struct prom_label){ "collector", json_object_get_string(name) };
			l[1] = (struct prom_label){ "field", "*" };
			if (w->pass == 0) {
				w->err = promtext__u64(w->p, l, 2, ok);
			} else if (!ok) {
				l[2] = (struct prom_label){ "reason", json_object_get_string(av) };
				w->err = promtext__u64(w->p, l, 3, 1);
			}
		}
	}
	if (!json_object_object_get_ex(doc, "hardware", &hw))
		return;
	if (!json_object_object_get_ex(hw, "value", &hv)) {
		walk_evidence(w, "hardware", "", hw);
		return;
	}
	json_object_object_foreach(hv, key, child) {
		walk_evidence(w, key, "", child);
	}
}

/* CPU frequency now (cpufreq sysfs); no series when there is none (its gap says why). */
static int render_frequency(struct serve *s, struct promtext *p)
{
	struct cpu_frequency_sample f;
	enum ev_gap gap;
	struct prom_label l[1];
	int err;

	if (cpufreq__sample(s->o.root ?: "/", 0, &f, &gap))
		return 0;
	err = promtext__family(
		p, "khbpf_cpu_frequency_hertz", PROM_GAUGE, "hertz",
		"Current CPU frequency over the online CPUs (cpufreq scaling_cur_freq)");
	l[0] = (struct prom_label){ "stat", "min" };
	err = err ?: promtext__u64(p, l, 1, f.min_khz * 1000);
	l[0] = (struct prom_label){ "stat", "mean" };
	err = err ?: promtext__u64(p, l, 1, f.mean_khz * 1000);
	l[0] = (struct prom_label){ "stat", "max" };
	err = err ?: promtext__u64(p, l, 1, f.max_khz * 1000);
	return err   ?:
		       family_u64(p, "khbpf_cpu_frequency_cpus", PROM_GAUGE,
				  "CPUs the frequency was read from", f.cpu_count);
}

int serve__gap_metrics(struct promtext *p, struct json_object *doc)
{
	struct gap_walk w = { .p = p };

	w.err = promtext__family(p, "khbpf_evidence_available", PROM_GAUGE, NULL,
				 "1 when the last window recorded the field, 0 when it is a gap");
	if (doc)
		walk_document(&w, doc);
	w.pass = 1;
	w.err = w.err ?:
			promtext__family(p, "khbpf_evidence_gap", PROM_INFO, NULL,
					 "Why a field of the last window is a gap");
	if (doc)
		walk_document(&w, doc);
	w.pass = 2;
	w.err = w.err ?:
			promtext__family(p, "khbpf_topology", PROM_GAUGE, NULL,
					 "Host CPU topology of the last window, by field");
	if (doc)
		walk_document(&w, doc);
	return w.err;
}

static int handle_metrics(void *ctx, const struct httpd_request *req, struct httpd_response *resp)
{
	struct serve *s = ctx;
	bool om = promtext__wants_openmetrics(req->accept);
	struct promtext *p;
	int err;

	err = promtext__new(&p, om);
	if (err)
		return err;
	err = render_groups(s, p);
	err = err ?: render_self(s, p);
	err = err ?: serve__gap_metrics(p, s->doc_obj);
	err = err ?: render_frequency(s, p);
	if (err) {
		promtext__free(p);
		return err;
	}
	resp->body = promtext__finish(p, &resp->len);
	if (!resp->body)
		return -ENOMEM;
	resp->status = 200;
	resp->content_type = promtext__content_type(om);
	s->scrapes++;
	return 0;
}

static int handle_evidence(void *ctx, const struct httpd_request *req, struct httpd_response *resp)
{
	struct serve *s = ctx;
	static const char none[] = "{\"error\": \"no window has ended yet; retry in a second\"}\n";
	const char *src = s->doc ? s->doc : none;
	size_t len = s->doc ? s->doc_len : sizeof(none) - 1;

	(void)req;
	resp->body = malloc(len ? len : 1);
	if (!resp->body)
		return -ENOMEM;
	memcpy(resp->body, src, len);
	resp->len = len;
	resp->status = s->doc ? 200 : 503;
	resp->content_type = "application/json";
	return 0;
}

static int handle_healthz(void *ctx, const struct httpd_request *req, struct httpd_response *resp)
{
	struct serve *s = ctx;
	char buf[128];
	int n;

	(void)req;
	n = snprintf(buf, sizeof(buf), "ok: %llu windows, %zu groups\n",
		     (unsigned long long)s->windows, s->nr_track);
	resp->body = strdup(buf);
	if (!resp->body)
		return -ENOMEM;
	resp->len = (size_t)n;
	resp->status = 200;
	resp->content_type = "text/plain; charset=utf-8";
	return 0;
}

/* One window ends: its document is kept for /evidence and written as a line. */
static int end_window(struct serve *s)
{
	struct json_object *doc = NULL;
	char *text;
	size_t len;
	int err;

	err = session__serve_rotate(s->sess, &doc, &text, &len);
	if (err) {
		s->window_errors++;
		return err;
	}
	free(s->doc);
	json_object_put(s->doc_obj);
	s->doc = text;
	s->doc_len = len;
	s->doc_obj = doc;
	s->windows++;
	/* One line per window, whole: a failed write leaves no partial line. */
	if (s->ndjson_fd >= 0)
		return output__append(s->ndjson_fd, s->doc, s->doc_len);
	return 0;
}

static int set_timer(int fd, uint64_t first_ns, uint64_t every_ns)
{
	struct itimerspec its = {
		.it_interval = { (time_t)(every_ns / NS_PER_SEC), (long)(every_ns % NS_PER_SEC) },
		.it_value = { (time_t)(first_ns / NS_PER_SEC), (long)(first_ns % NS_PER_SEC) },
	};

	return timerfd_settime(fd, 0, &its, NULL) ? -errno : 0;
}

static int open_filters(struct serve *s, uint64_t *ids, uint32_t *levels, char *errbuf,
			size_t errlen)
{
	size_t i;
	int err;

	if (!s->have_cg_mount)
		return s->o.nr_cgroups ?
			       session__errf(
				       errbuf, errlen, -ENOENT,
				       "--cgroup needs cgroup v2, and it is not mounted; mount "
				       "cgroup2 (e.g. on /sys/fs/cgroup/unified)") :
			       0;
	for (i = 0; i < s->o.nr_cgroups; i++) {
		err = cgroup__v2_id(s->cg_mount, s->o.cgroups[i], &ids[i], &levels[i]);
		if (err)
			return session__errf(
				errbuf, errlen, err,
				"--cgroup '%s': %s under %s; give a path like /system.slice",
				s->o.cgroups[i], strerror(-err), s->cg_mount);
	}
	return 0;
}

static int serve_loop(struct serve *s)
{
	int sigfd = session__signal_fd(s->sess);
	uint64_t every = s->o.interval_ns ?: DEFAULT_INTERVAL_NS;

	for (;;) {
		struct pollfd pfd[3] = {
			{ .fd = sigfd, .events = POLLIN },
			{ .fd = s->timerfd, .events = POLLIN },
			{ .fd = httpd__fd(s->http), .events = POLLIN },
		};
		int timeout = httpd__timeout_ms(s->http);

		if (poll(pfd, 3, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
				if (s->o.log)
					fprintf(s->o.log,
						"khbpf serve: %s: writing the last window\n",
						strsignal((int)si.ssi_signo));
				return 0;
			}
		}
		if (pfd[1].revents & POLLIN) {
			uint64_t ticks;

			if (read(s->timerfd, &ticks, sizeof(ticks)) == sizeof(ticks)) {
				/* Independent: a window ends (and drains exits) whatever the sweep did. */
				int err = sweep(s), werr = end_window(s);

				if (err && s->o.log)
					fprintf(s->o.log, "khbpf serve: sweeping groups: %s\n",
						strerror(-err));
				if (werr && s->o.log)
					fprintf(s->o.log, "khbpf serve: window %llu: %s\n",
						(unsigned long long)s->windows + 1,
						strerror(-werr));
				if (s->first_window) {
					s->first_window = false;
					set_timer(s->timerfd, every, every);
				}
			}
		}
		httpd__run(s->http);
	}
}

int serve__run(const struct serve_opts *opts, char *errbuf, size_t errlen)
{
	struct httpd_route routes[] = {
		{ "/metrics", handle_metrics, NULL },
		{ "/evidence", handle_evidence, NULL },
		{ "/healthz", handle_healthz, NULL },
	};
	struct httpd_opts ho = { .sz = sizeof(ho) };
	struct session_opts so = { .sz = sizeof(so) };
	uint64_t ids[KHBPF_MAX_CGROUP_FILTERS];
	uint32_t levels[KHBPF_MAX_CGROUP_FILTERS];
	struct serve *s;
	size_t i;
	int err, stop_err;

	if (opts->nr_cgroups > KHBPF_MAX_CGROUP_FILTERS)
		return session__errf(errbuf, errlen, -E2BIG, "at most %d --cgroup options",
				     KHBPF_MAX_CGROUP_FILTERS);
	s = calloc(1, sizeof(*s));
	if (!s)
		return session__errf(errbuf, errlen, -ENOMEM, "out of memory");
	s->o = *opts;
	if (!s->o.group_by)
		s->o.group_by = KHBPF_GROUP_CGROUP;
	s->max_groups = s->o.max_groups ?: KHBPF_DEFAULT_MAX_GROUPS;
	s->timerfd = -1;
	s->ndjson_fd = -1;
	s->first_window = true;
	s->have_cg_mount = !cgroup__v2_mount(s->o.root ?: "/", s->cg_mount, sizeof(s->cg_mount));
	err = open_filters(s, ids, levels, errbuf, errlen);
	if (err)
		goto cleanup;
	if (s->o.group_by == KHBPF_GROUP_CGROUP && !s->have_cg_mount) {
		err = session__errf(
			errbuf, errlen, -ENOENT,
			"--by cgroup needs cgroup v2 mounted (none in /proc/self/mountinfo); "
			"mount cgroup2 or use --by process");
		goto cleanup;
	}
	if (s->o.ndjson) {
		if (!strcmp(s->o.ndjson, "-")) {
			s->ndjson_fd = STDOUT_FILENO;
		} else {
			/* Appended: a log shipper follows it; never through a symlink. */
			err = output__open_append(s->o.ndjson,
						  s->o.ndjson_private ? OUTPUT_MODE_PRIVATE : 0644);
			if (err < 0) {
				err = session__errf(
					errbuf, errlen, err,
					"--ndjson '%s': %s; give a writable file or '-'",
					s->o.ndjson,
					err == -ELOOP  ? "is a symbolic link (not followed)" :
					err == -EEXIST ? "exists and is not a regular file" :
							 strerror(-err));
				goto cleanup;
			}
			s->ndjson_fd = err;
		}
	}

	so.mode = TARGET_MODE_SERVE;
	so.pids = s->o.pids;
	so.nr_pids = s->o.nr_pids;
	so.cgroup_ids = ids;
	so.cgroup_levels = levels;
	so.nr_cgroups = s->o.nr_cgroups;
	so.group_by = s->o.group_by;
	so.max_groups = s->o.max_groups;
	so.bpf_stats = s->o.bpf_stats;
	so.max_exited = s->o.max_exited;
	so.max_threads = s->o.max_threads;
	so.root = s->o.root;
	err = session__serve_open(&s->sess, &so, errbuf, errlen);
	if (err)
		goto cleanup;
	s->coll = session__collector(s->sess);

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		routes[i].ctx = s;
	ho.listen = s->o.listen ?: SERVE_DEFAULT_LISTEN;
	ho.routes = routes;
	ho.nr_routes = sizeof(routes) / sizeof(routes[0]);
	err = httpd__start(&s->http, &ho, errbuf, errlen);
	if (err)
		goto cleanup;
	/* Listening, single-threaded (MHD polls from this loop): only fds from here on. */
	err = session__drop_privileges(s->sess, errbuf, errlen);
	if (err)
		goto cleanup;
	s->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->timerfd < 0 || set_timer(s->timerfd, FIRST_WINDOW_NS, FIRST_WINDOW_NS)) {
		err = session__errf(errbuf, errlen, -errno, "timerfd: %s", strerror(errno));
		goto cleanup;
	}
	if (s->o.log)
		fprintf(s->o.log, "khbpf serve: listening on %s (port %u), grouping by %s\n",
			ho.listen, httpd__port(s->http),
			s->o.group_by == KHBPF_GROUP_CGROUP ? "cgroup" : "process");

	err = serve_loop(s);
	/* Interrupted or not, the window so far ends with a complete document. */
	stop_err = end_window(s);
	if (err)
		err = session__errf(errbuf, errlen, err, "serving: %s", strerror(-err));
	else if (stop_err)
		err = session__errf(errbuf, errlen, stop_err, "the last window: %s",
				    strerror(-stop_err));

cleanup:
	httpd__stop(s->http);
	session__destroy(s->sess);
	if (s->timerfd >= 0)
		close(s->timerfd);
	if (s->ndjson_fd > STDOUT_FILENO)
		close(s->ndjson_fd);
	free(s->doc);
	json_object_put(s->doc_obj);
	cgroup_names__free(s->names, s->nr_names);
	free(s->track);
	free(s->retired);
	free(s);
	return err;
}

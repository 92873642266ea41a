// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collect/sched_window.h"
#include "lib/fsutil.h"
#include "spans/spanrun.h"
#include "spans/spankeys.h"
#include "document/blockcause.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define SPAN_SITES_MAX_STR STR(KHBPF_MAX_SPAN_SITES)

int span_run__metric_index(struct span_run *r, const char *name, uint32_t *idx)
{
	size_t i;

	for (i = 0; i < r->nr_metrics; i++) {
		if (!strcmp(r->metrics[i], name)) {
			*idx = (uint32_t)i;
			return 0;
		}
	}
	if (r->nr_metrics == KHBPF_MAX_METRICS)
		return -E2BIG;
	snprintf(r->metrics[r->nr_metrics], SPANFIND_METRIC_MAX, "%s", name);
	*idx = (uint32_t)r->nr_metrics++;
	return 0;
}

int span_run__searched(struct span_run *r, const char *object)
{
	char **grown;
	size_t i;

	for (i = 0; i < r->nr_searched; i++)
		if (!strcmp(r->searched[i], object))
			return 0;
	grown = realloc(r->searched, (r->nr_searched + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	r->searched = grown;
	grown[r->nr_searched] = strdup(object);
	if (!grown[r->nr_searched])
		return -ENOMEM;
	r->nr_searched++;
	return 0;
}

static void site_error(struct span_site *s, int err, const char *what, const char *why)
{
	s->err = err;
	snprintf(s->reason, sizeof(s->reason), "%.120s: %.120s", what, why);
}

/*
 * run: the command is not started yet. Its executable and the libraries its
 * loader will map are known (spanfind__needed_objects); uprobes on them
 * attach by inode, before anything is mapped.
 */
static int discover_exe(struct span_run *r, const struct span_run_opts *o)
{
	char *self[1] = { (char *)o->exe }, **objects = NULL, reason[256] = "";
	size_t nr = 0;
	int err;

	err = spanfind__needed_objects(o->exe, &objects, &nr, reason, sizeof(reason));
	if (err == -ENOMEM)
		return err;
	if (err) {
		/* The executable alone; say why its libraries were not searched. */
		struct span_site *grown = realloc(r->sites, (r->nr_sites + 1) * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		r->sites = grown;
		memset(&grown[r->nr_sites], 0, sizeof(*grown));
		snprintf(grown[r->nr_sites].object, sizeof(grown->object), "%s", o->exe);
		grown[r->nr_sites].err = err;
		snprintf(grown[r->nr_sites].reason, sizeof(grown->reason), "%s", reason);
		r->nr_sites++;
	}
	err = spanfind__discover_list("/", err ? self : objects, err ? 1 : nr, o->reqs, o->nr_reqs,
				      &r->find, &r->sites, &r->nr_sites);
	spanfind__free_objects(objects, nr);
	return err;
}

/*
 * serve: each request's OBJ as a host path (a library name through the
 * ld.so cache), and the sites in those files. An OBJ missing or not
 * found fails here: serve says so before it starts.
 */
static int discover_host(struct span_run *r, const struct span_run_opts *o)
{
	struct span_request *reqs = calloc(o->nr_reqs ? o->nr_reqs : 1, sizeof(*reqs));
	char(*paths)[PATH_MAX] = calloc(o->nr_reqs ? o->nr_reqs : 1, sizeof(*paths));
	char **objects = calloc(o->nr_reqs ? o->nr_reqs : 1, sizeof(*objects));
	size_t i, j, nr = 0;
	struct stat st;
	int err = 0;

	if (!reqs || !paths || !objects) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < o->nr_reqs && !err; i++) {
		const char *obj = o->reqs[i].object;

		reqs[i] = o->reqs[i];
		if (!obj) {
			snprintf(o->reason, o->reason_size,
				 "request %zu has no OBJ: serve watches every process, so name the "
				 "file (a path or a library name, e.g. libpq.so.5:PQexec)",
				 i + 1);
			err = -EINVAL;
		} else if (strchr(obj, '/')) {
			if (obj[0] != '/' || stat(obj, &st)) {
				snprintf(o->reason, o->reason_size, "OBJ '%.200s': %s", obj,
					 obj[0] != '/' ? "no such file; give an absolute path" :
							 "no such file");
				err = -ENOENT;
			} else if (!S_ISREG(st.st_mode)) {
				snprintf(
					o->reason, o->reason_size,
					"OBJ '%.200s' is %s, not a regular file; give an ELF object",
					obj, fsutil__file_kind(st.st_mode));
				err = -EINVAL;
			} else {
				snprintf(paths[i], PATH_MAX, "%s", obj);
			}
		} else {
			err = spanobjects__host_library(obj, paths[i], o->reason, o->reason_size);
		}
		if (err)
			break;
		reqs[i].object = paths[i];
		for (j = 0; j < nr && strcmp(objects[j], paths[i]); j++)
			;
		if (j == nr)
			objects[nr++] = paths[i];
	}
	if (!err)
		err = spanfind__discover_list("/", objects, nr, reqs, o->nr_reqs, &r->find,
					      &r->sites, &r->nr_sites);
out:
	free(objects);
	free(paths);
	free(reqs);
	return err;
}

/* --key: the requested metrics, registered when no site has them yet (an exec may bring one). */
static int setup_keys(struct span_run *r, const struct span_run_opts *o)
{
	uint32_t *idx;
	size_t i;
	int err;

	if (!o->nr_key_reqs)
		return 0;
	idx = calloc(o->nr_key_reqs, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (i = 0; i < o->nr_key_reqs; i++)
		if (span_run__metric_index(r, o->key_reqs[i].metric, &idx[i]))
			idx[i] = KHBPF_MAX_METRICS;
	err = spankeys__setup(&r->keys, o->key_reqs, idx, o->nr_key_reqs, o->max_keys);
	free(idx);
	for (i = 0; !err && i < r->nr_sites; i++)
		spankeys__site(&r->keys, &r->sites[i], r->site_metric[i], NULL);
	return err;
}

/* --span-cause: the declared metrics, registered as --key's are. */
static int setup_causes(struct span_run *r, const struct span_run_opts *o)
{
	uint32_t idx;
	size_t i;

	if (!o->nr_cause_reqs)
		return 0;
	r->metric_cause = calloc(KHBPF_MAX_METRICS, sizeof(*r->metric_cause));
	r->cause_stretches = calloc(KHBPF_MAX_METRICS, sizeof(*r->cause_stretches));
	r->cause_prev = calloc(KHBPF_MAX_METRICS, sizeof(*r->cause_prev));
	if (!r->metric_cause || !r->cause_stretches || !r->cause_prev)
		return -ENOMEM;
	for (i = 0; i < o->nr_cause_reqs; i++)
		if (!span_run__metric_index(r, o->cause_reqs[i].metric, &idx))
			r->metric_cause[idx] = (uint8_t)(o->cause_reqs[i].cause + 1);
	return 0;
}

/* Hands the declared causes to the collector; one that times no blocked time takes none. */
static int apply_causes(struct span_run *r, struct sched_collector *c)
{
	uint32_t m;
	int err;

	if (!r->metric_cause)
		return 0;
	for (m = 0; m < KHBPF_MAX_METRICS; m++) {
		if (!r->metric_cause[m])
			continue;
		err = sched_collector__set_span_cause(c, m, r->metric_cause[m] - 1u);
		if (err == -EOPNOTSUPP)
			return 0;
		if (err)
			return err;
	}
	r->causes_applied = true;
	return 0;
}

/* Whether a target process is in another mount namespace than khbpf's (r->mnt_ns). */
static bool targets_foreign(const struct span_run *r, const struct span_run_opts *o)
{
	const pid_t *pids = o->nr_pids ? o->pids : &o->pid;
	size_t i, n = o->nr_pids ? o->nr_pids : 1;
	char path[PATH_MAX];
	struct stat st;

	for (i = 0; i < n; i++)
		if (fsutil__path(path, sizeof(path), o->root, "/proc/%d/ns/mnt", (int)pids[i]) >=
			    0 &&
		    !stat(path, &st) && st.st_ino != r->mnt_ns)
			return true;
	return false;
}

/*
 * Whether site s's object was read for its request alone: an absolute
 * OBJECT, and no annotation (read from every object looked in) of that
 * object among the sites. An object without annotations is searched again
 * at an exec all the same: what it finds again is dropped there.
 */
static bool named_only(const struct span_run *r, const struct span_run_opts *o,
		       const struct span_site *s)
{
	const char *obj = o->reqs[s->request - 1].object;
	size_t i;

	if (!obj || obj[0] != '/')
		return false;
	for (i = 0; i < r->nr_sites; i++)
		if (r->sites[i].from_note && !strcmp(r->sites[i].object, s->object))
			return false;
	return true;
}

int span_run__discover(struct span_run *r, const struct span_run_opts *o)
{
	struct stat ns;
	bool foreign;
	size_t i;
	int err;

	memset(r, 0, sizeof(*r));
	if (stat("/proc/self/ns/mnt", &ns))
		return -errno;
	r->mnt_ns = (uint32_t)ns.st_ino;
	r->reqs = o->reqs;
	r->nr_reqs = o->nr_reqs;
	r->find.no_annotations = o->no_annotations;
	r->find.debug_dirs = o->debug_dirs;
	r->find.nr_debug_dirs = o->nr_debug_dirs;
	r->max_records = o->max_records ? o->max_records : KHBPF_DEFAULT_MAX_SPANS;
	span_store__init(&r->events, r->max_records);
	r->metrics = calloc(KHBPF_MAX_METRICS, sizeof(*r->metrics));
	if (!r->metrics)
		return -ENOMEM;
	if (o->no_annotations && !o->nr_reqs)
		return 0;
	if (o->host)
		err = discover_host(r, o);
	else if (o->exe)
		err = discover_exe(r, o);
	else if (o->nr_pids > 1)
		err = spanfind__discover_pids(o->root, o->pids, o->nr_pids, o->reqs, o->nr_reqs,
					      &r->find, &r->sites, &r->nr_sites);
	else
		err = spanfind__discover(o->root, o->pid, o->reqs, o->nr_reqs, &r->find, &r->sites,
					 &r->nr_sites);
	/* Errors the sites carry are reported per site; only ENOMEM/ESRCH stop here. */
	if (err == -ENOMEM || err == -ESRCH || (o->host && err))
		return err;
	r->site_metric = calloc(r->nr_sites ? r->nr_sites : 1, sizeof(*r->site_metric));
	r->site_exec_pid = calloc(r->nr_sites ? r->nr_sites : 1, sizeof(*r->site_exec_pid));
	r->site_exec_delay_ns =
		calloc(r->nr_sites ? r->nr_sites : 1, sizeof(*r->site_exec_delay_ns));
	if (!r->site_metric || !r->site_exec_pid || !r->site_exec_delay_ns)
		return -ENOMEM;
	if (o->exe && span_run__searched(r, o->exe))
		return -ENOMEM;
	/*
	 * A container's objects are other files than the host's at the same
	 * paths: not marked searched by path (a later exec on the host of one
	 * of those paths is searched; one in the container is searched by its
	 * namespace, and what it finds again is known by its file).
	 */
	foreign = !o->host && !o->exe && targets_foreign(r, o);
	for (i = 0; !foreign && i < r->nr_sites; i++) {
		const struct span_site *s = &r->sites[i];

		/*
		 * A file only a request named by its path had that request
		 * looked up, not its annotations: a program the set execs later
		 * is named so, and its exec searches it.
		 */
		if (s->request && !s->from_note && named_only(r, o, s))
			continue;
		if (span_run__searched(r, s->object))
			return -ENOMEM;
	}
	for (i = 0; i < r->nr_sites; i++) {
		struct span_site *s = &r->sites[i];

		if (s->err || !s->metric[0])
			continue;
		if (span_run__metric_index(r, s->metric, &r->site_metric[i]))
			site_error(s, -E2BIG, s->metric,
				   "more than 1024 distinct metrics; this one is not attached");
	}
	err = setup_keys(r, o);
	return err ? err : setup_causes(r, o);
}

/* Whether a request or a site found (an annotation, a glob's match, failed or not) has metric. */
static bool metric_requested(const struct span_run *r, const struct span_run_opts *o,
			     const char *metric)
{
	size_t i;

	for (i = 0; i < r->nr_sites; i++)
		if (!strcmp(r->sites[i].metric, metric))
			return true;
	for (i = 0; i < o->nr_reqs; i++)
		if (span_request__has_metric(&o->reqs[i], metric))
			return true;
	return false;
}

/* Candidate i of the metrics there are: the sites', then the requests' own; NULL: none. */
static const char *metric_at(const struct span_run *r, const struct span_run_opts *o, size_t i)
{
	const char *m = i < r->nr_sites ? r->sites[i].metric : o->reqs[i - r->nr_sites].metric;

	return m && m[0] ? m : NULL;
}

/* The metrics there are, for the error: "a, b, c", cut short to size; "none" without any. */
static void metrics_known(const struct span_run *r, const struct span_run_opts *o, char *out,
			  size_t size)
{
	size_t i, j, n = 0;
	const char *m, *e;

	out[0] = '\0';
	for (i = 0; i < r->nr_sites + o->nr_reqs && n < size; i++) {
		m = metric_at(r, o, i);
		for (j = 0; m && j < i; j++) {
			e = metric_at(r, o, j);
			if (e && !strcmp(e, m))
				break;
		}
		if (m && j == i)
			n += (size_t)snprintf(out + n, size - n, "%s%s", n ? ", " : "", m);
	}
	if (!out[0])
		snprintf(out, size, "none");
}

int span_run__check(const struct span_run *r, const struct span_run_opts *o, char *buf, size_t size)
{
	char what[SPANFIND_SYMBOL_MAX + PATH_MAX + 16], hint[SPANFIND_SYMBOL_MAX + 96];
	char alt[SPANFIND_SYMBOL_MAX + 32];
	const struct span_site *absent;
	struct span_request named;
	char known[256];
	size_t i, j;
	bool found;

	for (i = 0; i < o->nr_reqs; i++) {
		absent = NULL;
		found = false;
		for (j = 0; j < r->nr_sites && !found; j++) {
			const struct span_site *s = &r->sites[j];

			if (s->request != i + 1)
				continue;
			found = !s->err;
			if (s->absent && !absent)
				absent = s;
		}
		if (found || !absent)
			continue;
		span_request__describe(&o->reqs[i], what, sizeof(what));
		hint[0] = '\0';
		/*
		 * run: a program the command execs later is not among what it
		 * maps at the start; a file named by its path is, by its inode.
		 */
		if (o->exe && !o->reqs[i].object) {
			named = o->reqs[i];
			named.object = "/PATH/OF/IT";
			span_request__describe(&named, alt, sizeof(alt));
			snprintf(hint, sizeof(hint),
				 "; for a program the command execs later, name its file: %s", alt);
		}
		snprintf(buf, size, "%s: %s%s", what, absent->reason, hint);
		return -ENOENT;
	}
	for (i = 0; i < o->nr_key_reqs + o->nr_cause_reqs; i++) {
		const struct key_request *k = i < o->nr_key_reqs ? &o->key_reqs[i] : NULL;
		const struct cause_request *c = k ? NULL : &o->cause_reqs[i - o->nr_key_reqs];
		const char *metric = k ? k->metric : c->metric;

		if (metric_requested(r, o, metric))
			continue;
		if (k)
			snprintf(what, sizeof(what), "--key %s=arg%u:%s", metric, k->arg,
				 k->kind == KHBPF_KEY_STR ? "str" : "int");
		else
			snprintf(what, sizeof(what), "--span-cause %s=%s", metric,
				 blockcause__name(c->cause) ?: "?");
		metrics_known(r, o, known, sizeof(known));
		snprintf(
			buf, size,
			"%s: no --span, --usdt-span, --usdt or annotation measures the metric '%s' (those there are: %s)",
			what, metric, known);
		return -ENOENT;
	}
	return 0;
}

size_t span_run__usable(const struct span_run *r)
{
	size_t i, n = 0;

	for (i = 0; i < r->nr_sites; i++)
		n += !r->sites[i].err;
	return n;
}

struct sched_span_site span_run__collector_site(const struct span_site *s, uint32_t metric)
{
	enum sched_span_role role = s->kind == SPAN_SITE_USDT_START ? SCHED_SPAN_OPEN :
				    s->kind == SPAN_SITE_USDT_DONE  ? SCHED_SPAN_CLOSE :
				    s->kind == SPAN_SITE_USDT_COUNT ? SCHED_SPAN_HIT :
								      SCHED_SPAN_FUNCTION;

	return (struct sched_span_site){ .path = s->open_path,
					 .offset = s->offset,
					 .ref_ctr_offset = s->ref_ctr_offset,
					 .metric = metric,
					 .arg_slot = s->key_slot,
					 .role = role };
}

bool span_run__has_kind(const struct span_run *r, const struct span_request *reqs, size_t nr_reqs,
			enum span_site_kind kind)
{
	size_t i;

	for (i = 0; i < nr_reqs; i++)
		if (reqs[i].provider && reqs[i].count == (kind == SPAN_SITE_USDT_COUNT))
			return true;
	for (i = 0; r && i < r->nr_sites; i++)
		if (r->sites[i].kind == kind)
			return true;
	return false;
}

void span_run__attach(struct span_run *r, struct sched_collector *c, pid_t pid)
{
	struct sched_span_site *v = calloc(r->nr_sites ? r->nr_sites : 1, sizeof(*v));
	size_t i, n = 0;
	char why[128];
	int err;

	if (!v) {
		span_run__unattach(r, "out of memory");
		return;
	}
	/* All at once: the collector puts the sites of one file in one link where it can. */
	for (i = 0; i < r->nr_sites; i++) {
		if (r->sites[i].err)
			continue;
		v[n++] = span_run__collector_site(&r->sites[i], r->site_metric[i]);
	}
	r->coll = c;
	err = spankeys__apply(&r->keys, c);
	if (!err)
		err = apply_causes(r, c);
	if (err) {
		span_run__unattach(r, strerror(-err));
		free(v);
		return;
	}
	err = sched_collector__attach_spans(c, v, n, pid);
	if (err < 0) {
		span_run__unattach(r, strerror(-err));
		free(v);
		return;
	}
	for (i = 0, n = 0; i < r->nr_sites; i++) {
		struct span_site *s = &r->sites[i];

		if (s->err)
			continue;
		err = v[n++].err;
		if (err == -E2BIG) {
			/* Metrics were bounded at discovery: this is the collector's site bound. */
			snprintf(why, sizeof(why),
				 "%.60s not attached: more than " SPAN_SITES_MAX_STR
				 " span sites in all",
				 s->symbol[0] ? s->symbol : s->metric);
			site_error(s, err, s->object, why);
			continue;
		}
		if (err) {
			s->err = err;
			snprintf(s->reason, sizeof(s->reason),
				 "%.100s: cannot attach uprobes at offset 0x%" PRIx64
				 " (%.40s): %.60s",
				 s->object, s->offset, s->symbol[0] ? s->symbol : s->metric,
				 strerror(-err));
			continue;
		}
		r->nr_attached++;
	}
	free(v);
}

/* A span still open when its thread exited: kept with those open at the end. */
static void span_run__open_at_exit(struct span_run *r, const struct khbpf_span_event *e)
{
	struct khbpf_span_event *grown;

	if (r->nr_exit_open == r->exit_open_cap) {
		size_t cap = r->exit_open_cap ? 2 * r->exit_open_cap : 16;

		grown = realloc(r->exit_open, cap * sizeof(*grown));
		if (!grown) {
			r->exit_open_lost++;
			return;
		}
		r->exit_open = grown;
		r->exit_open_cap = cap;
	}
	r->exit_open[r->nr_exit_open++] = *e;
}

void span_run__unattach(struct span_run *r, const char *why)
{
	size_t i;

	for (i = 0; i < r->nr_sites; i++)
		if (!r->sites[i].err)
			site_error(&r->sites[i], -ENOTSUP, "not attached", why);
	r->nr_attached = 0;
}

/*
 * A metric none of whose sites is attached was not measured at all; nor
 * was a USDT pair's with only one of its ends attached (its spans would
 * never open, or never close).
 */
static bool metric_attached(const struct span_run *r, uint32_t metric)
{
	bool function = false, start = false, done = false;
	size_t i;

	for (i = 0; i < r->nr_sites; i++) {
		if (r->sites[i].err || r->site_metric[i] != metric)
			continue;
		function |= r->sites[i].kind == SPAN_SITE_FUNCTION;
		start |= r->sites[i].kind == SPAN_SITE_USDT_START;
		done |= r->sites[i].kind == SPAN_SITE_USDT_DONE;
	}
	return function || (start && done);
}

bool span_run__metric_counted(const struct span_run *r, uint32_t metric, const char **probe)
{
	size_t i;

	for (i = 0; i < r->nr_sites; i++) {
		if (r->sites[i].err || r->site_metric[i] != metric ||
		    r->sites[i].kind != SPAN_SITE_USDT_COUNT)
			continue;
		if (probe)
			*probe = r->sites[i].symbol;
		return true;
	}
	return false;
}

/* A kept record's flag (never the kernel's): its wakers are in r->wakes. */
#define SPAN_F_WAKES 0x80000000u

void span_run__on_event(void *ctx, const struct khbpf_span_event *e,
			const struct khbpf_span_wakes *wakes)
{
	struct span_run *r = ctx;
	struct khbpf_span_event *slot;

	if (e->flags & KHBPF_SPAN_F_OPEN) {
		span_run__open_at_exit(r, e);
		return;
	}
	/* Memory follows the records kept (to within a chunk), up to the cap. */
	slot = span_store__add(&r->events);
	if (!slot) {
		r->events_over_cap++;
		return;
	}
	*slot = *e;
	slot->flags &= ~SPAN_F_WAKES;
	if (wakes && wakes->nr) {
		if (span_wakes__add(&r->wakes, e->span_id, wakes))
			r->wakes_lost++;
		else
			slot->flags |= SPAN_F_WAKES;
	}
}

/* The keys' aggregates, hits, wakers and open spans back to their metrics (spankeys). */
static int unkey(struct span_run *r, struct sched_collector *c)
{
	const struct span_keys_run run = {
		.aggs = &r->aggs,
		.nr_aggs = &r->nr_aggs,
		.hits = &r->hits,
		.nr_hits = &r->nr_hits,
		.wakers = r->metric_wakers,
		.nr_wakers = &r->nr_metric_wakers,
		.open = r->open,
		.nr_open = r->nr_open,
	};

	return spankeys__unkey(&r->keys, c, &run);
}

int span_run__finish(struct span_run *r, struct sched_collector *c)
{
	struct khbpf_span_event *grown;
	int n, err;

	if (!r->nr_attached)
		return 0;
	do {
		n = sched_collector__drain_spans(c);
	} while (n > 0);
	if (n < 0)
		return n;
	r->blocked = sched_collector__blocked(c);
	r->blocked_gap =
		sched_collector__blocked_asked(c) ? EV_GAP_UNSUPPORTED : EV_GAP_COLLECTOR_DISABLED;
	r->wakers = sched_collector__has_wakers(c);
	if (r->causes_applied)
		sched_collector__span_cause_stretches(c, r->cause_stretches, KHBPF_MAX_METRICS);
	err = sched_collector__span_wakers(c, &r->metric_wakers, &r->nr_metric_wakers);
	err = err ?: sched_collector__span_aggs(c, &r->aggs, &r->nr_aggs);
	err = err ?: sched_collector__usdt_hits(c, &r->hits, &r->nr_hits);
	err = err ?: sched_collector__open_spans(c, &r->open, &r->nr_open);
	if (err)
		return err;
	if (!r->nr_exit_open)
		return unkey(r, c);
	/* Those of threads that exited with spans open come first. */
	grown = realloc(r->exit_open, (r->nr_exit_open + r->nr_open) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	if (r->nr_open)
		memcpy(grown + r->nr_exit_open, r->open, r->nr_open * sizeof(*grown));
	free(r->open);
	r->open = grown;
	r->nr_open += r->nr_exit_open;
	r->exit_open = NULL;
	r->nr_exit_open = r->exit_open_cap = 0;
	return unkey(r, c);
}

/* What one window's document was made from: freed before serve's next window. */
static void window_reset(struct span_run *r)
{
	free(r->aggs);
	free(r->hits);
	free(r->open);
	free(r->doc_metrics);
	free(r->doc_keys);
	free(r->buckets);
	free(r->probes);
	free(r->doc_open);
	free(r->metric_wakers);
	free(r->metric_rows);
	free(r->key_rows);
	free(r->keys.v);
	free(r->keys.aggs);
	free(r->keys.hits);
	free(r->keys.wakers);
	free(r->keys.open_key);
	r->aggs = NULL;
	r->hits = NULL;
	r->open = NULL;
	r->doc_metrics = r->doc_keys = NULL;
	r->buckets = NULL;
	r->probes = NULL;
	r->doc_open = NULL;
	r->metric_wakers = NULL;
	r->metric_rows = r->key_rows = NULL;
	r->keys.v = NULL;
	r->keys.aggs = NULL;
	r->keys.hits = NULL;
	r->keys.wakers = NULL;
	r->keys.open_key = NULL;
	r->nr_aggs = r->nr_hits = r->nr_open = r->nr_metric_wakers = 0;
	r->nr_doc_metrics = r->nr_doc_keys = 0;
	r->keys.nr = r->keys.nr_aggs = r->keys.nr_hits = r->keys.nr_wakers = 0;
}

static int series_cmp(const void *a, const void *b)
{
	return memcmp(&((const struct span_series_entry *)a)->key,
		      &((const struct span_series_entry *)b)->key,
		      sizeof(struct khbpf_span_series_key));
}

static int agg_metric_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct span_agg_entry *)a)->key.metric;
	uint32_t y = ((const struct span_agg_entry *)b)->key.metric;

	return x < y ? -1 : x > y;
}

_Static_assert(sizeof(struct khbpf_span_agg) % sizeof(uint64_t) == 0,
	       "khbpf_span_agg: u64 fields only");

/*
 * d = now - before, field by field; a series that restarted (removed and
 * made again since: fewer calls now) counts whole.
 */
static void series_delta(struct khbpf_span_agg *d, const struct khbpf_span_agg *now,
			 const struct khbpf_span_agg *before)
{
	const uint64_t *n = (const uint64_t *)now, *b = (const uint64_t *)before;
	uint64_t *w = (uint64_t *)d;
	size_t i;

	if (!before || now->calls < before->calls) {
		*d = *now;
		return;
	}
	for (i = 0; i < sizeof(*d) / sizeof(uint64_t); i++)
		w[i] = n[i] >= b[i] ? n[i] - b[i] : 0;
}

void span_run__series_forget(struct span_run *r, const struct khbpf_span_series_key *key)
{
	struct span_series_entry *e = r->nr_series_prev ?
					      bsearch(key, r->series_prev, r->nr_series_prev,
						      sizeof(*r->series_prev), series_cmp) :
					      NULL;

	/* Made again later, the series counts from zero. */
	if (e)
		memset(&e->agg, 0, sizeof(e->agg));
}

int span_run__series_window(struct span_run *r, struct sched_collector *c)
{
	struct span_series_entry *now = NULL;
	struct span_agg_entry *aggs;
	struct usdt_hit_entry *hits;
	size_t nr = 0, i, na = 0, nh = 0, j;
	int err;

	window_reset(r);
	if (!r->nr_attached)
		return 0;
	err = spankeys__load(&r->keys, c);
	err = err ?: sched_collector__span_series(c, &now, &nr);
	if (err)
		return err;
	if (nr)
		qsort(now, nr, sizeof(*now), series_cmp);
	aggs = calloc(nr + r->nr_metrics + 1, sizeof(*aggs));
	hits = calloc(nr + r->nr_metrics + 1, sizeof(*hits));
	if (!aggs || !hits) {
		free(aggs);
		free(hits);
		free(now);
		return -ENOMEM;
	}
	for (i = 0; i < nr; i++) {
		const struct span_series_entry *before =
			r->nr_series_prev ? bsearch(&now[i], r->series_prev, r->nr_series_prev,
						    sizeof(*now), series_cmp) :
					    NULL;
		const struct span_key *k = spankeys__find(&r->keys, now[i].key.metric);
		struct khbpf_span_agg d;

		series_delta(&d, &now[i].agg, before ? &before->agg : NULL);
		if (!d.calls)
			continue;
		/* Summed over the groups: the document's metrics are the host's (tid 0). */
		if (span_run__metric_counted(r, k ? k->metric : now[i].key.metric, NULL)) {
			hits[nh].key.metric = now[i].key.metric;
			hits[nh++].hits = d.calls;
			continue;
		}
		aggs[na].key.metric = now[i].key.metric;
		aggs[na++].agg = d;
	}
	free(r->series_prev);
	r->series_prev = now;
	r->nr_series_prev = nr;
	/* Calls of series the table had no room for: each metric's spill. */
	if (!r->spill_prev)
		r->spill_prev = calloc(KHBPF_MAX_METRICS, sizeof(*r->spill_prev));
	for (i = 0; r->spill_prev && i < r->nr_metrics; i++) {
		struct khbpf_span_agg spill, d;
		bool keyed = r->keys.kind && r->keys.kind[i];

		if (sched_collector__span_series_spill(c, (uint32_t)i, &spill))
			continue;
		series_delta(&d, &spill, &r->spill_prev[i]);
		r->spill_prev[i] = spill;
		if (!d.calls)
			continue;
		if (span_run__metric_counted(r, (uint32_t)i, NULL)) {
			hits[nh].key.metric =
				keyed ? KHBPF_OTHER_METRIC_BASE + (uint32_t)i : (uint32_t)i;
			hits[nh++].hits = d.calls;
			continue;
		}
		/* A keyed metric's spill has lost its keys: its "(other)". */
		aggs[na].key.metric = keyed ? KHBPF_OTHER_METRIC_BASE + (uint32_t)i : (uint32_t)i;
		aggs[na++].agg = d;
	}
	/* One entry per metric id. */
	if (na)
		qsort(aggs, na, sizeof(*aggs), agg_metric_cmp);
	for (i = 0, j = 0; i < na; i++) {
		if (j && aggs[j - 1].key.metric == aggs[i].key.metric)
			sched_collector__span_agg_add(&aggs[j - 1].agg, &aggs[i].agg);
		else
			aggs[j++] = aggs[i];
	}
	r->aggs = aggs;
	r->nr_aggs = j;
	r->hits = hits;
	r->nr_hits = nh;
	r->blocked = sched_collector__blocked(c);
	r->blocked_gap =
		sched_collector__blocked_asked(c) ? EV_GAP_UNSUPPORTED : EV_GAP_COLLECTOR_DISABLED;
	r->wakers = false;
	r->by_group = true;
	if (r->causes_applied) {
		/* What the kernel's counts of named stretches added over the window. */
		sched_collector__span_cause_stretches(c, r->cause_stretches, KHBPF_MAX_METRICS);
		for (i = 0; i < KHBPF_MAX_METRICS; i++) {
			uint64_t count = r->cause_stretches[i];

			r->cause_stretches[i] = count - r->cause_prev[i];
			r->cause_prev[i] = count;
		}
	}
	return unkey(r, c);
}

/* Start relative to the window's start, as the document has it (0 before it). */
static uint64_t rel_start(uint64_t start_ns, uint64_t start_mono_ns)
{
	return start_ns > start_mono_ns ? start_ns - start_mono_ns : 0;
}

/* The document's order: by start, then span id. */
static int event_cmp(const void *a, const void *b, void *ctx)
{
	const struct khbpf_span_event *x = a, *y = b;
	uint64_t mono = *(const uint64_t *)ctx;
	uint64_t sx = rel_start(x->start_ns, mono), sy = rel_start(y->start_ns, mono);

	if (sx != sy)
		return sx < sy ? -1 : 1;
	return x->span_id < y->span_id ? -1 : x->span_id > y->span_id;
}

static void span_hw_field(const struct khbpf_span_hw *h, struct ev_u64 *begin, struct ev_u64 *end)
{
	/* No reading, multiplexed or an uncounted stint: nothing exact to say. */
	if (h->status != KHBPF_VCTR_OK) {
		*begin = ev_u64__gap(EV_GAP_UNAVAILABLE);
		*end = ev_u64__gap(EV_GAP_UNAVAILABLE);
		return;
	}
	*begin = ev_u64__recorded(h->begin);
	*end = ev_u64__recorded(h->end);
}

/*
 * A span's (or the sum over a metric's calls') ledger. Blocked time is a
 * gap where it was not timed, and where a switch-in was missed (its
 * off-CPU stretch is then unknown); what the stretches' time leaves after
 * run_delay and blocked time is unattributed.
 */
static void ledger_from(struct span_ledger *out, const struct khbpf_span_ledger *l, uint64_t calls,
			uint64_t gap_calls, bool blocked, enum ev_gap blocked_gap)
{
	struct blocked_evidence *b = &out->blocked;
	bool clock_gap = gap_calls > 0;
	int i;

	/*
	 * The kernel's sum (span.bpf.c) is over the calls without a clock gap:
	 * kept with its coverage when it covers some, a gap when none.
	 */
	out->on_cpu_ns = clock_gap && gap_calls >= calls ? ev_u64__gap(EV_GAP_UNAVAILABLE) :
							   ev_u64__recorded(l->on_cpu_ns);
	out->on_cpu_partial = clock_gap && gap_calls < calls;
	out->on_cpu_covered_calls = gap_calls < calls ? calls - gap_calls : 0;
	out->on_cpu_calls = calls;
	out->run_delay_ns = l->run_delay_ns;
	out->voluntary_switches = l->nvcsw;
	out->involuntary_switches = l->nivcsw;
	out->migrations = l->migrations;
	memset(b, 0, sizeof(*b));
	if (!blocked || clock_gap) {
		b->reason = blocked ? EV_GAP_UNAVAILABLE : blocked_gap;
		return;
	}
	b->recorded = true;
	for (i = 0; i < BLOCK_CAUSES; i++) {
		b->ns[i] = l->blocked.ns[i];
		b->count[i] = l->blocked.count[i];
	}
	b->unattributed_ns = (int64_t)(l->offcpu_ns - l->run_delay_ns - blocked_evidence__total(b));
}

void span_run__record(const void *ctx, size_t i, struct span_record *s)
{
	const struct span_run *r = ctx;
	const struct khbpf_span_event *e = &r->events.recs[i];
	const struct span_key *k = spankeys__find(&r->keys, e->metric);
	uint32_t metric = k ? k->metric : e->metric;

	memset(s, 0, sizeof(*s));
	s->span_id = e->span_id;
	s->parent_span_id = e->parent_span_id ? ev_u64__recorded(e->parent_span_id) :
						ev_u64__gap(EV_GAP_UNAVAILABLE);
	snprintf(s->metric_id, sizeof(s->metric_id), "%s",
		 metric < r->nr_metrics ? r->metrics[metric] : "unknown");
	if (k)
		span_run__doc_key(r, (uint32_t)(k - r->keys.v), &s->key);
	s->start_ns = rel_start(e->start_ns, r->start_mono_ns);
	s->inclusive_ns = e->inclusive_ns;
	s->exclusive_ns = e->exclusive_ns;
	s->thread_id = e->tid;
	s->task_id = ev_u64__gap(EV_GAP_UNAVAILABLE);
	s->worker_id = ev_u64__gap(EV_GAP_UNAVAILABLE);
	s->hardware_reason = r->hw_reason;
	if (r->counters) {
		s->hardware_recorded = true;
		span_hw_field(&e->hw[KHBPF_CTR_CYCLES], &s->hardware.cycles_begin,
			      &s->hardware.cycles_end);
		span_hw_field(&e->hw[KHBPF_CTR_INSTRUCTIONS], &s->hardware.instructions_begin,
			      &s->hardware.instructions_end);
	}
	s->has_ledger = true;
	ledger_from(&s->ledger, &e->ledger, 1, e->flags & KHBPF_SPAN_F_CLOCK_GAP ? 1 : 0,
		    r->blocked, r->blocked_gap);
	if (r->wakers && s->ledger.blocked.recorded)
		span_wakes__evidence(
			&r->wakes,
			e->flags & SPAN_F_WAKES ? span_wakes__find(&r->wakes, e->span_id) : NULL,
			r->start_mono_ns, s->waker_rows, &s->ledger.blocked);
}

int span_run__name_wakers(struct span_run *r, const struct waker_entry *t, size_t n)
{
	return span_wakes__seal(&r->wakes, t, n);
}

/* The exact hardware aggregation, from the in-kernel totals. */
static int span_run__hw_aggregation(const struct span_run *r, bool counters,
				    struct span_hw_aggregation *agg)
{
	struct span_hw_total *t = calloc(r->nr_aggs ? r->nr_aggs : 1, sizeof(*t));
	size_t i;
	int err;

	if (!t)
		return -ENOMEM;
	for (i = 0; i < r->nr_aggs; i++) {
		const struct span_agg_entry *a = &r->aggs[i];

		t[i].metric_id =
			a->key.metric < r->nr_metrics ? r->metrics[a->key.metric] : "unknown";
		t[i].thread_id = a->key.tid;
		t[i].calls = a->agg.calls;
		t[i].hardware = counters;
		t[i].with_counters = a->agg.hw_calls;
		t[i].cycles = a->agg.hw_sum[KHBPF_CTR_CYCLES];
		t[i].instructions = a->agg.hw_sum[KHBPF_CTR_INSTRUCTIONS];
	}
	err = span_hw_aggregation__from_totals(agg, t, r->nr_aggs);
	free(t);
	return err;
}

/* Span wakers sorted by metric (or key id), and the rows their names go into. */
struct waker_table {
	const struct span_waker_entry *v;
	size_t n;
	struct waker_row *rows;
};

/*
 * m's totals, ledger and histogram from the aggregates of metric (or key
 * index) want; its wakers from wk's run of want (wk NULL: none).
 */
static void build_metric(struct span_run *r, struct span_metric *m,
			 const struct span_agg_entry *aggs, size_t n, uint32_t want,
			 const struct waker_table *wk, size_t *nb)
{
	uint64_t hist[KHBPF_RQ_SLOTS] = { 0 }, gaps = 0;
	struct khbpf_span_ledger l = { 0 };
	size_t j, k;

	for (j = 0; j < n; j++) {
		const struct span_agg_entry *a = &aggs[j];

		if (a->key.metric != want)
			continue;
		m->calls += a->agg.calls;
		m->inclusive_ns += a->agg.inclusive_ns;
		m->exclusive_ns += a->agg.exclusive_ns;
		l.on_cpu_ns += a->agg.ledger.on_cpu_ns;
		l.run_delay_ns += a->agg.ledger.run_delay_ns;
		l.nvcsw += a->agg.ledger.nvcsw;
		l.nivcsw += a->agg.ledger.nivcsw;
		l.migrations += a->agg.ledger.migrations;
		l.offcpu_ns += a->agg.ledger.offcpu_ns;
		for (k = 0; k < KHBPF_BLOCK_CAUSES; k++) {
			l.blocked.ns[k] += a->agg.ledger.blocked.ns[k];
			l.blocked.count[k] += a->agg.ledger.blocked.count[k];
		}
		gaps += a->agg.clock_gap_calls;
		for (k = 0; k < KHBPF_RQ_SLOTS; k++)
			hist[k] += a->agg.hist[k];
	}
	ledger_from(&m->ledger, &l, m->calls, gaps, r->blocked, r->blocked_gap);
	if (wk && r->wakers && m->ledger.blocked.recorded) {
		for (j = 0; j < wk->n && wk->v[j].key.metric < want; j++)
			;
		for (k = j; k < wk->n && wk->v[k].key.metric == want; k++)
			;
		span_wakes__metric(&r->wakes, &wk->v[j], k - j, &wk->rows[j], &m->ledger.blocked);
	}
	m->histogram = &r->buckets[*nb];
	for (k = 0; k < KHBPF_RQ_SLOTS; k++) {
		if (!hist[k])
			continue;
		r->buckets[*nb].lower_bound = rq_slot__lower((unsigned int)k);
		r->buckets[*nb].upper_bound = rq_slot__upper((unsigned int)k);
		r->buckets[*nb].count = hist[k];
		(*nb)++;
		m->nr_buckets++;
	}
}

void span_run__doc_key(const struct span_run *r, uint32_t k, struct doc_key *out)
{
	const struct span_key *key = &r->keys.v[k];

	out->text = key->text;
	out->is_str = key->is_str;
	out->truncated = key->truncated;
	out->other = key->other;
}

static int key_by_inclusive(const void *a, const void *b)
{
	const struct span_metric *x = a, *y = b;

	if (x->key.other != y->key.other)
		return x->key.other ? 1 : -1;
	if (x->inclusive_ns != y->inclusive_ns)
		return x->inclusive_ns > y->inclusive_ns ? -1 : 1;
	return strcmp(x->key.text, y->key.text);
}

/* A keyed metric's keys with calls, each a span_metric of its own, with its own wakers. */
static void key_metrics(struct span_run *r, struct span_metric *m, uint32_t metric, size_t *nb)
{
	const struct waker_table wk = { r->keys.wakers, r->keys.nr_wakers, r->key_rows };
	struct span_metric *v = r->doc_keys + r->nr_doc_keys;
	size_t i, j, n = 0;

	for (i = 0; i < r->keys.nr; i++) {
		const struct span_key *k = &r->keys.v[i];
		struct span_metric *km = &v[n];

		if (k->metric != metric)
			continue;
		memset(km, 0, sizeof(*km));
		snprintf(km->metric_id, sizeof(km->metric_id), "%s", m->metric_id);
		build_metric(r, km, r->keys.aggs, r->keys.nr_aggs, (uint32_t)i, &wk, nb);
		for (j = 0; j < r->nr_open; j++)
			km->unfinished += r->keys.open_key && r->keys.open_key[j] == i + 1;
		if (!km->calls && !km->unfinished) {
			/* Buckets of a key without calls: none were taken. */
			continue;
		}
		km->is_key = true;
		km->key.text = k->text;
		km->key.is_str = k->is_str;
		km->key.truncated = k->truncated;
		km->key.other = k->other;
		n++;
	}
	qsort(v, n, sizeof(*v), key_by_inclusive);
	m->keys = v;
	m->nr_keys = n;
	r->nr_doc_keys += n;
}

int span_run__document(struct span_run *r, uint64_t start_mono_ns, bool counters,
		       enum ev_gap hw_reason, struct evidence_doc *doc,
		       struct span_hw_aggregation *agg)
{
	struct waker_table wk;
	size_t i, j, nb = 0;

	r->doc_metrics = calloc(r->nr_metrics ? r->nr_metrics : 1, sizeof(*r->doc_metrics));
	r->doc_keys = calloc(r->keys.nr + 1, sizeof(*r->doc_keys));
	r->buckets = calloc((r->nr_metrics + r->keys.nr) * KHBPF_RQ_SLOTS + 1, sizeof(*r->buckets));
	r->probes = calloc(r->nr_sites ? r->nr_sites : 1, sizeof(*r->probes));
	r->doc_open = calloc(r->nr_open ? r->nr_open : 1, sizeof(*r->doc_open));
	r->metric_rows =
		calloc(r->nr_metric_wakers ? r->nr_metric_wakers : 1, sizeof(*r->metric_rows));
	r->key_rows = calloc(r->keys.nr_wakers + 1, sizeof(*r->key_rows));
	if (!r->doc_metrics || !r->doc_keys || !r->buckets || !r->probes || !r->doc_open ||
	    !r->metric_rows || !r->key_rows)
		return -ENOMEM;

	for (i = 0; i < r->nr_open; i++) {
		const struct khbpf_span_event *e = &r->open[i];
		struct open_span *o = &r->doc_open[i];

		o->span_id = e->span_id;
		o->parent_span_id = e->parent_span_id ? ev_u64__recorded(e->parent_span_id) :
							ev_u64__gap(EV_GAP_UNAVAILABLE);
		snprintf(o->metric_id, sizeof(o->metric_id), "%s",
			 e->metric < r->nr_metrics ? r->metrics[e->metric] : "unknown");
		o->thread_id = e->tid;
		o->start_ns = e->start_ns > start_mono_ns ? e->start_ns - start_mono_ns : 0;
		if (r->keys.open_key && r->keys.open_key[i])
			span_run__doc_key(r, r->keys.open_key[i] - 1, &o->key);
	}

	/*
	 * Records stay as delivered (compact, fixed size) and are made into
	 * the document's form one at a time as it is written (span_run__record).
	 */
	r->start_mono_ns = start_mono_ns;
	r->counters = counters;
	r->hw_reason = hw_reason;
	if (r->events.nr)
		qsort_r(r->events.recs, r->events.nr, sizeof(*r->events.recs), event_cmp,
			&r->start_mono_ns);

	r->nr_doc_metrics = 0;
	wk = (struct waker_table){ r->metric_wakers, r->nr_metric_wakers, r->metric_rows };
	for (i = 0; i < r->nr_metrics; i++) {
		struct span_metric *m;

		if (!metric_attached(r, (uint32_t)i))
			continue;
		m = &r->doc_metrics[r->nr_doc_metrics++];
		snprintf(m->metric_id, sizeof(m->metric_id), "%s", r->metrics[i]);
		m->declared_cause = r->causes_applied ? r->metric_cause[i] : 0;
		m->declared_cause_stretches = m->declared_cause ? r->cause_stretches[i] : 0;
		build_metric(r, m, r->aggs, r->nr_aggs, (uint32_t)i, &wk, &nb);
		for (j = 0; j < r->nr_open; j++)
			m->unfinished += r->open[j].metric == i;
		if (r->keys.kind && r->keys.kind[i])
			key_metrics(r, m, (uint32_t)i, &nb);
	}

	for (i = 0; i < r->nr_sites; i++) {
		const struct span_site *s = &r->sites[i];
		struct span_probe *p = &r->probes[i];

		snprintf(p->object, sizeof(p->object), "%s", s->object);
		snprintf(p->symbol, sizeof(p->symbol), "%s", s->symbol);
		snprintf(p->symbols_from, sizeof(p->symbols_from), "%s", s->symbols_from);
		p->site = span_site_kind__name(s->kind);
		snprintf(p->metric_id, sizeof(p->metric_id), "%s", s->metric);
		p->attached = !s->err;
		snprintf(p->reason, sizeof(p->reason), "%s", s->reason);
		p->exec_pid = r->site_exec_pid ? r->site_exec_pid[i] : 0;
		p->attach_delay_ns = r->site_exec_delay_ns ? r->site_exec_delay_ns[i] : 0;
	}

	doc->events.spans = NULL;
	doc->events.nr_spans = r->events.nr;
	doc->events.span_at = span_run__record;
	doc->events.span_ctx = r;
	doc->span_metrics = r->doc_metrics;
	doc->nr_span_metrics = r->nr_doc_metrics;
	doc->span_probes = r->probes;
	doc->nr_span_probes = r->nr_sites;
	doc->open_spans = r->doc_open;
	doc->nr_open_spans = r->nr_open;
	return span_run__hw_aggregation(r, counters, agg);
}

void span_run__free(struct span_run *r)
{
	spanfind__free(r->sites, r->nr_sites);
	free(r->site_metric);
	free(r->site_exec_pid);
	free(r->site_exec_delay_ns);
	spanfind__free_objects(r->searched, r->nr_searched);
	free(r->metrics);
	span_store__free(&r->events);
	free(r->aggs);
	free(r->hits);
	free(r->open);
	free(r->exit_open);
	free(r->doc_metrics);
	free(r->doc_keys);
	spankeys__free(&r->keys);
	free(r->metric_cause);
	free(r->cause_stretches);
	free(r->cause_prev);
	free(r->buckets);
	free(r->probes);
	free(r->doc_open);
	span_wakes__free(&r->wakes);
	free(r->metric_wakers);
	free(r->metric_rows);
	free(r->key_rows);
	free(r->series_prev);
	free(r->spill_prev);
	memset(r, 0, sizeof(*r));
}

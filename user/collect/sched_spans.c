// SPDX-License-Identifier: MIT
/*
 * Span probes of a loaded collector: attaching the sites (uprobe_multi
 * links where the kernel has them, else a uprobe and a uretprobe link per
 * site), the ring buffer of span records, and the open spans. See
 * sched_collector.h.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "host/kfeatures.h"
#include "collect/linkset.h"
#include "sched.skel.h"
#include "collect/bpfdump.h"
#include "collect/sched_collector.h"
#include "collect/sched_collector_priv.h"
#include "host/uprobe_multi.h"

/*
 * A record: the span, its counter readings when counters are on, and with
 * wakers, when the span had any, its wakeups (khbpf_span_wakes) after them.
 */
/* A member exec'd: the loader looks for span sites in it (its callback may attach more). */
static int exec_event_cb(void *ctx, void *data, size_t size)
{
	struct sched_collector *c = ctx;
	struct khbpf_exec_event e;

	if (size != sizeof(e)) {
		c->malformed++;
		return 0;
	}
	memcpy(&e, data, sizeof(e));
	e.path[sizeof(e.path) - 1] = '\0';
	if (c->on_exec)
		c->on_exec(c->on_span_ctx, &e);
	return 0;
}

static int span_event_cb(void *ctx, void *data, size_t size)
{
	struct sched_collector *c = ctx;
	size_t ev = c->nr_counters ? sizeof(struct khbpf_span_event) : KHBPF_SPAN_EVENT_NOHW_SIZE;
	struct khbpf_span_wakes wakes;
	struct khbpf_span_event full;
	bool with_wakes = c->wakers && size == ev + sizeof(wakes);

	if (size != ev && !with_wakes) {
		c->malformed++;
		return 0;
	}
	memcpy(&full, data, ev);
	if (ev < sizeof(full))
		memset(full.hw, 0, sizeof(full.hw));
	if (with_wakes) {
		memcpy(&wakes, (char *)data + ev, sizeof(wakes));
		if (wakes.nr > KHBPF_WAKE_LOG) {
			c->malformed++;
			return 0;
		}
	}
	c->delivered++;
	if (c->on_span)
		c->on_span(c->on_span_ctx, &full, with_wakes ? &wakes : NULL);
	return 0;
}

/* The programs of a site: what opens it (or NULL) and what closes it (or NULL). */
static void span_progs(struct sched_collector *c, enum sched_span_role role,
		       struct bpf_program **open, struct bpf_program **close)
{
	struct sched_bpf *k = c->skel;
	bool fetch = c->feat.have[KFEAT_ATOMIC_FETCH];

	*open = *close = NULL;
	if (role == SCHED_SPAN_HIT)
		*open = k->progs.khbpf_usdt_hit;
	else if (role != SCHED_SPAN_CLOSE)
		*open = fetch ? k->progs.khbpf_span_enter : k->progs.khbpf_span_enter_nofetch;
	if (role == SCHED_SPAN_FUNCTION)
		*close = fetch ? k->progs.khbpf_span_exit : k->progs.khbpf_span_exit_nofetch;
	else if (role == SCHED_SPAN_CLOSE)
		*close = fetch ? k->progs.khbpf_span_close : k->progs.khbpf_span_close_nofetch;
}

/* Its metric, and in the high half its keyed argument's slot (keyed_metric in span.bpf.c). */
static uint64_t site_cookie(const struct sched_span_site *site)
{
	return (uint64_t)site->metric | (uint64_t)site->arg_slot << 32;
}

/*
 * One site, the classic way: a link of its own per program, a uprobe (and
 * for a function a uretprobe); a USDT semaphore is the uprobe's reference
 * counter.
 */
static int attach_site(struct sched_collector *c, const struct sched_span_site *site, pid_t pid)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = site_cookie(site),
		    .ref_ctr_offset = (size_t)site->ref_ctr_offset);
	struct bpf_program *opener, *closer;
	struct bpf_link *in = NULL, *out = NULL;
	int err;

	span_progs(c, site->role, &opener, &closer);
	if (!c->feat.have[KFEAT_ATTACH_COOKIE]) {
		/*
		 * No cookies (the kernel refuses a nonzero one): the site map says
		 * the metric, one per role: a span program and a --usdt hit
		 * program may share a site, two span metrics may not.
		 */
		struct khbpf_site_key key = { .offset = site->offset };
		struct khbpf_site_val val = { .metric = { KHBPF_SITE_NONE, KHBPF_SITE_NONE } };
		unsigned int role = site->role == SCHED_SPAN_HIT ? KHBPF_SITE_HIT : KHBPF_SITE_SPAN;
		struct stat st;

		if (stat(site->path, &st))
			return -errno;
		key.ino = st.st_ino;
		uo.bpf_cookie = 0;
		bpf_map__lookup_elem(c->skel->maps.span_site_metric, &key, sizeof(key), &val,
				     sizeof(val), 0);
		if (val.metric[role] != KHBPF_SITE_NONE &&
		    (val.metric[role] != site->metric || val.slot[role] != site->arg_slot))
			return -EBUSY;
		val.metric[role] = site->metric;
		val.slot[role] = site->arg_slot;
		err = bpf_map__update_elem(c->skel->maps.span_site_metric, &key, sizeof(key), &val,
					   sizeof(val), BPF_ANY);
		if (err)
			return err;
	}
	if (opener) {
		uo.retprobe = false;
		in = bpf_program__attach_uprobe_opts(opener, pid, site->path, (size_t)site->offset,
						     &uo);
		if (!in)
			return -errno;
	}
	if (closer) {
		uo.retprobe = site->role == SCHED_SPAN_FUNCTION;
		out = bpf_program__attach_uprobe_opts(closer, pid, site->path, (size_t)site->offset,
						      &uo);
		if (!out) {
			err = -errno;
			bpf_link__destroy(in);
			return err;
		}
	}
	/* Room and memory for both are made sure of before (attach_spans). */
	if (in)
		linkset__add_link(&c->span_links, in);
	if (out)
		linkset__add_link(&c->span_links, out);
	return 0;
}

/*
 * Errors that say nothing about one site in particular (the file, the
 * process, privilege, memory): a group failing with one is not split.
 */
static bool group_error(int err)
{
	return err == -ENOENT || err == -ESRCH || err == -EPERM || err == -EACCES ||
	       err == -ENOMEM || err == -EMFILE || err == -ENFILE || err == -EBADF;
}

struct group_bufs {
	uint64_t *offsets, *cookies, *ref_ctrs;
};

/*
 * Sites idx[0..n) of one file and role in one uprobe_multi link per
 * program (entry and return for functions), each site's metric its cookie.
 * When the kernel refuses the group, it is split in halves until each
 * failing site is alone with its own error, and the others attach (each
 * refused try costs a grace period in the kernel: a few bad sites among
 * many cost a few tries per halving).
 */
static void attach_group(struct sched_collector *c, struct sched_span_site *sites, size_t *idx,
			 size_t n, const struct group_bufs *b, pid_t pid)
{
	const struct sched_span_site *first = &sites[idx[0]];
	struct bpf_program *opener, *closer;
	int in = -1, out = -1, err = 0;
	bool any_ref = false;
	size_t i;

	/* Every process (pid -1 to the per-site attach): the link's pid 0. */
	if (pid < 0)
		pid = 0;
	for (i = 0; i < n; i++) {
		b->offsets[i] = sites[idx[i]].offset;
		b->cookies[i] = site_cookie(&sites[idx[i]]);
		b->ref_ctrs[i] = sites[idx[i]].ref_ctr_offset;
		any_ref |= b->ref_ctrs[i] != 0;
	}
	span_progs(c, first->role, &opener, &closer);
	if (opener) {
		in = uprobe_multi__attach(bpf_program__fd(opener), first->path, b->offsets,
					  b->cookies, any_ref ? b->ref_ctrs : NULL, (uint32_t)n,
					  pid, false);
		err = in < 0 ? in : 0;
	}
	if (!err && closer) {
		out = uprobe_multi__attach(bpf_program__fd(closer), first->path, b->offsets,
					   b->cookies, any_ref ? b->ref_ctrs : NULL, (uint32_t)n,
					   pid, first->role == SCHED_SPAN_FUNCTION);
		err = out < 0 ? out : 0;
	}
	if (!err) {
		if (in >= 0)
			linkset__add_fd(&c->span_links, in);
		if (out >= 0)
			linkset__add_fd(&c->span_links, out);
		for (i = 0; i < n; i++)
			sites[idx[i]].err = 0;
		return;
	}
	if (in >= 0)
		close(in);
	if (n == 1 || group_error(err)) {
		for (i = 0; i < n; i++)
			sites[idx[i]].err = err;
		return;
	}
	attach_group(c, sites, idx, n / 2, b, pid);
	attach_group(c, sites, idx + n / 2, n - n / 2, b, pid);
}

static int site_cmp(const void *a, const void *b, void *arg)
{
	const struct sched_span_site *x = &((struct sched_span_site *)arg)[*(const size_t *)a];
	const struct sched_span_site *y = &((struct sched_span_site *)arg)[*(const size_t *)b];
	int d = strcmp(x->path, y->path);

	if (d)
		return d;
	if (x->role != y->role)
		return x->role < y->role ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* uprobe_multi: the sites grouped by file and role, a link per program and group. */
static int attach_multi(struct sched_collector *c, struct sched_span_site *sites, size_t nr,
			pid_t pid)
{
	size_t *idx = calloc(nr ? nr : 1, sizeof(*idx)), i, j, n = 0;
	struct group_bufs b = {
		.offsets = calloc(nr ? nr : 1, sizeof(uint64_t)),
		.cookies = calloc(nr ? nr : 1, sizeof(uint64_t)),
		.ref_ctrs = calloc(nr ? nr : 1, sizeof(uint64_t)),
	};
	int err = 0;

	if (!idx || !b.offsets || !b.cookies || !b.ref_ctrs) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < nr; i++)
		if (!sites[i].err)
			idx[n++] = i;
	qsort_r(idx, n, sizeof(*idx), site_cmp, sites);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !strcmp(sites[idx[j]].path, sites[idx[i]].path) &&
				sites[idx[j]].role == sites[idx[i]].role;
		     j++)
			;
		attach_group(c, sites, idx + i, j - i, &b, pid);
	}
cleanup:
	free(idx);
	free(b.offsets);
	free(b.cookies);
	free(b.ref_ctrs);
	return err;
}

int sched_collector__attach_spans(struct sched_collector *c, struct sched_span_site *sites,
				  size_t nr, pid_t pid)
{
	size_t i, n = 0;
	int err;

	/* Every link made below then has its place: adding cannot fail. */
	err = linkset__prepare(&c->span_links);
	if (err)
		return err;
	if (!c->rb) {
		c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.span_events), span_event_cb, c,
					 NULL);
		if (!c->rb)
			return -errno;
		/* The set's execs come through the same epoll: one fd to wait on. */
		if (c->follow_exec && ring_buffer__add(c->rb, bpf_map__fd(c->skel->maps.set_events),
						       exec_event_cb, c))
			return -errno;
	}
	/* Bounds first, so that two links per site always fit. */
	for (i = 0; i < nr; i++) {
		struct sched_span_site *s = &sites[i];

		s->err = -EINPROGRESS;
		if (s->metric >= KHBPF_MAX_METRICS)
			s->err = -E2BIG;
		else if (s->role == SCHED_SPAN_CLOSE && !c->span_close)
			s->err = -ENOTSUP; /* opened without opts.span_close */
		else if (s->role == SCHED_SPAN_HIT && !c->usdt_hits)
			s->err = -ENOTSUP; /* opened without opts.usdt_hits */
		else if (c->nr_span_sites == KHBPF_MAX_SPAN_SITES)
			s->err = -E2BIG;
		else
			c->nr_span_sites++;
	}
	if (c->span_multi) {
		for (i = 0; i < nr; i++)
			if (sites[i].err == -EINPROGRESS)
				sites[i].err = 0;
		err = attach_multi(c, sites, nr, pid);
		if (err)
			return err;
	} else {
		for (i = 0; i < nr; i++)
			if (sites[i].err == -EINPROGRESS)
				sites[i].err = attach_site(c, &sites[i], pid);
	}
	for (i = 0; i < nr; i++)
		n += !sites[i].err;
	return (int)n;
}

bool sched_collector__span_multi(const struct sched_collector *c)
{
	return c->span_multi;
}

size_t sched_collector__span_links(const struct sched_collector *c)
{
	return linkset__count(&c->span_links);
}

void sched_collector__detach_spans(struct sched_collector *c)
{
	if (c)
		linkset__release_begin(&c->span_links, c->span_multi ? SPAN_MULTI_TEARDOWN_THREADS :
								       SPAN_SITE_TEARDOWN_THREADS);
}

int sched_collector__span_fd(struct sched_collector *c)
{
	return c->rb ? ring_buffer__epoll_fd(c->rb) : -1;
}

int sched_collector__drain_spans(struct sched_collector *c)
{
	return c->rb ? ring_buffer__consume(c->rb) : 0;
}

int sched_collector__span_aggs(struct sched_collector *c, struct span_agg_entry **out, size_t *nr)
{
	void *v;
	int err;

	err = bpfdump__map(bpf_map__fd(c->skel->maps.span_agg), sizeof(struct khbpf_span_key),
			   offsetof(struct span_agg_entry, agg), sizeof(**out), &v, nr);
	*out = err ? NULL : v;
	return err;
}

int sched_collector__span_series(struct sched_collector *c, struct span_series_entry **out,
				 size_t *nr)
{
	void *v;
	int err;

	err = bpfdump__map(bpf_map__fd(c->skel->maps.span_series),
			   sizeof(struct khbpf_span_series_key),
			   offsetof(struct span_series_entry, agg), sizeof(**out), &v, nr);
	*out = err ? NULL : v;
	return err;
}

int sched_collector__span_series_spill(struct sched_collector *c, uint32_t metric,
				       struct khbpf_span_agg *out)
{
	if (metric >= bpf_map__max_entries(c->skel->maps.span_series_spill))
		return -EINVAL;
	return bpf_map__lookup_elem(c->skel->maps.span_series_spill, &metric, sizeof(metric), out,
				    sizeof(*out), 0);
}

int sched_collector__delete_span_series(struct sched_collector *c,
					const struct khbpf_span_series_key *key)
{
	return bpf_map__delete_elem(c->skel->maps.span_series, key, sizeof(*key), 0);
}

int sched_collector__set_key(struct sched_collector *c, uint32_t metric, uint32_t kind,
			     uint32_t max_keys)
{
	struct khbpf_key_conf kc = { .kind = kind, .max_keys = max_keys };

	if (!c->keys || metric >= KHBPF_MAX_METRICS ||
	    (kind != KHBPF_KEY_INT && kind != KHBPF_KEY_STR) || !max_keys)
		return -EINVAL;
	return bpf_map__update_elem(c->skel->maps.span_key_conf, &metric, sizeof(metric), &kc,
				    sizeof(kc), BPF_ANY);
}

int sched_collector__set_span_cause(struct sched_collector *c, uint32_t metric, uint32_t cause)
{
	if (!c->span_causes)
		return -EOPNOTSUPP;
	if (metric >= KHBPF_MAX_METRICS || cause >= KHBPF_BLOCK_CAUSES)
		return -EINVAL;
	/* .bss is mapped: the programs read it at their next switch-out. */
	c->skel->bss->span_metric_cause[metric] = (uint8_t)(cause + 1);
	return 0;
}

void sched_collector__span_cause_stretches(const struct sched_collector *c, uint64_t *out, size_t n)
{
	size_t m;

	for (m = 0; m < n && m < KHBPF_MAX_METRICS; m++)
		out[m] = c->span_causes ? c->skel->bss->span_cause_stretches[m] : 0;
}

int sched_collector__set_site_arg(struct sched_collector *c, uint32_t slot,
				  const struct khbpf_arg_spec *spec)
{
	uint32_t idx = slot - 1;

	if (!c->keys || !slot || slot > KHBPF_MAX_SPAN_SITES)
		return -EINVAL;
	return bpf_map__update_elem(c->skel->maps.span_site_args, &idx, sizeof(idx), spec,
				    sizeof(*spec), BPF_ANY);
}

int sched_collector__keys(struct sched_collector *c, struct key_entry **out, size_t *nr)
{
	void *v;
	int err;

	if (!c->keys) {
		*out = NULL;
		*nr = 0;
		return 0;
	}
	err = bpfdump__map(bpf_map__fd(c->skel->maps.span_key_ids), sizeof(struct khbpf_key),
			   offsetof(struct key_entry, id), sizeof(**out), &v, nr);
	*out = err ? NULL : v;
	return err;
}

int sched_collector__usdt_hits(struct sched_collector *c, struct usdt_hit_entry **out, size_t *nr)
{
	void *v;
	int err;

	err = bpfdump__map(bpf_map__fd(c->skel->maps.usdt_hits), sizeof(struct khbpf_span_key),
			   offsetof(struct usdt_hit_entry, hits), sizeof(**out), &v, nr);
	*out = err ? NULL : v;
	return err;
}

int sched_collector__open_spans(struct sched_collector *c, struct khbpf_span_event **out,
				size_t *nr)
{
	void *recs;
	int err;

	err = bpfdump__iter(c->skel->progs.khbpf_iter_open_spans, sizeof(**out), &recs, nr);
	*out = err ? NULL : recs;
	return err;
}

int sched_collector__open_series(struct sched_collector *c, struct khbpf_open_series **out,
				 size_t *nr)
{
	void *recs;
	int err;

	if (bpf_program__fd(c->skel->progs.khbpf_iter_open_series) < 0)
		return -ENOTSUP; /* not serve with spans */
	err = bpfdump__iter(c->skel->progs.khbpf_iter_open_series, sizeof(**out), &recs, nr);
	*out = err ? NULL : recs;
	return err;
}

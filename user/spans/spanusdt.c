// SPDX-License-Identifier: MIT
/* The sites of a --usdt-span pair in one object; see spanusdt.h. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "spans/spanusdt.h"
#include "spans/usdtnote.h"

static bool is_probe(const struct usdt_site *u, const char *provider, const char *name)
{
	return !strcmp(u->provider, provider) && !strcmp(u->name, name);
}

static int push_site(struct site_vec *vec, const char *object, const char *open_path,
		     const struct span_request *req, const struct usdt_site *u, bool start)
{
	struct span_site *s = site_vec__push(vec, object, open_path, false);

	if (!s)
		return -ENOMEM;
	snprintf(s->symbol, sizeof(s->symbol), "%s:%s", u->provider, u->name);
	spansite__copy_str(s->metric, sizeof(s->metric), req->metric);
	s->kind = start ? SPAN_SITE_USDT_START : SPAN_SITE_USDT_DONE;
	s->vaddr = u->addr;
	s->offset = u->offset;
	s->ref_ctr_offset = u->semaphore_offset;
	spansite__copy_str(s->args, sizeof(s->args), u->args);
	if (u->err)
		span_site__fail(s, u->err, "%s", u->reason);
	return 0;
}

/* --usdt: each probe matching the globs is counted under its own metric. */
static int scan_counted(struct site_vec *vec, const char *object, const char *open_path,
			const struct span_request *req, const struct usdt_list *l, size_t *matched)
{
	char metric[SPANFIND_METRIC_MAX];
	struct span_site *s;
	size_t i;

	for (i = 0; i < l->nr; i++) {
		const struct usdt_site *u = &l->v[i];

		if (!u->provider[0] || fnmatch(req->provider, u->provider, 0) ||
		    fnmatch(req->start, u->name, 0))
			continue;
		s = site_vec__push(vec, object, open_path, false);
		if (!s)
			return -ENOMEM;
		snprintf(s->symbol, sizeof(s->symbol), "%s:%s", u->provider, u->name);
		s->kind = SPAN_SITE_USDT_COUNT;
		s->vaddr = u->addr;
		s->offset = u->offset;
		s->ref_ctr_offset = u->semaphore_offset;
		spansite__copy_str(s->args, sizeof(s->args), u->args);
		if (u->err) {
			span_site__fail(s, u->err, "%s", u->reason);
			continue;
		}
		if (spansite__usdt_count_metric(u->provider, u->name, metric)) {
			span_site__fail(
				s, -ENAMETOOLONG,
				"%s: the USDT probe %s:%s makes a metric name over 63 bytes",
				object, u->provider, u->name);
			continue;
		}
		spansite__copy_str(s->metric, sizeof(s->metric), metric);
		++*matched;
	}
	return 0;
}

int spanusdt__scan(struct site_vec *vec, const char *object, const char *open_path,
		   const struct span_request *req, size_t *matched, char *reason, size_t size)
{
	struct usdt_list l = { 0 };
	size_t i, starts = 0, dones = 0;
	struct span_site *s;
	int err;

	*matched = 0;
	err = usdtnote__read(open_path, object, &l, reason, size);
	if (err)
		goto out;
	if (req->count) {
		err = scan_counted(vec, object, open_path, req, &l, matched);
		goto dropped;
	}
	for (i = 0; i < l.nr; i++) {
		starts += is_probe(&l.v[i], req->provider, req->start);
		dones += is_probe(&l.v[i], req->provider, req->done);
	}
	if (!starts && !dones)
		goto out;
	if (!starts || !dones) {
		s = site_vec__push(vec, object, open_path, false);
		if (!s) {
			err = -ENOMEM;
			goto out;
		}
		spansite__copy_str(s->symbol, sizeof(s->symbol), req->symbol);
		spansite__copy_str(s->metric, sizeof(s->metric), req->metric);
		s->kind = starts ? SPAN_SITE_USDT_DONE : SPAN_SITE_USDT_START;
		s->absent = true;
		span_site__fail(s, -ENOENT,
				"%s has the USDT probe %s:%s but not %s:%s, and a span needs both",
				object, req->provider, starts ? req->start : req->done,
				req->provider, starts ? req->done : req->start);
		goto out;
	}
	for (i = 0; i < l.nr && !err; i++) {
		bool start = is_probe(&l.v[i], req->provider, req->start);

		if (!start && !is_probe(&l.v[i], req->provider, req->done))
			continue;
		err = push_site(vec, object, open_path, req, &l.v[i], start);
		*matched += !err && !l.v[i].err;
	}
dropped:
	if (!err && l.dropped) {
		s = site_vec__push(vec, object, open_path, false);
		if (!s) {
			err = -ENOMEM;
			goto out;
		}
		spansite__copy_str(s->symbol, sizeof(s->symbol), req->symbol);
		spansite__copy_str(s->metric, sizeof(s->metric), req->metric);
		span_site__fail(s, -E2BIG,
				"%s has more than %d USDT sites; the %llu after them were not read",
				object, USDT_SITES_MAX, (unsigned long long)l.dropped);
	}
out:
	usdtnote__free(&l);
	return err;
}

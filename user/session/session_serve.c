// SPDX-License-Identifier: MIT
/*
 * serve's session: one with no end, cut into windows. Each window's end
 * readings are the next one's baseline, so no interval is lost or counted
 * twice between documents.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "collect/proctarget.h"
#include "session/session.h"
#include "session/session_collect.h"
#include "session/session_state.h"

static void serve_target(struct session *s)
{
	struct doc_target *t = &s->target;

	memset(t, 0, sizeof(*t));
	t->mode = TARGET_MODE_SERVE;
	t->exe_reason = EV_GAP_UNSUPPORTED;
	if (s->opts.nr_pids == 1) {
		proctarget__fill(s->root, s->pid, s->opts.mode, t);
		return;
	}
	/* pid 0: several processes, cgroups, or every task of the host. */
	snprintf(t->comm, sizeof(t->comm), "%s",
		 s->opts.nr_pids    ? "(processes)" :
		 s->opts.nr_cgroups ? "(cgroups)" :
				      "(all tasks)");
}

/*
 * Span requests that found nothing to attach stop serve before it starts,
 * with the reason; sites that failed beside others that attached are
 * logged, and in each window's span_probes.
 */
static int serve_spans_check(struct session *s, char *errbuf, size_t errlen)
{
	const struct span_run *r = &s->spans;
	size_t i;

	if (!s->opts.nr_span_reqs)
		return 0;
	if (!s->spans_discovered)
		return session__errf(errbuf, errlen, -EINVAL, "%s",
				     s->span_reason[0] ? s->span_reason : "span discovery failed");
	for (i = 0; i < r->nr_sites; i++) {
		if (!r->sites[i].err)
			continue;
		if (!r->nr_attached)
			return session__errf(errbuf, errlen, r->sites[i].err ?: -ENOENT,
					     "no span site attached: %s", r->sites[i].reason);
		session__logf(s, "khbpf serve: %s\n", r->sites[i].reason);
	}
	if (!r->nr_attached)
		return session__errf(errbuf, errlen, -ENOENT,
				     "no span site found for the --span, --usdt-span and --usdt "
				     "requests");
	return 0;
}

struct span_run *session__spans(struct session *s)
{
	return s->opts.nr_span_reqs && s->spans.nr_attached ? &s->spans : NULL;
}

int session__serve_open(struct session **out, const struct session_opts *opts, char *errbuf,
			size_t errlen)
{
	struct session *s;
	size_t i;
	int err = 0;

	*out = NULL;
	s = session__alloc(opts);
	if (!s)
		return session__errf(errbuf, errlen, -ENOMEM, "out of memory");
	s->opts.mode = TARGET_MODE_SERVE;
	/* --pid with --children: a set that grows, kept in the kernel as in attach. */
	if (opts->nr_pids && !opts->nr_cgroups)
		s->set_mode = opts->children ? KHBPF_SET_TREE : KHBPF_SET_PIDS;
	/* Affinity and cgroup quota of the one process, else of init: the host's. */
	s->pid = opts->nr_pids == 1 ? opts->pids[0] : 1;
	err = session__setup_signals(s, errbuf, errlen);
	if (err)
		goto cleanup;
	/* A filter that matches nothing would export nothing: refused, as attach's. */
	for (i = 0; i < opts->nr_pids && !err; i++)
		err = proctarget__check_attach(s->root, opts->pids[i], errbuf, errlen);
	if (err)
		goto cleanup;
	host_topology__read(&s->topo, s->root);
	err = session__discover_spans(s, errbuf, errlen);
	if (err)
		goto cleanup;
	session__setup_collector(s);
	if (!s->use_bpf) {
		err = session__errf(errbuf, errlen, -ENOTSUP, "serve needs BPF: %s", s->bpf_detail);
		goto cleanup;
	}
	err = serve_spans_check(s, errbuf, errlen);
	if (err)
		goto cleanup;
	s->start_boot = clock_ns(CLOCK_BOOTTIME);
	s->start_mono = clock_ns(CLOCK_MONOTONIC);
	s->start_real = clock_ns(CLOCK_REALTIME);
	session__sample_pressure(s, false);
	err = session__start_collecting(s);
	if (!err && !s->use_bpf)
		err = -ENOTSUP;
	if (err) {
		err = session__errf(errbuf, errlen, err, "cannot start the collector: %s",
				    strerror(-err));
		goto cleanup;
	}
	err = session__check_roots(s, errbuf, errlen);
	if (err)
		goto cleanup;
	err = session__census(&s->census[0], &s->base, NULL, 0);
	if (err) {
		err = session__errf(errbuf, errlen, err, "out of memory");
		goto cleanup;
	}
	serve_target(s);
	/* Counting events follow tasks, and serve watches the whole host. */
	s->counters_avail = AVAIL_DISABLED;
	snprintf(s->counters_detail, sizeof(s->counters_detail),
		 "serve does not read hardware counters; use attach or run on a process");
	counter_set__all_gapped(&s->counters, EV_SRC_PERF_EVENT_OPEN, EV_GAP_COLLECTOR_DISABLED);
	session__sample_frequency(s);
	*out = s;
	return 0;
cleanup:
	session__destroy(s);
	return err;
}

/* What one window's document owns, freed once it is out. */
static void serve_window_free(struct session *s)
{
	docbuild__reset(s->build);
	sched_window__free(&s->win);
	memset(&s->win, 0, sizeof(s->win));
	thread_table__free(&s->exited);
	s->nr_freq = 0;
	s->freq_dropped = 0;
}

/*
 * The window's document as one line (with its newline), written while the
 * window's threads and records still exist: its per-thread and per-span
 * arrays are made from them as the text is (evidence_doc__to_json_lazy), so
 * the tree kept for the gap metrics leaves them out.
 */
static int serve_document(struct session *s, struct json_object **doc, char **text, size_t *len)
{
	struct json_object *obj = evidence_doc__to_json_lazy(docbuild__doc(s->build)), *events;
	const char *t = obj ? json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN) : NULL;
	size_t n;

	if (!t) {
		json_object_put(obj);
		return -ENOMEM;
	}
	n = strlen(t);
	*text = malloc(n + 2);
	if (!*text) {
		json_object_put(obj);
		return -ENOMEM;
	}
	memcpy(*text, t, n);
	(*text)[n] = '\n';
	(*text)[n + 1] = '\0';
	*len = n + 1;
	json_object_object_del(obj, "threads");
	if (json_object_object_get_ex(obj, "events", &events))
		json_object_object_del(events, "spans");
	*doc = obj;
	return 0;
}

int session__serve_rotate(struct session *s, struct json_object **doc, char **text, size_t *len)
{
	struct window_opts wo = { 0 };
	uint64_t now_boot, now_real;
	int err;

	*doc = NULL;
	*text = NULL;
	*len = 0;
	err = sched_collector__snapshot(s->coll, &s->end);
	if (err) {
		/* No end readings: the window goes on from the same baseline. */
		thread_table__free(&s->end);
		return err;
	}
	now_boot = clock_ns(CLOCK_BOOTTIME);
	now_real = clock_ns(CLOCK_REALTIME);
	s->end_mono = clock_ns(CLOCK_MONOTONIC);
	s->end_reason = END_REASON_DURATION;
	session__sample_pressure(s, true);
	err = err ?: sched_collector__drain_exited(s->coll, &s->exited);
	/* Processes that ended make room in the set's table for those to come. */
	err = err ?: sched_collector__drain_processes(s->coll);
	err = err ?: sched_collector__stats(s->coll, &s->stats);
	/* What the span series added over the window (span_run__series_window). */
	if (!err && s->spans.nr_attached)
		err = span_run__series_window(&s->spans, s->coll);
	if (err)
		goto out;
	session__sample_frequency(s);
	err = session__census(&s->census[1], &s->end, &s->exited, s->end_mono - s->start_mono);
	if (err)
		goto out;
	wo.baseline = &s->base;
	wo.end = &s->end;
	wo.exited = &s->exited;
	wo.start_boot_ns = s->start_boot;
	wo.max_threads = s->opts.max_threads;
	err = sched_window__compute(&s->win, &wo);
	err = err ?: session__build_document(s);
	err = err ?: serve_document(s, doc, text, len);
out:
	/* The next window starts where this one ended, whatever happened. */
	serve_window_free(s);
	thread_table__free(&s->base);
	s->base = s->end;
	memset(&s->end, 0, sizeof(s->end));
	free(s->census[0].threads);
	s->census[0] = s->census[1];
	s->census[0].elapsed_ns = 0;
	memset(&s->census[1], 0, sizeof(s->census[1]));
	s->start_boot = now_boot;
	s->start_mono = s->end_mono;
	s->start_real = now_real;
	session__pressure_advance(s);
	session__sample_frequency(s);
	return err;
}

struct sched_collector *session__collector(const struct session *s)
{
	return s->coll;
}

int session__signal_fd(const struct session *s)
{
	return s->sigfd;
}

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <bpf/libbpf.h>

#include "document/document.h"
#include "document/evjson.h"
#include "lib/jsonstream.h"

#ifndef KHBPF_VERSION
#define KHBPF_VERSION "0.0.0"
#endif

const char *target_mode__name(enum target_mode mode)
{
	switch (mode) {
	case TARGET_MODE_RUN:
		return "run";
	case TARGET_MODE_SERVE:
		return "serve";
	default:
		return "attach";
	}
}

const char *end_reason__name(enum end_reason reason)
{
	switch (reason) {
	case END_REASON_SIGNAL:
		return "signal";
	case END_REASON_TARGET_EXIT:
		return "target-exit";
	default:
		return "duration";
	}
}

static void add(struct json_object *obj, const char *key, struct json_object *value, int *err)
{
	if (evjson__add(obj, key, value))
		*err = -ENOMEM;
}

static void push(struct json_object *arr, struct json_object *value, int *err)
{
	if (!arr || !value || json_object_array_add(arr, value)) {
		json_object_put(value);
		*err = -ENOMEM;
	}
}

static struct json_object *versioned(int *err)
{
	struct json_object *obj = json_object_new_object();

	add(obj, "version", evjson__u64(EV_COMPONENT_VERSION), err);
	return obj;
}

struct json_object *evidence_doc__producer(void)
{
	int err = 0;
	struct json_object *obj = versioned(&err);
	struct utsname u;

	add(obj, "name", json_object_new_string("khbpf"), &err);
	add(obj, "khbpf_version", json_object_new_string(KHBPF_VERSION), &err);
	add(obj, "libbpf_version", json_object_new_string(libbpf_version_string()), &err);
	add(obj, "kernel_release", evjson__string(uname(&u) ? "unknown" : u.release), &err);
	if (err) {
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

static const char *set_kind__name(enum doc_set_kind k)
{
	switch (k) {
	case DOC_SET_COMMAND:
		return "command";
	case DOC_SET_COMMAND_TREE:
		return "command-tree";
	case DOC_SET_PROCESSES:
		return "processes";
	case DOC_SET_PROCESS_TREES:
		return "process-trees";
	case DOC_SET_CGROUPS:
		return "cgroups";
	default:
		return "none";
	}
}

static struct json_object *set_json(const struct doc_set *set, int *err)
{
	struct json_object *obj = versioned(err), *arr;
	size_t i;

	add(obj, "kind", json_object_new_string(set_kind__name(set->kind)), err);
	arr = json_object_new_array();
	for (i = 0; arr && i < set->nr_pids; i++)
		push(arr, evjson__u64((uint64_t)set->pids[i]), err);
	add(obj, "pids", arr, err);
	arr = json_object_new_array();
	for (i = 0; arr && i < set->nr_cgroups; i++)
		push(arr, evjson__string(set->cgroups[i]), err);
	add(obj, "cgroups", arr, err);
	add(obj, "max_processes", evjson__u64(set->max_processes), err);
	add(obj, "processes", evjson__u64(set->processes), err);
	add(obj, "joined_at_start", evjson__u64(set->joined_at_start), err);
	add(obj, "joined_at_fork", evjson__u64(set->joined_at_fork), err);
	add(obj, "joined_later", evjson__u64(set->joined_later), err);
	add(obj, "exited", evjson__u64(set->exited), err);
	add(obj, "left", evjson__u64(set->left), err);
	return obj;
}

static struct json_object *exit_json(bool recorded, bool signaled, uint64_t value,
				     enum ev_gap reason, int *err)
{
	struct json_object *v;

	if (!recorded)
		return evjson__gap(reason);
	v = json_object_new_object();
	add(v, signaled ? "signal" : "code", evjson__u64(value), err);
	return evjson__recorded(v);
}

static struct json_object *target_json(const struct doc_target *t, int *err)
{
	struct json_object *obj = versioned(err);

	add(obj, "pid", evjson__u64(t->pid), err);
	add(obj, "comm", evjson__string(t->comm), err);
	add(obj, "exe",
	    t->exe_recorded ? evjson__recorded(evjson__string(t->exe)) : evjson__gap(t->exe_reason),
	    err);
	add(obj, "mode", json_object_new_string(target_mode__name(t->mode)), err);
	add(obj, "exit",
	    exit_json(t->exit_recorded, t->exit_signaled, t->exit_value, t->exit_reason, err), err);
	if (t->set.kind != DOC_SET_NONE)
		add(obj, "set", set_json(&t->set, err), err);
	return obj;
}

/* A SourcedEvidence<string> read from /proc/PID/cmdline. */
static struct json_object *cmdline_json(const char *text, enum ev_gap reason, int *err)
{
	struct json_object *obj = json_object_new_object();

	add(obj, "value", text ? evjson__recorded(evjson__string(text)) : evjson__gap(reason), err);
	add(obj, "source", json_object_new_string(ev_source__name(EV_SRC_PROC_PID_CMDLINE)), err);
	return obj;
}

static struct json_object *title_json(const struct doc_process *p, int *err)
{
	struct json_object *obj = versioned(err);

	add(obj, "at_join", cmdline_json(p->title_join, p->title_join_reason, err), err);
	add(obj, "at_end", cmdline_json(p->title_end, p->title_end_reason, err), err);
	return obj;
}

static struct json_object *process_json(const struct doc_process *p, int *err)
{
	struct json_object *obj = versioned(err), *exe = json_object_new_object();

	add(obj, "pid", evjson__u64(p->pid), err);
	add(obj, "parent_pid",
	    p->parent_known ? evjson__recorded(evjson__u64(p->parent_pid)) :
			      evjson__gap(EV_GAP_UNAVAILABLE),
	    err);
	add(obj, "comm", evjson__string(p->comm), err);
	add(exe, "value",
	    p->exe ? evjson__recorded(evjson__string(p->exe)) : evjson__gap(p->exe_reason), err);
	add(exe, "source", json_object_new_string(ev_source__name(p->exe_source)), err);
	add(obj, "exe", exe, err);
	add(obj, "title", title_json(p, err), err);
	add(obj, "start_unix_ns", evjson__u64(p->start_unix_ns), err);
	add(obj, "exit_unix_ns", evjson__ev_u64(p->exit_unix_ns), err);
	add(obj, "exit",
	    exit_json(p->exit_recorded, p->exit_signaled, p->exit_value, p->exit_reason, err), err);
	add(obj, "joined", json_object_new_string(p->joined), err);
	add(obj, "born", json_object_new_boolean(p->born), err);
	add(obj, "exited", json_object_new_boolean(p->exited), err);
	add(obj, "left_cgroup", json_object_new_boolean(p->left_cgroup), err);
	add(obj, "threads", evjson__u64(p->threads), err);
	add(obj, "scheduler", evjson__scheduler(&p->scheduler), err);
	add(obj, "on_cpu_ns", evjson__sev_u64(p->on_cpu_ns), err);
	return obj;
}

static struct json_object *window_json(const struct doc_window *w, int *err)
{
	struct json_object *obj = versioned(err);

	add(obj, "start_unix_ns", evjson__u64(w->start_unix_ns), err);
	add(obj, "wall_ns", evjson__u64(w->wall_ns), err);
	add(obj, "end_reason", json_object_new_string(end_reason__name(w->end_reason)), err);
	return obj;
}

static const char *const mig_class_names[KHBPF_MIG_CLASSES] = {
	[KHBPF_MIG_SMT] = "smt_sibling",     [KHBPF_MIG_LLC] = "same_llc",
	[KHBPF_MIG_OTHER_LLC] = "other_llc", [KHBPF_MIG_OTHER_NODE] = "other_node",
	[KHBPF_MIG_UNKNOWN] = "unknown",
};

static struct json_object *detail_json(const struct doc_sched_detail *d, int *err)
{
	struct json_object *obj, *hist, *mig;
	unsigned int i;

	if (!d->recorded)
		return evjson__gap(d->reason);
	obj = versioned(err);
	add(obj, "source", json_object_new_string(ev_source__name(EV_SRC_BPF_TRACEPOINT)), err);
	add(obj, "runqueue_wait_ns", evjson__u64(d->wait_ns), err);
	add(obj, "runqueue_waits", evjson__u64(d->waits), err);
	add(obj, "unbinned_wait_ns", evjson__u64(d->unbinned_ns), err);
	add(obj, "unbinned_waits", evjson__u64(d->unbinned_waits), err);
	hist = json_object_new_array();
	for (i = 0; hist && i < KHBPF_RQ_SLOTS; i++) {
		struct json_object *b;

		if (!d->wait_hist[i])
			continue;
		b = json_object_new_object();
		add(b, "lower_bound", evjson__u64(i ? 1ULL << i : 0), err);
		add(b, "upper_bound",
		    evjson__u64(i == KHBPF_RQ_SLOTS - 1 ? UINT64_MAX : (1ULL << (i + 1)) - 1), err);
		add(b, "count", evjson__u64(d->wait_hist[i]), err);
		push(hist, b, err);
	}
	add(obj, "runqueue_histogram", hist, err);
	add(obj, "switch_ins", evjson__u64(d->switch_ins), err);
	mig = json_object_new_object();
	add(mig, "total", evjson__u64(d->migrations), err);
	for (i = 0; i < KHBPF_MIG_CLASSES; i++)
		add(mig, mig_class_names[i], evjson__u64(d->mig_class[i]), err);
	add(mig, "unseen", evjson__u64(d->migrations_unseen), err);
	add(obj, "migrations_by_distance", mig, err);
	add(obj, "blocked", evjson__blocked(&d->blocked), err);
	return evjson__recorded(obj);
}

static struct json_object *thread_json(const struct doc_thread *t, int *err)
{
	struct json_object *obj = versioned(err);

	add(obj, "thread_id", evjson__u64(t->thread_id), err);
	add(obj, "comm", evjson__string(t->comm), err);
	add(obj, "exited", json_object_new_boolean(t->exited), err);
	add(obj, "scheduler", evjson__scheduler(&t->scheduler), err);
	add(obj, "on_cpu_ns", evjson__sev_u64(t->on_cpu_ns), err);
	add(obj, "born", json_object_new_boolean(t->born), err);
	add(obj, "bpf_detail", detail_json(&t->detail, err), err);
	add(obj, "pid", evjson__u64(t->pid), err);
	add(obj, "process_start_unix_ns", evjson__u64(t->process_start_unix_ns), err);
	add(obj, "left_cgroup", json_object_new_boolean(t->left_cgroup), err);
	return obj;
}

static struct json_object *thread_item(const void *ctx, size_t i, int *err)
{
	const struct doc_thread *threads = ctx;

	return thread_json(&threads[i], err);
}

/* Span record i: from the array, or made by the stream's span_at. */
static struct json_object *span_item(const void *ctx, size_t i, int *err)
{
	const struct event_stream *e = ctx;
	struct span_record rec;

	(void)err;
	if (e->spans)
		return evjson__span_record(&e->spans[i]);
	e->span_at(e->span_ctx, i, &rec);
	return evjson__span_record(&rec);
}

static struct json_object *events_json(const struct event_stream *e, bool lazy, int *err)
{
	struct json_object *obj = versioned(err);
	struct json_object *spans = lazy ? jsonstream__lazy_array(e, e->nr_spans, span_item) :
					   json_object_new_array_ext((int)e->nr_spans);
	size_t i;

	add(obj, "availability",
	    e->availability_recorded ? evjson__recorded(json_object_new_boolean(e->availability)) :
				       evjson__gap(e->availability_reason),
	    err);
	add(obj, "dropped_events", evjson__u64(e->dropped_events), err);
	add(obj, "dropped_span_events", evjson__u64(e->dropped_span_events), err);
	add(obj, "dropped_point_events", evjson__u64(0), err);
	add(obj, "dropped_annotations", evjson__u64(0), err);
	add(obj, "sampled_out_events", evjson__u64(e->sampled_out_events), err);
	for (i = 0; !lazy && spans && i < e->nr_spans; i++)
		push(spans, span_item(e, i, err), err);
	add(obj, "spans", spans, err);
	add(obj, "point_events", json_object_new_array(), err);
	add(obj, "annotations", json_object_new_array(), err);
	return obj;
}

static struct json_object *span_metric_json(const struct span_metric *m, int *err)
{
	struct json_object *obj = versioned(err);
	struct json_object *hist = json_object_new_array_ext((int)m->nr_buckets);
	size_t i;

	add(obj, "metric_id", evjson__string(m->metric_id), err);
	add(obj, "calls", evjson__u64(m->calls), err);
	add(obj, "inclusive_ns", evjson__u64(m->inclusive_ns), err);
	add(obj, "exclusive_ns", evjson__u64(m->exclusive_ns), err);
	add(obj, "unfinished", evjson__u64(m->unfinished), err);
	add(obj, "scheduler", evjson__span_ledger(&m->ledger), err);
	for (i = 0; hist && i < m->nr_buckets; i++) {
		struct json_object *b = json_object_new_object();

		add(b, "lower_bound", evjson__u64(m->histogram[i].lower_bound), err);
		add(b, "upper_bound", evjson__u64(m->histogram[i].upper_bound), err);
		add(b, "count", evjson__u64(m->histogram[i].count), err);
		push(hist, b, err);
	}
	add(obj, "histogram", hist, err);
	if (m->is_key)
		add(obj, "key", evjson__key(&m->key), err);
	if (m->declared_cause) {
		add(obj, "declared_cause",
		    json_object_new_string(blocked_cause__name(m->declared_cause - 1u)), err);
		add(obj, "declared_cause_stretches", evjson__u64(m->declared_cause_stretches), err);
	}
	if (m->keys) {
		struct json_object *keys = json_object_new_array_ext((int)m->nr_keys);

		for (i = 0; keys && i < m->nr_keys; i++)
			push(keys, span_metric_json(&m->keys[i], err), err);
		add(obj, "keys", keys, err);
	}
	return obj;
}

static struct json_object *span_counters_json(const struct span_counters_info *c, int *err)
{
	struct json_object *obj = versioned(err);

	add(obj, "requested", evjson__string(c->requested ? c->requested : "none"), err);
	add(obj, "cycles_event", evjson__string(c->cycles_event ? c->cycles_event : "none"), err);
	add(obj, "instructions_event",
	    evjson__string(c->instructions_event ? c->instructions_event : "none"), err);
	add(obj, "cpus", evjson__u64(c->cpus), err);
	if (c->detail[0])
		add(obj, "detail", evjson__string(c->detail), err);
	return obj;
}

static struct json_object *span_probe_json(const struct span_probe *p, int *err)
{
	struct json_object *obj = versioned(err);

	add(obj, "object", evjson__string(p->object), err);
	add(obj, "symbol", evjson__string(p->symbol), err);
	if (p->symbols_from[0])
		add(obj, "symbols_from", evjson__string(p->symbols_from), err);
	add(obj, "metric_id", evjson__string(p->metric_id), err);
	add(obj, "site", json_object_new_string(p->site ? p->site : "function"), err);
	add(obj, "status", json_object_new_string(p->attached ? "attached" : "failed"), err);
	if (!p->attached)
		add(obj, "reason", evjson__string(p->reason[0] ? p->reason : "unknown failure"),
		    err);
	if (p->exec_pid) {
		add(obj, "exec_pid", evjson__u64(p->exec_pid), err);
		add(obj, "attached_after_exec_ns", evjson__u64(p->attach_delay_ns), err);
	}
	return obj;
}

static struct json_object *usdt_by_json(const struct usdt_count_by *v, size_t n, bool process,
					int *err)
{
	struct json_object *arr = json_object_new_array_ext((int)n);
	size_t i;

	if (!arr)
		*err = -ENOMEM;
	for (i = 0; arr && i < n; i++) {
		struct json_object *o = json_object_new_object();

		if (!o) {
			*err = -ENOMEM;
			break;
		}
		add(o, process ? "pid" : "thread_id", evjson__u64(v[i].id), err);
		if (process)
			add(o, "process_start_unix_ns", evjson__u64(v[i].process_start_unix_ns),
			    err);
		add(o, "hits", evjson__u64(v[i].hits), err);
		push(arr, o, err);
	}
	return arr;
}

static struct json_object *usdt_count_json(const struct usdt_count *u, int *err)
{
	struct json_object *obj = versioned(err);

	add(obj, "metric_id", evjson__string(u->metric_id), err);
	add(obj, "probe", evjson__string(u->probe), err);
	add(obj, "hits", evjson__u64(u->hits), err);
	add(obj, "processes", usdt_by_json(u->processes, u->nr_processes, true, err), err);
	add(obj, "threads", usdt_by_json(u->threads, u->nr_threads, false, err), err);
	if (u->keys) {
		struct json_object *keys = json_object_new_array_ext((int)u->nr_keys);
		size_t i;

		for (i = 0; keys && i < u->nr_keys; i++) {
			struct json_object *k = json_object_new_object();

			add(k, "key", evjson__key(&u->keys[i].key), err);
			add(k, "hits", evjson__u64(u->keys[i].hits), err);
			push(keys, k, err);
		}
		add(obj, "keys", keys, err);
	}
	return obj;
}

static struct json_object *named_json(const struct named_u64 *v, size_t n, int *err)
{
	struct json_object *obj = versioned(err);
	size_t i;

	for (i = 0; i < n; i++)
		add(obj, v[i].name, evjson__ev_u64(v[i].value), err);
	return obj;
}

static struct json_object *doc_json(const struct evidence_doc *doc, bool lazy)
{
	struct json_object *obj = json_object_new_object();
	struct json_object *ver, *arr;
	int err = 0;
	size_t i;

	add(obj, "schema", json_object_new_string("khbpf-evidence"), &err);
	ver = versioned(&err);
	add(ver, "major", evjson__u64(DOC_SCHEMA_MAJOR), &err);
	add(ver, "minor", evjson__u64(DOC_SCHEMA_MINOR), &err);
	add(obj, "schema_version", ver, &err);
	add(obj, "producer", evidence_doc__producer(), &err);
	add(obj, "target", target_json(&doc->target, &err), &err);
	add(obj, "window", window_json(&doc->window, &err), &err);

	arr = json_object_new_array_ext((int)doc->nr_collectors);
	for (i = 0; arr && i < doc->nr_collectors; i++)
		push(arr, evjson__capability(&doc->collectors[i]), &err);
	add(obj, "collectors", arr, &err);

	if (doc->hardware_recorded && doc->hardware)
		add(obj, "hardware", evjson__recorded(evjson__hardware_run(doc->hardware)), &err);
	else
		add(obj, "hardware", evjson__gap(doc->hardware_reason), &err);

	arr = json_object_new_array_ext((int)doc->nr_processes);
	for (i = 0; arr && i < doc->nr_processes; i++)
		push(arr, process_json(&doc->processes[i], &err), &err);
	add(obj, "processes", arr, &err);

	if (lazy) {
		arr = jsonstream__lazy_array(doc->threads, doc->nr_threads, thread_item);
	} else {
		arr = json_object_new_array_ext((int)doc->nr_threads);
		for (i = 0; arr && i < doc->nr_threads; i++)
			push(arr, thread_json(&doc->threads[i], &err), &err);
	}
	add(obj, "threads", arr, &err);
	add(obj, "scheduler_detail", detail_json(&doc->sched_detail, &err), &err);
	add(obj, "kernel_run_delay_ns", evjson__sev_u64(doc->kernel_run_delay_ns), &err);
	if (doc->pressure_host && doc->pressure_cgroup) {
		struct json_object *pr = versioned(&err);

		add(pr, "host", evjson__pressure_window(doc->pressure_host), &err);
		add(pr, "cgroup", evjson__pressure_window(doc->pressure_cgroup), &err);
		add(obj, "pressure", pr, &err);
	}
	if (doc->thermal)
		add(obj, "thermal", evjson__thermal_window(doc->thermal), &err);

	add(obj, "events", events_json(&doc->events, lazy, &err), &err);

	arr = json_object_new_array_ext((int)doc->nr_span_metrics);
	for (i = 0; arr && i < doc->nr_span_metrics; i++)
		push(arr, span_metric_json(&doc->span_metrics[i], &err), &err);
	add(obj, "span_metrics", arr, &err);

	arr = json_object_new_array_ext((int)doc->nr_process_metrics);
	for (i = 0; arr && i < doc->nr_process_metrics; i++) {
		const struct doc_process_metric *m = &doc->process_metrics[i];
		struct json_object *pm = versioned(&err);

		add(pm, "pid", evjson__u64(m->pid), &err);
		add(pm, "process_start_unix_ns", evjson__u64(m->process_start_unix_ns), &err);
		add(pm, "metric_id", evjson__string(m->metric_id), &err);
		add(pm, "calls", evjson__u64(m->calls), &err);
		add(pm, "inclusive_ns", evjson__u64(m->inclusive_ns), &err);
		add(pm, "exclusive_ns", evjson__u64(m->exclusive_ns), &err);
		push(arr, pm, &err);
	}
	add(obj, "process_span_metrics", arr, &err);

	arr = json_object_new_array_ext((int)doc->nr_usdt_counts);
	for (i = 0; arr && i < doc->nr_usdt_counts; i++)
		push(arr, usdt_count_json(&doc->usdt_counts[i], &err), &err);
	add(obj, "usdt_counts", arr, &err);

	arr = json_object_new_array_ext((int)doc->nr_span_probes);
	for (i = 0; arr && i < doc->nr_span_probes; i++)
		push(arr, span_probe_json(&doc->span_probes[i], &err), &err);
	add(obj, "span_probes", arr, &err);

	arr = json_object_new_array_ext((int)doc->nr_open_spans);
	for (i = 0; arr && i < doc->nr_open_spans; i++) {
		const struct open_span *o = &doc->open_spans[i];
		struct json_object *os = versioned(&err);

		add(os, "span_id", evjson__u64(o->span_id), &err);
		add(os, "parent_span_id", evjson__ev_u64(o->parent_span_id), &err);
		add(os, "metric_id", evjson__string(o->metric_id), &err);
		add(os, "thread_id", evjson__u64(o->thread_id), &err);
		add(os, "start_ns", evjson__u64(o->start_ns), &err);
		if (o->key.text)
			add(os, "key", evjson__key(&o->key), &err);
		push(arr, os, &err);
	}
	add(obj, "open_spans", arr, &err);
	add(obj, "span_counters", span_counters_json(&doc->span_counters, &err), &err);

	add(obj, "overhead", named_json(doc->overhead, doc->nr_overhead, &err), &err);
	add(obj, "loss", named_json(doc->loss, doc->nr_loss, &err), &err);

	if (err) {
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

struct json_object *evidence_doc__to_json(const struct evidence_doc *doc)
{
	return doc_json(doc, false);
}

struct json_object *evidence_doc__to_json_lazy(const struct evidence_doc *doc)
{
	return doc_json(doc, true);
}

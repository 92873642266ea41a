// SPDX-License-Identifier: MIT
/* serve's /metrics: the Prometheus families, from the groups, the collector and the last document. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "document/blockcause.h"
#include "serve/cglabels.h"
#include "host/cpufreq.h"
#include "serve/httpd.h"
#include "serve/promtext.h"
#include "serve/serve_groups.h"
#include "serve/serve_filters.h"
#include "serve/serve_metrics.h"
#include "serve/serve_pressure.h"
#include "serve/serve_spans.h"

/* A cgroup row's labels from its path (--labels), found once per scrape. */
struct row_cg {
	struct cgpath_labels v;
	struct prom_label l[CGLABELS_MAX_LABELS];
	size_t n;
};

/* The labels of a row's series: at most cgroup, the path's five, and one more. */
#define ROW_LABELS_MAX (2 + CGLABELS_MAX_LABELS)

/*
 * A group's labels into l: its cgroup and those --labels finds in its path
 * (cg), or its comm and, with --top, its pid (NULL: none, as spans have).
 */
static size_t group_labels(const struct serve_metrics_src *s, const char *cgroup, const char *comm,
			   const char *pid, const struct row_cg *cg, struct prom_label *l)
{
	size_t n = 0;

	if (s->group_by == KHBPF_GROUP_CGROUP) {
		l[n++] = (struct prom_label){ "cgroup", cgroup };
		if (cg) {
			memcpy(&l[n], cg->l, cg->n * sizeof(*l));
			n += cg->n;
		}
	} else {
		l[n++] = (struct prom_label){ "comm", comm };
		if (s->top && pid)
			l[n++] = (struct prom_label){ "pid", pid };
	}
	return n;
}

static size_t row_labels(const struct serve_metrics_src *s, const struct serve_row *r,
			 const struct row_cg *cg, struct prom_label *l, const char *extra_name,
			 const char *extra_value)
{
	size_t n = group_labels(s, r->cgroup, r->comm, r->pid, cg, l);

	if (extra_name)
		l[n++] = (struct prom_label){ extra_name, extra_value };
	return n;
}

/*
 * With --labels and --by cgroup, the labels of each of nr rows' cgroup
 * paths (path_at(rows, i)), found once per scrape; else NULL. *err -ENOMEM
 * when they could not be.
 */
static struct row_cg *cgs_of(const struct serve_metrics_src *s, const void *rows, size_t nr,
			     const char *(*path_at)(const void *, size_t), int *err)
{
	struct row_cg *cgs;
	size_t i;

	*err = 0;
	if (!s->labels || s->group_by != KHBPF_GROUP_CGROUP || !nr)
		return NULL;
	cgs = calloc(nr, sizeof(*cgs));
	if (!cgs) {
		*err = -ENOMEM;
		return NULL;
	}
	for (i = 0; i < nr; i++)
		cgs[i].n = cglabels__for_path(s->labels, path_at(rows, i), &cgs[i].v, cgs[i].l);
	return cgs;
}

static const char *group_row_path(const void *rows, size_t i)
{
	return ((const struct serve_row *)rows)[i].cgroup;
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

static const struct row_cg *cg_of(const struct row_cg *cgs, size_t i)
{
	return cgs ? &cgs[i] : NULL;
}

int serve_metrics__rows(struct promtext *p, const struct serve_metrics_src *s,
			const struct serve_row *rows, size_t nr)
{
	struct prom_label l[ROW_LABELS_MAX];
	struct row_cg *cgs = NULL;
	size_t i, j, n;
	int err = 0;

	cgs = cgs_of(s, rows, nr, group_row_path, &err);
	if (err)
		return err;
	for (j = 0; j < sizeof(group_families) / sizeof(group_families[0]) && !err; j++) {
		err = promtext__family(p, group_families[j].name, group_families[j].type,
				       group_families[j].unit, group_families[j].help);
		for (i = 0; i < nr && !err; i++) {
			uint64_t v = field_of(&rows[i].acc, group_families[j].f);

			n = row_labels(s, &rows[i], cg_of(cgs, i), l, NULL, NULL);
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
			n = row_labels(s, &rows[i], cg_of(cgs, i), l, "distance", mig_names[j]);
			err = promtext__u64(p, l, n, rows[i].acc.b.mig_class[j]);
		}
	}
	/* Blocked time: where the kernel lets BPF time it (sched_collector__blocked). */
	if (s->coll && sched_collector__blocked(s->coll)) {
		err = err   ?:
			      promtext__family(
				      p, "khbpf_blocked_seconds", PROM_COUNTER, "seconds",
				      "Time off-CPU and not runnable, by cause (lock, io, "
				      "sleep, fault, other): each off-CPU stretch on the "
				      "runqueue clock less the kernel's run_delay over it");
		for (i = 0; i < nr && !err; i++) {
			for (j = 0; j < KHBPF_BLOCK_CAUSES && !err; j++) {
				n = row_labels(s, &rows[i], cg_of(cgs, i), l, "cause",
					       blockcause__name((uint32_t)j));
				err = promtext__ns_as_seconds(p, l, n, rows[i].acc.b.blocked.ns[j]);
			}
		}
	}
	err = err   ?:
		      promtext__family(p, "khbpf_runqueue_delay_seconds", PROM_HISTOGRAM, "seconds",
				       "Runqueue waits, each timed by the kernel (sched_info "
				       "run_delay at each arrival)");
	for (i = 0; i < nr && !err; i++) {
		uint64_t hist[KHBPF_RQ_SLOTS];

		n = row_labels(s, &rows[i], cg_of(cgs, i), l, NULL, NULL);
		for (j = 0; j < KHBPF_RQ_SLOTS; j++)
			hist[j] = rows[i].acc.b.wait_hist[j];
		err = promtext__histogram_log2_ns(p, l, n, hist, KHBPF_RQ_SLOTS,
						  rows[i].acc.b.wait_ns);
	}
	free(cgs);
	return err;
}

static int render_groups(const struct serve_metrics_src *s, struct promtext *p)
{
	struct serve_row *rows = NULL;
	size_t nr = 0;
	int err;

	err = serve_groups__rows(s->groups, &rows, &nr);
	if (err)
		return err;
	err = serve_metrics__rows(p, s, rows, nr);
	free(rows);
	return err;
}

/* A span row's labels: its group's (as a group row's), metric or probe, key, one more. */
#define SPAN_LABELS_MAX (4 + CGLABELS_MAX_LABELS)

static size_t span_labels(const struct serve_metrics_src *s, const struct span_row *r,
			  const struct row_cg *cg, struct prom_label *l, const char *extra_name,
			  const char *extra_value)
{
	size_t n = group_labels(s, r->cgroup, r->comm, NULL, cg, l);

	if (r->counted)
		l[n++] = (struct prom_label){ "probe", r->probe };
	else
		l[n++] = (struct prom_label){ "metric", r->metric };
	if (r->key[0])
		l[n++] = (struct prom_label){ "key", r->key };
	if (extra_name)
		l[n++] = (struct prom_label){ extra_name, extra_value };
	return n;
}

static const char *span_row_path(const void *rows, size_t i)
{
	return ((const struct span_row *)rows)[i].cgroup;
}

/*
 * Where a span metric's time went. With blocked time timed, on-CPU is the
 * calls' time less their off-CPU stretches, and "other" is the off-CPU
 * time neither the runqueue nor a blocking cause explains; without it,
 * "other" is all off-CPU time not on the runqueue. Calls whose on-CPU time
 * is unknown (a missed switch-in) count theirs in "other" too. The parts
 * add up to the durations' sum.
 */
static void span_parts(const struct khbpf_span_agg *a, bool blocked, uint64_t *on_cpu,
		       uint64_t *runqueue, uint64_t *blocked_ns, uint64_t *other, uint64_t *overlap)
{
	uint64_t rest;
	size_t i;

	*blocked_ns = 0;
	for (i = 0; blocked && i < KHBPF_BLOCK_CAUSES; i++)
		*blocked_ns += a->ledger.blocked.ns[i];
	/* With --blocked on-CPU is the rest of the calls' time: never more than it. */
	*on_cpu = a->ledger.on_cpu_ns < a->inclusive_ns ? a->ledger.on_cpu_ns : a->inclusive_ns;
	rest = a->inclusive_ns - *on_cpu;
	*blocked_ns = *blocked_ns < rest ? *blocked_ns : rest;
	rest -= *blocked_ns;
	/*
	 * The kernel's run_delay and the span's clock are read at different
	 * instants of a switch (sched_info_arrive() before the tracepoint), so
	 * run_delay can pass the off-CPU time the clock saw by a little; that
	 * much is kept out of the parts and exported as the overlap.
	 */
	*runqueue = a->ledger.run_delay_ns < rest ? a->ledger.run_delay_ns : rest;
	*overlap = a->ledger.run_delay_ns - *runqueue;
	*other = rest - *runqueue;
}

static int render_spans(const struct serve_metrics_src *s, struct promtext *p)
{
	struct prom_label l[SPAN_LABELS_MAX];
	bool blocked = s->coll && sched_collector__blocked(s->coll);
	struct span_row *rows = NULL;
	struct row_cg *cgs = NULL;
	size_t nr = 0, i, j, n;
	int err;

	if (!s->spans)
		return 0;
	err = serve_spans__rows(s->spans, &rows, &nr);
	if (err)
		return err;
	cgs = cgs_of(s, rows, nr, span_row_path, &err);
	if (err) {
		free(rows);
		return err;
	}
	err = promtext__family(p, "khbpf_span_duration_seconds", PROM_HISTOGRAM, "seconds",
			       "Span durations (entry to return, START to DONE), each timed in "
			       "the kernel, by metric and key");
	for (i = 0; i < nr && !err; i++) {
		uint64_t hist[KHBPF_RQ_SLOTS];

		if (rows[i].counted)
			continue;
		n = span_labels(s, &rows[i], cg_of(cgs, i), l, NULL, NULL);
		for (j = 0; j < KHBPF_RQ_SLOTS; j++)
			hist[j] = rows[i].agg.hist[j];
		err = promtext__histogram_log2_ns(p, l, n, hist, KHBPF_RQ_SLOTS,
						  rows[i].agg.inclusive_ns);
	}
	err = err   ?:
		      promtext__family(
			      p, "khbpf_span_seconds", PROM_COUNTER, "seconds",
			      "Where the spans' time went: on_cpu, runqueue (waiting for a "
			      "CPU), blocked (with --blocked) and other; the parts add up "
			      "to khbpf_span_duration_seconds_sum");
	for (i = 0; i < nr && !err; i++) {
		uint64_t part[4], overlap;
		static const char *const names[4] = { "on_cpu", "runqueue", "blocked", "other" };

		if (rows[i].counted)
			continue;
		span_parts(&rows[i].agg, blocked, &part[0], &part[1], &part[2], &part[3], &overlap);
		for (j = 0; j < 4 && !err; j++) {
			if (j == 2 && !blocked)
				continue;
			n = span_labels(s, &rows[i], cg_of(cgs, i), l, "part", names[j]);
			err = promtext__ns_as_seconds(p, l, n, part[j]);
		}
	}
	if (blocked) {
		err = err   ?:
			      promtext__family(p, "khbpf_span_blocked_seconds", PROM_COUNTER,
					       "seconds",
					       "The spans' blocked time by cause (lock, io, sleep, "
					       "fault, other)");
		for (i = 0; i < nr && !err; i++) {
			if (rows[i].counted)
				continue;
			for (j = 0; j < KHBPF_BLOCK_CAUSES && !err; j++) {
				n = span_labels(s, &rows[i], cg_of(cgs, i), l, "cause",
						blockcause__name((uint32_t)j));
				err = promtext__ns_as_seconds(p, l, n,
							      rows[i].agg.ledger.blocked.ns[j]);
			}
		}
	}
	err = err   ?:
		      promtext__family(p, "khbpf_span_runqueue_overlap_seconds", PROM_COUNTER,
				       "seconds",
				       "The spans' runqueue time (the kernel's run_delay) beyond "
				       "their time off-CPU as the span clock saw it: not in any "
				       "part");
	for (i = 0; i < nr && !err; i++) {
		uint64_t part[4], overlap;

		if (rows[i].counted)
			continue;
		span_parts(&rows[i].agg, blocked, &part[0], &part[1], &part[2], &part[3], &overlap);
		n = span_labels(s, &rows[i], cg_of(cgs, i), l, NULL, NULL);
		err = promtext__ns_as_seconds(p, l, n, overlap);
	}
	err = err   ?:
		      promtext__family(p, "khbpf_span_clock_gap_calls", PROM_COUNTER, NULL,
				       "Span calls whose on-CPU time is unknown (a switch-in was "
				       "missed): their time is in part=\"other\"");
	for (i = 0; i < nr && !err; i++) {
		if (rows[i].counted)
			continue;
		n = span_labels(s, &rows[i], cg_of(cgs, i), l, NULL, NULL);
		err = promtext__u64(p, l, n, rows[i].agg.clock_gap_calls);
	}
	err = err   ?:
		      promtext__family(p, "khbpf_usdt_hits", PROM_COUNTER, NULL,
				       "Hits of each --usdt probe, counted in the kernel");
	for (i = 0; i < nr && !err; i++) {
		if (!rows[i].counted)
			continue;
		n = span_labels(s, &rows[i], cg_of(cgs, i), l, NULL, NULL);
		err = promtext__u64(p, l, n, rows[i].agg.calls);
	}
	free(cgs);
	free(rows);
	return err;
}

/*
 * Calls in progress at the scrape (the kernel's open frames, walked by a
 * task iterator): how many per series, and the oldest one's age. A call
 * that never returns is in no histogram; here it shows, and grows old.
 */
static int render_open_spans(const struct serve_metrics_src *s, struct promtext *p)
{
	struct prom_label l[SPAN_LABELS_MAX];
	struct span_row *rows = NULL;
	struct row_cg *cgs = NULL;
	size_t nr = 0, i, n;
	int err;

	if (!s->spans)
		return 0;
	err = serve_spans__open(s->spans, 0, &rows, &nr);
	if (err)
		return err;
	cgs = cgs_of(s, rows, nr, span_row_path, &err);
	err = err   ?:
		      promtext__family(p, "khbpf_span_open", PROM_GAUGE, NULL,
				       "Span calls in progress at the scrape (entered, not yet "
				       "returned); a series with none is absent");
	for (i = 0; i < nr && !err; i++) {
		n = span_labels(s, &rows[i], cg_of(cgs, i), l, NULL, NULL);
		err = promtext__u64(p, l, n, rows[i].open);
	}
	err = err   ?:
		      promtext__family(p, "khbpf_span_open_oldest_seconds", PROM_GAUGE, "seconds",
				       "Age of the oldest span call in progress at the scrape");
	for (i = 0; i < nr && !err; i++) {
		n = span_labels(s, &rows[i], cg_of(cgs, i), l, NULL, NULL);
		err = promtext__ns_as_seconds(p, l, n, rows[i].oldest_ns);
	}
	free(cgs);
	free(rows);
	return err;
}

static int family_u64(struct promtext *p, const char *name, enum prom_type type, const char *help,
		      uint64_t v)
{
	int err = promtext__family(p, name, type, NULL, help);

	return err ?: promtext__u64(p, NULL, 0, v);
}

int serve_metrics__http(struct promtext *p, const struct httpd_stats *st)
{
	const struct {
		const char *reason;
		uint64_t n;
	} closed[] = {
		{ "address_limit", st->shed_addr },
		{ "total_limit", st->shed_total },
		{ "head_deadline", st->head_expired },
		{ "answer_deadline", st->answer_expired },
	};
	struct prom_label l[1];
	size_t i;
	int err;

	err = family_u64(p, "khbpf_http_connections", PROM_GAUGE,
			 "Connections open to serve's HTTP endpoint", st->connections);
	err = err   ?:
		      promtext__family(
			      p, "khbpf_http_connections_closed", PROM_COUNTER, NULL,
			      "Connections serve closed at a bound: idle ones displaced by a "
			      "new one at the address or total limit, or past the request "
			      "head or answer deadline");
	for (i = 0; i < sizeof(closed) / sizeof(closed[0]) && !err; i++) {
		l[0] = (struct prom_label){ "reason", closed[i].reason };
		err = promtext__u64(p, l, 1, closed[i].n);
	}
	return err   ?:
		       family_u64(p, "khbpf_http_connections_refused", PROM_COUNTER,
				  "New connections refused: every connection they could displace "
				  "had a request in progress",
				  st->refused);
}

/* Collector health: the table, its evictions, and every loss counter. */
static int render_self(const struct serve_metrics_src *s, struct promtext *p)
{
	struct sched_collector_stats st;
	struct serve_groups_stats gs;
	struct serve_spans_stats ss;
	struct prom_label l[1];
	size_t i;
	int err;

	serve_groups__stats(s->groups, &gs);
	memset(&ss, 0, sizeof(ss));
	if (s->spans)
		serve_spans__stats(s->spans, &ss);
	err = sched_collector__stats(s->coll, &st);
	if (s->spans) {
		err = err   ?:
			      family_u64(p, "khbpf_span_series", PROM_GAUGE,
					 "Span series (group, metric, key) in the kernel's table",
					 ss.nr_series);
		err = err   ?:
			      family_u64(
				      p, "khbpf_span_series_max", PROM_GAUGE,
				      "Bound of the kernel's span series table (--max-span-series)",
				      ss.max_series);
		err = err   ?:
			      family_u64(p, "khbpf_span_series_evictions", PROM_COUNTER,
					 "Span series removed to keep the table under its bound",
					 ss.evicted);
		err = err   ?:
			      family_u64(p, "khbpf_span_series_aged_out", PROM_COUNTER,
					 "Span series removed after --max-age without a call",
					 ss.aged_out);
	}
	err = err   ?:
		      family_u64(p, "khbpf_groups", PROM_GAUGE,
				 "Groups (cgroups or processes) in the kernel's table",
				 gs.nr_groups);
	err = err   ?:
		      family_u64(p, "khbpf_groups_max", PROM_GAUGE,
				 "Bound of the kernel's group table (--max-groups)", gs.max_groups);
	err = err   ?:
		      family_u64(p, "khbpf_groups_created", PROM_COUNTER,
				 "Groups the kernel added to its table", st.groups_made);
	err = err   ?:
		      family_u64(p, "khbpf_group_evictions", PROM_COUNTER,
				 "Groups removed to keep the table under its bound (least recently "
				 "active first)",
				 gs.evicted);
	err = err   ?:
		      family_u64(p, "khbpf_groups_aged_out", PROM_COUNTER,
				 "Groups removed after --max-age without activity", gs.aged_out);
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
	if (s->http)
		err = err ?: serve_metrics__http(p, s->http);
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
	LOSS("retired_comms_beyond_bound", gs.retired_dropped);
	if (s->spans) {
		LOSS("span_series_overflow_calls", st.span_series_overflow);
		LOSS("span_series_retired_beyond_bound", ss.retired_dropped);
		LOSS("spans_open_at_thread_exit", st.span_open_at_exit_serve);
		LOSS("span_depth_overflow", st.span_depth_overflow);
		LOSS("span_returns_unmatched", st.span_unmatched);
		LOSS("span_state_failures", st.span_state_failures);
		LOSS("span_site_unresolved", st.span_site_unresolved);
		LOSS("span_key_calls_other", st.span_key_other_calls);
		LOSS("span_key_unreadable", st.span_key_unreadable);
		LOSS("span_key_table_full", st.span_key_table_full);
	}
	LOSS("cgroup_names_beyond_bound", gs.names_dropped);
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
static int render_frequency(const struct serve_metrics_src *s, struct promtext *p)
{
	struct cpu_frequency_sample f;
	enum ev_gap gap;
	struct prom_label l[1];
	int err;

	if (cpufreq__sample(s->root ?: "/", 0, &f, &gap))
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

int serve_metrics__gaps(struct promtext *p, struct json_object *doc)
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

int serve_metrics__render(struct promtext *p, const struct serve_metrics_src *src)
{
	int err = render_groups(src, p);

	err = err ?: render_spans(src, p);
	err = err ?: render_open_spans(src, p);
	err = err ?: render_self(src, p);
	err = err ?: serve_filters__render(src->filters, p);
	err = err ?: serve_metrics__gaps(p, src->doc);
	err = err ?: render_frequency(src, p);
	return err ?: serve_pressure__render(p, src);
}

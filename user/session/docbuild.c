// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "host/cgroup.h"
#include "session/docbuild.h"
#include "host/perfcount.h"
#include "collect/wakers.h"

#define NS_PER_SEC UINT64_C(1000000000)

struct docbuild {
	struct docbuild_opts o; /* the collected state of the last build */
	struct evidence_doc doc;
	struct hardware_run hw;
	struct doc_thread *threads;
	size_t nr_threads;
	struct doc_process *processes;
	struct doc_process_metric *process_metrics;
	uint64_t metrics_without_process;
	uint64_t titles_truncated; /* reads of the listed processes' titles cut at the bound */
	struct usdt_count *usdt_counts;
	struct usdt_count_by *usdt_by; /* every count's processes and threads */
	struct usdt_key_hits *usdt_keys; /* every count's keys (--key) */
	uint64_t usdt_hits_without_process;
	struct waker_row *waker_rows; /* every thread's, then the process's */
	struct collector_capability caps[6];
	struct named_u64 loss[60 + SCHED_PROG_MAX];
	char loss_names[SCHED_PROG_MAX][48];
	size_t nr_loss;
	struct named_u64 overhead[2 * SCHED_PROG_MAX + 4];
	char overhead_names[2 * SCHED_PROG_MAX][48];
	size_t nr_overhead;
	struct rusage usage;
};

static void fill_sched_evidence(struct scheduler_evidence *ev, const struct khbpf_task_counters *d,
				const struct khbpf_task_bpf *b, bool use_bpf, bool sched_info,
				bool known)
{
	enum ev_source sw = use_bpf ? EV_SRC_BPF_TRACEPOINT : EV_SRC_PROC_PID_SCHED;
	enum ev_source st = use_bpf ? EV_SRC_BPF_TRACEPOINT : EV_SRC_PROC_PID_SCHEDSTAT;

	if (!known) {
		scheduler_evidence__all_gapped(ev, sw, EV_GAP_UNAVAILABLE);
		ev->scheduler_delay_ns.source = st;
		ev->timeslices.source = st;
		return;
	}
	ev->voluntary_context_switches = sev_u64__recorded(d->nvcsw, sw);
	ev->involuntary_context_switches = sev_u64__recorded(d->nivcsw, sw);
	ev->total_context_switches = sev_u64__recorded(d->nvcsw + d->nivcsw, sw);
	ev->cpu_migrations = sev_u64__recorded(d->nr_migrations, sw);
	if (!use_bpf || sched_info) {
		ev->scheduler_delay_ns = sev_u64__recorded(d->run_delay, st);
		ev->timeslices = sev_u64__recorded(d->pcount, st);
	} else {
		/* No CONFIG_SCHED_INFO: the BPF-timed values stand in. */
		ev->scheduler_delay_ns =
			sev_u64__recorded(b->wait_ns + b->unbinned_ns, EV_SRC_BPF_TRACEPOINT);
		ev->timeslices = sev_u64__recorded(b->switch_ins, EV_SRC_BPF_TRACEPOINT);
	}
}

/*
 * kernel_migrations: se.nr_migrations over the same span. A CPU change the
 * classifier did not see (the held child of run before attach; a program
 * run that did not happen) is "unseen", so the classes add up to the
 * kernel's count and the shortfall is counted, not hidden.
 */
static void fill_detail(struct doc_sched_detail *d, const struct khbpf_task_bpf *b, bool valid,
			enum ev_gap reason, uint64_t kernel_migrations)
{
	memset(d, 0, sizeof(*d));
	if (!valid) {
		d->reason = reason;
		return;
	}
	d->recorded = true;
	d->wait_ns = b->wait_ns + b->unbinned_ns;
	d->waits = b->waits + b->unbinned_waits;
	d->unbinned_ns = b->unbinned_ns;
	d->unbinned_waits = b->unbinned_waits;
	d->switch_ins = b->switch_ins;
	d->migrations = b->migrations;
	d->migrations_unseen =
		kernel_migrations > b->migrations ? kernel_migrations - b->migrations : 0;
	memcpy(d->mig_class, b->mig_class, sizeof(d->mig_class));
	memcpy(d->wait_hist, b->wait_hist, sizeof(d->wait_hist));
}

/*
 * Blocked time of a thread or the process, where the collector timed it:
 * the kernel's sched_info and a runqueue clock BPF can reach.
 */
static void fill_blocked(struct blocked_evidence *e, const struct khbpf_task_bpf *b,
			 const struct docbuild_opts *s)
{
	memset(e, 0, sizeof(*e));
	if (!s->stats.blocked) {
		/* Not asked for (--blocked, --wakers), or the kernel cannot give it. */
		e->reason = s->stats.blocked_asked ? EV_GAP_UNSUPPORTED : EV_GAP_COLLECTOR_DISABLED;
		return;
	}
	e->recorded = true;
	memcpy(e->ns, b->blocked.ns, sizeof(e->ns));
	memcpy(e->count, b->blocked.count, sizeof(e->count));
	e->unattributed_ns = b->offcpu_unattributed_ns;
	e->has_unseen = true;
	e->offcpu_unseen = b->offcpu_unseen;
}

static int key_cmp(uint32_t tid_a, uint64_t st_a, uint32_t tid_b, uint64_t st_b)
{
	if (tid_a != tid_b)
		return tid_a < tid_b ? -1 : 1;
	return st_a < st_b ? -1 : st_a > st_b;
}

/*
 * Each thread's wakers (its entries of the sorted table, ranked), then the
 * process's (all of them merged by waker), into b->waker_rows.
 */
static int fill_wakers(struct docbuild *b, const struct docbuild_opts *s)
{
	size_t n = s->nr_wakers, i, j = 0, first;
	struct waker_row *rows;

	/* Without --wakers the blocked objects have no wakers at all, not an empty list. */
	if (!s->stats.wakers)
		return 0;
	rows = calloc(2 * n + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	b->waker_rows = rows;
	for (i = 0; i < n; i++) {
		wakers__row(&s->wakers[i], &rows[i]);
		rows[n + i] = rows[i];
	}
	for (i = 0; i < s->win.nr_threads; i++) {
		const struct window_thread *w = &s->win.threads[i];
		struct doc_thread *t = &b->threads[i];

		while (j < n && key_cmp(s->wakers[j].key.tid, s->wakers[j].key.start_time, w->tid,
					w->start_time) < 0)
			j++;
		first = j;
		while (j < n && !key_cmp(s->wakers[j].key.tid, s->wakers[j].key.start_time, w->tid,
					 w->start_time))
			j++;
		if (t->detail.blocked.recorded)
			wakers__rank(&rows[first], j - first, WAKERS_LISTED, &t->detail.blocked);
	}
	if (b->doc.sched_detail.blocked.recorded)
		wakers__rank(&rows[n], wakers__merge(&rows[n], n), WAKERS_LISTED,
			     &b->doc.sched_detail.blocked);
	return 0;
}

/*
 * Available when the host's PSI was read at both ends; the cgroup's and the
 * thermal values can still be gaps, each with its own detail.
 */
static void pressure_thermal_collector(struct collector_capability *cap,
				       const struct docbuild_opts *s)
{
	const struct pressure_window *h = s->pressure_host;
	struct sev_u64 stall;

	if (!h || !s->pressure_cgroup || !s->thermal) {
		collector_capability__set(
			cap, COLLECTOR_PRESSURE_THERMAL, AVAIL_UNAVAILABLE,
			"pressure and thermal state were not read in this window");
		return;
	}
	stall = pressure_window__stall(h, PSI_CPU, PSI_SOME);
	collector_capability__set(
		cap, COLLECTOR_PRESSURE_THERMAL,
		stall.ev.recorded			    ? AVAIL_AVAILABLE :
		stall.ev.reason == EV_GAP_UNSUPPORTED	    ? AVAIL_UNSUPPORTED :
		stall.ev.reason == EV_GAP_PERMISSION_DENIED ? AVAIL_PERMISSION_DENIED :
							      AVAIL_UNAVAILABLE,
		"%s", h->detail[0] ? h->detail : "/proc/pressure could not be read");
}

static uint64_t sat_add(uint64_t a, uint64_t x)
{
	return a > UINT64_MAX - x ? UINT64_MAX : a + x;
}

/* A monotonic time (task->start_time, bpf_ktime_get_ns()) on the wall clock of the window. */
static uint64_t unix_ns_of(const struct docbuild_opts *s, uint64_t mono)
{
	int64_t d = (int64_t)(mono - s->start_mono);

	return d < 0 && (uint64_t)-d > s->start_real ? 0 : s->start_real + (uint64_t)d;
}

static const char *joined_name(const struct window_process *p)
{
	uint32_t f = p->have_rec ? p->rec.flags : 0;

	return f & KHBPF_PROC_ROOT   ? "root" :
	       f & KHBPF_PROC_FORKED ? "fork" :
	       f & KHBPF_PROC_MOVED  ? "moved" :
				       "walk";
}

/* One read of a title: its text, or the gap (a read not made is "unavailable"). */
static const char *title_of(const struct proctitle *t, bool read, enum ev_gap *reason,
			    uint64_t *truncated)
{
	*reason = read ? t->reason : EV_GAP_UNAVAILABLE;
	if (!read || !t->recorded)
		return NULL;
	*truncated += t->truncated;
	return t->text;
}

/*
 * The processes of the set and target.set. A process's totals are its
 * threads' sums, gaps when one of them vanished or, as the set's own, when
 * threads were kept out of the set (they could not join).
 */
static int fill_processes(struct docbuild *b, bool set_complete)
{
	const struct docbuild_opts *s = &b->o;
	const struct proc_window *pw = s->pwin;
	struct doc_set *set = &b->doc.target.set;
	size_t i;

	static const enum doc_set_kind kinds[] = {
		[KHBPF_SET_NONE] = DOC_SET_NONE,
		[KHBPF_SET_PIDS] = DOC_SET_PROCESSES,
		[KHBPF_SET_TREE] = DOC_SET_PROCESS_TREES,
		[KHBPF_SET_CGROUP] = DOC_SET_CGROUPS,
	};

	set->kind = s->set_mode <= KHBPF_SET_CGROUP ? kinds[s->set_mode] : DOC_SET_NONE;
	if (s->mode == TARGET_MODE_RUN)
		set->kind = s->set_mode == KHBPF_SET_TREE ? DOC_SET_COMMAND_TREE : DOC_SET_COMMAND;
	set->pids = s->set_pids;
	set->nr_pids = s->nr_set_pids;
	set->cgroups = s->set_cgroups;
	set->nr_cgroups = s->nr_set_cgroups;
	set->max_processes = s->stats.max_processes;
	if (!pw || !pw->nr)
		return 0;
	b->processes = calloc(pw->nr, sizeof(*b->processes));
	if (!b->processes)
		return -ENOMEM;
	for (i = 0; i < pw->nr; i++) {
		const struct window_process *w = &pw->procs[i];
		struct doc_process *p = &b->processes[i];
		/* A process with no thread listed has no sums (its threads could not join). */
		bool known = set_complete && !w->vanished_threads && w->nr_threads;
		enum ev_source cpu_src =
			s->use_bpf ? EV_SRC_BPF_TRACEPOINT : EV_SRC_PROC_PID_SCHEDSTAT;

		p->pid = w->pid;
		p->parent_known = w->have_rec;
		p->parent_pid = w->rec.ppid;
		snprintf(p->comm, sizeof(p->comm), "%.16s", w->comm);
		p->exe = w->exe;
		/* Without BPF only /proc/PID/exe was asked (a zombie's cannot be read). */
		p->exe_source =
			w->exe_read || !s->use_bpf ? EV_SRC_PROC_PID_EXE : EV_SRC_BPF_TRACEPOINT;
		p->exe_reason = EV_GAP_UNAVAILABLE;
		p->title_join_reason = p->title_end_reason = EV_GAP_UNAVAILABLE;
		if (w->title) {
			p->title_join = title_of(&w->title->join, w->title->join_read,
						 &p->title_join_reason, &b->titles_truncated);
			p->title_end = title_of(&w->title->end, w->title->end_read,
						&p->title_end_reason, &b->titles_truncated);
		}
		p->start_unix_ns = unix_ns_of(s, w->start_time);
		p->exit_unix_ns = w->have_rec && (w->rec.flags & KHBPF_PROC_EXITED) ?
					  ev_u64__recorded(unix_ns_of(s, w->rec.exit_ns)) :
					  ev_u64__gap(EV_GAP_UNAVAILABLE);
		if (s->mode == TARGET_MODE_RUN && s->child_reaped && w->pid == (uint32_t)s->pid) {
			/* run's command: the status wait4() gave. */
			p->exit_recorded = true;
			p->exit_signaled = WIFSIGNALED(s->wait_status);
			p->exit_value = WIFSIGNALED(s->wait_status) ?
						(uint64_t)WTERMSIG(s->wait_status) :
						(uint64_t)WEXITSTATUS(s->wait_status);
		} else if (w->have_rec && (w->rec.flags & KHBPF_PROC_EXITED)) {
			p->exit_recorded = true;
			p->exit_signaled = (w->rec.exit_status & 0x7f) != 0;
			p->exit_value = p->exit_signaled ? w->rec.exit_status & 0x7f :
							   (w->rec.exit_status >> 8) & 0xff;
		}
		p->exit_reason = EV_GAP_UNAVAILABLE;
		p->joined = joined_name(w);
		p->born = w->born;
		p->exited = w->exited;
		p->left_cgroup = w->left;
		p->threads = w->nr_threads;
		fill_sched_evidence(&p->scheduler, &w->total, &w->total_bpf, s->use_bpf,
				    s->stats.sched_info, known);
		p->on_cpu_ns = known ? sev_u64__recorded(w->total.sum_exec_runtime, cpu_src) :
				       sev_u64__gap(cpu_src, EV_GAP_UNAVAILABLE);
		set->exited += w->exited;
		set->left += w->left;
		if (!strcmp(p->joined, "fork"))
			set->joined_at_fork++;
		else if (!strcmp(p->joined, "moved") ||
			 (w->have_rec && w->rec.join_ns > s->start_join_end))
			set->joined_later++;
		else
			set->joined_at_start++;
	}
	set->processes = pw->nr;
	b->doc.processes = b->processes;
	b->doc.nr_processes = pw->nr;
	return 0;
}

/* The window thread with this tid, when exactly one has it; -1 else. */
static ssize_t only_thread(const struct sched_window *w, uint32_t tid)
{
	size_t lo = sched_window__first_tid(w, tid);

	if (lo >= w->nr_threads || w->threads[lo].tid != tid)
		return -1;
	if (lo + 1 < w->nr_threads && w->threads[lo + 1].tid == tid)
		return -1;
	return (ssize_t)lo;
}

static int pm_cmp(const void *a, const void *b)
{
	const struct doc_process_metric *x = a, *y = b;
	int c;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->process_start_unix_ns != y->process_start_unix_ns)
		return x->process_start_unix_ns < y->process_start_unix_ns ? -1 : 1;
	c = strcmp(x->metric_id, y->metric_id);
	return c;
}

/*
 * Span metrics per process: the kernel's (thread, metric) aggregates,
 * each added to its thread's process. An aggregate whose thread id more
 * than one thread of the window had (a tid reused) cannot be split; it is
 * counted in loss.span_aggregates_without_process, as one whose thread is
 * not listed.
 */
static int fill_process_metrics(struct docbuild *b)
{
	const struct docbuild_opts *s = &b->o;
	const struct span_run *r = s->spans;
	struct doc_process_metric *v;
	size_t i, n = 0, j;

	/* serve: the kernel summed per group, not per thread (/metrics has the groups). */
	if (!r || !r->nr_aggs || !s->pwin || !s->pwin->nr || r->by_group)
		return 0;
	v = calloc(r->nr_aggs, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < r->nr_aggs; i++) {
		const struct span_agg_entry *a = &r->aggs[i];
		const struct window_process *p;
		ssize_t t;

		if (!a->agg.calls || a->key.metric >= r->nr_metrics)
			continue;
		t = only_thread(&s->win, a->key.tid);
		if (t < 0) {
			b->metrics_without_process++;
			continue;
		}
		p = &s->pwin->procs[s->pwin->proc_of_thread[t]];
		v[n].pid = p->pid;
		v[n].process_start_unix_ns = unix_ns_of(s, p->start_time);
		v[n].metric_id = r->metrics[a->key.metric];
		v[n].calls = a->agg.calls;
		v[n].inclusive_ns = a->agg.inclusive_ns;
		v[n].exclusive_ns = a->agg.exclusive_ns;
		n++;
	}
	qsort(v, n, sizeof(*v), pm_cmp);
	for (i = 0, j = 0; i < n; i++) {
		if (j && !pm_cmp(&v[j - 1], &v[i])) {
			v[j - 1].calls = sat_add(v[j - 1].calls, v[i].calls);
			v[j - 1].inclusive_ns = sat_add(v[j - 1].inclusive_ns, v[i].inclusive_ns);
			v[j - 1].exclusive_ns = sat_add(v[j - 1].exclusive_ns, v[i].exclusive_ns);
		} else {
			v[j++] = v[i];
		}
	}
	b->process_metrics = v;
	b->doc.process_metrics = v;
	b->doc.nr_process_metrics = j;
	return 0;
}

static int by_cmp(const void *a, const void *b)
{
	const struct usdt_count_by *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if (x->process_start_unix_ns != y->process_start_unix_ns)
		return x->process_start_unix_ns < y->process_start_unix_ns ? -1 : 1;
	return 0;
}

/* Sorts v[0..n) and adds up entries of one id (and start): the new count. */
static size_t by_merge(struct usdt_count_by *v, size_t n)
{
	size_t i, j;

	qsort(v, n, sizeof(*v), by_cmp);
	for (i = 0, j = 0; i < n; i++) {
		if (j && !by_cmp(&v[j - 1], &v[i]))
			v[j - 1].hits = sat_add(v[j - 1].hits, v[i].hits);
		else
			v[j++] = v[i];
	}
	return j;
}

static int key_hits_cmp(const void *a, const void *b)
{
	const struct usdt_key_hits *x = a, *y = b;

	if (x->key.other != y->key.other)
		return x->key.other ? 1 : -1;
	if (x->hits != y->hits)
		return x->hits > y->hits ? -1 : 1;
	return strcmp(x->key.text, y->key.text);
}

/* A keyed probe's hits by key (r->keys.hits are by thread and key), into v: how many. */
static size_t usdt_keys_of(const struct span_run *r, uint32_t metric, struct usdt_key_hits *v)
{
	size_t i, j, n = 0;

	for (i = 0; i < r->keys.nr_hits; i++) {
		const struct usdt_hit_entry *h = &r->keys.hits[i];
		const struct span_key *k = &r->keys.v[h->key.metric];

		if (k->metric != metric || !h->hits)
			continue;
		for (j = 0; j < n && v[j].key.text != k->text; j++)
			;
		if (j == n) {
			span_run__doc_key(r, h->key.metric, &v[n].key);
			v[n++].hits = 0;
		}
		v[j].hits = sat_add(v[j].hits, h->hits);
	}
	qsort(v, n, sizeof(*v), key_hits_cmp);
	return n;
}

/*
 * Counted USDT probes: the kernel's (thread, probe) hits, each probe's
 * threads and, through the window's threads, its processes. Hits of a
 * thread id that more than one thread of the window had (a tid reused)
 * are in the probe's total and its thread's entry but in no process's:
 * counted in loss.usdt_hits_without_process.
 */
static int fill_usdt_counts(struct docbuild *b)
{
	const struct docbuild_opts *s = &b->o;
	const struct span_run *r = s->spans;
	struct usdt_count_by *by;
	struct usdt_count *v;
	size_t m, i, n = 0, used = 0, keys_used = 0;

	if (!r || !r->nr_metrics)
		return 0;
	v = calloc(r->nr_metrics, sizeof(*v));
	by = calloc(2 * r->nr_hits + 1, sizeof(*by));
	b->usdt_keys = calloc(r->keys.nr_hits + 1, sizeof(*b->usdt_keys));
	if (!v || !by || !b->usdt_keys) {
		free(v);
		free(by);
		return -ENOMEM;
	}
	for (m = 0; m < r->nr_metrics; m++) {
		struct usdt_count *u = &v[n];
		struct usdt_count_by *threads = by + used, *procs;
		size_t nt = 0, np = 0;

		if (!span_run__metric_counted(r, (uint32_t)m, &u->probe))
			continue;
		u->metric_id = r->metrics[m];
		for (i = 0; i < r->nr_hits; i++) {
			if (r->hits[i].key.metric != m || !r->hits[i].hits)
				continue;
			u->hits = sat_add(u->hits, r->hits[i].hits);
			/* serve: hits summed over the groups, no thread to name. */
			if (r->by_group)
				continue;
			threads[nt].id = r->hits[i].key.tid;
			threads[nt].hits = r->hits[i].hits;
			nt++;
		}
		nt = by_merge(threads, nt);
		procs = threads + nt;
		for (i = 0; i < nt; i++) {
			const struct window_process *p;
			ssize_t t = s->pwin && s->pwin->nr ?
					    only_thread(&s->win, (uint32_t)threads[i].id) :
					    -1;

			if (t < 0) {
				b->usdt_hits_without_process =
					sat_add(b->usdt_hits_without_process, threads[i].hits);
				continue;
			}
			p = &s->pwin->procs[s->pwin->proc_of_thread[t]];
			procs[np].id = p->pid;
			procs[np].process_start_unix_ns = unix_ns_of(s, p->start_time);
			procs[np].hits = threads[i].hits;
			np++;
		}
		np = by_merge(procs, np);
		u->threads = threads;
		u->nr_threads = nt;
		u->processes = procs;
		u->nr_processes = np;
		used += nt + np;
		if (r->keys.kind && r->keys.kind[m]) {
			u->keys = b->usdt_keys + keys_used;
			u->nr_keys = usdt_keys_of(r, (uint32_t)m, b->usdt_keys + keys_used);
			keys_used += u->nr_keys;
		}
		n++;
	}
	b->usdt_counts = v;
	b->usdt_by = by;
	b->doc.usdt_counts = v;
	b->doc.nr_usdt_counts = n;
	return 0;
}

static int build_document(struct docbuild *b)
{
	const struct docbuild_opts *s = &b->o;
	struct evidence_doc *doc = &b->doc;
	struct hardware_run *hw = &b->hw;
	enum ev_gap bpf_gap = collector_availability__gap(s->bpf_avail);
	struct utilization_opts uo = { 0 };
	uint64_t wall = s->end_mono - s->start_mono;
	/* Threads kept out of the set (no state, or their process had no room) are in no sum. */
	bool set_complete = !s->stats.join_failures && !s->stats.procs_overflow;
	bool totals_known = s->win.vanished_threads == 0 && set_complete;
	/* Without BPF: the CPU of threads /proc never showed (fallback_witness). */
	bool fb_cpu_known = s->use_bpf || (s->fb.clock_ok && s->fb.cpu_end >= s->fb.cpu_start);
	uint64_t fb_cpu = s->fb.cpu_end - s->fb.cpu_start, seen_cpu = s->win.total.sum_exec_runtime;
	uint64_t unseen_cpu = !s->use_bpf && fb_cpu > seen_cpu ? fb_cpu - seen_cpu : 0;
	bool complete = totals_known && fb_cpu_known && (s->use_bpf || fb_cpu == seen_cpu);
	/*
	 * wait4's rusage of run's command: its tree's switches, every process
	 * it waited for included; for a command alone only when it waited
	 * for none (their page faults, cminflt + cmajflt, are 0).
	 */
	bool ru_switches = !complete && s->fb.have_rusage &&
			   (s->set_mode == KHBPF_SET_TREE ||
			    (s->fb.child_faults_known && !s->fb.child_faults));
	size_t i;
	int err;

	memset(doc, 0, sizeof(*doc));
	doc->target = s->target;
	if (s->mode == TARGET_MODE_RUN && s->child_reaped) {
		doc->target.exit_recorded = true;
		doc->target.exit_signaled = WIFSIGNALED(s->wait_status);
		doc->target.exit_value = WIFSIGNALED(s->wait_status) ?
						 (uint64_t)WTERMSIG(s->wait_status) :
						 (uint64_t)WEXITSTATUS(s->wait_status);
	} else {
		doc->target.exit_reason = EV_GAP_UNAVAILABLE;
	}
	doc->window.start_unix_ns = s->start_real;
	doc->window.wall_ns = wall;
	doc->window.end_reason = s->end_reason;

	collector_capability__set(
		&b->caps[0], COLLECTOR_SCHEDULER_ACTIVITY,
		s->use_bpf ? AVAIL_AVAILABLE : s->bpf_avail, "%s%s%s", s->bpf_detail,
		s->use_bpf ? "" : "; values below come from /proc (proc-pid-* sources)",
		s->use_bpf || complete ?
			"" :
		ru_switches ?
			"; threads ran unseen (loss.threads_unseen_cpu_ns): process switches from wait4, other totals gaps" :
			"; threads may have run unseen (loss.threads_unseen_cpu_ns): process totals are gaps");
	if (s->use_bpf && !s->stats.sched_info)
		collector_capability__set(
			&b->caps[0], COLLECTOR_SCHEDULER_ACTIVITY, AVAIL_AVAILABLE,
			"kernel lacks CONFIG_SCHED_INFO: scheduler_delay_ns and timeslices are BPF-timed");
	collector_capability__set(&b->caps[1], COLLECTOR_HARDWARE_COUNTERS, s->counters_avail, "%s",
				  s->counters_detail);
	collector_capability__set(&b->caps[2], COLLECTOR_THREAD_UTILIZATION, AVAIL_AVAILABLE, NULL);
	collector_capability__set(&b->caps[3], COLLECTOR_CPU_TOPOLOGY,
				  s->topo.logical_cpus ? AVAIL_AVAILABLE : AVAIL_UNAVAILABLE,
				  "cannot read CPU topology from sysfs; mount /sys");
	doc->collectors = b->caps;
	if (s->spans->nr_attached)
		collector_capability__set(&b->caps[4], COLLECTOR_SPAN_PROBES, AVAIL_AVAILABLE,
					  NULL);
	else if (!s->spans->nr_sites)
		collector_capability__set(
			&b->caps[4], COLLECTOR_SPAN_PROBES, AVAIL_DISABLED, "%s",
			s->no_bpf ?
				"--no-bpf given: spans need BPF uprobes" :
				"no annotated span functions (KHBPF_SPAN) in the target and no --span given");
	else
		collector_capability__set(&b->caps[4], COLLECTOR_SPAN_PROBES,
					  s->use_bpf ? AVAIL_UNAVAILABLE : s->bpf_avail,
					  "no span site could be attached: %.200s",
					  s->spans->sites[0].reason[0] ? s->spans->sites[0].reason :
									 s->bpf_detail);
	pressure_thermal_collector(&b->caps[5], s);
	doc->nr_collectors = 6;
	doc->pressure_host = s->pressure_host;
	doc->pressure_cgroup = s->pressure_cgroup;
	doc->thermal = s->thermal;

	/* Threads. */
	b->threads = calloc(s->win.nr_threads ? s->win.nr_threads : 1, sizeof(*b->threads));
	if (!b->threads)
		return -ENOMEM;
	for (i = 0; i < s->win.nr_threads; i++) {
		const struct window_thread *w = &s->win.threads[i];
		struct doc_thread *t = &b->threads[i];

		t->thread_id = w->tid;
		snprintf(t->comm, sizeof(t->comm), "%.16s", w->comm);
		t->exited = w->exited;
		t->born = w->born;
		t->left_cgroup = w->left;
		t->pid = w->tgid;
		t->process_start_unix_ns = unix_ns_of(s, w->proc_start_time);
		fill_sched_evidence(&t->scheduler, &w->delta, &w->bpf, s->use_bpf,
				    s->stats.sched_info, !w->vanished);
		t->on_cpu_ns = w->vanished ?
				       sev_u64__gap(s->use_bpf ? EV_SRC_BPF_TRACEPOINT :
								 EV_SRC_PROC_PID_SCHEDSTAT,
						    EV_GAP_UNAVAILABLE) :
				       sev_u64__recorded(w->delta.sum_exec_runtime,
							 s->use_bpf ? EV_SRC_BPF_TRACEPOINT :
								      EV_SRC_PROC_PID_SCHEDSTAT);
		fill_detail(&t->detail, &w->bpf, s->use_bpf && w->has_bpf,
			    s->use_bpf ? EV_GAP_UNAVAILABLE : bpf_gap,
			    w->vanished ? 0 : w->delta.nr_migrations);
		if (t->detail.recorded)
			fill_blocked(&t->detail.blocked, &w->bpf, s);
	}
	b->nr_threads = s->win.nr_threads;
	doc->threads = b->threads;
	doc->nr_threads = b->nr_threads;
	fill_detail(&doc->sched_detail, &s->win.total_bpf, s->use_bpf, bpf_gap,
		    totals_known ? s->win.total.nr_migrations : 0);
	if (doc->sched_detail.recorded)
		fill_blocked(&doc->sched_detail.blocked, &s->win.total_bpf, s);
	err = fill_wakers(b, s);
	/* Without BPF a process's sums are known only when nothing can have run unseen. */
	err = err ?: fill_processes(b, s->use_bpf ? set_complete : complete);
	if (err)
		return err;
	doc->kernel_run_delay_ns =
		complete && (!s->use_bpf || s->stats.sched_info) ?
			sev_u64__recorded(s->win.total.run_delay,
					  s->use_bpf ? EV_SRC_BPF_TRACEPOINT :
						       EV_SRC_PROC_PID_SCHEDSTAT) :
			sev_u64__gap(s->use_bpf ? EV_SRC_BPF_TRACEPOINT : EV_SRC_PROC_PID_SCHEDSTAT,
				     complete ? EV_GAP_UNSUPPORTED : EV_GAP_UNAVAILABLE);

	/* hardware: totals are the sums over threads, exited included. */
	hw->counters = s->counters;
	fill_sched_evidence(&hw->scheduler, &s->win.total, &s->win.total_bpf, s->use_bpf,
			    s->stats.sched_info, complete);
	/*
	 * Some threads were never read: in run, wait4's rusage still has every
	 * thread's switches, less each exited thread's last one (__exit_signal
	 * folds its counts into the process before its final __schedule), and
	 * plus those of the children CMD waited for, so only when there were
	 * none (their page faults, cminflt + cmajflt, are 0).
	 */
	if (ru_switches) {
		struct scheduler_evidence *e = &hw->scheduler;
		uint64_t v = (uint64_t)s->fb.ru.ru_nvcsw, iv = (uint64_t)s->fb.ru.ru_nivcsw;

		e->voluntary_context_switches = sev_u64__recorded(v, EV_SRC_SYSTEM_CALL);
		e->involuntary_context_switches = sev_u64__recorded(iv, EV_SRC_SYSTEM_CALL);
		e->total_context_switches = sev_u64__recorded(v + iv, EV_SRC_SYSTEM_CALL);
	}
	hw->topology.logical_cpus = s->topo.logical_cpus;
	hw->topology.physical_cores = s->topo.physical_cores;
	hw->topology.packages = s->topo.packages;
	hw->topology.numa_nodes = s->topo.numa_nodes;
	host_affinity__count(s->pid, &hw->topology.affinity_cpus);
	cgroup__cpu_quota(s->root, s->pid, &hw->topology.cpu_quota_milli, NULL, 0);
	hw->span_aggregation_reason =
		s->spans->nr_sites ? EV_GAP_UNAVAILABLE : EV_GAP_COLLECTOR_DISABLED;

	uo.first = &s->census[0];
	uo.last = &s->census[1];
	uo.samples_retained = 2;
	uo.wall_ns = wall;
	uo.logical_cpus = s->topo.logical_cpus;
	uo.frequency_samples = s->freq;
	uo.nr_frequency_samples = s->nr_freq;
	uo.dropped_frequency_samples = s->freq_dropped;
	uo.frequency_availability =
		s->freq_any ? (struct ev_source_ev){ .recorded = true, .value = EV_SRC_SYSFS_CPU } :
			      (struct ev_source_ev){ .reason = s->freq_gap };
	err = utilization__compute(&hw->utilization, &uo);
	if (err)
		return err;
	hw->utilization.dropped_threads =
		s->census[0].dropped_threads + s->census[1].dropped_threads;
	if (!s->use_bpf && fb_cpu_known) {
		/* The process CPU clock: every thread's, seen or not. */
		hw->utilization.all_threads_cpu_ns = ev_u64__recorded(fb_cpu);
		hw->utilization.all_threads_parallelism_milli = milli_ratio_ev(fb_cpu, wall);
	} else if (s->use_bpf && totals_known) {
		hw->utilization.all_threads_cpu_ns =
			ev_u64__recorded(s->win.total.sum_exec_runtime);
		hw->utilization.all_threads_parallelism_milli =
			milli_ratio_ev(s->win.total.sum_exec_runtime, wall);
	}
	doc->hardware_recorded = true;
	doc->hardware = hw;

	if (s->spans->nr_sites) {
		enum ev_gap hw_gap =
			s->span_counters == SCHED_COUNTERS_NONE ? EV_GAP_COLLECTOR_DISABLED :
			s->stats.counters_refused		? EV_GAP_UNSUPPORTED :
						    perfcount__errno_gap(s->stats.counters_err);

		struct span_counters_info *sc = &doc->span_counters;

		sc->requested = s->span_counters == SCHED_COUNTERS_HW		? "hw" :
				s->span_counters == SCHED_COUNTERS_SW_CPU_CLOCK ? "sw-cpu-clock" :
										  "none";
		sc->cpus = s->stats.counter_cpus;
		if (s->stats.nr_counters) {
			bool sw = s->span_counters == SCHED_COUNTERS_SW_CPU_CLOCK;

			sc->cycles_event = sw ? "sw-cpu-clock" : "hw-cpu-cycles";
			sc->instructions_event = sw ? "sw-cpu-clock" : "hw-instructions";
		} else if (s->stats.counters_refused) {
			snprintf(
				sc->detail, sizeof(sc->detail),
				"BPF verifier refused the span programs with counter readings (too complex for it; not tried without atomic fetch)");
		} else if (s->span_counters != SCHED_COUNTERS_NONE && s->use_bpf) {
			snprintf(sc->detail, sizeof(sc->detail),
				 "per-CPU perf_event_open failed: %s",
				 strerror(-s->stats.counters_err));
		}
		err = span_run__name_wakers(s->spans, s->wakers, s->nr_wakers);
		if (err)
			return err;
		err = span_run__document(s->spans, s->start_mono, s->stats.nr_counters > 0, hw_gap,
					 doc, &hw->span_aggregation);
		err = err ?: fill_process_metrics(b);
		err = err ?: fill_usdt_counts(b);
		if (err)
			return err;
		hw->span_aggregation_recorded = s->spans->nr_attached > 0;
		doc->events.availability_recorded = s->spans->nr_attached > 0;
		doc->events.availability = true;
		/* The span-probes collector's reason (e.g. BPF denied) says why. */
		doc->events.availability_reason =
			collector_availability__gap(b->caps[4].availability);
		doc->events.dropped_span_events = s->stats.span_ringbuf_drops;
		doc->events.sampled_out_events =
			s->stats.span_sampled_out + s->spans->events_over_cap;
	} else {
		doc->events.availability_reason = EV_GAP_COLLECTOR_DISABLED;
	}

	/* loss: every counter, whether or not it is zero. */
#define LOSS(n, v) b->loss[b->nr_loss++] = (struct named_u64){ n, ev_u64__recorded(v) }
	LOSS("threads_dropped", s->win.dropped_threads);
	LOSS("threads_without_baseline", s->win.threads_without_baseline);
	LOSS("threads_vanished", s->win.vanished_threads);
	LOSS("threads_renumbered_by_exec", s->stats.exec_renumbered);
	LOSS("exited_records_overflow", s->stats.exited_overflow);
	LOSS("exited_records_max", s->stats.max_exited);
	LOSS("exited_records_overflow_listed", s->win.overflowed_listed);
	LOSS("task_storage_failures", s->stats.storage_failures);
	LOSS("final_switch_unmatched", s->stats.final_unmatched);
	LOSS("iterator_write_errors", s->stats.iter_write_errors);
	LOSS("exit_records_not_final", s->stats.exit_not_final);
	LOSS("proc_read_errors", s->proc_read_errors);
	LOSS("migrations_unseen", doc->sched_detail.migrations_unseen);
	/* Threads that ran and were never read (only without BPF): their CPU, not their number. */
	b->loss[b->nr_loss++] =
		(struct named_u64){ "threads_unseen_cpu_ns",
				    fb_cpu_known ? ev_u64__recorded(unseen_cpu) :
						   ev_u64__gap(EV_GAP_UNAVAILABLE) };
	LOSS("census_threads_dropped", hw->utilization.dropped_threads);
	LOSS("frequency_samples_dropped", s->freq_dropped);
	LOSS("span_records_dropped_ringbuf", s->stats.span_ringbuf_drops);
	LOSS("span_ringbuf_bytes_max", s->stats.span_ringbuf_bytes);
	LOSS("span_records_sampled_out", s->stats.span_sampled_out + s->spans->events_over_cap);
	LOSS("span_depth_overflow", s->stats.span_depth_overflow);
	LOSS("span_frames_unwound", s->stats.span_unwound);
	LOSS("span_returns_unmatched", s->stats.span_unmatched);
	LOSS("span_aggregates_overflow", s->stats.span_agg_overflow);
	LOSS("span_state_failures", s->stats.span_state_failures);
	LOSS("span_site_unresolved", s->stats.span_site_unresolved);
	LOSS("span_records_malformed", s->stats.span_events_malformed);
	LOSS("span_clock_missed_switch_ins", s->stats.span_clock_gaps);
	LOSS("span_counter_reads_skewed", s->stats.span_counter_skews);
	LOSS("span_open_at_exit_dropped",
	     s->stats.span_open_at_exit_drops + s->spans->exit_open_lost);
	LOSS("blocked_wakers_overflow", s->stats.wakers_overflow);
	LOSS("blocked_wakeups_unseen", s->stats.wakeups_unseen);
	LOSS("blocked_causes_unread", s->stats.blocked_regs_unread);
	LOSS("span_wakeups_unlisted", s->stats.span_wakes_unlisted);
	LOSS("span_wakers_overflow", s->stats.span_wakers_overflow);
	LOSS("span_wakers_not_kept", s->spans->wakes_lost);
	LOSS("offcpu_stretches_unseen", s->win.total_bpf.offcpu_unseen);
	LOSS("processes_not_joined", s->stats.procs_overflow);
	LOSS("span_aggregates_without_process", b->metrics_without_process);
	LOSS("usdt_hits_lost", s->stats.usdt_hits_lost);
	LOSS("span_series_overflow", s->stats.span_series_overflow);
	LOSS("span_open_at_exit_uncounted", s->stats.span_open_at_exit_serve);
	LOSS("usdt_hits_without_process", b->usdt_hits_without_process);
	LOSS("span_key_calls_other", s->stats.span_key_other_calls);
	LOSS("span_key_unreadable", s->stats.span_key_unreadable);
	LOSS("span_key_table_full", s->stats.span_key_table_full);
	LOSS("span_execs_attached_late", s->spans->execs_late);
	LOSS("span_exec_events_dropped", s->stats.exec_events_dropped);
	LOSS("span_execs_unreadable", s->spans->exec_search_errors);
	LOSS("span_exec_libraries_unsearched", s->spans->exec_libraries_unsearched);
	LOSS("threads_not_joined", s->stats.join_failures);
	LOSS("forks_joined_at_wakeup", s->stats.forks_joined_at_wakeup);
	LOSS("wait_folds_max", s->stats.wait_folds_max);
	LOSS("wait_folds_full", s->stats.wait_folds_full);
	LOSS("threads_joined_late", s->late_joins);
	LOSS("moved_baselines_dropped", s->stats.moved_base_overflow);
	LOSS("cgroup_rejoins_ignored", s->stats.cgroup_rejoins);
	LOSS("process_titles_truncated", b->titles_truncated);
	/* A run the kernel skipped (the program was busy on that CPU) may miss an event. */
	for (i = 0; i < s->stats.nr_progs; i++) {
		snprintf(b->loss_names[i], sizeof(b->loss_names[0]), "%s_recursion_misses",
			 s->stats.progs[i].name);
		b->loss[b->nr_loss++] = (struct named_u64){
			b->loss_names[i],
			s->stats.progs[i].recursion_known ?
				ev_u64__recorded(s->stats.progs[i].recursion_misses) :
				ev_u64__gap(EV_GAP_UNSUPPORTED)
		};
	}
#undef LOSS
	doc->loss = b->loss;
	doc->nr_loss = b->nr_loss;

	for (i = 0; i < s->stats.nr_progs; i++) {
		const struct sched_prog_stats *p = &s->stats.progs[i];
		/* Run-time stats are opt-in (--bpf-stats): they cost every BPF program on the host. */
		enum ev_gap g = s->bpf_stats ? EV_GAP_UNAVAILABLE : EV_GAP_COLLECTOR_DISABLED;

		snprintf(b->overhead_names[2 * i], sizeof(b->overhead_names[0]), "%s_run_cnt",
			 p->name);
		snprintf(b->overhead_names[2 * i + 1], sizeof(b->overhead_names[0]),
			 "%s_run_time_ns", p->name);
		b->overhead[b->nr_overhead++] = (struct named_u64){
			b->overhead_names[2 * i],
			s->stats.run_stats_enabled ? ev_u64__recorded(p->run_cnt) : ev_u64__gap(g)
		};
		b->overhead[b->nr_overhead++] =
			(struct named_u64){ b->overhead_names[2 * i + 1],
					    s->stats.run_stats_enabled ?
						    ev_u64__recorded(p->run_time_ns) :
						    ev_u64__gap(g) };
	}
	getrusage(RUSAGE_SELF, &b->usage);
	b->overhead[b->nr_overhead++] = (struct named_u64){
		"loader_cpu_ns",
		ev_u64__recorded((uint64_t)(b->usage.ru_utime.tv_sec + b->usage.ru_stime.tv_sec) *
					 NS_PER_SEC +
				 (uint64_t)(b->usage.ru_utime.tv_usec + b->usage.ru_stime.tv_usec) *
					 1000)
	};
	b->overhead[b->nr_overhead++] =
		(struct named_u64){ "loader_max_rss_kib",
				    ev_u64__recorded((uint64_t)b->usage.ru_maxrss) };
	doc->overhead = b->overhead;
	doc->nr_overhead = b->nr_overhead;
	return 0;
}

int docbuild__new(struct docbuild **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

int docbuild__build(struct docbuild *b, const struct docbuild_opts *opts)
{
	docbuild__reset(b);
	b->o = *opts;
	if (!b->o.root)
		b->o.root = "/";
	return build_document(b);
}

const struct evidence_doc *docbuild__doc(const struct docbuild *b)
{
	return &b->doc;
}

void docbuild__reset(struct docbuild *b)
{
	utilization__free(&b->hw.utilization);
	span_hw_aggregation__free(&b->hw.span_aggregation);
	memset(&b->hw, 0, sizeof(b->hw));
	free(b->threads);
	b->threads = NULL;
	free(b->processes);
	b->processes = NULL;
	free(b->process_metrics);
	b->process_metrics = NULL;
	b->metrics_without_process = 0;
	b->titles_truncated = 0;
	free(b->usdt_counts);
	b->usdt_counts = NULL;
	free(b->usdt_by);
	b->usdt_by = NULL;
	free(b->usdt_keys);
	b->usdt_keys = NULL;
	b->usdt_hits_without_process = 0;
	free(b->waker_rows);
	b->waker_rows = NULL;
	b->nr_threads = 0;
	b->nr_loss = 0;
	b->nr_overhead = 0;
}

void docbuild__destroy(struct docbuild *b)
{
	if (!b)
		return;
	utilization__free(&b->hw.utilization);
	span_hw_aggregation__free(&b->hw.span_aggregation);
	free(b->threads);
	free(b->processes);
	free(b->process_metrics);
	free(b->usdt_counts);
	free(b->usdt_by);
	free(b->usdt_keys);
	free(b->waker_rows);
	free(b);
}

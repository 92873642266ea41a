// SPDX-License-Identifier: MIT
/* `khbpf report FILE`: the terminal report. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "document/evjson.h"
#include "report/report.h"

#define BAR_WIDTH 40
/* The widest a process's name is shown in a table (a title is cut, "..." at its end). */
#define NAME_COL_MAX 48

/* Evidence as a column: the number, a duration, or "-" for a gap. */
static void col(char *buf, size_t len, struct ev_u64 ev, bool ns)
{
	if (!ev.recorded)
		snprintf(buf, len, "-");
	else if (ns)
		report__fmt_ns(buf, len, ev.value);
	else
		snprintf(buf, len, "%" PRIu64, ev.value);
}

/* The six scheduler columns: on-CPU, runqueue delay, vol, invol, migrations, slices. */
struct sched_cols {
	char on[24], rq[24], vol[24], invol[24], mig[24], slices[24];
};

static void sched_cols(struct sched_cols *c, struct ev_u64 on, const struct scheduler_evidence *s)
{
	col(c->on, sizeof(c->on), on, true);
	col(c->rq, sizeof(c->rq), s->scheduler_delay_ns.ev, true);
	col(c->vol, sizeof(c->vol), s->voluntary_context_switches.ev, false);
	col(c->invol, sizeof(c->invol), s->involuntary_context_switches.ev, false);
	col(c->mig, sizeof(c->mig), s->cpu_migrations.ev, false);
	col(c->slices, sizeof(c->slices), s->timeslices.ev, false);
}

/*
 * Names from the kernel are any bytes: print them as valid UTF-8 without
 * control characters, which could drive the terminal.
 */
static void put_name(FILE *f, const char *fmt, const char *s)
{
	char *clean = evjson__utf8_sanitize(s ? s : "", s ? strlen(s) : 0), *p;

	for (p = clean; p && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	fprintf(f, fmt, clean ? clean : "?");
	free(clean);
}

static void print_set(const struct report_doc *d, FILE *f);

/* The target's title (its process, the set's first root), as the process table names it. */
static void put_target_title(const struct report_doc *d, FILE *f)
{
	size_t i;

	for (i = 0; i < d->nr_processes; i++) {
		const struct report_process *p = &d->processes[i];

		if (p->pid != d->pid || !p->joined || strcmp(p->joined, "root"))
			continue;
		if (p->title_end || p->title_join)
			put_name(f, "  title:    %s\n", report__process_name(p));
		return;
	}
}

/* name cut to max bytes, its end "..." when cut, into buf (max + 1 bytes). */
static const char *cut_name(char *buf, size_t max, const char *name)
{
	size_t n = strlen(name);

	if (n <= max)
		return name;
	memcpy(buf, name, max - 3);
	memcpy(buf + max - 3, "...", 4);
	return buf;
}

/* A name column of width bytes (names cut to it), left-aligned. */
static void put_name_col(FILE *f, const char *name, int width)
{
	char cut[NAME_COL_MAX + 1], fmt[16];

	snprintf(fmt, sizeof(fmt), "%%-%ds", width);
	put_name(f, fmt, cut_name(cut, (size_t)width, name));
}

static void print_run(const struct report_doc *d, FILE *f)
{
	char wall[32], buf[64];
	struct sched_cols c;
	time_t secs = (time_t)(d->start_unix_ns / 1000000000u);
	struct tm tm;

	report__fmt_ns(wall, sizeof(wall), d->wall_ns);
	fprintf(f, "khbpf report: pid %" PRIu64, d->pid);
	put_name(f, " (%s)", d->comm);
	fprintf(f, ", %s, window %s, ended by %s\n", d->mode ? d->mode : "?", wall,
		d->end_reason ? d->end_reason : "?");
	if (gmtime_r(&secs, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm))
		fprintf(f, "  started:  %s\n", buf);
	if (d->exe)
		put_name(f, "  exe:      %s\n", d->exe);
	put_target_title(d, f);
	report__exit_phrase(d, buf, sizeof(buf));
	fprintf(f, "  target:   %s\n", buf);
	if (d->set_kind)
		print_set(d, f);
	if (d->khbpf_version)
		fprintf(f, "  producer: khbpf %s, kernel %s\n", d->khbpf_version,
			d->kernel_release ? d->kernel_release : "?");
	if (!d->hardware_recorded) {
		fprintf(f, "  totals:   hardware evidence %s\n", ev_gap__name(d->hardware_reason));
		return;
	}
	sched_cols(&c, d->all_threads_cpu_ns, &d->totals);
	fprintf(f, "  totals:   on-CPU %s, runqueue delay %s, ", c.on, c.rq);
	/* Blocked time where it was timed (--blocked): the third part of the answer. */
	if (d->blocked.present && d->blocked.recorded) {
		report__fmt_ns(buf, sizeof(buf), report__blocked_total(&d->blocked));
		fprintf(f, "blocked %s, ", buf);
	}
	fprintf(f, "switches %s voluntary + %s involuntary, %s migrations, %s timeslices\n", c.vol,
		c.invol, c.mig, c.slices);
	if (d->parallelism_milli.recorded)
		fprintf(f, "  parallelism: %" PRIu64 ".%03" PRIu64 " CPUs busy on average, of %u\n",
			d->parallelism_milli.value / 1000, d->parallelism_milli.value % 1000,
			d->logical_cpus);
}

/* "lock 98.2%, sleep 1.8%": each cause with time, as a share of the blocked time. */
static void put_causes(const struct report_blocked *b, FILE *f)
{
	char buf[256];

	report__causes_phrase(b, buf, sizeof(buf));
	fputs(buf, f);
}

static uint64_t blocked_total(const struct report_blocked *b)
{
	return report__blocked_total(b);
}

/* The first `max` wakers: "w-holder (1234) 58.1 ms x3, a timer 20.0 ms x2". */
static void put_wakers(const struct report_blocked *b, size_t max, FILE *f)
{
	char buf[512];

	report__wakers_phrase(b, max, buf, sizeof(buf));
	fputs(buf, f);
}

/* Blocked time by cause and the wakers of each thread that was blocked at all. */
static void print_blocked(const struct report_doc *d, FILE *f)
{
	char tot[24], un[24];
	size_t i;

	if (!d->blocked.present)
		return;
	if (!d->blocked.recorded) {
		fprintf(f, "\nBlocked (off-CPU, not runnable): %s — %s\n",
			ev_gap__name(d->blocked.reason),
			report__gap_hint("scheduler_detail.value.blocked", d->blocked.reason));
		return;
	}
	report__fmt_ns(tot, sizeof(tot), blocked_total(&d->blocked));
	fprintf(f, "\nBlocked (off-CPU, not runnable), all threads: %s", tot);
	if (blocked_total(&d->blocked)) {
		fputs(": ", f);
		put_causes(&d->blocked, f);
	}
	if (d->blocked.unattributed_ns) {
		report__fmt_ns(un, sizeof(un),
			       (uint64_t)(d->blocked.unattributed_ns < 0 ?
						  -d->blocked.unattributed_ns :
						  d->blocked.unattributed_ns));
		fprintf(f, "; unattributed %s%s", d->blocked.unattributed_ns < 0 ? "-" : "", un);
	}
	fputc('\n', f);
	for (i = 0; i < d->nr_listed; i++) {
		const struct report_thread *th = &d->threads[i];
		uint64_t t = blocked_total(&th->blocked);

		if (!th->blocked.recorded || !t)
			continue;
		report__fmt_ns(tot, sizeof(tot), t);
		put_name(f, "  %s", th->comm);
		fprintf(f, " (%" PRIu64 "): %s, ", th->tid, tot);
		put_causes(&th->blocked, f);
		if (th->blocked.nr_wakers) {
			fputs("; woken by ", f);
			put_wakers(&th->blocked, 3, f);
		}
		fputc('\n', f);
	}
}

static void print_set(const struct report_doc *d, FILE *f)
{
	size_t i, forked = 0, exited = 0, left = 0;

	for (i = 0; i < d->nr_processes; i++) {
		forked += !strcmp(d->processes[i].joined, "fork");
		exited += d->processes[i].exited;
		left += d->processes[i].left_cgroup;
	}
	fprintf(f, "  set:      %s, %zu process%s (%zu forked in the window), %zu exited",
		d->set_kind, d->nr_processes, d->nr_processes == 1 ? "" : "es", forked, exited);
	if (left)
		fprintf(f, ", %zu left the cgroups", left);
	fputc('\n', f);
}

static void process_flags(const struct report_process *p, FILE *f)
{
	const char *sep = "  ";

	if (!strcmp(p->joined, "root") || !strcmp(p->joined, "moved")) {
		fprintf(f, "%s%s", sep, p->joined);
		sep = ", ";
	}
	if (p->born) {
		fprintf(f, "%sborn", sep);
		sep = ", ";
	}
	if (p->exit_recorded) {
		fprintf(f, "%s%s %" PRIu64, sep, p->exit_signaled ? "killed by signal" : "exited",
			p->exit_value);
		sep = ", ";
	} else if (p->exited) {
		fprintf(f, "%sexited", sep);
		sep = ", ";
	}
	if (p->left_cgroup)
		fprintf(f, "%sleft the cgroups", sep);
}

/*
 * The width of the name column: comm's 16, or, when a process shown has a
 * title, its longest name up to NAME_COL_MAX (*titled then true).
 */
static int name_width(const struct report_doc *d, const size_t *order, size_t shown, bool *titled)
{
	size_t i, w = 16, n;

	*titled = false;
	for (i = 0; i < shown; i++) {
		const struct report_process *p = &d->processes[order[i]];

		*titled = *titled || p->title_end || p->title_join;
		n = strlen(report__process_name(p));
		w = n > w ? n : w;
	}
	if (!*titled)
		return 16;
	return (int)(w < NAME_COL_MAX ? w : NAME_COL_MAX);
}

/*
 * The set's processes, busiest first: the first REPORT_TEXT_PROCESSES unless
 * all, each named by its title where one was recorded, else its comm.
 */
static void print_processes(const struct report_doc *d, const size_t *order, size_t shown, FILE *f)
{
	struct sched_cols c;
	uint64_t threads = 0;
	bool titled;
	int w = name_width(d, order, shown, &titled);
	size_t i;

	fprintf(f, "\nProcesses (%zu), busiest first\n", d->nr_processes);
	fprintf(f, "  %10s %8s %-*s %7s %9s %9s %8s %8s %6s %7s\n", "PID", "PPID", w,
		titled ? "NAME" : "COMM", "THREADS", "ON-CPU", "RQ-DELAY", "VOL", "INVOL", "MIGR",
		"SLICES");
	for (i = 0; i < d->nr_processes; i++) {
		const struct report_process *p = &d->processes[order[i]];
		char ppid[24];

		threads += p->threads;
		if (i >= shown)
			continue;
		sched_cols(&c, p->on_cpu_ns.ev, &p->sched);
		col(ppid, sizeof(ppid), p->ppid, false);
		fprintf(f, "  %10" PRIu64 " %8s ", p->pid, ppid);
		put_name_col(f, report__process_name(p), w);
		fprintf(f, " %7" PRIu64 " %9s %9s %8s %8s %6s %7s", p->threads, c.on, c.rq, c.vol,
			c.invol, c.mig, c.slices);
		process_flags(p, f);
		fputc('\n', f);
	}
	if (d->hardware_recorded) {
		sched_cols(&c, d->all_threads_cpu_ns, &d->totals);
		fprintf(f, "  %10s %8s %-*s %7" PRIu64 " %9s %9s %8s %8s %6s %7s\n", "total", "", w,
			"", threads, c.on, c.rq, c.vol, c.invol, c.mig, c.slices);
	}
	if (shown < d->nr_processes)
		fprintf(f, "  %zu more processes (khbpf report --all lists every one)\n",
			d->nr_processes - shown);
}

/* Processes of one role (a title's first words) or, untitled, of one comm. */
struct role_group {
	char name[128];
	bool titled;
	size_t procs;
	uint64_t threads;
	struct ev_u64 on;
	struct scheduler_evidence sched;
};

/* acc + v, a gap when either is (the first gap met): never a partial sum. */
static void ev_add(struct ev_u64 *acc, struct ev_u64 v)
{
	if (!acc->recorded)
		return;
	if (!v.recorded)
		*acc = v;
	else
		acc->value = report__sat_add(acc->value, v.value);
}

static void group_add(struct role_group *g, const struct report_process *p)
{
	struct scheduler_evidence *s = &g->sched;

	if (!g->procs) {
		g->on = s->voluntary_context_switches.ev = s->involuntary_context_switches.ev =
			s->cpu_migrations.ev = s->scheduler_delay_ns.ev = s->timeslices.ev =
				ev_u64__recorded(0);
	}
	g->procs++;
	g->threads = report__sat_add(g->threads, p->threads);
	ev_add(&g->on, p->on_cpu_ns.ev);
	ev_add(&s->voluntary_context_switches.ev, p->sched.voluntary_context_switches.ev);
	ev_add(&s->involuntary_context_switches.ev, p->sched.involuntary_context_switches.ev);
	ev_add(&s->cpu_migrations.ev, p->sched.cpu_migrations.ev);
	ev_add(&s->scheduler_delay_ns.ev, p->sched.scheduler_delay_ns.ev);
	ev_add(&s->timeslices.ev, p->sched.timeslices.ev);
}

static int group_by_name(const void *a, const void *b)
{
	const struct role_group *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* Busiest first (a gap counts as none), then by name. */
static int group_by_cpu(const void *a, const void *b)
{
	const struct role_group *x = a, *y = b;

	if (x->on.recorded != y->on.recorded)
		return x->on.recorded ? -1 : 1;
	if (x->on.value != y->on.value)
		return x->on.value > y->on.value ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * The set's processes by role, when a program among them writes its title
 * as "name: role ..." (PostgreSQL, nginx, sshd): each role its title's
 * first words (report__title_role), every other process under its comm.
 * The sums are gaps where one process's is.
 */
static void print_roles(const struct report_doc *d, bool all, FILE *f)
{
	struct role_group *g = calloc(d->nr_processes ? d->nr_processes : 1, sizeof(*g));
	size_t i, n = 0, shown;
	bool any = false;
	struct sched_cols c;
	int w = 16;

	if (!g)
		return;
	/* One entry per process, named; then sorted, and those of one name merged. */
	for (i = 0; i < d->nr_processes; i++) {
		const struct report_process *p = &d->processes[i];
		const char *title = p->title_end ? p->title_end : p->title_join;

		g[i].titled = title && report__title_role(title, g[i].name, sizeof(g[i].name));
		if (!g[i].titled)
			snprintf(g[i].name, sizeof(g[i].name), "%s", p->comm ? p->comm : "?");
		any = any || g[i].titled;
	}
	if (!any) {
		free(g);
		return;
	}
	for (i = 0; i < d->nr_processes; i++)
		g[i].procs = i; /* the process, until merged */
	qsort(g, d->nr_processes, sizeof(*g), group_by_name);
	for (i = 0; i < d->nr_processes; i++) {
		const struct report_process *p = &d->processes[g[i].procs];

		if (!n || strcmp(g[n - 1].name, g[i].name)) {
			memmove(&g[n], &g[i], sizeof(*g));
			g[n].procs = 0;
			g[n].threads = 0;
			n++;
		}
		group_add(&g[n - 1], p);
	}
	qsort(g, n, sizeof(*g), group_by_cpu);
	shown = all || n <= REPORT_TEXT_PROCESSES ? n : REPORT_TEXT_PROCESSES;
	for (i = 0; i < shown; i++)
		w = (int)strlen(g[i].name) > w ? (int)strlen(g[i].name) : w;
	w = w < NAME_COL_MAX ? w : NAME_COL_MAX;
	fprintf(f, "\nProcesses by role (%zu), busiest first: a title's first words, else comm\n",
		n);
	fprintf(f, "  %-*s %5s %7s %9s %9s %8s %8s %6s %7s\n", w, "ROLE", "PROCS", "THREADS",
		"ON-CPU", "RQ-DELAY", "VOL", "INVOL", "MIGR", "SLICES");
	for (i = 0; i < shown; i++) {
		sched_cols(&c, g[i].on, &g[i].sched);
		fputs("  ", f);
		put_name_col(f, g[i].name, w);
		fprintf(f, " %5zu %7" PRIu64 " %9s %9s %8s %8s %6s %7s\n", g[i].procs, g[i].threads,
			c.on, c.rq, c.vol, c.invol, c.mig, c.slices);
	}
	if (shown < n)
		fprintf(f, "  %zu more roles (khbpf report --all lists every one)\n", n - shown);
	free(g);
}

static void print_thread(const struct report_thread *th, FILE *f)
{
	struct sched_cols c;

	sched_cols(&c, th->on_cpu_ns.ev, &th->sched);
	fprintf(f, "  %10" PRIu64 " ", th->tid);
	put_name(f, "%-16s", th->comm);
	fprintf(f, " %9s %9s %8s %8s %6s %7s%s%s%s\n", c.on, c.rq, c.vol, c.invol, c.mig, c.slices,
		th->born ? "  born" : "", th->born && th->exited ? "," : "",
		th->exited ? (th->born ? " exited" : "  exited") : "");
}

/*
 * The threads: of one process, in document order; of several, under their
 * process, in the process table's order, for the processes it shows.
 */
static void print_threads(const struct report_doc *d, const size_t *order, size_t shown, FILE *f)
{
	char cut[NAME_COL_MAX + 1];
	struct sched_cols c;
	size_t i, j, hidden = 0;

	if (d->nr_processes > 1)
		fprintf(f, "\nThreads (%zu), by process\n", d->nr_listed);
	else
		fprintf(f, "\nThreads (%zu)\n", d->nr_listed);
	fprintf(f, "  %10s %-16s %9s %9s %8s %8s %6s %7s\n", "TID", "COMM", "ON-CPU", "RQ-DELAY",
		"VOL", "INVOL", "MIGR", "SLICES");
	if (d->nr_processes <= 1) {
		for (i = 0; i < d->nr_listed; i++)
			print_thread(&d->threads[i], f);
	} else {
		for (i = 0; i < d->nr_processes; i++) {
			const struct report_process *p = &d->processes[order[i]];

			if (i >= shown) {
				for (j = 0; j < d->nr_listed; j++)
					hidden += d->threads[j].pid == p->pid;
				continue;
			}
			fprintf(f, "  pid %" PRIu64, p->pid);
			put_name(f, " (%s)\n",
				 cut_name(cut, NAME_COL_MAX, report__process_name(p)));
			for (j = 0; j < d->nr_listed; j++)
				if (d->threads[j].pid == p->pid)
					print_thread(&d->threads[j], f);
		}
		if (hidden)
			fprintf(f, "  %zu more threads in %zu processes (khbpf report --all)\n",
				hidden, d->nr_processes - shown);
	}
	if (!d->hardware_recorded)
		return;
	sched_cols(&c, d->all_threads_cpu_ns, &d->totals);
	fprintf(f, "  %10s %-16s %9s %9s %8s %8s %6s %7s\n", "total", "", c.on, c.rq, c.vol,
		c.invol, c.mig, c.slices);
}

static void bound(char *buf, size_t len, uint64_t ns)
{
	if (ns == UINT64_MAX)
		snprintf(buf, len, "more");
	else
		report__fmt_ns(buf, len, ns);
}

static void print_rq(const struct report_doc *d, FILE *f)
{
	const struct report_rq *rq = &d->rq;
	uint64_t max = 0;
	char tot[24];
	size_t i;
	int j;

	if (!rq->recorded) {
		fprintf(f, "\nRunqueue delay histogram: %s — %s\n", ev_gap__name(rq->reason),
			report__gap_hint("scheduler_detail", rq->reason));
		return;
	}
	report__fmt_ns(tot, sizeof(tot), rq->wait_ns);
	fprintf(f, "\nRunqueue delay, each wait on its own (all threads): %" PRIu64 " waits, %s\n",
		rq->waits, tot);
	if (rq->unbinned_waits)
		fprintf(f, "  (%" PRIu64 " of them before the first look, known only as a sum)\n",
			rq->unbinned_waits);
	for (i = 0; i < rq->nr_buckets; i++)
		max = rq->buckets[i].count > max ? rq->buckets[i].count : max;
	if (!max) {
		fprintf(f, "  (no wait in a bucket)\n");
		return;
	}
	fprintf(f, "  %21s : %-10s distribution\n", "wait", "count");
	for (i = 0; i < rq->nr_buckets; i++) {
		const struct report_bucket *b = &rq->buckets[i];
		int bar = (int)((unsigned __int128)b->count * BAR_WIDTH / max);
		char lo[24], hi[24];

		bound(lo, sizeof(lo), b->lower);
		bound(hi, sizeof(hi), b->upper);
		fprintf(f, "  %9s -> %-8s : %-10" PRIu64 " |", lo, hi, b->count);
		for (j = 0; j < BAR_WIDTH; j++)
			fputc(j < bar ? '*' : ' ', f);
		fputs("|\n", f);
	}
}

static void print_migrations(const struct report_doc *d, FILE *f)
{
	const struct report_rq *rq = &d->rq;

	if (!rq->recorded || !rq->has_migrations)
		return;
	fprintf(f,
		"\nMigrations by distance: smt-sibling %" PRIu64 ", same-llc %" PRIu64
		", other-llc %" PRIu64 ", other-node %" PRIu64 ", unknown %" PRIu64,
		rq->mig[0], rq->mig[1], rq->mig[2], rq->mig[3], rq->mig[4]);
	if (rq->has_unseen)
		fprintf(f, ", unseen %" PRIu64, rq->mig_unseen);
	fputc('\n', f);
}

/* Upper bound of the bucket holding the q-th per mille call. */
static uint64_t quantile(const struct report_metric *m, unsigned int permille)
{
	uint64_t want = (uint64_t)(((unsigned __int128)m->calls * permille + 999) / 1000), seen = 0;
	size_t i;

	for (i = 0; i < m->nr_hist; i++) {
		seen += m->hist[i].count;
		if (seen >= want)
			return m->hist[i].upper;
	}
	return 0;
}

static void print_metric(const struct report_metric *m, uint64_t total, FILE *f)
{
	char inc[24], exc[24], mean[24], p50[24], p99[24], share[32] = "-";
	bool known = m->has_totals && m->calls;

	report__fmt_ns(inc, sizeof(inc), m->inclusive_ns);
	report__fmt_ns(exc, sizeof(exc), m->exclusive_ns);
	snprintf(mean, sizeof(mean), "-");
	snprintf(p50, sizeof(p50), "-");
	snprintf(p99, sizeof(p99), "-");
	if (m->calls)
		report__fmt_ns(mean, sizeof(mean), m->inclusive_ns / m->calls);
	if (known && m->nr_hist) {
		report__fmt_ns(p50, sizeof(p50), quantile(m, 500));
		report__fmt_ns(p99, sizeof(p99), quantile(m, 990));
	}
	if (total) {
		uint64_t pm = (uint64_t)((unsigned __int128)m->exclusive_ns * 1000 / total);

		snprintf(share, sizeof(share), "%" PRIu64 ".%" PRIu64 "%%", pm / 10, pm % 10);
	}
	put_name(f, "  %-26s", m->id);
	fprintf(f, " %8" PRIu64 "%s %10s %10s %6s %9s %9s %9s %5" PRIu64 "\n", m->calls,
		m->has_totals ? " " : "*", inc, exc, share, mean, p50, p99, m->unfinished);
}

/*
 * inclusive = on-CPU + runqueue + blocked (+ unattributed), for a metric with
 * the sums; without blocked time (not timed, or a call's clock lost) what is
 * known, on-CPU with its coverage where only some calls have it.
 */
static void print_metric_time(const struct report_metric *m, FILE *f)
{
	char inc[24], on[24], rq[24], bl[24], un[24];
	int64_t u = m->blocked.unattributed_ns;

	if (!m->has_ledger || !m->calls)
		return;
	put_name(f, "  %-26s", m->id);
	if (!m->blocked.present || !m->blocked.recorded || !m->on_cpu_ns.recorded) {
		report__fmt_ns(inc, sizeof(inc), m->inclusive_ns);
		report__fmt_ns(rq, sizeof(rq), m->run_delay_ns);
		fprintf(f, " %s: ", inc);
		if (!m->on_cpu_ns.recorded) {
			fprintf(f, "on-CPU %s", ev_gap__name(m->on_cpu_ns.reason));
		} else {
			report__fmt_ns(on, sizeof(on), m->on_cpu_ns.value);
			fprintf(f, "%s on-CPU", on);
			if (m->on_cpu_partial)
				fprintf(f,
					" over %" PRIu64 " of %" PRIu64
					" calls (the others missed a switch-in)",
					m->on_cpu_covered, m->on_cpu_calls);
		}
		fprintf(f, " + %s runqueue; blocked time %s\n", rq,
			!m->blocked.present ? "not in the document" :
			m->blocked.recorded ? "unavailable with on-CPU" :
			m->blocked.reason == EV_GAP_COLLECTOR_DISABLED ?
					      "not timed (--blocked times it)" :
					      ev_gap__name(m->blocked.reason));
		return;
	}
	report__fmt_ns(inc, sizeof(inc), m->inclusive_ns);
	report__fmt_ns(on, sizeof(on), m->on_cpu_ns.value);
	report__fmt_ns(rq, sizeof(rq), m->run_delay_ns);
	report__fmt_ns(bl, sizeof(bl), blocked_total(&m->blocked));
	fprintf(f, " %s = %s on-CPU + %s runqueue + %s blocked", inc, on, rq, bl);
	if (blocked_total(&m->blocked)) {
		fputs(" (", f);
		put_causes(&m->blocked, f);
		fputc(')', f);
	}
	if (u) {
		report__fmt_ns(un, sizeof(un), (uint64_t)(u < 0 ? -u : u));
		fprintf(f, " %c %s unattributed", u < 0 ? '-' : '+', un);
	}
	fputc('\n', f);
	if (m->declared_cause) {
		fprintf(f, "  %-26s ", "");
		put_name(f, "blocked stretches begun inside it count as %s (--span-cause): ",
			 m->declared_cause);
		fprintf(f, "%" PRIu64 "\n", m->declared_cause_stretches);
	}
	if (m->blocked.nr_wakers) {
		fprintf(f, "  %-26s woken by ", "");
		put_wakers(&m->blocked, 3, f);
		fputc('\n', f);
	}
}

/* A key's text as a column of width bytes, cut with "..." at its end. */
#define KEY_COL 32

/* One key's row: its calls and inclusive time each with its share of the metric's. */
static void print_key(const struct report_metric *m, const struct report_metric *k, FILE *f)
{
	char inc[24], exc[24], mean[24] = "-", p50[24] = "-", p99[24] = "-", cs[16], is[16];

	report__fmt_ns(inc, sizeof(inc), k->inclusive_ns);
	report__fmt_ns(exc, sizeof(exc), k->exclusive_ns);
	if (k->calls)
		report__fmt_ns(mean, sizeof(mean), k->inclusive_ns / k->calls);
	if (k->calls && k->nr_hist) {
		report__fmt_ns(p50, sizeof(p50), quantile(k, 500));
		report__fmt_ns(p99, sizeof(p99), quantile(k, 990));
	}
	report__share(cs, sizeof(cs), k->calls, m->calls);
	report__share(is, sizeof(is), k->inclusive_ns, m->inclusive_ns);
	fputs("  ", f);
	put_name_col(f, k->id, KEY_COL);
	fprintf(f, " %9" PRIu64 " %6s %10s %6s %10s %9s %9s %9s %5" PRIu64 "\n", k->calls, cs, inc,
		is, exc, mean, p50, p99, k->unfinished);
}

/*
 * A keyed metric's keys by inclusive time: the first REPORT_TEXT_KEYS, its
 * (other) in its place among them, or after them when it is further down:
 * it is always shown when it holds anything.
 */
#define REPORT_TEXT_KEYS 10
static int print_keys(const struct report_metric *m, FILE *f)
{
	size_t i, shown = m->nr_keys < REPORT_TEXT_KEYS ? m->nr_keys : REPORT_TEXT_KEYS;
	const struct report_metric **v, *other = report__other_key(m);
	bool other_after = false;

	if (!m->nr_keys)
		return 0;
	v = report__keys_by_inclusive(m);
	if (!v)
		return -ENOMEM;
	for (i = shown; other && i < m->nr_keys; i++)
		other_after |= v[i] == other;
	put_name(f, "\n  Keys of %s", m->id);
	fprintf(f, " (--key; %zu of %zu%s, by inclusive time)\n", shown + other_after, m->nr_keys,
		other ? ", (other) among them" : "");
	fprintf(f, "  %-*s %9s %6s %10s %6s %10s %9s %9s %9s %5s\n", KEY_COL, "KEY", "CALLS",
		"CALLS%", "INCLUSIVE", "INCL%", "EXCLUSIVE", "MEAN", "P50<=", "P99<=", "OPEN");
	for (i = 0; i < shown; i++)
		print_key(m, v[i], f);
	if (shown + other_after < m->nr_keys)
		fprintf(f, "  (%zu more keys not shown%s)\n", m->nr_keys - shown - other_after,
			other_after ? "; (other) below is in its place by time among them" : "");
	if (other_after)
		print_key(m, other, f);
	for (i = 0; i < shown; i++)
		print_metric_time(v[i], f);
	if (other_after)
		print_metric_time(other, f);
	free(v);
	return 0;
}

static int print_spans(const struct report_doc *d, FILE *f)
{
	const struct report_metric **v;
	bool partial = false;
	uint64_t total = 0;
	size_t i;

	if (!d->spans_recorded) {
		fprintf(f, "\nSpans: none recorded (events.availability %s) — %s\n",
			ev_gap__name(d->spans_reason),
			report__gap_hint("events.availability", d->spans_reason));
		return 0;
	}
	fprintf(f,
		"\nSpans: %zu records, %zu still open at the end, %" PRIu64 " dropped, %" PRIu64
		" sampled out; %zu of %zu probe sites attached\n",
		d->nr_spans - d->nr_open, d->nr_open, d->dropped_span_events, d->sampled_out_events,
		d->nr_probes_attached, d->nr_probes);
	for (i = 0; i < d->nr_failed_probes; i++) {
		const struct report_probe *p = &d->failed_probes[i];

		put_name(f, "  not attached: %s", p->object);
		put_name(f, ":%s", p->symbol);
		put_name(f, " (%s)", p->metric_id);
		put_name(f, ": %s\n", p->reason ? p->reason : "no reason given");
	}
	if (d->nr_overlapping)
		fprintf(f,
			"  %zu spans cross a span they do not nest in (a damaged document): left out of the timeline and trace\n",
			d->nr_overlapping);
	if (!d->nr_metrics)
		return 0;
	v = report__metrics_by_exclusive(d, &total);
	if (!v)
		return -ENOMEM;
	for (i = 0; i < d->nr_metrics; i++)
		partial |= !v[i]->has_totals;
	fprintf(f, "  %-26s %9s %10s %10s %6s %9s %9s %9s %5s\n", "METRIC (by exclusive time)",
		"CALLS", "INCLUSIVE", "EXCLUSIVE", "EXCL%", "MEAN", "P50<=", "P99<=", "OPEN");
	for (i = 0; i < d->nr_metrics; i++)
		print_metric(v[i], total, f);
	if (partial)
		fprintf(f,
			"  * not in span_metrics: from the span records kept, not exact totals\n");
	/* With blocked time timed, or a metric whose on-CPU sum covers some calls. */
	for (i = 0; i < d->nr_metrics && !v[i]->blocked.present && !v[i]->on_cpu_partial; i++)
		;
	if (i < d->nr_metrics) {
		fprintf(f, "  %-26s %s\n", "METRIC (where the time went)",
			"INCLUSIVE = ON-CPU + RUNQUEUE + BLOCKED (by cause)");
		for (i = 0; i < d->nr_metrics; i++)
			print_metric_time(v[i], f);
	}
	for (i = 0; i < d->nr_metrics; i++)
		if (print_keys(v[i], f))
			break;
	free(v);
	return i < d->nr_metrics ? -ENOMEM : 0;
}

static void print_usdt(const struct report_doc *d, FILE *f)
{
	uint64_t total = 0;
	size_t i;

	if (!d->nr_usdt)
		return;
	for (i = 0; i < d->nr_usdt; i++)
		total = report__sat_add(total, d->usdt[i].hits);
	fprintf(f, "\nUSDT probes counted (--usdt): %zu, %" PRIu64 " hits in all\n", d->nr_usdt,
		total);
	fprintf(f, "  %-36s %12s %9s %8s  %s\n", "PROBE", "HITS", "PROCESSES", "THREADS",
		"MOST HITS IN");
	for (i = 0; i < d->nr_usdt; i++) {
		const struct report_usdt *u = &d->usdt[i];

		put_name(f, "  %-36s", u->probe);
		fprintf(f, " %12" PRIu64 " %9zu %8zu", u->hits, u->nr_processes, u->nr_threads);
		if (u->top_pid_hits)
			fprintf(f, "  pid %" PRIu64 " (%" PRIu64 ")", u->top_pid, u->top_pid_hits);
		fputc('\n', f);
	}
}

static void print_loss(const struct report_doc *d, FILE *f)
{
	size_t i;

	if (!d->nr_losses && !d->nr_losses_unknown) {
		fprintf(f, "\nLoss: none (every loss counter is zero)\n");
		return;
	}
	fprintf(f, "\nLoss:");
	if (!d->nr_losses)
		fprintf(f, " none counted");
	for (i = 0; i < d->nr_losses; i++)
		fprintf(f, "%s %s %" PRIu64, i ? "," : "", d->losses[i].name, d->losses[i].value);
	if (d->nr_losses_unknown)
		fprintf(f, "; %zu loss counter%s unknown (gaps)", d->nr_losses_unknown,
			d->nr_losses_unknown == 1 ? "" : "s");
	fputc('\n', f);
}

/* Length of the path's parent ("a.b" of "a.b.c"), 0 when it has none. */
static size_t parent_len(const char *path)
{
	const char *dot = strrchr(path, '.');

	return dot ? (size_t)(dot - path) : 0;
}

static void print_gap(const struct report_doc *d, size_t i, size_t j, size_t plen, FILE *f)
{
	const struct report_gap *g = &d->gaps[i];
	size_t k;

	if (j - i == 1) {
		put_name(f, "  %s", g->path);
		if (g->count > 1)
			fprintf(f, " (%" PRIu64 ")", g->count);
	} else {
		fprintf(f, "  %.*s.{", (int)plen, g->path);
		for (k = i; k < j; k++) {
			put_name(f, k > i ? ", %s" : "%s", d->gaps[k].path + plen + 1);
			if (d->gaps[k].count > 1)
				fprintf(f, " (%" PRIu64 ")", d->gaps[k].count);
		}
		fputc('}', f);
	}
	fprintf(f, ": %s — %s\n", ev_gap__name(g->reason), g->hint);
}

/*
 * Gaps a user can fix first, siblings with one reason and one fix on one
 * line; then those with nothing to fix and those this host cannot give,
 * a line per reason (every one with all).
 */
static void print_gaps(const struct report_doc *d, bool all, FILE *f)
{
	size_t i, j, nr_cols = 0, plen;
	int pass, r;

	for (i = 0; i < d->nr_collectors; i++)
		nr_cols += strcmp(d->collectors[i].availability, "available") != 0;
	/*
	 * Counted by field group (one path, [*] for any record's index, and
	 * one reason): a gap in each of 37112 spans is one thing to know.
	 */
	fprintf(f,
		"\nGaps: %zu field groups (%" PRIu64
		" values over all records); collectors not available: %zu\n",
		d->nr_gaps, d->gap_fields, nr_cols);
	for (i = 0; i < d->nr_collectors; i++) {
		const struct report_collector *c = &d->collectors[i];

		if (!strcmp(c->availability, "available"))
			continue;
		put_name(f, "  %s", c->id);
		put_name(f, ": %s — ", c->availability);
		put_name(f, "%s\n",
			 c->detail ? c->detail : report__availability_hint(c->availability));
	}
	/* Pass 0: the gaps a user can fix; pass 1: the others, a line per reason. */
	for (pass = 0; pass < 2; pass++) {
		for (r = 0; r < EV_GAP__COUNT; r++) {
			uint64_t fields = 0;
			size_t groups = 0;

			for (i = 0; i < d->nr_gaps; i = j) {
				const struct report_gap *g = &d->gaps[i];

				plen = parent_len(g->path);
				/* Siblings with one reason and one fix share a line. */
				for (j = i + 1; j < d->nr_gaps && plen; j++) {
					const struct report_gap *h = &d->gaps[j];

					if (h->reason != g->reason || h->hint != g->hint ||
					    parent_len(h->path) != plen ||
					    strncmp(h->path, g->path, plen))
						break;
				}
				if ((int)g->reason != r ||
				    (report__gap_kind(g) == REPORT_GAP_FIXABLE) != !pass)
					continue;
				if (!pass || all) {
					print_gap(d, i, j, plen, f);
					continue;
				}
				for (; i < j; i++) {
					fields += d->gaps[i].count;
					groups++;
				}
			}
			if (groups)
				fprintf(f,
					"  %s: %zu field groups (%" PRIu64
					" values), %s (khbpf report --all lists them)\n",
					ev_gap__name((enum ev_gap)r), groups, fields,
					r == EV_GAP_UNSUPPORTED ?
						"which this host, kernel or CPU cannot give or need no fix" :
						"with nothing to fix");
		}
	}
}

/* A metric, or a metric's key ("query \"SELECT ...\"", "query (other)"), cut to max bytes. */
#define ANSWER_NAME_MAX 72
static void slow_name(const struct report_slow *s, char *buf, size_t len)
{
	char cut[ANSWER_NAME_MAX + 1];

	if (!s->key)
		snprintf(buf, len, "%s", s->metric->id);
	else if (s->key->other)
		snprintf(buf, len, "%s (other)", s->metric->id);
	else
		snprintf(buf, len, "%s \"%s\"", s->metric->id, s->key->id);
	if (strlen(buf) > ANSWER_NAME_MAX)
		snprintf(buf, len, "%s", cut_name(cut, ANSWER_NAME_MAX, buf));
}

/* A keyed metric whose keys overflowed: how much of it went to (other). */
static void print_overflow(const struct report_doc *d, FILE *f)
{
	char on[24], all[24], cs[16], is[16];
	size_t i;

	for (i = 0; i < d->nr_metrics; i++) {
		const struct report_metric *m = &d->metrics[i], *o = report__other_key(m);

		if (!o)
			continue;
		report__fmt_ns(on, sizeof(on), o->inclusive_ns);
		report__fmt_ns(all, sizeof(all), m->inclusive_ns);
		report__share(cs, sizeof(cs), o->calls, m->calls);
		report__share(is, sizeof(is), o->inclusive_ns, m->inclusive_ns);
		put_name(f, "  overflow: the keys of %s", m->id);
		fprintf(f,
			" overflowed: (other) holds %" PRIu64 " of %" PRIu64
			" calls (%s) and %s of %s (%s)\n",
			o->calls, m->calls, cs, on, all, is);
	}
}

/* The busiest processes, each named by its title (else comm), or of one process its threads. */
static int print_busiest(const struct report_doc *d, FILE *f)
{
	bool procs = d->nr_processes > 1;
	size_t n = procs ? d->nr_processes : d->nr_listed, i;
	size_t *o = procs ? report__processes_by_cpu(d) : report__threads_by_cpu(d);
	struct sched_cols c;
	char cut[ANSWER_NAME_MAX + 1];

	if (!o)
		return -ENOMEM;
	if (n)
		fprintf(f, "  busiest:  %zu of %zu %s by on-CPU%s\n",
			n < REPORT_ANSWER_BUSIEST ? n : REPORT_ANSWER_BUSIEST, n,
			procs ? "processes" : "threads",
			procs ? ", named by title (else comm)" : "");
	for (i = 0; i < n && i < REPORT_ANSWER_BUSIEST; i++) {
		if (procs) {
			const struct report_process *p = &d->processes[o[i]];

			sched_cols(&c, p->on_cpu_ns.ev, &p->sched);
			fprintf(f, "    %9s on-CPU %9s runqueue  ", c.on, c.rq);
			put_name(f, "%s", cut_name(cut, ANSWER_NAME_MAX, report__process_name(p)));
			fprintf(f, " (pid %" PRIu64 ")\n", p->pid);
		} else {
			const struct report_thread *t = &d->threads[o[i]];

			sched_cols(&c, t->on_cpu_ns.ev, &t->sched);
			fprintf(f, "    %9s on-CPU %9s runqueue  ", c.on, c.rq);
			put_name(f, "%s", t->comm ? t->comm : "?");
			fprintf(f, " (tid %" PRIu64 ")\n", t->tid);
		}
	}
	free(o);
	return 0;
}

/* The slowest metrics, or keys of a keyed metric, by inclusive time, and where it went. */
static void print_slowest(const struct report_doc *d, FILE *f)
{
	struct report_slow s[REPORT_ANSWER_SLOWEST];
	size_t n = report__slowest(d, s, REPORT_ANSWER_SLOWEST), i, keyed = 0;
	char name[ANSWER_NAME_MAX * 2 + 8], inc[24], mean[24], where[512], wakers[128];

	if (!n)
		return;
	for (i = 0; i < d->nr_metrics; i++)
		keyed += d->metrics[i].nr_keys != 0;
	fprintf(f, "  slowest:  %zu span %s by inclusive time\n", n,
		keyed ? "metrics and keys (of keyed metrics)" : "metrics");
	for (i = 0; i < n; i++) {
		const struct report_metric *m = s[i].key ? s[i].key : s[i].metric;

		slow_name(&s[i], name, sizeof(name));
		report__fmt_ns(inc, sizeof(inc), m->inclusive_ns);
		report__fmt_ns(mean, sizeof(mean), m->inclusive_ns / m->calls);
		fprintf(f, "    %9s  ", inc);
		put_name(f, "%s", name);
		fprintf(f, ": %" PRIu64 " call%s, mean %s\n", m->calls, m->calls == 1 ? "" : "s",
			mean);
		report__where_phrase(m, where, sizeof(where));
		if (!where[0])
			continue;
		fprintf(f, "    %9s  = %s", "", where);
		report__top_waker(&m->blocked, wakers, sizeof(wakers));
		if (wakers[0])
			put_name(f, "; top waker %s", wakers);
		fputc('\n', f);
	}
}

/*
 * The answer, first: what overflowed, the busiest processes (or threads)
 * and the slowest metrics or keys with where their time went. The detail
 * sections follow.
 */
static int print_answer(const struct report_doc *d, FILE *f)
{
	print_overflow(d, f);
	if (print_busiest(d, f))
		return -ENOMEM;
	print_slowest(d, f);
	return 0;
}

/*
 * Rendered in memory first: the document's strings (versions, ids, paths,
 * reasons) are printed as they are, and the whole report is then made
 * valid UTF-8 with every control byte but '\n' shown as '?', so a
 * document cannot drive the terminal.
 */
int report__text(const struct report_doc *d, FILE *f)
{
	return report__text_all(d, f, false);
}

int report__text_all(const struct report_doc *d, FILE *f, bool all)
{
	char *buf = NULL, *clean, *p;
	size_t len = 0, shown;
	size_t *order;
	FILE *m;
	int err;

	order = report__processes_by_cpu(d);
	if (!order)
		return -ENOMEM;
	shown = all || d->nr_processes <= REPORT_TEXT_PROCESSES ? d->nr_processes :
								  REPORT_TEXT_PROCESSES;
	m = open_memstream(&buf, &len);
	if (!m) {
		free(order);
		return -ENOMEM;
	}
	print_run(d, m);
	err = print_answer(d, m);
	if (d->nr_processes > 1) {
		print_processes(d, order, shown, m);
		print_roles(d, all, m);
	}
	print_threads(d, order, shown, m);
	free(order);
	print_blocked(d, m);
	print_rq(d, m);
	print_migrations(d, m);
	if (print_spans(d, m))
		err = -ENOMEM;
	print_usdt(d, m);
	print_loss(d, m);
	print_gaps(d, all, m);
	if (fclose(m) && !err)
		err = -ENOMEM;
	clean = err ? NULL : evjson__utf8_sanitize(buf, len);
	free(buf);
	if (!clean)
		return -ENOMEM;
	for (p = clean; *p; p++)
		if (((unsigned char)*p < 0x20 && *p != '\n') || *p == 0x7f)
			*p = '?';
	fputs(clean, f);
	free(clean);
	return ferror(f) ? -EIO : 0;
}

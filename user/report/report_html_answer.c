// SPDX-License-Identifier: MIT
/*
 * The HTML page's first section: the answer the terminal report gives first
 * (report_text.c), the same figures ranked the same way (report_answer.c).
 * The totals, the keys that overflowed, the busiest processes by title (of
 * one process, its threads) with bars of their time, and the slowest
 * metrics or keys with where their time went.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_html_page.h"
#include "report/report_html_sets.h"

#define esc report_html__esc

#define A_PAGE_W 1200
#define A_LABEL_W 330
#define A_BARS_X (A_LABEL_W + 10)
#define A_BARS_W 640
#define A_BAR_H 16
#define A_BAR_GAP 6
/* The label's room in characters (11 px text); a longer name is cut, its tooltip whole. */
#define A_LABEL_CHARS 52

static void totals(struct page *pg)
{
	const struct report_doc *d = pg->doc;
	char a[64], b[64], causes[256];
	size_t i, forked = 0, exited = 0;

	if (d->set_kind) {
		for (i = 0; i < d->nr_processes; i++) {
			forked += d->processes[i].joined && !strcmp(d->processes[i].joined, "fork");
			exited += d->processes[i].exited;
		}
		esc(pg, "<p>Set: %s", d->set_kind);
		fprintf(pg->f, ", %zu process%s (%zu forked in the window), %zu exited</p>\n",
			d->nr_processes, d->nr_processes == 1 ? "" : "es", forked, exited);
	}
	if (!d->hardware_recorded) {
		fprintf(pg->f, "<p>Totals: hardware evidence: gap (%s)</p>\n",
			ev_gap__name(d->hardware_reason));
		return;
	}
	report_html__ev_str(a, sizeof(a), d->all_threads_cpu_ns, true);
	report_html__ev_str(b, sizeof(b), d->totals.scheduler_delay_ns.ev, true);
	fprintf(pg->f, "<p id=\"totals\">Totals over %zu threads: on-CPU %s, waiting for a CPU %s",
		d->nr_listed, a, b);
	if (d->blocked.present && d->blocked.recorded) {
		report_html__dur(a, sizeof(a), report__blocked_total(&d->blocked));
		report__causes_phrase(&d->blocked, causes, sizeof(causes));
		fprintf(pg->f, ", blocked %s", a);
		esc(pg, "%s", causes[0] ? " (" : "");
		esc(pg, "%s", causes);
		esc(pg, "%s", causes[0] ? ")" : "");
	} else if (d->blocked.present) {
		fprintf(pg->f, ", blocked time %s",
			d->blocked.reason == EV_GAP_COLLECTOR_DISABLED ?
				"not timed (--blocked times it)" :
				ev_gap__name(d->blocked.reason));
	}
	if (d->parallelism_milli.recorded)
		fprintf(pg->f, "; %" PRIu64 ".%03" PRIu64 " of %u CPUs busy on average",
			d->parallelism_milli.value / 1000, d->parallelism_milli.value % 1000,
			d->logical_cpus);
	fprintf(pg->f, "</p>\n");
}

static void overflow(struct page *pg)
{
	const struct report_doc *d = pg->doc;
	char on[32], all[32], cs[16], is[16];
	size_t i;

	for (i = 0; i < d->nr_metrics; i++) {
		const struct report_metric *m = &d->metrics[i], *o = report__other_key(m);

		if (!o)
			continue;
		report_html__dur(on, sizeof(on), o->inclusive_ns);
		report_html__dur(all, sizeof(all), m->inclusive_ns);
		report__share(cs, sizeof(cs), o->calls, m->calls);
		report__share(is, sizeof(is), o->inclusive_ns, m->inclusive_ns);
		esc(pg, "<p class=\"overflow\">The keys of %s overflowed", m->id);
		fprintf(pg->f,
			": (other) holds %" PRIu64 " of %" PRIu64
			" calls (%s) and %s of %s (%s).</p>\n",
			o->calls, m->calls, cs, on, all, is);
	}
}

/* One bar: on-CPU then runqueue of a scale of end ns; the rest of the bar the window's. */
static void bar(struct page *pg, int y, struct ev_u64 on, struct ev_u64 rq, uint64_t end)
{
	char a[32], b[32];
	uint64_t won, wrq;

	report_html__ev_str(a, sizeof(a), on, true);
	report_html__ev_str(b, sizeof(b), rq, true);
	fprintf(pg->f,
		"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"" HTML_OFF_CPU "\"/>\n",
		A_BARS_X, y, A_BARS_W, A_BAR_H);
	if (!on.recorded || !rq.recorded || !end) {
		fprintf(pg->f, "<text x=\"%d\" y=\"%d\">on-CPU %s, runqueue %s</text>\n",
			A_BARS_X + 6, y + A_BAR_H - 4, a, b);
		return;
	}
	/* Whole pixels: a bar is a picture, the numbers beside it are exact. */
	won = (uint64_t)((unsigned __int128)(on.value < end ? on.value : end) * A_BARS_W / end);
	wrq = (uint64_t)((unsigned __int128)(rq.value < end ? rq.value : end) * A_BARS_W / end);
	if (won + wrq > A_BARS_W)
		wrq = A_BARS_W - won;
	fprintf(pg->f,
		"<rect x=\"%d\" y=\"%d\" width=\"%" PRIu64 "\" height=\"%d\" fill=\"" HTML_ON_CPU
		"\"><title>on a CPU %s</title></rect>\n"
		"<rect x=\"%" PRIu64 "\" y=\"%d\" width=\"%" PRIu64
		"\" height=\"%d\" fill=\"" HTML_RUNQUEUE
		"\"><title>waiting for a CPU %s</title></rect>\n",
		A_BARS_X, y, won, A_BAR_H, a, (uint64_t)A_BARS_X + won, y, wrq, A_BAR_H, b);
	fprintf(pg->f, "<text x=\"%d\" y=\"%d\">%s on-CPU · %s runqueue</text>\n",
		A_BARS_X + A_BARS_W + 8, y + A_BAR_H - 4, a, b);
}

/* A label cut to A_LABEL_CHARS, with the whole name as its tooltip. */
static void label(struct page *pg, int y, const char *name, const char *kind, uint64_t id)
{
	char cut[A_LABEL_CHARS * 4 + 8];
	size_t n = strlen(name);

	fprintf(pg->f, "<text x=\"4\" y=\"%d\">", y + A_BAR_H - 4);
	esc(pg, "<title>%s", name);
	fprintf(pg->f, " (%s %" PRIu64 ")</title>", kind, id);
	if (n > A_LABEL_CHARS) {
		/* Cut on a UTF-8 character's first byte. */
		for (n = A_LABEL_CHARS - 3; n && ((unsigned char)name[n] & 0xc0) == 0x80; n--)
			;
		snprintf(cut, sizeof(cut), "%.*s...", (int)n, name);
		name = cut;
	}
	esc(pg, "%s", name);
	fprintf(pg->f, " <tspan class=\"axis\">%" PRIu64 "</tspan></text>\n", id);
}

static int busiest(struct page *pg)
{
	const struct report_doc *d = pg->doc;
	bool procs = d->nr_processes > 1;
	size_t n = procs ? d->nr_processes : d->nr_listed, i, shown;
	size_t *o = procs ? report__processes_by_cpu(d) : report__threads_by_cpu(d);
	uint64_t end = d->wall_ns;
	char wall[32];

	if (!o)
		return -ENOMEM;
	shown = n < REPORT_ANSWER_BUSIEST ? n : REPORT_ANSWER_BUSIEST;
	/* A process of several threads can be on CPUs longer than the window. */
	for (i = 0; procs && i < shown; i++) {
		const struct report_process *p = &d->processes[o[i]];
		uint64_t t = report__sat_add(p->on_cpu_ns.ev.recorded ? p->on_cpu_ns.ev.value : 0,
					     p->sched.scheduler_delay_ns.ev.recorded ?
						     p->sched.scheduler_delay_ns.ev.value :
						     0);

		end = t > end ? t : end;
	}
	report_html__dur(wall, sizeof(wall), end);
	fprintf(pg->f,
		"<h3>Busiest %s by on-CPU (%zu of %zu)%s</h3>\n"
		"<p class=\"note\">Each bar is %s (%s): "
		"<span class=\"sw\" style=\"background:" HTML_ON_CPU "\"></span>on a CPU, "
		"<span class=\"sw\" style=\"background:" HTML_RUNQUEUE
		"\"></span>waiting for a CPU.</p>\n",
		procs ? "processes" : "threads", shown, n,
		procs ? ", named by title (else comm)" : "",
		end > d->wall_ns ? "the longest on-CPU plus runqueue of those shown" : "the window",
		wall);
	fprintf(pg->f,
		"<svg id=\"busiest-bars\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		A_PAGE_W, (int)shown * (A_BAR_H + A_BAR_GAP) + 4, A_PAGE_W,
		(int)shown * (A_BAR_H + A_BAR_GAP) + 4);
	for (i = 0; i < shown; i++) {
		int y = (int)i * (A_BAR_H + A_BAR_GAP) + 2;

		if (procs) {
			const struct report_process *p = &d->processes[o[i]];

			label(pg, y, report__process_name(p), "pid", p->pid);
			bar(pg, y, p->on_cpu_ns.ev, p->sched.scheduler_delay_ns.ev, end);
		} else {
			const struct report_thread *t = &d->threads[o[i]];

			label(pg, y, t->comm && t->comm[0] ? t->comm : "?", "tid", t->tid);
			bar(pg, y, t->on_cpu_ns.ev, t->sched.scheduler_delay_ns.ev, end);
		}
	}
	fprintf(pg->f, "</svg>\n");
	free(o);
	return 0;
}

static void slowest(struct page *pg)
{
	const struct report_doc *d = pg->doc;
	struct report_slow s[REPORT_ANSWER_SLOWEST];
	size_t n = report__slowest(d, s, REPORT_ANSWER_SLOWEST), i;
	char inc[32], mean[32], where[512], wakers[128];

	if (!n)
		return;
	fprintf(pg->f,
		"<h3>Slowest span metrics and keys by inclusive time</h3>\n<table id=\"slowest\">\n"
		"<tr><th class=\"l\">metric</th><th class=\"l\">key</th><th>inclusive</th>"
		"<th>calls</th><th>mean</th><th class=\"l\">where the time went</th>"
		"<th class=\"l\">top waker</th></tr>\n");
	for (i = 0; i < n; i++) {
		const struct report_metric *m = s[i].key ? s[i].key : s[i].metric;

		report_html__dur(inc, sizeof(inc), m->inclusive_ns);
		report_html__dur(mean, sizeof(mean), m->inclusive_ns / m->calls);
		report__where_phrase(m, where, sizeof(where));
		report__top_waker(&m->blocked, wakers, sizeof(wakers));
		esc(pg, "<tr title=\"%s", s[i].metric->id);
		if (s[i].key)
			esc(pg, ": %s", s[i].key->id);
		esc(pg, "\"><td class=\"l\">%s</td>", s[i].metric->id);
		esc(pg, "<td class=\"w\">%s</td>", s[i].key ? s[i].key->id : "-");
		fprintf(pg->f, "<td>%s</td><td>%" PRIu64 "</td><td>%s</td>", inc, m->calls, mean);
		esc(pg, "<td class=\"w\">%s</td>", where[0] ? where : "-");
		esc(pg, "<td class=\"w\">%s</td></tr>\n", wakers[0] ? wakers : "-");
	}
	fprintf(pg->f, "</table>\n");
}

void report_html__answer(struct page *pg)
{
	fprintf(pg->f, "<section id=\"answer\">\n<h2>The answer: where the time went</h2>\n");
	totals(pg);
	overflow(pg);
	if (busiest(pg))
		pg->err = -ENOMEM;
	slowest(pg);
	fprintf(pg->f, "</section>\n");
}

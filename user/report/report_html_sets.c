// SPDX-License-Identifier: MIT
/*
 * The HTML page's tables of the workload: its processes as a tree, their
 * threads, each thread's blocked time and wakers, and the gaps, those a
 * user can fix first and the rest folded a line per reason.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_html_page.h"
#include "report/report_html_sets.h"

#define esc report_html__esc
#define ev_str report_html__ev_str

/* How deep the tree is drawn; deeper processes are shown at this depth. */
#define TREE_DEPTH_MAX 32

/* The process p's parent in the document, or -1 (a root of the tree). */
static ssize_t parent_of(const struct report_doc *d, size_t p)
{
	const struct report_process *c = &d->processes[p];
	size_t i;

	if (!c->ppid.recorded)
		return -1;
	/* The latest process of that pid started before it: its parent (pids are reused). */
	for (i = d->nr_processes; i-- > 0;)
		if (i != p && d->processes[i].pid == c->ppid.value &&
		    d->processes[i].start_unix_ns <= c->start_unix_ns)
			return (ssize_t)i;
	return -1;
}

static void process_row(struct page *pg, const struct report_process *p, unsigned int depth)
{
	char on[32], ex[48] = "";

	ev_str(on, sizeof(on), p->on_cpu_ns.ev, true);
	if (p->exit_recorded)
		snprintf(ex, sizeof(ex), "%s %" PRIu64,
			 p->exit_signaled ? "killed by signal" : "exited", p->exit_value);
	else if (p->exited)
		snprintf(ex, sizeof(ex), "exited");
	fprintf(pg->f, "<tr><td class=\"l\" style=\"padding-left:%upx\">%" PRIu64 "</td>",
		8 + 16 * depth, p->pid);
	esc(pg, "<td class=\"l\">%s</td>", p->comm);
	/* The title at the end, and the one at its join when it differs; else whichever was read. */
	if (p->title_end && p->title_join && strcmp(p->title_end, p->title_join)) {
		esc(pg, "<td class=\"w\">%s", p->title_end);
		esc(pg, " (at its join: %s)</td>", p->title_join);
	} else {
		esc(pg, "<td class=\"w\">%s</td>",
		    p->title_end  ? p->title_end :
		    p->title_join ? p->title_join :
				    "-");
	}
	fprintf(pg->f, "<td>%" PRIu64 "</td><td>%s</td>", p->threads, on);
	esc(pg, "<td class=\"l\">%s</td>", p->joined);
	fprintf(pg->f, "<td class=\"l\">%s%s%s</td>", ex,
		p->left_cgroup ? " (left the cgroups)" : "", p->born ? "" : " (before the window)");
	esc(pg, "<td class=\"l\">%s</td></tr>\n", p->exe ? p->exe : "-");
}

/*
 * Each process under the one that forked it (depth first, children in
 * document order); a process whose parent is not in the set is a root.
 */
void report_html__processes(struct page *pg)
{
	const struct report_doc *d = pg->doc;
	ssize_t *parent;
	size_t *stack, sp = 0, i, j;
	unsigned int *depth;

	if (d->nr_processes < 2)
		return;
	parent = calloc(d->nr_processes, sizeof(*parent));
	stack = calloc(d->nr_processes, sizeof(*stack));
	depth = calloc(d->nr_processes, sizeof(*depth));
	if (!parent || !stack || !depth) {
		pg->err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < d->nr_processes; i++)
		parent[i] = parent_of(d, i);
	esc(pg, "<section id=\"processes\">\n<h2>Processes (%s)</h2>\n",
	    d->set_kind ? d->set_kind : "set");
	fprintf(pg->f,
		"<table>\n<tr><th class=\"l\">pid</th><th class=\"l\">comm</th>"
		"<th class=\"l\">title</th><th>threads</th><th>on-CPU</th><th class=\"l\">joined</th>"
		"<th class=\"l\">end</th><th class=\"l\">executable</th></tr>\n");
	/* Roots in reverse, so that the stack gives them in document order. */
	for (i = d->nr_processes; i-- > 0;)
		if (parent[i] < 0)
			stack[sp++] = i;
	while (sp) {
		size_t p = stack[--sp];

		process_row(pg, &d->processes[p], depth[p]);
		for (j = d->nr_processes; j-- > 0;) {
			if (parent[j] != (ssize_t)p)
				continue;
			depth[j] = depth[p] < TREE_DEPTH_MAX ? depth[p] + 1 : depth[p];
			stack[sp++] = j;
		}
	}
	fprintf(pg->f, "</table>\n</section>\n");
out:
	free(parent);
	free(stack);
	free(depth);
}

void report_html__threads(struct page *pg)
{
	const struct report_doc *d = pg->doc;
	size_t i;

	fprintf(pg->f,
		"<section id=\"threads\">\n<h2>Threads</h2>\n<table>\n<tr><th>tid</th><th>pid</th>"
		"<th class=\"l\">comm</th><th>on-CPU</th><th>runqueue delay</th><th>voluntary</th>"
		"<th>involuntary</th><th>migrations</th><th>timeslices</th><th class=\"l\"></th></tr>\n");
	for (i = 0; i < d->nr_listed; i++) {
		const struct report_thread *t = &d->threads[i];
		char a[32], b[32], c[32], e[32], g[32], h[32];

		ev_str(a, sizeof(a), t->on_cpu_ns.ev, true);
		ev_str(b, sizeof(b), t->sched.scheduler_delay_ns.ev, true);
		ev_str(c, sizeof(c), t->sched.voluntary_context_switches.ev, false);
		ev_str(e, sizeof(e), t->sched.involuntary_context_switches.ev, false);
		ev_str(g, sizeof(g), t->sched.cpu_migrations.ev, false);
		ev_str(h, sizeof(h), t->sched.timeslices.ev, false);
		fprintf(pg->f, "<tr><td>%" PRIu64 "</td><td>%" PRIu64 "</td>", t->tid,
			t->pid ? t->pid : d->pid);
		esc(pg, "<td class=\"l\">%s</td>", t->comm);
		fprintf(pg->f,
			"<td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
			"<td class=\"l\">%s%s%s</td></tr>\n",
			a, b, c, e, g, h, t->born ? "born" : "", t->born && t->exited ? ", " : "",
			t->exited ? "exited" : "");
	}
	fprintf(pg->f, "</table>\n</section>\n");
}

/* Each thread's blocked time by cause and who woke it, as the terminal report has them. */
void report_html__blocked(struct page *pg)
{
	const struct report_doc *d = pg->doc;
	char tot[32], causes[256], wakers[512];
	size_t i;

	if (!d->blocked.present)
		return;
	fprintf(pg->f, "<section id=\"blocked\">\n<h2>Blocked time (off-CPU, not runnable)</h2>\n");
	if (!d->blocked.recorded) {
		esc(pg, "<p>Gap: %s", ev_gap__name(d->blocked.reason));
		esc(pg, " — %s.</p>\n</section>\n",
		    report__gap_hint("scheduler_detail.value.blocked", d->blocked.reason));
		return;
	}
	report__fmt_ns(tot, sizeof(tot), report__blocked_total(&d->blocked));
	report__causes_phrase(&d->blocked, causes, sizeof(causes));
	fprintf(pg->f, "<p>All threads: %s", tot);
	esc(pg, "%s", causes[0] ? ": " : "");
	esc(pg, "%s.</p>\n", causes);
	fprintf(pg->f, "<table>\n<tr><th>tid</th><th>pid</th><th class=\"l\">comm</th>"
		       "<th>blocked</th><th class=\"l\">by cause</th><th class=\"l\">woken by</th>"
		       "</tr>\n");
	for (i = 0; i < d->nr_listed; i++) {
		const struct report_thread *t = &d->threads[i];
		uint64_t b = report__blocked_total(&t->blocked);

		if (!t->blocked.recorded || !b)
			continue;
		report__fmt_ns(tot, sizeof(tot), b);
		report__causes_phrase(&t->blocked, causes, sizeof(causes));
		report__wakers_phrase(&t->blocked, 3, wakers, sizeof(wakers));
		fprintf(pg->f, "<tr><td>%" PRIu64 "</td><td>%" PRIu64 "</td>", t->tid,
			t->pid ? t->pid : d->pid);
		esc(pg, "<td class=\"l\">%s</td>", t->comm);
		fprintf(pg->f, "<td>%s</td>", tot);
		esc(pg, "<td class=\"l\">%s</td>", causes);
		esc(pg, "<td class=\"w\">%s</td></tr>\n", wakers[0] ? wakers : "-");
	}
	fprintf(pg->f, "</table>\n</section>\n");
}

/*
 * Gaps: the collectors not available, then the gaps a user can fix, one
 * row each; the rest a row per reason, with nothing to fix or beyond this
 * host. (The terminal report's --all lists every one.)
 */
void report_html__gaps(struct page *pg)
{
	const struct report_doc *d = pg->doc;
	uint64_t fields[EV_GAP__COUNT] = { 0 };
	size_t groups[EV_GAP__COUNT] = { 0 }, i;
	int r;

	fprintf(pg->f,
		"<section id=\"gaps\">\n<h2>Gaps</h2>\n<p class=\"note\">What was not measured, "
		"why, and what to do about it: %zu field groups (%" PRIu64
		" values over all records).</p>\n"
		"<table>\n<tr><th class=\"l\">field or collector</th><th>values</th>"
		"<th class=\"l\">reason</th><th class=\"l\">what to do</th></tr>\n",
		d->nr_gaps, d->gap_fields);
	for (i = 0; i < d->nr_collectors; i++) {
		const struct report_collector *c = &d->collectors[i];

		if (!strcmp(c->availability, "available"))
			continue;
		esc(pg, "<tr><td class=\"l\">collector %s</td><td></td>", c->id);
		esc(pg, "<td class=\"l\">%s</td>", c->availability);
		esc(pg, "<td class=\"w\">%s</td></tr>\n",
		    c->detail ? c->detail : report__availability_hint(c->availability));
	}
	for (i = 0; i < d->nr_gaps; i++) {
		const struct report_gap *g = &d->gaps[i];

		if (report__gap_kind(g) != REPORT_GAP_FIXABLE) {
			fields[g->reason] += g->count;
			groups[g->reason]++;
			continue;
		}
		esc(pg, "<tr><td class=\"l\">%s</td>", g->path);
		fprintf(pg->f, "<td>%" PRIu64 "</td><td class=\"l\">%s</td>", g->count,
			ev_gap__name(g->reason));
		esc(pg, "<td class=\"w\">%s</td></tr>\n", g->hint);
	}
	for (r = 0; r < EV_GAP__COUNT; r++)
		if (groups[r])
			fprintf(pg->f,
				"<tr><td class=\"l\">%zu more field groups</td><td>%" PRIu64
				"</td><td class=\"l\">%s</td><td class=\"w\">%s "
				"(<code>khbpf report --all</code> lists each)</td></tr>\n",
				groups[r], fields[r], ev_gap__name((enum ev_gap)r),
				r == EV_GAP_UNSUPPORTED ?
					"this host, kernel or CPU cannot give them, or they need no fix" :
					"nothing to fix");
	fprintf(pg->f, "</table>\n</section>\n");
}

// SPDX-License-Identifier: MIT
/*
 * The HTML page of `khbpf report --html`: one file, inline SVG drawn here,
 * no script and no network (a Content-Security-Policy forbids both), so it
 * can be mailed, archived or opened off-line. Coordinates are computed in
 * hundredths of a pixel with integers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "document/evjson.h"
#include "report/report.h"
#include "report/report_html_page.h"
#include "report/report_html_sets.h"

#define PAGE_W 1200
#define LABEL_W 200
#define PLOT_X (LABEL_W + 10)
#define PLOT_W (PAGE_W - PLOT_X - 20)
#define AXIS_H 26
#define ROW_H 16
#define LANE_PAD 4
#define BAR_H 16
#define BAR_GAP 6
/* Room right of the bars for their numbers. */
#define BARS_W (PLOT_W - 170)
/* Beyond these, the tables below the pictures still list everything. */
#define MAX_LANES 256
#define MAX_BARS 256

#define LANE_BG "#eef2f7"
#define HIST_BG "#f6f3ec"
#define HIST_BAR "#1565c0"
#define ON_CPU HTML_ON_CPU
#define RUNQUEUE HTML_RUNQUEUE
#define OFF_CPU HTML_OFF_CPU

static const char *const palette[] = {
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
	"#b07aa1", "#ff9da7", "#9c755f", "#6b6ecf", "#bcbd22", "#17becf",
};

#define NR_COLORS (sizeof(palette) / sizeof(palette[0]))

/* Hundredths of a pixel as an SVG number. */
static void px(char *buf, size_t len, int64_t v)
{
	snprintf(buf, len, "%s%" PRId64 ".%02" PRId64, v < 0 ? "-" : "", (v < 0 ? -v : v) / 100,
		 (v < 0 ? -v : v) % 100);
}

/* x of time ns on a plot width w px, in hundredths of a pixel. */
static int64_t scale(uint64_t ns, uint64_t end, int w)
{
	if (!end)
		return 0;
	if (ns > end)
		ns = end;
	return (int64_t)((unsigned __int128)ns * (unsigned int)w * 100 / end);
}

static const char *metric_color(const struct report_metric *m)
{
	return palette[m->color % NR_COLORS];
}

static void style(struct page *pg)
{
	fprintf(pg->f,
		"<style>\n"
		"body{font:14px/1.4 'DejaVu Sans',Arial,sans-serif;margin:16px 24px;color:#1a1a1a;background:#fff}\n"
		"h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 6px}\n"
		"h3{font-size:14px;margin:12px 0 4px}\n"
		"p{margin:2px 0}.note{color:#555;font-size:12px}.overflow{color:#8a4b00}\n"
		"table{border-collapse:collapse;font-size:12px;margin-top:4px}\n"
		"th,td{border-bottom:1px solid #ddd;padding:2px 8px;text-align:right;white-space:nowrap}\n"
		"th{background:#f3f3f3}td.l,th.l{text-align:left}td.w{white-space:normal;text-align:left}\n"
		".sw{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}\n"
		"ul.legend{list-style:none;padding:0;margin:4px 0;font-size:12px}\n"
		"ul.legend li{display:inline-block;margin-right:14px}\n"
		"svg text{font:11px 'DejaVu Sans',Arial,sans-serif;fill:#1a1a1a}\n"
		"svg .axis{fill:#555}\n"
		"</style>\n");
}

static void header(struct page *pg)
{
	const struct report_doc *d = pg->doc;
	char wall[32], a[64], when[64] = "";
	time_t secs = (time_t)(d->start_unix_ns / 1000000000u);
	struct tm tm;

	report_html__dur(wall, sizeof(wall), d->wall_ns);
	if (gmtime_r(&secs, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	report_html__esc(pg, "<header>\n<h1>khbpf report: %s", d->comm);
	fprintf(pg->f, " (pid %" PRIu64 ")</h1>\n", d->pid);
	report_html__esc(pg, "<p>%s", d->mode ? d->mode : "?");
	fprintf(pg->f, ", window %s from %s, ended by ", wall, when);
	report_html__esc(pg, "%s; ", d->end_reason ? d->end_reason : "?");
	report__exit_phrase(d, a, sizeof(a));
	report_html__esc(pg, "target %s</p>\n", a);
	if (d->exe || d->khbpf_version) {
		fprintf(pg->f, "<p class=\"note\">");
		if (d->exe)
			report_html__esc(pg, "%s", d->exe);
		if (d->khbpf_version) {
			fprintf(pg->f, "%s", d->exe ? " · " : "");
			report_html__esc(pg, "khbpf %s", d->khbpf_version);
			report_html__esc(pg, ", kernel %s",
					 d->kernel_release ? d->kernel_release : "?");
		}
		fprintf(pg->f, "</p>\n");
	}
	fprintf(pg->f, "</header>\n");
}

/* A 1-2-5 step giving at most 10 ticks over end ns. */
static uint64_t tick_step(uint64_t end)
{
	uint64_t step = 1;

	for (;;) {
		if (end / step <= 10)
			return step;
		if (end / (step * 2) <= 10)
			return step * 2;
		if (end / (step * 5) <= 10)
			return step * 5;
		if (step > UINT64_MAX / 100)
			return UINT64_MAX;
		step *= 10;
	}
}

static void axis(struct page *pg, uint64_t end, int y0, int height)
{
	uint64_t step = tick_step(end), t;
	char x[24], lbl[32];

	for (t = 0; t <= end; t += step) {
		px(x, sizeof(x), PLOT_X * 100 + scale(t, end, PLOT_W));
		report_html__dur(lbl, sizeof(lbl), t);
		fprintf(pg->f,
			"<line x1=\"%s\" y1=\"%d\" x2=\"%s\" y2=\"%d\" stroke=\"#d0d0d0\"/>"
			"<text class=\"axis\" x=\"%s\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
			x, y0 - 4, x, y0 + height, x, y0 - 8, t ? lbl : "0");
		if (end - t < step)
			break;
	}
}

struct pending {
	bool used;
	size_t metric;
	int64_t x0, x1;
	size_t count;
	uint64_t start, end;
	const struct report_span *first;
};

/* "; woken by w-holder (1234) 58.1 ms x3, a timer 2.0 ms x1": a span's wakers (--wakers). */
static void put_span_wakers(struct page *pg, const struct report_ledger *l)
{
	char ns[32];
	size_t i;

	for (i = 0; i < l->nr_wakers; i++) {
		const struct waker_row *w = &l->wakers[i];

		fputs(i ? ", " : "; woken by ", pg->f);
		if (w->kind == WAKER_THREAD) {
			report_html__esc(pg, "%s", w->comm);
			fprintf(pg->f, " (%" PRIu32 ")", w->tid);
		} else {
			fputs(w->kind == WAKER_TIMER ? "a timer" : "an interrupt", pg->f);
		}
		report_html__dur(ns, sizeof(ns), w->ns);
		fprintf(pg->f, " %s x%" PRIu64, ns, w->count);
	}
}

/* A finished span whose ledger has its blocked time (--blocked): its parts can be drawn. */
static bool parts_known(const struct report_span *s)
{
	return !s->open && s->has_ledger && s->ledger.on_cpu_ns.recorded &&
	       s->ledger.blocked_recorded && s->inclusive_ns;
}

/*
 * Along the bottom of a span's mark, its time in the thread's shades: on a
 * CPU, waiting for one, blocked (the rest, unattributed, is not drawn), each
 * as its share of the span; the order of the parts in time is not known.
 */
static void parts(struct page *pg, const struct report_span *s, int64_t x0, int64_t width, int y)
{
	const char *colors[3] = { ON_CPU, RUNQUEUE, OFF_CPU };
	uint64_t ns[3] = { s->ledger.on_cpu_ns.value, s->ledger.run_delay_ns,
			   s->ledger.blocked_ns };
	int64_t x = x0, w;
	char xs[24], ws[24];
	int i;

	for (i = 0; i < 3; i++) {
		w = (int64_t)((unsigned __int128)(ns[i] > s->inclusive_ns ? s->inclusive_ns :
									    ns[i]) *
			      (uint64_t)width / s->inclusive_ns);
		if (w <= 0)
			continue;
		px(xs, sizeof(xs), PLOT_X * 100 + x);
		px(ws, sizeof(ws), w);
		fprintf(pg->f, "<rect x=\"%s\" y=\"%d\" width=\"%s\" height=\"3\" fill=\"%s\"/>\n",
			xs, y + ROW_H - 5, ws, colors[i]);
		x += w;
	}
}

static void flush(struct page *pg, struct pending *p, int y)
{
	const struct report_doc *d = pg->doc;
	const struct report_metric *m;
	char x[24], w[24], a[32], b[32], c[32];
	int64_t width;

	if (!p->used)
		return;
	p->used = false;
	m = &d->metrics[p->metric];
	width = p->x1 - p->x0 < 100 ? 100 : p->x1 - p->x0; /* at least a pixel */
	px(x, sizeof(x), PLOT_X * 100 + p->x0);
	px(w, sizeof(w), width);
	fprintf(pg->f, "<rect x=\"%s\" y=\"%d\" width=\"%s\" height=\"%d\" fill=\"%s\"%s>", x, y, w,
		ROW_H - 2, metric_color(m),
		p->first->open ? " fill-opacity=\"0.5\" stroke=\"#333\" stroke-dasharray=\"3 2\"" :
				 "");
	report_html__dur(a, sizeof(a), p->start);
	if (p->count == 1) {
		report_html__dur(b, sizeof(b), p->first->inclusive_ns);
		report_html__dur(c, sizeof(c), p->first->exclusive_ns);
		report_html__esc(pg, "<title>%s", m->id);
		if (p->first->open)
			fprintf(pg->f, ": from %s, still open when the window ended", a);
		else
			fprintf(pg->f, ": from %s, %s inclusive, %s exclusive", a, b, c);
		if (parts_known(p->first)) {
			const struct report_ledger *l = &p->first->ledger;

			report_html__dur(a, sizeof(a), l->on_cpu_ns.value);
			report_html__dur(b, sizeof(b), l->run_delay_ns);
			report_html__dur(c, sizeof(c), l->blocked_ns);
			fprintf(pg->f, "; %s on a CPU, %s waiting for one, %s blocked", a, b, c);
			put_span_wakers(pg, l);
		}
		fprintf(pg->f, " (span %" PRIu64 ")</title>", p->first->span_id);
	} else {
		report_html__dur(b, sizeof(b), p->end);
		report_html__esc(pg, "<title>%s", m->id);
		fprintf(pg->f, ": %zu spans from %s to %s, each narrower than a pixel</title>",
			p->count, a, b);
	}
	fprintf(pg->f, "</rect>\n");
	if (p->count == 1 && parts_known(p->first))
		parts(pg, p->first, p->x0, width, y);
	/* A label where it fits: about 7 px a character at 11 px. */
	if (width / 100 >= (int64_t)strlen(m->id) * 7 + 8) {
		px(x, sizeof(x), PLOT_X * 100 + p->x0 + 300);
		report_html__esc(pg, "<text x=\"%s\"", x);
		fprintf(pg->f, " y=\"%d\">", y + ROW_H - 5);
		report_html__esc(pg, "%s</text>\n", m->id);
	}
}

/*
 * One thread's lane: every span at its depth. Spans of one metric that fit in
 * one pixel together are one mark, so a lane holds at most a mark per pixel,
 * depth and metric however many spans there are.
 */
static void lane(struct page *pg, const struct report_thread *t, int y, struct pending *pend)
{
	const struct report_doc *d = pg->doc;
	size_t i, k;

	for (i = t->first_span; i < t->first_span + t->nr_spans; i++) {
		const struct report_span *s = &d->spans[i];
		struct pending *p = &pend[s->depth * d->nr_metrics + s->metric];
		int64_t x0 = scale(s->start_ns, d->end_ns, PLOT_W);
		int64_t x1 = scale(s->start_ns + s->inclusive_ns, d->end_ns, PLOT_W);
		int ry = y + LANE_PAD + (int)s->depth * ROW_H;

		if (s->overlaps)
			continue;
		if (p->used && p->first->open == s->open && x1 - p->x0 < 100 && x0 <= p->x1 + 100) {
			p->x1 = x1 > p->x1 ? x1 : p->x1;
			p->end = s->start_ns + s->inclusive_ns;
			p->count++;
			continue;
		}
		flush(pg, p, ry);
		*p = (struct pending){
			true, s->metric, x0, x1, 1, s->start_ns, s->start_ns + s->inclusive_ns, s
		};
	}
	for (k = 0; k < (size_t)t->depth * d->nr_metrics; k++)
		flush(pg, &pend[k], y + LANE_PAD + (int)(k / d->nr_metrics) * ROW_H);
}

static void thread_label(struct page *pg, const struct report_thread *t, int x, int y)
{
	fprintf(pg->f, "<text x=\"%d\" y=\"%d\">", x, y);
	report_html__esc(pg, "%s", t->comm && t->comm[0] ? t->comm : "?");
	fprintf(pg->f, " <tspan class=\"axis\">%" PRIu64 "</tspan></text>\n", t->tid);
}

static void timeline(struct page *pg)
{
	const struct report_doc *d = pg->doc;
	struct pending *pend = NULL;
	size_t i, lanes = 0, skipped = 0;
	unsigned int maxdepth = 0;
	int h = AXIS_H, y;

	fprintf(pg->f, "<section id=\"timeline\">\n<h2>Span timeline</h2>\n");
	if (!d->spans_recorded || !d->nr_spans) {
		fprintf(pg->f, "<p>No spans in this document");
		if (!d->spans_recorded)
			fprintf(pg->f, " (events.availability: %s): %s",
				ev_gap__name(d->spans_reason),
				report__gap_hint("events.availability", d->spans_reason));
		fprintf(pg->f, ".</p>\n</section>\n");
		return;
	}
	for (i = 0; i < d->nr_threads; i++) {
		if (!d->threads[i].nr_spans)
			continue;
		if (lanes == MAX_LANES) {
			skipped++;
			continue;
		}
		lanes++;
		h += (int)(d->threads[i].depth ? d->threads[i].depth : 1) * ROW_H + 2 * LANE_PAD;
		if (d->threads[i].depth > maxdepth)
			maxdepth = d->threads[i].depth;
	}
	pend = calloc((size_t)(maxdepth + 1) * d->nr_metrics, sizeof(*pend));
	if (!pend) {
		pg->err = -ENOMEM;
		return;
	}
	fprintf(pg->f,
		"<p class=\"note\">Each thread's spans over the window, nested callee below caller, "
		"colored by metric. Hover for times. Dashed: still open at the end.");
	for (i = 0; i < d->nr_spans && !parts_known(&d->spans[i]); i++)
		;
	if (i < d->nr_spans)
		fprintf(pg->f,
			" Along each span (with --blocked), its shares of time: "
			"<span class=\"sw\" style=\"background:" ON_CPU "\"></span>on a CPU, "
			"<span class=\"sw\" style=\"background:" RUNQUEUE
			"\"></span>waiting for one, "
			"<span class=\"sw\" style=\"background:" OFF_CPU
			"\"></span>blocked (with --wakers, who woke it on hover).");
	fprintf(pg->f, "</p>\n");
	fprintf(pg->f,
		"<svg id=\"timeline-svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\">\n",
		PAGE_W, h + 4, PAGE_W, h + 4);
	y = AXIS_H;
	lanes = 0;
	for (i = 0; i < d->nr_threads && lanes < MAX_LANES; i++) {
		const struct report_thread *t = &d->threads[i];
		int lh;

		if (!t->nr_spans)
			continue;
		lanes++;
		lh = (int)(t->depth ? t->depth : 1) * ROW_H + 2 * LANE_PAD;
		fprintf(pg->f,
			"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"" LANE_BG
			"\"/>\n",
			PLOT_X, y, PLOT_W, lh - 1);
		thread_label(pg, t, 4, y + LANE_PAD + ROW_H - 4);
		lane(pg, t, y, pend);
		y += lh;
	}
	axis(pg, d->end_ns, AXIS_H, h - AXIS_H);
	fprintf(pg->f, "</svg>\n<ul class=\"legend\">\n");
	for (i = 0; i < d->nr_metrics; i++) {
		fprintf(pg->f, "<li><span class=\"sw\" style=\"background:%s\"></span>",
			metric_color(&d->metrics[i]));
		report_html__esc(pg, "%s</li>\n", d->metrics[i].id);
	}
	fprintf(pg->f, "</ul>\n");
	free(pend);
	if (skipped)
		fprintf(pg->f, "<p class=\"note\">%zu more threads with spans are not drawn.</p>\n",
			skipped);
	if (d->nr_overlapping)
		fprintf(pg->f,
			"<p class=\"note\">%zu spans cross a span they do not nest in (a damaged "
			"document) and are not drawn.</p>\n",
			d->nr_overlapping);
	fprintf(pg->f, "</section>\n");
}

/* The next log2 bucket after b, when b is one (upper + 1 a power of two). */
static bool next_log2(const struct report_bucket *b, struct report_bucket *next)
{
	uint64_t lo = b->upper + 1;

	if (!lo || (lo & (lo - 1)) || lo > UINT64_MAX / 2)
		return false;
	*next = (struct report_bucket){ lo, lo * 2 - 1, 0 };
	return true;
}

static void histogram(struct page *pg)
{
	const struct report_rq *rq = &pg->doc->rq;
	const int W = 900, H = 220, X0 = 60, TOP = 24, BOT = 70;
	struct report_bucket *all = NULL, gapb;
	size_t i, n = 0, cap;
	uint64_t max = 0;
	char tot[32], x[24], w[24];

	fprintf(pg->f, "<section id=\"runqueue\">\n<h2>Runqueue delay</h2>\n");
	if (!rq->recorded) {
		fprintf(pg->f, "<p>Histogram: gap (%s): %s.</p>\n</section>\n",
			ev_gap__name(rq->reason), report__gap_hint("scheduler_detail", rq->reason));
		return;
	}
	/* Empty log2 buckets between recorded ones are drawn too: an even axis. */
	cap = rq->nr_buckets * 66 + 1;
	all = calloc(cap, sizeof(*all));
	if (!all) {
		pg->err = -ENOMEM;
		return;
	}
	for (i = 0; i < rq->nr_buckets; i++) {
		if (n) {
			while (n < cap && next_log2(&all[n - 1], &gapb) &&
			       gapb.lower < rq->buckets[i].lower)
				all[n++] = gapb;
		}
		if (n < cap)
			all[n++] = rq->buckets[i];
		max = rq->buckets[i].count > max ? rq->buckets[i].count : max;
	}
	report_html__dur(tot, sizeof(tot), rq->wait_ns);
	fprintf(pg->f,
		"<p class=\"note\">Every wait for a CPU on its own, all threads: %" PRIu64
		" waits, %s in total",
		rq->waits, tot);
	if (rq->unbinned_waits)
		fprintf(pg->f, " (%" PRIu64 " of them, before the first look, only in the total)",
			rq->unbinned_waits);
	fprintf(pg->f, ". Bars: waits per log2 bucket of wait time.</p>\n");
	fprintf(pg->f,
		"<svg id=\"rq-histogram\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\">\n"
		"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"" HIST_BG "\"/>\n",
		W, H + TOP + BOT, W, H + TOP + BOT, X0, TOP, W - X0 - 10, H);
	for (i = 0; i < n && max; i++) {
		int64_t slot = (int64_t)(W - X0 - 10) * 100 / (int64_t)n;
		int64_t bx = X0 * 100 + slot * (int64_t)i + slot / 10;
		int bh = (int)((unsigned __int128)all[i].count * (unsigned int)H / max);
		char lo[32];

		if (all[i].count && !bh)
			bh = 1;
		px(x, sizeof(x), bx);
		px(w, sizeof(w), slot * 8 / 10);
		report_html__dur(lo, sizeof(lo), all[i].lower);
		fprintf(pg->f,
			"<rect x=\"%s\" y=\"%d\" width=\"%s\" height=\"%d\" fill=\"" HIST_BAR
			"\"><title>%" PRIu64 " waits of %s",
			x, TOP + H - bh, w, bh, all[i].count, lo);
		report_html__dur(lo, sizeof(lo), all[i].upper);
		fprintf(pg->f, " to %s</title></rect>\n", all[i].upper == UINT64_MAX ? "more" : lo);
		px(x, sizeof(x), bx + slot * 4 / 10);
		if (all[i].count)
			fprintf(pg->f,
				"<text x=\"%s\" y=\"%d\" text-anchor=\"middle\">%" PRIu64
				"</text>\n",
				x, TOP + H - bh - 3, all[i].count);
		report_html__dur(lo, sizeof(lo), all[i].lower);
		fprintf(pg->f,
			"<text class=\"axis\" x=\"%s\" y=\"%d\" text-anchor=\"end\" "
			"transform=\"rotate(-40 %s %d)\">%s</text>\n",
			x, TOP + H + 14, x, TOP + H + 14, lo);
	}
	fprintf(pg->f,
		"<text class=\"axis\" x=\"%d\" y=\"%d\">count</text>"
		"<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"end\">wait, from</text>\n</svg>\n"
		"</section>\n",
		4, TOP + 10, W - 10, TOP + H + BOT - 4);
	free(all);
}

/* The process a thread is of (threads[].pid), or NULL. */
static const struct report_process *process_of(const struct report_doc *d,
					       const struct report_thread *t)
{
	size_t i;

	for (i = d->nr_processes; i-- > 0;)
		if (d->processes[i].pid == t->pid)
			return &d->processes[i];
	return NULL;
}

/*
 * A thread's bar label: of a set of processes, its process's title (else
 * comm) when the thread is the process's main one, its own comm else; the
 * tooltip says both whole.
 */
static void bar_label(struct page *pg, const struct report_thread *t, int x, int y)
{
	const struct report_process *p = pg->doc->nr_processes > 1 ? process_of(pg->doc, t) : NULL;
	const char *name = t->comm && t->comm[0] ? t->comm : "?";
	char cut[40];

	if (p && p->pid == t->tid && (p->title_end || p->title_join))
		name = report__process_name(p);
	fprintf(pg->f, "<text x=\"%d\" y=\"%d\">", x, y);
	report_html__esc(pg, "<title>%s", t->comm && t->comm[0] ? t->comm : "?");
	fprintf(pg->f, " (tid %" PRIu64 ")", t->tid);
	if (p) {
		report_html__esc(pg, " of %s", report__process_name(p));
		fprintf(pg->f, " (pid %" PRIu64 ")", p->pid);
	}
	fprintf(pg->f, "</title>");
	if (strlen(name) > 26) {
		size_t n = 23;

		while (n && ((unsigned char)name[n] & 0xc0) == 0x80)
			n--;
		snprintf(cut, sizeof(cut), "%.*s...", (int)n, name);
		name = cut;
	}
	report_html__esc(pg, "%s", name);
	fprintf(pg->f, " <tspan class=\"axis\">%" PRIu64 "</tspan></text>\n", t->tid);
}

/* Each listed thread's window, busiest first (on-CPU), named by its process's title. */
static void thread_bars(struct page *pg)
{
	const struct report_doc *d = pg->doc;
	size_t i, n = d->nr_listed < MAX_BARS ? d->nr_listed : MAX_BARS;
	size_t *order = report__threads_by_cpu(d);
	int h = (int)n * (BAR_H + BAR_GAP) + 4;
	char wall[32];

	if (!order) {
		pg->err = -ENOMEM;
		return;
	}

	report_html__dur(wall, sizeof(wall), d->wall_ns);
	fprintf(pg->f,
		"<section id=\"thread-time\">\n<h2>Where each thread's time went, busiest first</h2>\n"
		"<p class=\"note\">Each bar is the window (%s): "
		"<span class=\"sw\" style=\"background:" ON_CPU "\"></span>on a CPU, "
		"<span class=\"sw\" style=\"background:" RUNQUEUE
		"\"></span>runnable, waiting for a CPU, "
		"<span class=\"sw\" style=\"background:" OFF_CPU "\"></span>the rest: sleeping or "
		"blocked, or not yet born or already exited.</p>\n",
		wall);
	fprintf(pg->f,
		"<svg id=\"thread-bars\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\">\n",
		PAGE_W, h, PAGE_W, h);
	for (i = 0; i < n; i++) {
		const struct report_thread *t = &d->threads[order[i]];
		struct ev_u64 on = t->on_cpu_ns.ev, rq = t->sched.scheduler_delay_ns.ev;
		int y = (int)i * (BAR_H + BAR_GAP) + 2;
		char x[24], w[24], a[32], b[32];
		int64_t won, wrq;

		bar_label(pg, t, 4, y + BAR_H - 4);
		fprintf(pg->f,
			"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"" OFF_CPU
			"\"/>\n",
			PLOT_X, y, BARS_W, BAR_H);
		report_html__ev_str(a, sizeof(a), on, true);
		report_html__ev_str(b, sizeof(b), rq, true);
		if (!on.recorded || !rq.recorded || !d->wall_ns) {
			fprintf(pg->f, "<text x=\"%d\" y=\"%d\">on-CPU %s, runqueue %s</text>\n",
				PLOT_X + 6, y + BAR_H - 4, a, b);
			continue;
		}
		won = scale(on.value, d->wall_ns, BARS_W);
		wrq = scale(rq.value, d->wall_ns, BARS_W);
		if (won + wrq > BARS_W * 100)
			wrq = BARS_W * 100 - won;
		px(x, sizeof(x), PLOT_X * 100);
		px(w, sizeof(w), won);
		fprintf(pg->f,
			"<rect x=\"%s\" y=\"%d\" width=\"%s\" height=\"%d\" fill=\"" ON_CPU
			"\"><title>on a CPU %s</title></rect>\n",
			x, y, w, BAR_H, a);
		px(x, sizeof(x), PLOT_X * 100 + won);
		px(w, sizeof(w), wrq);
		fprintf(pg->f,
			"<rect x=\"%s\" y=\"%d\" width=\"%s\" height=\"%d\" fill=\"" RUNQUEUE
			"\"><title>waiting for a CPU %s</title></rect>\n",
			x, y, w, BAR_H, b);
		fprintf(pg->f, "<text x=\"%d\" y=\"%d\">%s · %s</text>\n", PLOT_X + BARS_W + 8,
			y + BAR_H - 4, a, b);
	}
	fprintf(pg->f, "</svg>\n");
	free(order);
	if (d->nr_listed > n)
		fprintf(pg->f, "<p class=\"note\">%zu more threads are in the table below.</p>\n",
			d->nr_listed - n);
	fprintf(pg->f, "</section>\n");
}

/*
 * A metric's calls, where their time went: on-CPU + runqueue + blocked by
 * cause (+ unattributed), and who woke them, as the terminal report says.
 */
static void metric_time(struct page *pg, const struct report_metric *m)
{
	char on[32], rq[32], bl[32], un[32] = "", causes[256], wakers[512];
	int64_t u = m->blocked.unattributed_ns;

	if (!m->has_ledger || !m->calls || !m->on_cpu_ns.recorded) {
		fprintf(pg->f, "<td class=\"l\">-</td><td class=\"l\">-</td></tr>\n");
		return;
	}
	report_html__dur(on, sizeof(on), m->on_cpu_ns.value);
	report_html__dur(rq, sizeof(rq), m->run_delay_ns);
	if (m->on_cpu_partial) {
		/* The measured calls' sum with its coverage; their blocked time is a gap. */
		fprintf(pg->f,
			"<td class=\"w\">%s on-CPU over %" PRIu64 " of %" PRIu64
			" calls (the others missed a switch-in) + %s runqueue over all "
			"(blocked time: %s)</td><td class=\"l\">-</td></tr>\n",
			on, m->on_cpu_covered, m->on_cpu_calls, rq,
			m->blocked.present ? ev_gap__name(m->blocked.reason) : "not timed");
		return;
	}
	fprintf(pg->f, "<td class=\"w\">%s on-CPU + %s runqueue", on, rq);
	if (!m->blocked.present || !m->blocked.recorded) {
		fprintf(pg->f, " (blocked time: %s)</td><td class=\"l\">-</td></tr>\n",
			m->blocked.present ? ev_gap__name(m->blocked.reason) : "not timed");
		return;
	}
	report_html__dur(bl, sizeof(bl), report__blocked_total(&m->blocked));
	report__causes_phrase(&m->blocked, causes, sizeof(causes));
	if (u)
		report_html__dur(un, sizeof(un), (uint64_t)(u < 0 ? -u : u));
	fprintf(pg->f, " + %s blocked", bl);
	report_html__esc(pg, "%s", causes[0] ? " (" : "");
	report_html__esc(pg, "%s", causes);
	report_html__esc(pg, "%s", causes[0] ? ")" : "");
	if (u)
		fprintf(pg->f, " %c %s unattributed", u < 0 ? '-' : '+', un);
	report__wakers_phrase(&m->blocked, 3, wakers, sizeof(wakers));
	report_html__esc(pg, "</td><td class=\"w\">%s</td></tr>\n", wakers[0] ? wakers : "-");
}

/*
 * A keyed metric's keys (--key) by inclusive time, most first, its (other)
 * in its place; each row's tooltip is its key's whole text.
 */
static void key_table(struct page *pg, const struct report_metric *m)
{
	const struct report_metric **v;
	size_t i;

	if (!m->nr_keys)
		return;
	v = report__keys_by_inclusive(m);
	if (!v) {
		pg->err = -ENOMEM;
		return;
	}
	fprintf(pg->f, "<h3>");
	report_html__esc(pg, "Keys of %s", m->id);
	fprintf(pg->f,
		" (%zu), by inclusive time</h3>\n<table>\n<tr><th class=\"l\">key</th><th>calls</th>"
		"<th>of calls</th><th>inclusive</th><th>of time</th><th>exclusive</th><th>mean</th>"
		"<th>open at end</th><th class=\"l\">where the time went</th><th class=\"l\"></th></tr>\n",
		m->nr_keys);
	for (i = 0; i < m->nr_keys; i++) {
		const struct report_metric *k = v[i];
		char a[32], b[32], c[32] = "-", cs[16], is[16];

		report_html__dur(a, sizeof(a), k->inclusive_ns);
		report_html__dur(b, sizeof(b), k->exclusive_ns);
		if (k->calls)
			report_html__dur(c, sizeof(c), k->inclusive_ns / k->calls);
		report__share(cs, sizeof(cs), k->calls, m->calls);
		report__share(is, sizeof(is), k->inclusive_ns, m->inclusive_ns);
		report_html__esc(pg, "<tr title=\"%s\"><td class=\"w\">", k->id);
		report_html__esc(pg, k->other ? "<b>%s</b>" : "%s", k->id);
		fprintf(pg->f,
			"</td><td>%" PRIu64 "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
			"<td>%s</td><td>%" PRIu64 "</td>",
			k->calls, cs, a, is, b, c, k->unfinished);
		metric_time(pg, k);
	}
	fprintf(pg->f, "</table>\n");
	free(v);
}

static void span_table(struct page *pg)
{
	const struct report_doc *d = pg->doc;
	const struct report_metric **v;
	uint64_t total;
	size_t i;

	if (!d->nr_metrics)
		return;
	v = report__metrics_by_exclusive(d, &total);
	if (!v) {
		pg->err = -ENOMEM;
		return;
	}
	fprintf(pg->f,
		"<section id=\"spans\">\n<h2>Span metrics, by exclusive time</h2>\n"
		"<table>\n<tr><th class=\"l\">metric</th><th>calls</th><th>inclusive</th>"
		"<th>exclusive</th><th>share</th><th>mean</th><th>open at end</th>"
		"<th class=\"l\">where the time went</th><th class=\"l\">woken by</th></tr>\n");
	for (i = 0; i < d->nr_metrics; i++) {
		const struct report_metric *m = v[i];
		char a[32], b[32], c[32] = "-";
		uint64_t pm =
			total ? (uint64_t)((unsigned __int128)m->exclusive_ns * 1000 / total) : 0;

		report_html__dur(a, sizeof(a), m->inclusive_ns);
		report_html__dur(b, sizeof(b), m->exclusive_ns);
		if (m->calls)
			report_html__dur(c, sizeof(c), m->inclusive_ns / m->calls);
		fprintf(pg->f,
			"<tr><td class=\"l\"><span class=\"sw\" style=\"background:%s\"></span>",
			metric_color(m));
		report_html__esc(pg, "%s", m->id);
		if (m->declared_cause) {
			/* The cause is one of the document's cause names: escaped all the same. */
			report_html__esc(pg, "<br><small>blocked inside it counts as %s",
					 m->declared_cause);
			fprintf(pg->f, " (--span-cause): %" PRIu64 " stretches</small>",
				m->declared_cause_stretches);
		}
		fprintf(pg->f,
			"%s</td><td>%" PRIu64 "</td><td>%s</td><td>%s</td><td>%" PRIu64 ".%" PRIu64
			"%%</td><td>%s</td><td>%" PRIu64 "</td>",
			m->has_totals ? "" : " *", m->calls, a, b, pm / 10, pm % 10, c,
			m->unfinished);
		metric_time(pg, m);
	}
	fprintf(pg->f, "</table>\n");
	for (i = 0; i < d->nr_metrics; i++)
		key_table(pg, v[i]);
	for (i = 0; i < d->nr_metrics; i++)
		if (!d->metrics[i].has_totals)
			break;
	if (i < d->nr_metrics)
		fprintf(pg->f, "<p class=\"note\">* not in span_metrics: counted from the span "
			       "records kept, not exact totals.</p>\n");
	fprintf(pg->f, "</section>\n");
	free(v);
}

static void usdt_table(struct page *pg)
{
	const struct report_doc *d = pg->doc;
	size_t i;

	if (!d->nr_usdt)
		return;
	fprintf(pg->f, "<section id=\"usdt\">\n<h2>USDT probes counted</h2>\n"
		       "<table>\n<tr><th class=\"l\">probe</th><th>hits</th><th>processes</th>"
		       "<th>threads</th><th class=\"l\">most hits in</th></tr>\n");
	for (i = 0; i < d->nr_usdt; i++) {
		const struct report_usdt *u = &d->usdt[i];

		fprintf(pg->f, "<tr><td class=\"l\">");
		report_html__esc(pg, "%s", u->probe);
		fprintf(pg->f, "</td><td>%" PRIu64 "</td><td>%zu</td><td>%zu</td><td class=\"l\">",
			u->hits, u->nr_processes, u->nr_threads);
		if (u->top_pid_hits)
			fprintf(pg->f, "pid %" PRIu64 " (%" PRIu64 ")", u->top_pid,
				u->top_pid_hits);
		fprintf(pg->f, "</td></tr>\n");
	}
	fprintf(pg->f, "</table>\n</section>\n");
}

int report__html(const struct report_doc *doc, char **buf, size_t *len)
{
	struct page pg = { .doc = doc };
	bool spans = doc->spans_recorded && doc->nr_spans;
	int err;

	*buf = NULL;
	*len = 0;
	if (!doc->spans && doc->nr_spans)
		return -EINVAL; /* summarized: the timeline draws every span */
	pg.f = open_memstream(buf, len);
	if (!pg.f)
		return -ENOMEM;
	fprintf(pg.f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		      "style-src 'unsafe-inline'\">\n");
	report_html__esc(&pg, "<title>khbpf report: %s", doc->comm);
	fprintf(pg.f, " (pid %" PRIu64 ")</title>\n", doc->pid);
	style(&pg);
	fprintf(pg.f, "</head>\n<body>\n");
	header(&pg);
	/* The answer first; without spans, the timeline's notice last. */
	report_html__answer(&pg);
	if (spans)
		timeline(&pg);
	histogram(&pg);
	thread_bars(&pg);
	span_table(&pg);
	usdt_table(&pg);
	report_html__processes(&pg);
	report_html__threads(&pg);
	report_html__blocked(&pg);
	report_html__gaps(&pg);
	if (!spans)
		timeline(&pg);
	fprintf(pg.f, "</body>\n</html>\n");
	err = pg.err;
	if (ferror(pg.f))
		err = -ENOMEM;
	if (fclose(pg.f) && !err)
		err = -ENOMEM;
	if (err) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	return err;
}

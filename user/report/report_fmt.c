// SPDX-License-Identifier: MIT
/*
 * The formatting the renderers share: durations, the exit phrase, metric
 * order, a process's name and its title's role.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

void report__fmt_ns(char *buf, size_t len, uint64_t ns)
{
	static const struct {
		uint64_t div;
		const char *unit;
	} units[] = { { 1, "ns" }, { 1000, "us" }, { 1000000, "ms" }, { 1000000000, "s" } };
	unsigned int u, d;
	uint64_t p10, scaled;

	if (ns < 1000) {
		snprintf(buf, len, "%" PRIu64 " ns", ns);
		return;
	}
	u = ns >= units[3].div ? 3 : ns >= units[2].div ? 2 : 1;
	for (;;) {
		uint64_t div = units[u].div, whole = ns / div;

		/* Three significant digits: decimals for what the whole part lacks. */
		d = whole >= 100 ? 0 : whole >= 10 ? 1 : 2;
		p10 = d == 2 ? 100 : d == 1 ? 10 : 1;
		scaled = (uint64_t)(((unsigned __int128)ns * p10 + div / 2) / div);
		if (scaled >= 1000 && d) {
			/* 99.96 rounds to 100.0: one decimal fewer. */
			d--;
			p10 /= 10;
			scaled = (uint64_t)(((unsigned __int128)ns * p10 + div / 2) / div);
		}
		if (scaled >= 1000 && !d && u < 3) {
			u++; /* 999.7 ms is 1.00 s */
			continue;
		}
		break;
	}
	if (d)
		snprintf(buf, len, "%" PRIu64 ".%0*" PRIu64 " %s", scaled / p10, (int)d,
			 scaled % p10, units[u].unit);
	else
		snprintf(buf, len, "%" PRIu64 " %s", scaled, units[u].unit);
}

void report__exit_phrase(const struct report_doc *d, char *buf, size_t len)
{
	if (d->exit_recorded)
		snprintf(buf, len, "%s %" PRIu64,
			 d->exit_signaled ? "killed by signal" : "exited with", d->exit_value);
	else if (d->exit_reason == EV_GAP_UNAVAILABLE && d->end_reason &&
		 strcmp(d->end_reason, "target-exit"))
		snprintf(buf, len, "still running when the window ended");
	else
		snprintf(buf, len, "exit status: gap (%s)", ev_gap__name(d->exit_reason));
}

static int excl_desc(const void *a, const void *b)
{
	const struct report_metric *x = *(const struct report_metric *const *)a;
	const struct report_metric *y = *(const struct report_metric *const *)b;

	if (x->exclusive_ns != y->exclusive_ns)
		return x->exclusive_ns > y->exclusive_ns ? -1 : 1;
	return strcmp(x->id, y->id);
}

const struct report_metric **report__metrics_by_exclusive(const struct report_doc *d,
							  uint64_t *total)
{
	const struct report_metric **v = calloc(d->nr_metrics ? d->nr_metrics : 1, sizeof(*v));
	size_t i;

	*total = 0;
	if (!v)
		return NULL;
	for (i = 0; i < d->nr_metrics; i++) {
		v[i] = &d->metrics[i];
		*total = report__sat_add(*total, v[i]->exclusive_ns);
	}
	qsort(v, d->nr_metrics, sizeof(*v), excl_desc);
	return v;
}

const char *report__process_name(const struct report_process *p)
{
	if (p->title_end)
		return p->title_end;
	if (p->title_join)
		return p->title_join;
	return p->comm ? p->comm : "?";
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

bool report__title_role(const char *title, char *buf, size_t len)
{
	const char *w = title ? title : "", *end;
	size_t at = 0, n, after = 0;

	if (!len)
		return false;
	buf[0] = '\0';
	for (;;) {
		while (is_space(*w))
			w++;
		for (end = w; *end && !is_space(*end); end++)
			;
		n = (size_t)(end - w);
		if (!n)
			break;
		/* The name's words end in ':'; any word after the first that does not is the role's. */
		if (w[n - 1] != ':' || after) {
			if (!at)
				return false;
			if (after == REPORT_ROLE_WORDS)
				break;
			after++;
		}
		if (at + (at ? 1 : 0) + n >= len)
			break;
		if (at)
			buf[at++] = ' ';
		memcpy(buf + at, w, n);
		at += n;
		buf[at] = '\0';
		w = end;
	}
	return at > 0;
}

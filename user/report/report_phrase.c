// SPDX-License-Identifier: MIT
/*
 * Phrases the terminal report and the HTML page both say: blocked time by
 * cause and who woke it. Names are written as the document has them; each
 * renderer makes them safe for its output.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "report/report.h"

uint64_t report__blocked_total(const struct report_blocked *b)
{
	uint64_t t = 0;
	int i;

	for (i = 0; i < BLOCK_CAUSES; i++)
		t = report__sat_add(t, b->ns[i]);
	return t;
}

void report__put(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*at >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *at, len - *at, fmt, ap);
	va_end(ap);
	if (n > 0)
		*at += (size_t)n < len - *at ? (size_t)n : len - *at - 1;
}

void report__causes_phrase(const struct report_blocked *b, char *buf, size_t len)
{
	uint64_t total = report__blocked_total(b), pm;
	size_t at = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; total && i < BLOCK_CAUSES; i++) {
		if (!b->ns[i])
			continue;
		pm = (uint64_t)((unsigned __int128)b->ns[i] * 1000 / total);
		report__put(buf, len, &at, "%s%s %" PRIu64 ".%" PRIu64 "%%", at ? ", " : "",
			    blocked_cause__name((size_t)i), pm / 10, pm % 10);
	}
}

void report__wakers_phrase(const struct report_blocked *b, size_t max, char *buf, size_t len)
{
	char ns[24];
	size_t i, at = 0;

	buf[0] = '\0';
	for (i = 0; i < b->nr_wakers && i < max; i++) {
		const struct waker_row *w = &b->wakers[i];

		report__fmt_ns(ns, sizeof(ns), w->ns);
		if (w->kind == WAKER_THREAD)
			report__put(buf, len, &at, "%s%s (%" PRIu32 ") %s x%" PRIu64, i ? ", " : "",
				    w->comm, w->tid, ns, w->count);
		else
			report__put(buf, len, &at, "%s%s %s x%" PRIu64, i ? ", " : "",
				    w->kind == WAKER_TIMER ? "a timer" : "an interrupt", ns,
				    w->count);
	}
	if (b->nr_wakers > max)
		report__put(buf, len, &at, ", %zu more", b->nr_wakers - max);
}

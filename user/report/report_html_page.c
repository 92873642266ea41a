// SPDX-License-Identifier: MIT
/* The HTML page's text: escaping, durations and evidence values as strings. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "document/evjson.h"
#include "report/report.h"
#include "report/report_html_page.h"

char *report_html__escape(const char *s)
{
	char *clean, *out, *o;
	const char *p;

	clean = evjson__utf8_sanitize(s ? s : "", s ? strlen(s) : 0);
	if (!clean)
		return NULL;
	/* Worst case: every byte becomes "&#xFFFD;" (8 bytes). */
	out = malloc(strlen(clean) * 8 + 1);
	if (!out) {
		free(clean);
		return NULL;
	}
	for (o = out, p = clean; *p; p++) {
		const char *rep = NULL;

		switch (*p) {
		case '&':
			rep = "&amp;";
			break;
		case '<':
			rep = "&lt;";
			break;
		case '>':
			rep = "&gt;";
			break;
		case '"':
			rep = "&quot;";
			break;
		case '\'':
			rep = "&#39;";
			break;
		default:
			/* Control characters are not allowed in HTML text. */
			if ((unsigned char)*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
				rep = "&#xFFFD;";
			else if (*p == 0x7f)
				rep = "&#xFFFD;";
		}
		if (rep) {
			memcpy(o, rep, strlen(rep));
			o += strlen(rep);
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	free(clean);
	return out;
}

/* Escaped text; fmt has one %s for it. */
void report_html__esc(struct page *pg, const char *fmt, const char *s)
{
	char *e = report_html__escape(s);

	if (!e) {
		pg->err = -ENOMEM;
		return;
	}
	fprintf(pg->f, fmt, e);
	free(e);
}

void report_html__dur(char *buf, size_t len, uint64_t ns)
{
	report__fmt_ns(buf, len, ns);
}

void report_html__ev_str(char *buf, size_t len, struct ev_u64 ev, bool ns)
{
	if (!ev.recorded)
		snprintf(buf, len, "gap: %s", ev_gap__name(ev.reason));
	else if (ns)
		report_html__dur(buf, len, ev.value);
	else
		snprintf(buf, len, "%" PRIu64, ev.value);
}

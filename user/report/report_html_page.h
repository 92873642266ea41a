/* SPDX-License-Identifier: MIT */
/*
 * The HTML page under construction and its text, shared by report_html.c
 * (the page, its pictures and the span table) and report_html_sets.c
 * (processes, threads, blocked time and gaps). Internal to those; callers
 * use report.h.
 */
#ifndef KHBPF_REPORT_HTML_PAGE_H
#define KHBPF_REPORT_HTML_PAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "report/report.h"

/* The shades of a thread's time, the same in every picture of the page. */
#define HTML_ON_CPU "#2e7d32"
#define HTML_RUNQUEUE "#c62828"
#define HTML_OFF_CPU "#cfd8dc"

struct page {
	const struct report_doc *doc;
	FILE *f;
	int err;
};

/* Escaped text; fmt has one %s for it. */
void report_html__esc(struct page *pg, const char *fmt, const char *s);
void report_html__dur(char *buf, size_t len, uint64_t ns);
/* A value or its gap ("gap: unavailable"); ns: as a duration. */
void report_html__ev_str(char *buf, size_t len, struct ev_u64 ev, bool ns);

#endif /* KHBPF_REPORT_HTML_PAGE_H */

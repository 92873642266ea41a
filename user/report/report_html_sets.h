/* SPDX-License-Identifier: MIT */
/*
 * The HTML page's sections: the answer (report_html_answer.c); processes,
 * threads, blocked time and gaps (report_html_sets.c).
 */
#ifndef KHBPF_REPORT_HTML_SETS_H
#define KHBPF_REPORT_HTML_SETS_H

#include "report/report_html_page.h"

/* The first section: the answer (report_html_answer.c). */
void report_html__answer(struct page *pg);

/* The sections of report_html_sets.c, in the page's order. */
void report_html__processes(struct page *pg);
void report_html__threads(struct page *pg);
void report_html__blocked(struct page *pg);
void report_html__gaps(struct page *pg);

#endif /* KHBPF_REPORT_HTML_SETS_H */

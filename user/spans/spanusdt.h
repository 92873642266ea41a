/* SPDX-License-Identifier: MIT */
/*
 * The span sites of a --usdt-span request in one object: its START
 * probe's sites open the span, its DONE probe's close it (usdtnote reads
 * the probes). Internal to spanfind; callers use spanfind.h.
 */
#ifndef KHBPF_SPANUSDT_H
#define KHBPF_SPANUSDT_H

#include <stddef.h>

#include "spans/spansite.h"

/*
 * Appends to vec the sites of req's START and DONE probes in the ELF file
 * open_path (object as the target names it), *matched the number of good
 * ones. An object with neither probe adds nothing. One with only one of
 * them adds an error site saying which is missing (a span needs both; it
 * is absent: that probe is not there), and a site whose note is malformed
 * adds its own error. A --usdt request
 * (req->count) adds a site per probe site matching its globs, each probe
 * its own metric (spansite__usdt_count_metric). 0; -ENOMEM; a
 * file that cannot be read: usdtnote__read's -errno, with reason set.
 */
int spanusdt__scan(struct site_vec *vec, const char *object, const char *open_path,
		   const struct span_request *req, size_t *matched, char *reason, size_t size);

#endif /* KHBPF_SPANUSDT_H */

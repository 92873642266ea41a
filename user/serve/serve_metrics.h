/* SPDX-License-Identifier: MIT */
/* serve's /metrics body: the Prometheus families, in a fixed order. */
#ifndef KHBPF_SERVE_METRICS_H
#define KHBPF_SERVE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "serve/serve_source.h"

struct httpd_stats;
struct json_object;
struct promtext;
struct serve_row;

/*
 * The groups' families, collector health and loss counters, the gaps of
 * src->doc (serve_metrics__gaps), and the CPU frequency now. 0 or -errno.
 */
int serve_metrics__render(struct promtext *p, const struct serve_metrics_src *src);

/*
 * The groups' families (on-CPU time, switches, timeslices, migrations,
 * unbinned waits, the runqueue histogram) for these rows: labels cgroup
 * and those src->labels finds in its path, or comm (and pid with --top).
 */
int serve_metrics__rows(struct promtext *p, const struct serve_metrics_src *src,
			const struct serve_row *rows, size_t nr);

/*
 * Gaps as data, from an evidence document (NULL: families with no samples):
 * khbpf_evidence_available{collector,field} 0/1 for each collector and each
 * Evidence value of `hardware`, khbpf_evidence_gap_info{collector,field,
 * reason} for each gap, khbpf_topology{field} for recorded topology.
 */
int serve_metrics__gaps(struct promtext *p, struct json_object *doc);

/*
 * serve's own HTTP connections: khbpf_http_connections (open), and each
 * bound's overflow, khbpf_http_connections_closed_total{reason} (displaced
 * at the address or total limit, or past the request head or answer
 * deadline) and khbpf_http_connections_refused_total.
 */
int serve_metrics__http(struct promtext *p, const struct httpd_stats *st);

#endif /* KHBPF_SERVE_METRICS_H */

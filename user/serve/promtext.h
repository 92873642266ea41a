/* SPDX-License-Identifier: MIT */
/*
 * Metrics exposition writer: Prometheus text format 0.0.4 or OpenMetrics
 * 1.0.0 text, built in memory. Integer arithmetic only: values are u64 or
 * nanoseconds written as exact decimal seconds.
 *
 * Usage: promtext__new, then for each family promtext__family followed by
 * its samples, then promtext__finish. Every call returns 0 or -errno; a
 * failed call leaves the builder as it was before the call, so the caller
 * may go on or free it.
 */
#ifndef KHBPF_PROMTEXT_H
#define KHBPF_PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct promtext;

enum prom_type {
	PROM_COUNTER,
	PROM_GAUGE,
	PROM_HISTOGRAM,
	PROM_INFO,
};

struct prom_label {
	const char *name; /* [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" */
	const char *value; /* any bytes: escaped, invalid UTF-8 becomes U+FFFD */
};

int promtext__new(struct promtext **out, bool openmetrics);

/*
 * Starts the family `name` ([a-zA-Z_:][a-zA-Z0-9_:]*), the base name
 * without the _total/_info the writer adds:
 *   counter   text: "# TYPE name_total counter", sample name_total
 *             OpenMetrics: "# TYPE name counter", sample name_total
 *   gauge     name in both
 *   histogram name_bucket, name_sum, name_count in both
 *   info      text: gauge name_info; OpenMetrics: "# TYPE name info",
 *             sample name_info; the value must be 1
 * A counter name must not end in "_total", an info name not in "_info".
 * unit (NULL for none; never for info) must be the name's suffix after an
 * underscore, as OpenMetrics requires ("..._seconds", "seconds"); it is
 * written as a # UNIT line in OpenMetrics only. help may be NULL. Each
 * family once: -EEXIST for a name, or a sample name, already used.
 */
int promtext__family(struct promtext *p, const char *name, enum prom_type type, const char *unit,
		     const char *help);

/*
 * One sample of the current family (counter, gauge or info). Label names
 * must be unique within a sample; -EINVAL when there is no family yet or
 * the family is a histogram.
 */
int promtext__u64(struct promtext *p, const struct prom_label *l, size_t nr, uint64_t v);
/* As promtext__u64 with ns written in seconds, exactly: 1500000000 → "1.5". */
int promtext__ns_as_seconds(struct promtext *p, const struct prom_label *l, size_t nr, uint64_t ns);

/* Longest promtext__fmt_seconds output, with its NUL: "18446744073.709551615". */
#define PROMTEXT_SECONDS_MAX 22
/* Writes ns as exact decimal seconds ("0", "0.000000001", "2.5"); returns the length. */
size_t promtext__fmt_seconds(char *buf, uint64_t ns);

/* Log2 histograms: at most this many buckets. */
#define PROMTEXT_LOG2_MAX 64

/*
 * One histogram of the current family from log2 nanosecond buckets:
 * buckets[k] counts values in [2^k, 2^(k+1) - 1] ns (bucket 0: [0, 1]),
 * and the last one, k = nr_buckets - 1, counts everything from 2^k up.
 * Writes cumulative name_bucket{le=...} for k < nr_buckets - 1, then
 * le="+Inf", name_sum (sum_ns in seconds) and name_count. The le set
 * depends on nr_buckets alone, so pass the same count on every scrape
 * (fold higher buckets into the last one). 1 <= nr_buckets <= 64;
 * -EOVERFLOW when the total count does not fit in a u64. Labels must
 * not include "le".
 */
int promtext__histogram_log2_ns(struct promtext *p, const struct prom_label *l, size_t nr,
				const uint64_t *buckets, size_t nr_buckets, uint64_t sum_ns);

/*
 * Ends the exposition (OpenMetrics: "# EOF\n") and frees the builder.
 * Returns the NUL-terminated text (malloc'd; *len without the NUL), or
 * NULL with errno set; the builder is freed either way.
 */
char *promtext__finish(struct promtext *p, size_t *len);
void promtext__free(struct promtext *p);

/* "text/plain; version=0.0.4; charset=utf-8" or the OpenMetrics 1.0.0 type. */
const char *promtext__content_type(bool openmetrics);

/*
 * Accept header negotiation: true when the client lists
 * application/openmetrics-text (no version, 1.0.0 or 0.0.1) with q > 0
 * and no higher q for text/plain (no version or 0.0.4). Wildcard ranges
 * never select OpenMetrics: curl's default Accept, browsers and a missing
 * header (NULL) get the text format, as from the Prometheus client
 * libraries.
 */
bool promtext__wants_openmetrics(const char *accept);

#endif /* KHBPF_PROMTEXT_H */

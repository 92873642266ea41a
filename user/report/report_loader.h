/* SPDX-License-Identifier: MIT */
/*
 * The state of one load of a document and the pieces of the loader that
 * share it: report.c runs it, report_stream.c reads the document a piece at
 * a time, report_sections.c
 * fills the model section by section, report_field.c reads typed members,
 * report_gaps.c collects the gaps. Internal to those; callers use report.h.
 *
 * The first failure sets ld->failed (-EPROTO for a malformed document,
 * -ENOMEM, -EINVAL for a document that is not JSON, -EFBIG for one over a
 * memory bound) and its message in
 * ld->err; later failures keep both, and every reader returns at once
 * (NULL, 0, false) once ld->failed is set.
 */
#ifndef KHBPF_REPORT_LOADER_H
#define KHBPF_REPORT_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "lib/jscan.h"
#include "report/report_model.h"

/*
 * The arrays that grow with the work (threads, span records, per-thread
 * utilization): read from the document one element at a time, so that a
 * document of 10^6 spans never exists as one json-c tree (about 8 KiB per
 * span record) nor as one string. The tree holds an empty array in their
 * place (report_stream.c).
 */
/* json-c's default nesting limit is 32; documents nest about 8 deep. */
#define REPORT_JSON_DEPTH 64

/*
 * What json-c may build of a document, reckoned from the text before it is
 * built (report_stream.c): the tree of everything outside the streamed
 * arrays (the outline: about 0.5 MiB for a window of serve, 270 MiB for
 * 8192 processes, --max-processes' default, and 56 to 120 MiB more for
 * their titles), and the tree of one of their
 * elements (a thread or a span record: tens of KiB). A document over either
 * is refused as the bound is crossed, within it: json-c takes about 800
 * bytes for an empty object, so a 200 MB member of them would need 50 GB.
 */
#define REPORT_OUTLINE_MAX ((uint64_t)512 << 20)
#define REPORT_ELEMENT_MAX ((uint64_t)16 << 20)

enum stream_id { STREAM_THREADS, STREAM_SPANS, STREAM_UTIL_THREADS, NR_STREAMS };

/* Where each streamed array is: "threads", "events.spans", ... */
extern const char *const report_stream_paths[NR_STREAMS];

struct stream {
	bool on;
	uint64_t begin, end; /* the array in the document: its '[' to past its ']' */
	size_t count; /* its elements */
	int nesting; /* objects around it: its elements are this deep + 1 */
	struct json_object *placeholder; /* its empty stand-in in the tree */
	/* The gaps found in its elements, spliced in where the walk meets it. */
	struct report_gap *gaps;
	size_t nr_gaps;
	uint64_t gap_fields;
};

/*
 * What the layout needs of a span that is not kept (report_load_opts.spans
 * off): 24 bytes a record instead of a struct report_span, for the nesting
 * and crossing counts of the terminal report.
 */
struct span_mark {
	uint64_t start;
	uint64_t inclusive_ns; /* open spans: set by the layout */
	uint32_t thread; /* index into doc->threads */
	uint32_t open;
};

/* Threads by id, to give each span its thread (report_layout.c). */
struct thread_index {
	struct tid_index *byid; /* the listed threads, sorted */
	size_t nr;
	bool built;
};

struct loader {
	struct report_doc *doc;
	char *err;
	size_t errlen;
	int failed; /* the first error's -errno; later ones keep its message */
	struct jscan *scan; /* the document, when arrays are streamed */
	struct stream streams[NR_STREAMS];
	/*
	 * Streamed arrays found, and whether some of them are not read: given
	 * again later (or their parent), so json-c's tree has the last; their
	 * elements still have to be JSON, as in a parse of the whole text.
	 */
	size_t arrays_found;
	bool arrays_unread;
	/* An element does not parse: the strict outline says where (not_json_at: it). */
	bool not_json;
	uint64_t not_json_at;
	uint64_t outline_max, element_max; /* the bounds above, or the tests' own */
	bool span_summary; /* only marks, not doc->spans (report_load_opts) */
	bool no_gaps; /* stream_each collects no gaps (the keyhog rendering) */
	uint64_t elem_at; /* during stream_each's fn: where its element starts */
	struct span_mark *marks;
	size_t nr_marks, cap_marks;
	struct thread_index threads;
};

/* ---- report_stream.c: the document outside its streamed arrays, and those ---- */

/*
 * The tree of the document with each streamed array an empty stand-in, the
 * arrays found and counted on the way. 0; -EINVAL (not JSON: ld->err says
 * where, as a parse of the whole text would), -EFBIG (over a bound),
 * -ENOMEM, -errno of a read. An array is not read past its first byte:
 * 0 with *root NULL, as for a JSON null.
 */
int loader__outline(struct loader *ld, struct json_object **root);
/* After ld->not_json: the message naming where the document is not JSON. */
void loader__not_json(struct loader *ld);
/*
 * Whether the whole document is JSON, each streamed element read in place
 * by json-c: 0 (ld untouched), or the load fails with the message naming
 * the first place it is not (or a read error).
 */
int loader__check_json(struct loader *ld);
/* The tree's stand-in for each streamed array, found by its path. */
void loader__find_placeholders(struct loader *ld, struct json_object *root);
/*
 * An integer literal that s went over (all of the document: the outline
 * pass, or a scan of the text) out of 64 bits fails the load, naming its
 * path: json-c would have clamped it. ld->failed.
 */
int loader__check_range(struct loader *ld, struct jscan *s);

/*
 * Each element of stream id, parsed on its own and freed after fn; its gaps
 * are collected on the way. The number of elements, or 0 after a failure.
 */
size_t loader__stream_each(struct loader *ld, enum stream_id id,
			   void (*fn)(struct loader *ld, struct json_object *o, size_t idx,
				      void *arg),
			   void *arg);
/*
 * The element of stream id that starts at offset at (stream_each's
 * elem_at), parsed on its own into *obj (NULL for a JSON null): 0, or the
 * load fails (ld->failed) as stream_each's would.
 */
int loader__element_at(struct loader *ld, enum stream_id id, uint64_t at, struct json_object **obj);
/* The number of elements of stream id, as the outline counted them. */
size_t loader__stream_count(struct loader *ld, enum stream_id id);

/* ---- report_field.c: typed members ---- */

/* Fails the load with -EPROTO and the message (control bytes as \xNN); first one wins. */
__attribute__((format(printf, 2, 3))) void loader__fail(struct loader *ld, const char *fmt, ...);
/* Fails the load with -ENOMEM; returns -ENOMEM. */
int loader__nomem(struct loader *ld);
/* A string of a streamed element, which is freed: the document keeps a copy. */
const char *loader__own(struct loader *ld, const char *str);

/* Member key of obj (at path `where`) of the given type; NULL when absent or wrong. */
struct json_object *loader__member(struct loader *ld, struct json_object *obj, const char *where,
				   const char *key, enum json_type type, bool required);
/* o as an unsigned integer into *out; false (and the load failed) when it is not one. */
bool loader__u64_of(struct loader *ld, struct json_object *o, const char *where, const char *key,
		    uint64_t *out);
/* Required members; 0 / NULL / false when absent (required: the load fails). */
uint64_t loader__get_u64(struct loader *ld, struct json_object *obj, const char *where,
			 const char *key);
const char *loader__get_str(struct loader *ld, struct json_object *obj, const char *where,
			    const char *key, bool required);
bool loader__get_bool(struct loader *ld, struct json_object *obj, const char *where,
		      const char *key, bool required);
/* The gap reason named s; false when s is NULL or not a reason of the schema. */
bool loader__parse_gap(const char *s, enum ev_gap *out);
/*
 * Evidence<T> at obj.key: the recorded value (NULL for a gap, with *reason
 * set); *recorded says whether it was recorded.
 */
struct json_object *loader__get_ev(struct loader *ld, struct json_object *obj, const char *where,
				   const char *key, bool *recorded, enum ev_gap *reason);
/*
 * Evidence<u64> or the partial form of a sum over calls (evjson__partial_u64):
 * partial sets *covered and *calls and gives the value recorded.
 */
struct ev_u64 loader__get_cov_u64(struct loader *ld, struct json_object *obj, const char *where,
				  const char *key, bool *partial, uint64_t *covered,
				  uint64_t *calls);
struct ev_u64 loader__get_ev_u64(struct loader *ld, struct json_object *obj, const char *where,
				 const char *key);
/* SourcedEvidence<u64>: {"value": Evidence<u64>, "source": SOURCE}. */
struct sev_u64 loader__get_sev_u64(struct loader *ld, struct json_object *obj, const char *where,
				   const char *key);
/* obj.scheduler: the six SourcedEvidence counters. */
void loader__get_sched(struct loader *ld, struct json_object *obj, const char *where,
		       struct scheduler_evidence *s);
/* A histogram array of {lower_bound, upper_bound, count}; *nr its length. */
struct report_bucket *loader__get_buckets(struct loader *ld, struct json_object *arr,
					  const char *where, size_t *nr);
/* scheduler_detail / bpf_detail: Evidence<{runqueue_* ...}>, absent in old documents. */
void loader__get_rq(struct loader *ld, struct json_object *obj, const char *where, const char *key,
		    struct report_rq *rq);

/*
 * Evidence<Blocked> at obj.key (docs/evidence.md 6.6.1), absent in older
 * documents (b->present false); the wakers into a malloc'd b->wakers.
 */
void loader__get_blocked(struct loader *ld, struct json_object *obj, const char *where,
			 const char *key, struct report_blocked *b);

/* ---- report_sections.c ---- */

/* Every section of root into ld->doc: run, collectors, hardware, threads, spans, loss... */
void loader__load_sections(struct loader *ld, struct json_object *root);

/* ---- report_gaps.c ---- */

/* The gaps of element idx of a streamed array, into that array's own list. */
void loader__walk_element_gaps(struct loader *ld, enum stream_id id, struct json_object *o,
			       size_t idx);
/* The gaps of the whole tree into ld->doc, streamed arrays' in their place. */
void loader__walk_gaps(struct loader *ld, struct json_object *root);

/* ---- report_layout.c: for spans that are not kept ---- */

/* The index in doc->threads of thread tid, a lane added when the list lacks it. */
int loader__thread_of(struct report_doc *d, struct thread_index *ti, uint64_t tid, size_t *idx);
void loader__thread_index_free(struct thread_index *ti);
/* A span in its metric's counts, when span_metrics gives none for the metric. */
void loader__count_span(struct report_metric *m, bool open, uint64_t inclusive_ns,
			uint64_t exclusive_ns);
/* Order spans by thread and start, set depths and colors (report_layout.c); 0 or -ENOMEM. */
int report_doc__layout(struct report_doc *d);
/* report_doc__layout from the marks: end, nesting and crossing counts, colors. */
int loader__layout_marks(struct report_doc *d, struct span_mark *marks, size_t n);

#endif /* KHBPF_REPORT_LOADER_H */

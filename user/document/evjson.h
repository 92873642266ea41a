/* SPDX-License-Identifier: MIT */
/*
 * Evidence shapes to json-c objects. Integers are json-c uint64 objects (exact
 * to 2^64-1, never a double); keys are added in the schema's order and json-c
 * keeps insertion order, so output is stable. Every constructor returns NULL
 * only on allocation failure, and takes ownership of nothing.
 */
#ifndef KHBPF_EVJSON_H
#define KHBPF_EVJSON_H

#include <json-c/json.h>

#include "lib/evidence.h"
#include "host/pressure.h"
#include "host/thermal.h"

/*
 * A JSON string from arbitrary bytes: valid UTF-8 is kept, each maximal
 * ill-formed subsequence becomes U+FFFD (Unicode's "substitution of maximal
 * subparts"), so a comm or path of any bytes yields valid JSON.
 */
struct json_object *evjson__string(const char *bytes);
/* Length-bounded form, for fixed-size kernel buffers such as comm[16]. */
struct json_object *evjson__string_len(const char *bytes, size_t len);
/* The sanitized copy itself (malloc'd), for text output; NULL on ENOMEM. */
char *evjson__utf8_sanitize(const char *bytes, size_t len);

/* A --key key: {text, kind ("str" or "int"), truncated, other}; NULL text: not keyed. */
struct json_object *evjson__key(const struct doc_key *k);
struct json_object *evjson__u64(uint64_t v);
struct json_object *evjson__ev_u64(struct ev_u64 ev);
/*
 * A sum over calls that covers only some of them (a khbpf form beside
 * Evidence): {"status":"partial","value":V,"covered_calls":N,"calls":M,
 * "reason":why the others are missing}.
 */
struct json_object *evjson__partial_u64(uint64_t value, uint64_t covered_calls, uint64_t calls,
					enum ev_gap missing);
struct json_object *evjson__ev_u32(struct ev_u32 ev);
struct json_object *evjson__sev_u64(struct sev_u64 sev);
struct json_object *evjson__sev_u32(struct sev_u32 sev);
struct json_object *evjson__ev_source(struct ev_source_ev ev);
/* {"status":"unavailable","reason":...} */
struct json_object *evjson__gap(enum ev_gap reason);
/* {"status":"recorded","value":value}; takes ownership of value (NULL → NULL). */
struct json_object *evjson__recorded(struct json_object *value);

struct json_object *evjson__capability(const struct collector_capability *cap);
struct json_object *evjson__counter_set(const struct counter_set *c);
struct json_object *evjson__scheduler(const struct scheduler_evidence *s);
struct json_object *evjson__utilization(const struct utilization_evidence *u);
struct json_object *evjson__topology(const struct topology_evidence *t);
struct json_object *evjson__span_hw_aggregation(const struct span_hw_aggregation *agg);
struct json_object *evjson__span_record(const struct span_record *s);
/* A span's (or a metric's summed) scheduler ledger, source bpf-uprobe. */
struct json_object *evjson__span_ledger(const struct span_ledger *l);
/* Evidence<Blocked>: blocked time by cause, what is unattributed, and the wakers. */
struct json_object *evjson__blocked(const struct blocked_evidence *b);
struct json_object *evjson__hardware_run(const struct hardware_run *h);
/*
 * khbpf's pressure scope: path, start and end (keyhog-profile's
 * PressureEvidence fields, then the other lines' avg10 and every total=),
 * the stall over the window, and the detail when there is one.
 */
struct json_object *evjson__pressure_window(const struct pressure_window *w);
/* ThermalEvidence at both ends, the throttle events in the window, the detail. */
struct json_object *evjson__thermal_window(const struct thermal_window *w);

/* Add key → value to obj; value NULL (ENOMEM) makes it return -ENOMEM. */
int evjson__add(struct json_object *obj, const char *key, struct json_object *value);

/* The document layout: pretty, with '/' unescaped. */
#define EVJSON_TO_STRING_FLAGS \
	(JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

/* In EVJSON_TO_STRING_FLAGS' layout; the result lives until obj is put. */
const char *evjson__to_string(struct json_object *obj);

#endif /* KHBPF_EVJSON_H */

// SPDX-License-Identifier: MIT
/*
 * The gaps of a document: every Evidence field that is "unavailable",
 * counted by its path with [*] for array indices; see report_loader.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "report/report.h"
#include "report/report_loader.h"

struct gap_walk {
	struct loader *ld;
	/* Where gaps go: the document's list, or a streamed array's own. */
	struct report_gap **gaps;
	size_t *nr_gaps;
	uint64_t *gap_fields;
	char generic[512];
	char concrete[512];
};

/* One more gap of (pattern, reason), first seen at path, count times. */
static void note_gap(struct gap_walk *gw, const char *path, const char *pattern, enum ev_gap reason,
		     uint64_t count)
{
	struct report_gap *g;
	size_t i;

	*gw->gap_fields += count;
	for (i = 0; i < *gw->nr_gaps; i++) {
		g = &(*gw->gaps)[i];
		if (g->reason != reason || strcmp(g->pattern, pattern))
			continue;
		if (g->count == 1) {
			/* A second one: name them all with [*]. */
			free(g->path);
			g->path = strdup(g->pattern);
			if (!g->path)
				loader__nomem(gw->ld);
		}
		g->count += count;
		return;
	}
	g = realloc(*gw->gaps, (*gw->nr_gaps + 1) * sizeof(*g));
	if (!g) {
		loader__nomem(gw->ld);
		return;
	}
	*gw->gaps = g;
	g = &g[*gw->nr_gaps];
	g->path = strdup(count == 1 ? path : pattern);
	g->pattern = strdup(pattern);
	g->reason = reason;
	g->count = count;
	g->hint = report__gap_hint(pattern, reason);
	(*gw->nr_gaps)++;
	if (!g->path || !g->pattern)
		loader__nomem(gw->ld);
}

static void add_gap(struct gap_walk *gw, struct json_object *ev)
{
	enum ev_gap reason;
	const char *r;

	r = json_object_get_string(json_object_object_get(ev, "reason"));
	if (!loader__parse_gap(r, &reason)) {
		loader__fail(gw->ld, "%s.reason: not a gap reason of the schema", gw->concrete);
		return;
	}
	note_gap(gw, gw->concrete, gw->generic, reason, 1);
}

static bool is_gap(struct json_object *o)
{
	struct json_object *st;

	return json_object_is_type(o, json_type_object) &&
	       json_object_object_get_ex(o, "status", &st) &&
	       json_object_is_type(st, json_type_string) &&
	       !strcmp(json_object_get_string(st), "unavailable");
}

static void walk_gaps(struct gap_walk *gw, struct json_object *o)
{
	size_t gl = strlen(gw->generic), cl = strlen(gw->concrete);
	struct json_object *v;
	int k;

	if (gw->ld->failed)
		return;
	/* A streamed array: its elements' gaps, in their order, here. */
	for (k = 0; k < NR_STREAMS; k++) {
		const struct stream *st = &gw->ld->streams[k];
		size_t i;

		if (!st->on || o != st->placeholder)
			continue;
		for (i = 0; i < st->nr_gaps; i++)
			note_gap(gw, st->gaps[i].path, st->gaps[i].pattern, st->gaps[i].reason,
				 st->gaps[i].count);
		return;
	}
	if (is_gap(o)) {
		add_gap(gw, o);
		return;
	}
	/* A sourced gap is named by its field, not by the inner "value". */
	if (json_object_is_type(o, json_type_object) &&
	    json_object_object_get_ex(o, "source", &v) &&
	    json_object_object_get_ex(o, "value", &v) && is_gap(v)) {
		add_gap(gw, v);
		return;
	}
	if (json_object_is_type(o, json_type_array)) {
		size_t i, n = json_object_array_length(o);

		for (i = 0; i < n; i++) {
			snprintf(gw->generic + gl, sizeof(gw->generic) - gl, "[*]");
			snprintf(gw->concrete + cl, sizeof(gw->concrete) - cl, "[%zu]", i);
			walk_gaps(gw, json_object_array_get_idx(o, i));
		}
	} else if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, key, val) {
			const char *dot = gl ? "." : "";

			snprintf(gw->generic + gl, sizeof(gw->generic) - gl, "%s%s", dot, key);
			snprintf(gw->concrete + cl, sizeof(gw->concrete) - cl, "%s%s", dot, key);
			walk_gaps(gw, val);
		}
	}
	gw->generic[gl] = '\0';
	gw->concrete[cl] = '\0';
}

/* The gaps of element idx of a streamed array, into that array's own list. */
void loader__walk_element_gaps(struct loader *ld, enum stream_id id, struct json_object *o,
			       size_t idx)
{
	struct stream *st = &ld->streams[id];
	struct gap_walk *gw;

	if (ld->failed)
		return;
	gw = calloc(1, sizeof(*gw));
	if (!gw) {
		loader__nomem(ld);
		return;
	}
	gw->ld = ld;
	gw->gaps = &st->gaps;
	gw->nr_gaps = &st->nr_gaps;
	gw->gap_fields = &st->gap_fields;
	snprintf(gw->generic, sizeof(gw->generic), "%s[*]", report_stream_paths[id]);
	snprintf(gw->concrete, sizeof(gw->concrete), "%s[%zu]", report_stream_paths[id], idx);
	walk_gaps(gw, o);
	free(gw);
}

void loader__walk_gaps(struct loader *ld, struct json_object *root)
{
	struct gap_walk *gw = calloc(1, sizeof(*gw));

	if (!gw) {
		loader__nomem(ld);
		return;
	}
	gw->ld = ld;
	gw->gaps = &ld->doc->gaps;
	gw->nr_gaps = &ld->doc->nr_gaps;
	gw->gap_fields = &ld->doc->gap_fields;
	walk_gaps(gw, root);
	free(gw);
}

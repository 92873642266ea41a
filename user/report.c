// SPDX-License-Identifier: MIT
/* Loading a saved evidence document for `khbpf report`; see report.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "jscan.h"
#include "report_loader.h"

/* json-c's default nesting limit is 32; documents nest about 8 deep. */
#define REPORT_JSON_DEPTH 64
/* Room for a document of 1e6 spans at about 1 KiB each. */
#define REPORT_MAX_BYTES (UINT64_C(1) << 31)

const char *const report_stream_paths[NR_STREAMS] = {
	[STREAM_THREADS] = "threads",
	[STREAM_SPANS] = "events.spans",
	[STREAM_UTIL_THREADS] = "hardware.value.utilization.threads",
};

static struct json_object *parse_element(struct loader *ld, const struct jrange *r);

/*
 * Each element of stream id, parsed on its own and freed after fn; its gaps
 * are collected on the way. The number of elements, or 0 after a failure.
 */
size_t loader__stream_each(struct loader *ld, enum stream_id id,
			   void (*fn)(struct loader *ld, struct json_object *o, size_t idx,
				      void *arg),
			   void *arg)
{
	struct stream *st = &ld->streams[id];
	struct jrange e;
	size_t pos = 0, n = 0;
	int r;

	while (!ld->failed && (r = jscan__next(ld->text, &st->range, &pos, &e)) == 1) {
		struct json_object *o = parse_element(ld, &e);

		if (!o)
			return 0;
		if (fn)
			fn(ld, o, n, arg);
		loader__walk_element_gaps(ld, id, o, n);
		json_object_put(o);
		n++;
	}
	if (r < 0 && !ld->failed) {
		ld->element_not_json = true;
		ld->failed = -EINVAL;
	}
	return ld->failed ? 0 : n;
}

size_t loader__stream_count(struct loader *ld, enum stream_id id)
{
	struct stream *st = &ld->streams[id];
	struct jrange e;
	size_t pos = 0, n = 0;
	int r;

	while ((r = jscan__next(ld->text, &st->range, &pos, &e)) == 1)
		n++;
	if (r < 0) {
		ld->element_not_json = true;
		ld->failed = -EINVAL;
		return 0;
	}
	return n;
}

/* ---- loading ---- */

static void line_col(const char *text, size_t off, size_t *line, size_t *col)
{
	size_t i;

	*line = 1;
	*col = 1;
	for (i = 0; i < off; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

static int parse_json(const char *text, size_t len, struct json_object **root, char *err,
		      size_t errlen)
{
	struct json_tokener *tok;
	enum json_tokener_error jerr;
	size_t end, line, col;
	int ret = 0;

	*root = NULL;
	if (len > INT32_MAX) {
		snprintf(err, errlen, "is too large to read (%zu bytes)", len);
		return -EFBIG;
	}
	tok = json_tokener_new_ex(REPORT_JSON_DEPTH);
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	*root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_success) {
		while (end < len && strchr(" \t\r\n", text[end]))
			end++;
		if (end < len)
			jerr = json_tokener_error_parse_unexpected;
	}
	if (jerr != json_tokener_success) {
		if (jerr == json_tokener_continue)
			snprintf(err, errlen, "is not JSON: it ends in the middle of a value");
		else {
			line_col(text, end < len ? end : len, &line, &col);
			snprintf(err, errlen, "is not JSON: %s at line %zu, column %zu",
				 json_tokener_error_desc(jerr), line, col);
		}
		json_object_put(*root);
		*root = NULL;
		ret = -EINVAL;
	}
	json_tokener_free(tok);
	return ret;
}

static int check_schema(struct json_object *root, char *err, size_t errlen)
{
	struct json_object *s, *v, *major;
	const char *want =
		"expected an evidence document written by 'khbpf run -o' or 'khbpf attach -o'";

	if (!json_object_is_type(root, json_type_object)) {
		snprintf(err, errlen, "is not a khbpf evidence document (not a JSON object); %s",
			 want);
		return -EPROTO;
	}
	if (!json_object_object_get_ex(root, "schema", &s)) {
		snprintf(err, errlen, "is not a khbpf evidence document (no \"schema\" field); %s",
			 want);
		return -EPROTO;
	}
	if (!json_object_is_type(s, json_type_string) ||
	    strcmp(json_object_get_string(s), "khbpf-evidence")) {
		snprintf(
			err, errlen,
			"is not a khbpf evidence document (\"schema\" is %.64s, not \"khbpf-evidence\"); %s",
			json_object_to_json_string(s), want);
		return -EPROTO;
	}
	if (!json_object_object_get_ex(root, "schema_version", &v) ||
	    !json_object_object_get_ex(v, "major", &major) ||
	    !json_object_is_type(major, json_type_int)) {
		snprintf(err, errlen, "has no schema_version.major; %s", want);
		return -EPROTO;
	}
	if (json_object_get_int64(major) != REPORT_SCHEMA_MAJOR) {
		snprintf(
			err, errlen,
			"is schema version %.32s.x; this khbpf reads version %d.x: use the khbpf that wrote it",
			json_object_get_string(major), REPORT_SCHEMA_MAJOR);
		return -EPROTO;
	}
	return 0;
}

/* One element of a streamed array, exactly its bytes; NULL when it is not JSON. */
static struct json_object *parse_element(struct loader *ld, const struct jrange *r)
{
	struct json_tokener *tok = json_tokener_new_ex(REPORT_JSON_DEPTH);
	struct json_object *o = NULL;

	if (!tok) {
		loader__nomem(ld);
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, ld->text + r->begin, (int)(r->end - r->begin));
	if (json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != r->end - r->begin) {
		json_object_put(o);
		o = NULL;
		ld->element_not_json = true;
		if (!ld->failed)
			ld->failed = -EINVAL;
	}
	json_tokener_free(tok);
	return o;
}

/*
 * The text with each streamed array replaced by [], to parse as the tree;
 * NULL (and no stream on) when none is found, or the text is not well
 * formed where the scan went (the whole parse then says where).
 */
static char *skeleton(struct loader *ld, const char *text, size_t len, size_t *out_len)
{
	struct jrange r[NR_STREAMS];
	int k, j, order[NR_STREAMS], n = 0;
	size_t at = 0, o = 0;
	char *sk;

	for (k = 0; k < NR_STREAMS; k++) {
		if (jscan__member(text, len, report_stream_paths[k], &r[k]) ||
		    text[r[k].begin] != '[')
			continue;
		/* In text order, for the copy below (streams never nest). */
		for (j = n; j > 0 && r[order[j - 1]].begin > r[k].begin; j--)
			order[j] = order[j - 1];
		order[j] = k;
		n++;
	}
	if (!n)
		return NULL;
	sk = malloc(len + 1);
	if (!sk)
		return NULL;
	for (j = 0; j < n; j++) {
		k = order[j];
		memcpy(sk + o, text + at, r[k].begin - at);
		o += r[k].begin - at;
		memcpy(sk + o, "[]", 2);
		o += 2;
		at = r[k].end;
		ld->streams[k].on = true;
		ld->streams[k].range = r[k];
	}
	memcpy(sk + o, text + at, len - at);
	o += len - at;
	sk[o] = '\0';
	*out_len = o;
	return sk;
}

/* The tree's stand-in for each streamed array, found by its path. */
static void find_placeholders(struct loader *ld, struct json_object *root)
{
	int k;

	for (k = 0; k < NR_STREAMS; k++) {
		struct json_object *o = root;
		char path[64], *key, *save = NULL;

		if (!ld->streams[k].on)
			continue;
		snprintf(path, sizeof(path), "%s", report_stream_paths[k]);
		for (key = strtok_r(path, ".", &save); key && o; key = strtok_r(NULL, ".", &save))
			if (!json_object_is_type(o, json_type_object) ||
			    !json_object_object_get_ex(o, key, &o))
				o = NULL;
		ld->streams[k].placeholder = o;
		if (!o || !json_object_is_type(o, json_type_array))
			ld->streams[k].on = false; /* then it was never taken out: cannot be */
	}
}

static void free_streams(struct loader *ld)
{
	size_t i;
	int k;

	for (k = 0; k < NR_STREAMS; k++) {
		for (i = 0; i < ld->streams[k].nr_gaps; i++) {
			free(ld->streams[k].gaps[i].path);
			free(ld->streams[k].gaps[i].pattern);
		}
		free(ld->streams[k].gaps);
	}
}

static int load_string(const char *text, size_t len, bool stream, struct report_doc **out,
		       char *err, size_t errlen);

int report_doc__load_string(const char *text, size_t len, struct report_doc **out, char *err,
			    size_t errlen)
{
	int ret = load_string(text, len, true, out, err, errlen);

	/* Not JSON somewhere: the whole parse names the place, as always. */
	if (ret == -EAGAIN)
		ret = load_string(text, len, false, out, err, errlen);
	return ret;
}

static int load_string(const char *text, size_t len, bool stream, struct report_doc **out,
		       char *err, size_t errlen)
{
	struct loader ld = { .err = err, .errlen = errlen };
	struct json_object *root;
	struct report_doc *d;
	size_t sk_len = 0;
	char *sk = NULL;
	int ret;

	*out = NULL;
	if (stream && len <= INT32_MAX)
		sk = skeleton(&ld, text, len, &sk_len);
	ret = sk ? parse_json(sk, sk_len, &root, err, errlen) :
		   parse_json(text, len, &root, err, errlen);
	free(sk);
	if (ret && sk) {
		free_streams(&ld);
		return -EAGAIN;
	}
	if (ret)
		return ret;
	if (sk) {
		ld.text = text;
		find_placeholders(&ld, root);
	}
	ret = check_schema(root, err, errlen);
	if (ret) {
		json_object_put(root);
		return ret;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		json_object_put(root);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	d->root = root;
	ld.doc = d;
	loader__load_sections(&ld, root);
	if (ld.streams[STREAM_UTIL_THREADS].on)
		loader__stream_each(&ld, STREAM_UTIL_THREADS, NULL, NULL);
	if (!ld.failed) {
		ret = report_doc__layout(d);
		if (ret)
			ld.failed = ret;
		if (ret == -ENOMEM)
			snprintf(err, errlen, "out of memory");
	}
	if (!ld.failed)
		loader__walk_gaps(&ld, root);
	free_streams(&ld);
	if (ld.failed) {
		report_doc__free(d);
		return ld.element_not_json ? -EAGAIN : ld.failed;
	}
	*out = d;
	return 0;
}

int report_doc__load_file(const char *path, struct report_doc **doc, char *err, size_t errlen)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *nb;
	struct stat st;
	FILE *f;
	int ret;

	*doc = NULL;
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "cannot be read: %s", strerror(-ret));
		return ret;
	}
	if (fstat(fileno(f), &st)) {
		ret = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		snprintf(err, errlen, "cannot be read: %s",
			 ret == -EISDIR ? strerror(EISDIR) : "not a regular file");
		goto cleanup_msg;
	}
	/* The size may change under us: read to EOF, not to st_size. */
	cap = (size_t)st.st_size + 1;
	for (;;) {
		if (cap > REPORT_MAX_BYTES) {
			snprintf(err, errlen, "is too large to read (more than %" PRIu64 " bytes)",
				 REPORT_MAX_BYTES);
			ret = -EFBIG;
			goto cleanup_msg;
		}
		nb = realloc(buf, cap);
		if (!nb) {
			ret = -ENOMEM;
			goto cleanup;
		}
		buf = nb;
		len += fread(buf + len, 1, cap - len, f);
		if (len < cap)
			break;
		cap *= 2;
	}
	if (ferror(f)) {
		ret = -EIO;
		goto cleanup;
	}
	ret = report_doc__load_string(buf, len, doc, err, errlen);
	goto cleanup_msg;

cleanup:
	snprintf(err, errlen, "cannot be read: %s", strerror(-ret));
cleanup_msg:
	free(buf);
	fclose(f);
	return ret;
}

void report_doc__free(struct report_doc *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->nr_threads; i++)
		free(d->threads[i].rq.buckets);
	for (i = 0; i < d->nr_metrics; i++)
		free(d->metrics[i].hist);
	for (i = 0; i < d->nr_gaps; i++) {
		free(d->gaps[i].path);
		free(d->gaps[i].pattern);
	}
	free(d->rq.buckets);
	free(d->freq);
	free(d->collectors);
	free(d->threads);
	free(d->spans);
	free(d->metrics);
	free(d->failed_probes);
	free(d->losses);
	free(d->gaps);
	for (i = 0; i < d->nr_owned; i++)
		free(d->owned[i]);
	free(d->owned);
	json_object_put(d->root);
	free(d);
}

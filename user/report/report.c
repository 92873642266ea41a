// SPDX-License-Identifier: MIT
/* Loading a saved evidence document for `khbpf report`; see report.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#include "lib/fsutil.h"
#include "lib/jscan.h"
#include "report/report.h"
#include "report/report_loader.h"

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

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
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
	/* As the loader reads it: an array is not read past its first byte. */
	for (end = 0; end < len && blank(text[end]); end++)
		;
	if (end < len && text[end] == '[') {
		json_tokener_free(tok);
		return 0;
	}
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
	if (json_object_is_type(s, json_type_string) &&
	    !strcmp(json_object_get_string(s), "khbpf-evidence-keyhog")) {
		snprintf(
			err, errlen,
			"is a keyhog rendering (--keyhog), not the document; give the document it was made from");
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

static void free_loader(struct loader *ld)
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
	free(ld->marks);
	loader__thread_index_free(&ld->threads);
}

/*
 * The tree (the caller's no more) into a new *out: every section, the
 * layout, the gaps. text has gone over the whole document (its integer
 * literals json-c may have clamped).
 */
static int load_tree(struct loader *ld, struct json_object *root, struct jscan *text,
		     struct report_doc **out)
{
	struct report_doc *d;
	int ret;

	ret = check_schema(root, ld->err, ld->errlen);
	if (ret) {
		json_object_put(root);
		return ld->failed = ret;
	}
	if (loader__check_range(ld, text)) {
		json_object_put(root);
		return ld->failed;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		json_object_put(root);
		return loader__nomem(ld);
	}
	d->root = root;
	d->spans_summarized = ld->span_summary;
	ld->doc = d;
	loader__load_sections(ld, root);
	if (ld->streams[STREAM_UTIL_THREADS].on)
		loader__stream_each(ld, STREAM_UTIL_THREADS, NULL, NULL);
	if (!ld->failed) {
		ret = ld->span_summary ? loader__layout_marks(d, ld->marks, ld->nr_marks) :
					 report_doc__layout(d);
		if (ret)
			loader__nomem(ld);
	}
	if (!ld->failed)
		loader__walk_gaps(ld, root);
	if (ld->failed) {
		report_doc__free(d);
		ld->doc = NULL;
		return ld->failed;
	}
	*out = d;
	return 0;
}

static bool streamed(const struct loader *ld)
{
	int k;

	for (k = 0; k < NR_STREAMS; k++)
		if (ld->streams[k].on)
			return true;
	return false;
}

/* The document the cursor reads, its large arrays a piece at a time. */
static int load_scan(struct jscan *scan, const struct report_load_opts *opts,
		     struct report_doc **out, char *err, size_t errlen)
{
	struct loader ld = { .err = err, .errlen = errlen, .scan = scan };
	struct json_object *root;
	int ret;

	ld.span_summary = opts && opts->span_summary;
	ld.outline_max = opts ? opts->outline_max : 0;
	ld.element_max = opts ? opts->element_max : 0;
	ret = loader__outline(&ld, &root);
	if (!ret) {
		loader__find_placeholders(&ld, root);
		ret = load_tree(&ld, root, scan, out);
	}
	/*
	 * Not JSON comes first, as in a parse of the whole text: an element
	 * that does not parse, one after a field found wrong, or one of an
	 * array given again.
	 */
	if (ld.not_json)
		loader__not_json(&ld);
	else if ((ret == -EPROTO && streamed(&ld)) ||
		 ((!ret || ret == -EPROTO) && ld.arrays_unread))
		loader__check_json(&ld);
	if (!ret && ld.failed) {
		report_doc__free(*out);
		*out = NULL;
	}
	ret = ld.failed;
	free_loader(&ld);
	return ret;
}

int report_doc__load_string_opts(const char *text, size_t len, struct report_doc **out,
				 const struct report_load_opts *opts, char *err, size_t errlen)
{
	struct loader ld = { .err = err, .errlen = errlen };
	struct json_object *root;
	struct jscan *scan;
	int ret;

	*out = NULL;
	if (!(opts && opts->whole)) {
		ret = jscan__from_mem(text, len, &scan);
		if (ret) {
			snprintf(err, errlen, "out of memory");
			return ret;
		}
		ret = load_scan(scan, opts, out, err, errlen);
		jscan__free(scan);
		return ret;
	}
	ret = parse_json(text, len, &root, err, errlen);
	if (ret)
		return ret;
	/* The integers json-c clamped, found in the text as the loader finds them. */
	ret = jscan__from_mem(text, len, &scan);
	if (ret) {
		json_object_put(root);
		snprintf(err, errlen, "out of memory");
		return ret;
	}
	if (root)
		jscan__skip_value(scan);
	ld.span_summary = opts->span_summary;
	ret = load_tree(&ld, root, scan, out);
	jscan__free(scan);
	free_loader(&ld);
	return ret;
}

int report_doc__load_string(const char *text, size_t len, struct report_doc **out, char *err,
			    size_t errlen)
{
	return report_doc__load_string_opts(text, len, out, NULL, err, errlen);
}

int report_doc__load_fd(int fd, struct report_doc **out, const struct report_load_opts *opts,
			char *err, size_t errlen)
{
	struct jscan *scan;
	int ret;

	*out = NULL;
	ret = jscan__from_fd(fd, &scan);
	if (ret) {
		snprintf(err, errlen, "out of memory");
		return ret;
	}
	ret = load_scan(scan, opts, out, err, errlen);
	jscan__free(scan);
	return ret;
}

int report_doc__load_file_opts(const char *path, struct report_doc **doc,
			       const struct report_load_opts *opts, char *err, size_t errlen)
{
	struct stat st;
	int fd, ret;

	*doc = NULL;
	/* Never waits: a FIFO is refused, not read (it is read again and again, by pread). */
	fd = fsutil__open_regular(path, &st);
	if (fd == -EISDIR || fd == -EINVAL) {
		snprintf(err, errlen,
			 "cannot be read: it is %s, not a regular file; give a document file",
			 fsutil__file_kind(st.st_mode));
		return fd;
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot be read: %s", strerror(-fd));
		return fd;
	}
	/* Read a piece at a time, each pass to the end: never whole in memory. */
	ret = report_doc__load_fd(fd, doc, opts, err, errlen);
	close(fd);
	return ret;
}

int report_doc__load_file(const char *path, struct report_doc **doc, char *err, size_t errlen)
{
	return report_doc__load_file_opts(path, doc, NULL, err, errlen);
}

void report_doc__free(struct report_doc *d)
{
	size_t i, j;

	if (!d)
		return;
	for (i = 0; i < d->nr_threads; i++) {
		free(d->threads[i].rq.buckets);
		free(d->threads[i].blocked.wakers);
	}
	for (i = 0; i < d->nr_metrics; i++) {
		free(d->metrics[i].hist);
		free(d->metrics[i].blocked.wakers);
		for (j = 0; j < d->metrics[i].nr_keys; j++) {
			free(d->metrics[i].keys[j].hist);
			free(d->metrics[i].keys[j].blocked.wakers);
		}
		free(d->metrics[i].keys);
	}
	free(d->blocked.wakers);
	for (i = 0; d->spans && i < d->nr_spans; i++)
		free(d->spans[i].ledger.wakers);
	for (i = 0; i < d->nr_gaps; i++) {
		free(d->gaps[i].path);
		free(d->gaps[i].pattern);
	}
	free(d->rq.buckets);
	free(d->freq);
	free(d->collectors);
	free(d->threads);
	free(d->processes);
	free(d->spans);
	free(d->metrics);
	free(d->failed_probes);
	free(d->usdt);
	free(d->losses);
	free(d->gaps);
	for (i = 0; i < d->nr_owned; i++)
		free(d->owned[i]);
	free(d->owned);
	json_object_put(d->root);
	free(d);
}

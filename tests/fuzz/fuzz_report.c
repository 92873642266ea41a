// SPDX-License-Identifier: MIT
/*
 * `khbpf report` on arbitrary bytes as the evidence document. Properties:
 *   - report_doc__load_string returns 0, -EINVAL (not JSON) or -EPROTO (not
 *     a document it reads); on failure no document and one line saying why
 *   - read a piece at a time (the default) it loads, fails, and says why
 *     exactly as when the text is parsed whole; with the spans summarized
 *     the terminal report is the same as with them kept
 *   - a document it loads renders: the terminal report as valid UTF-8
 *     without control bytes but '\n' (the document's strings cannot drive
 *     the terminal), an HTML page that is valid UTF-8, and a trace that is
 *     valid UTF-8 JSON which json-c parses whole; the page has
 *     no script and no control bytes but HTML's whitespace (tab, CR, LF),
 *     whatever the strings
 *   - the keyhog rendering of the same bytes fails as the load does when
 *     they are not JSON; otherwise it is made (or refused with -EPROTO and
 *     one line) as valid UTF-8 JSON that json-c parses whole, named
 *     khbpf-evidence-keyhog, whose every SourcedEvidence has one of the
 *     crate's sources
 */
#include <errno.h>
#include <sys/mman.h>
#include <json-c/json.h>

#include "fuzz.h"
#include "report/report.h"

static char *text_of(const struct report_doc *doc, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	FUZZ_CHECK(f);
	FUZZ_CHECK(report__text(doc, f) == 0);
	FUZZ_CHECK(!fclose(f));
	return text;
}

static void check_text(const struct report_doc *doc)
{
	size_t len = 0, i;
	char *text = text_of(doc, &len);

	FUZZ_CHECK(fuzz_utf8_valid(text, len));
	for (i = 0; i < len; i++)
		FUZZ_CHECK(((unsigned char)text[i] >= 0x20 && text[i] != 0x7f) || text[i] == '\n');
	free(text);
}

/* The same bytes parsed whole, and read with the spans summarized. */
static void check_ways(const uint8_t *data, size_t size, int ret, const char *err,
		       const struct report_doc *doc)
{
	struct report_load_opts o = { .sz = sizeof(o), .whole = true };
	struct report_doc *other = NULL;
	char err2[512] = "", *a, *b;
	size_t alen = 0, blen = 0;

	/* Which field a document khbpf cannot read is named for may differ: gaps come later. */
	FUZZ_CHECK(report_doc__load_string_opts((const char *)data, size, &other, &o, err2,
						sizeof(err2)) == ret);
	if (ret == -EINVAL)
		FUZZ_CHECK(!strcmp(err, err2));
	report_doc__free(other);
	if (ret)
		return;
	o = (struct report_load_opts){ .sz = sizeof(o), .span_summary = true };
	FUZZ_CHECK(report_doc__load_string_opts((const char *)data, size, &other, &o, err2,
						sizeof(err2)) == 0);
	a = text_of(doc, &alen);
	b = text_of(other, &blen);
	FUZZ_CHECK(alen == blen && !memcmp(a, b, alen));
	free(a);
	free(b);
	report_doc__free(other);
}

static void check_trace(const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;

	FUZZ_CHECK(tok);
	FUZZ_CHECK(fuzz_utf8_valid(text, len) && strlen(text) == len);
	o = json_tokener_parse_ex(tok, text, (int)len);
	FUZZ_CHECK(o && json_tokener_get_error(tok) == json_tokener_success);
	FUZZ_CHECK(json_tokener_get_parse_end(tok) == len);
	json_object_put(o);
	json_tokener_free(tok);
}

/* Every SourcedEvidence under o has a source of the crate's (the first 14 of evidence.h). */
static void check_crate_sources(struct json_object *o)
{
	struct json_object *src, *v;
	size_t i;
	int k;
	bool crate = false;

	if (json_object_is_type(o, json_type_array)) {
		for (i = 0; i < json_object_array_length(o); i++)
			check_crate_sources(json_object_array_get_idx(o, i));
		return;
	}
	if (!json_object_is_type(o, json_type_object))
		return;
	if (json_object_object_get_ex(o, "source", &src) &&
	    json_object_is_type(src, json_type_string) &&
	    json_object_object_get_ex(o, "value", &v) && json_object_is_type(v, json_type_object) &&
	    json_object_object_get_ex(v, "status", NULL)) {
		for (k = 0; k < EV_SRC_BPF_TRACEPOINT; k++)
			crate = crate || !strcmp(json_object_get_string(src), ev_source__name(k));
		FUZZ_CHECK(crate);
	}
	json_object_object_foreach(o, key, val) {
		(void)key;
		check_crate_sources(val);
	}
}

static void check_keyhog(const uint8_t *data, size_t size, int load_ret)
{
	int in = memfd_create("doc", MFD_CLOEXEC), out = memfd_create("keyhog", MFD_CLOEXEC), ret;
	struct json_object *o, *s;
	char err[512] = "", *text;
	off_t len;

	FUZZ_CHECK(in >= 0 && out >= 0);
	FUZZ_CHECK(write(in, data, size) == (ssize_t)size);
	ret = report__keyhog(in, out, err, sizeof(err));
	if (load_ret == -EINVAL)
		FUZZ_CHECK(ret == -EINVAL);
	FUZZ_CHECK(ret == 0 || ret == -EINVAL || ret == -EPROTO);
	if (ret) {
		FUZZ_CHECK(err[0] && !strchr(err, '\n'));
	} else {
		len = lseek(out, 0, SEEK_END);
		FUZZ_CHECK(len > 0);
		text = malloc((size_t)len + 1);
		FUZZ_CHECK(text && pread(out, text, (size_t)len, 0) == len);
		text[len] = '\0';
		check_trace(text, (size_t)len);
		o = json_tokener_parse(text);
		FUZZ_CHECK(json_object_object_get_ex(o, "schema", &s) &&
			   !strcmp(json_object_get_string(s), "khbpf-evidence-keyhog"));
		check_crate_sources(o);
		json_object_put(o);
		free(text);
	}
	close(in);
	close(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct report_doc *doc = (struct report_doc *)1;
	char err[512], *html = NULL, *trace = NULL;
	size_t html_len = 0, trace_len = 0;
	int ret;

	memset(err, 0, sizeof(err));
	ret = report_doc__load_string((const char *)data, size, &doc, err, sizeof(err));
	FUZZ_CHECK(ret == 0 || ret == -EINVAL || ret == -EPROTO);
	check_ways(data, size, ret, err, ret ? NULL : doc);
	check_keyhog(data, size, ret);
	if (ret) {
		FUZZ_CHECK(!doc);
		FUZZ_CHECK(err[0] && !strchr(err, '\n'));
		return 0;
	}
	FUZZ_CHECK(doc);
	check_text(doc);
	FUZZ_CHECK(report__html(doc, &html, &html_len) == 0);
	FUZZ_CHECK(fuzz_utf8_valid(html, html_len) && strlen(html) == html_len);
	FUZZ_CHECK(!strcasestr(html, "<script"));
	for (size_t i = 0; i < html_len; i++)
		FUZZ_CHECK(((unsigned char)html[i] >= 0x20 && html[i] != 0x7f) || html[i] == '\n' ||
			   html[i] == '\t' || html[i] == '\r');
	FUZZ_CHECK(report__trace(doc, &trace, &trace_len) == 0);
	check_trace(trace, trace_len);
	free(html);
	free(trace);
	report_doc__free(doc);
	return 0;
}

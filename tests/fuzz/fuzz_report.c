// SPDX-License-Identifier: MIT
/*
 * `khbpf report` on arbitrary bytes as the evidence document. Properties:
 *   - report_doc__load_string returns 0, -EINVAL (not JSON) or -EPROTO (not
 *     a document it reads); on failure no document and one line saying why
 *   - a document it loads renders: the terminal report as valid UTF-8
 *     without control bytes but '\n' (the document's strings cannot drive
 *     the terminal), an HTML page that is valid UTF-8, and a trace that is
 *     valid UTF-8 JSON which json-c parses whole; the page has
 *     no script and no control bytes but HTML's whitespace (tab, CR, LF),
 *     whatever the strings
 */
#include <errno.h>
#include <json-c/json.h>

#include "fuzz.h"
#include "report.h"

static void check_text(const struct report_doc *doc)
{
	char *text = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&text, &len);

	FUZZ_CHECK(f);
	FUZZ_CHECK(report__text(doc, f) == 0);
	FUZZ_CHECK(!fclose(f));
	FUZZ_CHECK(fuzz_utf8_valid(text, len));
	for (i = 0; i < len; i++)
		FUZZ_CHECK(((unsigned char)text[i] >= 0x20 && text[i] != 0x7f) || text[i] == '\n');
	free(text);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct report_doc *doc = (struct report_doc *)1;
	char err[512], *html = NULL, *trace = NULL;
	size_t html_len = 0, trace_len = 0;
	int ret;

	memset(err, 0, sizeof(err));
	ret = report_doc__load_string((const char *)data, size, &doc, err, sizeof(err));
	FUZZ_CHECK(ret == 0 || ret == -EINVAL || ret == -EPROTO);
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

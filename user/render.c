// SPDX-License-Identifier: MIT
/* One document, every renderer: what `report` and `run`/`attach` print. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "cli.h"
#include "output.h"
#include "render.h"
#include "report.h"

static bool to_stdout(const char *path)
{
	return path && !strcmp(path, "-");
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int render__check(const struct render_opts *o, bool json_stdout)
{
	if (o->html && o->perfetto && !to_stdout(o->html) &&
	    (!strcmp(o->html, o->perfetto) || same_file(o->html, o->perfetto))) {
		cli__error(o->cmd,
			   "--html and --perfetto name the same file '%s'; give each its own",
			   o->html);
		return CLI_EXIT_USAGE;
	}
	if (json_stdout + o->text + to_stdout(o->html) + to_stdout(o->perfetto) > 1) {
		cli__error(o->cmd,
			   "more than one output goes to stdout; give files to --html/--perfetto");
		return CLI_EXIT_USAGE;
	}
	if (o->html && !to_stdout(o->html) && cli__check_output_path(o->cmd, "--html", o->html))
		return CLI_EXIT_FAILURE;
	if (o->perfetto && !to_stdout(o->perfetto) &&
	    cli__check_output_path(o->cmd, "--perfetto", o->perfetto))
		return CLI_EXIT_FAILURE;
	return 0;
}

static int write_out(const struct render_opts *o, const char *opt, const char *path,
		     const char *buf, size_t len)
{
	struct output_opts oopts = { .sz = sizeof(oopts) };
	int err;

	if (o->private_out)
		oopts.mode = OUTPUT_MODE_PRIVATE;
	if (to_stdout(path)) {
		if (fwrite(buf, 1, len, stdout) != len || fflush(stdout)) {
			cli__error(o->cmd, "%s: cannot write to stdout: %s", opt, strerror(errno));
			return CLI_EXIT_FAILURE;
		}
		return 0;
	}
	err = output__write_file(path, buf, len, &oopts);
	if (err) {
		cli__error(o->cmd,
			   "%s '%s': cannot write: %s; check the directory exists and is writable",
			   opt, path, strerror(-err));
		return CLI_EXIT_FAILURE;
	}
	return 0;
}

int render__outputs(const struct report_doc *doc, const struct render_opts *o)
{
	char *html_buf = NULL, *trace_buf = NULL;
	size_t html_len = 0, trace_len = 0;
	int ret = 0;

	if ((o->html && report__html(doc, &html_buf, &html_len)) ||
	    (o->perfetto && report__trace(doc, &trace_buf, &trace_len))) {
		cli__error(o->cmd, "out of memory rendering the document");
		ret = CLI_EXIT_FAILURE;
		goto cleanup;
	}
	if (o->html && (ret = write_out(o, "--html", o->html, html_buf, html_len)))
		goto cleanup;
	if (o->perfetto && (ret = write_out(o, "--perfetto", o->perfetto, trace_buf, trace_len)))
		goto cleanup;
	if (o->text && (report__text(doc, stdout) || fflush(stdout))) {
		cli__error(o->cmd, "cannot write the report to stdout: %s", strerror(errno));
		ret = CLI_EXIT_FAILURE;
	}
cleanup:
	free(html_buf);
	free(trace_buf);
	return ret;
}

int render__json(struct json_object *doc, const struct render_opts *o)
{
	struct report_doc *rd = NULL;
	char err[512] = "";
	const char *text;
	size_t len;
	int ret;

	text = json_object_to_json_string_length(doc, JSON_C_TO_STRING_PLAIN, &len);
	/* NULL: an element of a lazily built array could not be made (evjson). */
	if (!text) {
		cli__error(o->cmd, "out of memory rendering the document");
		return CLI_EXIT_FAILURE;
	}
	/* Exactly what `khbpf report` reads back from the file written with -o. */
	ret = report_doc__load_string(text, len, &rd, err, sizeof(err));
	if (ret) {
		cli__error(o->cmd, "the document it made does not load: %s", err);
		return CLI_EXIT_FAILURE;
	}
	ret = render__outputs(rd, o);
	report_doc__free(rd);
	return ret;
}

// SPDX-License-Identifier: MIT
/* One document, every renderer: what `report` and `run`/`attach` print. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cmd/cli.h"
#include "lib/jsonstream.h"
#include "lib/output.h"
#include "cmd/render.h"
#include "report/report.h"

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

struct trace_fill {
	const struct report_doc *doc;
	int err; /* the trace's own: it could not be made */
};

/* The trace into the output's file as it is made, through a stdio buffer. */
static int fill_trace(int fd, void *ctx)
{
	struct trace_fill *tf = ctx;
	int dfd = dup(fd), err;
	FILE *f = dfd >= 0 ? fdopen(dfd, "w") : NULL;

	if (!f) {
		err = -errno;
		if (dfd >= 0)
			close(dfd);
		return err;
	}
	tf->err = report__trace_write(tf->doc, f);
	/* A write that failed fails again in the last flush, which says why. */
	err = fclose(f) ? -errno : 0;
	if (tf->err && tf->err != -EIO)
		return tf->err;
	return err ? err : tf->err;
}

/*
 * The trace to its file, made as it is written (it is about 450 bytes a
 * span): a failure leaves no file, as output__write_with does.
 */
static int write_trace(const struct report_doc *doc, const struct render_opts *o)
{
	struct output_opts oopts = { .sz = sizeof(oopts) };
	struct trace_fill tf = { .doc = doc };
	int err;

	if (o->private_out)
		oopts.mode = OUTPUT_MODE_PRIVATE;
	err = output__write_with(o->perfetto, fill_trace, &tf, &oopts);
	if (tf.err == -ENOMEM) {
		cli__error(o->cmd, "out of memory rendering the document");
		return CLI_EXIT_FAILURE;
	}
	if (err) {
		cli__error(
			o->cmd,
			"--perfetto '%s': cannot write: %s; check the directory exists and is writable",
			o->perfetto, strerror(err == -EIO ? EIO : -err));
		return CLI_EXIT_FAILURE;
	}
	return 0;
}

int render__outputs(const struct report_doc *doc, const struct render_opts *o)
{
	char *html_buf = NULL, *trace_buf = NULL;
	size_t html_len = 0, trace_len = 0;
	bool trace_file = o->perfetto && !to_stdout(o->perfetto);
	int ret = 0;

	/* What goes to stdout is made whole first: a failure prints nothing. */
	if ((o->html && report__html(doc, &html_buf, &html_len)) ||
	    (o->perfetto && !trace_file && report__trace(doc, &trace_buf, &trace_len))) {
		cli__error(o->cmd, "out of memory rendering the document");
		ret = CLI_EXIT_FAILURE;
		goto cleanup;
	}
	if (trace_file && (ret = write_trace(doc, o)))
		goto cleanup;
	if (o->html && (ret = write_out(o, "--html", o->html, html_buf, html_len)))
		goto cleanup;
	if (o->perfetto && !trace_file &&
	    (ret = write_out(o, "--perfetto", o->perfetto, trace_buf, trace_len)))
		goto cleanup;
	if (o->text && (report__text_all(doc, stdout, o->all) || fflush(stdout))) {
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
	struct report_load_opts lo = { .sz = sizeof(lo) };
	struct report_doc *rd = NULL;
	char err[512] = "";
	const char *dir;
	int fd, ret;

	/*
	 * Exactly what `khbpf report` reads back from the file written with -o,
	 * read the same way: written to scratch space as it is made, read back
	 * a piece at a time, so that neither its text nor its records' trees
	 * are ever whole in memory.
	 */
	fd = output__scratch(&dir);
	if (fd < 0) {
		cli__error(
			o->cmd,
			"cannot make a temporary file in '%s' for the report: %s; set TMPDIR to a writable directory",
			dir, strerror(-fd));
		return CLI_EXIT_FAILURE;
	}
	ret = jsonstream__write(doc, JSON_C_TO_STRING_PLAIN, false, fd);
	/* ENOMEM: an element of a lazily built array could not be made (evjson). */
	if (ret == -ENOMEM) {
		cli__error(o->cmd, "out of memory rendering the document");
		goto cleanup;
	}
	if (ret) {
		cli__error(
			o->cmd,
			"cannot write the document for the report to a temporary file in '%s': %s; set TMPDIR to a directory with room",
			dir, strerror(-ret));
		goto cleanup;
	}
	/* The terminal report alone needs no span kept, only their counts. */
	lo.span_summary = !o->html && !o->perfetto;
	ret = report_doc__load_fd(fd, &rd, &lo, err, sizeof(err));
	if (ret) {
		cli__error(o->cmd, "the document it made does not load: %s", err);
		goto cleanup;
	}
	ret = render__outputs(rd, o);
	report_doc__free(rd);
	close(fd);
	return ret;
cleanup:
	close(fd);
	return CLI_EXIT_FAILURE;
}

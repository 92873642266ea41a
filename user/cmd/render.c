// SPDX-License-Identifier: MIT
/* One document, every renderer: what `report` and `run`/`attach` print. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cmd/cli.h"
#include "lib/fsutil.h"
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

/* Two of the outputs name one file. */
static bool clash(const char *a, const char *b)
{
	return a && b && !to_stdout(a) && !to_stdout(b) && (!strcmp(a, b) || same_file(a, b));
}

int render__check(const struct render_opts *o, bool json_stdout)
{
	const char *files[][2] = { { "--html", o->html },
				   { "--perfetto", o->perfetto },
				   { "--keyhog", o->keyhog } };
	size_t i, j;

	for (i = 0; i < 3; i++)
		for (j = i + 1; j < 3; j++)
			if (clash(files[i][1], files[j][1])) {
				cli__error(o->cmd,
					   "%s and %s name the same file '%s'; give each its own",
					   files[i][0], files[j][0], files[i][1]);
				return CLI_EXIT_USAGE;
			}
	if (json_stdout + o->text + to_stdout(o->html) + to_stdout(o->perfetto) +
		    to_stdout(o->keyhog) >
	    1) {
		cli__error(
			o->cmd,
			"more than one output goes to stdout; give files to --html/--perfetto/--keyhog");
		return CLI_EXIT_USAGE;
	}
	for (i = 0; i < 3; i++)
		if (files[i][1] && !to_stdout(files[i][1]) &&
		    cli__check_output_path(o->cmd, files[i][0], files[i][1]))
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

struct keyhog_fill {
	int in_fd;
	char err[512];
	int ret; /* report__keyhog's own */
};

static int fill_keyhog(int fd, void *ctx)
{
	struct keyhog_fill *kf = ctx;

	kf->ret = report__keyhog(kf->in_fd, fd, kf->err, sizeof(kf->err));
	return kf->ret;
}

/* Copies the whole of fd, from its start, to stdout. */
static int copy_to_stdout(int fd)
{
	char buf[1 << 16];
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			return -EIO;
	}
	return fflush(stdout) ? -errno : 0;
}

/*
 * --keyhog from the document in the regular file in_fd: to its file
 * whole or not at all; to stdout made whole in scratch space first, so a
 * failure prints nothing.
 */
static int write_keyhog(int in_fd, const struct render_opts *o)
{
	struct output_opts oopts = { .sz = sizeof(oopts) };
	struct keyhog_fill kf = { .in_fd = in_fd };
	const char *dir;
	int err, fd;

	if (o->private_out)
		oopts.mode = OUTPUT_MODE_PRIVATE;
	if (!to_stdout(o->keyhog)) {
		err = output__write_with(o->keyhog, fill_keyhog, &kf, &oopts);
	} else {
		fd = output__scratch(&dir);
		if (fd < 0) {
			cli__error(
				o->cmd,
				"--keyhog: cannot make a temporary file in '%s': %s; set TMPDIR to a writable directory",
				dir, strerror(-fd));
			return CLI_EXIT_FAILURE;
		}
		err = fill_keyhog(fd, &kf);
		if (!err && (err = copy_to_stdout(fd))) {
			close(fd);
			cli__error(o->cmd, "--keyhog: cannot write to stdout: %s", strerror(-err));
			return CLI_EXIT_FAILURE;
		}
		close(fd);
	}
	if (kf.ret) {
		cli__error(o->cmd, "--keyhog: the document %s", kf.err);
		return CLI_EXIT_FAILURE;
	}
	if (err) {
		cli__error(
			o->cmd,
			"--keyhog '%s': cannot write: %s; check the directory exists and is writable",
			o->keyhog, strerror(-err));
		return CLI_EXIT_FAILURE;
	}
	return 0;
}

/* A file to stdout goes last, after the files: it is the one that cannot be taken back. */
static int outputs_fd(const struct report_doc *doc, int in_fd, const struct render_opts *o)
{
	int ret = 0;

	if (o->keyhog && !to_stdout(o->keyhog) && (ret = write_keyhog(in_fd, o)))
		return ret;
	ret = render__outputs(doc, o);
	if (!ret && o->keyhog && to_stdout(o->keyhog))
		ret = write_keyhog(in_fd, o);
	return ret;
}

int render__file_outputs(const struct report_doc *doc, const char *path,
			 const struct render_opts *o)
{
	struct stat st;
	int fd, ret;

	if (!o->keyhog)
		return render__outputs(doc, o);
	fd = fsutil__open_regular(path, &st);
	if (fd < 0) {
		cli__error(o->cmd, "'%s': cannot open it again for --keyhog: %s", path,
			   fd == -EISDIR || fd == -EINVAL ? fsutil__file_kind(st.st_mode) :
							    strerror(-fd));
		return CLI_EXIT_FAILURE;
	}
	ret = outputs_fd(doc, fd, o);
	close(fd);
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
	ret = outputs_fd(rd, fd, o);
	report_doc__free(rd);
	close(fd);
	return ret;
cleanup:
	close(fd);
	return CLI_EXIT_FAILURE;
}

/* SPDX-License-Identifier: MIT */
/*
 * The renderers of one evidence document: the terminal report, HTML and
 * Perfetto, for `khbpf report FILE` and for `run`/`attach`, which render the
 * document they just made, so that both print the same thing.
 */
#ifndef KHBPF_RENDER_H
#define KHBPF_RENDER_H

#include <stdbool.h>
#include <stddef.h>

struct json_object;
struct report_doc;

struct render_opts {
	size_t sz; /* sizeof(struct render_opts) */
	const char *cmd; /* names the command in error lines */
	const char *html; /* --html FILE ("-": stdout), or NULL */
	const char *perfetto; /* --perfetto FILE ("-": stdout), or NULL */
	const char *keyhog; /* --keyhog FILE ("-": stdout), or NULL */
	bool text; /* the terminal report on stdout */
	bool all; /* ... with every process and thread (--all) */
	bool private_out; /* files get mode 0600 (--private), else 0644 */
};

/*
 * Up-front checks of the outputs asked for, before any work: at most one goes
 * to stdout (json_stdout: the caller writes the document there too), --html,
 * --perfetto and --keyhog are different files, and each path is one khbpf
 * may write.
 * 0, or a CLI exit code after one error line.
 */
int render__check(const struct render_opts *o, bool json_stdout);
/*
 * Render doc to every output asked for: the page and what goes to stdout
 * first, then the files (atomically; the trace made as its file is
 * written, so that it is never whole in memory), then stdout. A failure
 * leaves no file of its own behind and prints nothing. 0, or a CLI exit
 * code after one error line.
 */
int render__outputs(const struct report_doc *doc, const struct render_opts *o);
/*
 * render__outputs, and --keyhog from the document's file at path (what
 * doc was loaded from): the rendering is made from the file itself.
 */
int render__file_outputs(const struct report_doc *doc, const char *path,
			 const struct render_opts *o);
/*
 * The same for a document made in memory (a session's): written to scratch
 * space (output__scratch) and read back as `report` reads a file.
 */
int render__json(struct json_object *doc, const struct render_opts *o);

#endif /* KHBPF_RENDER_H */

// SPDX-License-Identifier: MIT
/* `khbpf report FILE.json [--html OUT.html] [--perfetto OUT.json] [--text]` */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cmdargs.h"
#include "output.h"
#include "report.h"

void cmd_report_help(FILE *f)
{
	fprintf(f,
		"Usage: khbpf report FILE.json [--html OUT.html] [--perfetto OUT.json] [--text]\n\n"
		"Show a saved evidence document (from 'khbpf run -o' or 'khbpf attach -o').\n"
		"Needs only the file: no BPF, no root, any host.\n\n"
		"Without --html or --perfetto, prints the terminal report: the run, a table of\n"
		"threads, the runqueue-delay histogram, span metrics by exclusive time, loss\n"
		"counters, and every gap with its reason and what to do about it.\n\n"
		"Options:\n"
		"      --html FILE      one self-contained HTML page (inline SVG, no scripts, no\n"
		"                       network): span timeline per thread, runqueue-delay\n"
		"                       histogram, on-CPU/runqueue/off-CPU bars, span table, gaps\n"
		"      --perfetto FILE  trace-event JSON: spans as complete events per thread,\n"
		"                       counters as counter tracks; opens in ui.perfetto.dev\n"
		"                       and chrome://tracing\n"
		"      --text           also print the terminal report when writing files\n"
		"  -h, --help           this help\n\n"
		"Files are written whole or not at all; '-' writes to stdout.\n\n"
		"Examples:\n"
		"  khbpf report run.json\n"
		"  khbpf report run.json --html run.html --perfetto run.trace.json\n"
		"  sudo khbpf run -o run.json -- ./my-server; khbpf report run.json --html run.html\n");
}

/* The input document itself must never be the one overwritten. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int check_out(const char *in, const char *opt, const char *path)
{
	if (same_file(in, path)) {
		cli__error("report", "%s '%s' is the input document; choose another path", opt,
			   path);
		return CLI_EXIT_USAGE;
	}
	return cli__check_output_path("report", opt, path) ? CLI_EXIT_FAILURE : 0;
}

static int write_out(const char *opt, const char *path, const char *buf, size_t len)
{
	struct output_opts oopts = { .sz = sizeof(oopts) };
	int err = output__write_file(path, buf, len, &oopts);

	if (err) {
		cli__error("report",
			   "%s '%s': cannot write: %s; check the directory exists and is writable",
			   opt, path, strerror(-err));
		return CLI_EXIT_FAILURE;
	}
	return 0;
}

int report_args__parse(int argc, char **argv, struct report_args *a)
{
	static const struct option opts[] = {
		{ "html", required_argument, NULL, 'H' },
		{ "perfetto", required_argument, NULL, 'P' },
		{ "text", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c;

	memset(a, 0, sizeof(*a));
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'H':
			a->html = optarg;
			break;
		case 'P':
			a->trace = optarg;
			break;
		case 'T':
			a->text = true;
			break;
		case 'h':
			a->help = true;
			return 0;
		default:
			return cli__bad_option("report", c, argv);
		}
	}
	if (optind >= argc) {
		cli__error(
			"report",
			"no document given; usage: khbpf report FILE.json [--html OUT.html] [--perfetto OUT.json]");
		return CLI_EXIT_USAGE;
	}
	a->in = argv[optind];
	if (optind + 1 < argc) {
		cli__error("report", "unexpected argument '%s'; run 'khbpf report --help'",
			   argv[optind + 1]);
		return CLI_EXIT_USAGE;
	}
	return 0;
}

int cmd_report(int argc, char **argv)
{
	const char *in, *html, *trace;
	char *html_buf = NULL, *trace_buf = NULL;
	size_t html_len = 0, trace_len = 0;
	struct report_doc *doc = NULL;
	struct report_args a;
	char err[512] = "";
	bool text;
	int ret;

	ret = report_args__parse(argc, argv, &a);
	if (ret || a.help) {
		if (a.help)
			cmd_report_help(stdout);
		return ret;
	}
	in = a.in;
	html = a.html;
	trace = a.trace;
	text = a.text;
	if (html && trace && (!strcmp(html, trace) || same_file(html, trace))) {
		cli__error("report",
			   "--html and --perfetto name the same file '%s'; give each its own",
			   html);
		return CLI_EXIT_USAGE;
	}
	if ((text || !(html || trace)) + (html && !strcmp(html, "-")) +
		    (trace && !strcmp(trace, "-")) >
	    1) {
		cli__error("report",
			   "more than one output goes to stdout; give files to --html/--perfetto");
		return CLI_EXIT_USAGE;
	}
	if (html && (ret = check_out(in, "--html", html)))
		return ret;
	if (trace && (ret = check_out(in, "--perfetto", trace)))
		return ret;

	ret = report_doc__load_file(in, &doc, err, sizeof(err));
	if (ret) {
		cli__error("report", "'%s' %s", in, err);
		return CLI_EXIT_FAILURE;
	}
	/* Render everything first: a failure then leaves no file behind. */
	if ((html && report__html(doc, &html_buf, &html_len)) ||
	    (trace && report__trace(doc, &trace_buf, &trace_len))) {
		cli__error("report", "out of memory rendering '%s'", in);
		ret = CLI_EXIT_FAILURE;
		goto cleanup;
	}
	if (html && (ret = write_out("--html", html, html_buf, html_len)))
		goto cleanup;
	if (trace && (ret = write_out("--perfetto", trace, trace_buf, trace_len)))
		goto cleanup;
	if (text || !(html || trace)) {
		if (report__text(doc, stdout) || fflush(stdout)) {
			cli__error("report", "cannot write the report to stdout: %s",
				   strerror(errno));
			ret = CLI_EXIT_FAILURE;
		}
	}

cleanup:
	free(html_buf);
	free(trace_buf);
	report_doc__free(doc);
	return ret;
}

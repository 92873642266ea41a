// SPDX-License-Identifier: MIT
/* `khbpf report FILE.json [--html OUT.html] [--perfetto OUT.json] [--keyhog OUT.json] [--text]` */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cli.h"
#include "cmd/cmdargs.h"
#include "cmd/render.h"
#include "report/report.h"

void cmd_report_help(FILE *f)
{
	fprintf(f,
		"Usage: khbpf report FILE.json [--html OUT.html] [--perfetto OUT.json]\n"
		"                    [--keyhog OUT.json] [--text] [--all]\n\n"
		"Show a saved evidence document (from 'khbpf run -o' or 'khbpf attach -o').\n"
		"Needs only the file: no BPF, no root, any host.\n\n"
		"Without --html, --perfetto or --keyhog, prints the terminal report: first the\n"
		"answer (the totals, keys that overflowed, the busiest processes by title, the\n"
		"slowest metrics or keys and where their time went), then the processes\n"
		"(busiest first) and their threads, the runqueue-delay histogram, span metrics\n"
		"by exclusive time, keys by inclusive time, loss counters, and every gap with\n"
		"its reason and what to do about it.\n\n"
		"Options:\n"
		"      --html FILE      one self-contained HTML page (inline SVG, no scripts, no\n"
		"                       network): the same answer first, span timeline per\n"
		"                       thread, runqueue-delay\n"
		"                       histogram, on-CPU/runqueue/off-CPU bars, span table with\n"
		"                       where each metric's time went, process tree, threads,\n"
		"                       blocked time and wakers, gaps\n"
		"      --perfetto FILE  trace-event JSON: a process track per process, spans as\n"
		"                       complete events per thread,\n"
		"                       counters as counter tracks; opens in ui.perfetto.dev\n"
		"                       and chrome://tracing\n"
		"      --keyhog FILE    the document in the keyhog-profile crate's vocabulary:\n"
		"                       its sources, collectors and span metric names only,\n"
		"                       khbpf's own beside them (docs/evidence.md section 11)\n"
		"      --text           also print the terminal report when writing files\n"
		"      --all            every process and its threads in the terminal report,\n"
		"                       not the 20 busiest\n"
		"  -h, --help           this help\n\n"
		"Files are written whole or not at all; '-' writes to stdout.\n\n"
		"Examples:\n"
		"  khbpf report run.json\n"
		"  khbpf report run.json --html run.html --perfetto run.trace.json\n"
		"  khbpf report run.json --keyhog run.keyhog.json\n"
		"  khbpf report build.json --all | less\n"
		"  sudo khbpf run -o run.json -- ./my-server; khbpf report run.json --html run.html\n");
}

/* The input document itself must never be the one overwritten. */
static int check_not_input(const char *in, const char *opt, const char *path)
{
	struct stat si, so;

	if (path && strcmp(path, "-") && !stat(in, &si) && !stat(path, &so) &&
	    si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
		cli__error("report", "%s '%s' is the input document; choose another path", opt,
			   path);
		return CLI_EXIT_USAGE;
	}
	return 0;
}

int report_args__parse(int argc, char **argv, struct report_args *a)
{
	static const struct option opts[] = {
		{ "html", required_argument, NULL, 'H' },
		{ "perfetto", required_argument, NULL, 'P' },
		{ "keyhog", required_argument, NULL, 'K' },
		{ "text", no_argument, NULL, 'T' },
		{ "all", no_argument, NULL, 'A' },
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
		case 'K':
			a->keyhog = optarg;
			break;
		case 'T':
			a->text = true;
			break;
		case 'A':
			a->all = true;
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
	struct render_opts ro = { .sz = sizeof(ro), .cmd = "report" };
	struct report_load_opts lo = { .sz = sizeof(lo) };
	struct report_doc *doc = NULL;
	struct report_args a;
	char err[512] = "";
	int ret;

	ret = report_args__parse(argc, argv, &a);
	if (ret || a.help) {
		if (a.help)
			cmd_report_help(stdout);
		return ret;
	}
	ro.html = a.html;
	ro.perfetto = a.trace;
	ro.keyhog = a.keyhog;
	ro.text = a.text || !(a.html || a.trace || a.keyhog);
	ro.all = a.all;
	if ((ret = check_not_input(a.in, "--html", a.html)) ||
	    (ret = check_not_input(a.in, "--perfetto", a.trace)) ||
	    (ret = check_not_input(a.in, "--keyhog", a.keyhog)) ||
	    (ret = render__check(&ro, false)))
		return ret;
	/* The terminal report alone needs no span kept, only their counts. */
	lo.span_summary = !ro.html && !ro.perfetto;
	ret = report_doc__load_file_opts(a.in, &doc, &lo, err, sizeof(err));
	if (ret) {
		cli__error("report", "'%s' %s", a.in, err);
		return CLI_EXIT_FAILURE;
	}
	ret = render__file_outputs(doc, a.in, &ro);
	report_doc__free(doc);
	return ret;
}

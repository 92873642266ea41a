// SPDX-License-Identifier: MIT
/* khbpf command line: `khbpf [-v] COMMAND [OPTIONS]`, bpftool style. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "cmd/cli.h"

#ifndef KHBPF_VERSION
#define KHBPF_VERSION "0.0.0"
#endif

/*
 * libbpf's own messages only with -v: khbpf reports every failure itself, in
 * one line with its errno (a missing capability otherwise comes with four
 * lines of libbpf warnings before that line).
 */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	if (!cli_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static const struct cli_command commands[] = {
	{ "attach", "watch a running process's threads for a window", cmd_attach, cmd_attach_help },
	{ "run", "run a command with the collector attached for its whole life", cmd_run,
	  cmd_run_help },
	{ "serve", "account every task per cgroup or process, for Prometheus", cmd_serve,
	  cmd_serve_help },
	{ "probe", "what each collector can do on this host, and why not", cmd_probe,
	  cmd_probe_help },
	{ "report", "show a saved evidence document: text, HTML, Perfetto or keyhog", cmd_report,
	  cmd_report_help },
	{ "list", "span sites of ELF objects: KHBPF_SPAN annotations and USDT probes", cmd_list,
	  cmd_list_help },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: khbpf [-v] COMMAND [OPTIONS]\n"
		   "       khbpf COMMAND --help\n\n"
		   "Kernel-side scheduler and span evidence collector.\n\nCommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nGlobal options:\n"
		   "  -v, --verbose   libbpf debug output on stderr\n"
		   "  -V, --version   print the version and exit\n"
		   "  -h, --help      this help\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *name;
	size_t i;
	int c;

	/* '+': stop at the command name; its options are the command's own. */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:vVh", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			cli_verbose = true;
			break;
		case 'V':
			printf("khbpf %s (libbpf %s)\n", KHBPF_VERSION, libbpf_version_string());
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "khbpf: unknown option '%s'; run 'khbpf --help'\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	libbpf_set_print(libbpf_print);
	name = argv[optind];
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!strcmp(name, commands[i].name)) {
			int sub_argc = argc - optind;
			char **sub_argv = argv + optind;

			/* The command sees argv[0] = its own name, getopt state reset. */
			optind = 0;
			return commands[i].run(sub_argc, sub_argv);
		}
	}
	fprintf(stderr, "khbpf: unknown command '%s'; run 'khbpf --help' for the list\n", name);
	return 2;
}

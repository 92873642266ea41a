/* SPDX-License-Identifier: MIT */
/*
 * Each command's options parsed into what it will run with, before it acts:
 * these parsers read neither the host nor write stdout (a bad option gets
 * its one line on stderr), so tests/fuzz can run them on any argv. getopt
 * keeps global state: set optind to 0 before each call.
 */
#ifndef KHBPF_CMDARGS_H
#define KHBPF_CMDARGS_H

#include <stdbool.h>
#include <sys/types.h>

#include "serve/serve.h"
#include "session/session.h"
#include "spans/spanfind.h"
#include "cmd/cli.h"

#define CMDARGS_MAX_SPANS CLI_MAX_SPANS
#define CMDARGS_MAX_PIDS 64
#define CMDARGS_MAX_DEBUG_DIRS 16
_Static_assert(CMDARGS_MAX_PIDS <= KHBPF_MAX_TARGETS, "serve --pid beyond the kernel's targets");

struct collect_args {
	struct session_opts so; /* so.span_reqs, pids, cgroup_paths point at reqs, pids, cgroups */
	pid_t pids[CMDARGS_MAX_PIDS];
	const char *cgroups[KHBPF_MAX_CGROUP_FILTERS]; /* into cgroup_buf */
	char cgroup_buf[KHBPF_MAX_CGROUP_FILTERS][CLI_CGROUP_PATH_MAX]; /* normalized */
	struct span_request reqs[CMDARGS_MAX_SPANS];
	const char *debug_dirs[CMDARGS_MAX_DEBUG_DIRS]; /* --debug-dir, as given */
	/* A request's strings: --usdt-span takes twice its length and a metric. */
	char req_buf[CMDARGS_MAX_SPANS][CLI_SPAN_BUF];
	struct key_request keys[CMDARGS_MAX_SPANS]; /* --key */
	struct cause_request causes[CMDARGS_MAX_SPANS]; /* --span-cause */
	const char *out; /* -o, or NULL */
	const char *html, *perfetto; /* --html / --perfetto FILE, or NULL */
	const char *keyhog; /* --keyhog FILE, or NULL */
	bool json, text;
	bool all; /* --all: every process in the terminal report */
	bool private_out; /* --private: the -o file gets mode 0600 */
	bool quiet; /* --quiet: no line saying what -o wrote */
	bool help; /* --help: print it and exit 0 */
};

struct serve_args {
	struct serve_opts so; /* so.pids, cgroups, span_reqs, key_reqs point at the arrays below */
	pid_t pids[CMDARGS_MAX_PIDS];
	const char *cgroups[KHBPF_MAX_CGROUP_FILTERS]; /* into cgroup_buf */
	char cgroup_buf[KHBPF_MAX_CGROUP_FILTERS][CLI_CGROUP_PATH_MAX]; /* normalized */
	struct span_request reqs[CMDARGS_MAX_SPANS];
	char req_buf[CMDARGS_MAX_SPANS][CLI_SPAN_BUF];
	struct key_request keys[CMDARGS_MAX_SPANS];
	struct cause_request causes[CMDARGS_MAX_SPANS]; /* --span-cause */
	bool help;
};

struct report_args {
	const char *in, *html, *trace, *keyhog;
	bool text;
	bool all; /* --all: every process in the terminal report */
	bool help;
};

/*
 * argv of `khbpf attach` (mode TARGET_MODE_ATTACH) or `khbpf run`
 * (TARGET_MODE_RUN) into *a. Returns 0 (go on, or print the help when
 * a->help), or CLI_EXIT_USAGE after the error line.
 */
int collect_args__parse(const char *cmd, int argc, char **argv, enum target_mode mode,
			struct collect_args *a);
/* argv of `khbpf serve`; as collect_args__parse. */
int serve_args__parse(int argc, char **argv, struct serve_args *a);
/* argv of `khbpf report`; as collect_args__parse. */
int report_args__parse(int argc, char **argv, struct report_args *a);

#endif /* KHBPF_CMDARGS_H */

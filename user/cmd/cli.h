/* SPDX-License-Identifier: MIT */
/* The command table and the shared pieces of every command's CLI. */
#ifndef KHBPF_CLI_H
#define KHBPF_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "khbpf/spans.h"
#include "spans/spanfind.h"

struct json_object;

struct cli_command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
	void (*help)(FILE *f);
};

/* -v: libbpf debug output. */
extern bool cli_verbose;

/* Exit codes: 0 ok, 1 runtime failure, 2 bad usage. */
#define CLI_EXIT_FAILURE 1
#define CLI_EXIT_USAGE 2

/* One-line error on stderr, prefixed "khbpf COMMAND: ". */
void cli__error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * getopt_long returned '?' or ':' (optstring starts with ':', opterr = 0):
 * one line naming the option. Returns CLI_EXIT_USAGE.
 */
int cli__bad_option(const char *cmd, int c, char **argv);

/*
 * Serialize obj and write it to path ("-" or NULL → stdout) atomically.
 * Prints the error itself; returns 0 or a CLI exit code.
 */
int cli__emit_json(const char *cmd, struct json_object *obj, const char *path);
struct output_opts;
/* The same with the file's mode (NULL: 0644). */
int cli__emit_json_opts(const char *cmd, struct json_object *obj, const char *path,
			const struct output_opts *oopts);

/* a year: larger durations are typos */
#define CLI_MAX_SECONDS 31536000ULL
/* Seconds with up to 9 decimals → ns, exactly; > 0 and at most a year. 0/-errno. */
int cli__parse_seconds(const char *s, uint64_t *ns);
/* A count in 1..max. 0/-EINVAL. */
int cli__parse_count(const char *s, uint64_t max, uint32_t *out);
/* Bytes: decimal digits, then K, M or G (powers of 1024) or nothing. 0/-EINVAL/-ERANGE. */
int cli__parse_bytes(const char *s, uint64_t *out);
/*
 * Before any work: an output path (not "-") must be creatable, in a writable
 * directory, and neither a symlink nor anything but a regular file
 * (output__check, with the caller's current credentials). Prints the error
 * naming the option; returns 0 or -errno.
 */
int cli__check_output_path(const char *cmd, const char *opt, const char *path);

/* --span, --usdt-span, --usdt and --key requests per command line, and each one's strings. */
#define CLI_MAX_SPANS 64
/* getopt_long's code for --span-cause (attach, run, serve): no short letter. */
#define CLI_OPT_SPAN_CAUSE 256
#define CLI_SPAN_BUF 1024
/*
 * One of the span options of run, attach and serve, by its getopt code:
 * --span 'S', --usdt-span 'U', --usdt 'u' (into reqs[*nr_reqs], its
 * strings in bufs[*nr_reqs]), --key 'k' (keys[*nr_keys]), --max-keys 'x'.
 * 0, or CLI_EXIT_USAGE after the error line.
 */
int cli__span_option(const char *cmd, int c, const char *arg, struct span_request *reqs,
		     char (*bufs)[CLI_SPAN_BUF], size_t *nr_reqs, struct key_request *keys,
		     size_t *nr_keys, uint32_t *max_keys);
/*
 * --span-cause METRIC=CAUSE of run, attach and serve, into causes[*nr]
 * (at most CLI_MAX_SPANS). 0, or CLI_EXIT_USAGE after the error line.
 */
int cli__span_cause_option(const char *cmd, const char *arg, struct cause_request *causes,
			   size_t *nr);
/* Room for one --cgroup path, normalized. */
#define CLI_CGROUP_PATH_MAX 4096
/*
 * --cgroup PATH of attach and serve, normalized into buf (at least
 * CLI_CGROUP_PATH_MAX): "/a/." and "/a/" name /a, as the kernel resolves
 * them. 0, or CLI_EXIT_USAGE after the error line.
 */
int cli__cgroup_option(const char *cmd, const char *arg, char *buf);
/*
 * After parsing, the --cgroup paths in bufs[0..nr) given as the full path
 * of the directory, under the cgroup v2 mount point of /proc/self/mountinfo
 * (/sys/fs/cgroup/unified/a on a hybrid host, /sys/fs/cgroup/a on a
 * unified one), made the path from the v2 root (/a), when the hierarchy
 * has no cgroup of the name as given and has that one. The rest are left
 * for the session to refuse, as given.
 */
void cli__cgroup_full_paths(char (*bufs)[CLI_CGROUP_PATH_MAX], size_t nr);

int cmd_probe(int argc, char **argv);
void cmd_probe_help(FILE *f);
int cmd_attach(int argc, char **argv);
void cmd_attach_help(FILE *f);
int cmd_run(int argc, char **argv);
void cmd_run_help(FILE *f);
int cmd_serve(int argc, char **argv);
void cmd_serve_help(FILE *f);
int cmd_report(int argc, char **argv);
void cmd_report_help(FILE *f);
int cmd_list(int argc, char **argv);
void cmd_list_help(FILE *f);

#endif /* KHBPF_CLI_H */

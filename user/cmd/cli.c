// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cmd/cli.h"
#include "host/cgroup.h"
#include "lib/fsutil.h"
#include "document/evjson.h"
#include "lib/jsonstream.h"
#include "lib/output.h"

/* -v: libbpf debug output and the commands' progress detail (main.c sets it). */
bool cli_verbose;

/* Seconds with up to 9 decimals → ns, exactly (no floating point). */
int cli__parse_seconds(const char *s, uint64_t *ns)
{
	uint64_t whole = 0, frac = 0;
	int digits = 0, frac_digits = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		whole = whole * 10 + (uint64_t)(*p - '0');
		if (whole > CLI_MAX_SECONDS)
			return -ERANGE;
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, frac_digits++) {
			if (frac_digits == 9)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(*p - '0');
		}
	}
	if (*p || (!digits && !frac_digits))
		return -EINVAL;
	while (frac_digits++ < 9)
		frac *= 10;
	/* A year exactly is the most: whole == CLI_MAX_SECONDS leaves no room for frac. */
	if (!(whole || frac) || whole * 1000000000ULL + frac > CLI_MAX_SECONDS * 1000000000ULL)
		return -ERANGE;
	*ns = whole * 1000000000ULL + frac;
	return 0;
}

int cli__parse_count(const char *s, uint64_t max, uint32_t *out)
{
	uint64_t v;

	if (fsutil__parse_u64(s, &v) || v == 0 || v > max)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

int cli__parse_bytes(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		uint64_t d = (uint64_t)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (p == s)
		return -EINVAL;
	switch (*p) {
	case 'K':
	case 'k':
		shift = 10;
		break;
	case 'M':
	case 'm':
		shift = 20;
		break;
	case 'G':
	case 'g':
		shift = 30;
		break;
	case '\0':
		break;
	default:
		return -EINVAL;
	}
	if (shift && *++p)
		return -EINVAL;
	if (v > UINT64_MAX >> shift)
		return -ERANGE;
	*out = v << shift;
	return 0;
}

void cli__error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "khbpf%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli__bad_option(const char *cmd, int c, char **argv)
{
	char opt[64];

	const char *arg = optind > 0 ? argv[optind - 1] : "";

	/* A long option names itself; a short one may sit inside a bundle. */
	if (!strncmp(arg, "--", 2))
		snprintf(opt, sizeof(opt), "%.*s", (int)strcspn(arg, "="), arg);
	else
		snprintf(opt, sizeof(opt), "-%c", optopt);
	if (c == ':')
		cli__error(cmd, "option '%s' needs a value; run 'khbpf %s --help'", opt, cmd);
	else
		cli__error(cmd, "unknown option '%s'; run 'khbpf %s --help'", opt, cmd);
	return CLI_EXIT_USAGE;
}

/* Why an output path was refused, with what to do: one line. */
static void output_error(const char *cmd, const char *opt, const char *path, int err)
{
	const char *sudo = geteuid() == 0 ? getenv("SUDO_UID") : NULL;
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", path);
	switch (err) {
	case -ELOOP:
		cli__error(
			cmd,
			"%s '%s' is a symbolic link; khbpf does not write through links: give the real path",
			opt, path);
		break;
	case -EEXIST:
		cli__error(cmd, "%s '%s' exists and is not a regular file; choose another path",
			   opt, path);
		break;
	case -ENOENT:
	case -ENOTDIR:
		cli__error(
			cmd,
			"%s '%s': directory '%s' does not exist; create it or choose another path",
			opt, path, dirname(dir));
		break;
	case -EPERM:
		cli__error(
			cmd,
			"%s '%s': may not replace it (%s; in a sticky directory such as /tmp only its owner may); remove it or choose another path",
			opt, path, strerror(-err));
		break;
	case -EACCES:
	case -EROFS:
		cli__error(
			cmd, "%s '%s': cannot create files in '%s' (%s%s%s); choose another path",
			opt, path, dirname(dir), strerror(-err),
			sudo && err != -EROFS ? "; under sudo they are created as SUDO_UID=" : "",
			sudo && err != -EROFS ? sudo : "");
		break;
	case -ENOSPC:
	case -EDQUOT:
	case -EFBIG:
		cli__error(
			cmd,
			"%s '%s': %s; nothing was written, free some space or choose another path",
			opt, path, strerror(-err));
		break;
	default:
		cli__error(cmd, "%s '%s': cannot write: %s; nothing was written", opt, path,
			   strerror(-err));
	}
}

int cli__emit_json(const char *cmd, struct json_object *obj, const char *path)
{
	return cli__emit_json_opts(cmd, obj, path, NULL);
}

struct emit {
	struct json_object *obj;
	int err; /* jsonstream__write's own: the text could not be made */
};

static int emit_fill(int fd, void *ctx)
{
	struct emit *e = ctx;

	e->err = jsonstream__write(e->obj, EVJSON_TO_STRING_FLAGS, true, fd);
	return e->err;
}

int cli__emit_json_opts(const char *cmd, struct json_object *obj, const char *path,
			const struct output_opts *oopts)
{
	struct emit e = { .obj = obj };
	int err;

	if (!obj) {
		cli__error(cmd, "out of memory building the JSON document");
		return CLI_EXIT_FAILURE;
	}
	/*
	 * Written as it is made: lazily built arrays (threads, span records)
	 * go to the file an element at a time, never whole in memory.
	 */
	err = output__write_with(path ? path : "-", emit_fill, &e, oopts);
	if (err == -ENOMEM && e.err == -ENOMEM) {
		cli__error(cmd, "out of memory building the JSON document");
		return CLI_EXIT_FAILURE;
	}
	if (err) {
		output_error(cmd, "-o", path ? path : "-", err);
		return CLI_EXIT_FAILURE;
	}
	return 0;
}

int cli__check_output_path(const char *cmd, const char *opt, const char *path)
{
	int err = output__check(path);

	if (err)
		output_error(cmd, opt, path, err);
	return err;
}

int cli__span_cause_option(const char *cmd, const char *arg, struct cause_request *causes,
			   size_t *nr)
{
	if (*nr == CLI_MAX_SPANS) {
		cli__error(cmd, "--span-cause: at most %d of them", CLI_MAX_SPANS);
		return CLI_EXIT_USAGE;
	}
	if (cause_request__parse(arg, &causes[*nr])) {
		cli__error(
			cmd,
			"--span-cause '%s': expected METRIC=lock, METRIC=io, METRIC=sleep or METRIC=other (a metric in kebab-case)",
			arg);
		return CLI_EXIT_USAGE;
	}
	(*nr)++;
	return 0;
}

int cli__span_option(const char *cmd, int c, const char *arg, struct span_request *reqs,
		     char (*bufs)[CLI_SPAN_BUF], size_t *nr_reqs, struct key_request *keys,
		     size_t *nr_keys, uint32_t *max_keys)
{
	/* --span, --usdt-span and --usdt share the requests' table. */
	const char *opt = c == 'S' ? "span" : c == 'U' ? "usdt-span" : "usdt";
	int (*parse)(const char *, struct span_request *, char *, size_t) =
		c == 'S' ? span_request__parse :
		c == 'U' ? span_request__parse_usdt :
			   span_request__parse_usdt_count;

	if (c == 'k') {
		if (*nr_keys == CLI_MAX_SPANS) {
			cli__error(cmd, "--key: at most %d of them", CLI_MAX_SPANS);
			return CLI_EXIT_USAGE;
		}
		if (key_request__parse(arg, &keys[*nr_keys])) {
			cli__error(
				cmd,
				"--key '%s': expected METRIC=argN:str or METRIC=argN:int (N from 0 to 11, a metric in kebab-case)",
				arg);
			return CLI_EXIT_USAGE;
		}
		(*nr_keys)++;
		return 0;
	}
	if (c == 'x') {
		if (cli__parse_count(arg, KHBPF_MAX_KEYS, max_keys)) {
			cli__error(cmd, "--max-keys '%s': expected a count from 1 to %u", arg,
				   KHBPF_MAX_KEYS);
			return CLI_EXIT_USAGE;
		}
		return 0;
	}
	if (*nr_reqs == CLI_MAX_SPANS) {
		cli__error(cmd,
			   "--%s: at most %d --span, --usdt-span and --usdt in all; use a glob",
			   opt, CLI_MAX_SPANS);
		return CLI_EXIT_USAGE;
	}
	if (parse(arg, &reqs[*nr_reqs], bufs[*nr_reqs], CLI_SPAN_BUF)) {
		cli__error(
			cmd, "--%s '%s': expected %s", opt, arg,
			c == 'S' ?
				"[OBJECT:]SYMBOL[=metric], metric in kebab-case" :
			c == 'U' ?
				"[OBJECT:]PROVIDER:START,DONE[=metric] (two different probe names of [A-Za-z0-9_]; metric in kebab-case, needed when the default would pass 63 bytes)" :
				"[OBJECT:]PROVIDER:NAME (globs of [A-Za-z0-9_*?[]!^])");
		return CLI_EXIT_USAGE;
	}
	(*nr_reqs)++;
	return 0;
}

int cli__cgroup_option(const char *cmd, const char *arg, char *buf)
{
	int err;

	if (arg[0] != '/') {
		cli__error(cmd,
			   "--cgroup '%s': give the path from the cgroup v2 root, e.g. "
			   "/system.slice/nginx.service",
			   arg);
		return CLI_EXIT_USAGE;
	}
	if (strlen(arg) >= CLI_CGROUP_PATH_MAX) {
		cli__error(cmd, "--cgroup: a path of %zu bytes; cgroup paths are shorter than %d",
			   strlen(arg), CLI_CGROUP_PATH_MAX);
		return CLI_EXIT_USAGE;
	}
	strcpy(buf, arg);
	err = cgroup__normalize_path(buf);
	if (err) {
		cli__error(cmd,
			   "--cgroup '%s': '..' goes above the cgroup v2 root; give the path from "
			   "that root, e.g. /system.slice/nginx.service",
			   arg);
		return CLI_EXIT_USAGE;
	}
	return 0;
}

/* Whether mount + path is a directory: a cgroup of the v2 hierarchy. */
static bool cgroup_exists(const char *mount, const char *path)
{
	char full[PATH_MAX + CLI_CGROUP_PATH_MAX];
	struct stat st;

	snprintf(full, sizeof(full), "%s%s", mount, path);
	return !stat(full, &st) && S_ISDIR(st.st_mode);
}

void cli__cgroup_full_paths(char (*bufs)[CLI_CGROUP_PATH_MAX], size_t nr)
{
	char mount[PATH_MAX], path[CLI_CGROUP_PATH_MAX];
	size_t i;

	if (!nr || cgroup__v2_mount("/", mount, sizeof(mount)))
		return;
	for (i = 0; i < nr; i++) {
		/* A cgroup of that name from the root is the one meant. */
		if (cgroup_exists(mount, bufs[i]))
			continue;
		memcpy(path, bufs[i], sizeof(path));
		if (cgroup__strip_mount(path, mount) && cgroup_exists(mount, path))
			memcpy(bufs[i], path, sizeof(path));
	}
}

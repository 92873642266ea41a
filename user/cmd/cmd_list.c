// SPDX-License-Identifier: MIT
/* `khbpf list [--usdt] [--json] PATH... | --pid PID`: the span sites of ELF objects */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "cmd/cli.h"
#include "document/evjson.h"
#include "spans/spanfind.h"
#include "spans/usdtnote.h"

void cmd_list_help(FILE *f)
{
	fprintf(f,
		"Usage: khbpf list [--usdt] [--json] PATH...\n"
		"       khbpf list [--usdt] [--json] --pid PID\n\n"
		"List the span sites of ELF executables and shared libraries, as `bpftrace -l`\n"
		"and `tplist` list probes: the KHBPF_SPAN annotations (metric, function, file\n"
		"offset) and the USDT probes packages ship (provider:name, each site's address\n"
		"and file offset, its semaphore, its argument specs). Reads the files only:\n"
		"no BPF, no root for files you can read.\n\n"
		"Options:\n"
		"      --usdt       only the USDT probes\n"
		"  -p, --pid PID    every object PID maps executable, read through\n"
		"                   /proc/PID/root (containers too)\n"
		"      --json       {objects: [{object, annotations[], usdt[], usdt_sites_dropped}]}\n"
		"  -h, --help       this help\n\n"
		"Examples:\n"
		"  khbpf list /usr/lib/postgresql/15/bin/postgres\n"
		"  khbpf list --usdt --json /usr/bin/python3.11\n"
		"  sudo khbpf list --pid \"$(pgrep -o postgres)\"\n");
}

struct listed {
	char *object; /* as given, or as the process maps it */
	struct span_site *notes;
	size_t nr_notes;
	struct usdt_list usdt;
};

struct list_args {
	bool usdt_only, json, help;
	pid_t pid;
	char **paths;
	size_t nr_paths;
};

static int parse_args(int argc, char **argv, struct list_args *a)
{
	static const struct option opts[] = {
		{ "usdt", no_argument, NULL, 'U' },
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	uint32_t pid;
	int c;

	memset(a, 0, sizeof(*a));
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hp:", opts, NULL)) != -1) {
		switch (c) {
		case 'U':
			a->usdt_only = true;
			break;
		case 'J':
			a->json = true;
			break;
		case 'p':
			if (cli__parse_count(optarg, INT32_MAX, &pid) || !pid) {
				cli__error("list", "--pid '%s': expected a process id", optarg);
				return CLI_EXIT_USAGE;
			}
			a->pid = (pid_t)pid;
			break;
		case 'h':
			a->help = true;
			return 0;
		default:
			return cli__bad_option("list", c, argv);
		}
	}
	a->paths = argv + optind;
	a->nr_paths = (size_t)(argc - optind);
	if (!a->pid == !a->nr_paths) {
		cli__error("list", a->pid ?
					   "give --pid or PATHs, not both" :
					   "nothing to list; give PATHs or --pid PID (see --help)");
		return CLI_EXIT_USAGE;
	}
	return 0;
}

/* One object's annotations and probes; 0, or a CLI exit code after one error line. */
static int read_object(const struct list_args *a, const char *object, const char *open_path,
		       struct listed *l)
{
	char reason[256] = "";
	int err;

	l->object = strdup(object);
	if (!l->object)
		goto nomem;
	err = usdtnote__read(open_path, object, &l->usdt, reason, sizeof(reason));
	/* A mapped object that is not ELF (a font, a locale archive) has no sites. */
	if (err == -ENOEXEC && a->pid)
		return 0;
	if (err) {
		cli__error("list", "%s; give a readable ELF executable or shared library", reason);
		return CLI_EXIT_FAILURE;
	}
	if (a->usdt_only)
		return 0;
	err = spanfind__notes(open_path, object, &l->notes, &l->nr_notes);
	if (err == -ENOMEM)
		goto nomem;
	return 0;
nomem:
	cli__error("list", "out of memory reading %s", object);
	return CLI_EXIT_FAILURE;
}

/* Sites of one probe (provider:name) share an entry, in the order of their first note. */
static bool same_probe(const struct usdt_site *x, const struct usdt_site *y)
{
	return !x->err && !y->err && !strcmp(x->provider, y->provider) && !strcmp(x->name, y->name);
}

static bool probe_seen(const struct usdt_list *u, size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (same_probe(&u->v[j], &u->v[i]))
			return true;
	return false;
}

static struct json_object *hex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
	return json_object_new_string(buf);
}

static struct json_object *usdt_json(const struct usdt_list *u)
{
	struct json_object *arr = json_object_new_array(), *p, *sites, *s;
	size_t i, j;

	for (i = 0; arr && i < u->nr; i++) {
		const struct usdt_site *x = &u->v[i];

		if (x->err) {
			p = json_object_new_object();
			evjson__add(p, "error", evjson__string(x->reason));
			json_object_array_add(arr, p);
			continue;
		}
		if (probe_seen(u, i))
			continue;
		p = json_object_new_object();
		sites = json_object_new_array();
		evjson__add(p, "provider", evjson__string(x->provider));
		evjson__add(p, "name", evjson__string(x->name));
		for (j = i; j < u->nr; j++) {
			const struct usdt_site *y = &u->v[j];

			if (j != i && !same_probe(x, y))
				continue;
			s = json_object_new_object();
			evjson__add(s, "address", hex(y->addr));
			evjson__add(s, "offset", hex(y->offset));
			if (y->semaphore) {
				evjson__add(s, "semaphore", hex(y->semaphore));
				evjson__add(s, "semaphore_offset", hex(y->semaphore_offset));
			}
			evjson__add(s, "args", evjson__string(y->args));
			evjson__add(s, "nr_args", json_object_new_int((int)y->nr_args));
			json_object_array_add(sites, s);
		}
		evjson__add(p, "sites", sites);
		json_object_array_add(arr, p);
	}
	return arr;
}

static struct json_object *notes_json(const struct listed *l)
{
	struct json_object *arr = json_object_new_array(), *o;
	size_t i;

	for (i = 0; arr && i < l->nr_notes; i++) {
		const struct span_site *s = &l->notes[i];

		o = json_object_new_object();
		if (s->err) {
			evjson__add(o, "error", evjson__string(s->reason));
		} else {
			evjson__add(o, "metric", evjson__string(s->metric));
			evjson__add(o, "function", evjson__string(s->symbol));
			evjson__add(o, "address", hex(s->vaddr));
			evjson__add(o, "offset", hex(s->offset));
		}
		json_object_array_add(arr, o);
	}
	return arr;
}

static int print_json(const struct list_args *a, const struct listed *ls, size_t n)
{
	struct json_object *top = json_object_new_object(), *objs = json_object_new_array(), *o;
	size_t i;
	int ret;

	for (i = 0; top && objs && i < n; i++) {
		if (!ls[i].object)
			continue;
		o = json_object_new_object();
		evjson__add(o, "object", evjson__string(ls[i].object));
		if (!a->usdt_only)
			evjson__add(o, "annotations", notes_json(&ls[i]));
		evjson__add(o, "usdt", usdt_json(&ls[i].usdt));
		evjson__add(o, "usdt_sites_dropped", evjson__u64(ls[i].usdt.dropped));
		json_object_array_add(objs, o);
	}
	evjson__add(top, "objects", objs);
	ret = cli__emit_json("list", top, "-");
	json_object_put(top);
	return ret;
}

static void print_text(const struct list_args *a, const struct listed *ls, size_t n)
{
	size_t i, j, k, probes, sites;

	for (i = 0; i < n; i++) {
		const struct listed *l = &ls[i];
		const struct usdt_list *u = &l->usdt;

		if (!l->object || (a->pid && !u->nr && !l->nr_notes))
			continue;
		printf("%s\n", l->object);
		for (j = 0; j < l->nr_notes; j++) {
			const struct span_site *s = &l->notes[j];

			if (s->err)
				printf("  annotation  error: %s\n", s->reason);
			else
				printf("  annotation  %-32s %s (offset 0x%llx)\n", s->metric,
				       s->symbol[0] ? s->symbol : "?",
				       (unsigned long long)s->offset);
		}
		probes = sites = 0;
		for (j = 0; j < u->nr; j++) {
			const struct usdt_site *x = &u->v[j];
			size_t count = 0;
			bool same_args = true;

			if (x->err) {
				printf("  usdt        error: %s\n", x->reason);
				continue;
			}
			sites++;
			if (probe_seen(u, j))
				continue;
			probes++;
			for (k = j; k < u->nr; k++)
				if (k == j || same_probe(x, &u->v[k])) {
					count++;
					same_args = same_args && !strcmp(x->args, u->v[k].args);
				}
			printf("  usdt        %s:%s  %zu site%s%s  args: %s%s\n", x->provider,
			       x->name, count, count == 1 ? "" : "s",
			       x->semaphore ? ", semaphore" : "", x->args[0] ? x->args : "(none)",
			       same_args ? "" : " (differ by site; --json lists each)");
		}
		if (u->nr)
			printf("  %zu USDT probe%s at %zu site%s\n", probes, probes == 1 ? "" : "s",
			       sites, sites == 1 ? "" : "s");
		if (u->dropped)
			printf("  %llu more USDT sites not read (at most %d per object)\n",
			       (unsigned long long)u->dropped, USDT_SITES_MAX);
	}
}

int cmd_list(int argc, char **argv)
{
	char **objects = NULL, open_path[PATH_MAX];
	struct listed *ls = NULL;
	struct list_args a;
	size_t n = 0, nr_objects = 0, i;
	int ret, err;

	ret = parse_args(argc, argv, &a);
	if (ret || a.help) {
		if (a.help)
			cmd_list_help(stdout);
		return ret;
	}
	if (a.pid) {
		err = spanfind__mapped_objects("/", a.pid, &objects, &nr_objects);
		n = nr_objects;
		if (err) {
			cli__error("list", "--pid %d: cannot read its mapped objects: %s%s",
				   (int)a.pid, strerror(-err),
				   err == -EACCES ? "; run as root or as its user" : "");
			return CLI_EXIT_FAILURE;
		}
	} else {
		n = a.nr_paths;
	}
	ls = calloc(n ? n : 1, sizeof(*ls));
	if (!ls) {
		cli__error("list", "out of memory");
		ret = CLI_EXIT_FAILURE;
		goto cleanup;
	}
	for (i = 0; i < n && !ret; i++) {
		const char *object = a.pid ? objects[i] : a.paths[i];

		if (a.pid && spanobjects__open_path(open_path, "/", a.pid, object))
			continue;
		ret = read_object(&a, object, a.pid ? open_path : object, &ls[i]);
	}
	if (ret)
		goto cleanup;
	if (a.json)
		ret = print_json(&a, ls, n);
	else
		print_text(&a, ls, n);
	if (!a.json && fflush(stdout)) {
		cli__error("list", "cannot write to stdout: %s", strerror(errno));
		ret = CLI_EXIT_FAILURE;
	}
cleanup:
	for (i = 0; ls && i < n; i++) {
		free(ls[i].object);
		spanfind__free(ls[i].notes, ls[i].nr_notes);
		usdtnote__free(&ls[i].usdt);
	}
	free(ls);
	spanfind__free_objects(objects, nr_objects);
	return ret;
}

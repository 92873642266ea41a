// SPDX-License-Identifier: MIT
/* `khbpf probe [--json] [-o FILE]` */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "cmd/cli.h"
#include "document/document.h"
#include "document/evjson.h"
#include "host/probe.h"

void cmd_probe_help(FILE *f)
{
	fprintf(f,
		"Usage: khbpf probe [--json] [-o FILE]\n\n"
		"Try every facility khbpf uses on this host, as this user: kernel BTF, bpf()\n"
		"permission, BTF tracepoints on the scheduler (each attached and seen to fire),\n"
		"uprobes, ring buffer and task storage maps, perf hardware counters, CPU\n"
		"topology, cpufreq and cgroups. Reports each collector's availability and, when\n"
		"it is not available, what to do. Lists the kernel features the BPF programs\n"
		"depend on and whether each is used, replaced by a fallback, or missing, as\n"
		"found by BTF lookups and feature probes (the release that brought each is\n"
		"information only). Attaches nothing that outlives the command.\n\n"
		"Options:\n"
		"      --json         machine output: {host, collectors[], checks[],\n"
		"                     kernel_features[]}\n"
		"  -o, --output FILE  write the JSON output to FILE atomically (implies --json)\n"
		"  -h, --help         this help\n\n"
		"Examples:\n"
		"  sudo khbpf probe\n"
		"  sudo khbpf probe --json -o probe.json\n");
}

static void add(struct json_object *o, const char *k, struct json_object *v)
{
	evjson__add(o, k, v);
}

/* Each kernel feature khbpf depends on: present, how found, and what khbpf does. */
static struct json_object *features_json(const struct kfeatures *k)
{
	struct json_object *a = json_object_new_array();
	const char *what;
	int i;

	for (i = 0; a && i < KFEAT__COUNT; i++) {
		struct json_object *o = json_object_new_object();
		enum kfeature_use u = kfeatures__use(k, i, &what);

		add(o, "name", json_object_new_string(kfeature__name(i)));
		add(o, "use", json_object_new_string(kfeature_use__name(u)));
		add(o, "present",
		    u == KFEAT_UNKNOWN ? evjson__gap(EV_GAP_UNAVAILABLE) :
					 evjson__recorded(json_object_new_boolean(k->have[i])));
		add(o, "detected_by", json_object_new_string(kfeature_how__name(k->how[i])));
		add(o, "upstream_since", json_object_new_string(kfeature__since(i)));
		add(o, "detail", evjson__string(what));
		json_object_array_add(a, o);
	}
	return a;
}

static struct json_object *probe_json(const struct probe_report *r)
{
	struct json_object *doc = json_object_new_object();
	struct json_object *host = json_object_new_object();
	struct json_object *cols = json_object_new_array();
	struct json_object *checks = json_object_new_array();
	int i;

	add(doc, "version", evjson__u64(1));
	add(doc, "producer", evidence_doc__producer());
	add(host, "kernel_release", evjson__string(r->kernel_release));
	add(host, "logical_cpus", evjson__u64(r->logical_cpus));
	add(host, "physical_cores", evjson__sev_u32(r->physical_cores));
	add(host, "packages", evjson__sev_u32(r->packages));
	add(host, "numa_nodes", evjson__sev_u32(r->numa_nodes));
	add(host, "llc_groups", evjson__u64(r->llc_groups));
	add(host, "cgroup_mode", json_object_new_string(r->cgroup_mode));
	add(host, "perf_event_paranoid",
	    r->perf_event_paranoid == INT32_MIN ?
		    evjson__gap(EV_GAP_UNAVAILABLE) :
		    evjson__recorded(json_object_new_int(r->perf_event_paranoid)));
	add(doc, "host", host);
	for (i = 0; cols && i < PROBE_NR_COLLECTORS; i++)
		json_object_array_add(cols, evjson__capability(&r->collectors[i]));
	add(doc, "collectors", cols);
	for (i = 0; checks && i < PROBE_CHECK__COUNT; i++) {
		const struct probe_check *c = &r->checks[i];
		struct json_object *o = json_object_new_object();

		add(o, "name", json_object_new_string(probe_check__name(i)));
		add(o, "result", json_object_new_string(probe_result__name(c->result)));
		if (c->err)
			add(o, "errno", json_object_new_int(-c->err));
		if (c->observed)
			add(o, "observed", evjson__u64(c->observed));
		add(o, "detail", evjson__string(c->detail));
		json_object_array_add(checks, o);
	}
	add(doc, "checks", checks);
	add(doc, "kernel_features", features_json(&r->features));
	return doc;
}

static void probe_text(FILE *f, const struct probe_report *r)
{
	int i;

	fprintf(f, "khbpf probe: kernel %s, %u logical CPUs, cgroup %s\n\n", r->kernel_release,
		r->logical_cpus, r->cgroup_mode);
	fprintf(f, "Collectors\n");
	for (i = 0; i < PROBE_NR_COLLECTORS; i++) {
		const struct collector_capability *c = &r->collectors[i];

		fprintf(f, "  %-20s %-18s %s\n", collector_id__name(c->collector),
			collector_availability__name(c->availability), c->detail);
	}
	fprintf(f, "\nChecks\n");
	for (i = 0; i < PROBE_CHECK__COUNT; i++)
		fprintf(f, "  %-26s %-8s %s\n", probe_check__name(i),
			probe_result__name(r->checks[i].result), r->checks[i].detail);
	/* The release is what upstream shipped it in: information, never a test. */
	fprintf(f,
		"\nKernel features (detected by BTF or a libbpf probe; since = upstream release)\n");
	for (i = 0; i < KFEAT__COUNT; i++) {
		const char *what;
		enum kfeature_use u = kfeatures__use(&r->features, i, &what);

		fprintf(f, "  %-26s %-10s %-12s since %-5s %s\n", kfeature__name(i),
			kfeature_use__name(u), kfeature_how__name(r->features.how[i]),
			kfeature__since(i), what);
	}
}

int cmd_probe(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct probe_opts popts = { .sz = sizeof(popts), .verbose = cli_verbose };
	const char *out = NULL;
	struct probe_report r;
	struct json_object *doc;
	bool json = false;
	int c, ret;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jo:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			cmd_probe_help(stdout);
			return 0;
		default:
			return cli__bad_option("probe", c, argv);
		}
	}
	if (optind < argc) {
		cli__error("probe", "unexpected argument '%s'; run 'khbpf probe --help'",
			   argv[optind]);
		return CLI_EXIT_USAGE;
	}
	if (probe__run(&r, &popts)) {
		cli__error("probe", "out of memory");
		return CLI_EXIT_FAILURE;
	}
	if (json || out) {
		doc = probe_json(&r);
		ret = cli__emit_json("probe", doc, out);
		json_object_put(doc);
		return ret;
	}
	probe_text(stdout, &r);
	return fflush(stdout) ? CLI_EXIT_FAILURE : 0;
}

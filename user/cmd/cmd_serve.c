// SPDX-License-Identifier: MIT
/* `khbpf serve`: the fleet daemon, scraped by Prometheus. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "serve/cglabels.h"
#include "cmd/cli.h"
#include "cmd/cmdargs.h"
#include "lib/fsutil.h"
#include "serve/httpd.h"
#include "serve/serve.h"

void cmd_serve_help(FILE *f)
{
	fprintf(f,
		"Usage: khbpf serve [--listen ADDR:PORT] [--by cgroup|process] [--top N]\n"
		"                   [--pid PID ...] [--cgroup PATH ...] [--interval S]\n"
		"                   [--ndjson FILE|-] [--max-groups N] [--max-age S]\n"
		"                   [--labels unit,container,pod] [--container-names FILE]\n\n"
		"Account the scheduler for every task of the host (or the named processes or\n"
		"cgroups), summed in the kernel per cgroup (default) or per process, and serve\n"
		"it over HTTP until SIGINT/SIGTERM/SIGHUP:\n"
		"  GET /metrics   Prometheus text format (OpenMetrics when the Accept header\n"
		"                 asks for application/openmetrics-text)\n"
		"  GET /evidence  the last window's full evidence document (JSON)\n"
		"  GET /healthz   'ok' while serving\n\n"
		"Options:\n"
		"  -l, --listen A:P      address to listen on (default 127.0.0.1:9464;\n"
		"                        0.0.0.0:9464 or [::]:9464 to be scraped remotely)\n"
		"      --by G            'cgroup' (cgroup v2 path label, the default) or\n"
		"                        'process' (comm label)\n"
		"      --top N           with --by process: the N busiest processes get their\n"
		"                        own series with a pid label\n"
		"      --labels LIST     with --by cgroup: labels read from each cgroup's path,\n"
		"                        comma-separated: unit (systemd unit), container\n"
		"                        (container_id: docker, podman, containerd, CRI-O),\n"
		"                        pod (Kubernetes pod_uid and qos), or all. A label the\n"
		"                        path does not give is left out; none adds a series\n"
		"      --container-names FILE\n"
		"                        with --labels container: a JSON object of container\n"
		"                        id to name ({\"<64 hex digits>\": \"web\"}) for a\n"
		"                        container_name label; reread when it changes\n"
		"  -p, --pid PID         only this process (repeatable, up to %d)\n"
		"      --children        with --pid: also its descendants, and every process\n"
		"                        forked from them while serve runs\n"
		"      --cgroup PATH     only tasks in this cgroup v2 subtree, e.g.\n"
		"                        /system.slice/nginx.service or its full path under\n"
		"                        the cgroup2 mount (repeatable, up to %d)\n"
		"  -i, --interval S      evidence window length (default 15)\n"
		"      --ndjson FILE     append each window's document as one JSON line to FILE\n"
		"                        ('-': stdout)\n"
		"      --private         a new --ndjson file gets mode 0600 (default 0644)\n"
		"      --max-groups N    groups the kernel keeps (default %d); the least\n"
		"                        recently active are evicted past 9/10, and counted\n"
		"      --max-age S       drop groups idle this long (default 300)\n"
		"      --blocked         also export khbpf_blocked_seconds_total{cause} per group\n"
		"                        (about 1.5 times the scheduler program's cost per switch)\n"
		"      --bpf-stats       also export khbpf's BPF program run time (every BPF\n"
		"                        program on the host then pays two clock reads per run)\n"
		"      --span OBJ:SYM[=metric]  measure every call of SYM (glob) in OBJ, a path\n"
		"                        or a library name (libpq.so.5), in every process that\n"
		"                        maps it, now or later; repeatable\n"
		"      --usdt-span OBJ:PROVIDER:START,DONE[=metric]  spans from USDT probes\n"
		"      --usdt OBJ:PROVIDER:NAME  count each matching USDT probe's hits\n"
		"      --key METRIC=argN:str|int  split METRIC by one argument of its probe\n"
		"      --max-keys N      keys per metric (default 256); more go to \"(other)\"\n"
		"      --span-cause METRIC=CAUSE  blocked time that begins inside a span of\n"
		"                        METRIC has CAUSE (lock, io, sleep or other), not the\n"
		"                        system call's; needs --blocked; repeatable\n"
		"      --max-span-series N  (group, metric, key) series the kernel keeps\n"
		"                        (default %d); calls of more go to \"(overflow)\"\n"
		"      --no-annotations  ignore the KHBPF_SPAN notes of the named objects\n"
		"      --max-exited N    exited-thread records per window (default 65536)\n"
		"      --max-threads N   threads in each window's document (default 65536)\n"
		"  -h, --help            this help\n\n"
		"Examples:\n"
		"  sudo khbpf serve\n"
		"  sudo khbpf serve --listen 0.0.0.0:9464 --by process --top 20\n"
		"  sudo khbpf serve --cgroup /system.slice --ndjson /var/log/khbpf.ndjson\n"
		"  sudo khbpf serve --by process --pid \"$(pgrep -o postgres)\" --children\n"
		"  sudo khbpf serve --labels unit,container,pod\n"
		"  sudo khbpf serve --usdt-span \\\n"
		"      /usr/lib/postgresql/15/bin/postgres:postgresql:query__start,query__done=query\n"
		"  curl -s localhost:9464/metrics | grep khbpf_runqueue_delay_seconds_count\n",
		CMDARGS_MAX_PIDS, KHBPF_MAX_CGROUP_FILTERS, KHBPF_DEFAULT_MAX_GROUPS,
		KHBPF_DEFAULT_SPAN_SERIES);
}

int serve_args__parse(int argc, char **argv, struct serve_args *a)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "by", required_argument, NULL, 'b' },
		{ "top", required_argument, NULL, 't' },
		{ "pid", required_argument, NULL, 'p' },
		{ "cgroup", required_argument, NULL, 'c' },
		{ "interval", required_argument, NULL, 'i' },
		{ "ndjson", required_argument, NULL, 'n' },
		{ "private", no_argument, NULL, 'P' },
		{ "max-groups", required_argument, NULL, 'G' },
		{ "max-age", required_argument, NULL, 'A' },
		{ "bpf-stats", no_argument, NULL, 'S' },
		{ "blocked", no_argument, NULL, 'K' },
		{ "max-exited", required_argument, NULL, 'E' },
		{ "max-threads", required_argument, NULL, 'T' },
		{ "labels", required_argument, NULL, 'L' },
		{ "container-names", required_argument, NULL, 'N' },
		{ "children", no_argument, NULL, 'C' },
		{ "span", required_argument, NULL, 's' },
		{ "usdt-span", required_argument, NULL, 'U' },
		{ "usdt", required_argument, NULL, 'u' },
		{ "key", required_argument, NULL, 'k' },
		{ "max-keys", required_argument, NULL, 'x' },
		{ "max-span-series", required_argument, NULL, 'M' },
		{ "no-annotations", no_argument, NULL, 'a' },
		{ "span-cause", required_argument, NULL, CLI_OPT_SPAN_CAUSE },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct serve_opts *so = &a->so;
	char bad[80];
	uint64_t v;
	int c, err;

	memset(a, 0, sizeof(*a));
	so->sz = sizeof(*so);
	so->log = stderr;
	so->pids = a->pids;
	so->cgroups = a->cgroups;
	so->span_reqs = a->reqs;
	so->key_reqs = a->keys;
	so->cause_reqs = a->causes;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":l:p:i:h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			/* Checked here, so a bad address is a usage error (2) before anything loads. */
			if (httpd__check_listen(optarg)) {
				cli__error(
					"serve",
					"--listen '%s': expected IPV4:PORT or [IPV6]:PORT with PORT 0..65535, e.g. 127.0.0.1:9464",
					optarg);
				return CLI_EXIT_USAGE;
			}
			so->listen = optarg;
			break;
		case 'b':
			if (!strcmp(optarg, "cgroup")) {
				so->group_by = KHBPF_GROUP_CGROUP;
			} else if (!strcmp(optarg, "process")) {
				so->group_by = KHBPF_GROUP_PROCESS;
			} else {
				cli__error("serve", "--by '%s': give 'cgroup' or 'process'",
					   optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 't':
			if (cli__parse_count(optarg, 10000, &so->top)) {
				cli__error("serve", "--top '%s': give a count from 1 to 10000",
					   optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'p':
			if (fsutil__parse_u64(optarg, &v) || v == 0 || v >= (1u << 22)) {
				cli__error("serve", "--pid '%s': not a process id", optarg);
				return CLI_EXIT_USAGE;
			}
			if (so->nr_pids == CMDARGS_MAX_PIDS) {
				cli__error("serve",
					   "at most %d --pid options; use --cgroup for more",
					   CMDARGS_MAX_PIDS);
				return CLI_EXIT_USAGE;
			}
			a->pids[so->nr_pids++] = (pid_t)v;
			break;
		case 'C':
			so->children = true;
			break;
		case 'c':
			if (so->nr_cgroups == KHBPF_MAX_CGROUP_FILTERS) {
				cli__error("serve",
					   "at most %d --cgroup options; name a parent cgroup",
					   KHBPF_MAX_CGROUP_FILTERS);
				return CLI_EXIT_USAGE;
			}
			if (cli__cgroup_option("serve", optarg, a->cgroup_buf[so->nr_cgroups]))
				return CLI_EXIT_USAGE;
			a->cgroups[so->nr_cgroups] = a->cgroup_buf[so->nr_cgroups];
			so->nr_cgroups++;
			break;
		case 'i':
		case 'A':
			err = cli__parse_seconds(optarg,
						 c == 'i' ? &so->interval_ns : &so->max_age_ns);
			if (err) {
				cli__error("serve", "--%s '%s': give seconds > 0 and at most %llu",
					   c == 'i' ? "interval" : "max-age", optarg,
					   CLI_MAX_SECONDS);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'n':
			so->ndjson = optarg;
			break;
		case 'P':
			so->ndjson_private = true;
			break;
		case 'G':
			if (cli__parse_count(optarg, 1u << 20, &so->max_groups) ||
			    so->max_groups < 16) {
				cli__error("serve", "--max-groups '%s': give a count from 16 to %u",
					   optarg, 1u << 20);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'S':
			so->bpf_stats = true;
			break;
		case 'K':
			so->blocked = true;
			break;
		case 'E':
		case 'T':
			if (cli__parse_count(optarg, 1u << 24,
					     c == 'E' ? &so->max_exited : &so->max_threads)) {
				cli__error("serve", "--%s '%s': give a count from 1 to %u",
					   c == 'E' ? "max-exited" : "max-threads", optarg,
					   1u << 24);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'L':
			if (cglabels__parse_list(optarg, &so->labels, bad, sizeof(bad))) {
				cli__error(
					"serve",
					"--labels '%s': no label '%s'; give unit, container, pod or "
					"all, comma-separated",
					optarg, bad);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'N':
			so->container_names = optarg;
			break;
		case 's':
		case 'U':
		case 'u':
		case 'k':
		case 'x':
			/* cli__span_option knows --span as 'S' (serve's 'S' is --bpf-stats). */
			if (cli__span_option("serve", c == 's' ? 'S' : c, optarg, a->reqs,
					     a->req_buf, &so->nr_span_reqs, a->keys,
					     &so->nr_key_reqs, &so->max_keys))
				return CLI_EXIT_USAGE;
			break;
		case 'M':
			if (cli__parse_count(optarg, KHBPF_MAX_SPAN_SERIES, &so->max_span_series) ||
			    so->max_span_series < 16) {
				cli__error("serve",
					   "--max-span-series '%s': give a count from 16 to %u",
					   optarg, KHBPF_MAX_SPAN_SERIES);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'a':
			so->no_annotations = true;
			break;
		case CLI_OPT_SPAN_CAUSE:
			if (cli__span_cause_option("serve", optarg, a->causes, &so->nr_cause_reqs))
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			a->help = true;
			return 0;
		default:
			return cli__bad_option("serve", c, argv);
		}
	}
	if (optind < argc) {
		cli__error("serve", "unexpected argument '%s'; run 'khbpf serve --help'",
			   argv[optind]);
		return CLI_EXIT_USAGE;
	}
	if (so->labels && so->group_by == KHBPF_GROUP_PROCESS) {
		cli__error("serve", "--labels needs --by cgroup (the labels are read from each "
				    "cgroup's path)");
		return CLI_EXIT_USAGE;
	}
	if (so->container_names && !(so->labels & CGLABELS_CONTAINER)) {
		cli__error("serve", "--container-names needs --labels container (or all): names "
				    "are given to container_id labels");
		return CLI_EXIT_USAGE;
	}
	if (so->children && (!so->nr_pids || so->nr_cgroups)) {
		cli__error("serve", "--children needs --pid (and no --cgroup): it adds the "
				    "processes' descendants");
		return CLI_EXIT_USAGE;
	}
	if (so->nr_cause_reqs && !so->blocked) {
		cli__error("serve", "--span-cause names a cause of blocked time; add --blocked");
		return CLI_EXIT_USAGE;
	}
	if (so->nr_cause_reqs && !so->nr_span_reqs) {
		cli__error("serve", "--span-cause needs a --span or --usdt-span whose metric it "
				    "names");
		return CLI_EXIT_USAGE;
	}
	if (so->nr_key_reqs && !so->nr_span_reqs) {
		cli__error("serve", "--key needs a --span, --usdt-span or --usdt whose metric it "
				    "splits");
		return CLI_EXIT_USAGE;
	}
	for (size_t i = 0; i < so->nr_span_reqs; i++) {
		if (a->reqs[i].object)
			continue;
		cli__error(
			"serve",
			"request %zu names no OBJ: serve watches every process, so give the "
			"file, a path or a library name (e.g. --usdt-span "
			"/usr/lib/postgresql/15/bin/postgres:postgresql:query__start,query__done)",
			i + 1);
		return CLI_EXIT_USAGE;
	}
	if (so->top && so->group_by != KHBPF_GROUP_PROCESS) {
		cli__error("serve", "--top needs --by process (cgroup series are bounded by the "
				    "cgroups themselves)");
		return CLI_EXIT_USAGE;
	}
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	struct serve_args a;
	char errbuf[1024];
	int ret, err;

	/* A signal from here on stops serve cleanly, whatever stage its setup is at. */
	session__hold_signals();
	ret = serve_args__parse(argc, argv, &a);
	if (ret || a.help) {
		if (a.help)
			cmd_serve_help(stdout);
		return ret;
	}
	cli__cgroup_full_paths(a.cgroup_buf, a.so.nr_cgroups);
	err = serve__run(&a.so, errbuf, sizeof(errbuf));
	if (err) {
		cli__error("serve", "%s", errbuf);
		return err == SESSION_ERR_USAGE ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
	}
	return 0;
}

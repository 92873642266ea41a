// SPDX-License-Identifier: MIT
/* `khbpf attach --pid PID ...` and `khbpf run ... -- CMD [ARGS...]` */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "cmd/cli.h"
#include "cmd/cmdargs.h"
#include "lib/fsutil.h"
#include "lib/jsonstream.h"
#include "lib/output.h"
#include "collect/privs.h"
#include "cmd/render.h"
#include "session/session.h"
#include "spans/spanfind.h"

/* The options attach and run share, after their own. */
#define COLLECT_COMMON_HELP                                                                 \
	"      --debug-dir DIR   for --span in a stripped object: look for its debug\n"     \
	"                        file in DIR first (DIR/.build-id/NN/REST.debug, or\n"      \
	"                        DIR/OBJDIR/DEBUGLINK), then where -dbgsym packages\n"      \
	"                        put them (/usr/lib/debug); repeatable\n"                   \
	"      --max-spans N     span records kept (default 100000); every call still\n"    \
	"                        counts in the per-metric totals\n"                         \
	"      --span-buffer SIZE  the span ring buffer: a power of two from 64K to\n"      \
	"                        1G (default 1M); records it has no room for are\n"         \
	"                        counted in loss.span_records_dropped_ringbuf\n"            \
	"      --private         create the -o file with mode 0600 (default 0644)\n"        \
	"  -q, --quiet           say nothing when the -o file is written (by default\n"     \
	"                        one line: the file, its size, what it holds)\n"            \
	"      --all             the terminal report lists every process, not the 20\n"     \
	"                        busiest (as khbpf report --all)\n"                         \
	"      --blocked         time each thread's and span's blocked time (off-CPU,\n"    \
	"                        not runnable) by cause: lock, io, sleep, fault,\n"         \
	"                        other; about 1.5 times the scheduler program's cost\n"     \
	"                        per switch of a target (see BENCHMARKS.md)\n"              \
	"      --wakers          --blocked, and who woke each thread (blocked.wakers):\n"   \
	"                        a sched_waking program and a hash update per stretch\n"    \
	"      --bpf-stats       time khbpf's BPF programs (BPF_ENABLE_STATS for the\n"     \
	"                        window: every BPF program on the host then pays two\n"     \
	"                        clock reads per run); without it `overhead` holds gaps\n"  \
	"      --counter-events E  per-span counters: 'hw' (cycles and instructions,\n"     \
	"                        the default), 'none', or 'sw-cpu-clock' (a test aid for\n" \
	"                        machines without a PMU: software cpu-clock ns stand in\n"  \
	"                        for both cycles and instructions)\n"                       \
	"      --span-links L    'auto' (the default): from 4 span sites on, the\n"         \
	"                        sites of one file share one uprobe_multi link each\n"      \
	"                        way where the kernel has them (6.6); 'multi': so\n"        \
	"                        for any number; 'per-site': a uprobe and a\n"              \
	"                        uretprobe link per site, the way of older kernels\n"       \
	"                        (a test aid)\n"                                            \
	"  -h, --help            this help\n\n"

void cmd_attach_help(FILE *f)
{
	fprintf(f,
		"Usage: khbpf attach --pid PID [--pid PID...] [--children] [--duration SECONDS]\n"
		"       khbpf attach --cgroup PATH [--cgroup PATH...] [--duration SECONDS]\n"
		"                    [--interval SECONDS] [-o FILE] [--json | --text] [--no-bpf]\n"
		"                    [--max-exited N] [--max-threads N] [--max-processes N]\n\n"
		"Watch running processes (every thread, including threads created later), or\n"
		"every task of a cgroup, until the duration passes, SIGINT/SIGTERM/SIGHUP\n"
		"arrives, or every process given has exited; then report per-process and\n"
		"per-thread scheduler evidence.\n\n"
		"Options:\n"
		"  -p, --pid PID         a process to watch; repeatable (up to 64)\n"
		"      --children        also the processes' descendants alive now and every\n"
		"                        process forked from them during the window\n"
		"      --cgroup PATH     every task in this cgroup v2 subtree (the path from the\n"
		"                        cgroup v2 root, e.g. /system.slice/nginx.service, or\n"
		"                        its full path under the cgroup2 mount), also tasks\n"
		"                        forked or moved into it; repeatable (16)\n"
		"      --max-processes N processes in the set over the window (default 8192;\n"
		"                        64 for --pid without --children); more are counted\n"
		"                        in loss.processes_not_joined\n"
		"  -d, --duration S      window length in seconds (decimals allowed, > 0)\n"
		"  -i, --interval S      CPU frequency sampling period (default 1)\n"
		"  -o, --output FILE     write the JSON evidence document to FILE atomically\n"
		"      --json            JSON document on stdout\n"
		"      --text            the terminal report on stdout, as `khbpf report` prints\n"
		"                        it (the default without -o, --json or a FILE below)\n"
		"      --html FILE       also the HTML report (`khbpf report --html`); '-': stdout\n"
		"      --perfetto FILE   also the Perfetto trace (`khbpf report --perfetto`)\n"
		"      --keyhog FILE     also the keyhog rendering (`khbpf report --keyhog`)\n"
		"      --no-bpf          read /proc at the window's ends instead of BPF\n"
		"      --max-exited N    exited-thread records kept in the kernel (default 65536)\n"
		"      --max-threads N   threads listed in the document (default 65536)\n"
		"      --span [OBJ:]SYM[=metric]  also measure calls of SYM (glob; OBJ a path or\n"
		"                        a library name such as libc.so.6); repeatable\n"
		"      --usdt-span [OBJ:]PROVIDER:START,DONE[=metric]  spans from USDT probes:\n"
		"                        open at START, close at the next DONE on the thread\n"
		"                        (OBJ: default the executable and its libraries;\n"
		"                        `khbpf list --usdt --pid PID` lists them); repeatable\n"
		"      --usdt [OBJ:]PROVIDER:NAME  count each matching USDT probe's hits per\n"
		"                        thread, process and in all (globs); repeatable\n"
		"      --key METRIC=argN:str|int  split METRIC (a span's or a counted probe's)\n"
		"                        by its START probe's or function's argument N\n"
		"                        (0-based; str: up to 63 bytes); repeatable\n"
		"      --max-keys N      keys per metric (default 256); more go to \"(other)\"\n"
		"      --span-cause METRIC=CAUSE  blocked time that begins inside a span of\n"
		"                        METRIC has CAUSE (lock, io, sleep or other), not the\n"
		"                        system call's: the application's own wait probes\n"
		"                        name what it waits for; needs --blocked; repeatable\n"
		"      --no-annotations  ignore KHBPF_SPAN annotations in the target\n" COLLECT_COMMON_HELP
		"Examples:\n"
		"  sudo khbpf attach --pid 1234 --duration 10\n"
		"  sudo khbpf attach --pid \"$(pgrep -o postgres)\" --children -d 10\n"
		"  sudo khbpf attach --cgroup /system.slice/postgresql@15-main.service -d 10\n"
		"  sudo khbpf attach --pid 1234 -d 5 --span 'libc.so.6:malloc=malloc'\n"
		"  sudo khbpf attach --pid \"$(pgrep -o postgres)\" --children -d 10 \\\n"
		"      --usdt-span postgresql:query__start,query__done=query --key query=arg0:str\n"
		"  sudo khbpf attach --pid \"$(pidof nginx | cut -d' ' -f1)\" -d 30 -o nginx.json\n");
}

void cmd_run_help(FILE *f)
{
	fprintf(f,
		"Usage: khbpf run [--duration SECONDS] [--interval SECONDS] [-o FILE]\n"
		"                 [--json | --text] [--as-root] [--no-bpf] [--no-children]\n"
		"                 -- CMD [ARGS...]\n\n"
		"Start CMD with the collector attached before its first instruction, so the\n"
		"evidence covers its whole life and that of every process it starts (fork,\n"
		"vfork, clone, any number of execs), each counted from before it first runs.\n"
		"The window ends when CMD exits. Exits with CMD's exit status (128+signal when\n"
		"killed). Under sudo, CMD runs as the invoking user unless --as-root is given.\n"
		"The first SIGINT/SIGTERM/SIGHUP is passed to CMD; a second ends the window.\n\n"
		"Options:\n"
		"      --no-children     CMD's own process only, not the processes it starts\n"
		"      --max-processes N processes in the set over the window (default 8192);\n"
		"                        more are counted in loss.processes_not_joined\n"
		"  -d, --duration S      end the window early (CMD keeps running; khbpf waits)\n"
		"  -i, --interval S      CPU frequency sampling period (default 1)\n"
		"  -o, --output FILE     write the JSON evidence document to FILE atomically\n"
		"      --json            JSON document on stdout\n"
		"      --text            the terminal report on stdout, as `khbpf report` prints\n"
		"                        it (the default without -o, --json or a FILE below)\n"
		"      --html FILE       also the HTML report (`khbpf report --html`); '-': stdout\n"
		"      --perfetto FILE   also the Perfetto trace (`khbpf report --perfetto`)\n"
		"      --keyhog FILE     also the keyhog rendering (`khbpf report --keyhog`)\n"
		"      --as-root         do not drop to SUDO_UID/SUDO_GID for CMD\n"
		"      --no-bpf          read /proc at the window's ends instead of BPF\n"
		"      --max-exited N    exited-thread records kept in the kernel (default 65536)\n"
		"      --max-threads N   threads listed in the document (default 65536)\n"
		"      --span [OBJ:]SYM[=metric]  also measure calls of SYM (glob) in CMD or\n"
		"                        a library it links (OBJ: a path or a name such as\n"
		"                        libc.so.6; a program CMD execs later: its absolute\n"
		"                        path); repeatable. A name none of them has is an\n"
		"                        error (exit 2), as is a --key METRIC no span has\n"
		"      --usdt-span [OBJ:]PROVIDER:START,DONE[=metric]  spans from USDT probes:\n"
		"                        open at START, close at the next DONE on the thread\n"
		"                        (OBJ: default CMD and its libraries; `khbpf list\n"
		"                        --usdt CMD` lists them); repeatable\n"
		"      --usdt [OBJ:]PROVIDER:NAME  count each matching USDT probe's hits per\n"
		"                        thread, process and in all (globs); repeatable\n"
		"      --key METRIC=argN:str|int  split METRIC (a span's or a counted probe's)\n"
		"                        by its START probe's or function's argument N\n"
		"                        (0-based; str: up to 63 bytes); repeatable\n"
		"      --max-keys N      keys per metric (default 256); more go to \"(other)\"\n"
		"      --span-cause METRIC=CAUSE  blocked time that begins inside a span of\n"
		"                        METRIC has CAUSE (lock, io, sleep or other), not the\n"
		"                        system call's: the application's own wait probes\n"
		"                        name what it waits for; needs --blocked; repeatable\n"
		"      --no-annotations  ignore KHBPF_SPAN annotations in CMD\n" COLLECT_COMMON_HELP
		"Examples:\n"
		"  sudo khbpf run -- make -j2\n"
		"  sudo khbpf run --span 'parse_*' -o spans.json -- ./my-server\n"
		"  sudo khbpf run --usdt-span python:gc__start,gc__done -- python3 app.py\n"
		"  sudo khbpf run --usdt 'libstdcxx:*' -- ./my-server\n"
		"  sudo khbpf run -o build.json -- ./my-server --port 8080\n");
}

int collect_args__parse(const char *cmd, int argc, char **argv, enum target_mode mode,
			struct collect_args *a)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'J' },
		{ "text", no_argument, NULL, 'T' },
		{ "as-root", no_argument, NULL, 'R' },
		{ "no-bpf", no_argument, NULL, 'N' },
		{ "max-exited", required_argument, NULL, 'E' },
		{ "max-threads", required_argument, NULL, 'M' },
		{ "span", required_argument, NULL, 'S' },
		{ "usdt-span", required_argument, NULL, 'U' },
		{ "usdt", required_argument, NULL, 'u' },
		{ "key", required_argument, NULL, 'k' },
		{ "max-keys", required_argument, NULL, 'x' },
		{ "no-annotations", no_argument, NULL, 'A' },
		{ "debug-dir", required_argument, NULL, 'g' },
		{ "max-spans", required_argument, NULL, 'X' },
		{ "span-buffer", required_argument, NULL, 'b' },
		{ "counter-events", required_argument, NULL, 'C' },
		{ "span-links", required_argument, NULL, 'L' },
		{ "bpf-stats", no_argument, NULL, 'B' },
		{ "wakers", no_argument, NULL, 'W' },
		{ "blocked", no_argument, NULL, 'K' },
		{ "private", no_argument, NULL, 'P' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "html", required_argument, NULL, 'H' },
		{ "perfetto", required_argument, NULL, 'F' },
		{ "keyhog", required_argument, NULL, 'Y' },
		{ "all", no_argument, NULL, 'a' },
		{ "children", no_argument, NULL, 'c' },
		{ "no-children", no_argument, NULL, 'n' },
		{ "cgroup", required_argument, NULL, 'G' },
		{ "max-processes", required_argument, NULL, 'm' },
		{ "span-cause", required_argument, NULL, CLI_OPT_SPAN_CAUSE },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct session_opts *so = &a->so;
	uint64_t v;
	int c, err;

	memset(a, 0, sizeof(*a));
	so->sz = sizeof(*so);
	so->mode = mode;
	so->log = stderr;
	so->span_counters = SCHED_COUNTERS_HW;
	so->span_reqs = a->reqs;
	so->key_reqs = a->keys;
	so->cause_reqs = a->causes;
	so->debug_dirs = a->debug_dirs;
	so->pids = a->pids;
	so->cgroup_paths = a->cgroups;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:p:d:i:o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (mode != TARGET_MODE_ATTACH)
				goto usage;
			if (fsutil__parse_u64(optarg, &v) || v == 0 || v > INT_MAX) {
				cli__error(cmd, "--pid '%s': expected a process id (1..%d)", optarg,
					   INT_MAX);
				return CLI_EXIT_USAGE;
			}
			if (so->nr_pids == CMDARGS_MAX_PIDS) {
				cli__error(
					cmd,
					"at most %d --pid options; use --children or --cgroup for more",
					CMDARGS_MAX_PIDS);
				return CLI_EXIT_USAGE;
			}
			a->pids[so->nr_pids++] = (pid_t)v;
			if (so->nr_pids == 1)
				so->pid = (pid_t)v;
			break;
		case 'c':
		case 'G':
			if (mode != TARGET_MODE_ATTACH)
				goto usage;
			if (c == 'c') {
				so->children = true;
				break;
			}
			if (so->nr_cgroup_paths == KHBPF_MAX_CGROUP_FILTERS) {
				cli__error(cmd, "at most %d --cgroup options; name a parent cgroup",
					   KHBPF_MAX_CGROUP_FILTERS);
				return CLI_EXIT_USAGE;
			}
			if (cli__cgroup_option(cmd, optarg, a->cgroup_buf[so->nr_cgroup_paths]))
				return CLI_EXIT_USAGE;
			a->cgroups[so->nr_cgroup_paths] = a->cgroup_buf[so->nr_cgroup_paths];
			so->nr_cgroup_paths++;
			break;
		case 'n':
			if (mode != TARGET_MODE_RUN)
				goto usage;
			so->no_children = true;
			break;
		case 'a':
			a->all = true;
			break;
		case 'm':
			if (cli__parse_count(optarg, 1u << 24, &so->max_processes)) {
				cli__error(cmd,
					   "--max-processes '%s': expected a count from 1 to %u",
					   optarg, 1u << 24);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'd':
		case 'i':
			err = cli__parse_seconds(optarg,
						 c == 'd' ? &so->duration_ns : &so->interval_ns);
			if (err) {
				cli__error(
					cmd,
					"--%s '%s': expected seconds > 0 and <= %llu (e.g. 10 or 0.5)",
					c == 'd' ? "duration" : "interval", optarg,
					CLI_MAX_SECONDS);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'o':
			a->out = optarg;
			break;
		case 'J':
			a->json = true;
			break;
		case 'T':
			a->text = true;
			break;
		case 'H':
			a->html = optarg;
			break;
		case 'F':
			a->perfetto = optarg;
			break;
		case 'Y':
			a->keyhog = optarg;
			break;
		case 'R':
			if (mode != TARGET_MODE_RUN)
				goto usage;
			so->as_root = true;
			break;
		case 'N':
			so->no_bpf = true;
			break;
		case 'E':
		case 'M':
			if (cli__parse_count(optarg, 1u << 24,
					     c == 'E' ? &so->max_exited : &so->max_threads)) {
				cli__error(cmd, "--%s '%s': expected a count from 1 to %u",
					   c == 'E' ? "max-exited" : "max-threads", optarg,
					   1u << 24);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'k':
		case 'x':
		case 'S':
		case 'U':
		case 'u':
			if (cli__span_option(cmd, c, optarg, a->reqs, a->req_buf, &so->nr_span_reqs,
					     a->keys, &so->nr_key_reqs, &so->max_keys))
				return CLI_EXIT_USAGE;
			break;
		case CLI_OPT_SPAN_CAUSE:
			if (cli__span_cause_option(cmd, optarg, a->causes, &so->nr_cause_reqs))
				return CLI_EXIT_USAGE;
			break;
		case 'A':
			so->no_annotations = true;
			break;
		case 'g':
			if (so->nr_debug_dirs == CMDARGS_MAX_DEBUG_DIRS) {
				cli__error(cmd, "--debug-dir: at most %d of them",
					   CMDARGS_MAX_DEBUG_DIRS);
				return CLI_EXIT_USAGE;
			}
			if (!optarg[0]) {
				cli__error(cmd, "--debug-dir '': expected a directory");
				return CLI_EXIT_USAGE;
			}
			a->debug_dirs[so->nr_debug_dirs++] = optarg;
			break;
		case 'X': {
			uint32_t n;

			if (cli__parse_count(optarg, 1u << 24, &n)) {
				cli__error(cmd, "--max-spans '%s': expected a count from 1 to %u",
					   optarg, 1u << 24);
				return CLI_EXIT_USAGE;
			}
			so->max_spans = n;
			break;
		}
		case 'b':
			if (cli__parse_bytes(optarg, &v) || v < KHBPF_SPAN_RINGBUF_MIN ||
			    v > KHBPF_SPAN_RINGBUF_MAX || (v & (v - 1))) {
				cli__error(
					cmd,
					"--span-buffer '%s': expected a power of two from 64K to 1G",
					optarg);
				return CLI_EXIT_USAGE;
			}
			so->span_buffer = (uint32_t)v;
			break;
		case 'B':
			so->bpf_stats = true;
			break;
		case 'W':
			so->wakers = true;
			so->blocked = true;
			break;
		case 'K':
			so->blocked = true;
			break;
		case 'q':
			a->quiet = true;
			break;
		case 'P':
			a->private_out = true;
			break;
		case 'C':
			if (!strcmp(optarg, "hw")) {
				so->span_counters = SCHED_COUNTERS_HW;
			} else if (!strcmp(optarg, "none")) {
				so->span_counters = SCHED_COUNTERS_NONE;
			} else if (!strcmp(optarg, "sw-cpu-clock")) {
				so->span_counters = SCHED_COUNTERS_SW_CPU_CLOCK;
			} else {
				cli__error(
					cmd,
					"--counter-events '%s': expected hw, none or sw-cpu-clock",
					optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'L':
			if (!strcmp(optarg, "auto")) {
				so->span_links = SCHED_SPAN_LINKS_AUTO;
			} else if (!strcmp(optarg, "multi")) {
				so->span_links = SCHED_SPAN_LINKS_MULTI;
			} else if (!strcmp(optarg, "per-site")) {
				so->span_links = SCHED_SPAN_LINKS_PER_SITE;
			} else {
				cli__error(cmd,
					   "--span-links '%s': expected auto, multi or per-site",
					   optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'h':
			a->help = true;
			return 0;
		default:
			return cli__bad_option(cmd, c, argv);
		}
	}
	if (mode == TARGET_MODE_ATTACH) {
		if (!so->nr_pids && !so->nr_cgroup_paths) {
			cli__error(
				cmd,
				"--pid PID or --cgroup PATH is required; run 'khbpf attach --help'");
			return CLI_EXIT_USAGE;
		}
		if (so->nr_pids && so->nr_cgroup_paths) {
			cli__error(cmd,
				   "--pid and --cgroup name two different sets; give one of them");
			return CLI_EXIT_USAGE;
		}
		if (so->children && so->nr_cgroup_paths) {
			cli__error(
				cmd,
				"--children applies to --pid; a --cgroup set already holds every task forked in it");
			return CLI_EXIT_USAGE;
		}
		if (optind < argc) {
			cli__error(cmd, "unexpected argument '%s'; run 'khbpf attach --help'",
				   argv[optind]);
			return CLI_EXIT_USAGE;
		}
	} else {
		if (optind >= argc) {
			cli__error(cmd,
				   "no command given; usage: khbpf run [OPTIONS] -- CMD [ARGS...]");
			return CLI_EXIT_USAGE;
		}
		so->argv = argv + optind;
	}
	if (so->nr_cause_reqs && !so->blocked) {
		cli__error(
			cmd,
			"--span-cause names a cause of blocked time; add --blocked (or --wakers)");
		return CLI_EXIT_USAGE;
	}
	if (a->json && a->text) {
		cli__error(cmd, "--json and --text both write to stdout; pick one");
		return CLI_EXIT_USAGE;
	}
	return 0;

usage:
	cli__error(cmd, "run 'khbpf %s --help' for usage", cmd);
	return CLI_EXIT_USAGE;
}

/* n bytes as people read them: 812 bytes, 4.0 KiB, 2.3 MiB (no float). */
static void format_size(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	uint64_t scale = 1024;
	int u = 0;

	if (n < 1024) {
		snprintf(buf, len, "%" PRIu64 " bytes", n);
		return;
	}
	while (u < 3 && n / scale >= 1024) {
		scale *= 1024;
		u++;
	}
	/* One decimal, rounded: tenths of the unit. */
	n = (n * 10 + scale / 2) / scale;
	snprintf(buf, len, "%" PRIu64 ".%" PRIu64 " %s", n / 10, n % 10, units[u]);
}

/*
 * The one line -o prints when its file is whole (--quiet: none), on
 * stderr, counted from the document it wrote: a run with no terminal
 * report otherwise ends without a word.
 */
static void say_written(const char *cmd, const char *path, struct json_object *doc)
{
	struct json_object *events = json_object_object_get(doc, "events"), *avail;
	size_t procs = jsonstream__length(json_object_object_get(doc, "processes"));
	size_t threads = jsonstream__length(json_object_object_get(doc, "threads"));
	size_t spans = jsonstream__length(json_object_object_get(events, "spans"));
	char size[32] = "size unknown";
	struct stat st;

	if (!stat(path, &st))
		format_size((uint64_t)st.st_size, size, sizeof(size));
	fprintf(stderr, "khbpf %s: wrote %s (%s): %zu process%s, %zu thread%s", cmd, path, size,
		procs, procs == 1 ? "" : "es", threads, threads == 1 ? "" : "s");
	avail = json_object_object_get(events, "availability");
	if (!strcmp(json_object_get_string(json_object_object_get(avail, "status")) ?: "",
		    "recorded"))
		fprintf(stderr, ", %zu span record%s", spans, spans == 1 ? "" : "s");
	fputc('\n', stderr);
}

static int collect(const char *cmd, int argc, char **argv, enum target_mode mode)
{
	struct output_opts oopts = { .sz = sizeof(oopts) };
	struct privs_writer writer;
	struct render_opts ro = { .sz = sizeof(ro), .cmd = cmd };
	struct json_object *doc = NULL;
	struct collect_args *a;
	struct session *s = NULL;
	char errbuf[1024] = "";
	const char *out;
	int err, ret;

	/* A signal from here on ends the window, whatever stage the setup is at. */
	session__hold_signals();
	/* About 100 KiB: the --span and --cgroup buffers. */
	a = malloc(sizeof(*a));
	if (!a) {
		cli__error(cmd, "out of memory");
		return CLI_EXIT_FAILURE;
	}
	ret = collect_args__parse(cmd, argc, argv, mode, a);
	if (ret || a->help) {
		if (a->help && mode == TARGET_MODE_RUN)
			cmd_run_help(stdout);
		else if (a->help)
			cmd_attach_help(stdout);
		goto out;
	}
	cli__cgroup_full_paths(a->cgroup_buf, a->so.nr_cgroup_paths);
	out = a->out;
	if (out) {
		/* As the document will be written: after the privilege drop. */
		err = privs__writer_begin(&writer);
		if (err)
			cli__error(cmd, "-o '%s': cannot take the invoking user's ids: %s", out,
				   strerror(-err));
		else
			err = cli__check_output_path(cmd, "-o", out);
		privs__writer_end(&writer);
		if (err) {
			ret = CLI_EXIT_FAILURE;
			goto out;
		}
	}
	if (a->private_out)
		oopts.mode = OUTPUT_MODE_PRIVATE;
	ro.html = a->html;
	ro.perfetto = a->perfetto;
	ro.keyhog = a->keyhog;
	ro.all = a->all;
	ro.private_out = a->private_out;
	ro.text = a->text || !(out || a->json || a->html || a->perfetto || a->keyhog);
	/* As -o: checked before anything runs, as the invoking user. */
	err = privs__writer_begin(&writer);
	ret = err ? CLI_EXIT_FAILURE : render__check(&ro, a->json);
	privs__writer_end(&writer);
	if (ret)
		goto out;

	err = session__run(&s, &a->so, errbuf, sizeof(errbuf));
	if (err) {
		cli__error(cmd, "%s", errbuf);
		ret = err == SESSION_ERR_USAGE ? CLI_EXIT_USAGE :
		      s			       ? session__exit_code(s) :
						 CLI_EXIT_FAILURE;
		session__destroy(s);
		ret = ret ? ret : CLI_EXIT_FAILURE;
		goto out;
	}
	if (out || a->json) {
		doc = session__document(s);
		if (out)
			ret = cli__emit_json_opts(cmd, doc, out, &oopts);
		if (out && !ret && !a->quiet && strcmp(out, "-"))
			say_written(cmd, out, doc);
		if (!ret && a->json)
			ret = cli__emit_json(cmd, doc, "-");
		json_object_put(doc);
	}
	/* Rendered from the document, by the code `khbpf report` uses. */
	if (!ret && (ro.text || ro.html || ro.perfetto || ro.keyhog)) {
		doc = session__document(s);
		ret = doc ? render__json(doc, &ro) : CLI_EXIT_FAILURE;
		if (!doc)
			cli__error(cmd, "out of memory making the document");
		json_object_put(doc);
	}
	err = session__finish(s);
	if (err) {
		cli__error(cmd, "waiting for the command: %s", strerror(-err));
		ret = ret ? ret : CLI_EXIT_FAILURE;
	}
	if (!ret)
		ret = session__exit_code(s);
	session__destroy(s);
out:
	free(a);
	return ret;
}

int cmd_attach(int argc, char **argv)
{
	return collect("attach", argc, argv, TARGET_MODE_ATTACH);
}

int cmd_run(int argc, char **argv)
{
	return collect("run", argc, argv, TARGET_MODE_RUN);
}

// SPDX-License-Identifier: MIT
/*
 * The command line: the first byte picks attach, run, serve or report, the
 * rest split at NUL bytes is its argv, parsed by the command's own parser
 * (cmdargs.h) without running anything. Properties:
 *   - a parser returns 0 or CLI_EXIT_USAGE, and on 0 every value is within
 *     the bounds its option promises
 *   - every argument as a --span value: span_request__parse succeeds only
 *     for [OBJECT:]SYMBOL[=metric] of the documented characters and gives
 *     back the pieces that make up the argument exactly
 *   - every argument as seconds and as a count: cli__parse_seconds and
 *     cli__parse_count agree with an independent reading
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>

#include "serve/cglabels.h"
#include "cmd/cli.h"
#include "cmd/cmdargs.h"
#include "fuzz.h"

#define MAX_ARGS 64

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* Each rejected argv prints its one line; keep the fuzzer's output readable. */
	stderr = fopen("/dev/null", "w");
	if (!stderr)
		abort();
	return 0;
}

static bool symbol_ok(const char *s, size_t len)
{
	static const char extra[] = "_.$@*?[]!^-";
	size_t i;

	if (!len || len > 255)
		return false;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      (c && memchr(extra, c, sizeof(extra) - 1))))
			return false;
	}
	return true;
}

static void check_span_arg(const char *arg)
{
	const char *eq = strchr(arg, '='), *colon = NULL, *p, *sym;
	char buf[512], again[1024];
	struct span_request r;
	size_t len = strlen(arg);
	bool ok;
	int err;

	for (p = arg; p < (eq ? eq : arg + len); p++)
		if (*p == ':')
			colon = p;
	sym = colon ? colon + 1 : arg;
	ok = symbol_ok(sym, (size_t)((eq ? eq : arg + len) - sym)) && (!eq || fuzz_kebab(eq + 1));
	if (colon) {
		ok = ok && colon > arg && (size_t)(colon - arg) < PATH_MAX;
		for (p = arg; p < colon; p++)
			ok = ok && (unsigned char)*p >= 0x20 && *p != 0x7f;
	}
	err = span_request__parse(arg, &r, buf, sizeof(buf));
	if (!ok) {
		FUZZ_CHECK(err == -EINVAL);
		return;
	}
	if (len >= sizeof(buf)) {
		FUZZ_CHECK(err == -ENAMETOOLONG);
		return;
	}
	FUZZ_CHECK(err == 0);
	FUZZ_CHECK((r.object != NULL) == (colon != NULL));
	FUZZ_CHECK((r.metric != NULL) == (eq != NULL));
	snprintf(again, sizeof(again), "%s%s%s%s%s", r.object ? r.object : "", r.object ? ":" : "",
		 r.symbol, r.metric ? "=" : "", r.metric ? r.metric : "");
	FUZZ_CHECK(!strcmp(again, arg));
}

/* Decimal seconds with up to 9 decimals, exactly, > 0 and at most a year. */
static bool ref_seconds(const char *s, uint64_t *ns)
{
	unsigned __int128 whole = 0, frac = 0;
	size_t digits = 0, fdigits = 0;

	for (; *s >= '0' && *s <= '9'; s++, digits++)
		if (whole <= CLI_MAX_SECONDS)
			whole = whole * 10 + (unsigned)(*s - '0');
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++, fdigits++)
			if (fdigits < 9)
				frac = frac * 10 + (unsigned)(*s - '0');
	if (*s || (!digits && !fdigits) || fdigits > 9)
		return false;
	while (fdigits++ < 9)
		frac *= 10;
	whole = whole * 1000000000u + frac;
	if (!whole || whole > (unsigned __int128)CLI_MAX_SECONDS * 1000000000u)
		return false;
	*ns = (uint64_t)whole;
	return true;
}

static void check_number_arg(const char *arg)
{
	uint64_t ns = 0, want = 0;
	uint32_t count = 0;
	bool ok;
	int err;

	ok = ref_seconds(arg, &want);
	err = cli__parse_seconds(arg, &ns);
	FUZZ_CHECK(err <= 0);
	FUZZ_CHECK(!err == ok);
	if (ok)
		FUZZ_CHECK(ns == want);

	err = cli__parse_count(arg, 1000, &count);
	{
		size_t digits = strspn(arg, "0123456789"), len = strlen(arg);
		bool shape =
			digits && (digits == len || (digits + 1 == len && arg[digits] == '\n'));
		unsigned long long v;

		errno = 0;
		v = shape ? strtoull(arg, NULL, 10) : 0;
		ok = shape && errno != ERANGE && v >= 1 && v <= 1000;
		FUZZ_CHECK(!err == ok);
		if (ok)
			FUZZ_CHECK(count == v);
	}
}

static bool seconds_ok(uint64_t ns)
{
	return !ns || ns <= CLI_MAX_SECONDS * 1000000000ULL;
}

static bool count_ok(uint32_t v, uint32_t max)
{
	return v <= max;
}

static void check_collect(int argc, char **argv, enum target_mode mode)
{
	static struct collect_args a;
	const struct session_opts *so = &a.so;
	size_t i;
	int ret;

	optind = 0;
	ret = collect_args__parse(argv[0], argc, argv, mode, &a);
	FUZZ_CHECK(ret == 0 || ret == CLI_EXIT_USAGE);
	if (ret || a.help)
		return;
	FUZZ_CHECK(so->sz == sizeof(*so) && so->mode == mode);
	if (mode == TARGET_MODE_ATTACH) {
		/* Processes, or cgroups, not both; --children only with processes. */
		FUZZ_CHECK(!so->argv && !so->as_root && !so->no_children);
		FUZZ_CHECK(!!so->nr_pids != !!so->nr_cgroup_paths);
		FUZZ_CHECK(so->nr_pids <= CMDARGS_MAX_PIDS && so->pids == a.pids);
		FUZZ_CHECK(so->nr_cgroup_paths <= KHBPF_MAX_CGROUP_FILTERS &&
			   so->cgroup_paths == a.cgroups);
		FUZZ_CHECK(!so->nr_pids || (so->pid >= 1 && so->pid == a.pids[0]));
		for (i = 0; i < so->nr_pids; i++)
			FUZZ_CHECK(a.pids[i] >= 1);
		for (i = 0; i < so->nr_cgroup_paths; i++)
			FUZZ_CHECK(a.cgroups[i][0] == '/');
		FUZZ_CHECK(!(so->children && so->nr_cgroup_paths));
	} else {
		FUZZ_CHECK(!so->pid && so->argv && so->argv[0] && !so->nr_pids);
		FUZZ_CHECK(!so->children && !so->nr_cgroup_paths);
		FUZZ_CHECK(so->argv >= argv + 1 && so->argv < argv + argc);
	}
	FUZZ_CHECK(count_ok(so->max_processes, 1u << 24));
	FUZZ_CHECK(!(a.json && a.text));
	FUZZ_CHECK(seconds_ok(so->duration_ns) && seconds_ok(so->interval_ns));
	FUZZ_CHECK(count_ok(so->max_exited, 1u << 24) && count_ok(so->max_threads, 1u << 24));
	FUZZ_CHECK(so->max_spans <= 1u << 24);
	FUZZ_CHECK(so->span_counters == SCHED_COUNTERS_HW ||
		   so->span_counters == SCHED_COUNTERS_NONE ||
		   so->span_counters == SCHED_COUNTERS_SW_CPU_CLOCK);
	FUZZ_CHECK(so->span_reqs == a.reqs && so->nr_span_reqs <= CMDARGS_MAX_SPANS);
	for (i = 0; i < so->nr_span_reqs; i++) {
		const struct span_request *r = &a.reqs[i];

		FUZZ_CHECK(symbol_ok(r->symbol, strlen(r->symbol)));
		FUZZ_CHECK(!r->metric || fuzz_kebab(r->metric));
		FUZZ_CHECK(!r->object || r->object[0]);
	}
	FUZZ_CHECK(so->debug_dirs == a.debug_dirs && so->nr_debug_dirs <= CMDARGS_MAX_DEBUG_DIRS);
	for (i = 0; i < so->nr_debug_dirs; i++)
		FUZZ_CHECK(a.debug_dirs[i][0]);
}

static void check_serve(int argc, char **argv)
{
	struct serve_args a;
	const struct serve_opts *so = &a.so;
	size_t i;
	int ret;

	optind = 0;
	ret = serve_args__parse(argc, argv, &a);
	FUZZ_CHECK(ret == 0 || ret == CLI_EXIT_USAGE);
	if (ret || a.help)
		return;
	FUZZ_CHECK(so->pids == a.pids && so->nr_pids <= CMDARGS_MAX_PIDS);
	for (i = 0; i < so->nr_pids; i++)
		FUZZ_CHECK(a.pids[i] > 0 && a.pids[i] < (1 << 22));
	FUZZ_CHECK(so->cgroups == a.cgroups && so->nr_cgroups <= KHBPF_MAX_CGROUP_FILTERS);
	for (i = 0; i < so->nr_cgroups; i++)
		FUZZ_CHECK(a.cgroups[i][0] == '/');
	FUZZ_CHECK(!so->top || (so->group_by == KHBPF_GROUP_PROCESS && so->top <= 10000));
	FUZZ_CHECK(!(so->labels & ~CGLABELS_ALL));
	FUZZ_CHECK(!so->labels || so->group_by != KHBPF_GROUP_PROCESS);
	FUZZ_CHECK(!so->container_names || (so->labels & CGLABELS_CONTAINER));
	FUZZ_CHECK(!so->max_groups || (so->max_groups >= 16 && so->max_groups <= 1u << 20));
	FUZZ_CHECK(seconds_ok(so->interval_ns) && seconds_ok(so->max_age_ns));
	FUZZ_CHECK(count_ok(so->max_exited, 1u << 24) && count_ok(so->max_threads, 1u << 24));
}

static void check_report(int argc, char **argv)
{
	struct report_args a;
	int ret;

	optind = 0;
	ret = report_args__parse(argc, argv, &a);
	FUZZ_CHECK(ret == 0 || ret == CLI_EXIT_USAGE);
	if (ret || a.help)
		return;
	FUZZ_CHECK(a.in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "attach", "run", "serve", "report" };
	struct fuzz_part parts[MAX_ARGS];
	char *argv[MAX_ARGS + 2], *copy[MAX_ARGS + 1];
	size_t n, i;
	int which;

	if (!size)
		return 0;
	which = data[0] % 4;
	n = size > 1 ? fuzz_split(data + 1, size - 1, parts, MAX_ARGS) : 0;
	copy[0] = strdup(names[which]);
	for (i = 0; i < n; i++)
		copy[i + 1] = fuzz_strndup(parts[i].p, parts[i].len);
	/* getopt may permute argv: parse a copy of the pointers. */
	for (i = 0; i <= n; i++)
		argv[i] = copy[i];
	argv[n + 1] = NULL;

	for (i = 1; i <= n; i++) {
		check_span_arg(copy[i]);
		check_number_arg(copy[i]);
	}
	switch (which) {
	case 0:
		check_collect((int)n + 1, argv, TARGET_MODE_ATTACH);
		break;
	case 1:
		check_collect((int)n + 1, argv, TARGET_MODE_RUN);
		break;
	case 2:
		check_serve((int)n + 1, argv);
		break;
	case 3:
		check_report((int)n + 1, argv);
		break;
	}
	for (i = 0; i <= n; i++)
		free(copy[i]);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * bench-span-floor [--stats] [--clock] --pid PID BINARY FUNCTION: attach an
 * empty uprobe and an empty uretprobe (bpf/bench_span.bpf.c) to FUNCTION of
 * BINARY for process PID, print "ready", and hold them until stdin closes.
 * bench-span-floor [--stats] [--clock] --pid PID --sites BINARY START DONE:
 * the same two programs as plain uprobes at the file offsets START and DONE
 * (decimal or 0x hex), a USDT pair's two sites (`khbpf list --usdt --json`
 * gives them). No ref_ctr_offset is set: for probes without a semaphore.
 * With --clock the pair only reads the time, once at each end.
 * With --stats, BPF run-time stats are on (BPF_ENABLE_STATS) while they are
 * held, and at the end it prints (exit: DONE's program with --sites)
 *	{"enter_run_cnt": N, "enter_run_time_ns": N, "exit_run_cnt": N, "exit_run_time_ns": N}
 * A benchmark helper: `make bench` builds it into build/tools/.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench_span.skel.h"

static int usage(void)
{
	fprintf(stderr,
		"bench-span-floor: usage: bench-span-floor [--stats] [--clock] --pid PID BINARY "
		"FUNCTION\n"
		"       bench-span-floor [--stats] [--clock] --pid PID --sites BINARY START DONE\n");
	return 2;
}

/* At function (its entry, or its return with ret), else at the file offset. */
static struct bpf_link *attach(struct bpf_program *prog, int pid, const char *binary,
			       const char *function, size_t offset, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = function, .retprobe = ret);
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog, pid, binary, offset, &uo);
	if (!link && function)
		fprintf(stderr, "bench-span-floor: cannot attach the %s to %s:%s: %s\n",
			ret ? "uretprobe" : "uprobe", binary, function, strerror(errno));
	else if (!link)
		fprintf(stderr, "bench-span-floor: cannot attach the uprobe to %s at 0x%zx: %s\n",
			binary, offset, strerror(errno));
	return link;
}

static int parse_offset(const char *s, size_t *offset)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || !v || v > SIZE_MAX)
		return -1;
	*offset = (size_t)v;
	return 0;
}

static int prog_stats(struct bpf_program *prog, struct bpf_prog_info *info)
{
	__u32 len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	return bpf_obj_get_info_by_fd(bpf_program__fd(prog), info, &len);
}

int main(int argc, char **argv)
{
	struct bpf_program *pin, *pout;
	struct bpf_link *in = NULL, *out = NULL;
	struct bench_span_bpf *skel = NULL;
	struct bpf_prog_info ii, oi;
	int a = 1, pid = 0, stats_fd = -1, err = 1;
	bool stats = false, clock = false, sites = false;
	size_t start = 0, done = 0;
	char *end, buf[64];

	if (a < argc && !strcmp(argv[a], "--stats")) {
		stats = true;
		a++;
	}
	if (a < argc && !strcmp(argv[a], "--clock")) {
		clock = true;
		a++;
	}
	if (a + 1 < argc && !strcmp(argv[a], "--pid")) {
		errno = 0;
		pid = (int)strtol(argv[a + 1], &end, 10);
		if (errno || *end || pid <= 0)
			return usage();
		a += 2;
	}
	if (a < argc && !strcmp(argv[a], "--sites")) {
		sites = true;
		a++;
		if (argc - a != 3 || parse_offset(argv[a + 1], &start) ||
		    parse_offset(argv[a + 2], &done))
			return usage();
	}
	if (!pid || (!sites && argc - a != 2))
		return usage();

	if (stats) {
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats_fd < 0) {
			fprintf(stderr, "bench-span-floor: BPF_ENABLE_STATS: %s\n",
				strerror(errno));
			return 1;
		}
	}
	skel = bench_span_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "bench-span-floor: cannot load: %s\n", strerror(errno));
		goto cleanup;
	}
	pin = clock ? skel->progs.khbpf_clock_in : skel->progs.khbpf_floor_in;
	pout = clock ? skel->progs.khbpf_clock_out : skel->progs.khbpf_floor_out;
	if (sites) {
		/* Both plain uprobes: DONE is a site of its own, not a return. */
		in = attach(pin, pid, argv[a], NULL, start, false);
		out = in ? attach(pout, pid, argv[a], NULL, done, false) : NULL;
	} else {
		in = attach(pin, pid, argv[a], argv[a + 1], 0, false);
		out = in ? attach(pout, pid, argv[a], argv[a + 1], 0, true) : NULL;
	}
	if (!out)
		goto cleanup;
	printf("ready\n");
	fflush(stdout);
	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
	if (stats) {
		if (prog_stats(pin, &ii) || prog_stats(pout, &oi)) {
			fprintf(stderr, "bench-span-floor: program info: %s\n", strerror(errno));
			goto cleanup;
		}
		printf("{\"enter_run_cnt\": %" PRIu64 ", \"enter_run_time_ns\": %" PRIu64
		       ", \"exit_run_cnt\": %" PRIu64 ", \"exit_run_time_ns\": %" PRIu64 "}\n",
		       (uint64_t)ii.run_cnt, (uint64_t)ii.run_time_ns, (uint64_t)oi.run_cnt,
		       (uint64_t)oi.run_time_ns);
	}
	err = 0;
cleanup:
	bpf_link__destroy(out);
	bpf_link__destroy(in);
	bench_span_bpf__destroy(skel);
	if (stats_fd >= 0)
		close(stats_fd);
	return err;
}

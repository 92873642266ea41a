// SPDX-License-Identifier: MIT
/*
 * bench-empty [--no-attach | --no-stats]: hold BPF run-time stats on
 * (BPF_ENABLE_STATS) and, unless --no-attach, an empty tp_btf/sched_switch
 * program, until stdin closes; then print {"run_cnt": N, "run_time_ns": N} of
 * that program. --no-stats attaches the program with stats left off (its
 * counts then read 0): the floor's added time as a user's workload sees it.
 * A benchmark helper: `make bench` builds it into build/tools/.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.skel.h"

int main(int argc, char **argv)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct bench_bpf *skel = NULL;
	bool attach = !(argc == 2 && !strcmp(argv[1], "--no-attach"));
	bool stats = !(argc == 2 && !strcmp(argv[1], "--no-stats"));
	int stats_fd = -1, err = 1;
	char buf[64];

	if (argc > 2 || (argc == 2 && attach && stats)) {
		fprintf(stderr, "bench-empty: usage: bench-empty [--no-attach | --no-stats]\n");
		return 2;
	}
	if (stats)
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats && stats_fd < 0) {
		fprintf(stderr, "bench-empty: BPF_ENABLE_STATS: %s\n", strerror(errno));
		return 1;
	}
	if (attach) {
		skel = bench_bpf__open_and_load();
		if (!skel || bench_bpf__attach(skel)) {
			fprintf(stderr, "bench-empty: cannot load/attach: %s\n", strerror(errno));
			goto cleanup;
		}
	}
	printf("ready\n");
	fflush(stdout);
	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
	if (attach) {
		if (bpf_obj_get_info_by_fd(bpf_program__fd(skel->progs.khbpf_bench_empty), &info,
					   &len))
			goto cleanup;
		printf("{\"run_cnt\": %" PRIu64 ", \"run_time_ns\": %" PRIu64 "}\n",
		       (uint64_t)info.run_cnt, (uint64_t)info.run_time_ns);
	}
	err = 0;
cleanup:
	bench_bpf__destroy(skel);
	if (stats_fd >= 0)
		close(stats_fd);
	return err;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * `make bench` only: the cheapest possible program on sched_switch, the
 * floor that khbpf's cost for a non-target task is compared with.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(khbpf_bench_empty)
{
	return 0;
}

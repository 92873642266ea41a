// SPDX-License-Identifier: GPL-2.0
/*
 * `make bench` only: the cheapest possible uprobe and uretprobe, the floor
 * that khbpf's cost per span is compared with (tools/bench-span-floor.c
 * attaches them to one function, or both as plain uprobes to a USDT pair's
 * START and DONE sites: the section only sets libbpf's default); and the
 * cheapest pair that times a span, one bpf_ktime_get_ns() at each end,
 * which any span timer pays.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("uprobe")
int BPF_KPROBE(khbpf_floor_in)
{
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(khbpf_floor_out)
{
	return 0;
}

__u64 clock_start, clock_sum;

SEC("uprobe")
int BPF_KPROBE(khbpf_clock_in)
{
	clock_start = bpf_ktime_get_ns();
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(khbpf_clock_out)
{
	clock_sum += bpf_ktime_get_ns() - clock_start;
	return 0;
}

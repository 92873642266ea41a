// SPDX-License-Identifier: GPL-2.0
/*
 * `make bench` only: the cheapest possible uprobe and uretprobe, the floor
 * that khbpf's cost per span is compared with (tools/bench-span-floor.c
 * attaches them to one function).
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

/* SPDX-License-Identifier: MIT */
/*
 * uprobe_multi links (Linux 6.6): one BPF_LINK_CREATE puts a program on many
 * offsets of one file, and one close takes them all off again, after one
 * grace period instead of one per probe. libbpf 1.1 has no API for it and
 * Debian 12's <linux/bpf.h> (6.1) no union member, so the command is made
 * here with the layout of include/uapi/linux/bpf.h.
 */
#ifndef KHBPF_UPROBE_MULTI_H
#define KHBPF_UPROBE_MULTI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* enum bpf_attach_type's BPF_TRACE_UPROBE_MULTI: the program's expected attach type. */
#define UPROBE_MULTI_ATTACH_TYPE 48
/* MAX_UPROBE_MULTI_CNT of kernel/trace/bpf_trace.c: offsets in one link. */
#define UPROBE_MULTI_MAX_CNT (1U << 20)

/*
 * A link running prog_fd (loaded with expected attach type
 * UPROBE_MULTI_ATTACH_TYPE) at each of cnt offsets of path, for process pid
 * only (0: every process), at entry or (retprobe) at return; cookies[i] is
 * what bpf_get_attach_cookie() returns at offsets[i] (cookies may be NULL);
 * ref_ctr_offsets[i] the file offset of a USDT semaphore the kernel raises
 * while the probe is on (may be NULL; 0 entries have none).
 * The link fd, or -errno: the kernel registers the offsets in order and
 * undoes them all when one fails.
 */
int uprobe_multi__attach(int prog_fd, const char *path, const uint64_t *offsets,
			 const uint64_t *cookies, const uint64_t *ref_ctr_offsets, uint32_t cnt,
			 pid_t pid, bool retprobe);

/*
 * Can this kernel make such a link? A program of that attach type is loaded
 * and a link asked for on "/", which the kernel refuses with EBADF (not a
 * regular file) only once it has parsed a uprobe_multi request
 * (bpf_uprobe_multi_link_attach). 1 yes, 0 no, -errno cannot tell (no
 * privilege).
 */
int uprobe_multi__probe(void);

#endif /* KHBPF_UPROBE_MULTI_H */

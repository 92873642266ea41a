// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>

#include "host/uprobe_multi.h"

/* BPF_F_UPROBE_MULTI_RETURN of the uapi: the programs run at the return. */
#define UPROBE_MULTI_RETURN 1U

/*
 * union bpf_attr's link_create with its uprobe_multi member (6.6's
 * include/uapi/linux/bpf.h; pid came in the same release). Arrays are of
 * 64-bit entries: the kernel reads them as unsigned long and refuses 32-bit
 * kernels (EOPNOTSUPP).
 */
struct uprobe_multi_attr {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
};

_Static_assert(offsetof(struct uprobe_multi_attr, path) == 16, "link_create.uprobe_multi.path");
_Static_assert(offsetof(struct uprobe_multi_attr, cnt) == 48, "link_create.uprobe_multi.cnt");
_Static_assert(offsetof(struct uprobe_multi_attr, pid) == 56, "link_create.uprobe_multi.pid");

int uprobe_multi__attach(int prog_fd, const char *path, const uint64_t *offsets,
			 const uint64_t *cookies, const uint64_t *ref_ctr_offsets, uint32_t cnt,
			 pid_t pid, bool retprobe)
{
	struct uprobe_multi_attr a;
	long fd;

	if (prog_fd < 0 || !path || !offsets || !cnt || pid < 0)
		return -EINVAL;
	if (cnt > UPROBE_MULTI_MAX_CNT)
		return -E2BIG;
	memset(&a, 0, sizeof(a));
	a.prog_fd = (uint32_t)prog_fd;
	a.attach_type = UPROBE_MULTI_ATTACH_TYPE;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)offsets;
	a.cookies = (uint64_t)(uintptr_t)cookies;
	a.ref_ctr_offsets = (uint64_t)(uintptr_t)ref_ctr_offsets;
	a.cnt = cnt;
	a.multi_flags = retprobe ? UPROBE_MULTI_RETURN : 0;
	a.pid = (uint32_t)pid;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : (int)fd;
}

int uprobe_multi__probe(void)
{
	const struct bpf_insn insns[] = {
		/* r0 = 0; exit */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, po,
		    .expected_attach_type = (enum bpf_attach_type)UPROBE_MULTI_ATTACH_TYPE);
	const uint64_t offset = 0;
	int prog, link, err;

	prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns,
			     sizeof(insns) / sizeof(insns[0]), &po);
	if (prog < 0)
		return errno == EINVAL ? 0 : -errno;
	link = uprobe_multi__attach(prog, "/", &offset, NULL, NULL, 1, 0, false);
	close(prog);
	if (link >= 0) {
		/* Not expected of any kernel; whatever it is, it is not kept. */
		close(link);
		return 0;
	}
	err = link;
	/*
	 * EBADF: the kernel took the request and refused "/" as a file. A
	 * kernel without it says EINVAL (unknown attach type, or nonzero
	 * bytes past its last link_create field), EOPNOTSUPP without
	 * CONFIG_UPROBES.
	 */
	if (err == -EBADF)
		return 1;
	return err == -EPERM || err == -EACCES ? err : 0;
}

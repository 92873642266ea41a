// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "host/kfeatures.h"
#include "host/uprobe_multi.h"

static const struct {
	const char *name;
	const char *since;
} feats[KFEAT__COUNT] = {
	[KFEAT_TP_BTF] = { "tp-btf", "5.5" },
	[KFEAT_TASK_STORAGE] = { "task-storage", "5.11" },
	[KFEAT_SWITCH_PREV_STATE] = { "sched-switch-prev-state", "5.18" },
	[KFEAT_RINGBUF] = { "ringbuf", "5.8" },
	[KFEAT_TASK_ITER] = { "task-iterator", "5.8" },
	[KFEAT_CURRENT_TASK_BTF] = { "get-current-task-btf", "5.11" },
	[KFEAT_ATTACH_COOKIE] = { "attach-cookie", "5.15" },
	[KFEAT_OPTIMIZED_UPROBES] = { "optimized-uprobes", "6.18" },
	[KFEAT_URETPROBE_SYSCALL] = { "uretprobe-syscall", "6.11" },
	[KFEAT_RUN_STATS] = { "bpf-run-stats", "5.8" },
	[KFEAT_ATOMIC_FETCH] = { "atomic-fetch", "5.12" },
	[KFEAT_UPROBE_MULTI] = { "uprobe-multi", "6.6" },
	[KFEAT_PREEMPT_KFUNCS] = { "preempt-kfuncs", "6.10" },
	[KFEAT_MEM_ALLOC] = { "bpf-mem-alloc", "6.1" },
};

const char *kfeature__name(enum kfeature f)
{
	return (unsigned int)f < KFEAT__COUNT ? feats[f].name : "invalid";
}

const char *kfeature__since(enum kfeature f)
{
	return (unsigned int)f < KFEAT__COUNT ? feats[f].since : "";
}

const char *kfeature_use__name(enum kfeature_use u)
{
	switch (u) {
	case KFEAT_USED:
		return "used";
	case KFEAT_FALLBACK:
		return "fallback";
	case KFEAT_NOT_NEEDED:
		return "not-needed";
	case KFEAT_UNKNOWN:
		return "unknown";
	default:
		return "missing";
	}
}

const char *kfeature_how__name(enum kfeature_how h)
{
	switch (h) {
	case KFEAT_HOW_BTF:
		return "btf";
	case KFEAT_HOW_LIBBPF:
		return "libbpf-probe";
	case KFEAT_HOW_LOAD:
		return "probe-program";
	default:
		return "none";
	}
}

enum kfeature_use kfeatures__use(const struct kfeatures *k, enum kfeature f, const char **what)
{
	static const char *const fallback[KFEAT__COUNT] = {
		[KFEAT_TASK_STORAGE] =
			"per-thread state in hashes keyed by the task (bounded by --max-threads; preallocated without bpf_mem_alloc)",
		[KFEAT_SWITCH_PREV_STATE] = "the task's own state, read with CO-RE",
		[KFEAT_CURRENT_TASK_BTF] = "bpf_get_current_task() and CO-RE probe reads",
		[KFEAT_ATTACH_COOKIE] =
			"span metric from the probed file and offset (VMA lookup, span_site_metric)",
		[KFEAT_OPTIMIZED_UPROBES] = "int3 uprobes",
		[KFEAT_URETPROBE_SYSCALL] = "int3 return trampoline",
		[KFEAT_RUN_STATS] = "overhead run times are gaps",
		[KFEAT_ATOMIC_FETCH] =
			"per-CPU span-slot tickets; the span record cap is exact in the loader",
		[KFEAT_UPROBE_MULTI] =
			"a uprobe and a uretprobe link per span site, each detached after its own grace period",
		/*
		 * Needed from 6.13 (per-CPU private stacks of preemptible
		 * uprobe programs), and every such kernel has them.
		 */
		[KFEAT_PREEMPT_KFUNCS] =
			"span programs run with preemption enabled (no per-CPU private stacks before 6.13)",
		[KFEAT_MEM_ALLOC] =
			"hashes preallocated whole from the load on: exit records (--max-exited; 36 MiB at the default), per-thread state without task storage (--max-threads; 33.5 MiB), with spans their aggregates (30.5 MiB) and state (19 MiB)",
	};
	static const char *const missing[KFEAT__COUNT] = {
		[KFEAT_TP_BTF] = "scheduler collector falls back to /proc",
		[KFEAT_RINGBUF] = "span probes unavailable",
		[KFEAT_TASK_ITER] = "scheduler collector falls back to /proc",
	};

	*what = "";
	if (f >= KFEAT__COUNT)
		return KFEAT_MISSING;
	if (f == KFEAT_TASK_STORAGE && k->have[f] && k->task_storage_preemptible) {
		*what = "per-thread state in hashes keyed by the task: on PREEMPT_RT a BPF program "
			"preempted inside task storage (bpf_task_storage_busy) fails every other "
			"program's lookup on that CPU";
		return KFEAT_FALLBACK;
	}
	if (k->have[f])
		return KFEAT_USED;
	if (k->how[f] == KFEAT_HOW_NONE) {
		*what = k->btf ? "probing it needs CAP_BPF" : "no kernel BTF";
		return KFEAT_UNKNOWN;
	}
	if (fallback[f]) {
		*what = fallback[f];
		/* Costlier, but khbpf's output is the same: nothing to fall back to. */
		if (f == KFEAT_OPTIMIZED_UPROBES || f == KFEAT_URETPROBE_SYSCALL ||
		    f == KFEAT_PREEMPT_KFUNCS)
			return KFEAT_NOT_NEEDED;
		return KFEAT_FALLBACK;
	}
	*what = missing[f] ? missing[f] : "";
	return KFEAT_MISSING;
}

static bool btf_has(const struct btf *btf, const char *name, int kind)
{
	return btf__find_by_name_kind(btf, name, kind) > 0;
}

/* An enumerator of that name in any enum of the BTF. */
static bool btf_has_enumerator(const struct btf *btf, const char *name)
{
	__u32 id, n = btf__type_cnt(btf);

	for (id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const struct btf_enum *e;
		int i;

		if (!btf_is_enum(t))
			continue;
		e = btf_enum(t);
		for (i = 0; i < btf_vlen(t); i++, e++)
			if (!strcmp(btf__name_by_offset(btf, e->name_off), name))
				return true;
	}
	return false;
}

bool kfeatures__btf_preempt_rt(const struct btf *btf)
{
	const struct btf_member *m;
	const struct btf_type *t;
	int id, i;

	id = btf__find_by_name_kind(btf, "spinlock", BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	for (i = 0, m = t ? btf_members(t) : NULL; t && i < btf_vlen(t); i++, m++) {
		const struct btf_type *mt = btf__type_by_id(btf, m->type);

		if (strcmp(btf__name_by_offset(btf, m->name_off), "lock") || !mt ||
		    !btf_is_struct(mt))
			continue;
		if (!strcmp(btf__name_by_offset(btf, mt->name_off), "rt_mutex_base"))
			return true;
	}
	return false;
}

bool kfeatures__btf_task_storage_busy(const struct btf *btf)
{
	if (btf__find_by_name_kind(btf, "bpf_task_storage_busy", BTF_KIND_VAR) > 0)
		return true;
	/* No per-CPU variables in this BTF at all: the count cannot be ruled out. */
	return btf__find_by_name_kind(btf, "runqueues", BTF_KIND_VAR) <= 0;
}

bool kfeatures__switch_has_prev_state(const struct btf *btf)
{
	const struct btf_type *t;
	int id;

	id = btf__find_by_name_kind(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
	if (id <= 0)
		return false;
	/* typedef → pointer → void (*)(void *__data, bool, prev, next[, prev_state]) */
	t = btf__type_by_id(btf, id);
	t = t ? btf__type_by_id(btf, t->type) : NULL;
	if (!t || !btf_is_ptr(t))
		return false;
	t = btf__type_by_id(btf, t->type);
	return t && btf_is_func_proto(t) && btf_vlen(t) >= 5;
}

void kfeatures__from_btf(struct kfeatures *k, const struct btf *btf)
{
	static const struct {
		enum kfeature f;
		const char *name;
		int kind;
	} by_name[] = {
		{ KFEAT_TP_BTF, "btf_trace_sched_switch", BTF_KIND_TYPEDEF },
		{ KFEAT_TASK_STORAGE, "bpf_task_storage_get", BTF_KIND_FUNC },
		{ KFEAT_RINGBUF, "bpf_ringbuf_reserve", BTF_KIND_FUNC },
		{ KFEAT_TASK_ITER, "bpf_iter_task", BTF_KIND_FUNC },
		{ KFEAT_CURRENT_TASK_BTF, "bpf_get_current_task_btf", BTF_KIND_FUNC },
		{ KFEAT_ATTACH_COOKIE, "bpf_get_attach_cookie", BTF_KIND_FUNC },
		/* x86-64: the optimizer of 5-byte NOP sites, and the return syscall. */
		{ KFEAT_OPTIMIZED_UPROBES, "arch_uprobe_optimize", BTF_KIND_FUNC },
		{ KFEAT_URETPROBE_SYSCALL, "__x64_sys_uretprobe", BTF_KIND_FUNC },
		/* The link's own type, in kernel/trace/bpf_trace.c (CONFIG_UPROBES). */
		{ KFEAT_UPROBE_MULTI, "bpf_uprobe_multi_link", BTF_KIND_STRUCT },
		{ KFEAT_PREEMPT_KFUNCS, "bpf_preempt_disable", BTF_KIND_FUNC },
		/* The allocator's own type (kernel/bpf/memalloc.c: "bpf: Convert hash map to bpf_mem_alloc."). */
		{ KFEAT_MEM_ALLOC, "bpf_mem_alloc", BTF_KIND_STRUCT },
	};
	size_t i;

	memset(k, 0, sizeof(*k));
	if (!btf)
		return;
	k->btf = true;
	for (i = 0; i < sizeof(by_name) / sizeof(by_name[0]); i++) {
		k->have[by_name[i].f] = btf_has(btf, by_name[i].name, by_name[i].kind);
		k->how[by_name[i].f] = KFEAT_HOW_BTF;
	}
	k->have[KFEAT_SWITCH_PREV_STATE] = kfeatures__switch_has_prev_state(btf);
	k->how[KFEAT_SWITCH_PREV_STATE] = KFEAT_HOW_BTF;
	k->have[KFEAT_RUN_STATS] = btf_has_enumerator(btf, "BPF_STATS_RUN_TIME");
	k->how[KFEAT_RUN_STATS] = KFEAT_HOW_BTF;
	k->preempt_rt = kfeatures__btf_preempt_rt(btf);
	k->task_storage_preemptible = k->preempt_rt && kfeatures__btf_task_storage_busy(btf);
}

/* 1 supported, 0 not, < 0 could not tell (no privilege): keep the BTF answer. */
static void from_probe(struct kfeatures *k, enum kfeature f, int ret)
{
	if (ret < 0)
		return;
	k->have[f] = ret == 1;
	k->how[f] = f == KFEAT_ATOMIC_FETCH || f == KFEAT_UPROBE_MULTI ? KFEAT_HOW_LOAD :
									 KFEAT_HOW_LIBBPF;
	k->privileged = true;
}

/*
 * Does the verifier take an atomic fetch-and-add? A socket filter that adds
 * with BPF_FETCH to a stack slot: 1 yes, 0 no, < 0 cannot tell.
 */
static int probe_atomic_fetch(void)
{
	const struct bpf_insn insns[] = {
		/* *(u64 *)(r10 - 8) = 0 */
		{ .code = BPF_ST | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .off = -8 },
		/* r1 = 1 */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 1 },
		/* r1 = atomic_fetch_add((u64 *)(r10 - 8), r1) */
		{ .code = BPF_STX | BPF_DW | BPF_ATOMIC,
		  .dst_reg = BPF_REG_10,
		  .src_reg = BPF_REG_1,
		  .off = -8,
		  .imm = BPF_ADD | BPF_FETCH },
		/* r0 = 0; exit */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd;

	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", insns,
			   sizeof(insns) / sizeof(insns[0]), NULL);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return errno == EINVAL ? 0 : -errno;
}

int kfeatures__detect(struct kfeatures *k, bool privileged)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int err;

	if (libbpf_get_error(btf)) {
		err = -errno;
		kfeatures__from_btf(k, NULL);
		return err ? err : -ENOENT;
	}
	kfeatures__from_btf(k, btf);
	btf__free(btf);
	if (!privileged)
		return 0;
	/*
	 * Task storage for tracing programs came with the map type; the
	 * helper cannot be probed in a tracing program (libbpf says
	 * EOPNOTSUPP), so the map type decides.
	 */
	from_probe(k, KFEAT_TASK_STORAGE,
		   libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL));
	from_probe(k, KFEAT_RINGBUF, libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL));
	from_probe(
		k, KFEAT_CURRENT_TASK_BTF,
		libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_current_task_btf, NULL));
	from_probe(k, KFEAT_ATOMIC_FETCH, probe_atomic_fetch());
	from_probe(k, KFEAT_ATTACH_COOKIE,
		   libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, NULL));
	from_probe(k, KFEAT_UPROBE_MULTI, uprobe_multi__probe());
	return 0;
}

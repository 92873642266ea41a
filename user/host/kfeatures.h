/* SPDX-License-Identifier: MIT */
/*
 * Kernel features khbpf's BPF programs depend on, found by feature probes
 * (vmlinux BTF lookups, libbpf_probe_*), never by kernel version numbers.
 * The scheduler collector picks its program variants and fallbacks from
 * them; `khbpf probe` reports them.
 */
#ifndef KHBPF_KFEATURES_H
#define KHBPF_KFEATURES_H

#include <stdbool.h>

struct btf;

enum kfeature {
	KFEAT_TP_BTF, /* BTF-typed tracepoints (btf_trace_sched_switch) */
	KFEAT_TASK_STORAGE, /* BPF_MAP_TYPE_TASK_STORAGE and its helper */
	KFEAT_SWITCH_PREV_STATE, /* sched_switch's prev_state argument */
	KFEAT_RINGBUF, /* BPF_MAP_TYPE_RINGBUF */
	KFEAT_TASK_ITER, /* iter/task */
	KFEAT_CURRENT_TASK_BTF, /* bpf_get_current_task_btf() */
	KFEAT_ATTACH_COOKIE, /* bpf_get_attach_cookie() in uprobe programs */
	KFEAT_OPTIMIZED_UPROBES, /* 5-byte NOP sites probed without int3 */
	KFEAT_URETPROBE_SYSCALL, /* uretprobe trampoline through a system call */
	KFEAT_RUN_STATS, /* BPF_ENABLE_STATS run-time statistics */
	KFEAT_ATOMIC_FETCH, /* atomic fetch-and-add (BPF_FETCH) in the verifier */
	KFEAT_UPROBE_MULTI, /* uprobe_multi links: many offsets of a file in one link */
	KFEAT_PREEMPT_KFUNCS, /* bpf_preempt_disable()/bpf_preempt_enable() kfuncs */
	KFEAT_MEM_ALLOC, /* bpf_mem_alloc: hash entries made on use by tracing programs */
	KFEAT__COUNT,
};

/* How a feature was decided. */
enum kfeature_how {
	KFEAT_HOW_NONE, /* not probed (no BTF) */
	KFEAT_HOW_BTF, /* a type or function in the kernel's BTF */
	KFEAT_HOW_LIBBPF, /* libbpf_probe_bpf_map_type / libbpf_probe_bpf_helper */
	KFEAT_HOW_LOAD, /* khbpf's own probe program (or link), made and dropped */
};

struct kfeatures {
	bool btf; /* vmlinux BTF loaded */
	bool privileged; /* libbpf probes could load programs and maps */
	bool have[KFEAT__COUNT];
	enum kfeature_how how[KFEAT__COUNT];
	/*
	 * PREEMPT_RT (a spinlock_t is an rt_mutex): BPF programs run with
	 * migration disabled, not preemption.
	 */
	bool preempt_rt;
	/*
	 * Task storage takes a per-CPU busy count around each lookup
	 * (bpf_task_storage_trylock(), the bpf_task_storage_busy variable):
	 * under PREEMPT_RT a program preempted inside it makes every other
	 * program's lookup on that CPU fail. Task storage is then not used.
	 */
	bool task_storage_preemptible;
};

/* What khbpf does about a feature: uses it, takes a fallback, or lacks it. */
enum kfeature_use {
	KFEAT_USED,
	KFEAT_FALLBACK,
	KFEAT_MISSING,
	KFEAT_NOT_NEEDED, /* absent, and khbpf works the same without it */
	KFEAT_UNKNOWN, /* could not be probed (no BTF, or no privilege to load a probe) */
};

const char *kfeature__name(enum kfeature f);
/* The kernel release where the feature appeared upstream: information only. */
const char *kfeature__since(enum kfeature f);
const char *kfeature_use__name(enum kfeature_use u);
const char *kfeature_how__name(enum kfeature_how h);
/* The use of f given what the kernel has, and what khbpf does instead. */
enum kfeature_use kfeatures__use(const struct kfeatures *k, enum kfeature f, const char **what);

/*
 * Is BTF's spinlock_t PREEMPT_RT's (struct spinlock holding a struct
 * rt_mutex_base `lock`) rather than a raw spinlock's union?
 */
bool kfeatures__btf_preempt_rt(const struct btf *btf);
/*
 * Does task storage take the per-CPU busy count (a per-CPU VAR
 * bpf_task_storage_busy)? Without per-CPU variables in the BTF at all
 * (no `runqueues` either), that cannot be told: assumed yes.
 */
bool kfeatures__btf_task_storage_busy(const struct btf *btf);

/* Fill k from the kernel's BTF alone (no privilege needed). */
void kfeatures__from_btf(struct kfeatures *k, const struct btf *btf);
/*
 * Does btf_trace_sched_switch (the tracepoint's BTF prototype) take
 * prev_state: 4 arguments after the context, rather than 3?
 */
bool kfeatures__switch_has_prev_state(const struct btf *btf);
/*
 * Everything: BTF, then (with privileged true: bpf() may load programs and
 * maps) libbpf's map and helper probes, which override the BTF answers they
 * cover; unprivileged, those probes cannot tell. 0, or -errno when the
 * kernel's BTF cannot be loaded (k then says nothing is there).
 */
int kfeatures__detect(struct kfeatures *k, bool privileged);

#endif /* KHBPF_KFEATURES_H */

// SPDX-License-Identifier: MIT
/*
 * Kernel feature detection from BTF and the program variant chosen from it,
 * on synthetic BTF shaped like each kernel's (5.10: sched_switch without
 * prev_state, no task storage or cookies), then on this host's own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/utsname.h>
#include <cmocka.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "host/kfeatures.h"
#include "collect/sched_collector.h"
#include "collect/sched_variant.h"

/* btf_trace_sched_switch as the kernel declares it, with nargs after __data. */
static void add_switch_proto(struct btf *btf, int nargs)
{
	int b = btf__add_int(btf, "_Bool", 1, BTF_INT_BOOL);
	int task = btf__add_struct(btf, "task_struct", 8);
	int ptask = btf__add_ptr(btf, task);
	int uint = btf__add_int(btf, "unsigned int", 4, 0);
	int voidp = btf__add_ptr(btf, 0);
	int proto = btf__add_func_proto(btf, 0);
	int i;

	assert_true(b > 0 && task > 0 && ptask > 0 && uint > 0 && voidp > 0 && proto > 0);
	assert_int_equal(btf__add_func_param(btf, "__data", voidp), 0);
	for (i = 0; i < nargs; i++)
		assert_int_equal(btf__add_func_param(btf, "",
						     i == 0 ? b :
						     i < 3  ? ptask :
							      uint),
				 0);
	assert_true(btf__add_typedef(btf, "btf_trace_sched_switch", btf__add_ptr(btf, proto)) > 0);
}

static void add_func(struct btf *btf, const char *name)
{
	int proto = btf__add_func_proto(btf, 0);

	assert_true(proto > 0);
	assert_true(btf__add_func(btf, name, BTF_FUNC_STATIC, proto) > 0);
}

static void test_kfeatures__switch_prev_state_by_arity(void **state)
{
	struct btf *b3 = btf__new_empty(), *b4 = btf__new_empty(), *none = btf__new_empty();

	(void)state;
	assert_non_null(b3);
	add_switch_proto(b3, 3);
	add_switch_proto(b4, 4);
	assert_false(kfeatures__switch_has_prev_state(b3));
	assert_true(kfeatures__switch_has_prev_state(b4));
	assert_false(kfeatures__switch_has_prev_state(none));
	btf__free(b3);
	btf__free(b4);
	btf__free(none);
}

/* 5.10's shape: tp_btf, ring buffer and iterator, none of the later helpers. */
static void test_kfeatures__linux_5_10_shape_takes_fallbacks(void **state)
{
	struct btf *btf = btf__new_empty();
	struct sched_variant v;
	struct kfeatures k;
	const char *what;

	(void)state;
	add_switch_proto(btf, 3);
	add_func(btf, "bpf_ringbuf_reserve");
	add_func(btf, "bpf_iter_task");
	kfeatures__from_btf(&k, btf);
	assert_true(k.btf);
	assert_true(k.have[KFEAT_TP_BTF]);
	assert_true(k.have[KFEAT_RINGBUF]);
	assert_true(k.have[KFEAT_TASK_ITER]);
	assert_false(k.have[KFEAT_SWITCH_PREV_STATE]);
	assert_false(k.have[KFEAT_TASK_STORAGE]);
	assert_false(k.have[KFEAT_CURRENT_TASK_BTF]);
	assert_false(k.have[KFEAT_ATTACH_COOKIE]);
	assert_false(k.have[KFEAT_RUN_STATS]);
	assert_false(k.have[KFEAT_UPROBE_MULTI]);
	assert_false(k.have[KFEAT_MEM_ALLOC]);
	assert_int_equal(k.how[KFEAT_TASK_STORAGE], KFEAT_HOW_BTF);
	assert_int_equal(k.how[KFEAT_UPROBE_MULTI], KFEAT_HOW_BTF);
	/* Only a loaded program can tell atomics: unknown from BTF alone. */
	assert_int_equal(k.how[KFEAT_ATOMIC_FETCH], KFEAT_HOW_NONE);

	assert_int_equal(kfeatures__use(&k, KFEAT_TP_BTF, &what), KFEAT_USED);
	assert_int_equal(kfeatures__use(&k, KFEAT_TASK_STORAGE, &what), KFEAT_FALLBACK);
	assert_non_null(strstr(what, "hash"));
	assert_int_equal(kfeatures__use(&k, KFEAT_SWITCH_PREV_STATE, &what), KFEAT_FALLBACK);
	assert_int_equal(kfeatures__use(&k, KFEAT_ATTACH_COOKIE, &what), KFEAT_FALLBACK);
	assert_int_equal(kfeatures__use(&k, KFEAT_OPTIMIZED_UPROBES, &what), KFEAT_NOT_NEEDED);
	assert_int_equal(kfeatures__use(&k, KFEAT_URETPROBE_SYSCALL, &what), KFEAT_NOT_NEEDED);
	assert_int_equal(kfeatures__use(&k, KFEAT_UPROBE_MULTI, &what), KFEAT_FALLBACK);
	assert_non_null(strstr(what, "per span site"));
	/* Older than the private stacks that need them: nothing lost. */
	assert_false(k.have[KFEAT_PREEMPT_KFUNCS]);
	assert_int_equal(kfeatures__use(&k, KFEAT_PREEMPT_KFUNCS, &what), KFEAT_NOT_NEEDED);
	assert_int_equal(kfeatures__use(&k, KFEAT_MEM_ALLOC, &what), KFEAT_FALLBACK);
	assert_non_null(strstr(what, "preallocated"));

	sched_variant__select(&k, &v);
	assert_false(v.uprobe_multi);
	assert_false(v.task_storage);
	assert_false(v.switch_prev_state);
	assert_false(v.task_btf);
	assert_false(v.attach_cookie);
	assert_false(v.atomic_fetch);
	assert_false(v.mem_alloc);
	btf__free(btf);
}

/* A current kernel's shape: every feature, every fast path. */
static void test_kfeatures__current_shape_uses_everything(void **state)
{
	static const char *const funcs[] = {
		"bpf_ringbuf_reserve",	    "bpf_iter_task",	     "bpf_task_storage_get",
		"bpf_get_current_task_btf", "bpf_get_attach_cookie", "arch_uprobe_optimize",
		"__x64_sys_uretprobe",	    "bpf_preempt_disable",
	};
	struct btf *btf = btf__new_empty();
	struct sched_variant v;
	struct kfeatures k;
	const char *what;
	size_t i;
	int e;

	(void)state;
	add_switch_proto(btf, 4);
	for (i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		add_func(btf, funcs[i]);
	e = btf__add_enum(btf, "bpf_stats_type", 4);
	assert_true(e > 0);
	assert_int_equal(btf__add_enum_value(btf, "BPF_STATS_RUN_TIME", 0), 0);
	assert_true(btf__add_struct(btf, "bpf_uprobe_multi_link", 128) > 0);
	assert_true(btf__add_struct(btf, "bpf_mem_alloc", 64) > 0);
	kfeatures__from_btf(&k, btf);
	for (i = 0; i < KFEAT__COUNT; i++) {
		if (i == KFEAT_ATOMIC_FETCH)
			continue;
		assert_true(k.have[i]);
		assert_int_equal(kfeatures__use(&k, i, &what), KFEAT_USED);
	}
	k.have[KFEAT_ATOMIC_FETCH] = true;
	sched_variant__select(&k, &v);
	assert_true(v.task_storage && v.switch_prev_state && v.task_btf && v.attach_cookie &&
		    v.atomic_fetch && v.uprobe_multi && v.mem_alloc);
	btf__free(btf);
}

/*
 * 6.1's shape: every feature but uprobe_multi links (a struct, not a
 * function). A uprobe_multi kernel without cookies would name sites by
 * cookie it cannot read: per-site links there too.
 */
static void test_kfeatures__uprobe_multi_needs_the_link_and_cookies(void **state)
{
	struct btf *btf = btf__new_empty();
	struct sched_variant v;
	struct kfeatures k;

	(void)state;
	add_switch_proto(btf, 4);
	add_func(btf, "bpf_get_attach_cookie");
	/* A function of that name is not the link type. */
	add_func(btf, "bpf_uprobe_multi_link");
	kfeatures__from_btf(&k, btf);
	assert_false(k.have[KFEAT_UPROBE_MULTI]);
	sched_variant__select(&k, &v);
	assert_false(v.uprobe_multi);
	assert_true(btf__add_struct(btf, "bpf_uprobe_multi_link", 128) > 0);
	kfeatures__from_btf(&k, btf);
	assert_true(k.have[KFEAT_UPROBE_MULTI]);
	sched_variant__select(&k, &v);
	assert_true(v.uprobe_multi);
	k.have[KFEAT_ATTACH_COOKIE] = false;
	sched_variant__select(&k, &v);
	assert_false(v.uprobe_multi);
	btf__free(btf);
}

/* spinlock_t as each configuration lays it out. */
static void add_spinlock(struct btf *btf, bool rt)
{
	/* The member's type first: btf__add_field() adds to the last struct made. */
	int inner = btf__add_struct(btf, rt ? "rt_mutex_base" : "raw_spinlock", rt ? 32 : 4);
	int s = btf__add_struct(btf, "spinlock", rt ? 32 : 4);

	assert_true(inner > 0 && s > 0);
	/* RT: struct rt_mutex_base lock; else the union's raw_spinlock, anonymous here. */
	assert_int_equal(btf__add_field(btf, rt ? "lock" : "", inner, 0, 0), 0);
}

static void add_percpu_var(struct btf *btf, const char *name)
{
	int i = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);

	assert_true(i > 0);
	assert_true(btf__add_var(btf, name, BTF_VAR_STATIC, i) > 0);
}

/*
 * PREEMPT_RT (6.12-rt's shape): programs are preemptible, so a program
 * preempted inside task storage's per-CPU busy count makes the next one's
 * lookup fail (seen: 2-4 per run, a span lost 1 run in 8): the hashes.
 */
static void test_kfeatures__preempt_rt_busy_task_storage_takes_hashes(void **state)
{
	struct btf *btf = btf__new_empty();
	struct sched_variant v;
	struct kfeatures k;
	const char *what;

	(void)state;
	add_switch_proto(btf, 4);
	add_func(btf, "bpf_task_storage_get");
	add_spinlock(btf, true);
	add_percpu_var(btf, "runqueues");
	add_percpu_var(btf, "bpf_task_storage_busy");
	kfeatures__from_btf(&k, btf);
	assert_true(k.have[KFEAT_TASK_STORAGE]);
	assert_true(k.preempt_rt);
	assert_true(k.task_storage_preemptible);
	assert_int_equal(kfeatures__use(&k, KFEAT_TASK_STORAGE, &what), KFEAT_FALLBACK);
	assert_non_null(strstr(what, "PREEMPT_RT"));
	sched_variant__select(&k, &v);
	assert_false(v.task_storage);
	btf__free(btf);
}

/* A kernel whose task storage has no busy count is safe even under RT. */
static void test_kfeatures__preempt_rt_without_busy_count_uses_task_storage(void **state)
{
	struct btf *btf = btf__new_empty();
	struct sched_variant v;
	struct kfeatures k;
	const char *what;

	(void)state;
	add_func(btf, "bpf_task_storage_get");
	add_spinlock(btf, true);
	add_percpu_var(btf, "runqueues");
	kfeatures__from_btf(&k, btf);
	assert_true(k.preempt_rt);
	assert_false(k.task_storage_preemptible);
	assert_int_equal(kfeatures__use(&k, KFEAT_TASK_STORAGE, &what), KFEAT_USED);
	sched_variant__select(&k, &v);
	assert_true(v.task_storage);
	btf__free(btf);

	/* No per-CPU variables in the BTF at all: the count is assumed. */
	btf = btf__new_empty();
	add_func(btf, "bpf_task_storage_get");
	add_spinlock(btf, true);
	kfeatures__from_btf(&k, btf);
	assert_true(k.task_storage_preemptible);
	btf__free(btf);
}

/* Not RT (a raw spinlock inside): task storage as usual, busy count or not. */
static void test_kfeatures__not_rt_uses_task_storage(void **state)
{
	struct btf *btf = btf__new_empty();
	struct sched_variant v;
	struct kfeatures k;

	(void)state;
	add_func(btf, "bpf_task_storage_get");
	add_spinlock(btf, false);
	add_percpu_var(btf, "bpf_task_storage_busy");
	kfeatures__from_btf(&k, btf);
	assert_false(k.preempt_rt);
	assert_false(k.task_storage_preemptible);
	sched_variant__select(&k, &v);
	assert_true(v.task_storage);
	btf__free(btf);
}

static void test_kfeatures__names_and_versions(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < KFEAT__COUNT; i++) {
		assert_true(strlen(kfeature__name(i)) > 0);
		assert_true(strlen(kfeature__since(i)) > 0);
	}
	assert_string_equal(kfeature__name(KFEAT__COUNT), "invalid");
	assert_string_equal(kfeature_use__name(KFEAT_FALLBACK), "fallback");
}

static bool uname_says_rt(void)
{
	struct utsname u;

	assert_int_equal(uname(&u), 0);
	return strstr(u.version, "PREEMPT_RT") != NULL;
}

/* This host: whatever BTF says, a libbpf probe agrees where it can tell. */
static void test_kfeatures__host_btf_and_probes_agree(void **state)
{
	struct kfeatures btf_only, full;
	struct btf *btf = btf__load_vmlinux_btf();

	(void)state;
	if (libbpf_get_error(btf))
		skip();
	kfeatures__from_btf(&btf_only, btf);
	btf__free(btf);
	assert_int_equal(kfeatures__detect(&full, true), 0);
	if (!full.privileged)
		skip();
	assert_int_equal(full.have[KFEAT_TASK_STORAGE], btf_only.have[KFEAT_TASK_STORAGE]);
	assert_int_equal(full.have[KFEAT_ATTACH_COOKIE], btf_only.have[KFEAT_ATTACH_COOKIE]);
	assert_int_equal(full.have[KFEAT_CURRENT_TASK_BTF], btf_only.have[KFEAT_CURRENT_TASK_BTF]);
	assert_int_equal(full.how[KFEAT_ATOMIC_FETCH], KFEAT_HOW_LOAD);
	/* The trial link (uprobe_multi__probe) and the link type in BTF agree. */
	assert_int_equal(full.have[KFEAT_UPROBE_MULTI], btf_only.have[KFEAT_UPROBE_MULTI]);
	assert_int_equal(full.how[KFEAT_UPROBE_MULTI], KFEAT_HOW_LOAD);
	/* BTF's spinlock_t agrees with the build's own banner (uname -v). */
	assert_int_equal(full.preempt_rt, uname_says_rt());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kfeatures__switch_prev_state_by_arity),
		cmocka_unit_test(test_kfeatures__linux_5_10_shape_takes_fallbacks),
		cmocka_unit_test(test_kfeatures__current_shape_uses_everything),
		cmocka_unit_test(test_kfeatures__uprobe_multi_needs_the_link_and_cookies),
		cmocka_unit_test(test_kfeatures__preempt_rt_busy_task_storage_takes_hashes),
		cmocka_unit_test(test_kfeatures__preempt_rt_without_busy_count_uses_task_storage),
		cmocka_unit_test(test_kfeatures__not_rt_uses_task_storage),
		cmocka_unit_test(test_kfeatures__names_and_versions),
		cmocka_unit_test(test_kfeatures__host_btf_and_probes_agree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

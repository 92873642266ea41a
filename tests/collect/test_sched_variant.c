// SPDX-License-Identifier: MIT
/* The collector's program variant from a kernel's features (user/collect/sched_variant.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "host/kfeatures.h"
#include "collect/sched_variant.h"

static struct kfeatures all(bool have)
{
	struct kfeatures k;
	int i;

	memset(&k, 0, sizeof(k));
	for (i = 0; i < KFEAT__COUNT; i++)
		k.have[i] = have;
	return k;
}

/* Every feature: every fast path. */
static void test_sched_variant__everything(void **state)
{
	struct kfeatures k = all(true);
	struct sched_variant v;

	(void)state;
	sched_variant__select(&k, &v);
	assert_true(v.task_storage && v.switch_prev_state && v.task_btf && v.attach_cookie &&
		    v.atomic_fetch && v.uprobe_multi && v.mem_alloc);
}

/* None: every fallback (a 5.10 kernel without the newer helpers takes several). */
static void test_sched_variant__nothing(void **state)
{
	struct kfeatures k = all(false);
	struct sched_variant v;

	(void)state;
	sched_variant__select(&k, &v);
	assert_false(v.task_storage || v.switch_prev_state || v.task_btf || v.attach_cookie ||
		     v.atomic_fetch || v.uprobe_multi || v.mem_alloc);
}

/* Each feature moves its own choice and no other. */
static void test_sched_variant__one_feature_each(void **state)
{
	struct {
		enum kfeature f;
		size_t off;
	} t[] = {
		{ KFEAT_TASK_STORAGE, offsetof(struct sched_variant, task_storage) },
		{ KFEAT_SWITCH_PREV_STATE, offsetof(struct sched_variant, switch_prev_state) },
		{ KFEAT_CURRENT_TASK_BTF, offsetof(struct sched_variant, task_btf) },
		{ KFEAT_ATTACH_COOKIE, offsetof(struct sched_variant, attach_cookie) },
		{ KFEAT_ATOMIC_FETCH, offsetof(struct sched_variant, atomic_fetch) },
		{ KFEAT_MEM_ALLOC, offsetof(struct sched_variant, mem_alloc) },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct kfeatures k = all(true);
		struct sched_variant v;

		k.have[t[i].f] = false;
		sched_variant__select(&k, &v);
		assert_false(*((bool *)&v + t[i].off));
		/* uprobe_multi also needs cookies; the rest stay on. */
		assert_int_equal(v.uprobe_multi, t[i].f != KFEAT_ATTACH_COOKIE);
	}
}

/* PREEMPT_RT's preemptible task storage: the hashes, though the kernel has it. */
static void test_sched_variant__preemptible_task_storage(void **state)
{
	struct kfeatures k = all(true);
	struct sched_variant v;

	(void)state;
	k.task_storage_preemptible = true;
	sched_variant__select(&k, &v);
	assert_false(v.task_storage);
	assert_true(v.uprobe_multi);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sched_variant__everything),
		cmocka_unit_test(test_sched_variant__nothing),
		cmocka_unit_test(test_sched_variant__one_feature_each),
		cmocka_unit_test(test_sched_variant__preemptible_task_storage),
	};

	return cmocka_run_group_tests_name("sched_variant", tests, NULL, NULL);
}

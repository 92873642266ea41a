// SPDX-License-Identifier: MIT
/*
 * include/khbpf/vcounter.h, the arithmetic the sched_bpf programs run at every
 * switch and span edge, fed with per-CPU readings: a thread's virtual count
 * is what its CPUs counted while it ran there, whatever else ran between.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "khbpf/vcounter.h"

/* A per-CPU counter that counts `rate` per time unit and is always running. */
struct cpu {
	uint64_t counter, time;
	uint64_t rate;
};

static struct khbpf_ctr_read at(const struct cpu *c)
{
	struct khbpf_ctr_read r = { c->counter, c->time, c->time };

	return r;
}

/* Time passes on the CPU, whoever runs there. */
static void tick(struct cpu *c, uint64_t t)
{
	c->counter += c->rate * t;
	c->time += t;
}

static void test_vcounter__one_stint(void **state)
{
	struct cpu cpu = { 1000000, 0, 3 };
	struct khbpf_vctr v = { 0 };
	struct khbpf_ctr_read r;
	struct khbpf_vreading b, e;

	(void)state;
	r = at(&cpu);
	khbpf_vctr_in(&v, &r, 1);
	tick(&cpu, 10);
	r = at(&cpu);
	khbpf_vctr_now(&v, &r, 1, &b);
	tick(&cpu, 100);
	r = at(&cpu);
	khbpf_vctr_now(&v, &r, 1, &e);
	assert_int_equal(e.value - b.value, 300);
	assert_int_equal(khbpf_vctr_status(&b, &e), KHBPF_VCTR_OK);
}

/*
 * The span starts on CPU 0, is switched out (another thread runs and the
 * counter keeps counting for it), migrates, and ends on CPU 1, whose
 * counter is at a very different absolute value. Only the thread's own
 * stints count.
 */
static void test_vcounter__switched_out_and_migrated(void **state)
{
	struct cpu c0 = { 5, 0, 2 }, c1 = { 900000000000ull, 77, 2 };
	struct khbpf_vctr v = { 0 };
	struct khbpf_ctr_read r;
	struct khbpf_vreading b, e;

	(void)state;
	r = at(&c0);
	khbpf_vctr_in(&v, &r, 1);
	tick(&c0, 7); /* before the span: 14, not in it */
	r = at(&c0);
	khbpf_vctr_now(&v, &r, 1, &b);
	tick(&c0, 40); /* span, stint 1: 80 */
	r = at(&c0);
	khbpf_vctr_out(&v, &r, 1);
	tick(&c0, 1000); /* other threads on CPU 0 */
	tick(&c1, 5000); /* ... and on CPU 1 */
	r = at(&c1);
	khbpf_vctr_in(&v, &r, 1);
	tick(&c1, 25); /* span, stint 2 on CPU 1: 50 */
	r = at(&c1);
	khbpf_vctr_out(&v, &r, 1);
	tick(&c1, 300);
	r = at(&c1);
	khbpf_vctr_in(&v, &r, 1);
	tick(&c1, 5); /* stint 3: 10 */
	r = at(&c1);
	khbpf_vctr_now(&v, &r, 1, &e);
	assert_int_equal(khbpf_vctr_status(&b, &e), KHBPF_VCTR_OK);
	assert_int_equal(e.value - b.value, 80 + 50 + 10);
	/* The thread's readings count from its first switch-in: 14 before the span. */
	assert_int_equal(b.value, 14);
}

/* Multiplexed during the span: running < enabled, so the delta is partial. */
static void test_vcounter__multiplexed_inside(void **state)
{
	struct khbpf_vctr v = { 0 };
	struct khbpf_ctr_read r = { 100, 1000, 1000 };
	struct khbpf_vreading b, e;

	(void)state;
	khbpf_vctr_in(&v, &r, 1);
	r = (struct khbpf_ctr_read){ 150, 1100, 1100 };
	khbpf_vctr_now(&v, &r, 1, &b);
	/* 100 time units pass, the event ran for 60 of them. */
	r = (struct khbpf_ctr_read){ 210, 1200, 1160 };
	khbpf_vctr_out(&v, &r, 1);
	r = (struct khbpf_ctr_read){ 300, 1300, 1260 };
	khbpf_vctr_in(&v, &r, 1);
	r = (struct khbpf_ctr_read){ 310, 1310, 1270 };
	khbpf_vctr_now(&v, &r, 1, &e);
	assert_int_equal(khbpf_vctr_status(&b, &e), KHBPF_VCTR_MULTIPLEXED);
	assert_int_equal(e.lost - b.lost, 40);
}

/* Multiplexing before the span does not taint it: only the growth counts. */
static void test_vcounter__multiplexed_before(void **state)
{
	struct khbpf_vctr v = { 0 };
	struct khbpf_ctr_read r = { 0, 0, 0 };
	struct khbpf_vreading b, e;

	(void)state;
	khbpf_vctr_in(&v, &r, 1);
	r = (struct khbpf_ctr_read){ 50, 100, 50 };
	khbpf_vctr_out(&v, &r, 1);
	r = (struct khbpf_ctr_read){ 60, 200, 150 };
	khbpf_vctr_in(&v, &r, 1);
	r = (struct khbpf_ctr_read){ 70, 210, 160 };
	khbpf_vctr_now(&v, &r, 1, &b);
	r = (struct khbpf_ctr_read){ 90, 230, 180 };
	khbpf_vctr_now(&v, &r, 1, &e);
	assert_int_equal(b.lost, 50);
	assert_int_equal(khbpf_vctr_status(&b, &e), KHBPF_VCTR_OK);
	assert_int_equal(e.value - b.value, 20);
}

/* A failed read at a switch-in: that stint is uncounted, so spans across it are broken. */
static void test_vcounter__failed_switch_in_read(void **state)
{
	struct khbpf_vctr v = { 0 };
	struct khbpf_ctr_read r = { 10, 10, 10 }, bad = { 0 };
	struct khbpf_vreading b, mid, e;

	(void)state;
	khbpf_vctr_in(&v, &r, 1);
	r = (struct khbpf_ctr_read){ 20, 20, 20 };
	khbpf_vctr_now(&v, &r, 1, &b);
	r = (struct khbpf_ctr_read){ 30, 30, 30 };
	khbpf_vctr_out(&v, &r, 1);
	khbpf_vctr_in(&v, &bad, 0);
	/* Mid-stint readings are impossible without the switch-in reading. */
	r = (struct khbpf_ctr_read){ 40, 40, 40 };
	khbpf_vctr_now(&v, &r, 1, &mid);
	assert_int_equal(mid.ok, 0);
	assert_int_equal(khbpf_vctr_status(&b, &mid), KHBPF_VCTR_NO_READING);
	khbpf_vctr_out(&v, &r, 1);
	assert_int_equal(v.broken, 1);
	r = (struct khbpf_ctr_read){ 50, 50, 50 };
	khbpf_vctr_in(&v, &r, 1);
	r = (struct khbpf_ctr_read){ 60, 60, 60 };
	khbpf_vctr_now(&v, &r, 1, &e);
	assert_int_equal(e.ok, 1);
	assert_int_equal(khbpf_vctr_status(&b, &e), KHBPF_VCTR_BROKEN);
	/* A span entirely after the broken stint is fine. */
	r = (struct khbpf_ctr_read){ 65, 65, 65 };
	khbpf_vctr_now(&v, &r, 1, &b);
	assert_int_equal(khbpf_vctr_status(&e, &b), KHBPF_VCTR_OK);
	assert_int_equal(b.value - e.value, 5);
}

/* A failed read at a switch-out, and a counter that went backwards (reset). */
static void test_vcounter__failed_out_and_reset(void **state)
{
	struct khbpf_vctr v = { 0 };
	struct khbpf_ctr_read r = { 1000, 10, 10 };
	struct khbpf_vreading b, e;

	(void)state;
	khbpf_vctr_in(&v, &r, 1);
	khbpf_vctr_now(&v, &r, 1, &b);
	khbpf_vctr_out(&v, &r, 0);
	assert_int_equal(v.broken, 1);
	assert_int_equal(v.in_valid, 0);
	khbpf_vctr_in(&v, &r, 1);
	r.counter = 10; /* below the switch-in reading */
	khbpf_vctr_now(&v, &r, 1, &e);
	assert_int_equal(e.ok, 0);
	khbpf_vctr_out(&v, &r, 1);
	assert_int_equal(v.broken, 2);
	assert_int_equal(v.value, 0);
}

/* A failed read at the span's own edge is a missing reading, not a zero. */
static void test_vcounter__failed_edge_read(void **state)
{
	struct khbpf_vctr v = { 0 };
	struct khbpf_ctr_read r = { 1, 1, 1 };
	struct khbpf_vreading b, e;

	(void)state;
	khbpf_vctr_in(&v, &r, 1);
	khbpf_vctr_now(&v, &r, 0, &b);
	assert_int_equal(b.ok, 0);
	r.counter = 9;
	khbpf_vctr_now(&v, &r, 1, &e);
	assert_int_equal(khbpf_vctr_status(&b, &e), KHBPF_VCTR_NO_READING);
	assert_int_equal(khbpf_vctr_status(&e, &b), KHBPF_VCTR_NO_READING);
}

/* Counts near 2^64 on the CPU: only differences are taken, nothing overflows. */
static void test_vcounter__large_cpu_counts(void **state)
{
	struct khbpf_vctr v = { 0 };
	struct khbpf_ctr_read r = { UINT64_MAX - 1000, UINT64_MAX - 10, UINT64_MAX - 10 };
	struct khbpf_vreading b, e;

	(void)state;
	khbpf_vctr_in(&v, &r, 1);
	khbpf_vctr_now(&v, &r, 1, &b);
	r.counter = UINT64_MAX;
	r.enabled = r.running = UINT64_MAX;
	khbpf_vctr_now(&v, &r, 1, &e);
	assert_int_equal(khbpf_vctr_status(&b, &e), KHBPF_VCTR_OK);
	assert_int_equal(e.value - b.value, 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vcounter__one_stint),
		cmocka_unit_test(test_vcounter__switched_out_and_migrated),
		cmocka_unit_test(test_vcounter__multiplexed_inside),
		cmocka_unit_test(test_vcounter__multiplexed_before),
		cmocka_unit_test(test_vcounter__failed_switch_in_read),
		cmocka_unit_test(test_vcounter__failed_out_and_reset),
		cmocka_unit_test(test_vcounter__failed_edge_read),
		cmocka_unit_test(test_vcounter__large_cpu_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

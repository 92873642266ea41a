// SPDX-License-Identifier: MIT
/*
 * blockcause: the names the document uses, and the system call table the
 * BPF side classifies blocking with, by this host's numbers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <cmocka.h>

#include "document/blockcause.h"

static void test_blockcause__names(void **state)
{
	(void)state;
	assert_string_equal(blockcause__name(KHBPF_BLOCK_LOCK), "lock");
	assert_string_equal(blockcause__name(KHBPF_BLOCK_IO), "io");
	assert_string_equal(blockcause__name(KHBPF_BLOCK_SLEEP), "sleep");
	assert_string_equal(blockcause__name(KHBPF_BLOCK_FAULT), "fault");
	assert_string_equal(blockcause__name(KHBPF_BLOCK_OTHER), "other");
	assert_null(blockcause__name(KHBPF_BLOCK_CAUSES));
	assert_string_equal(blockcause__waker_kind(KHBPF_WAKER_TASK), "thread");
	assert_string_equal(blockcause__waker_kind(KHBPF_WAKER_INTERRUPT), "interrupt");
	assert_string_equal(blockcause__waker_kind(KHBPF_WAKER_TIMER), "timer");
	assert_null(blockcause__waker_kind(0));
}

/* The calls the issue names, each with its cause. */
static void test_blockcause__syscalls(void **state)
{
	(void)state;
	assert_int_equal(blockcause__syscall(SYS_futex), KHBPF_BLOCK_LOCK);
	assert_int_equal(blockcause__syscall(SYS_read), KHBPF_BLOCK_IO);
	assert_int_equal(blockcause__syscall(SYS_write), KHBPF_BLOCK_IO);
	assert_int_equal(blockcause__syscall(SYS_recvmsg), KHBPF_BLOCK_IO);
	assert_int_equal(blockcause__syscall(SYS_epoll_wait), KHBPF_BLOCK_IO);
	assert_int_equal(blockcause__syscall(SYS_io_uring_enter), KHBPF_BLOCK_IO);
	assert_int_equal(blockcause__syscall(SYS_fsync), KHBPF_BLOCK_IO);
	assert_int_equal(blockcause__syscall(SYS_nanosleep), KHBPF_BLOCK_SLEEP);
	assert_int_equal(blockcause__syscall(SYS_clock_nanosleep), KHBPF_BLOCK_SLEEP);
	assert_int_equal(blockcause__syscall(SYS_wait4), KHBPF_BLOCK_OTHER);
	assert_int_equal(blockcause__syscall(SYS_sched_setaffinity), KHBPF_BLOCK_OTHER);
	assert_int_equal(blockcause__syscall(KHBPF_SYSCALL_NR_MAX + 7), KHBPF_BLOCK_OTHER);
}

/* poll and select on no descriptor are timed sleeps: the flag names the argument. */
static void test_blockcause__poll_on_nothing(void **state)
{
	(void)state;
	assert_int_equal(blockcause__syscall(SYS_poll),
			 KHBPF_BLOCK_IO | KHBPF_SYSCALL_SLEEP_IF_ARG1_ZERO);
	assert_int_equal(blockcause__syscall(SYS_ppoll),
			 KHBPF_BLOCK_IO | KHBPF_SYSCALL_SLEEP_IF_ARG1_ZERO);
	assert_int_equal(blockcause__syscall(SYS_select),
			 KHBPF_BLOCK_IO | KHBPF_SYSCALL_SLEEP_IF_ARG0_ZERO);
	assert_int_equal(blockcause__syscall(SYS_pselect6),
			 KHBPF_BLOCK_IO | KHBPF_SYSCALL_SLEEP_IF_ARG0_ZERO);
}

/* Every listed number fits the BPF array, and every value is a cause. */
static void test_blockcause__table_fits(void **state)
{
	uint32_t nr, v;

	(void)state;
	for (nr = 0; nr < 4096; nr++) {
		v = blockcause__syscall(nr);
		if (nr >= KHBPF_SYSCALL_NR_MAX)
			assert_int_equal(v, KHBPF_BLOCK_OTHER);
		assert_true((v & KHBPF_SYSCALL_CAUSE_MASK) < KHBPF_BLOCK_CAUSES);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blockcause__names),
		cmocka_unit_test(test_blockcause__syscalls),
		cmocka_unit_test(test_blockcause__poll_on_nothing),
		cmocka_unit_test(test_blockcause__table_fits),
	};

	return cmocka_run_group_tests_name("blockcause", tests, NULL, NULL);
}

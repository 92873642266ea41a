// SPDX-License-Identifier: MIT
#include <stddef.h>
#include <sys/syscall.h>

#include "document/blockcause.h"

_Static_assert(KHBPF_BLOCK_CAUSES == BLOCK_CAUSES && KHBPF_BLOCK_LOCK == 0 && KHBPF_BLOCK_IO == 1 &&
		       KHBPF_BLOCK_SLEEP == 2 && KHBPF_BLOCK_FAULT == 3 && KHBPF_BLOCK_OTHER == 4,
	       "blocked_cause__name()'s order");

const char *blockcause__name(uint32_t cause)
{
	return blocked_cause__name(cause);
}

const char *blockcause__waker_kind(uint32_t kind)
{
	switch (kind) {
	case KHBPF_WAKER_TASK:
		return "thread";
	case KHBPF_WAKER_INTERRUPT:
		return "interrupt";
	case KHBPF_WAKER_TIMER:
		return "timer";
	}
	return NULL;
}

#define IO KHBPF_BLOCK_IO
#define SLEEP_IF0 (KHBPF_BLOCK_IO | KHBPF_SYSCALL_SLEEP_IF_ARG0_ZERO)
#define SLEEP_IF1 (KHBPF_BLOCK_IO | KHBPF_SYSCALL_SLEEP_IF_ARG1_ZERO)

/*
 * By this host's numbers (<sys/syscall.h>), so the table is right for the
 * architecture khbpf is built for. A call missing here blocks as `other`.
 */
static const struct {
	long nr;
	uint32_t cause;
} table[] = {
	/* lock: futex waits (mutexes, condition variables, pthread_join) */
	{ SYS_futex, KHBPF_BLOCK_LOCK },
#ifdef SYS_futex_waitv
	{ SYS_futex_waitv, KHBPF_BLOCK_LOCK },
#endif
#ifdef SYS_futex_wait
	{ SYS_futex_wait, KHBPF_BLOCK_LOCK },
#endif
	{ SYS_flock, KHBPF_BLOCK_LOCK },
	/* io: files, pipes, sockets, and waiting on them */
	{ SYS_read, IO },
	{ SYS_write, IO },
	{ SYS_pread64, IO },
	{ SYS_pwrite64, IO },
	{ SYS_readv, IO },
	{ SYS_writev, IO },
	{ SYS_preadv, IO },
	{ SYS_pwritev, IO },
	{ SYS_preadv2, IO },
	{ SYS_pwritev2, IO },
	{ SYS_sendfile, IO },
	{ SYS_splice, IO },
	{ SYS_tee, IO },
	{ SYS_vmsplice, IO },
	{ SYS_copy_file_range, IO },
	{ SYS_fsync, IO },
	{ SYS_fdatasync, IO },
	{ SYS_sync, IO },
	{ SYS_syncfs, IO },
	{ SYS_sync_file_range, IO },
	{ SYS_msync, IO },
	{ SYS_open, IO },
	{ SYS_openat, IO },
	{ SYS_close, IO },
	{ SYS_accept, IO },
	{ SYS_accept4, IO },
	{ SYS_connect, IO },
	{ SYS_recvfrom, IO },
	{ SYS_sendto, IO },
	{ SYS_recvmsg, IO },
	{ SYS_sendmsg, IO },
	{ SYS_recvmmsg, IO },
	{ SYS_sendmmsg, IO },
	{ SYS_epoll_wait, IO },
	{ SYS_epoll_pwait, IO },
#ifdef SYS_epoll_pwait2
	{ SYS_epoll_pwait2, IO },
#endif
	{ SYS_io_getevents, IO },
	{ SYS_io_pgetevents, IO },
	{ SYS_io_uring_enter, IO },
	/* poll and select on no file descriptor: a timed sleep */
	{ SYS_poll, SLEEP_IF1 },
	{ SYS_ppoll, SLEEP_IF1 },
	{ SYS_select, SLEEP_IF0 },
	{ SYS_pselect6, SLEEP_IF0 },
	/* sleep */
	{ SYS_nanosleep, KHBPF_BLOCK_SLEEP },
	{ SYS_clock_nanosleep, KHBPF_BLOCK_SLEEP },
	{ SYS_pause, KHBPF_BLOCK_SLEEP },
	{ SYS_rt_sigsuspend, KHBPF_BLOCK_SLEEP },
	{ SYS_rt_sigtimedwait, KHBPF_BLOCK_SLEEP },
};

uint32_t blockcause__syscall(uint32_t nr)
{
	size_t i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].nr == (long)nr)
			return table[i].cause;
	return KHBPF_BLOCK_OTHER;
}

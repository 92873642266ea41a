/* SPDX-License-Identifier: MIT */
/*
 * Blocked time by cause, and who woke the thread: the names the document
 * uses, and the system call table the BPF side classifies with.
 */
#ifndef KHBPF_BLOCKCAUSE_H
#define KHBPF_BLOCKCAUSE_H

#include <stdint.h>

#include "lib/evidence.h"
#include "khbpf/sched.h"

/* "lock", "io", "sleep", "fault", "other"; NULL out of range. */
const char *blockcause__name(uint32_t cause);
/* "thread", "interrupt", "timer"; NULL out of range. */
const char *blockcause__waker_kind(uint32_t kind);
/*
 * The syscall_cause value of system call nr on this host's architecture
 * (KHBPF_BLOCK_* with KHBPF_SYSCALL_SLEEP_IF_ARG*_ZERO); KHBPF_BLOCK_OTHER
 * for calls not listed.
 */
uint32_t blockcause__syscall(uint32_t nr);

#endif /* KHBPF_BLOCKCAUSE_H */

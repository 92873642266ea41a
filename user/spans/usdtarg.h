/* SPDX-License-Identifier: MIT */
/*
 * Reading one argument of a probe site in BPF (--key): a USDT argument
 * spec as the SDT note writes it (x86-64: "SIZE@OPERAND", SIZE 1, 2, 4 or 8,
 * negative when signed; OPERAND $imm, %reg, off(%reg) or (%reg)), or a
 * function's argument register, as a struct khbpf_arg_spec
 * (include/khbpf/spans.h). libbpf 1.1 decodes the same forms, but only
 * inside bpf_program__attach_usdt, which makes a link per site and its own
 * cookies; khbpf attaches USDT sites as it does function spans
 * (uprobe_multi, the metric in the cookie), so it reads the spec itself.
 */
#ifndef KHBPF_USDTARG_H
#define KHBPF_USDTARG_H

#include <stddef.h>

#include "khbpf/spans.h"

/*
 * The n-th (0-based) of the space-separated specs in args into out; 0, or
 * -EINVAL with why (one clause naming the spec: "argument 1 '8@sym(%rip)'
 * is RIP-relative, which khbpf does not read") when there is no such
 * argument or its form is not one of the above.
 */
int usdtarg__parse(const char *args, unsigned int n, struct khbpf_arg_spec *out, char *why,
		   size_t size);

/* A function's n-th integer argument register (System V x86-64: rdi, rsi, rdx, rcx, r8, r9). */
int usdtarg__function_arg(unsigned int n, struct khbpf_arg_spec *out, char *why, size_t size);

#endif /* KHBPF_USDTARG_H */

// SPDX-License-Identifier: MIT
/* USDT argument specs and function argument registers; see usdtarg.h. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

#include "spans/usdtarg.h"

/*
 * The kernel's x86-64 struct pt_regs, the context of a uprobe program, has
 * the layout of the user ABI's struct user_regs_struct (both follow the
 * registers' save order on entry): offsets are taken from the latter.
 */
#define REG(name, field)                                       \
	{                                                      \
		name, offsetof(struct user_regs_struct, field) \
	}
static const struct {
	const char *name;
	size_t off;
} regs[] = {
	REG("rax", rax),  REG("eax", rax),  REG("ax", rax),   REG("al", rax),	REG("rbx", rbx),
	REG("ebx", rbx),  REG("bx", rbx),   REG("bl", rbx),   REG("rcx", rcx),	REG("ecx", rcx),
	REG("cx", rcx),	  REG("cl", rcx),   REG("rdx", rdx),  REG("edx", rdx),	REG("dx", rdx),
	REG("dl", rdx),	  REG("rsi", rsi),  REG("esi", rsi),  REG("si", rsi),	REG("sil", rsi),
	REG("rdi", rdi),  REG("edi", rdi),  REG("di", rdi),   REG("dil", rdi),	REG("rbp", rbp),
	REG("ebp", rbp),  REG("bp", rbp),   REG("bpl", rbp),  REG("rsp", rsp),	REG("esp", rsp),
	REG("sp", rsp),	  REG("spl", rsp),  REG("r8", r8),    REG("r8d", r8),	REG("r8w", r8),
	REG("r8b", r8),	  REG("r9", r9),    REG("r9d", r9),   REG("r9w", r9),	REG("r9b", r9),
	REG("r10", r10),  REG("r10d", r10), REG("r10w", r10), REG("r10b", r10), REG("r11", r11),
	REG("r11d", r11), REG("r11w", r11), REG("r11b", r11), REG("r12", r12),	REG("r12d", r12),
	REG("r12w", r12), REG("r12b", r12), REG("r13", r13),  REG("r13d", r13), REG("r13w", r13),
	REG("r13b", r13), REG("r14", r14),  REG("r14d", r14), REG("r14w", r14), REG("r14b", r14),
	REG("r15", r15),  REG("r15d", r15), REG("r15w", r15), REG("r15b", r15),
};

static int reg_off(const char *name, size_t len, uint32_t *off)
{
	size_t i;

	for (i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		if (strlen(regs[i].name) == len && !strncmp(regs[i].name, name, len)) {
			*off = (uint32_t)regs[i].off;
			return 0;
		}
	}
	return -EINVAL;
}

int usdtarg__parse(const char *args, unsigned int n, struct khbpf_arg_spec *out, char *why,
		   size_t size)
{
	char spec[128], *at, *op, *end, *paren;
	const char *p = args;
	size_t len = 0;
	unsigned int i;
	long sz;

	memset(out, 0, sizeof(*out));
	for (i = 0;; i++) {
		while (*p == ' ')
			p++;
		len = strcspn(p, " ");
		if (!len) {
			snprintf(why, size, "the probe has %u argument%s, not an argument %u", i,
				 i == 1 ? "" : "s", n);
			return -EINVAL;
		}
		if (i == n)
			break;
		p += len;
	}
	if (len >= sizeof(spec)) {
		snprintf(why, size, "argument %u is a spec over %zu bytes", n, sizeof(spec) - 1);
		return -EINVAL;
	}
	memcpy(spec, p, len);
	spec[len] = '\0';
	at = strchr(spec, '@');
	sz = at ? strtol(spec, &end, 10) : 0;
	if (!at || end != at || (labs(sz) != 1 && labs(sz) != 2 && labs(sz) != 4 && labs(sz) != 8))
		goto bad;
	out->size = (uint8_t)labs(sz);
	out->is_signed = sz < 0;
	op = at + 1;
	if (op[0] == '$') {
		errno = 0;
		out->val_off = strtoll(op + 1, &end, 0);
		if (end == op + 1 || *end || errno)
			goto bad;
		out->type = KHBPF_ARG_IMM;
		return 0;
	}
	if (op[0] == '%') {
		if (reg_off(op + 1, strlen(op + 1), &out->reg_off))
			goto bad;
		out->type = KHBPF_ARG_REG;
		return 0;
	}
	paren = strchr(op, '(');
	if (!paren || paren[1] != '%' || spec[len - 1] != ')')
		goto bad;
	if (strchr(paren, ',')) {
		snprintf(why, size,
			 "argument %u '%s' has an index register, a form khbpf does not read", n,
			 spec);
		return -EINVAL;
	}
	if (!strncmp(paren, "(%rip)", 6)) {
		snprintf(why, size, "argument %u '%s' is RIP-relative, a form khbpf does not read",
			 n, spec);
		return -EINVAL;
	}
	if (reg_off(paren + 2, (size_t)(spec + len - 1 - (paren + 2)), &out->reg_off))
		goto bad;
	if (paren != op) {
		errno = 0;
		out->val_off = strtoll(op, &end, 0);
		if (end != paren || errno)
			goto bad;
	}
	out->type = KHBPF_ARG_DEREF;
	return 0;
bad:
	snprintf(why, size,
		 "argument %u '%s' is not a spec khbpf reads (SIZE@$imm, @%%reg, @off(%%reg))", n,
		 spec);
	memset(out, 0, sizeof(*out));
	return -EINVAL;
}

int usdtarg__function_arg(unsigned int n, struct khbpf_arg_spec *out, char *why, size_t size)
{
	static const char *const names[] = { "rdi", "rsi", "rdx", "rcx", "r8", "r9" };

	memset(out, 0, sizeof(*out));
	if (n >= sizeof(names) / sizeof(names[0])) {
		snprintf(why, size,
			 "argument %u of a function: only the first 6 (in registers) can be read",
			 n);
		return -EINVAL;
	}
	reg_off(names[n], strlen(names[n]), &out->reg_off);
	out->type = KHBPF_ARG_REG;
	out->size = 8;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Annotating span functions for khbpf.
 *
 *	KHBPF_SPAN(parse_request, "parse-request")
 *	static int parse_request(const char *buf, size_t len)
 *	{
 *		...
 *	}
 *
 * The macro goes right before the function's definition (file scope). It
 * does two things and changes nothing else about how the program runs:
 *  1. emits an ELF note in section .note.khbpf (not allocated: never loaded
 *     into memory) holding the function's link-time address and the metric
 *     name. The address is an assembler `.8byte fn`, resolved by the linker,
 *     so the note needs no run-time relocation, works in PIE executables and
 *     shared libraries, for static functions too, and survives
 *     `strip --strip-all` (it is not a symbol table);
 *  2. gives the function attributes: noinline and noclone (so there is one
 *     real function at that address), used, and a patchable entry of five
 *     NOP bytes, where khbpf's uprobe goes. clang emits one 5-byte NOP
 *     (nopl 0x0(%rax,%rax,1)), which kernels from 6.18 on probe through
 *     the optimized uprobe path; GCC 12 emits five 1-byte NOPs, probed the
 *     ordinary (int3) way, which is slower per call (see docs/spans.md).
 *
 * The metric is kebab-case: [a-z0-9]+(-[a-z0-9]+)*, at most 63 bytes.
 *
 * Note layout (all fields in the object's byte order, 4-byte aligned):
 *	namesz  u32 = 6
 *	descsz  u32 = 12 + strlen(metric) + 1
 *	type    u32 = 1 (KHBPF_NOTE_SPAN)
 *	name    "khbpf\0" + 2 bytes of padding
 *	desc    u64 address   link-time address of the function's first byte
 *	        u32 flags     0 in version 1; readers reject other values
 *	        char[]        metric, NUL-terminated
 *	        padding to 4 bytes
 */
#ifndef KHBPF_SPAN_H
#define KHBPF_SPAN_H

#define KHBPF_NOTE_NAME "khbpf"
#define KHBPF_NOTE_SPAN 1
#define KHBPF_METRIC_MAX 63

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "khbpf/span.h: notes are defined for 64-bit x86 and arm64"
#endif

#define KHBPF__STR(x) #x
#define KHBPF__XSTR(x) KHBPF__STR(x)

/* `1:`/`2:` are local labels, so the macro can be used many times per file. */
/* clang-format off */
#define KHBPF__NOTE(fn, metric)						\
	__asm__(".pushsection .note.khbpf,\"\",%note\n"		\
		".balign 4\n"						\
		".4byte 6\n"						\
		".4byte 2f - 1f\n"					\
		".4byte " KHBPF__XSTR(KHBPF_NOTE_SPAN) "\n"		\
		".asciz \"" KHBPF_NOTE_NAME "\"\n"			\
		".balign 4\n"						\
		"1: .8byte " #fn "\n"					\
		".4byte 0\n"						\
		".asciz \"" metric "\"\n"				\
		"2: .balign 4\n"					\
		".popsection\n")
/* clang-format on */

#if defined(__clang__) || defined(__GNUC__)
#define KHBPF__ATTRS __attribute__((noinline, used, patchable_function_entry(5, 0)))
#endif
#if defined(__GNUC__) && !defined(__clang__)
#undef KHBPF__ATTRS
#define KHBPF__ATTRS __attribute__((noinline, noclone, used, patchable_function_entry(5, 0)))
#endif

#define KHBPF_SPAN(fn, metric)   \
	KHBPF__NOTE(fn, metric); \
	KHBPF__ATTRS

#endif /* KHBPF_SPAN_H */

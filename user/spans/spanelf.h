/* SPDX-License-Identifier: MIT */
/*
 * One ELF object read for span sites: its function symbols, its
 * .note.khbpf annotations, and the file offset of a link-time address.
 * Its public face (spanfind__notes, spanfind__symbols,
 * spanfind__vaddr_to_offset) is reached through spanfind.h; the rest is
 * spanfind's and spanobjects'.
 */
#ifndef KHBPF_SPANELF_H
#define KHBPF_SPANELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libelf.h>

#include "spans/spansite.h"

/* A defined function symbol; name points into the Elf's string table. */
struct fsym {
	uint64_t addr, size;
	const char *name;
	int rank; /* 0 global, 1 weak, 2 other: which alias names an address */
	size_t idx;
	bool from_debug; /* from the object's debug file, not its own tables */
};

struct elf_file {
	int fd;
	struct span_file_id id; /* the file opened */
	Elf *elf;
	unsigned char data; /* EI_DATA, for the notes' payload */
	bool has_symtab;
	struct fsym *syms; /* sorted by address, the preferred alias first */
	size_t nr_syms, cap_syms;
	/* A stripped object's debug file, whose .symtab syms holds too (spandebug). */
	struct elf_file *debug;
	char *debug_path; /* as the target sees it, or under a --debug-dir */
};

/*
 * Opens path, a 64-bit ELF executable or shared object, to read; object
 * names it in reason, which says why on error: open(2)'s -errno, -EISDIR,
 * -ENOEXEC (not such a file), -EINVAL (cut short, or libelf rejects it).
 */
int elf_file__open(struct elf_file *f, const char *path, const char *object, char *reason,
		   size_t size);
/* Reads the function symbols of .symtab and .dynsym; 0 or -ENOMEM. */
int elf_file__load_syms(struct elf_file *f);
/*
 * Adds the functions of debug's .symtab to f's, marked from_debug, and
 * keeps debug (heap-allocated, open) and a copy of path, which names it,
 * until f is closed. A function f names alike (address, binding and name)
 * keeps f's entry first, so only what f lacks is from debug. -ENOENT when
 * debug's .symtab has no function, -ENOMEM; on error f is as it was and
 * debug is still the caller's.
 */
int elf_file__add_debug(struct elf_file *f, struct elf_file *debug, const char *path);
/* Closes f and the debug file it holds; f may be closed twice. */
void elf_file__close(struct elf_file *f);

/* A site per span note of f (see spanfind__notes); 0 or -ENOMEM. */
int spanelf__notes_scan(struct site_vec *vec, const struct elf_file *f, const char *object,
			const char *open_path);

/*
 * A site per function of f matching glob (see spanfind__symbols); *matched
 * counts them, duplicates of earlier sites too. A site of a function from
 * f's debug file names it in symbols_from. 0 or -ENOMEM.
 */
int spanelf__symbols_scan(struct site_vec *vec, const struct elf_file *f, const char *object,
			  const char *open_path, const char *glob, const char *metric,
			  size_t *matched);

/*
 * Appends a site per span note of the ELF file open_path, naming it object.
 * A malformed note (wrong type, short descriptor, flags set, bad metric,
 * address outside every executable segment, annotated twice with different
 * metrics) becomes a site with err -EINVAL (-EEXIST for the last) and a
 * reason; the other notes are still read. An identical second note of one
 * function is dropped. Returns 0, also when there are no notes. When the
 * file cannot be read at all, one site with err and a reason is appended
 * and that err returned: open(2)'s -errno, -EISDIR for a directory,
 * -ENOEXEC when it is not a 64-bit ELF executable or shared object, -EINVAL
 * when it is cut short or libelf rejects it. -ENOMEM appends nothing.
 */
int spanfind__notes(const char *open_path, const char *object, struct span_site **sites,
		    size_t *nr);

/*
 * Appends a site per function (STT_FUNC or STT_GNU_IFUNC, defined, size >
 * 0) of .symtab and .dynsym whose name matches glob, one per address: of
 * aliases, the global one before weak before local, then the smallest
 * name. Sites are in address order. metric (NULL: derived from each name,
 * lowercased with every run of other characters made one '-') applies to
 * every match. An IFUNC's address is its resolver's. Returns 0 when
 * something matched; -ENOENT with one error site saying so (and whether the
 * object is stripped) when nothing did; file errors as spanfind__notes;
 * -EINVAL (nothing appended) for a NULL or empty glob or an invalid metric.
 */
int spanfind__symbols(const char *open_path, const char *object, const char *glob,
		      const char *metric, struct span_site **sites, size_t *nr);

/*
 * Link-time address to file offset through the executable PT_LOAD segments
 * (the address must be within p_filesz). -ENOENT when no such segment holds
 * it, -EINVAL for a NULL elf or unreadable program headers.
 */
int spanfind__vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *offset);

#endif /* KHBPF_SPANELF_H */

/* SPDX-License-Identifier: MIT */
/*
 * One ELF object read for span sites: its function symbols, its
 * .note.khbpf annotations, and the file offset of a link-time address.
 * Internal to spanfind; spanfind__notes, spanfind__symbols and
 * spanfind__vaddr_to_offset (spanfind.h) are the public face.
 */
#ifndef KHBPF_SPANELF_H
#define KHBPF_SPANELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libelf.h>

#include "spansite.h"

/* A defined function symbol; name points into the Elf's string table. */
struct fsym {
	uint64_t addr, size;
	const char *name;
	int rank; /* 0 global, 1 weak, 2 other: which alias names an address */
	size_t idx;
};

struct elf_file {
	int fd;
	Elf *elf;
	unsigned char data; /* EI_DATA, for the notes' payload */
	bool has_symtab;
	struct fsym *syms; /* sorted by address, the preferred alias first */
	size_t nr_syms;
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
void elf_file__close(struct elf_file *f);

/* A site per span note of f (see spanfind__notes); 0 or -ENOMEM. */
int spanelf__notes_scan(struct site_vec *vec, const struct elf_file *f, const char *object,
			const char *open_path);

/*
 * A site per function of f matching glob (see spanfind__symbols); *matched
 * counts them, duplicates of earlier sites too. 0 or -ENOMEM.
 */
int spanelf__symbols_scan(struct site_vec *vec, const struct elf_file *f, const char *object,
			  const char *open_path, const char *glob, const char *metric,
			  size_t *matched);

#endif /* KHBPF_SPANELF_H */

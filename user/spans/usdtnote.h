/* SPDX-License-Identifier: MIT */
/*
 * USDT probes of one ELF object: the SystemTap SDT notes (.note.stapsdt,
 * owner "stapsdt", type 3) that packages ship (PostgreSQL, CPython,
 * libstdc++, the JVM...). Each note is one probe site: where its nop is,
 * its semaphore if it has one, and its argument specs. Read with libelf.
 */
#ifndef KHBPF_USDTNOTE_H
#define KHBPF_USDTNOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Includes the NUL. Longer names or argument strings make the note fail. */
#define USDT_NAME_MAX 64
#define USDT_ARGS_MAX 256
/* Sites kept per object; more are counted in usdt_list.dropped. */
#define USDT_SITES_MAX 8192

struct usdt_site {
	char provider[USDT_NAME_MAX];
	char name[USDT_NAME_MAX];
	/* Link-time address of the site, moved as .stapsdt.base was (prelink). */
	uint64_t addr;
	/* Its file offset, through the executable segment: where the uprobe goes. */
	uint64_t offset;
	/* Link-time address of the semaphore, 0 when the probe has none. */
	uint64_t semaphore;
	/*
	 * The semaphore's file offset, through the segment that holds it: the
	 * uprobe's ref_ctr_offset (the kernel raises it, 4.20 on). 0 without.
	 */
	uint64_t semaphore_offset;
	char args[USDT_ARGS_MAX]; /* the argument specs as written, e.g. "8@%rbx -4@%r13d" */
	unsigned int nr_args;
	int err; /* 0, or -errno: why this site cannot be used */
	char reason
		[512]; /* when err != 0: one sentence naming object (its first 256 bytes) and note */
};

struct usdt_list {
	struct usdt_site *v; /* in note order */
	size_t nr;
	uint64_t dropped; /* sites beyond USDT_SITES_MAX */
};

/*
 * Appends the USDT sites of the ELF file open_path (named object in
 * reasons) to *out. A malformed note (a short descriptor, a string missing
 * or too long, a name not of [A-Za-z0-9_.-], arguments not printable ASCII,
 * a site outside every executable segment, a semaphore outside every loaded
 * segment) becomes a site with err -EINVAL and a reason; the other notes
 * are still read. Returns 0, also without notes; when the file cannot be
 * read: open(2)'s -errno, -EISDIR, -ENOEXEC (not a 64-bit ELF executable
 * or shared object), -EINVAL, with reason set; -ENOMEM.
 */
int usdtnote__read(const char *open_path, const char *object, struct usdt_list *out, char *reason,
		   size_t size);
void usdtnote__free(struct usdt_list *l);

/* Parses the text of one note's descriptor (for tests and fuzzing); 0 or -EINVAL. */
int usdtnote__parse_desc(const unsigned char *desc, size_t len, bool big_endian,
			 struct usdt_site *s, uint64_t *base);

#endif /* KHBPF_USDTNOTE_H */

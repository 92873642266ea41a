// SPDX-License-Identifier: MIT
/*
 * Span discovery on an arbitrary file: the input is the object a process
 * maps (ROOT/proc/1/root/obj, its executable, listed in ROOT/proc/1/maps),
 * read by spanfind__notes, spanfind__symbols("*") and spanfind__discover
 * as `khbpf attach` does. Properties:
 *   - every site is either good (kebab-case metric, no reason, file offset
 *     as the input's own program headers give it) or has an error and a
 *     reason without control bytes (it is printed as one line; symbol
 *     names in the file may hold any byte); a file error is one site with
 *     that error
 *   - good note sites have distinct addresses; symbol sites come in
 *     strictly increasing address order
 *   - discovery finds exactly the sites spanfind__notes finds, in order
 *   - its USDT notes (usdtnote__read) fail as the file does; each site is
 *     good (provider and name set, arguments printable) or has an error
 *     and a one-line reason; at most USDT_SITES_MAX are kept
 */
#include <elf.h>
#include <errno.h>
#include <limits.h>

#include "khbpf/span.h"
#include "fuzz.h"
#include "spans/spanfind.h"
#include "spans/usdtnote.h"

static char open_path[PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *root = fuzz_tmp_root();
	static const char maps[] = "00400000-00401000 r-xp 00000000 08:01 1234 /obj\n";
	char exe[PATH_MAX];

	(void)argc;
	(void)argv;
	fuzz_put(root, "proc/1/maps", maps, sizeof(maps) - 1);
	fuzz_put(root, "proc/1/root/obj", "", 0);
	snprintf(open_path, sizeof(open_path), "%s/proc/1/root/obj", root);
	snprintf(exe, sizeof(exe), "%s/proc/1/exe", root);
	if (symlink(open_path, exe)) {
		perror(exe);
		abort();
	}
	return 0;
}

/*
 * The file offset of vaddr from the input's own program headers (64-bit
 * little-endian only): 1 found, 0 not in any executable PT_LOAD's file
 * part, -1 cannot tell (another byte order, headers out of the file).
 */
static int ref_offset(const uint8_t *data, size_t size, uint64_t vaddr, uint64_t *off)
{
	Elf64_Ehdr eh;
	size_t i;

	if (size < sizeof(eh))
		return -1;
	memcpy(&eh, data, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == PN_XNUM || eh.e_phoff > size ||
	    (size - eh.e_phoff) / sizeof(Elf64_Phdr) < eh.e_phnum)
		return -1;
	for (i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, data + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 1;
		}
	}
	return 0;
}

static void check_site(const struct span_site *s, const uint8_t *data, size_t size)
{
	uint64_t off;
	int found;

	FUZZ_CHECK(memchr(s->object, '\0', sizeof(s->object)));
	FUZZ_CHECK(memchr(s->open_path, '\0', sizeof(s->open_path)));
	FUZZ_CHECK(memchr(s->symbol, '\0', sizeof(s->symbol)));
	FUZZ_CHECK(memchr(s->metric, '\0', sizeof(s->metric)));
	FUZZ_CHECK(memchr(s->reason, '\0', sizeof(s->reason)));
	FUZZ_CHECK(!strcmp(s->object, "/obj"));
	if (s->err) {
		FUZZ_CHECK(s->err < 0);
		FUZZ_CHECK(s->reason[0]);
		for (const char *c = s->reason; *c; c++)
			FUZZ_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
		FUZZ_CHECK(!s->metric[0] || fuzz_kebab(s->metric));
		return;
	}
	FUZZ_CHECK(!s->reason[0]);
	FUZZ_CHECK(fuzz_kebab(s->metric));
	found = ref_offset(data, size, s->vaddr, &off);
	FUZZ_CHECK(found != 0);
	if (found > 0)
		FUZZ_CHECK(s->offset == off);
}

static bool same_site(const struct span_site *a, const struct span_site *b)
{
	return a->err == b->err && a->vaddr == b->vaddr && a->offset == b->offset &&
	       a->from_note == b->from_note && !strcmp(a->metric, b->metric) &&
	       !strcmp(a->symbol, b->symbol) && !strcmp(a->reason, b->reason);
}

static void check_usdt(int err_n)
{
	struct usdt_list l = { 0 };
	char reason[256] = "";
	size_t i, k;
	int err = usdtnote__read(open_path, "/obj", &l, reason, sizeof(reason));

	FUZZ_CHECK(err <= 0 && err != -ENOMEM);
	/* The same file, opened the same way: it fails as the span notes did. */
	FUZZ_CHECK(!err == !err_n || err_n == 0);
	if (err)
		FUZZ_CHECK(reason[0] && !l.nr);
	FUZZ_CHECK(l.nr <= USDT_SITES_MAX);
	for (i = 0; i < l.nr; i++) {
		const struct usdt_site *s = &l.v[i];

		if (s->err) {
			FUZZ_CHECK(s->reason[0]);
			for (k = 0; s->reason[k]; k++)
				FUZZ_CHECK((unsigned char)s->reason[k] >= 0x20 ||
					   s->reason[k] == '\t');
			continue;
		}
		FUZZ_CHECK(s->provider[0] && s->name[0]);
		for (k = 0; s->args[k]; k++)
			FUZZ_CHECK((unsigned char)s->args[k] >= 0x20 && s->args[k] != 0x7f);
	}
	usdtnote__free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct span_site *notes = NULL, *syms = NULL, *all = NULL;
	struct span_request req = { .symbol = "*" };
	size_t nn = 0, ns = 0, na = 0, i, j;
	int err_n, err_s, err_a;

	fuzz_put(fuzz_tmp_root(), "proc/1/root/obj", data, size);

	err_n = spanfind__notes(open_path, "/obj", &notes, &nn);
	FUZZ_CHECK(err_n <= 0 && err_n != -ENOMEM);
	if (err_n) {
		FUZZ_CHECK(nn == 1 && notes[0].err == err_n);
	}
	for (i = 0; i < nn; i++) {
		FUZZ_CHECK(notes[i].from_note);
		check_site(&notes[i], data, size);
		for (j = 0; j < i && !notes[i].err; j++)
			FUZZ_CHECK(notes[j].err || notes[j].vaddr != notes[i].vaddr);
	}

	check_usdt(err_n);

	err_s = spanfind__symbols(open_path, "/obj", "*", NULL, &syms, &ns);
	FUZZ_CHECK(err_s <= 0 && err_s != -ENOMEM);
	FUZZ_CHECK(ns >= 1 || !err_s);
	if (err_s && err_s != -ENOENT)
		FUZZ_CHECK(err_s == err_n && ns == 1);
	for (i = 0; i < ns; i++) {
		FUZZ_CHECK(!syms[i].from_note);
		check_site(&syms[i], data, size);
		if (!err_s && i && syms[i].err != -E2BIG)
			FUZZ_CHECK(syms[i].vaddr > syms[i - 1].vaddr);
	}

	err_a = spanfind__discover(fuzz_tmp_root(), 1, &req, 1, NULL, &all, &na);
	FUZZ_CHECK(err_a == 0);
	/* Not an ELF file: no notes to miss, so discovery skips it. */
	if (err_n == -ENOEXEC)
		nn = 0;
	FUZZ_CHECK(na >= nn);
	for (i = 0; i < nn; i++)
		FUZZ_CHECK(same_site(&all[i], &notes[i]));
	FUZZ_CHECK(na == nn || !all[nn].from_note);
	for (i = nn; i < na; i++)
		check_site(&all[i], data, size);

	spanfind__free(notes, nn);
	spanfind__free(syms, ns);
	spanfind__free(all, na);
	return 0;
}

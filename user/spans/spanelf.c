// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "khbpf/span.h"
#include "lib/fsutil.h"
#include "spans/spanelf.h"

#define NOTE_SECTION ".note.khbpf"
/* u64 address, u32 flags, then at least the metric's NUL. */
#define NOTE_DESC_MIN 13

void elf_file__close(struct elf_file *f)
{
	if (f->debug) {
		elf_file__close(f->debug);
		free(f->debug);
		f->debug = NULL;
	}
	free(f->debug_path);
	f->debug_path = NULL;
	free(f->syms);
	f->syms = NULL;
	if (f->elf)
		elf_end(f->elf);
	f->elf = NULL;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* Opens an object to read; on error reason says why, naming object. */
int elf_file__open(struct elf_file *f, const char *path, const char *object, char *reason,
		   size_t size)
{
	GElf_Ehdr eh;
	struct statfs sfs;
	struct stat st;
	int err;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(reason, size, "libelf is unusable: %s", elf_errmsg(-1));
		return -EINVAL;
	}
	/* Never waits: a FIFO named as an object is refused, not read. */
	f->fd = fsutil__open_regular(path, &st);
	if (f->fd == -EISDIR || f->fd == -EINVAL) {
		err = f->fd == -EISDIR ? -EISDIR : -ENOEXEC;
		f->fd = -1;
		snprintf(reason, size, "%s is %s, not a regular file", object,
			 fsutil__file_kind(st.st_mode));
		return err;
	}
	if (f->fd < 0) {
		err = f->fd;
		f->fd = -1;
		snprintf(reason, size, "cannot open %s: %s%s", object, strerror(-err),
			 ends_with(object, " (deleted)") ? " (deleted after it was mapped)" : "");
		return err;
	}
	f->id = (struct span_file_id){
		.dev = st.st_dev,
		.ino = st.st_ino,
		.size = (uint64_t)st.st_size,
		.mtime_ns =
			(uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec,
		.overlay = !fstatfs(f->fd, &sfs) && sfs.f_type == OVERLAYFS_SUPER_MAGIC,
	};
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (!f->elf) {
		err = -EINVAL;
		snprintf(reason, size, "libelf cannot read %s: %s", object, elf_errmsg(-1));
		goto err_close;
	}
	if (elf_kind(f->elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		snprintf(reason, size, "%s is not an ELF file", object);
		goto err_close;
	}
	if (gelf_getclass(f->elf) != ELFCLASS64) {
		err = -ENOEXEC;
		snprintf(reason, size, "%s is not a 64-bit ELF file", object);
		goto err_close;
	}
	if (!gelf_getehdr(f->elf, &eh)) {
		err = -EINVAL;
		snprintf(reason, size, "libelf cannot read the ELF header of %s: %s", object,
			 elf_errmsg(-1));
		goto err_close;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		err = -ENOEXEC;
		snprintf(reason, size, "%s is not an executable or shared object (ELF type %u)",
			 object, (unsigned int)eh.e_type);
		goto err_close;
	}
	/* libelf quietly shows a cut-short file as one without sections. */
	if ((uint64_t)eh.e_shnum * eh.e_shentsize > (uint64_t)st.st_size ||
	    eh.e_shoff > (uint64_t)st.st_size - (uint64_t)eh.e_shnum * eh.e_shentsize ||
	    (uint64_t)eh.e_phnum * eh.e_phentsize > (uint64_t)st.st_size ||
	    eh.e_phoff > (uint64_t)st.st_size - (uint64_t)eh.e_phnum * eh.e_phentsize) {
		err = -EINVAL;
		snprintf(reason, size, "%s is cut short: its headers end past its %lld bytes",
			 object, (long long)st.st_size);
		goto err_close;
	}
	f->data = eh.e_ident[EI_DATA];
	return 0;

err_close:
	elf_file__close(f);
	return err;
}

static int fsym_cmp(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;
	int c;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Appends the defined functions of elf's symbol tables: .symtab and
 * .dynsym, or, from a debug file, .symtab alone (its .dynsym, like the
 * contents of its other sections, is not in the file).
 */
static int add_syms(struct elf_file *f, Elf *elf, bool debug)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i, count;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && (debug || sh.sh_type != SHT_DYNSYM)))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !debug)
			f->has_symtab = true;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || !sh.sh_entsize)
			continue;
		count = d->d_size / sh.sh_entsize;
		for (i = 0; i < count; i++) {
			GElf_Sym sym;
			const char *name;
			int type;

			if (!gelf_getsym(d, (int)i, &sym))
				break;
			type = GELF_ST_TYPE(sym.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
			    sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (f->nr_syms == f->cap_syms) {
				size_t ncap = f->cap_syms ? f->cap_syms * 2 : 256;
				struct fsym *v = realloc(f->syms, ncap * sizeof(*v));

				if (!v)
					return -ENOMEM;
				f->syms = v;
				f->cap_syms = ncap;
			}
			f->syms[f->nr_syms] = (struct fsym){
				.addr = sym.st_value,
				.size = sym.st_size,
				.name = name,
				.rank = GELF_ST_BIND(sym.st_info) == STB_GLOBAL ? 0 :
					GELF_ST_BIND(sym.st_info) == STB_WEAK	? 1 :
										  2,
				.idx = f->nr_syms,
				.from_debug = debug,
			};
			f->nr_syms++;
		}
	}
	return 0;
}

/* Collects the defined functions of .symtab and .dynsym. */
int elf_file__load_syms(struct elf_file *f)
{
	int err = add_syms(f, f->elf, false);

	if (!err && f->nr_syms)
		qsort(f->syms, f->nr_syms, sizeof(*f->syms), fsym_cmp);
	return err;
}

/* Debug's entries come after f's, so fsym_cmp's last tie (idx) puts f's first. */
int elf_file__add_debug(struct elf_file *f, struct elf_file *debug, const char *path)
{
	size_t before = f->nr_syms;
	char *copy;
	int err;

	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	err = add_syms(f, debug->elf, true);
	if (!err && f->nr_syms == before)
		err = -ENOENT;
	if (err) {
		f->nr_syms = before;
		free(copy);
		return err;
	}
	qsort(f->syms, f->nr_syms, sizeof(*f->syms), fsym_cmp);
	f->debug = debug;
	f->debug_path = copy;
	return 0;
}

/* The preferred name of the function at addr, or "". */
static const char *elf_file__symbol_at(const struct elf_file *f, uint64_t addr)
{
	size_t lo = 0, hi = f->nr_syms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < f->nr_syms && f->syms[lo].addr == addr ? f->syms[lo].name : "";
}

int spanfind__vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *offset)
{
	size_t i, n;

	if (!elf || !offset || elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
			*offset = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

static bool printable(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

/* Reads a payload field in the object's byte order. */
static int note_field(const struct elf_file *f, void *dst, const void *src, Elf_Type type,
		      size_t size)
{
	Elf_Data to = { .d_buf = dst, .d_type = type, .d_size = size, .d_version = EV_CURRENT };
	Elf_Data from = {
		.d_buf = (void *)src, .d_type = type, .d_size = size, .d_version = EV_CURRENT
	};

	return gelf_xlatetom(f->elf, &to, &from, f->data) ? 0 : -EINVAL;
}

/* One khbpf note: a site, or an error site saying what is wrong with it. */
static int note_site(struct site_vec *vec, const struct elf_file *f, const char *object,
		     const char *open_path, size_t first, size_t nth, const GElf_Nhdr *nh,
		     const char *desc)
{
	uint64_t raw_addr, addr;
	uint32_t raw_flags, flags;
	const char *metric, *sym;
	char who[SPANFIND_SYMBOL_MAX + 48];
	bool terminated, valid;
	struct span_site *s;
	size_t mlen = 0, i;
	int err;

	s = site_vec__push(vec, object, open_path, true);
	if (!s)
		return -ENOMEM;
	if (nh->n_type != KHBPF_NOTE_SPAN) {
		span_site__fail(s, -EINVAL,
				"span note %zu of %s has type %u; khbpf knows only type %d", nth,
				object, nh->n_type, KHBPF_NOTE_SPAN);
		return 0;
	}
	if (nh->n_descsz < NOTE_DESC_MIN) {
		span_site__fail(
			s, -EINVAL,
			"span note %zu of %s has a descriptor of %u bytes; a span needs at least %d",
			nth, object, nh->n_descsz, NOTE_DESC_MIN);
		return 0;
	}
	memcpy(&raw_addr, desc, sizeof(raw_addr));
	memcpy(&raw_flags, desc + 8, sizeof(raw_flags));
	err = note_field(f, &addr, &raw_addr, ELF_T_XWORD, sizeof(addr));
	if (!err)
		err = note_field(f, &flags, &raw_flags, ELF_T_WORD, sizeof(flags));
	if (err) {
		span_site__fail(s, err, "span note %zu of %s cannot be converted: %s", nth, object,
				elf_errmsg(-1));
		return 0;
	}
	s->vaddr = addr;
	sym = elf_file__symbol_at(f, addr);
	spansite__copy_str(s->symbol, sizeof(s->symbol), sym);
	if (*sym)
		snprintf(who, sizeof(who), "function '%s' at 0x%llx", s->symbol,
			 (unsigned long long)addr);
	else
		snprintf(who, sizeof(who), "the function at 0x%llx", (unsigned long long)addr);
	/* A usable metric is kept even when the note fails, to name the lost span. */
	metric = desc + 12;
	terminated = memchr(metric, '\0', nh->n_descsz - 12);
	if (terminated)
		mlen = strlen(metric);
	valid = terminated && spansite__metric_valid_n(metric, mlen);
	if (valid)
		spansite__copy_str(s->metric, sizeof(s->metric), metric);

	if (flags) {
		span_site__fail(
			s, -EINVAL,
			"span note %zu of %s for function '%s' at 0x%llx has flags 0x%x; version 1 requires 0",
			nth, object, sym, (unsigned long long)addr, flags);
		return 0;
	}
	if (!terminated) {
		span_site__fail(
			s, -EINVAL,
			"span note %zu of %s for function '%s' at 0x%llx has a metric without its NUL",
			nth, object, sym, (unsigned long long)addr);
		return 0;
	}
	if (!valid) {
		if (printable(metric, mlen))
			span_site__fail(
				s, -EINVAL,
				"span note %zu of %s for function '%s' at 0x%llx has metric '%s', which is not kebab-case of at most %d bytes",
				nth, object, sym, (unsigned long long)addr, metric,
				KHBPF_METRIC_MAX);
		else
			span_site__fail(
				s, -EINVAL,
				"span note %zu of %s for function '%s' at 0x%llx has a metric with unprintable bytes",
				nth, object, sym, (unsigned long long)addr);
		return 0;
	}
	if (spanfind__vaddr_to_offset(f->elf, addr, &s->offset)) {
		span_site__fail(
			s, -EINVAL,
			"span note %zu of %s for metric '%s' has address 0x%llx, outside every executable segment",
			nth, object, s->metric, (unsigned long long)addr);
		return 0;
	}

	for (i = first; i < vec->n - 1; i++) {
		const struct span_site *o = &vec->v[i];

		if (o->err || o->vaddr != addr)
			continue;
		if (!strcmp(o->metric, s->metric)) {
			vec->n--;
			return 0;
		}
		span_site__fail(
			s, -EEXIST,
			"span note %zu of %s gives function '%s' at 0x%llx the metric '%s', but it is already annotated as '%s'",
			nth, object, sym, (unsigned long long)addr, s->metric, o->metric);
		return 0;
	}
	return 0;
}

static bool note_is_khbpf(const Elf_Data *d, const GElf_Nhdr *nh, size_t name_off)
{
	return nh->n_namesz == sizeof(KHBPF_NOTE_NAME) &&
	       !memcmp((const char *)d->d_buf + name_off, KHBPF_NOTE_NAME, sizeof(KHBPF_NOTE_NAME));
}

int spanelf__notes_scan(struct site_vec *vec, const struct elf_file *f, const char *object,
			const char *open_path)
{
	size_t first = vec->n, nth = 0, dropped = 0, shstrndx;
	Elf_Scn *scn = NULL;
	struct span_site *s;
	int err;

	if (elf_getshdrstrndx(f->elf, &shstrndx)) {
		s = site_vec__push(vec, object, open_path, true);
		if (!s)
			return -ENOMEM;
		span_site__fail(s, -EINVAL, "libelf cannot read the section names of %s: %s",
				object, elf_errmsg(-1));
		return 0;
	}
	while ((scn = elf_nextscn(f->elf, scn))) {
		size_t off, next, name_off, desc_off;
		const char *name;
		GElf_Shdr sh;
		GElf_Nhdr nh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(f->elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, NOTE_SECTION))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d) {
			s = site_vec__push(vec, object, open_path, true);
			if (!s)
				return -ENOMEM;
			span_site__fail(s, -EINVAL, "libelf cannot read %s of %s: %s", NOTE_SECTION,
					object, elf_errmsg(-1));
			continue;
		}
		for (off = 0; off < d->d_size; off = next) {
			next = gelf_getnote(d, off, &nh, &name_off, &desc_off);
			if (!next) {
				s = site_vec__push(vec, object, open_path, true);
				if (!s)
					return -ENOMEM;
				span_site__fail(
					s, -EINVAL,
					"%s of %s is cut short: the note at byte %zu overruns the section's %zu bytes",
					NOTE_SECTION, object, off, (size_t)d->d_size);
				break;
			}
			if (!note_is_khbpf(d, &nh, name_off))
				continue;
			nth++;
			if (vec->n - first >= SPANFIND_SITES_MAX) {
				dropped++;
				continue;
			}
			err = note_site(vec, f, object, open_path, first, nth, &nh,
					(const char *)d->d_buf + desc_off);
			if (err)
				return err;
		}
	}
	if (dropped) {
		s = site_vec__push(vec, object, open_path, true);
		if (!s)
			return -ENOMEM;
		span_site__fail(s, -E2BIG,
				"%zu span notes of %s were dropped: at most %d per object", dropped,
				object, SPANFIND_SITES_MAX);
	}
	return 0;
}

/* The site exists already (from a note or an earlier request). */
static bool site_seen(const struct site_vec *vec, const struct span_site *s)
{
	size_t i;

	for (i = 0; i < vec->n; i++) {
		const struct span_site *o = &vec->v[i];

		if (o != s && !o->err && o->offset == s->offset && !strcmp(o->metric, s->metric) &&
		    !strcmp(o->object, s->object))
			return true;
	}
	return false;
}

/*
 * Functions that return twice: setjmp and its kin save their return address
 * in a jmp_buf to come back to it, getcontext and swapcontext in a context
 * resumed later. A return probe replaces that address with the kernel's
 * trampoline, so the copy saved is the trampoline, which the second return
 * reaches with no return instance left for it: the kernel sends SIGILL
 * ("failed to handle uretprobe", handle_trampoline()), or returns somewhere
 * stale. Probing libc's every function that way killed this host's shells
 * (bash uses sigsetjmp), and in every process that maps libc, not only the
 * set's: a span site's probes are in the file. (vfork's child returns
 * through its parent's frame too, but uprobe_copy_process() gives it the
 * parent's return instances.)
 */
static const char *const returns_twice[] = {
	"setjmp",  "_setjmp",	 "__setjmp",	 "sigsetjmp",	"__sigsetjmp",
	"savectx", "getcontext", "__getcontext", "swapcontext", "__swapcontext",
};

/* Any name of the function at syms[i]'s address is one of returns_twice. */
static const char *returns_twice_at(const struct elf_file *f, size_t i)
{
	size_t j, k;

	while (i && f->syms[i - 1].addr == f->syms[i].addr)
		i--;
	for (j = i; j < f->nr_syms && f->syms[j].addr == f->syms[i].addr; j++)
		for (k = 0; k < sizeof(returns_twice) / sizeof(returns_twice[0]); k++)
			if (!strcmp(f->syms[j].name, returns_twice[k]))
				return returns_twice[k];
	return NULL;
}

/* Sites for the functions matching glob; *matched counts them, duplicates too. */
int spanelf__symbols_scan(struct site_vec *vec, const struct elf_file *f, const char *object,
			  const char *open_path, const char *glob, const char *metric,
			  size_t *matched)
{
	size_t i, first = vec->n, dropped = 0;
	uint64_t last = 0;
	struct span_site *s;
	const char *twice;

	*matched = 0;
	for (i = 0; i < f->nr_syms; i++) {
		const struct fsym *y = &f->syms[i];

		if (!y->size || fnmatch(glob, y->name, 0))
			continue;
		/* Sorted by address, preferred alias first: the first match names it. */
		if (*matched && y->addr == last)
			continue;
		last = y->addr;
		(*matched)++;
		if (vec->n - first >= SPANFIND_SITES_MAX) {
			dropped++;
			continue;
		}
		s = site_vec__push(vec, object, open_path, false);
		if (!s)
			return -ENOMEM;
		spansite__copy_str(s->symbol, sizeof(s->symbol), y->name);
		if (y->from_debug)
			spansite__copy_str(s->symbols_from, sizeof(s->symbols_from), f->debug_path);
		s->vaddr = y->addr;
		if (metric) {
			spansite__copy_str(s->metric, sizeof(s->metric), metric);
		} else if (spansite__metric_from_symbol(y->name, s->metric)) {
			span_site__fail(
				s, -EINVAL,
				"function '%s' of %s has no letter or digit to name a metric after; give one with =METRIC",
				y->name, object);
			continue;
		}
		if ((twice = returns_twice_at(f, i))) {
			span_site__fail(
				s, -EPERM,
				"function '%s' of %s returns twice (as %s does): a return probe there would crash every program that calls it, so it is not probed",
				y->name, object, twice);
			continue;
		}
		/* A debug file's sections hold nothing: the object's segments place it. */
		if (spanfind__vaddr_to_offset(f->elf, y->addr, &s->offset)) {
			span_site__fail(
				s, -ENOENT,
				"function '%s' of %s is at 0x%llx, outside every executable segment",
				y->name, object, (unsigned long long)y->addr);
			continue;
		}
		if (site_seen(vec, s))
			vec->n--;
	}
	if (dropped) {
		s = site_vec__push(vec, object, open_path, false);
		if (!s)
			return -ENOMEM;
		spansite__copy_str(s->symbol, sizeof(s->symbol), glob);
		span_site__fail(
			s, -E2BIG,
			"%zu functions of %s matching '%s' were dropped: at most %d per object",
			dropped, object, glob, SPANFIND_SITES_MAX);
	}
	return 0;
}

int spanfind__notes(const char *open_path, const char *object, struct span_site **sites, size_t *nr)
{
	struct site_vec vec = { 0 };
	struct elf_file f;
	char reason[256];
	int err, ret;

	if (!open_path || !object || !sites || !nr)
		return -EINVAL;
	err = elf_file__open(&f, open_path, object, reason, sizeof(reason));
	if (err) {
		err = site_vec__push_file_error(&vec, object, open_path, NULL, NULL, true, err,
						reason);
		goto out;
	}
	err = elf_file__load_syms(&f);
	if (!err)
		err = spanelf__notes_scan(&vec, &f, object, open_path);
	elf_file__close(&f);
out:
	if (err != -ENOMEM) {
		ret = site_vec__hand_over(&vec, sites, nr);
		if (ret)
			err = ret;
	}
	free(vec.v);
	return err;
}

int spanfind__symbols(const char *open_path, const char *object, const char *glob,
		      const char *metric, struct span_site **sites, size_t *nr)
{
	struct site_vec vec = { 0 };
	struct elf_file f;
	char reason[256];
	size_t matched;
	int err, ret;

	if (!open_path || !object || !glob || !*glob || !sites || !nr ||
	    (metric && !spansite__metric_valid(metric)))
		return -EINVAL;
	err = elf_file__open(&f, open_path, object, reason, sizeof(reason));
	if (err) {
		err = site_vec__push_file_error(&vec, object, open_path, glob, metric, false, err,
						reason);
		goto out;
	}
	err = elf_file__load_syms(&f);
	if (!err)
		err = spanelf__symbols_scan(&vec, &f, object, open_path, glob, metric, &matched);
	if (!err && !matched) {
		err = site_vec__push_not_found(&vec, f.has_symtab, object, open_path, glob, metric);
		if (!err)
			err = -ENOENT;
	}
	elf_file__close(&f);
out:
	if (err != -ENOMEM) {
		ret = site_vec__hand_over(&vec, sites, nr);
		if (ret)
			err = ret;
	}
	free(vec.v);
	return err;
}

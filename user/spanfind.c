// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "khbpf/span.h"
#include "fsutil.h"
#include "spanfind.h"

#define NOTE_SECTION ".note.khbpf"
/* u64 address, u32 flags, then at least the metric's NUL. */
#define NOTE_DESC_MIN 13

struct site_vec {
	struct span_site *v;
	size_t n, cap;
};

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

static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static struct span_site *vec_push(struct site_vec *vec, const char *object, const char *open_path,
				  bool from_note)
{
	struct span_site *s;

	if (vec->n == vec->cap) {
		size_t cap = vec->cap ? vec->cap * 2 : 16;

		s = realloc(vec->v, cap * sizeof(*s));
		if (!s)
			return NULL;
		vec->v = s;
		vec->cap = cap;
	}
	s = &vec->v[vec->n++];
	memset(s, 0, sizeof(*s));
	copy_str(s->object, sizeof(s->object), object);
	copy_str(s->open_path, sizeof(s->open_path), open_path);
	s->from_note = from_note;
	return s;
}

/* One reallocation of the caller's array per public call. */
static int vec_hand_over(struct site_vec *vec, struct span_site **sites, size_t *nr)
{
	struct span_site *v;

	if (!vec->n)
		return 0;
	if (*nr > SIZE_MAX / sizeof(*v) - vec->n)
		return -ENOMEM;
	v = realloc(*sites, (*nr + vec->n) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v + *nr, vec->v, vec->n * sizeof(*v));
	*sites = v;
	*nr += vec->n;
	return 0;
}

/*
 * Reasons quote symbol names and paths, which may hold any byte: control
 * bytes are written as \xNN, so a reason prints as one line and cannot
 * drive a terminal.
 */
__attribute__((format(printf, 3, 4))) static void site_fail(struct span_site *s, int err,
							    const char *fmt, ...)
{
	char msg[sizeof(s->reason)];
	size_t i, n = 0;
	va_list ap;

	s->err = err;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (i = 0; msg[i]; i++) {
		unsigned char c = (unsigned char)msg[i];
		bool ctrl = c < 0x20 || c == 0x7f;

		if (n + (ctrl ? 4 : 1) >= sizeof(s->reason))
			break;
		if (ctrl)
			n += (size_t)snprintf(s->reason + n, sizeof(s->reason) - n, "\\x%02x", c);
		else
			s->reason[n++] = (char)c;
	}
	s->reason[n] = '\0';
}

static bool metric_valid_n(const char *m, size_t len)
{
	size_t i;

	if (!len || len > KHBPF_METRIC_MAX || m[0] == '-' || m[len - 1] == '-')
		return false;
	for (i = 0; i < len; i++) {
		char c = m[i];

		if (c == '-' && m[i + 1] == '-')
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
	}
	return true;
}

static bool metric_valid(const char *m)
{
	return metric_valid_n(m, strnlen(m, KHBPF_METRIC_MAX + 1));
}

/* "Stage_Outer2" -> "stage-outer2"; -EINVAL when no letter or digit is left. */
static int metric_from_symbol(const char *sym, char *out)
{
	bool sep = false;
	size_t n = 0;

	for (; *sym; sym++) {
		char c = *sym;

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
			sep = true;
			continue;
		}
		if (sep && n) {
			if (n + 2 > KHBPF_METRIC_MAX)
				break;
			out[n++] = '-';
		}
		if (n + 1 > KHBPF_METRIC_MAX)
			break;
		out[n++] = c;
		sep = false;
	}
	out[n] = '\0';
	return n ? 0 : -EINVAL;
}

static bool symbol_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("_.$@*?[]!^-", c));
}

int span_request__parse(const char *arg, struct span_request *out, char *buf, size_t buflen)
{
	const char *eq, *colon = NULL, *sym, *p;
	size_t len, obj_len = 0, sym_len;

	if (!arg || !out || !buf)
		return -EINVAL;
	len = strlen(arg);
	eq = strchr(arg, '=');
	for (p = arg; p < (eq ? eq : arg + len); p++)
		if (*p == ':')
			colon = p;
	sym = colon ? colon + 1 : arg;
	sym_len = (size_t)((eq ? eq : arg + len) - sym);

	if (colon) {
		obj_len = (size_t)(colon - arg);
		if (!obj_len || obj_len >= PATH_MAX)
			return -EINVAL;
		for (p = arg; p < colon; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return -EINVAL;
	}
	if (!sym_len || sym_len >= SPANFIND_SYMBOL_MAX)
		return -EINVAL;
	for (p = sym; p < sym + sym_len; p++)
		if (!symbol_char(*p))
			return -EINVAL;
	if (eq && !metric_valid_n(eq + 1, strlen(eq + 1)))
		return -EINVAL;
	if (len >= buflen)
		return -ENAMETOOLONG;

	memcpy(buf, arg, len + 1);
	out->object = NULL;
	out->metric = NULL;
	if (colon) {
		buf[obj_len] = '\0';
		out->object = buf;
	}
	out->symbol = buf + (sym - arg);
	if (eq) {
		buf[eq - arg] = '\0';
		out->metric = buf + (eq - arg) + 1;
	}
	return 0;
}

static void elf_file__close(struct elf_file *f)
{
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
static int elf_file__open(struct elf_file *f, const char *path, const char *object, char *reason,
			  size_t size)
{
	GElf_Ehdr eh;
	struct stat st;
	int err;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(reason, size, "libelf is unusable: %s", elf_errmsg(-1));
		return -EINVAL;
	}
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		err = -errno;
		snprintf(reason, size, "cannot open %s: %s%s", object, strerror(-err),
			 ends_with(object, " (deleted)") ? " (deleted after it was mapped)" : "");
		return err;
	}
	if (fstat(f->fd, &st)) {
		err = -errno;
		snprintf(reason, size, "cannot stat %s: %s", object, strerror(-err));
		goto err_close;
	}
	if (!S_ISREG(st.st_mode)) {
		err = S_ISDIR(st.st_mode) ? -EISDIR : -ENOEXEC;
		snprintf(reason, size, "%s is not a regular file", object);
		goto err_close;
	}
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

/* Collects the defined functions of .symtab and .dynsym. */
static int elf_file__load_syms(struct elf_file *f)
{
	Elf_Scn *scn = NULL;
	size_t cap = 0;

	while ((scn = elf_nextscn(f->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i, count;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			f->has_symtab = true;
		d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
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
			name = elf_strptr(f->elf, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (f->nr_syms == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				struct fsym *v = realloc(f->syms, ncap * sizeof(*v));

				if (!v)
					return -ENOMEM;
				f->syms = v;
				cap = ncap;
			}
			f->syms[f->nr_syms] = (struct fsym){
				.addr = sym.st_value,
				.size = sym.st_size,
				.name = name,
				.rank = GELF_ST_BIND(sym.st_info) == STB_GLOBAL ? 0 :
					GELF_ST_BIND(sym.st_info) == STB_WEAK	? 1 :
										  2,
				.idx = f->nr_syms,
			};
			f->nr_syms++;
		}
	}
	if (f->nr_syms)
		qsort(f->syms, f->nr_syms, sizeof(*f->syms), fsym_cmp);
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

	s = vec_push(vec, object, open_path, true);
	if (!s)
		return -ENOMEM;
	if (nh->n_type != KHBPF_NOTE_SPAN) {
		site_fail(s, -EINVAL, "span note %zu of %s has type %u; khbpf knows only type %d",
			  nth, object, nh->n_type, KHBPF_NOTE_SPAN);
		return 0;
	}
	if (nh->n_descsz < NOTE_DESC_MIN) {
		site_fail(
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
		site_fail(s, err, "span note %zu of %s cannot be converted: %s", nth, object,
			  elf_errmsg(-1));
		return 0;
	}
	s->vaddr = addr;
	sym = elf_file__symbol_at(f, addr);
	copy_str(s->symbol, sizeof(s->symbol), sym);
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
	valid = terminated && metric_valid_n(metric, mlen);
	if (valid)
		copy_str(s->metric, sizeof(s->metric), metric);

	if (flags) {
		site_fail(
			s, -EINVAL,
			"span note %zu of %s for function '%s' at 0x%llx has flags 0x%x; version 1 requires 0",
			nth, object, sym, (unsigned long long)addr, flags);
		return 0;
	}
	if (!terminated) {
		site_fail(
			s, -EINVAL,
			"span note %zu of %s for function '%s' at 0x%llx has a metric without its NUL",
			nth, object, sym, (unsigned long long)addr);
		return 0;
	}
	if (!valid) {
		if (printable(metric, mlen))
			site_fail(
				s, -EINVAL,
				"span note %zu of %s for function '%s' at 0x%llx has metric '%s', which is not kebab-case of at most %d bytes",
				nth, object, sym, (unsigned long long)addr, metric,
				KHBPF_METRIC_MAX);
		else
			site_fail(
				s, -EINVAL,
				"span note %zu of %s for function '%s' at 0x%llx has a metric with unprintable bytes",
				nth, object, sym, (unsigned long long)addr);
		return 0;
	}
	if (spanfind__vaddr_to_offset(f->elf, addr, &s->offset)) {
		site_fail(
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
		site_fail(
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

static int notes_scan(struct site_vec *vec, const struct elf_file *f, const char *object,
		      const char *open_path)
{
	size_t first = vec->n, nth = 0, dropped = 0, shstrndx;
	Elf_Scn *scn = NULL;
	struct span_site *s;
	int err;

	if (elf_getshdrstrndx(f->elf, &shstrndx)) {
		s = vec_push(vec, object, open_path, true);
		if (!s)
			return -ENOMEM;
		site_fail(s, -EINVAL, "libelf cannot read the section names of %s: %s", object,
			  elf_errmsg(-1));
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
			s = vec_push(vec, object, open_path, true);
			if (!s)
				return -ENOMEM;
			site_fail(s, -EINVAL, "libelf cannot read %s of %s: %s", NOTE_SECTION,
				  object, elf_errmsg(-1));
			continue;
		}
		for (off = 0; off < d->d_size; off = next) {
			next = gelf_getnote(d, off, &nh, &name_off, &desc_off);
			if (!next) {
				s = vec_push(vec, object, open_path, true);
				if (!s)
					return -ENOMEM;
				site_fail(
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
		s = vec_push(vec, object, open_path, true);
		if (!s)
			return -ENOMEM;
		site_fail(s, -E2BIG, "%zu span notes of %s were dropped: at most %d per object",
			  dropped, object, SPANFIND_SITES_MAX);
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

/* Sites for the functions matching glob; *matched counts them, duplicates too. */
static int symbols_scan(struct site_vec *vec, const struct elf_file *f, const char *object,
			const char *open_path, const char *glob, const char *metric,
			size_t *matched)
{
	size_t i, first = vec->n, dropped = 0;
	uint64_t last = 0;
	struct span_site *s;

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
		s = vec_push(vec, object, open_path, false);
		if (!s)
			return -ENOMEM;
		copy_str(s->symbol, sizeof(s->symbol), y->name);
		s->vaddr = y->addr;
		if (metric) {
			copy_str(s->metric, sizeof(s->metric), metric);
		} else if (metric_from_symbol(y->name, s->metric)) {
			site_fail(
				s, -EINVAL,
				"function '%s' of %s has no letter or digit to name a metric after; give one with =METRIC",
				y->name, object);
			continue;
		}
		if (spanfind__vaddr_to_offset(f->elf, y->addr, &s->offset)) {
			site_fail(
				s, -ENOENT,
				"function '%s' of %s is at 0x%llx, outside every executable segment",
				y->name, object, (unsigned long long)y->addr);
			continue;
		}
		if (site_seen(vec, s))
			vec->n--;
	}
	if (dropped) {
		s = vec_push(vec, object, open_path, false);
		if (!s)
			return -ENOMEM;
		copy_str(s->symbol, sizeof(s->symbol), glob);
		site_fail(s, -E2BIG,
			  "%zu functions of %s matching '%s' were dropped: at most %d per object",
			  dropped, object, glob, SPANFIND_SITES_MAX);
	}
	return 0;
}

static int push_not_found(struct site_vec *vec, bool has_symtab, const char *object,
			  const char *open_path, const char *glob, const char *metric)
{
	struct span_site *s = vec_push(vec, object, open_path, false);

	if (!s)
		return -ENOMEM;
	copy_str(s->symbol, sizeof(s->symbol), glob);
	if (metric)
		copy_str(s->metric, sizeof(s->metric), metric);
	if (has_symtab)
		site_fail(s, -ENOENT, "no function of %s matches '%s'", object, glob);
	else
		site_fail(s, -ENOENT,
			  "%s is stripped (no .symtab) and no function in its .dynsym matches '%s'",
			  object, glob);
	return 0;
}

/* A site for an object that cannot be read; err is returned unless memory ran out. */
static int push_file_error(struct site_vec *vec, const char *object, const char *open_path,
			   const char *symbol, const char *metric, bool from_note, int err,
			   const char *reason)
{
	struct span_site *s = vec_push(vec, object, open_path, from_note);

	if (!s)
		return -ENOMEM;
	if (symbol)
		copy_str(s->symbol, sizeof(s->symbol), symbol);
	if (metric)
		copy_str(s->metric, sizeof(s->metric), metric);
	if (symbol)
		site_fail(s, err, "cannot look up '%s': %s", symbol, reason);
	else
		site_fail(s, err, "%s", reason);
	return err;
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
		err = push_file_error(&vec, object, open_path, NULL, NULL, true, err, reason);
		goto out;
	}
	err = elf_file__load_syms(&f);
	if (!err)
		err = notes_scan(&vec, &f, object, open_path);
	elf_file__close(&f);
out:
	if (err != -ENOMEM) {
		ret = vec_hand_over(&vec, sites, nr);
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
	    (metric && !metric_valid(metric)))
		return -EINVAL;
	err = elf_file__open(&f, open_path, object, reason, sizeof(reason));
	if (err) {
		err = push_file_error(&vec, object, open_path, glob, metric, false, err, reason);
		goto out;
	}
	err = elf_file__load_syms(&f);
	if (!err)
		err = symbols_scan(&vec, &f, object, open_path, glob, metric, &matched);
	if (!err && !matched) {
		err = push_not_found(&vec, f.has_symtab, object, open_path, glob, metric);
		if (!err)
			err = -ENOENT;
	}
	elf_file__close(&f);
out:
	if (err != -ENOMEM) {
		ret = vec_hand_over(&vec, sites, nr);
		if (ret)
			err = ret;
	}
	free(vec.v);
	return err;
}

void spanfind__free_objects(char **objects, size_t nr)
{
	size_t i;

	if (!objects)
		return;
	for (i = 0; i < nr; i++)
		free(objects[i]);
	free(objects);
}

/* The pathname of a maps line, or NULL; -EINVAL in *err when malformed. */
static char *maps_line_path(char *line, bool *exec, int *err)
{
	unsigned long long start, end, off, ino;
	unsigned int major, minor;
	char perms[5];
	size_t len;
	int pos = 0;

	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, perms, &off, &major,
		   &minor, &ino, &pos) != 7 ||
	    !pos || strlen(perms) != 4) {
		*err = -EINVAL;
		return NULL;
	}
	len = strlen(line);
	if (len && line[len - 1] == '\n')
		line[--len] = '\0';
	*exec = perms[2] == 'x';
	/* Anonymous, [vdso], [heap] and the like are not files. */
	if (!ino || line[pos] != '/')
		return NULL;
	return line + pos;
}

int spanfind__mapped_objects(const char *root, pid_t pid, char ***objects, size_t *nr)
{
	char path[PATH_MAX], *line = NULL, **v = NULL;
	size_t n = 0, cap = 0, linecap = 0, i;
	int err = 0;
	FILE *fp;

	if (!objects || !nr || pid <= 0)
		return -EINVAL;
	*objects = NULL;
	*nr = 0;
	err = fsutil__path(path, sizeof(path), root, "/proc/%d/maps", (int)pid);
	if (err < 0)
		return err;
	err = 0;
	fp = fopen(path, "re");
	if (!fp)
		return errno == ENOENT ? -ESRCH : -errno;

	for (;;) {
		bool exec = false;
		char *obj, **nv;

		errno = 0;
		if (getline(&line, &linecap, fp) < 0) {
			if (errno)
				err = -errno;
			break;
		}
		obj = maps_line_path(line, &exec, &err);
		if (err)
			break;
		if (!obj || !exec)
			continue;
		for (i = 0; i < n && strcmp(v[i], obj); i++)
			;
		if (i < n)
			continue;
		if (n == SPANFIND_OBJECTS_MAX) {
			err = -E2BIG;
			break;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				err = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[n] = strdup(obj);
		if (!v[n]) {
			err = -ENOMEM;
			break;
		}
		n++;
	}
	/* A process that exited while its maps were read has an empty file. */
	if (!err && !n && access(path, F_OK))
		err = -ESRCH;
	free(line);
	fclose(fp);
	if (err) {
		spanfind__free_objects(v, n);
		return err;
	}
	*objects = v;
	*nr = n;
	return 0;
}

/*
 * /proc/PID/map_files/START-END of object's first mapping: the mapped file
 * itself, whatever its path means to us. The path in maps is relative to
 * the root of the object's mount namespace, so it does not resolve under
 * /proc/PID/root when the process is also chrooted (a chroot that unshared
 * its mounts), nor when the file was deleted or replaced; the magic link
 * does (proc_map_files_get_link; needs CAP_SYS_ADMIN or
 * CAP_CHECKPOINT_RESTORE, which a loader of uprobes has), and the kernel
 * follows it when a uprobe is made by path.
 */
static int map_files_path(char *out, const char *root, pid_t pid, const char *object)
{
	char path[PATH_MAX], link[PATH_MAX], *line = NULL, *obj;
	size_t cap = 0;
	int err = -ENOENT, lerr = 0;
	bool exec;
	FILE *fp;

	if (fsutil__path(path, sizeof(path), root, "/proc/%d/maps", (int)pid) < 0)
		return -ENAMETOOLONG;
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	while (err == -ENOENT && getline(&line, &cap, fp) >= 0) {
		obj = maps_line_path(line, &exec, &lerr);
		if (lerr || !obj || strcmp(obj, object))
			continue;
		line[strcspn(line, " ")] = '\0'; /* "start-end", as map_files names it */
		if (fsutil__path(link, sizeof(link), root, "/proc/%d/map_files/%s", (int)pid,
				 line) < 0)
			err = -ENAMETOOLONG;
		else if (access(link, F_OK))
			err = -errno;
		else
			err = 0;
	}
	if (!err)
		memcpy(out, link, strlen(link) + 1);
	free(line);
	fclose(fp);
	return err;
}

/*
 * pid 0: a command not started yet (run mode); its objects are host paths.
 * Otherwise the object through the process's root, or else its mapping.
 */
static int object_open_path(char *out, const char *root, pid_t pid, const char *object)
{
	struct stat st;
	int n = pid ? fsutil__path(out, PATH_MAX, root, "/proc/%d/root%s", (int)pid, object) :
		      fsutil__path(out, PATH_MAX, root, "%s", object);

	if (n < 0)
		return -ENAMETOOLONG;
	if (pid && stat(out, &st) && errno == ENOENT)
		map_files_path(out, root, pid, object); /* out is kept when there is none */
	return 0;
}

/* Index of the mapped object that is the process's executable, or -1. */
static ssize_t main_object(const char *root, pid_t pid, char **objects, size_t nr)
{
	char path[PATH_MAX];
	struct stat exe, st;
	size_t i;

	if (!pid)
		return nr ? 0 : -1; /* the command comes first in its list */
	if (fsutil__path(path, sizeof(path), root, "/proc/%d/exe", (int)pid) < 0 ||
	    stat(path, &exe))
		return -1;
	for (i = 0; i < nr; i++) {
		if (object_open_path(path, root, pid, objects[i]) || stat(path, &st))
			continue;
		if (st.st_dev == exe.st_dev && st.st_ino == exe.st_ino)
			return (ssize_t)i;
	}
	return -1;
}

static int annotations_of(struct site_vec *vec, const char *root, pid_t pid, const char *object)
{
	char open_path[PATH_MAX], reason[256];
	struct elf_file f;
	int err;

	if (object_open_path(open_path, root, pid, object)) {
		snprintf(reason, sizeof(reason), "the path of %s in process %d is too long", object,
			 (int)pid);
		err = push_file_error(vec, object, "", NULL, NULL, true, -ENAMETOOLONG, reason);
		return err == -ENOMEM ? err : 0;
	}
	err = elf_file__open(&f, open_path, object, reason, sizeof(reason));
	/* Only an ELF file can carry notes: nothing is missed in one that is not. */
	if (err == -ENOEXEC)
		return 0;
	if (err) {
		err = push_file_error(vec, object, open_path, NULL, NULL, true, err, reason);
		return err == -ENOMEM ? err : 0;
	}
	err = elf_file__load_syms(&f);
	if (!err)
		err = notes_scan(vec, &f, object, open_path);
	elf_file__close(&f);
	return err;
}

static bool object_matches(const char *mapped, const char *want, bool prefix)
{
	const char *base = strrchr(mapped, '/');
	size_t len = strlen(want), mlen = strlen(mapped);

	base = base ? base + 1 : mapped;
	if (want[0] == '/')
		return !strcmp(mapped, want);
	if (strchr(want, '/'))
		return mlen > len && !strcmp(mapped + mlen - len, want) &&
		       mapped[mlen - len - 1] == '/';
	if (prefix)
		return !strncmp(base, want, len) && base[len] == '.';
	return !strcmp(base, want);
}

/* What one request found in one object, for the error when nothing matched anywhere. */
struct request_result {
	size_t matched;
	bool opened, has_symtab;
	char open_path[PATH_MAX];
};

/* Sites of one request in one object; file errors become error sites. */
static int request_in(struct site_vec *vec, const char *root, pid_t pid, const char *object,
		      const struct span_request *req, struct request_result *res)
{
	char reason[256];
	struct elf_file f;
	int err;

	res->matched = 0;
	res->opened = false;
	if (object_open_path(res->open_path, root, pid, object)) {
		snprintf(reason, sizeof(reason), "the path of %s in process %d is too long", object,
			 (int)pid);
		err = push_file_error(vec, object, "", req->symbol, req->metric, false,
				      -ENAMETOOLONG, reason);
		return err == -ENOMEM ? err : 0;
	}
	err = elf_file__open(&f, res->open_path, object, reason, sizeof(reason));
	if (err) {
		err = push_file_error(vec, object, res->open_path, req->symbol, req->metric, false,
				      err, reason);
		return err == -ENOMEM ? err : 0;
	}
	res->opened = true;
	err = elf_file__load_syms(&f);
	if (!err)
		err = symbols_scan(vec, &f, object, res->open_path, req->symbol, req->metric,
				   &res->matched);
	res->has_symtab = f.has_symtab;
	elf_file__close(&f);
	return err;
}

/* Marks the mapped objects a request names (see spanfind__discover); returns how many. */
static size_t request_objects(char **objects, size_t nr, ssize_t main_idx, const char *want,
			      bool *match)
{
	bool prefix = false;
	size_t i, found;

	for (;;) {
		for (i = 0, found = 0; i < nr; i++) {
			match[i] = want ? object_matches(objects[i], want, prefix) :
					  (ssize_t)i == main_idx;
			found += match[i];
		}
		if (found || prefix || !want || strchr(want, '/'))
			return found;
		prefix = true;
	}
}

static int resolve_request(struct site_vec *vec, const char *root, pid_t pid, char **objects,
			   size_t nr, ssize_t main_idx, const struct span_request *req)
{
	struct request_result res, last = { 0 };
	const char *want = req->object, *last_obj = NULL;
	size_t i, found, total = 0;
	struct span_site *s;
	bool *match;
	int err = 0;

	match = calloc(nr ? nr : 1, sizeof(*match));
	if (!match)
		return -ENOMEM;
	found = request_objects(objects, nr, main_idx, want, match);
	if (!found && !want) {
		s = vec_push(vec, "", "", false);
		if (!s) {
			err = -ENOMEM;
			goto out;
		}
		copy_str(s->symbol, sizeof(s->symbol), req->symbol);
		site_fail(
			s, -ENOENT,
			"the main executable of process %d is not among its mapped objects, so '%s' cannot be looked up",
			(int)pid, req->symbol);
		goto out;
	}
	/* An absolute path need not be mapped yet: a uprobe waits for its inode. */
	if (!found && want[0] == '/') {
		err = request_in(vec, root, pid, want, req, &last);
		total = last.matched;
		last_obj = want;
	} else if (!found) {
		s = vec_push(vec, want, "", false);
		if (!s) {
			err = -ENOMEM;
			goto out;
		}
		copy_str(s->symbol, sizeof(s->symbol), req->symbol);
		if (req->metric)
			copy_str(s->metric, sizeof(s->metric), req->metric);
		if (pid)
			site_fail(s, -ENOENT,
				  "%s is not mapped by process %d, so '%s' cannot be probed there",
				  want, (int)pid, req->symbol);
		else
			site_fail(
				s, -ENOENT,
				"%s is not among the command's libraries as ld.so resolves them (a library it dlopen()s later is not known before it runs; give its path or use `attach`), so '%s' cannot be probed there",
				want, req->symbol);
		goto out;
	}
	for (i = 0; i < nr && !err; i++) {
		if (!match[i])
			continue;
		err = request_in(vec, root, pid, objects[i], req, &res);
		total += res.matched;
		if (res.opened) {
			last = res;
			last_obj = objects[i];
		}
	}
	/* One error for the request, whichever objects it looked in. */
	if (!err && !total && last.opened)
		err = push_not_found(vec, last.has_symtab, last_obj, last.open_path, req->symbol,
				     req->metric);
out:
	free(match);
	return err;
}

static int requests_valid(const struct span_request *reqs, size_t nr_reqs)
{
	size_t i;

	for (i = 0; i < nr_reqs; i++)
		if (!reqs[i].symbol || !*reqs[i].symbol ||
		    (reqs[i].metric && !metric_valid(reqs[i].metric)) ||
		    (reqs[i].object && !*reqs[i].object))
			return -EINVAL;
	return 0;
}

/* Notes of every object, then each request among them; pid 0: host paths. */
static int discover_in(const char *root, pid_t pid, char **objects, size_t nr_objects,
		       const struct span_request *reqs, size_t nr_reqs, bool no_annotations,
		       struct span_site **sites, size_t *nr)
{
	struct site_vec vec = { 0 };
	ssize_t main_idx;
	size_t i;
	int err = 0;

	for (i = 0; !no_annotations && i < nr_objects; i++) {
		err = annotations_of(&vec, root, pid, objects[i]);
		if (err)
			goto out;
	}
	main_idx = main_object(root, pid, objects, nr_objects);
	for (i = 0; i < nr_reqs; i++) {
		err = resolve_request(&vec, root, pid, objects, nr_objects, main_idx, &reqs[i]);
		if (err)
			goto out;
	}
	err = vec_hand_over(&vec, sites, nr);
out:
	free(vec.v);
	return err;
}

int spanfind__discover(const char *root, pid_t pid, const struct span_request *reqs, size_t nr_reqs,
		       bool no_annotations, struct span_site **sites, size_t *nr)
{
	char **objects = NULL;
	size_t nr_objects = 0;
	int err;

	if (!sites || !nr || (nr_reqs && !reqs) || pid <= 0)
		return -EINVAL;
	err = requests_valid(reqs, nr_reqs);
	err = err ?: spanfind__mapped_objects(root, pid, &objects, &nr_objects);
	if (err)
		return err;
	err = discover_in(root, pid, objects, nr_objects, reqs, nr_reqs, no_annotations, sites, nr);
	spanfind__free_objects(objects, nr_objects);
	return err;
}

int spanfind__discover_list(const char *root, char **objects, size_t nr_objects,
			    const struct span_request *reqs, size_t nr_reqs, bool no_annotations,
			    struct span_site **sites, size_t *nr)
{
	int err;

	if (!sites || !nr || (nr_reqs && !reqs) || !nr_objects)
		return -EINVAL;
	err = requests_valid(reqs, nr_reqs);
	return err   ?:
		       discover_in(root, 0, objects, nr_objects, reqs, nr_reqs, no_annotations,
				   sites, nr);
}

/* PT_INTERP of the ELF file at path: 1 with it in out, 0 without one, -errno. */
static int elf_interp(const char *path, char *out, size_t size)
{
	char reason[256];
	struct elf_file f;
	size_t i, n;
	int err, found = 0;

	err = elf_file__open(&f, path, path, reason, sizeof(reason));
	if (err)
		return err;
	if (elf_getphdrnum(f.elf, &n)) {
		elf_file__close(&f);
		return -EINVAL;
	}
	for (i = 0; i < n && !found; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(f.elf, (int)i, &ph) || ph.p_type != PT_INTERP)
			continue;
		d = elf_getdata_rawchunk(f.elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		if (!d || !d->d_size || ((const char *)d->d_buf)[d->d_size - 1] ||
		    d->d_size > size) {
			err = -EINVAL;
			break;
		}
		memcpy(out, d->d_buf, d->d_size);
		found = 1;
	}
	elf_file__close(&f);
	return err ?: found;
}

/* One line of `ld.so --list`: "\tname => /path (0x...)" or "\t/path (0x...)". */
static int needed_line(char *line, char ***objects, size_t *nr)
{
	char *p = strstr(line, " => "), *end, **grown;
	size_t i;

	p = p ? p + 4 : line + strspn(line, " \t");
	if (*p != '/')
		return 0; /* the vDSO, or "not found" */
	end = strstr(p, " (0x");
	if (!end)
		end = p + strcspn(p, "\n");
	*end = '\0';
	for (i = 0; i < *nr; i++)
		if (!strcmp((*objects)[i], p))
			return 0;
	if (*nr == SPANFIND_OBJECTS_MAX)
		return -E2BIG;
	grown = realloc(*objects, (*nr + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	*objects = grown;
	grown[*nr] = strdup(p);
	if (!grown[*nr])
		return -ENOMEM;
	(*nr)++;
	return 0;
}

int spanfind__needed_objects(const char *exe, char ***objects, size_t *nr, char *reason,
			     size_t size)
{
	char interp[PATH_MAX], line[PATH_MAX + 64];
	int fds[2], status, err;
	struct stat st;
	FILE *out;
	pid_t child;

	*objects = NULL;
	*nr = 0;
	snprintf(line, sizeof(line), "%s", exe);
	if (line[0] != '/')
		return -EINVAL;
	err = needed_line(line, objects, nr);
	if (err)
		goto fail;
	err = elf_interp(exe, interp, sizeof(interp));
	/* Static, or not ELF (a script): nothing more is loaded by ld.so. */
	if (err == 0 || err == -ENOEXEC)
		return 0;
	if (err < 0) {
		snprintf(reason, size, "cannot read the ELF interpreter of %s", exe);
		goto fail;
	}
	err = 0;
	/*
	 * The loader itself resolves the libraries (its own search order,
	 * ld.so.cache, LD_LIBRARY_PATH); `--list` maps them and exits without
	 * running any of their code. Only a root-owned loader nobody else can
	 * write is run, as a malicious PT_INTERP would run as khbpf.
	 */
	if (stat(interp, &st) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(
			reason, size,
			"the ELF interpreter %s of %s is not a root-owned file that only root can write; its libraries are not searched",
			interp, exe);
		err = -EPERM;
		goto fail;
	}
	if (pipe2(fds, O_CLOEXEC)) {
		err = -errno;
		goto fail;
	}
	child = fork();
	if (child < 0) {
		err = -errno;
		close(fds[0]);
		close(fds[1]);
		goto fail;
	}
	if (!child) {
		int null = open("/dev/null", O_WRONLY);

		dup2(fds[1], STDOUT_FILENO);
		if (null >= 0)
			dup2(null, STDERR_FILENO);
		execl(interp, interp, "--list", exe, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	out = fdopen(fds[0], "r");
	if (!out) {
		err = -errno;
		close(fds[0]);
	}
	while (out && !err && fgets(line, sizeof(line), out))
		err = needed_line(line, objects, nr);
	if (out)
		fclose(out);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
		if (!err) {
			snprintf(reason, size,
				 "%s --list %s failed; its libraries are not searched", interp,
				 exe);
			err = -ECHILD;
		}
	}
	if (!err)
		return 0;
fail:
	spanfind__free_objects(*objects, *nr);
	*objects = NULL;
	*nr = 0;
	return err;
}

void spanfind__free(struct span_site *sites, size_t nr)
{
	(void)nr;
	free(sites);
}

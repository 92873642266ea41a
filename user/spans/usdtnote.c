// SPDX-License-Identifier: MIT
/* USDT probes from .note.stapsdt; see usdtnote.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gelf.h>
#include <libelf.h>

#include "spans/spanelf.h"
#include "spans/usdtnote.h"

#define STAPSDT_OWNER "stapsdt"
#define STAPSDT_TYPE 3
#define STAPSDT_SECTION ".note.stapsdt"
#define STAPSDT_BASE ".stapsdt.base"

static uint64_t load64(const unsigned char *p, bool big_endian)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v |= (uint64_t)p[big_endian ? 7 - i : i] << (8 * i);
	return v;
}

/* The next NUL-terminated string of desc from *at, into out; false when there is none or it is too long. */
static bool take_str(const unsigned char *desc, size_t len, size_t *at, char *out, size_t cap)
{
	const unsigned char *end = memchr(desc + *at, '\0', len - *at);
	size_t n;

	if (*at >= len || !end)
		return false;
	n = (size_t)(end - (desc + *at));
	if (n >= cap)
		return false;
	memcpy(out, desc + *at, n);
	out[n] = '\0';
	*at += n + 1;
	return true;
}

/* Provider and probe names are C identifiers in sys/sdt.h; '.' and '-' are allowed too. */
static bool name_ok(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' || *s == '-'))
			return false;
	return true;
}

/* Argument specs are printable ASCII ("8@%rbx -4@$1"): nothing else is shown or parsed. */
static bool args_ok(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

int usdtnote__parse_desc(const unsigned char *desc, size_t len, bool big_endian,
			 struct usdt_site *s, uint64_t *base)
{
	size_t at = 24;
	const char *p;

	/* pc, .stapsdt.base's link-time address, semaphore; then provider, name, args. */
	if (len < at)
		return -EINVAL;
	s->addr = load64(desc, big_endian);
	*base = load64(desc + 8, big_endian);
	s->semaphore = load64(desc + 16, big_endian);
	if (!take_str(desc, len, &at, s->provider, sizeof(s->provider)) || !s->provider[0] ||
	    !take_str(desc, len, &at, s->name, sizeof(s->name)) || !s->name[0] ||
	    !take_str(desc, len, &at, s->args, sizeof(s->args)) || !name_ok(s->provider) ||
	    !name_ok(s->name) || !args_ok(s->args))
		return -EINVAL;
	s->nr_args = 0;
	for (p = s->args; *p;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		s->nr_args++;
		while (*p && *p != ' ')
			p++;
	}
	return 0;
}

/* Link-time address to file offset through any loaded segment (a semaphore is data). */
static int data_offset(Elf *elf, uint64_t vaddr, uint64_t *offset)
{
	size_t i, n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
		    vaddr - ph.p_vaddr < ph.p_filesz) {
			*offset = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

static struct usdt_site *push(struct usdt_list *l, size_t *cap)
{
	struct usdt_site *v;

	if (l->nr == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;

		v = realloc(l->v, ncap * sizeof(*v));
		if (!v)
			return NULL;
		l->v = v;
		*cap = ncap;
	}
	v = &l->v[l->nr++];
	memset(v, 0, sizeof(*v));
	return v;
}

static void fail(struct usdt_site *s, const char *fmt, const char *object, size_t nth)
{
	s->err = -EINVAL;
	snprintf(s->reason, sizeof(s->reason), fmt, nth, object);
}

/* One note, the nth of object: a site, or a site failed with the reason. */
static void note_site(const struct elf_file *f, const char *object, size_t nth, bool have_base,
		      uint64_t base_addr, const unsigned char *desc, size_t len,
		      struct usdt_site *s)
{
	uint64_t base = 0;

	if (usdtnote__parse_desc(desc, len, f->data == ELFDATA2MSB, s, &base)) {
		memset(s, 0, sizeof(*s));
		fail(s,
		     "USDT note %zu of %.256s is malformed (short, or a name or arguments too long)",
		     object, nth);
		return;
	}
	/* Prelink moved the object: .stapsdt.base says by how much (sys/sdt.h). */
	if (have_base && base) {
		s->addr += base_addr - base;
		if (s->semaphore)
			s->semaphore += base_addr - base;
	}
	if (spanfind__vaddr_to_offset(f->elf, s->addr, &s->offset)) {
		s->err = -EINVAL;
		snprintf(
			s->reason, sizeof(s->reason),
			"USDT probe %s:%s of %.256s is at 0x%llx, outside every executable segment",
			s->provider, s->name, object, (unsigned long long)s->addr);
		return;
	}
	if (s->semaphore && data_offset(f->elf, s->semaphore, &s->semaphore_offset)) {
		s->err = -EINVAL;
		snprintf(
			s->reason, sizeof(s->reason),
			"USDT probe %s:%s of %.256s has its semaphore at 0x%llx, outside every loaded segment",
			s->provider, s->name, object, (unsigned long long)s->semaphore);
	}
}

static bool is_stapsdt(const Elf_Data *d, const GElf_Nhdr *nh, size_t name_off)
{
	return nh->n_type == STAPSDT_TYPE && nh->n_namesz == sizeof(STAPSDT_OWNER) &&
	       !memcmp((const char *)d->d_buf + name_off, STAPSDT_OWNER, sizeof(STAPSDT_OWNER));
}

static int scan(const struct elf_file *f, const char *object, struct usdt_list *out)
{
	size_t shstrndx, cap = out->nr, nth = 0, off, next, name_off, desc_off;
	uint64_t base_addr = 0;
	bool have_base = false;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	const char *name;

	if (elf_getshdrstrndx(f->elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(f->elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(f->elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, STAPSDT_BASE)) {
			have_base = true;
			base_addr = sh.sh_addr;
		}
	}
	while ((scn = elf_nextscn(f->elf, scn))) {
		struct usdt_site *s;
		GElf_Nhdr nh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(f->elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, STAPSDT_SECTION))
			continue;
		d = elf_getdata(scn, NULL);
		for (off = 0; d && off < d->d_size; off = next) {
			next = gelf_getnote(d, off, &nh, &name_off, &desc_off);
			if (!next) {
				s = push(out, &cap);
				if (!s)
					return -ENOMEM;
				fail(s, "USDT note %zu of %.256s is cut short", object, nth + 1);
				break;
			}
			if (!is_stapsdt(d, &nh, name_off))
				continue;
			nth++;
			if (out->nr >= USDT_SITES_MAX) {
				out->dropped++;
				continue;
			}
			s = push(out, &cap);
			if (!s)
				return -ENOMEM;
			note_site(f, object, nth, have_base, base_addr,
				  (const unsigned char *)d->d_buf + desc_off, nh.n_descsz, s);
		}
	}
	return 0;
}

int usdtnote__read(const char *open_path, const char *object, struct usdt_list *out, char *reason,
		   size_t size)
{
	struct elf_file f;
	int err;

	err = elf_file__open(&f, open_path, object, reason, size);
	if (err)
		return err;
	err = scan(&f, object, out);
	elf_file__close(&f);
	if (err == -ENOMEM)
		snprintf(reason, size, "out of memory reading the USDT notes of %s", object);
	return err;
}

void usdtnote__free(struct usdt_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

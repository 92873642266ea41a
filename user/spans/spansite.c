// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khbpf/span.h"
#include "spans/spansite.h"

void spansite__copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

struct span_site *site_vec__push(struct site_vec *vec, const char *object, const char *open_path,
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
	spansite__copy_str(s->object, sizeof(s->object), object);
	spansite__copy_str(s->open_path, sizeof(s->open_path), open_path);
	s->from_note = from_note;
	return s;
}

/* One reallocation of the caller's array per public call. */
int site_vec__hand_over(struct site_vec *vec, struct span_site **sites, size_t *nr)
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
void span_site__fail(struct span_site *s, int err, const char *fmt, ...)
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

bool spansite__metric_valid_n(const char *m, size_t len)
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

bool spansite__metric_valid(const char *m)
{
	return spansite__metric_valid_n(m, strnlen(m, KHBPF_METRIC_MAX + 1));
}

/* "Stage_Outer2" -> "stage-outer2"; -EINVAL when no letter or digit is left. */
int spansite__metric_from_symbol(const char *sym, char *out)
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
	if (eq && !spansite__metric_valid_n(eq + 1, strlen(eq + 1)))
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

int site_vec__push_not_found(struct site_vec *vec, bool has_symtab, const char *object,
			     const char *open_path, const char *glob, const char *metric)
{
	struct span_site *s = site_vec__push(vec, object, open_path, false);

	if (!s)
		return -ENOMEM;
	spansite__copy_str(s->symbol, sizeof(s->symbol), glob);
	if (metric)
		spansite__copy_str(s->metric, sizeof(s->metric), metric);
	if (has_symtab)
		span_site__fail(s, -ENOENT, "no function of %s matches '%s'", object, glob);
	else
		span_site__fail(
			s, -ENOENT,
			"%s is stripped (no .symtab) and no function in its .dynsym matches '%s'",
			object, glob);
	return 0;
}

/* A site for an object that cannot be read; err is returned unless memory ran out. */
int site_vec__push_file_error(struct site_vec *vec, const char *object, const char *open_path,
			      const char *symbol, const char *metric, bool from_note, int err,
			      const char *reason)
{
	struct span_site *s = site_vec__push(vec, object, open_path, from_note);

	if (!s)
		return -ENOMEM;
	if (symbol)
		spansite__copy_str(s->symbol, sizeof(s->symbol), symbol);
	if (metric)
		spansite__copy_str(s->metric, sizeof(s->metric), metric);
	if (symbol)
		span_site__fail(s, err, "cannot look up '%s': %s", symbol, reason);
	else
		span_site__fail(s, err, "%s", reason);
	return err;
}

void spanfind__free(struct span_site *sites, size_t nr)
{
	(void)nr;
	free(sites);
}

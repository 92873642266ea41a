// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khbpf/sched.h"
#include "khbpf/span.h"
#include "khbpf/spans.h"
#include "lib/evidence.h"
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
	out->provider = out->start = out->done = NULL;
	out->count = false;
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

const char *span_site_kind__name(enum span_site_kind k)
{
	switch (k) {
	case SPAN_SITE_USDT_START:
		return "usdt-start";
	case SPAN_SITE_USDT_DONE:
		return "usdt-done";
	case SPAN_SITE_USDT_COUNT:
		return "usdt-count";
	default:
		return "function";
	}
}

/*
 * A USDT provider or probe name of len bytes: letters, digits, '_' (as
 * compilers emit them), and the characters of extra (globs: "*?[]!^").
 */
static bool usdt_name_valid(const char *p, size_t len, const char *extra)
{
	size_t i;

	if (!len || len >= USDT_REQUEST_NAME_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
		      (p[i] >= '0' && p[i] <= '9') || p[i] == '_' || (p[i] && strchr(extra, p[i]))))
			return false;
	return true;
}

/* Bytes of s's kebab-case form (runs of letters and digits joined by '-'). */
static size_t kebab_len(const char *s)
{
	size_t n = 0, runs = 0;
	bool in = false;

	for (; *s; s++) {
		bool alnum = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
			     (*s >= '0' && *s <= '9');

		n += alnum;
		runs += alnum && !in;
		in = alnum;
	}
	return runs ? n + runs - 1 : 0;
}

/*
 * The default metric of a pair: PROVIDER and the names' common prefix,
 * cut back to a '_' when it ends inside a word ("foo_begin", "foo_bar":
 * "foo"); PROVIDER-START when they share nothing.
 */
static int usdt_default_metric(const char *provider, const char *start, const char *done, char *out)
{
	char raw[3 * USDT_REQUEST_NAME_MAX];
	size_t n = 0;

	while (start[n] && start[n] == done[n])
		n++;
	if (start[n] && done[n])
		while (n && start[n - 1] != '_')
			n--;
	while (n && start[n - 1] == '_')
		n--;
	snprintf(raw, sizeof(raw), "%s_%.*s", provider, (int)(n ? n : strlen(start)), start);
	if (kebab_len(raw) > KHBPF_METRIC_MAX)
		return -EINVAL;
	return spansite__metric_from_symbol(raw, out);
}

int span_request__parse_usdt(const char *arg, struct span_request *out, char *buf, size_t buflen)
{
	const char *eq, *end, *comma, *name_colon = NULL, *prov_colon = NULL, *p;
	size_t len, body;
	char metric[SPANFIND_METRIC_MAX];
	char *copy;

	if (!arg || !out || !buf)
		return -EINVAL;
	len = strlen(arg);
	eq = strchr(arg, '=');
	end = eq ? eq : arg + len;
	comma = memchr(arg, ',', (size_t)(end - arg));
	if (!comma || memchr(comma + 1, ',', (size_t)(end - comma - 1)))
		return -EINVAL;
	for (p = arg; p < comma; p++)
		if (*p == ':')
			name_colon = p;
	if (!name_colon)
		return -EINVAL;
	/* [OBJECT:]PROVIDER: the provider starts after the last ':' before START's. */
	for (p = name_colon - 1, prov_colon = NULL; p >= arg; p--) {
		if (*p == ':') {
			prov_colon = p;
			break;
		}
	}
	if (!usdt_name_valid(prov_colon ? prov_colon + 1 : arg,
			     (size_t)(name_colon - (prov_colon ? prov_colon + 1 : arg)), "") ||
	    !usdt_name_valid(name_colon + 1, (size_t)(comma - name_colon - 1), "") ||
	    !usdt_name_valid(comma + 1, (size_t)(end - comma - 1), ""))
		return -EINVAL;
	if ((size_t)(comma - name_colon - 1) == (size_t)(end - comma - 1) &&
	    !memcmp(name_colon + 1, comma + 1, (size_t)(end - comma - 1)))
		return -EINVAL;
	if (prov_colon) {
		if (prov_colon == arg || (size_t)(prov_colon - arg) >= PATH_MAX)
			return -EINVAL;
		for (p = arg; p < prov_colon; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return -EINVAL;
	}
	if (eq && !spansite__metric_valid_n(eq + 1, strlen(eq + 1)))
		return -EINVAL;
	if (2 * (len + 1) + SPANFIND_METRIC_MAX > buflen)
		return -ENAMETOOLONG;
	/* The first copy: OBJECT, the shown "PROVIDER:START,DONE" and metric, split. */
	body = (size_t)(end - arg);
	memcpy(buf, arg, len + 1);
	buf[body] = '\0';
	/* The second: PROVIDER, START and DONE each ended. */
	copy = buf + len + 1;
	memcpy(copy, arg, body + 1);
	copy[body] = '\0';
	copy[name_colon - arg] = '\0';
	copy[comma - arg] = '\0';
	if (!eq) {
		copy[body] = '\0';
		if (usdt_default_metric(copy + (prov_colon ? prov_colon - arg + 1 : 0),
					copy + (name_colon - arg) + 1, copy + (comma - arg) + 1,
					metric))
			return -EINVAL;
	}
	out->object = NULL;
	out->count = false;
	if (prov_colon) {
		buf[prov_colon - arg] = '\0';
		out->object = buf;
	}
	out->symbol = buf + (prov_colon ? prov_colon - arg + 1 : 0);
	out->provider = copy + (prov_colon ? prov_colon - arg + 1 : 0);
	out->start = copy + (name_colon - arg) + 1;
	out->done = copy + (comma - arg) + 1;
	if (eq) {
		out->metric = buf + body + 1;
	} else {
		memcpy(buf + 2 * (len + 1), metric, sizeof(metric));
		out->metric = buf + 2 * (len + 1);
	}
	return 0;
}

int span_request__parse_usdt_count(const char *arg, struct span_request *out, char *buf,
				   size_t buflen)
{
	const char *name_colon = NULL, *prov_colon = NULL, *p;
	size_t len;
	char *copy;

	if (!arg || !out || !buf)
		return -EINVAL;
	len = strlen(arg);
	name_colon = strrchr(arg, ':');
	if (!name_colon)
		return -EINVAL;
	for (p = name_colon - 1; p >= arg; p--) {
		if (*p == ':') {
			prov_colon = p;
			break;
		}
	}
	if (!usdt_name_valid(prov_colon ? prov_colon + 1 : arg,
			     (size_t)(name_colon - (prov_colon ? prov_colon + 1 : arg)),
			     "*?[]!^") ||
	    !usdt_name_valid(name_colon + 1, strlen(name_colon + 1), "*?[]!^"))
		return -EINVAL;
	if (prov_colon) {
		if (prov_colon == arg || (size_t)(prov_colon - arg) >= PATH_MAX)
			return -EINVAL;
		for (p = arg; p < prov_colon; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return -EINVAL;
	}
	if (2 * (len + 1) > buflen)
		return -ENAMETOOLONG;
	memcpy(buf, arg, len + 1);
	copy = buf + len + 1;
	memcpy(copy, arg, len + 1);
	copy[name_colon - arg] = '\0';
	out->object = NULL;
	if (prov_colon) {
		buf[prov_colon - arg] = '\0';
		out->object = buf;
	}
	out->symbol = buf + (prov_colon ? prov_colon - arg + 1 : 0);
	out->provider = copy + (prov_colon ? prov_colon - arg + 1 : 0);
	out->start = copy + (name_colon - arg) + 1;
	out->done = NULL;
	out->metric = NULL;
	out->count = true;
	return 0;
}

int spansite__usdt_count_metric(const char *provider, const char *name, char *out)
{
	char raw[2 * USDT_REQUEST_NAME_MAX + 2];

	snprintf(raw, sizeof(raw), "%s_%s", provider, name);
	if (kebab_len(raw) > KHBPF_METRIC_MAX)
		return -EINVAL;
	return spansite__metric_from_symbol(raw, out);
}

void span_request__describe(const struct span_request *req, char *buf, size_t size)
{
	snprintf(buf, size, "--%s %s%s%s",
		 !req->provider ? "span" :
		 req->count	? "usdt" :
				  "usdt-span",
		 req->object ? req->object : "", req->object ? ":" : "", req->symbol);
}

static bool is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

bool span_request__has_metric(const struct span_request *req, const char *metric)
{
	char made[SPANFIND_METRIC_MAX];

	if (req->metric)
		return !strcmp(req->metric, metric);
	if (req->count)
		return !is_glob(req->provider) && !is_glob(req->start) &&
		       !spansite__usdt_count_metric(req->provider, req->start, made) &&
		       !strcmp(made, metric);
	return !req->provider && !is_glob(req->symbol) &&
	       !spansite__metric_from_symbol(req->symbol, made) && !strcmp(made, metric);
}

int key_request__parse(const char *arg, struct key_request *out)
{
	const char *eq, *colon, *kind;
	char *end;
	unsigned long n;

	if (!arg || !out)
		return -EINVAL;
	eq = strchr(arg, '=');
	if (!eq || !spansite__metric_valid_n(arg, (size_t)(eq - arg)) || strncmp(eq + 1, "arg", 3))
		return -EINVAL;
	colon = strchr(eq, ':');
	if (!colon || eq[4] < '0' || eq[4] > '9')
		return -EINVAL;
	n = strtoul(eq + 4, &end, 10);
	if (end != colon || n > 11 || (eq[4] == '0' && end - (eq + 4) > 1))
		return -EINVAL;
	kind = colon + 1;
	if (strcmp(kind, "str") && strcmp(kind, "int"))
		return -EINVAL;
	memcpy(out->metric, arg, (size_t)(eq - arg));
	out->metric[eq - arg] = '\0';
	out->arg = (uint32_t)n;
	out->kind = strcmp(kind, "str") ? KHBPF_KEY_INT : KHBPF_KEY_STR;
	return 0;
}

int cause_request__parse(const char *arg, struct cause_request *out)
{
	const char *eq, *name;
	uint32_t c;

	if (!arg || !out)
		return -EINVAL;
	eq = strchr(arg, '=');
	if (!eq || !spansite__metric_valid_n(arg, (size_t)(eq - arg)))
		return -EINVAL;
	/* The document's names; fault is the kernel's to say (not in a system call). */
	for (c = 0; (name = blocked_cause__name(c)); c++) {
		if (c == KHBPF_BLOCK_FAULT || strcmp(eq + 1, name))
			continue;
		memcpy(out->metric, arg, (size_t)(eq - arg));
		out->metric[eq - arg] = '\0';
		out->cause = c;
		return 0;
	}
	return -EINVAL;
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

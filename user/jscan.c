// SPDX-License-Identifier: MIT
/* JSON structure without a tree; see jscan.h. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "jscan.h"

static size_t skip_ws(const char *t, size_t p, size_t n)
{
	while (p < n && (t[p] == ' ' || t[p] == '\t' || t[p] == '\n' || t[p] == '\r'))
		p++;
	return p;
}

/* At a '"': past the closing one. */
static int skip_string(const char *t, size_t *p, size_t n)
{
	size_t i = *p + 1;

	while (i < n) {
		if (t[i] == '\\') {
			i += 2;
			continue;
		}
		if (t[i] == '"') {
			*p = i + 1;
			return 0;
		}
		if ((unsigned char)t[i] < 0x20)
			return -EINVAL;
		i++;
	}
	return -EINVAL;
}

/* At a member's key: past it, its ':' and the blanks before its value. */
static int skip_key(const char *t, size_t *p, size_t n)
{
	size_t i = *p;

	if (i >= n || t[i] != '"' || skip_string(t, &i, n))
		return -EINVAL;
	i = skip_ws(t, i, n);
	if (i >= n || t[i] != ':')
		return -EINVAL;
	*p = skip_ws(t, i + 1, n);
	return 0;
}

static bool scalar_byte(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' ||
	       c == '.' || c == 'E';
}

/*
 * Past one value starting at *p. Containers are walked with an explicit
 * stack of their closing brackets, so a deep document costs no C stack.
 */
static int skip_value(const char *t, size_t *p, size_t n)
{
	char stack[JSCAN_MAX_DEPTH];
	int depth = 0, err;
	size_t i = skip_ws(t, *p, n);
	bool want_value = true;

	for (;;) {
		if (i >= n)
			return -EINVAL;
		if (want_value) {
			char c = t[i];

			if (c == '{' || c == '[') {
				if (depth == JSCAN_MAX_DEPTH)
					return -E2BIG;
				stack[depth++] = c == '{' ? '}' : ']';
				i = skip_ws(t, i + 1, n);
				if (i < n && t[i] == stack[depth - 1]) {
					i++;
					depth--;
					want_value = false;
					goto after;
				}
				if (c == '{' && skip_key(t, &i, n))
					return -EINVAL;
				continue;
			}
			if (c == '"') {
				err = skip_string(t, &i, n);
				if (err)
					return err;
			} else if (scalar_byte(c)) {
				while (i < n && scalar_byte(t[i]))
					i++;
			} else {
				return -EINVAL;
			}
			want_value = false;
		}
after:
		if (!depth) {
			*p = i;
			return 0;
		}
		i = skip_ws(t, i, n);
		if (i >= n)
			return -EINVAL;
		if (t[i] == stack[depth - 1]) {
			i++;
			depth--;
			goto after;
		}
		if (t[i] != ',')
			return -EINVAL;
		i = skip_ws(t, i + 1, n);
		if (stack[depth - 1] == '}' && skip_key(t, &i, n))
			return -EINVAL;
		want_value = true;
	}
}

/* The member key (key_len bytes, unescaped) of the object at r. */
static int object_member(const char *t, const struct jrange *r, const char *key, size_t key_len,
			 struct jrange *out)
{
	size_t i = skip_ws(t, r->begin, r->end), k;
	bool match;
	int err;

	if (i >= r->end || t[i] != '{')
		return -ENOENT;
	i = skip_ws(t, i + 1, r->end);
	if (i < r->end && t[i] == '}')
		return -ENOENT;
	for (;;) {
		if (i >= r->end || t[i] != '"')
			return -EINVAL;
		k = i + 1;
		err = skip_string(t, &i, r->end);
		if (err)
			return err;
		/* Raw bytes: an escaped spelling of the key is not found (and not streamed). */
		match = i - 1 - k == key_len && !memcmp(t + k, key, key_len);
		i = skip_ws(t, i, r->end);
		if (i >= r->end || t[i] != ':')
			return -EINVAL;
		i = skip_ws(t, i + 1, r->end);
		if (match) {
			out->begin = i;
			err = skip_value(t, &i, r->end);
			if (err)
				return err;
			out->end = i;
			return 0;
		}
		err = skip_value(t, &i, r->end);
		if (err)
			return err;
		i = skip_ws(t, i, r->end);
		if (i < r->end && t[i] == ',') {
			i = skip_ws(t, i + 1, r->end);
			continue;
		}
		if (i < r->end && t[i] == '}')
			return -ENOENT;
		return -EINVAL;
	}
}

int jscan__member(const char *text, size_t len, const char *path, struct jrange *out)
{
	struct jrange r = { 0, len };
	const char *key = path, *dot;
	int err;

	while (key) {
		dot = strchr(key, '.');
		err = object_member(text, &r, key, dot ? (size_t)(dot - key) : strlen(key), &r);
		if (err)
			return err;
		key = dot ? dot + 1 : NULL;
	}
	*out = r;
	return 0;
}

int jscan__next(const char *text, const struct jrange *arr, size_t *pos, struct jrange *elem)
{
	size_t i = *pos ? *pos : arr->begin;
	int err;

	i = skip_ws(text, i, arr->end);
	if (!*pos) {
		if (i >= arr->end || text[i] != '[')
			return -EINVAL;
		i = skip_ws(text, i + 1, arr->end);
		if (i < arr->end && text[i] == ']') {
			*pos = arr->end;
			return 0;
		}
	} else if (i >= arr->end) {
		return 0;
	} else if (text[i] == ',') {
		i = skip_ws(text, i + 1, arr->end);
	} else if (text[i] == ']') {
		*pos = arr->end;
		return 0;
	} else {
		return -EINVAL;
	}
	elem->begin = i;
	err = skip_value(text, &i, arr->end);
	if (err)
		return err;
	elem->end = i;
	*pos = i;
	return 1;
}

// SPDX-License-Identifier: MIT
/* JSON structure without a tree, read a piece at a time; see jscan.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/jscan.h"

struct jscan {
	int fd;
	bool in_memory; /* the bytes are all in buf */
	const char *buf; /* the bytes at base .. base + len */
	char *own; /* the read buffer of a file */
	uint64_t base;
	size_t len, i; /* i: the next byte */
	int err; /* sticky: a failed read or tap */
	jscan_tap_fn tap;
	void *tap_ctx;
	size_t tap_at; /* buf[tap_at .. i) is consumed, not yet tapped */
};

static bool is_ws(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * Anything but structure, quotes and blanks may be part of a number or a
 * literal as far as the structure goes: json-c says what it accepts (NaN,
 * Infinity...), so the scan is never stricter than the parse.
 */
static bool scalar_byte(int c)
{
	return !is_ws(c) && !strchr("{}[],:\"", c);
}

int jscan__from_fd(int fd, struct jscan **out)
{
	struct jscan *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->own = malloc(JSCAN_READ_SIZE);
	if (!s->own) {
		free(s);
		return -ENOMEM;
	}
	s->fd = fd;
	s->buf = s->own;
	*out = s;
	return 0;
}

int jscan__from_mem(const char *text, size_t len, struct jscan **out)
{
	struct jscan *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->fd = -1;
	s->in_memory = true;
	s->buf = text;
	s->len = len;
	*out = s;
	return 0;
}

void jscan__free(struct jscan *s)
{
	if (!s)
		return;
	free(s->own);
	free(s);
}

uint64_t jscan__tell(const struct jscan *s)
{
	return s->base + s->i;
}

void jscan__seek(struct jscan *s, uint64_t off)
{
	if (s->in_memory) {
		s->i = off < s->len ? (size_t)off : s->len;
	} else if (off >= s->base && off <= s->base + s->len) {
		s->i = (size_t)(off - s->base);
	} else {
		s->base = off;
		s->len = 0;
		s->i = 0;
	}
	s->tap_at = s->i;
	s->err = 0; /* a failed tap or read is tried again from here */
}

int jscan__flush(struct jscan *s)
{
	int ret;

	if (!s->tap || s->i == s->tap_at)
		return s->err;
	ret = s->tap(s->tap_ctx, s->base + s->tap_at, s->buf + s->tap_at, s->i - s->tap_at);
	s->tap_at = s->i;
	if (ret < 0 && !s->err)
		s->err = ret;
	return s->err;
}

/* With every byte of the buffer consumed: the next piece. 0 at the end too (i == len). */
static int fill(struct jscan *s)
{
	ssize_t n;
	int err;

	if (s->err)
		return s->err;
	err = jscan__flush(s);
	if (err || s->in_memory)
		return err;
	s->base += s->len;
	s->len = 0;
	s->i = 0;
	s->tap_at = 0;
	do
		n = pread(s->fd, s->own, JSCAN_READ_SIZE, (off_t)s->base);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return s->err = -errno;
	s->len = (size_t)n;
	return 0;
}

/* 1 with a byte at i, 0 at the end, or -errno. */
static int more(struct jscan *s)
{
	int err;

	if (s->i < s->len)
		return 1;
	err = fill(s);
	if (err)
		return err;
	return s->i < s->len;
}

int jscan__peek(struct jscan *s)
{
	int r;

	for (;;) {
		while (s->i < s->len) {
			unsigned char c = (unsigned char)s->buf[s->i];

			if (!is_ws(c))
				return c;
			s->i++;
		}
		r = more(s);
		if (r <= 0)
			return r ? r : -ENODATA;
	}
}

void jscan__take(struct jscan *s)
{
	s->i++;
}

int jscan__drain(struct jscan *s)
{
	int r;

	do {
		s->i = s->len;
		r = more(s);
	} while (r > 0);
	return r;
}

void jscan__tap(struct jscan *s, jscan_tap_fn fn, void *ctx)
{
	s->tap = fn;
	s->tap_ctx = ctx;
	s->tap_at = s->i;
}

int jscan__untap(struct jscan *s)
{
	int err = jscan__flush(s);

	s->tap = NULL;
	return err;
}

/* Past the rest of a string whose '"' is consumed; its bytes into buf[*n...] when buf. */
static int skip_string(struct jscan *s, char *buf, size_t cap, size_t *n)
{
	bool esc = false;
	int r;

	for (;;) {
		while (s->i < s->len) {
			unsigned char c = (unsigned char)s->buf[s->i];

			if (!esc && c == '"') {
				s->i++;
				return 0;
			}
			/* Control bytes too: json-c's strict mode takes them in strings. */
			esc = !esc && c == '\\';
			if (buf && *n + 1 < cap)
				buf[*n] = (char)c;
			if (n)
				(*n)++;
			s->i++;
		}
		r = more(s);
		if (r <= 0)
			return r ? r : -EINVAL;
	}
}

int jscan__key(struct jscan *s, char *buf, size_t cap)
{
	size_t n = 0;
	int c, err;

	c = jscan__peek(s);
	if (c != '"')
		return c < 0 && c != -ENODATA ? c : -EINVAL;
	s->i++;
	err = skip_string(s, buf, cap, &n);
	if (err)
		return err;
	if (cap)
		buf[n < cap ? n : cap - 1] = '\0';
	c = jscan__peek(s);
	if (c != ':')
		return c < 0 && c != -ENODATA ? c : -EINVAL;
	s->i++;
	c = jscan__peek(s);
	if (c < 0 && c != -ENODATA)
		return c;
	return n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
}

/* Where skip_value is: what it expects next. */
enum sv {
	SV_VALUE, /* a value */
	SV_FIRST_MEMBER, /* after '{': a key or '}' */
	SV_FIRST_ELEM, /* after '[': a value or ']' */
	SV_KEY, /* after ',' in an object */
	SV_COLON,
	SV_SCALAR, /* in a number or literal */
	SV_AFTER, /* after a value: ',' or the closing bracket */
};

/*
 * A state machine over the bytes as they come, with an explicit stack of
 * the closing brackets, so that neither a piece boundary nor a deep
 * document costs anything.
 */
int jscan__skip_value(struct jscan *s)
{
	char stack[JSCAN_MAX_DEPTH];
	enum sv st = SV_VALUE;
	int depth = 0, r;

	for (;;) {
		unsigned char c;

		r = more(s);
		if (r < 0)
			return r;
		if (!r)
			return st == SV_SCALAR && !depth ? 0 : -EINVAL;
		c = (unsigned char)s->buf[s->i];
		if (is_ws(c) && st != SV_SCALAR) {
			s->i++;
			continue;
		}
		switch (st) {
		case SV_FIRST_MEMBER:
			if (c == '}')
				goto close;
			/* fallthrough */
		case SV_KEY:
			if (c != '"')
				return -EINVAL;
			s->i++;
			r = skip_string(s, NULL, 0, NULL);
			if (r)
				return r;
			st = SV_COLON;
			continue;
		case SV_COLON:
			if (c != ':')
				return -EINVAL;
			s->i++;
			st = SV_VALUE;
			continue;
		case SV_FIRST_ELEM:
			if (c == ']')
				goto close;
			/* fallthrough */
		case SV_VALUE:
			if (c == '{' || c == '[') {
				if (depth == JSCAN_MAX_DEPTH)
					return -E2BIG;
				stack[depth++] = c == '{' ? '}' : ']';
				s->i++;
				st = c == '{' ? SV_FIRST_MEMBER : SV_FIRST_ELEM;
				continue;
			}
			if (c == '"') {
				s->i++;
				r = skip_string(s, NULL, 0, NULL);
				if (r)
					return r;
				goto done;
			}
			if (!scalar_byte(c))
				return -EINVAL;
			s->i++;
			st = SV_SCALAR;
			continue;
		case SV_SCALAR:
			if (scalar_byte(c)) {
				s->i++;
				continue;
			}
			goto done;
		case SV_AFTER:
			if (c == stack[depth - 1])
				goto close;
			if (c != ',')
				return -EINVAL;
			s->i++;
			st = stack[depth - 1] == '}' ? SV_KEY : SV_VALUE;
			continue;
		}
close:
		if (c != stack[depth - 1])
			return -EINVAL;
		s->i++;
		depth--;
done:
		if (!depth)
			return 0;
		st = SV_AFTER;
	}
}

int jscan__line_col(struct jscan *s, uint64_t off, size_t *line, size_t *col)
{
	int r;

	*line = 1;
	*col = 1;
	jscan__seek(s, 0);
	while (jscan__tell(s) < off) {
		r = more(s);
		if (r <= 0)
			return r;
		while (s->i < s->len && jscan__tell(s) < off) {
			if (s->buf[s->i++] == '\n') {
				(*line)++;
				*col = 1;
			} else {
				(*col)++;
			}
		}
	}
	return 0;
}

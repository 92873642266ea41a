// SPDX-License-Identifier: MIT
/* JSON structure without a tree, read a piece at a time; see jscan.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
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
	struct jscan_counts n;
	uint64_t range_at;
};

/*
 * Anything but structure, quotes and blanks (NUL is not a blank) may be
 * part of a number or a literal as far as the structure goes: json-c says
 * what it accepts (NaN, Infinity...), so the scan is never stricter than
 * the parse. A table: the scan looks at every byte of a document.
 */
enum { BYTE_SCALAR, BYTE_BLANK, BYTE_OTHER };
static const unsigned char byte_kind[256] = {
	['\0'] = BYTE_OTHER, [' '] = BYTE_BLANK, ['\t'] = BYTE_BLANK, ['\n'] = BYTE_BLANK,
	['\r'] = BYTE_BLANK, ['{'] = BYTE_OTHER, ['}'] = BYTE_OTHER,  ['['] = BYTE_OTHER,
	[']'] = BYTE_OTHER,  [','] = BYTE_OTHER, [':'] = BYTE_OTHER,  ['"'] = BYTE_OTHER,
};

static bool is_ws(int c)
{
	return byte_kind[(unsigned char)c] == BYTE_BLANK;
}

static bool scalar_byte(int c)
{
	return byte_kind[(unsigned char)c] == BYTE_SCALAR;
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
	s->range_at = UINT64_MAX;
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
	s->range_at = UINT64_MAX;
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

/*
 * An integer literal read a piece at a time, against the bound of its sign:
 * only its significant digits count (json-c takes "-01" and "00"), and
 * past the bound's length only whether every byte is a digit.
 */
struct intlit {
	uint64_t sig; /* significant digits so far */
	int cmp; /* the first of them against the bound's: <0, 0, >0 */
	bool started, neg, other; /* other: a byte that is no digit */
};

static void intlit_add(struct intlit *n, const char *p, size_t k)
{
	const char *bound;
	size_t i = 0, len;

	if (!k)
		return;
	if (!n->started) {
		n->started = true;
		n->neg = p[0] == '-';
		i = n->neg;
	}
	bound = n->neg ? &JSCAN_INT_MIN[1] : JSCAN_INT_MAX;
	len = n->neg ? sizeof(JSCAN_INT_MIN) - 2 : sizeof(JSCAN_INT_MAX) - 1;
	for (; i < k && !n->other; i++) {
		if (p[i] < '0' || p[i] > '9') {
			n->other = true;
		} else if (n->sig || p[i] != '0') {
			if (n->sig < len && !n->cmp)
				n->cmp = p[i] - bound[n->sig];
			n->sig++;
		}
	}
}

static bool intlit_out(const struct intlit *n)
{
	uint64_t len = n->neg ? sizeof(JSCAN_INT_MIN) - 2 : sizeof(JSCAN_INT_MAX) - 1;

	return n->started && !n->other && (n->sig > len || (n->sig == len && n->cmp > 0));
}

/*
 * Past a number or literal whose first byte is the next; its bytes into
 * buf when buf, *len its length. Whatever it is, json-c judges it; an
 * integer literal out of 64 bits is noted. Shorter than 20 bytes in one
 * piece (nearly all), none is: only then are the bytes looked at again.
 */
static int skip_scalar(struct jscan *s, char *buf, size_t cap, uint64_t *len)
{
	struct intlit n = { 0 };
	uint64_t at = jscan__tell(s), got = 0;
	bool pieces = false;
	size_t from, k;
	int r;

	for (;;) {
		from = s->i;
		while (s->i < s->len && scalar_byte(s->buf[s->i]))
			s->i++;
		k = s->i - from;
		if (buf && got < cap)
			memcpy(buf + got, s->buf + from, k < cap - got ? k : cap - got);
		got += k;
		if (pieces || s->i == s->len || k >= sizeof(JSCAN_INT_MAX) - 1)
			intlit_add(&n, s->buf + from, k);
		if (s->i < s->len)
			break;
		pieces = true;
		r = more(s);
		if (r < 0)
			return r;
		if (!r)
			break; /* the end ends it too */
	}
	if (intlit_out(&n) && at < s->range_at)
		s->range_at = at;
	if (len)
		*len = got;
	return 0;
}

int64_t jscan__scalar(struct jscan *s, char *buf, size_t cap)
{
	uint64_t len;
	int c, err;

	c = jscan__peek(s);
	if (c < 0 && c != -ENODATA)
		return c;
	if (c < 0 || !scalar_byte(c) || !cap)
		return -EINVAL;
	err = skip_scalar(s, buf, cap - 1, &len);
	if (err)
		return err;
	buf[len < cap - 1 ? len : cap - 1] = '\0';
	return len > INT64_MAX ? INT64_MAX : (int64_t)len;
}

int jscan__key(struct jscan *s, char *buf, size_t cap)
{
	size_t n = 0;
	int c, err;

	c = jscan__peek(s);
	if (c != '"')
		return c < 0 && c != -ENODATA ? c : -EINVAL;
	s->n.keys++;
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
			return -EINVAL;
		c = (unsigned char)s->buf[s->i];
		if (is_ws(c)) {
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
			s->n.keys++;
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
				s->n.values++;
				if (c == '{')
					s->n.objects++;
				else
					s->n.arrays++;
				st = c == '{' ? SV_FIRST_MEMBER : SV_FIRST_ELEM;
				continue;
			}
			if (c == '"') {
				s->i++;
				s->n.values++;
				r = skip_string(s, NULL, 0, NULL);
				if (r)
					return r;
				goto done;
			}
			if (!scalar_byte(c))
				return -EINVAL;
			s->n.values++;
			r = skip_scalar(s, NULL, 0, NULL);
			if (r)
				return r;
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

void jscan__counts(const struct jscan *s, struct jscan_counts *out)
{
	*out = s->n;
}

uint64_t jscan__range_at(const struct jscan *s)
{
	return s->range_at;
}

/* A key of a path longer than this is cut, with "...". */
#define PATH_KEY_MAX 64

/*
 * Into the value at the cursor (its path path[0..len)) as far as the value
 * holding off: each member or element before it skipped, the one holding
 * it read again from its start, a level deeper.
 */
static int path_in(struct jscan *s, uint64_t off, char *path, size_t cap, size_t len, int depth)
{
	char key[PATH_KEY_MAX + 1];
	uint64_t start, idx;
	bool object;
	int c, n, err;
	size_t sub;

	c = jscan__peek(s);
	if (c < 0)
		return c == -ENODATA ? -EINVAL : c;
	if (jscan__tell(s) >= off || (c != '{' && c != '['))
		return 0;
	if (depth == JSCAN_MAX_DEPTH)
		return -E2BIG;
	object = c == '{';
	jscan__take(s);
	for (idx = 0;; idx++) {
		c = jscan__peek(s);
		if (c < 0 && c != -ENODATA)
			return c;
		if (c == (object ? '}' : ']'))
			return 0; /* off is in the blanks between */
		sub = len;
		if (object) {
			n = jscan__key(s, key, sizeof(key));
			if (n < 0)
				return n;
			sub += (size_t)snprintf(path + len, cap - len, "%s%s%s", len ? "." : "",
						key, n > PATH_KEY_MAX ? "..." : "");
		} else {
			sub += (size_t)snprintf(path + len, cap - len, "[%" PRIu64 "]", idx);
		}
		if (sub >= cap)
			sub = cap - 1;
		start = jscan__tell(s);
		err = jscan__skip_value(s);
		if (err)
			return err;
		if (jscan__tell(s) > off) {
			jscan__seek(s, start);
			return path_in(s, off, path, cap, sub, depth + 1);
		}
		path[len] = '\0';
		c = jscan__peek(s);
		if (c != ',')
			return c < 0 && c != -ENODATA ? c : -EINVAL;
		jscan__take(s);
	}
}

int jscan__path_at(struct jscan *s, uint64_t off, char *buf, size_t cap)
{
	if (!cap)
		return -EINVAL;
	buf[0] = '\0';
	jscan__seek(s, 0);
	return path_in(s, off, buf, cap, 0, 0);
}

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/printbuf.h>

#include "lib/jsonstream.h"
#include "lib/output.h"

/*
 * In the tree's text a lazy array being streamed is a single 0x01 byte:
 * json-c writes control characters in strings as \u0001, so a raw one is
 * only ever a mark.
 */
#define MARK '\001'

struct lazy_array {
	const void *ctx;
	size_t nr;
	jsonstream_build_fn build;
};

/* Where text goes: a printbuf (json-c's serializer) or a buffered fd. */
struct sink {
	int (*put)(struct sink *s, const char *text, size_t len);
	struct printbuf *pb;
	int fd;
	int err;
	size_t used;
	char buf[1 << 16];
};

/* The lazy arrays met while the tree's text is made, in text order. */
struct marks {
	const struct lazy_array **arrays;
	int *levels;
	size_t nr, cap;
	int err;
};

/* Set only while jsonstream__write makes the tree's text, on its thread. */
static __thread struct marks *marking;

static int pb_put(struct sink *s, const char *text, size_t len)
{
	return printbuf_memappend(s->pb, text, (int)len) < 0 ? -ENOMEM : 0;
}

static int fd_flush(struct sink *s)
{
	int err = s->err ?: output__write_all(s->fd, s->buf, s->used);

	s->used = 0;
	s->err = err;
	return err;
}

static int fd_put(struct sink *s, const char *text, size_t len)
{
	if (s->err)
		return s->err;
	if (s->used + len > sizeof(s->buf) && fd_flush(s))
		return s->err;
	if (len > sizeof(s->buf)) {
		s->err = output__write_all(s->fd, text, len);
		return s->err;
	}
	memcpy(s->buf + s->used, text, len);
	s->used += len;
	return 0;
}

static int put(struct sink *s, const char *text)
{
	return s->put(s, text, strlen(text));
}

static int indent(struct sink *s, int level, int flags)
{
	int i;

	if (!(flags & JSON_C_TO_STRING_PRETTY))
		return 0;
	for (i = 0; i < level; i++)
		if (put(s, flags & JSON_C_TO_STRING_PRETTY_TAB ? "\t" : "  "))
			return -1;
	return 0;
}

/* TEXT, made at level 0, placed at LEVEL: every new line gets LEVEL's indent. */
static int put_at_level(struct sink *s, const char *text, int level, int flags)
{
	const char *nl;

	while ((nl = strchr(text, '\n'))) {
		if (s->put(s, text, (size_t)(nl - text + 1)) || indent(s, level, flags))
			return -1;
		text = nl + 1;
	}
	return put(s, text) ? -1 : 0;
}

/* The array's text as json-c lays out an array at level (checked in tests/document/test_document.c). */
static int lazy_array_put(const struct lazy_array *a, struct sink *s, int level, int flags)
{
	bool pretty = flags & JSON_C_TO_STRING_PRETTY;
	bool spaced = (flags & JSON_C_TO_STRING_SPACED) && !pretty;
	size_t i;

	if (put(s, "[") || (pretty && put(s, "\n")))
		return -1;
	for (i = 0; i < a->nr; i++) {
		struct json_object *v;
		const char *text;
		int err = 0, r;

		if (i && (put(s, ",") || (pretty && put(s, "\n"))))
			return -1;
		if ((spaced && put(s, " ")) || indent(s, level + 1, flags))
			return -1;
		v = a->build(a->ctx, i, &err);
		text = v && !err ? json_object_to_json_string_ext(v, flags) : NULL;
		r = text ? put_at_level(s, text, level + 1, flags) : -1;
		json_object_put(v);
		if (r)
			return -1;
	}
	if (pretty && ((a->nr && put(s, "\n")) || indent(s, level, flags)))
		return -1;
	return put(s, spaced ? " ]" : "]") ? -1 : 0;
}

static int mark(struct marks *m, const struct lazy_array *a, int level)
{
	if (m->nr == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 4;
		const struct lazy_array **arrays = realloc(m->arrays, cap * sizeof(*arrays));
		int *levels;

		if (arrays)
			m->arrays = arrays;
		levels = arrays ? realloc(m->levels, cap * sizeof(*levels)) : NULL;
		if (!levels)
			return -ENOMEM;
		m->levels = levels;
		m->cap = cap;
	}
	m->arrays[m->nr] = a;
	m->levels[m->nr++] = level;
	return 0;
}

static int lazy_array_to_string(struct json_object *jso, struct printbuf *pb, int level, int flags)
{
	const struct lazy_array *a = json_object_get_userdata(jso);
	struct sink s = { .put = pb_put, .pb = pb };

	if (!marking)
		return lazy_array_put(a, &s, level, flags);
	if (mark(marking, a, level)) {
		marking->err = -ENOMEM;
		return -1;
	}
	return printbuf_memappend(pb, (const char[]){ MARK }, 1) < 0 ? -1 : 0;
}

static void lazy_array_free(struct json_object *jso, void *userdata)
{
	(void)jso;
	free(userdata);
}

struct json_object *jsonstream__lazy_array(const void *ctx, size_t nr, jsonstream_build_fn build)
{
	struct json_object *arr = json_object_new_array();
	struct lazy_array *a = calloc(1, sizeof(*a));

	if (!arr || !a) {
		json_object_put(arr);
		free(a);
		return NULL;
	}
	*a = (struct lazy_array){ .ctx = ctx, .nr = nr, .build = build };
	json_object_set_serializer(arr, lazy_array_to_string, a, lazy_array_free);
	return arr;
}

size_t jsonstream__length(struct json_object *arr)
{
	const struct lazy_array *a;

	if (!json_object_is_type(arr, json_type_array))
		return 0;
	/* A lazy array is an empty json-c array carrying its own serializer. */
	a = json_object_get_userdata(arr);
	return a ? a->nr : json_object_array_length(arr);
}

int jsonstream__write(struct json_object *obj, int flags, bool newline, int fd)
{
	struct marks m = { 0 };
	struct sink *s = NULL;
	const char *text, *at;
	size_t k = 0;
	int err = 0;

	/* The tree's own text, small: each lazy array in it is a mark. */
	marking = &m;
	text = json_object_to_json_string_ext(obj, flags);
	marking = NULL;
	s = malloc(sizeof(*s));
	if (!text || m.err || !s) {
		err = -ENOMEM;
		goto cleanup;
	}
	*s = (struct sink){ .put = fd_put, .fd = fd };
	while ((at = strchr(text, MARK))) {
		if (k == m.nr) {
			err = -EINVAL;
			goto cleanup;
		}
		if (fd_put(s, text, (size_t)(at - text)) ||
		    lazy_array_put(m.arrays[k], s, m.levels[k], flags)) {
			err = s->err ?: -ENOMEM;
			goto cleanup;
		}
		text = at + 1;
		k++;
	}
	if (put(s, text) || (newline && put(s, "\n")) || fd_flush(s))
		err = s->err ?: -ENOMEM;
cleanup:
	free(s);
	free(m.arrays);
	free(m.levels);
	return err;
}

// SPDX-License-Identifier: MIT
/*
 * A document read a piece at a time (jscan.h), never whole: the outline
 * pass hands json-c every byte but those of the streamed arrays, which it
 * finds by path, counts, and replaces with "[]"; their elements are parsed
 * one at a time afterwards (loader__stream_each). When anything is not
 * JSON, a strict outline pass has json-c read each streamed array in place
 * too, an element at a time, so that the message names the first place a
 * parse of the whole text would, in the same words, at the same line and
 * column, with no more than one element in memory. See report_loader.h.
 *
 * What json-c builds is bounded before it is built: the cursor counts the
 * values of the bytes a tap hands on, and the tap refuses them when the
 * tree they make would pass the bound (-EFBIG). json-c 0.16 has no error
 * for a failed allocation: it stops there as if the value had ended. The
 * structure says where the value ends, so an end anywhere else is told as
 * what it is (-ENOMEM), not as a fault of the text.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "lib/jscan.h"
#include "report/report_loader.h"

/* json-c takes an int length: longer pieces (text in memory) go in parts. */
#define FEED_MAX ((size_t)1 << 30)
#define NOWHERE UINT64_MAX

/*
 * About what json-c 0.16 allocates for text of these values, over rather
 * than under (measured: 72 bytes an integer, 88 an empty string, 152 an
 * empty array, 792 an empty object, 200 a member of an object of 200000):
 * 128 bytes a value or key, 768 more an object, 64 more an array, and the
 * bytes of the text (strings and numbers are kept as text a while).
 */
static uint64_t tree_size(const struct jscan *s, const struct jscan_counts *from, uint64_t bytes)
{
	struct jscan_counts now;

	jscan__counts(s, &now);
	return bytes + 128 * (now.values - from->values + now.keys - from->keys) +
	       768 * (now.objects - from->objects) + 64 * (now.arrays - from->arrays);
}

/* The bounds in force: the loader's own, or report_loader.h's. */
static uint64_t outline_max(const struct loader *ld)
{
	return ld->outline_max ? ld->outline_max : REPORT_OUTLINE_MAX;
}

static uint64_t element_max(const struct loader *ld)
{
	return ld->element_max ? ld->element_max : REPORT_ELEMENT_MAX;
}

struct outline {
	struct loader *ld;
	struct jscan *s;
	bool strict; /* every streamed element read by json-c too */
	bool plain; /* nothing streamed: every byte to json-c */
	bool escaped; /* a key on the way to the arrays is spelled with escapes */
	struct json_tokener *tok; /* the document, its streamed arrays as [] */
	bool done; /* tok has the document whole: root (NULL for a JSON null) */
	struct json_object *root;
	struct json_tokener *etok; /* strict: the streamed array at hand */
	/* The first place that is not JSON, and json-c's error there. */
	bool bad;
	enum json_tokener_error jerr; /* success: the structure, not json-c, refused it */
	uint64_t bad_at;
	/*
	 * What the tree takes: the bytes given to tok, and the cursor's counts
	 * not in it (before the document, and those of the streamed arrays).
	 */
	uint64_t fed;
	struct jscan_counts base;
	char member[160]; /* the member being read, for the message */
	/* strict: the element at hand, its bytes and counts, and its index */
	uint64_t efed;
	struct jscan_counts ebase;
	size_t eidx;
	/*
	 * Where the values json-c reads end (NOWHERE: not yet read; json-c takes
	 * the blanks after them too); broken: the structure ended first.
	 */
	uint64_t root_end, array_end;
	bool broken;
	/* Over a bound (big: the path, element: which bound), or json-c gave up at nomem_at. */
	bool over, element;
	char big[200];
	uint64_t nomem_at;
};

static struct json_tokener *tokener(int depth)
{
	struct json_tokener *tok = json_tokener_new_ex(depth);

	if (tok)
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	return tok;
}

static int fail_at(struct outline *o, enum json_tokener_error jerr, uint64_t at)
{
	if (!o->bad) {
		o->bad = true;
		o->jerr = jerr;
		o->bad_at = at;
	}
	return -EINVAL;
}

/* json-c ended a value at at where the structure does not: it could not allocate. */
static int gave_up(struct outline *o, uint64_t at)
{
	if (o->nomem_at == NOWHERE)
		o->nomem_at = at;
	return -ENOMEM;
}

static int over(struct outline *o, bool element)
{
	if (!o->over) {
		o->over = true;
		o->element = element;
		if (element)
			snprintf(o->big, sizeof(o->big), "%s[%zu]", o->member, o->eidx);
		else
			snprintf(o->big, sizeof(o->big), "%s", o->member);
	}
	return -EFBIG;
}

/* The tap of the document outside its streamed arrays: into o->tok. */
static int feed(void *ctx, uint64_t off, const char *p, size_t n)
{
	struct outline *o = ctx;
	enum json_tokener_error jerr;
	size_t k, used, i;

	/* The cursor has counted these bytes' values: refused before json-c builds them. */
	if (!o->done) {
		o->fed += n;
		if (tree_size(o->s, &o->base, o->fed) > outline_max(o->ld))
			return over(o, false);
	}
	while (n && !o->bad) {
		if (o->done) {
			/* After the value only blanks, as the whole text's parse allows (NUL too). */
			for (i = 0; i < n; i++)
				if (!strchr(" \t\r\n", p[i]))
					return fail_at(o, json_tokener_error_parse_unexpected,
						       off + i);
			return 0;
		}
		k = n < FEED_MAX ? n : FEED_MAX;
		o->root = json_tokener_parse_ex(o->tok, p, (int)k);
		jerr = json_tokener_get_error(o->tok);
		used = jerr == json_tokener_continue ? k : json_tokener_get_parse_end(o->tok);
		if (jerr != json_tokener_continue && jerr != json_tokener_success)
			return fail_at(o, jerr, off + used);
		if (jerr == json_tokener_success && !o->broken && off + used < o->root_end) {
			json_object_put(o->root);
			o->root = NULL;
			return gave_up(o, off + used);
		}
		o->done = jerr == json_tokener_success;
		p += used;
		off += used;
		n -= used;
	}
	return o->bad ? -EINVAL : 0;
}

/* The tap of a streamed array in the strict pass: into o->etok. */
static int feed_array(void *ctx, uint64_t off, const char *p, size_t n)
{
	struct outline *o = ctx;
	enum json_tokener_error jerr;
	struct json_object *obj;
	size_t k;

	o->efed += n;
	if (tree_size(o->s, &o->ebase, o->efed) > element_max(o->ld))
		return over(o, true);
	while (n && !o->bad) {
		k = n < FEED_MAX ? n : FEED_MAX;
		obj = json_tokener_parse_ex(o->etok, p, (int)k);
		jerr = json_tokener_get_error(o->etok);
		if (jerr == json_tokener_success) {
			json_object_put(obj);
			if (!o->broken && off + json_tokener_get_parse_end(o->etok) < o->array_end)
				return gave_up(o, off + json_tokener_get_parse_end(o->etok));
			/* The array closed: the tap stops right after its ']'. */
			return 0;
		}
		if (jerr != json_tokener_continue)
			return fail_at(o, jerr, off + json_tokener_get_parse_end(o->etok));
		p += k;
		off += k;
		n -= k;
	}
	return o->bad ? -EINVAL : 0;
}

/* Fast: the elements of the array at the cursor counted, by structure only. */
static int count_array(struct jscan *s, size_t *count)
{
	int c, err;

	jscan__take(s);
	c = jscan__peek(s);
	if (c == ']') {
		jscan__take(s);
		return 0;
	}
	for (;;) {
		err = jscan__skip_value(s);
		if (err)
			return err;
		(*count)++;
		c = jscan__peek(s);
		if (c == ']' || c == ',')
			jscan__take(s);
		if (c == ']')
			return 0;
		if (c != ',')
			return c < 0 && c != -ENODATA ? c : -EINVAL;
	}
}

/*
 * Strict: the array at the cursor read by json-c as it comes. After each
 * comma json-c starts again from "[0," (the same state, and elements at
 * the same depth as in the document), so only one element is ever built.
 */
static int check_array(struct outline *o, int nesting, size_t *count)
{
	struct jscan *s = o->s;
	int c, err = 0;

	o->etok = tokener(REPORT_JSON_DEPTH - nesting);
	if (!o->etok)
		return -ENOMEM;
	o->array_end = NOWHERE;
	o->eidx = 0;
	o->efed = 0;
	jscan__counts(s, &o->ebase);
	jscan__tap(s, feed_array, o);
	jscan__take(s);
	c = jscan__peek(s);
	while (c != ']') {
		err = c < 0 && c != -ENODATA ? c : jscan__skip_value(s);
		if (err)
			break;
		(*count)++;
		c = jscan__peek(s);
		if (c == ']')
			break;
		if (c != ',') {
			err = c < 0 && c != -ENODATA ? c : -EINVAL;
			break;
		}
		jscan__take(s);
		err = jscan__untap(s);
		if (err)
			break;
		json_tokener_reset(o->etok);
		json_tokener_parse_ex(o->etok, "[0,", 3);
		o->eidx = *count;
		o->efed = 0;
		jscan__counts(s, &o->ebase);
		jscan__tap(s, feed_array, o);
		c = jscan__peek(s);
	}
	if (!err) {
		jscan__take(s);
		o->array_end = jscan__tell(s);
	} else if ((err == -EINVAL || err == -E2BIG) && !o->bad) {
		/* The structure breaks here: json-c reads on and says how. */
		o->broken = true;
		jscan__drain(s);
	}
	jscan__untap(s);
	if (err && !o->bad && (err == -EINVAL || err == -E2BIG))
		fail_at(o, json_tokener_get_error(o->etok), jscan__tell(s));
	json_tokener_free(o->etok);
	o->etok = NULL;
	return o->bad ? -EINVAL : err;
}

static int walk_stream(struct outline *o, enum stream_id k, int nesting)
{
	struct stream *st = &o->ld->streams[k];
	uint64_t begin = jscan__tell(o->s);
	struct jscan_counts before, after;
	size_t count = 0;
	int err;

	err = jscan__untap(o->s);
	if (err)
		return err;
	jscan__counts(o->s, &before);
	err = o->strict ? check_array(o, nesting, &count) : count_array(o->s, &count);
	if (err)
		return err;
	/* Its values are not in the tree. */
	jscan__counts(o->s, &after);
	o->base.values += after.values - before.values;
	o->base.keys += after.keys - before.keys;
	o->base.objects += after.objects - before.objects;
	o->base.arrays += after.arrays - before.arrays;
	/* A later member of the same path wins, as in json-c's tree. */
	if (!o->strict)
		o->ld->arrays_found++;
	if (!o->strict)
		*st = (struct stream){ .on = true,
				       .begin = begin,
				       .end = jscan__tell(o->s),
				       .count = count,
				       .nesting = nesting };
	jscan__tap(o->s, feed, o);
	return feed(o, begin, "[]", 2);
}

/* child names a streamed array (0..), the way to one (-1), or neither (-2). */
static int path_kind(const char *child)
{
	size_t n = strlen(child);
	int k, kind = -2;

	for (k = 0; k < NR_STREAMS; k++) {
		if (!strcmp(report_stream_paths[k], child))
			return k;
		if (!strncmp(report_stream_paths[k], child, n) && report_stream_paths[k][n] == '.')
			kind = -1;
	}
	return kind;
}

/* The object at the cursor, on the way to streamed arrays (path: its own). */
static int walk_object(struct outline *o, const char *path, int nesting)
{
	struct jscan *s = o->s;
	char key[48], child[128];
	int c, len, kind, err;

	jscan__take(s);
	c = jscan__peek(s);
	if (c == '}') {
		jscan__take(s);
		return 0;
	}
	for (;;) {
		len = jscan__key(s, key, sizeof(key));
		if (len < 0)
			return len;
		kind = -2;
		snprintf(o->member, sizeof(o->member), "%s%s%s%s", path, *path ? "." : "", key,
			 (size_t)len < sizeof(key) ? "" : "...");
		/*
		 * Raw bytes: an escaped spelling of a key is not found, yet json-c's
		 * tree has it by its name; such a document is read again, plain.
		 */
		if (strchr(key, '\\'))
			o->escaped = true;
		else if ((size_t)len < sizeof(key) && !strchr(key, '.') && !o->plain) {
			snprintf(child, sizeof(child), "%s%s%s", path, *path ? "." : "", key);
			kind = path_kind(child);
		}
		c = jscan__peek(s);
		if (kind >= 0 && c == '[')
			err = walk_stream(o, (enum stream_id)kind, nesting + 1);
		else if (kind == -1 && c == '{')
			err = walk_object(o, child, nesting + 1);
		else
			err = jscan__skip_value(s);
		if (kind >= 0 && c != '[' && !o->strict)
			o->ld->streams[kind].on = false;
		/* Each member to json-c on its own: a bound it passes names it. */
		if (!err)
			err = jscan__flush(s);
		if (err)
			return err;
		c = jscan__peek(s);
		if (c == ',' || c == '}')
			jscan__take(s);
		if (c == '}')
			return 0;
		if (c != ',')
			return c < 0 && c != -ENODATA ? c : -EINVAL;
	}
}

/* One pass over the document; 0 with o->root, -EINVAL with o->bad (strict), -errno. */
static int walk(struct outline *o)
{
	struct jscan *s = o->s;
	int c, err;

	jscan__seek(s, 0);
	jscan__counts(s, &o->base);
	jscan__tap(s, feed, o);
	c = jscan__peek(s);
	/*
	 * An array, so not a document: refused at its first byte, before json-c
	 * builds any of what may be of any size. Any other value is one value,
	 * read as the outline is, within its bound.
	 */
	if (c == '[')
		return jscan__untap(s);
	if (c == '{')
		err = walk_object(o, "", 0);
	else
		err = c == -ENODATA ? 0 : c < 0 ? c : jscan__skip_value(s);
	if (!err) {
		o->root_end = jscan__tell(s);
		err = jscan__drain(s);
	} else if (o->strict && (err == -EINVAL || err == -E2BIG) && !o->bad) {
		/* The structure breaks here: json-c reads on and says how. */
		o->broken = true;
		jscan__drain(s);
	}
	c = jscan__untap(s);
	err = err ? err : c;
	if (o->bad)
		return -EINVAL;
	/* json-c read to the end without a fault: it still wants more, or disagrees. */
	if (err == -EINVAL || err == -E2BIG)
		return o->strict ? fail_at(o, json_tokener_get_error(o->tok), jscan__tell(s)) :
				   -EINVAL;
	if (err)
		return err;
	if (!o->done)
		return fail_at(o, json_tokener_continue, jscan__tell(s));
	return 0;
}

static int outline_pass(struct loader *ld, struct outline *o, bool strict, bool plain)
{
	int err;

	memset(o, 0, sizeof(*o));
	o->ld = ld;
	o->s = ld->scan;
	o->strict = strict;
	o->plain = plain;
	o->root_end = NOWHERE;
	o->array_end = NOWHERE;
	o->nomem_at = NOWHERE;
	/* The strict pass only looks: the streams stay as the first one found them. */
	if (!strict) {
		memset(ld->streams, 0, sizeof(ld->streams));
		ld->arrays_found = 0;
	}
	o->tok = tokener(REPORT_JSON_DEPTH);
	if (!o->tok)
		return -ENOMEM;
	err = walk(o);
	json_tokener_free(o->tok);
	if (err) {
		json_object_put(o->root);
		o->root = NULL;
		if (!strict)
			memset(ld->streams, 0, sizeof(ld->streams));
	}
	return err;
}

static void read_error(struct loader *ld, int err)
{
	if (ld->failed)
		return;
	ld->failed = err;
	snprintf(ld->err, ld->errlen, err == -ENOMEM ? "out of memory" : "cannot be read: %s",
		 strerror(-err));
}

/* "512 MiB", or the bytes of a bound the tests set. */
static void bound_text(char *buf, size_t len, uint64_t v)
{
	if (v % ((uint64_t)1 << 20))
		snprintf(buf, len, "%" PRIu64 " bytes", v);
	else
		snprintf(buf, len, "%" PRIu64 " MiB", v >> 20);
}

/* what (a member's path, an element's) passed its bound. */
static void too_large(struct loader *ld, const char *what, bool element)
{
	char bound[32];

	bound_text(bound, sizeof(bound), element ? element_max(ld) : outline_max(ld));
	/* loader__fail writes the document's own bytes of the path safely; the code is ours. */
	if (element)
		loader__fail(
			ld,
			"is too large to read: %s is over the %s bound on memory for one thread or span record",
			what, bound);
	else if (*what)
		loader__fail(
			ld,
			"is too large to read: its %s member is over the %s bound on memory for the document outside its threads and span records",
			what, bound);
	else
		loader__fail(
			ld,
			"is too large to read: the document outside its threads and span records is over the %s bound on memory",
			bound);
	ld->failed = -EFBIG;
}

/* json-c could not allocate what the text at offset at makes. */
static void gave_up_at(struct loader *ld, uint64_t at)
{
	size_t line, col;

	ld->failed = -ENOMEM;
	if (jscan__line_col(ld->scan, at, &line, &col))
		snprintf(ld->err, ld->errlen, "out of memory");
	else
		snprintf(
			ld->err, ld->errlen,
			"could not be read: out of memory (json-c gave up at line %zu, column %zu)",
			line, col);
}

/* A pass that failed but for the text not being JSON: its message. */
static int pass_failed(struct loader *ld, const struct outline *o, int err)
{
	ld->failed = 0;
	if (err == -EFBIG && o->over)
		too_large(ld, o->big, o->element);
	else if (err == -ENOMEM && o->nomem_at != NOWHERE)
		gave_up_at(ld, o->nomem_at);
	else
		read_error(ld, err);
	return ld->failed;
}

int loader__check_json(struct loader *ld)
{
	struct outline o;
	size_t line, col;
	int err = outline_pass(ld, &o, true, false);

	json_object_put(o.root);
	if (!err)
		return 0;
	if (err != -EINVAL)
		return pass_failed(ld, &o, err);
	ld->failed = -EINVAL;
	if (o.jerr == json_tokener_continue) {
		snprintf(ld->err, ld->errlen, "is not JSON: it ends in the middle of a value");
		return -EINVAL;
	}
	err = jscan__line_col(ld->scan, o.bad_at, &line, &col);
	if (err) {
		ld->failed = 0;
		read_error(ld, err);
	} else if (o.jerr == json_tokener_success) {
		snprintf(ld->err, ld->errlen, "is not JSON at line %zu, column %zu", line, col);
	} else {
		snprintf(ld->err, ld->errlen, "is not JSON: %s at line %zu, column %zu",
			 json_tokener_error_desc(o.jerr), line, col);
	}
	return ld->failed;
}

int loader__outline(struct loader *ld, struct json_object **root)
{
	struct outline o;
	int err = outline_pass(ld, &o, false, false);

	/* Never in what khbpf writes: whole in memory, as json-c reads it. */
	if (!err && o.escaped) {
		json_object_put(o.root);
		err = outline_pass(ld, &o, false, true);
	}
	*root = o.root;
	if (!err)
		return 0;
	if (err != -EINVAL)
		return pass_failed(ld, &o, err);
	/* Not JSON somewhere: the strict pass names the first place. */
	err = loader__check_json(ld);
	if (!err) {
		/* The structure and json-c disagree: no place to name. */
		ld->failed = -EINVAL;
		snprintf(ld->err, ld->errlen, "is not JSON");
	}
	return ld->failed;
}

void loader__not_json(struct loader *ld)
{
	size_t line = 0, col = 0;

	if (loader__check_json(ld))
		return;
	/* Whole in place, not on its own: it changed while it was read. */
	ld->failed = -EINVAL;
	if (jscan__line_col(ld->scan, ld->not_json_at, &line, &col))
		snprintf(ld->err, ld->errlen, "changed while it was read");
	else
		snprintf(ld->err, ld->errlen, "changed while it was read (at line %zu, column %zu)",
			 line, col);
}

void loader__find_placeholders(struct loader *ld, struct json_object *root)
{
	size_t on = 0;
	int k;

	for (k = 0; k < NR_STREAMS; k++) {
		struct json_object *o = root;
		char path[64], *key, *save = NULL;

		if (!ld->streams[k].on)
			continue;
		snprintf(path, sizeof(path), "%s", report_stream_paths[k]);
		for (key = strtok_r(path, ".", &save); key && o; key = strtok_r(NULL, ".", &save))
			if (!json_object_is_type(o, json_type_object) ||
			    !json_object_object_get_ex(o, key, &o))
				o = NULL;
		ld->streams[k].placeholder = o;
		/* Not our "[]": a spelling of the key with escapes came last. */
		if (!o || !json_object_is_type(o, json_type_array) || json_object_array_length(o))
			ld->streams[k].on = false;
		on += ld->streams[k].on;
	}
	ld->arrays_unread = ld->arrays_found > on;
}

/* One element, parsed on its own from the bytes the cursor goes over. */
struct element {
	struct json_tokener *tok;
	struct json_object *obj; /* NULL for a JSON null too */
	bool done, bad;
	/* Its bytes and the cursor's counts before it, against max. */
	struct jscan *s;
	uint64_t fed, max;
	struct jscan_counts base;
	bool over;
	uint64_t end, nomem_at; /* where it ends (NOWHERE: not yet read); where json-c gave up */
};

static int feed_element(void *ctx, uint64_t off, const char *p, size_t n)
{
	struct element *e = ctx;
	enum json_tokener_error jerr;
	size_t k, end;

	e->fed += n;
	if (tree_size(e->s, &e->base, e->fed) > e->max) {
		e->over = true;
		return -EFBIG;
	}
	while (n && !e->bad) {
		k = n < FEED_MAX ? n : FEED_MAX;
		/* Bytes after a whole value: json-c stopped short of the structure's end. */
		if (e->done) {
			e->nomem_at = off;
			return -ENOMEM;
		}
		e->obj = json_tokener_parse_ex(e->tok, p, (int)k);
		jerr = json_tokener_get_error(e->tok);
		e->done = jerr == json_tokener_success;
		end = json_tokener_get_parse_end(e->tok);
		if (e->done && off + end < e->end) {
			json_object_put(e->obj);
			e->obj = NULL;
			e->nomem_at = off + end;
			return -ENOMEM;
		}
		if (jerr != json_tokener_continue && !e->done)
			e->bad = true;
		p += k;
		off += k;
		n -= k;
	}
	return e->bad ? -EINVAL : 0;
}

/*
 * The element at the cursor into *obj (NULL: a JSON null); -EINVAL (not
 * JSON), -EFBIG (e->over), -ENOMEM (e->nomem_at when json-c gave up), -errno.
 */
static int next_element(struct jscan *s, struct element *e, struct json_object **obj)
{
	int err, untap;

	json_tokener_reset(e->tok);
	e->obj = NULL;
	e->done = false;
	e->bad = false;
	e->s = s;
	e->fed = 0;
	e->end = NOWHERE;
	jscan__counts(s, &e->base);
	jscan__tap(s, feed_element, e);
	err = jscan__skip_value(s);
	/* The structure's end: json-c's must be the same. */
	e->end = jscan__tell(s);
	untap = jscan__untap(s);
	err = err ? err : untap;
	/* A number ends at what follows it: a blank says it did. */
	if (!err && !e->done && !e->bad) {
		e->obj = json_tokener_parse_ex(e->tok, " ", 1);
		e->done = json_tokener_get_error(e->tok) == json_tokener_success;
		e->bad = !e->done;
	}
	*obj = e->obj;
	if (!err && !e->bad)
		return 0;
	json_object_put(e->obj);
	*obj = NULL;
	return !err || err == -E2BIG ? -EINVAL : err;
}

/* An element that is JSON as far as it was read, but was not read: why. */
static void element_failed(struct loader *ld, const struct element *e, int err, enum stream_id id,
			   size_t idx)
{
	char what[96];

	if (ld->failed)
		return;
	if (err == -EFBIG && e->over) {
		if (idx == SIZE_MAX)
			snprintf(what, sizeof(what), "an element of %s", report_stream_paths[id]);
		else
			snprintf(what, sizeof(what), "%s[%zu]", report_stream_paths[id], idx);
		too_large(ld, what, true);
	} else if (err == -ENOMEM && e->nomem_at != NOWHERE) {
		gave_up_at(ld, e->nomem_at);
	} else {
		read_error(ld, err);
	}
}

size_t loader__stream_each(struct loader *ld, enum stream_id id,
			   void (*fn)(struct loader *ld, struct json_object *o, size_t idx,
				      void *arg),
			   void *arg)
{
	struct stream *st = &ld->streams[id];
	struct element e = { 0 };
	struct jscan *s = ld->scan;
	struct json_object *o;
	uint64_t at = st->begin;
	size_t n = 0;
	int c, err = 0;

	if (ld->failed)
		return 0;
	e.max = element_max(ld);
	e.nomem_at = NOWHERE;
	/* As deep as the element is in the document: the same depth limit. */
	e.tok = tokener(REPORT_JSON_DEPTH - st->nesting - 1);
	if (!e.tok) {
		loader__nomem(ld);
		return 0;
	}
	jscan__seek(s, st->begin);
	c = jscan__peek(s);
	if (c == '[') {
		jscan__take(s);
		c = jscan__peek(s);
	} else {
		err = -EINVAL;
	}
	if (!err && c == ']')
		jscan__take(s);
	else
		while (!err && !ld->failed) {
			at = jscan__tell(s);
			err = next_element(s, &e, &o);
			if (err)
				break;
			ld->elem_at = at;
			if (fn)
				fn(ld, o, n, arg);
			if (!ld->no_gaps)
				loader__walk_element_gaps(ld, id, o, n);
			json_object_put(o);
			n++;
			c = jscan__peek(s);
			if (c == ',' || c == ']')
				jscan__take(s);
			if (c == ']')
				break;
			if (c != ',')
				err = c < 0 && c != -ENODATA ? c : -EINVAL;
		}
	json_tokener_free(e.tok);
	if (!err && !ld->failed && n != st->count)
		err = -EINVAL;
	if (err == -EINVAL && !ld->failed) {
		ld->not_json = true;
		ld->not_json_at = at;
		ld->failed = -EINVAL;
	} else if (err) {
		element_failed(ld, &e, err, id, n);
	}
	return ld->failed ? 0 : n;
}

int loader__element_at(struct loader *ld, enum stream_id id, uint64_t at, struct json_object **obj)
{
	struct element e = { 0 };
	int err;

	*obj = NULL;
	if (ld->failed)
		return ld->failed;
	e.max = element_max(ld);
	e.nomem_at = NOWHERE;
	e.tok = tokener(REPORT_JSON_DEPTH - ld->streams[id].nesting - 1);
	if (!e.tok)
		return loader__nomem(ld);
	jscan__seek(ld->scan, at);
	err = next_element(ld->scan, &e, obj);
	json_tokener_free(e.tok);
	if (err == -EINVAL) {
		ld->not_json = true;
		ld->not_json_at = at;
		ld->failed = -EINVAL;
	} else if (err) {
		/* Its index is its list's, not known here: read once already, it changed since. */
		element_failed(ld, &e, err, id, SIZE_MAX);
	}
	return ld->failed;
}

size_t loader__stream_count(struct loader *ld, enum stream_id id)
{
	return ld->streams[id].count;
}

int loader__check_range(struct loader *ld, struct jscan *s)
{
	uint64_t at = jscan__range_at(s);
	char path[256], num[48];
	int64_t len;
	int err;

	if (ld->failed || at == NOWHERE)
		return ld->failed;
	err = jscan__path_at(s, at, path, sizeof(path));
	jscan__seek(s, at);
	len = err ? err : jscan__scalar(s, num, sizeof(num));
	if (len == -EINVAL || len == -E2BIG) {
		/* Not where the pass found it: the file changed since. */
		ld->failed = -EINVAL;
		snprintf(ld->err, ld->errlen, "changed while it was read");
		return ld->failed;
	}
	if (len < 0) {
		read_error(ld, (int)len);
		return ld->failed;
	}
	if ((size_t)len < sizeof(num))
		loader__fail(ld, "%s: %s is out of range (%s %s)", *path ? path : "the document",
			     num, num[0] == '-' ? "at least" : "at most",
			     num[0] == '-' ? JSCAN_INT_MIN : JSCAN_INT_MAX);
	else
		loader__fail(ld, "%s: an integer of %" PRId64 " digits is out of range (%s %s)",
			     *path ? path : "the document", len - (num[0] == '-'),
			     num[0] == '-' ? "at least" : "at most",
			     num[0] == '-' ? JSCAN_INT_MIN : JSCAN_INT_MAX);
	return ld->failed;
}

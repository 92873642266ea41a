// SPDX-License-Identifier: MIT
/* Container names from a JSON file, reread when it changes. See cgnames.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#include "host/cgnames.h"

/* Whatever writes the file is not trusted to keep it small. */
#define NAMES_FILE_MAX (16u << 20)
#define NAMES_JSON_DEPTH 8

struct cname {
	char id[CGNAMES_ID_LEN + 1];
	char *name;
};

/* What the file was when it was last read, or failed to be. */
struct file_key {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int err; /* stat's -errno: no other field is set */
};

struct cgnames {
	char *path;
	struct cname *v; /* sorted by id */
	size_t nr;
	struct file_key seen;
};

static bool is_id(const char *s)
{
	size_t i;

	for (i = 0; i < CGNAMES_ID_LEN; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return !s[i];
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cname *)a)->id, ((const struct cname *)b)->id);
}

static void names_free(struct cname *v, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(v[i].name);
	free(v);
}

static int read_all(int fd, char *buf, size_t size, size_t *len)
{
	ssize_t r;

	*len = 0;
	while (*len < size) {
		r = read(fd, buf + *len, size - *len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
		*len += (size_t)r;
	}
	return 0;
}

static int parse_text(const char *text, size_t len, struct json_object **root, char *err,
		      size_t errlen)
{
	struct json_tokener *tok;
	enum json_tokener_error jerr;
	size_t end;

	*root = NULL;
	if (!len) {
		snprintf(err, errlen, "is empty");
		return -EINVAL;
	}
	tok = json_tokener_new_ex(NAMES_JSON_DEPTH);
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	*root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_success) {
		while (end < len && strchr(" \t\r\n", text[end]))
			end++;
		if (end < len)
			jerr = json_tokener_error_parse_unexpected;
	}
	json_tokener_free(tok);
	if (jerr == json_tokener_success)
		return 0;
	json_object_put(*root);
	*root = NULL;
	if (jerr == json_tokener_continue)
		snprintf(err, errlen, "is not JSON: it ends in the middle of a value");
	else
		snprintf(err, errlen, "is not JSON: %s at byte %zu", json_tokener_error_desc(jerr),
			 end);
	return -EINVAL;
}

/* {"id": "name", ...} into a sorted table; err says what is wrong with it. */
/* s cut to size - 1 bytes, each control byte (and DEL) as '?'. */
static void printable(char *out, size_t size, const char *s)
{
	size_t i;

	for (i = 0; i + 1 < size && s[i]; i++)
		out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	out[i] = 0;
}

static int names_from_json(struct json_object *root, struct cname **out, size_t *nr, char *err,
			   size_t errlen)
{
	struct cname *v = NULL;
	size_t n = 0;
	int ret = 0;

	if (!json_object_is_type(root, json_type_object)) {
		snprintf(err, errlen, "is not a JSON object");
		return -EINVAL;
	}
	if (json_object_object_length(root) > CGNAMES_MAX) {
		snprintf(err, errlen, "names more than %d containers", CGNAMES_MAX);
		return -E2BIG;
	}
	v = calloc((size_t)json_object_object_length(root) ?: 1, sizeof(*v));
	if (!v) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	json_object_object_foreach(root, key, val) {
		const char *name = json_object_get_string(val);
		char shown[81];

		/* The key as one printable line: the message is one line on stderr. */
		printable(shown, sizeof(shown), key);
		if (!is_id(key)) {
			snprintf(err, errlen,
				 "key \"%s\" is not a container id (64 lowercase hex digits)",
				 shown);
			ret = -EINVAL;
			break;
		}
		if (!json_object_is_type(val, json_type_string) || !name[0] ||
		    strlen(name) >= CGNAMES_NAME_MAX) {
			snprintf(err, errlen, "the name of %.12s is not a string of 1 to %d bytes",
				 shown, CGNAMES_NAME_MAX - 1);
			ret = -EINVAL;
			break;
		}
		memcpy(v[n].id, key, CGNAMES_ID_LEN + 1);
		v[n].name = strdup(name);
		if (!v[n].name) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			break;
		}
		n++;
	}
	if (ret) {
		names_free(v, n);
		return ret;
	}
	if (n)
		qsort(v, n, sizeof(*v), name_cmp);
	*out = v;
	*nr = n;
	return 0;
}

/*
 * Reads the names file into a new table; *key is what it was when read.
 * err gets the path and what is wrong, and what to do.
 */
static int names_load(const char *path, struct cname **out, size_t *nr, struct file_key *key,
		      char *err, size_t errlen)
{
	char why[192] = "", *text = NULL;
	struct json_object *root = NULL;
	struct stat st;
	size_t len;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, sizeof(why), "%s", strerror(-ret));
		goto cleanup;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(why, sizeof(why), "%s", strerror(-ret));
		goto cleanup;
	}
	*key = (struct file_key){ st.st_dev, st.st_ino, st.st_size, st.st_mtim, 0 };
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		snprintf(why, sizeof(why), "is not a regular file");
		goto cleanup;
	}
	if ((uint64_t)st.st_size > NAMES_FILE_MAX) {
		ret = -EFBIG;
		snprintf(why, sizeof(why), "is larger than %u MiB", NAMES_FILE_MAX >> 20);
		goto cleanup;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		ret = -ENOMEM;
		snprintf(why, sizeof(why), "out of memory");
		goto cleanup;
	}
	ret = read_all(fd, text, (size_t)st.st_size, &len);
	if (ret) {
		snprintf(why, sizeof(why), "%s", strerror(-ret));
		goto cleanup;
	}
	ret = parse_text(text, len, &root, why, sizeof(why));
	if (!ret)
		ret = names_from_json(root, out, nr, why, sizeof(why));
cleanup:
	if (ret)
		snprintf(err, errlen,
			 "'%s': %s; give a readable file holding a JSON object of container "
			 "ids to names, {\"<64 hex digits>\": \"name\", ...}",
			 path, why);
	json_object_put(root);
	free(text);
	if (fd >= 0)
		close(fd);
	return ret;
}

static bool key_equal(const struct file_key *a, const struct file_key *b)
{
	return a->err == b->err && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

int cgnames__refresh(struct cgnames *c, char *errbuf, size_t errlen)
{
	struct file_key now = { 0 };
	struct cname *v = NULL;
	size_t nr = 0;
	struct stat st;
	int err;

	if (stat(c->path, &st))
		now.err = -errno;
	else
		now = (struct file_key){ st.st_dev, st.st_ino, st.st_size, st.st_mtim, 0 };
	if (key_equal(&now, &c->seen))
		return 0;
	/* Once per change, whatever the outcome: a bad file is reported once. */
	c->seen = now;
	if (now.err) {
		snprintf(errbuf, errlen, "'%s': %s", c->path, strerror(-now.err));
		return now.err;
	}
	err = names_load(c->path, &v, &nr, &c->seen, errbuf, errlen);
	if (err)
		return err;
	names_free(c->v, c->nr);
	c->v = v;
	c->nr = nr;
	return 1;
}

int cgnames__load(struct cgnames **out, const char *path, char *errbuf, size_t errlen)
{
	struct cgnames *c;
	int err;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	c->path = strdup(path);
	if (!c->path) {
		snprintf(errbuf, errlen, "out of memory");
		err = -ENOMEM;
		goto cleanup;
	}
	err = names_load(c->path, &c->v, &c->nr, &c->seen, errbuf, errlen);
	if (err)
		goto cleanup;
	*out = c;
	return 0;
cleanup:
	cgnames__free(c);
	return err;
}

const char *cgnames__find(const struct cgnames *c, const char *id)
{
	const struct cname *hit;
	struct cname k;

	if (!c || !c->nr || strlen(id) != CGNAMES_ID_LEN)
		return NULL;
	memcpy(k.id, id, sizeof(k.id));
	hit = bsearch(&k, c->v, c->nr, sizeof(*c->v), name_cmp);
	return hit ? hit->name : NULL;
}

size_t cgnames__count(const struct cgnames *c)
{
	return c ? c->nr : 0;
}

void cgnames__free(struct cgnames *c)
{
	if (!c)
		return;
	names_free(c->v, c->nr);
	free(c->path);
	free(c);
}

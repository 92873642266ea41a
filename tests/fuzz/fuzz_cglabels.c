// SPDX-License-Identifier: MIT
/*
 * Labels from cgroup paths and the container names file. The first byte
 * picks one:
 *   0  cglabels__from_path on the rest (up to its first NUL): each label it
 *      finds has the documented form and comes from one component of the
 *      path (unit and container id as written; the pod UID with '_' read
 *      as '-'), and what it does not find is empty
 *   1  cglabels__parse_list on the rest: 0 only for comma-separated words
 *      unit, container, pod, all
 *   2  cgnames__load on a file holding the rest: on 0 every name is found
 *      by its id; otherwise one line naming the file
 */
#include <errno.h>
#include <limits.h>
#include <json-c/json.h>

#include "fuzz.h"
#include "serve/cglabels.h"
#include "host/cgnames.h"

static bool lower_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", s[i]) || !s[i])
			return false;
	return true;
}

/* A component of path (between slashes) equal to want, or ending in it after c. */
static bool in_component(const char *path, const char *want, char before, bool whole)
{
	size_t wl = strlen(want);
	const char *at;

	for (at = path; (at = strstr(at, want)); at++) {
		bool ends = !at[wl] || at[wl] == '/';
		bool starts = at == path || at[-1] == '/';

		if (whole ? (starts && ends) : (at > path && at[-1] == before))
			return true;
	}
	return false;
}

static void check_path(const char *path)
{
	struct cgpath_labels v;
	unsigned int found = cglabels__from_path(path, &v);
	char uid[CGLABELS_UID_MAX];
	size_t i, n;

	FUZZ_CHECK(!(found & ~CGLABELS_ALL));
	FUZZ_CHECK(!!(found & CGLABELS_UNIT) == !!v.unit[0]);
	FUZZ_CHECK(!!(found & CGLABELS_CONTAINER) == !!v.container_id[0]);
	FUZZ_CHECK(!!(found & CGLABELS_POD) == !!v.pod_uid[0]);
	FUZZ_CHECK(!!(found & CGLABELS_POD) == !!v.qos);
	if (found & CGLABELS_UNIT)
		FUZZ_CHECK(in_component(path, v.unit, 0, true) && strlen(v.unit) < 256);
	if (found & CGLABELS_CONTAINER) {
		FUZZ_CHECK(strlen(v.container_id) == 64 && lower_hex(v.container_id, 64));
		FUZZ_CHECK(strstr(path, v.container_id));
	}
	if (found & CGLABELS_POD) {
		n = strlen(v.pod_uid);
		FUZZ_CHECK(n == 32 || n == 36);
		FUZZ_CHECK(!strcmp(v.qos, "Guaranteed") || !strcmp(v.qos, "Burstable") ||
			   !strcmp(v.qos, "BestEffort"));
		for (i = 0; i < n; i++)
			FUZZ_CHECK(n == 36 && (i == 8 || i == 13 || i == 18 || i == 23) ?
					   v.pod_uid[i] == '-' :
					   lower_hex(&v.pod_uid[i], 1));
		/* As written: the same with '-' or, from the systemd driver, '_'. */
		memcpy(uid, v.pod_uid, n + 1);
		if (!in_component(path, uid, 'd', false)) {
			for (i = 0; i < n; i++)
				uid[i] = uid[i] == '-' ? '_' : uid[i];
			FUZZ_CHECK(strstr(path, uid));
		}
	}
}

static void check_list(const char *s)
{
	unsigned int mask = 0xff;
	char bad[80];
	const char *w = s;
	bool ok = true;
	size_t n;

	for (;;) {
		n = strcspn(w, ",");
		if (!((n == 4 && !memcmp(w, "unit", 4)) || (n == 9 && !memcmp(w, "container", 9)) ||
		      (n == 3 && !memcmp(w, "pod", 3)) || (n == 3 && !memcmp(w, "all", 3))))
			ok = false;
		if (!w[n])
			break;
		w += n + 1;
	}
	FUZZ_CHECK((cglabels__parse_list(s, &mask, bad, sizeof(bad)) == 0) == ok);
	FUZZ_CHECK(ok ? mask && !(mask & ~CGLABELS_ALL) : mask == 0);
}

static void check_names(const uint8_t *data, size_t size)
{
	const char *root = fuzz_tmp_root();
	struct json_object *o;
	struct cgnames *c = NULL;
	char path[PATH_MAX], err[512] = "";
	int ret;

	snprintf(path, sizeof(path), "%s/names.json", root);
	fuzz_put(root, "names.json", data, size);
	ret = cgnames__load(&c, path, err, sizeof(err));
	if (ret) {
		FUZZ_CHECK(!c && ret < 0 && strstr(err, path) && !strchr(err, '\n'));
		return;
	}
	/* What loaded is an object of ids to names, each found again. */
	o = json_object_from_file(path);
	FUZZ_CHECK(o && json_object_is_type(o, json_type_object));
	FUZZ_CHECK(cgnames__count(c) == (size_t)json_object_object_length(o));
	json_object_object_foreach(o, key, val) {
		const char *name = cgnames__find(c, key);

		FUZZ_CHECK(name && !strcmp(name, json_object_get_string(val)));
	}
	json_object_put(o);
	cgnames__free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 1)
		return 0;
	if (data[0] % 3 == 2) {
		check_names(data + 1, size - 1);
		return 0;
	}
	s = strndup((const char *)data + 1, size - 1);
	if (!s)
		return 0;
	if (data[0] % 3 == 0)
		check_path(s);
	else
		check_list(s);
	free(s);
	return 0;
}

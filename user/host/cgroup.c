// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host/cgroup.h"
#include "lib/fsutil.h"

#define MOUNTINFO "/proc/self/mountinfo"
#define MAX_FIELDS 64

struct cg_mount {
	bool found; /* any mount of the hierarchy */
	bool reachable; /* one whose root contains the cgroup */
	char root[PATH_MAX];
	char point[PATH_MAX];
};

/* One level's limit: unbounded, or quota/period as thousandths of a CPU. */
struct cg_level {
	bool limited;
	uint64_t milli;
};

/* True when the sep-separated list holds word exactly ("cpu" is not "cpuacct"). */
static bool list_has(const char *list, char sep, const char *word)
{
	size_t wlen = strlen(word);
	const char *p = list;

	while (p && *p) {
		const char *end = strchr(p, sep);
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == wlen && !strncmp(p, word, wlen))
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

/* mountinfo escapes ' ', '\t', '\n' and '\\' as \ooo octal. */
static void unescape_octal(char *s)
{
	char *out = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
			s += 4;
		} else {
			*out++ = *s++;
		}
	}
	*out = '\0';
}

static FILE *open_under(const char *root, const char *rel, int *err)
{
	char path[PATH_MAX];
	FILE *f;
	int ret;

	ret = fsutil__path(path, sizeof(path), root, "%s", rel);
	if (ret < 0) {
		*err = ret;
		return NULL;
	}
	f = fopen(path, "re");
	if (!f)
		*err = -errno;
	return f;
}

struct mountinfo_line {
	char *root;
	char *point;
	char *fstype;
	char *super;
};

/* Splits one mountinfo line in place; false when it is malformed. */
static bool mountinfo_line__parse(char *line, struct mountinfo_line *m)
{
	char *fields[MAX_FIELDS], *save = NULL, *tok;
	int n = 0, i;

	line[strcspn(line, "\n")] = '\0';
	for (tok = strtok_r(line, " ", &save); tok && n < MAX_FIELDS;
	     tok = strtok_r(NULL, " ", &save))
		fields[n++] = tok;
	/* id parent maj:min root point options [optional...] - fstype source [super] */
	for (i = 6; i < n; i++) {
		if (!strcmp(fields[i], "-"))
			break;
	}
	if (i + 2 >= n)
		return false;
	m->root = fields[3];
	m->point = fields[4];
	m->fstype = fields[i + 1];
	m->super = i + 3 < n ? fields[i + 3] : "";
	unescape_octal(m->root);
	unescape_octal(m->point);
	return true;
}

enum cgroup_mode cgroup_mode__detect(const char *root)
{
	struct mountinfo_line m;
	bool v1 = false, v2 = false;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int err;

	f = open_under(root, MOUNTINFO, &err);
	if (!f)
		return CGROUP_MODE_UNKNOWN;
	while (getline(&line, &cap, f) > 0) {
		if (!mountinfo_line__parse(line, &m))
			continue;
		if (!strcmp(m.fstype, "cgroup"))
			v1 = true;
		else if (!strcmp(m.fstype, "cgroup2"))
			v2 = true;
	}
	free(line);
	fclose(f);
	if (v1 && v2)
		return CGROUP_MODE_HYBRID;
	if (v1)
		return CGROUP_MODE_V1;
	if (v2)
		return CGROUP_MODE_V2;
	return CGROUP_MODE_UNKNOWN;
}

const char *cgroup_mode__name(enum cgroup_mode mode)
{
	switch (mode) {
	case CGROUP_MODE_V1:
		return "v1";
	case CGROUP_MODE_V2:
		return "v2";
	case CGROUP_MODE_HYBRID:
		return "hybrid";
	default:
		return "unknown";
	}
}

/* True when prefix is "/" or a whole-component ancestor of (or equal to) path. */
static bool path_below(const char *path, const char *prefix)
{
	size_t len = strlen(prefix);

	if (!strcmp(prefix, "/"))
		return true;
	while (len > 1 && prefix[len - 1] == '/')
		len--;
	return !strncmp(path, prefix, len) && (path[len] == '\0' || path[len] == '/');
}

static size_t root_len(const char *prefix)
{
	size_t len = strlen(prefix);

	while (len && prefix[len - 1] == '/')
		len--;
	return len;
}

/*
 * The mount of the target's hierarchy whose root is the deepest ancestor of
 * the cgroup path (bind mounts of sub-trees are common in containers).
 */
static int find_mount(const char *root, bool v1, const char *cg_path, struct cg_mount *mnt)
{
	struct mountinfo_line m;
	size_t best = 0, cap = 0;
	char *line = NULL;
	FILE *f;
	int err = 0;

	memset(mnt, 0, sizeof(*mnt));
	f = open_under(root, MOUNTINFO, &err);
	if (!f)
		return err;
	while (getline(&line, &cap, f) > 0) {
		size_t len;

		if (!mountinfo_line__parse(line, &m))
			continue;
		if (v1 ? strcmp(m.fstype, "cgroup") || !list_has(m.super, ',', "cpu") :
			 strcmp(m.fstype, "cgroup2"))
			continue;
		mnt->found = true;
		if (!path_below(cg_path, m.root))
			continue;
		len = root_len(m.root) + 1;
		if (mnt->reachable && len <= best)
			continue;
		if (strlen(m.root) >= sizeof(mnt->root) || strlen(m.point) >= sizeof(mnt->point))
			continue;
		strcpy(mnt->root, m.root);
		strcpy(mnt->point, m.point);
		mnt->reachable = true;
		best = len;
	}
	free(line);
	fclose(f);
	return 0;
}

/*
 * The cpu hierarchy's cgroup of pid: the v1 line whose controllers include
 * "cpu", else the v2 "0::" line. Returns 0, -ENOENT when there is neither,
 * or -errno.
 */
static int read_pid_cgroup(const char *root, pid_t pid, bool *v1, char *out, size_t size)
{
	char rel[64], *line = NULL;
	bool have_v2 = false, have_v1 = false;
	size_t cap = 0;
	FILE *f;
	int err = 0;

	snprintf(rel, sizeof(rel), "/proc/%d/cgroup", (int)pid);
	f = open_under(root, rel, &err);
	if (!f)
		return err;
	while (!have_v1 && getline(&line, &cap, f) > 0) {
		char *c1 = strchr(line, ':'), *c2, *path;

		if (!c1 || !(c2 = strchr(c1 + 1, ':')))
			continue;
		*c1 = *c2 = '\0';
		path = c2 + 1;
		path[strcspn(path, "\n")] = '\0';
		if (path[0] != '/')
			continue;
		if (!strcmp(line, "0") && c2 == c1 + 1) {
			if (have_v2)
				continue;
			have_v2 = true;
		} else if (list_has(c1 + 1, ',', "cpu")) {
			have_v1 = true;
		} else {
			continue;
		}
		if (strlen(path) >= size) {
			err = -ENAMETOOLONG;
			break;
		}
		strcpy(out, path);
	}
	free(line);
	fclose(f);
	if (err)
		return err;
	if (!have_v1 && !have_v2)
		return -ENOENT;
	*v1 = have_v1;
	return 0;
}

static int read_level_v2(const char *dir, struct cg_level *lvl)
{
	char buf[64], *sp;
	uint64_t quota, period;
	int n;

	n = fsutil__read_file(dir, "cpu.max", buf, sizeof(buf));
	if (n == -EFBIG)
		return -EINVAL;
	if (n < 0)
		return n;
	if (memchr(buf, '\0', (size_t)n))
		return -EINVAL;
	sp = strchr(buf, ' ');
	if (!sp)
		return -EINVAL;
	*sp = '\0';
	if (fsutil__parse_u64(sp + 1, &period) || !period)
		return -EINVAL;
	if (!strcmp(buf, "max")) {
		lvl->limited = false;
		return 0;
	}
	if (fsutil__parse_u64(buf, &quota) || strchr(buf, '\n'))
		return -EINVAL;
	lvl->limited = milli_ratio(quota, period, &lvl->milli);
	return lvl->limited ? 0 : -EINVAL;
}

static int read_level_v1(const char *dir, struct cg_level *lvl)
{
	uint64_t period;
	int64_t quota;
	int err;

	err = fsutil__read_s64(dir, "cpu.cfs_quota_us", &quota);
	if (err)
		return err;
	if (quota == -1) {
		lvl->limited = false;
		return 0;
	}
	if (quota < 0)
		return -EINVAL;
	err = fsutil__read_u64(dir, "cpu.cfs_period_us", &period);
	if (err == -ENOENT)
		return -EINVAL; /* a quota without its period is malformed */
	if (err)
		return err;
	if (!period)
		return -EINVAL;
	lvl->limited = milli_ratio((uint64_t)quota, period, &lvl->milli);
	return lvl->limited ? 0 : -EINVAL;
}

static int set_result(struct sev_u64 *out, int err)
{
	if (err == -EOPNOTSUPP)
		*out = sev_u64__gap(EV_SRC_SYSFS_CGROUP, EV_GAP_UNSUPPORTED);
	else
		*out = sev_u64__gap(EV_SRC_SYSFS_CGROUP, fsutil__errno_gap(err));
	return err;
}

/* Walks from the cgroup's directory up to the mount root, keeping the smallest limit. */
static int walk_levels(const char *root, bool v1, const struct cg_mount *mnt, const char *cg_path,
		       struct sev_u64 *out)
{
	char dir[PATH_MAX], rel[PATH_MAX], buf[4096];
	bool seen = false, limited = false;
	uint64_t min_milli = UINT64_MAX;
	struct stat st;
	size_t len;
	int err;

	/* The cgroup relative to the mount's root: "" is the mount point itself. */
	len = strcmp(mnt->root, "/") ? root_len(mnt->root) : 0;
	if (snprintf(rel, sizeof(rel), "%s", cg_path + len) >= (int)sizeof(rel))
		return set_result(out, -ENAMETOOLONG);
	len = strlen(rel);
	while (len && rel[len - 1] == '/')
		rel[--len] = '\0';

	err = fsutil__path(dir, sizeof(dir), root, "%s%s", mnt->point, rel);
	if (err < 0)
		return set_result(out, err);
	if (stat(dir, &st))
		return set_result(out, -errno);
	if (!S_ISDIR(st.st_mode))
		return set_result(out, -ENOTDIR);

	for (;;) {
		struct cg_level lvl = { 0 };
		char *slash;

		err = fsutil__path(dir, sizeof(dir), root, "%s%s", mnt->point, rel);
		if (err < 0)
			return set_result(out, err);
		err = v1 ? read_level_v1(dir, &lvl) : read_level_v2(dir, &lvl);
		/* A level without the file sets no limit (v2 root; controller not enabled). */
		if (err && err != -ENOENT)
			return set_result(out, err);
		if (!err) {
			seen = true;
			if (lvl.limited) {
				limited = true;
				if (lvl.milli < min_milli)
					min_milli = lvl.milli;
			}
		}
		if (!rel[0])
			break;
		slash = strrchr(rel, '/');
		*slash = '\0';
	}

	if (limited) {
		*out = sev_u64__recorded(min_milli, EV_SRC_SYSFS_CGROUP);
		return 0;
	}
	if (seen) {
		*out = sev_u64__gap(EV_SRC_SYSFS_CGROUP, EV_GAP_UNAVAILABLE);
		return 0;
	}
	/* v1 without cpu.cfs_quota_us anywhere: no CFS bandwidth control. */
	if (v1)
		return set_result(out, -EOPNOTSUPP);
	/* v2 without cpu.max anywhere: unbounded if the controller exists at all. */
	err = fsutil__path(dir, sizeof(dir), root, "%s", mnt->point);
	if (err < 0)
		return set_result(out, err);
	err = fsutil__read_file(dir, "cgroup.controllers", buf, sizeof(buf));
	if (err == -ENOENT)
		return set_result(out, -EOPNOTSUPP);
	if (err < 0)
		return set_result(out, err);
	buf[strcspn(buf, "\n")] = '\0';
	if (!list_has(buf, ' ', "cpu"))
		return set_result(out, -EOPNOTSUPP);
	*out = sev_u64__gap(EV_SRC_SYSFS_CGROUP, EV_GAP_UNAVAILABLE);
	return 0;
}

int cgroup__cpu_quota(const char *root, pid_t pid, struct sev_u64 *out, char *cgroup_path,
		      size_t path_size)
{
	char cg_path[PATH_MAX], rel[64], dir[PATH_MAX];
	struct cg_mount *mnt;
	struct stat st;
	bool v1 = false;
	int err;

	if (cgroup_path && path_size)
		cgroup_path[0] = '\0';
	if (!out)
		return -EINVAL;
	if (pid <= 0)
		return set_result(out, -EINVAL);

	err = read_pid_cgroup(root, pid, &v1, cg_path, sizeof(cg_path));
	if (err == -ENOENT) {
		/* /proc/PID without a cgroup file: a kernel without cgroups. */
		snprintf(rel, sizeof(rel), "/proc/%d", (int)pid);
		if (fsutil__path(dir, sizeof(dir), root, "%s", rel) >= 0 && !stat(dir, &st))
			return set_result(out, -EOPNOTSUPP);
		return set_result(out, -ESRCH);
	}
	if (err)
		return set_result(out, err);
	if (cgroup_path && strlen(cg_path) < path_size)
		strcpy(cgroup_path, cg_path);

	mnt = malloc(sizeof(*mnt));
	if (!mnt)
		return set_result(out, -ENOMEM);
	err = find_mount(root, v1, cg_path, mnt);
	if (err)
		err = set_result(out, err);
	else if (!mnt->found)
		/* v1 lists cpu but it is not mounted, or no cgroup2 to look in. */
		err = set_result(out, v1 ? -ENOENT : -EOPNOTSUPP);
	else if (!mnt->reachable)
		err = set_result(out, -ENOENT); /* another namespace's cgroup */
	else
		err = walk_levels(root, v1, mnt, cg_path, out);
	free(mnt);
	return err;
}

int cgroup__v2_mount(const char *root, char *out, size_t size)
{
	struct mountinfo_line m;
	char *line = NULL;
	size_t cap = 0;
	int err = -ENOENT;
	FILE *f;

	f = open_under(root, MOUNTINFO, &err);
	if (!f)
		return err;
	err = -ENOENT;
	while (getline(&line, &cap, f) > 0) {
		if (!mountinfo_line__parse(line, &m) || strcmp(m.fstype, "cgroup2") ||
		    strcmp(m.root, "/"))
			continue;
		err = fsutil__path(out, size, root, "%s", m.point);
		break;
	}
	free(line);
	fclose(f);
	return err < 0 ? err : 0;
}

int cgroup__normalize_path(char *path)
{
	char *out = path, *in = path;
	size_t n;

	if (path[0] != '/')
		return -EINVAL;
	/* out holds "" or "/a/b" so far; in walks the components. */
	for (;;) {
		while (*in == '/')
			in++;
		if (!*in)
			break;
		n = strcspn(in, "/");
		if (n == 1 && in[0] == '.') {
			/* the cgroup itself */
		} else if (n == 2 && in[0] == '.' && in[1] == '.') {
			if (out == path)
				return -ERANGE;
			while (*--out != '/')
				;
		} else {
			*out++ = '/';
			memmove(out, in, n);
			out += n;
		}
		in += n;
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
	return 0;
}

bool cgroup__strip_mount(char *path, const char *point)
{
	size_t n = strlen(point);

	while (n && point[n - 1] == '/')
		n--;
	/* A cgroup2 mount at "/" would make every path its own. */
	if (!n || strncmp(path, point, n) || (path[n] && path[n] != '/'))
		return false;
	if (!path[n])
		path[1] = '\0';
	else
		memmove(path, path + n, strlen(path + n) + 1);
	path[0] = '/';
	return true;
}

/* Normalized: no empty, "." or ".." component, no trailing '/' but the root's. */
static bool path_is_normal(const char *path)
{
	const char *p = path;
	size_t n;

	if (path[0] != '/')
		return false;
	if (!path[1])
		return true;
	while (*p == '/') {
		p++;
		n = strcspn(p, "/");
		if (!n || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
	}
	return true;
}

int cgroup__v2_id(const char *mount, const char *path, uint64_t *id, uint32_t *level)
{
	char full[PATH_MAX];
	const char *p;
	struct stat st;
	uint32_t depth = 0;

	/* The depth is counted from the spelling: "/a/." would be taken for depth 2. */
	if (!path_is_normal(path))
		return -EINVAL;
	if (snprintf(full, sizeof(full), "%s%s", mount, path) >= (int)sizeof(full))
		return -ENAMETOOLONG;
	if (stat(full, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	for (p = path; *p; p++)
		depth += *p == '/' && p[1];
	*id = (uint64_t)st.st_ino;
	*level = depth;
	return 0;
}

struct names_walk {
	struct cgroup_name *v;
	size_t nr, cap, max;
	uint64_t dropped;
	size_t prefix;
};

static int walk_dir(struct names_walk *w, char *path, size_t len)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int err = 0;

	if (stat(path, &st))
		return 0; /* removed meanwhile */
	if (w->nr == w->max) {
		w->dropped++;
	} else {
		if (w->nr == w->cap) {
			size_t cap = w->cap ? w->cap * 2 : 64;
			struct cgroup_name *grown = realloc(w->v, cap * sizeof(*w->v));

			if (!grown)
				return -ENOMEM;
			w->v = grown;
			w->cap = cap;
		}
		w->v[w->nr].id = (uint64_t)st.st_ino;
		w->v[w->nr].path = strdup(len > w->prefix ? path + w->prefix : "/");
		if (!w->v[w->nr].path)
			return -ENOMEM;
		w->nr++;
	}
	d = opendir(path);
	if (!d)
		return 0;
	while (!err && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (len + 1 + n >= PATH_MAX) {
			w->dropped++;
			continue;
		}
		path[len] = '/';
		memcpy(path + len + 1, de->d_name, n + 1);
		err = walk_dir(w, path, len + 1 + n);
		path[len] = '\0';
	}
	closedir(d);
	return err;
}

static int name_cmp(const void *a, const void *b)
{
	const struct cgroup_name *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

int cgroup_names__scan(const char *mount, size_t max, struct cgroup_name **out, size_t *nr,
		       uint64_t *dropped)
{
	struct names_walk w = { .max = max };
	char path[PATH_MAX];
	int err;

	if (snprintf(path, sizeof(path), "%s", mount) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	w.prefix = strlen(path);
	while (w.prefix > 1 && path[w.prefix - 1] == '/')
		path[--w.prefix] = '\0';
	err = walk_dir(&w, path, w.prefix);
	if (err) {
		cgroup_names__free(w.v, w.nr);
		return err;
	}
	if (w.nr)
		qsort(w.v, w.nr, sizeof(*w.v), name_cmp);
	*out = w.v;
	*nr = w.nr;
	*dropped = w.dropped;
	return 0;
}

const struct cgroup_name *cgroup_names__find(const struct cgroup_name *v, size_t nr, uint64_t id)
{
	struct cgroup_name key = { .id = id };

	return nr ? bsearch(&key, v, nr, sizeof(*v), name_cmp) : NULL;
}

int cgroup_names__keep_gone(struct cgroup_name **v, size_t *nr, struct cgroup_name *old,
			    size_t nr_old, size_t max, uint64_t *dropped)
{
	size_t i, gone = 0, n = *nr;
	struct cgroup_name *grown;

	for (i = 0; i < nr_old; i++)
		gone += !cgroup_names__find(*v, *nr, old[i].id);
	if (!gone) {
		cgroup_names__free(old, nr_old);
		return 0;
	}
	grown = realloc(*v, (n + gone) * sizeof(**v));
	if (!grown)
		return -ENOMEM;
	for (i = 0; i < nr_old; i++) {
		if (cgroup_names__find(grown, *nr, old[i].id))
			continue;
		if (n == max) {
			(*dropped)++;
			continue;
		}
		grown[n++] = old[i];
		old[i].path = NULL; /* moved */
	}
	qsort(grown, n, sizeof(*grown), name_cmp);
	*v = grown;
	*nr = n;
	cgroup_names__free(old, nr_old);
	return 0;
}

void cgroup_names__free(struct cgroup_name *v, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(v[i].path);
	free(v);
}

/* SPDX-License-Identifier: MIT */
/* The target's cgroup CPU bandwidth limit (cgroup v2 cpu.max or v1 CFS quota). */
#ifndef KHBPF_CGROUP_H
#define KHBPF_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/evidence.h"

enum cgroup_mode {
	CGROUP_MODE_UNKNOWN = 0,
	CGROUP_MODE_V1,
	CGROUP_MODE_V2,
	CGROUP_MODE_HYBRID,
};

/*
 * From root/proc/self/mountinfo: cgroup2 mounts only = v2, cgroup (v1)
 * mounts only = v1, both = hybrid (e.g. v1 controllers plus
 * /sys/fs/cgroup/unified); unknown when none or unreadable.
 */
enum cgroup_mode cgroup_mode__detect(const char *root);
const char *cgroup_mode__name(enum cgroup_mode mode);

/*
 * The effective CPU limit of pid in thousandths of a CPU: the minimum of
 * quota * 1000 / period over the pid's cgroup of the cpu hierarchy and every
 * ancestor up to the mount's root. *out is always set:
 *   recorded (source sysfs-cgroup)             returns 0
 *   "unavailable": no limit at any level       returns 0
 *   "unsupported": no cpu controller/CFS quota returns -EOPNOTSUPP
 *   "permission-denied"                        returns -EACCES or -EPERM
 *   "unavailable": process gone                returns -ESRCH
 *   "unavailable": malformed or unreadable     returns -EINVAL or another -errno
 * cgroup_path (may be NULL) receives the cgroup's path as the kernel names it
 * in /proc/PID/cgroup (e.g. "/system.slice/x.service"), or "" when it could
 * not be resolved or does not fit.
 */
int cgroup__cpu_quota(const char *root, pid_t pid, struct sev_u64 *out, char *cgroup_path,
		      size_t path_size);

/*
 * The cgroup v2 hierarchy's mount point (its root "/" mount, e.g.
 * /sys/fs/cgroup or, hybrid, /sys/fs/cgroup/unified), as seen under root.
 * 0, -ENOENT when cgroup v2 is not mounted, or another -errno.
 */
int cgroup__v2_mount(const char *root, char *out, size_t size);

/*
 * A cgroup v2 path as given by a user, made the one spelling of the cgroup
 * it names, in place (never longer): repeated '/' and "." components
 * dropped, ".." a step up, no trailing '/' ("/" stays "/"). So "/a/.",
 * "/a/" and "//a" are "/a", whose depth is then its components. -EINVAL
 * unless it starts with '/'; -ERANGE when ".." would go above the root.
 */
int cgroup__normalize_path(char *path);

/*
 * A normalized path under the cgroup v2 mount point (point, as
 * cgroup__v2_mount gives it), made the path from the hierarchy's root, in
 * place: "/sys/fs/cgroup/unified/a" with point "/sys/fs/cgroup/unified" is
 * "/a", the point itself "/". False, path untouched, when path is not
 * point or below it.
 */
bool cgroup__strip_mount(char *path, const char *point);

/*
 * A normalized cgroup v2 path ("/system.slice/x.service") → the kernel's id
 * for it (the directory's inode: kernfs node id on 64-bit) and its depth
 * below the root. -EINVAL for a path that is not normalized.
 */
int cgroup__v2_id(const char *mount, const char *path, uint64_t *id, uint32_t *level);

struct cgroup_name {
	uint64_t id;
	char *path; /* relative to the v2 root, starting with "/" */
};

/*
 * Every cgroup under the v2 mount, at most max (the rest counted in
 * *dropped), sorted by id for cgroup_names__find. Free with cgroup_names__free.
 */
int cgroup_names__scan(const char *mount, size_t max, struct cgroup_name **out, size_t *nr,
		       uint64_t *dropped);
const struct cgroup_name *cgroup_names__find(const struct cgroup_name *v, size_t nr, uint64_t id);
/*
 * A new scan (*v, *nr) keeps the names of an older one whose cgroups are
 * gone, up to max in all (the rest counted in *dropped): a removed
 * cgroup's series keeps its label. Takes the older table (frees it).
 * 0 or -ENOMEM (then both tables are as they were, the older still owned
 * by the caller).
 */
int cgroup_names__keep_gone(struct cgroup_name **v, size_t *nr, struct cgroup_name *old,
			    size_t nr_old, size_t max, uint64_t *dropped);
void cgroup_names__free(struct cgroup_name *v, size_t nr);

#endif /* KHBPF_CGROUP_H */

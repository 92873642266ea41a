// SPDX-License-Identifier: MIT
/*
 * Privileges. Once the programs are attached and the counters open, what is
 * left is done through fds (maps, links, iterators, perf events, the
 * listening socket) and reads of files any user may read (/proc/PID/{comm,
 * stat,task/}, sysfs, cgroupfs), so the loader drops every capability,
 * including from the bounding set, and sets no_new_privs. Under sudo its
 * file-system ids become the invoking user's: output files are theirs and
 * go only where they may write.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "lib/fsutil.h"
#include "collect/privs.h"

int privs__invoking_user(uid_t *uid, gid_t *gid)
{
	const char *uid_s = getenv("SUDO_UID"), *gid_s = getenv("SUDO_GID");
	uint64_t u, g;

	if (getuid() != 0 || !uid_s || !gid_s)
		return 0;
	if (fsutil__parse_u64(uid_s, &u) || fsutil__parse_u64(gid_s, &g) || u >= UINT32_MAX ||
	    g >= UINT32_MAX)
		return -EINVAL;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return u != 0;
}

/* The invoking user's supplementary groups, else none. */
static int user_groups(uid_t uid, gid_t gid)
{
	struct passwd *pw = getpwuid(uid);

	if (pw ? initgroups(pw->pw_name, gid) : setgroups(0, NULL))
		return -errno;
	return 0;
}

/*
 * In the held child: become the invoking user, with their groups and, from
 * their passwd entry, HOME, USER and LOGNAME (sudo leaves root's HOME, which
 * the user may not write).
 */
int privs__become_invoking_user(void)
{
	struct passwd *pw;
	uid_t uid;
	gid_t gid;
	int err;

	err = privs__invoking_user(&uid, &gid);
	if (err <= 0)
		return err;
	err = user_groups(uid, gid);
	if (err)
		return err;
	if (setgid(gid) || setuid(uid))
		return -errno;
	pw = getpwuid(uid);
	if (pw && (setenv("HOME", pw->pw_dir, 1) || setenv("USER", pw->pw_name, 1) ||
		   setenv("LOGNAME", pw->pw_name, 1)))
		return -errno;
	return 0;
}

/* Under sudo: the invoking user's file-system ids and groups. */
static int writer_identity(void)
{
	uid_t uid;
	gid_t gid;
	int err;

	/* Malformed SUDO_*: no invoking user (run refuses them for CMD itself). */
	if (privs__invoking_user(&uid, &gid) != 1)
		return 0;
	if ((uid_t)setfsuid((uid_t)-1) == uid && (gid_t)setfsgid((gid_t)-1) == gid)
		return 0;
	err = user_groups(uid, gid);
	if (err)
		return err;
	setfsgid(gid);
	setfsuid(uid);
	/* They return the previous id, not errors: read them back. */
	if ((gid_t)setfsgid((gid_t)-1) != gid || (uid_t)setfsuid((uid_t)-1) != uid)
		return -EPERM;
	return 0;
}

int privs__writer_begin(struct privs_writer *w)
{
	cap_t noeff;
	int n, err;

	memset(w, 0, sizeof(*w));
	w->fsuid = (uid_t)setfsuid((uid_t)-1);
	w->fsgid = (gid_t)setfsgid((gid_t)-1);
	w->caps = cap_get_proc();
	if (!w->caps)
		return -errno;
	/* The groups too: a held child forked later (run --as-root) gets the loader's. */
	n = getgroups(0, NULL);
	w->groups = n > 0 ? calloc((size_t)n, sizeof(gid_t)) : NULL;
	if (n < 0 || (n > 0 && !w->groups))
		return n < 0 ? -errno : -ENOMEM;
	w->nr_groups = n > 0 ? getgroups(n, w->groups) : 0;
	if (w->nr_groups < 0)
		return -errno;
	w->have_groups = true;
	err = writer_identity();
	if (err)
		return err;
	noeff = cap_dup(w->caps);
	if (!noeff)
		return -errno;
	if (cap_clear_flag(noeff, CAP_EFFECTIVE) || cap_set_proc(noeff))
		err = -errno;
	cap_free(noeff);
	return err;
}

void privs__writer_end(struct privs_writer *w)
{
	setfsuid(w->fsuid);
	setfsgid(w->fsgid);
	if (w->caps) {
		cap_set_proc(w->caps);
		cap_free(w->caps);
		w->caps = NULL;
	}
	if (w->have_groups)
		setgroups((size_t)w->nr_groups, w->groups);
	free(w->groups);
	w->groups = NULL;
	w->have_groups = false;
}

/* Credentials are per thread: a second thread would keep what this one drops. */
static int single_threaded(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n == 1 ? 0 : -EBUSY;
}

int privs__drop(const cap_value_t *want, int nr_want)
{
	cap_flag_value_t have, setpcap = CAP_CLEAR;
	cap_value_t keep[8], c;
	int i, nr_keep = 0, err;
	cap_t caps;

	err = single_threaded();
	err = err ?: writer_identity();
	if (err)
		return err;
	caps = cap_get_proc();
	if (!caps)
		return -errno;
	for (i = 0; i < nr_want && nr_keep < 8; i++) {
		if (!cap_get_flag(caps, want[i], CAP_PERMITTED, &have) && have == CAP_SET)
			keep[nr_keep++] = want[i];
	}
	cap_get_flag(caps, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap);
	for (c = 0; setpcap == CAP_SET && c < (cap_value_t)cap_max_bits(); c++) {
		for (i = 0; i < nr_keep && keep[i] != c; i++)
			;
		if (i == nr_keep && cap_drop_bound(c)) {
			err = -errno;
			goto out;
		}
	}
	if (cap_reset_ambient() && errno != EINVAL) {
		err = -errno;
		goto out;
	}
	if (cap_clear(caps) ||
	    (nr_keep && (cap_set_flag(caps, CAP_PERMITTED, nr_keep, keep, CAP_SET) ||
			 cap_set_flag(caps, CAP_EFFECTIVE, nr_keep, keep, CAP_SET))) ||
	    cap_set_proc(caps) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		err = -errno;
out:
	cap_free(caps);
	return err;
}

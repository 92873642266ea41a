/* SPDX-License-Identifier: MIT */
/*
 * The loader's identities and capabilities: who invoked it through sudo,
 * the credentials output files are written with, and dropping every
 * capability once the collector is attached.
 */
#ifndef KHBPF_PRIVS_H
#define KHBPF_PRIVS_H

#include <stdbool.h>
#include <sys/capability.h>
#include <sys/types.h>

/*
 * Under sudo (uid 0 with SUDO_UID and SUDO_GID): the invoking user, 1.
 * 0 when there is none (not root, not sudo, or sudo by root itself);
 * -EINVAL when the variables are malformed.
 */
int privs__invoking_user(uid_t *uid, gid_t *gid);

/*
 * In a held child before exec: become the invoking user, with their groups
 * and, from their passwd entry, HOME, USER and LOGNAME. 0 when there is no
 * invoking user; -errno (-EINVAL for malformed SUDO_*) otherwise.
 */
int privs__become_invoking_user(void);

/*
 * Drop every capability but those of `want` that are permitted, from the
 * effective, permitted, ambient and bounding sets, set no_new_privs, and
 * take the invoking user's file-system ids and groups (privs__writer_begin).
 * -EBUSY when the process has more than one thread (credentials are per
 * thread). 0 or -errno.
 */
int privs__drop(const cap_value_t *want, int nr_want);

/* The credentials output files are written with, assumed for a check before the drop. */
struct privs_writer {
	void *caps; /* cap_t */
	uid_t fsuid;
	gid_t fsgid;
	gid_t *groups;
	int nr_groups;
	bool have_groups;
};

/*
 * Assume the writer's identity (the invoking user's fsuid, fsgid and groups
 * under sudo) with no effective capabilities; privs__writer_end restores
 * what was there, and must be called whatever begin returned.
 */
int privs__writer_begin(struct privs_writer *w);
void privs__writer_end(struct privs_writer *w);

#endif /* KHBPF_PRIVS_H */

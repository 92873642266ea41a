/* SPDX-License-Identifier: MIT */
/*
 * The objects span sites are looked for in: those a process maps
 * (root/proc/PID/maps), those ld.so will map for a command not started
 * yet, and the path khbpf opens each through. spanfind__mapped_objects and
 * spanfind__needed_objects (spanfind.h) are the public face.
 */
#ifndef KHBPF_SPANOBJECTS_H
#define KHBPF_SPANOBJECTS_H

#include <sys/types.h>

/*
 * The path to open object, as pid's maps spell it, into out (PATH_MAX
 * bytes): through root/proc/PID/root, or else its /proc/PID/map_files link
 * when that path does not resolve (a chroot, a deleted file). pid 0: a
 * command not started yet, whose objects are host paths under root.
 * 0 or -ENAMETOOLONG.
 */
int spanobjects__open_path(char *out, const char *root, pid_t pid, const char *object);

#endif /* KHBPF_SPANOBJECTS_H */

/* SPDX-License-Identifier: MIT */
/*
 * The objects span sites are looked for in: those a process maps
 * (root/proc/PID/maps), those ld.so will map for a command not started
 * yet, and the path khbpf opens each through. Reached through spanfind.h.
 */
#ifndef KHBPF_SPANOBJECTS_H
#define KHBPF_SPANOBJECTS_H

#include <stddef.h>
#include <sys/types.h>

/*
 * The path to open object, as pid's maps spell it, into out (PATH_MAX
 * bytes): through root/proc/PID/root, or else its /proc/PID/map_files link
 * when that path does not resolve (a chroot, a deleted file). pid 0: a
 * command not started yet, whose objects are host paths under root.
 * 0 or -ENAMETOOLONG.
 */
int spanobjects__open_path(char *out, const char *root, pid_t pid, const char *object);

/*
 * Every distinct file-backed path mapped executable by pid, from
 * root/proc/PID/maps, in order of first appearance and spelled as the
 * kernel prints it (a " (deleted)" suffix included). Open one through
 * root/proc/PID/root + path, so objects of another mount namespace work.
 * Returns 0; -ESRCH when the process does not exist, -EACCES, -EINVAL for a
 * malformed line, -E2BIG beyond SPANFIND_OBJECTS_MAX, -ENOMEM. On error
 * *objects is NULL and *nr 0. Free with spanfind__free_objects.
 */
int spanfind__mapped_objects(const char *root, pid_t pid, char ***objects, size_t *nr);
void spanfind__free_objects(char **objects, size_t nr);

/*
 * The absolute executable path exe, then the shared libraries its dynamic
 * loader will map at start, as that loader resolves them (`PT_INTERP
 * --list exe`; only a root-owned interpreter nobody else can write is
 * run). A static executable or a script gives exe alone. Libraries the
 * program dlopen()s later are not known. Returns 0; -EPERM (untrusted
 * interpreter), -ECHILD (the loader failed), -EINVAL, -ENOMEM, with a
 * reason; then *objects is NULL. Free with spanfind__free_objects.
 */
int spanfind__needed_objects(const char *exe, char ***objects, size_t *nr, char *reason,
			     size_t size);

/*
 * serve's OBJ of a library name (no '/'): the host's library of that name,
 * as ld.so's cache lists it (`ldconfig -p`, run only when root owns it and
 * nobody else can write it), for this machine's architecture: the entry
 * named name, else the first whose name starts with name and a '.'
 * ("libpq.so" finds libpq.so.5). Into out (PATH_MAX bytes). 0; -ENOENT
 * when the cache has no such library, -EPERM, -ECHILD, -ENOMEM, with a
 * reason.
 */
int spanobjects__host_library(const char *name, char *out, char *reason, size_t size);
/*
 * One line of `ldconfig -p`: its library's name and path into name and
 * path (PATH_MAX bytes each) when it is for this architecture. 0, or
 * -EINVAL for another architecture or a line that is not an entry.
 */
int spanobjects__ldconfig_line(const char *line, char *name, char *path);
#endif /* KHBPF_SPANOBJECTS_H */

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/fsutil.h"
#include "spans/spanelf.h"
#include "spans/spanobjects.h"

void spanfind__free_objects(char **objects, size_t nr)
{
	size_t i;

	if (!objects)
		return;
	for (i = 0; i < nr; i++)
		free(objects[i]);
	free(objects);
}

/* The pathname of a maps line, or NULL; -EINVAL in *err when malformed. */
static char *maps_line_path(char *line, bool *exec, int *err)
{
	unsigned long long start, end, off, ino;
	unsigned int major, minor;
	char perms[5];
	size_t len;
	int pos = 0;

	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, perms, &off, &major,
		   &minor, &ino, &pos) != 7 ||
	    !pos || strlen(perms) != 4) {
		*err = -EINVAL;
		return NULL;
	}
	len = strlen(line);
	if (len && line[len - 1] == '\n')
		line[--len] = '\0';
	*exec = perms[2] == 'x';
	/* Anonymous, [vdso], [heap] and the like are not files. */
	if (!ino || line[pos] != '/')
		return NULL;
	return line + pos;
}

int spanfind__mapped_objects(const char *root, pid_t pid, char ***objects, size_t *nr)
{
	char path[PATH_MAX], *line = NULL, **v = NULL;
	size_t n = 0, cap = 0, linecap = 0, i;
	int err = 0;
	FILE *fp;

	if (!objects || !nr || pid <= 0)
		return -EINVAL;
	*objects = NULL;
	*nr = 0;
	err = fsutil__path(path, sizeof(path), root, "/proc/%d/maps", (int)pid);
	if (err < 0)
		return err;
	err = 0;
	fp = fopen(path, "re");
	if (!fp)
		return errno == ENOENT ? -ESRCH : -errno;

	for (;;) {
		bool exec = false;
		char *obj, **nv;

		errno = 0;
		if (getline(&line, &linecap, fp) < 0) {
			if (errno)
				err = -errno;
			break;
		}
		obj = maps_line_path(line, &exec, &err);
		if (err)
			break;
		if (!obj || !exec)
			continue;
		for (i = 0; i < n && strcmp(v[i], obj); i++)
			;
		if (i < n)
			continue;
		if (n == SPANFIND_OBJECTS_MAX) {
			err = -E2BIG;
			break;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				err = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[n] = strdup(obj);
		if (!v[n]) {
			err = -ENOMEM;
			break;
		}
		n++;
	}
	/* A process that exited while its maps were read has an empty file. */
	if (!err && !n && access(path, F_OK))
		err = -ESRCH;
	free(line);
	fclose(fp);
	if (err) {
		spanfind__free_objects(v, n);
		return err;
	}
	*objects = v;
	*nr = n;
	return 0;
}

/*
 * /proc/PID/map_files/START-END of object's first mapping: the mapped file
 * itself, whatever its path means to us. The path in maps is relative to
 * the root of the object's mount namespace, so it does not resolve under
 * /proc/PID/root when the process is also chrooted (a chroot that unshared
 * its mounts), nor when the file was deleted or replaced; the magic link
 * does (proc_map_files_get_link; needs CAP_SYS_ADMIN or
 * CAP_CHECKPOINT_RESTORE, which a loader of uprobes has), and the kernel
 * follows it when a uprobe is made by path.
 */
static int map_files_path(char *out, const char *root, pid_t pid, const char *object)
{
	char path[PATH_MAX], link[PATH_MAX], *line = NULL, *obj;
	size_t cap = 0;
	int err = -ENOENT, lerr = 0;
	bool exec;
	FILE *fp;

	if (fsutil__path(path, sizeof(path), root, "/proc/%d/maps", (int)pid) < 0)
		return -ENAMETOOLONG;
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	while (err == -ENOENT && getline(&line, &cap, fp) >= 0) {
		obj = maps_line_path(line, &exec, &lerr);
		if (lerr || !obj || strcmp(obj, object))
			continue;
		line[strcspn(line, " ")] = '\0'; /* "start-end", as map_files names it */
		if (fsutil__path(link, sizeof(link), root, "/proc/%d/map_files/%s", (int)pid,
				 line) < 0)
			err = -ENAMETOOLONG;
		else if (access(link, F_OK))
			err = -errno;
		else
			err = 0;
	}
	if (!err)
		memcpy(out, link, strlen(link) + 1);
	free(line);
	fclose(fp);
	return err;
}

/*
 * pid 0: a command not started yet (run mode); its objects are host paths.
 * Otherwise the object through the process's root, or else its mapping.
 */
int spanobjects__open_path(char *out, const char *root, pid_t pid, const char *object)
{
	struct stat st;
	int n = pid ? fsutil__path(out, PATH_MAX, root, "/proc/%d/root%s", (int)pid, object) :
		      fsutil__path(out, PATH_MAX, root, "%s", object);

	if (n < 0)
		return -ENAMETOOLONG;
	if (pid && stat(out, &st) && errno == ENOENT)
		map_files_path(out, root, pid, object); /* out is kept when there is none */
	return 0;
}

/* PT_INTERP of the ELF file at path: 1 with it in out, 0 without one, -errno. */
static int elf_interp(const char *path, char *out, size_t size)
{
	char reason[256];
	struct elf_file f;
	size_t i, n;
	int err, found = 0;

	err = elf_file__open(&f, path, path, reason, sizeof(reason));
	if (err)
		return err;
	if (elf_getphdrnum(f.elf, &n)) {
		elf_file__close(&f);
		return -EINVAL;
	}
	for (i = 0; i < n && !found; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(f.elf, (int)i, &ph) || ph.p_type != PT_INTERP)
			continue;
		d = elf_getdata_rawchunk(f.elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		if (!d || !d->d_size || ((const char *)d->d_buf)[d->d_size - 1] ||
		    d->d_size > size) {
			err = -EINVAL;
			break;
		}
		memcpy(out, d->d_buf, d->d_size);
		found = 1;
	}
	elf_file__close(&f);
	return err ?: found;
}

/* One line of `ld.so --list`: "\tname => /path (0x...)" or "\t/path (0x...)". */
static int needed_line(char *line, char ***objects, size_t *nr)
{
	char *p = strstr(line, " => "), *end, **grown;
	size_t i;

	p = p ? p + 4 : line + strspn(line, " \t");
	if (*p != '/')
		return 0; /* the vDSO, or "not found" */
	end = strstr(p, " (0x");
	if (!end)
		end = p + strcspn(p, "\n");
	*end = '\0';
	for (i = 0; i < *nr; i++)
		if (!strcmp((*objects)[i], p))
			return 0;
	if (*nr == SPANFIND_OBJECTS_MAX)
		return -E2BIG;
	grown = realloc(*objects, (*nr + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	*objects = grown;
	grown[*nr] = strdup(p);
	if (!grown[*nr])
		return -ENOMEM;
	(*nr)++;
	return 0;
}

int spanfind__needed_objects(const char *exe, char ***objects, size_t *nr, char *reason,
			     size_t size)
{
	char interp[PATH_MAX], line[PATH_MAX + 64];
	int fds[2], status, err;
	struct stat st;
	FILE *out;
	pid_t child;

	*objects = NULL;
	*nr = 0;
	snprintf(line, sizeof(line), "%s", exe);
	if (line[0] != '/')
		return -EINVAL;
	err = needed_line(line, objects, nr);
	if (err)
		goto fail;
	err = elf_interp(exe, interp, sizeof(interp));
	/* Static, or not ELF (a script): nothing more is loaded by ld.so. */
	if (err == 0 || err == -ENOEXEC)
		return 0;
	if (err < 0) {
		snprintf(reason, size, "cannot read the ELF interpreter of %s", exe);
		goto fail;
	}
	err = 0;
	/*
	 * The loader itself resolves the libraries (its own search order,
	 * ld.so.cache, LD_LIBRARY_PATH); `--list` maps them and exits without
	 * running any of their code. Only a root-owned loader nobody else can
	 * write is run, as a malicious PT_INTERP would run as khbpf.
	 */
	if (stat(interp, &st) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(
			reason, size,
			"the ELF interpreter %s of %s is not a root-owned file that only root can write; its libraries are not searched",
			interp, exe);
		err = -EPERM;
		goto fail;
	}
	if (pipe2(fds, O_CLOEXEC)) {
		err = -errno;
		goto fail;
	}
	child = fork();
	if (child < 0) {
		err = -errno;
		close(fds[0]);
		close(fds[1]);
		goto fail;
	}
	if (!child) {
		int null = open("/dev/null", O_WRONLY);

		dup2(fds[1], STDOUT_FILENO);
		if (null >= 0)
			dup2(null, STDERR_FILENO);
		execl(interp, interp, "--list", exe, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	out = fdopen(fds[0], "r");
	if (!out) {
		err = -errno;
		close(fds[0]);
	}
	while (out && !err && fgets(line, sizeof(line), out))
		err = needed_line(line, objects, nr);
	if (out)
		fclose(out);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
		if (!err) {
			snprintf(reason, size,
				 "%s --list %s failed; its libraries are not searched", interp,
				 exe);
			err = -ECHILD;
		}
	}
	if (!err)
		return 0;
fail:
	spanfind__free_objects(*objects, *nr);
	*objects = NULL;
	*nr = 0;
	return err;
}

/* ldconfig's hwcap tag of this machine's libraries (ldconfig.c's flag names). */
#if defined(__x86_64__)
#define LDCONFIG_ARCH "x86-64"
#elif defined(__aarch64__)
#define LDCONFIG_ARCH "AArch64"
#endif

int spanobjects__ldconfig_line(const char *line, char *name, char *path)
{
	const char *open_p, *close_p, *arrow, *end;
	size_t n;

	while (*line == ' ' || *line == '\t')
		line++;
	open_p = strstr(line, " (");
	close_p = open_p ? strchr(open_p, ')') : NULL;
	arrow = close_p ? strstr(close_p, " => ") : NULL;
	if (!arrow || open_p == line)
		return -EINVAL;
	/* "(libc6,x86-64)": an entry of this machine's own word size. */
	if (!memmem(open_p, (size_t)(close_p - open_p), LDCONFIG_ARCH, strlen(LDCONFIG_ARCH)))
		return -EINVAL;
	n = (size_t)(open_p - line);
	if (n >= PATH_MAX)
		return -EINVAL;
	memcpy(name, line, n);
	name[n] = '\0';
	arrow += 4;
	end = arrow + strcspn(arrow, "\n");
	n = (size_t)(end - arrow);
	if (!n || n >= PATH_MAX || arrow[0] != '/')
		return -EINVAL;
	memcpy(path, arrow, n);
	path[n] = '\0';
	return 0;
}

static const char *const ldconfig_paths[] = { "/sbin/ldconfig", "/usr/sbin/ldconfig" };

int spanobjects__host_library(const char *name, char *out, char *reason, size_t size)
{
	char line[2 * PATH_MAX + 64], *lname = NULL, *lpath = NULL;
	const char *prog = NULL;
	size_t i, len = strlen(name);
	int fds[2], status, err = -ENOENT;
	bool exact = false, found = false;
	struct stat st;
	pid_t child;
	FILE *f;

	for (i = 0; i < sizeof(ldconfig_paths) / sizeof(ldconfig_paths[0]) && !prog; i++) {
		/* Only a root-owned ldconfig nobody else can write: it runs as khbpf. */
		if (!stat(ldconfig_paths[i], &st) && st.st_uid == 0 &&
		    !(st.st_mode & (S_IWGRP | S_IWOTH)) && S_ISREG(st.st_mode))
			prog = ldconfig_paths[i];
	}
	if (!prog) {
		snprintf(reason, size,
			 "no root-owned ldconfig to look up library '%s'; give its path instead",
			 name);
		return -EPERM;
	}
	lname = malloc(PATH_MAX);
	lpath = malloc(PATH_MAX);
	if (!lname || !lpath || pipe2(fds, O_CLOEXEC)) {
		free(lname);
		free(lpath);
		return -ENOMEM;
	}
	child = fork();
	if (child < 0) {
		err = -errno;
		close(fds[0]);
		close(fds[1]);
		goto out;
	}
	if (!child) {
		int null = open("/dev/null", O_WRONLY);

		dup2(fds[1], STDOUT_FILENO);
		if (null >= 0)
			dup2(null, STDERR_FILENO);
		execl(prog, prog, "-p", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	if (!f) {
		close(fds[0]);
		err = -ENOMEM;
	}
	while (f && fgets(line, sizeof(line), f)) {
		if (exact || spanobjects__ldconfig_line(line, lname, lpath))
			continue;
		if (!strcmp(lname, name)) {
			exact = found = true;
			snprintf(out, PATH_MAX, "%s", lpath);
		} else if (!found && !strncmp(lname, name, len) && lname[len] == '.') {
			found = true;
			snprintf(out, PATH_MAX, "%s", lpath);
		}
	}
	if (f)
		fclose(f);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(reason, size, "%s -p failed; give the path of '%s' instead", prog, name);
		err = -ECHILD;
		goto out;
	}
	if (err == -ENOMEM)
		goto out;
	if (found) {
		err = 0;
		goto out;
	}
	snprintf(reason, size,
		 "no library '%s' in the host's ld.so cache (ldconfig -p); give its path", name);
	err = -ENOENT;
out:
	free(lname);
	free(lpath);
	return err;
}

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/privs.h"
#include "collect/runner.h"

struct runner {
	struct runner_opts opts;
	pid_t pid;
	int go_fd; /* a byte lets the child exec; EOF makes it leave */
	int err_fd; /* { RUNNER_FAILED_*, errno } from the child, EOF at its exec */
	bool exec_failed;
	int exec_phase; /* RUNNER_FAILED_* */
	int exec_errno;
};

/*
 * execv of one file. A file the kernel will not load (ENOEXEC) runs under
 * /bin/sh only if it is text, as shells do with a script without "#!";
 * execvp(3) would also hand a truncated or foreign binary to sh, which then
 * fails in confusing ways with sh's own exit status.
 */
static void exec_file(const char *file, char *const argv[])
{
	char head[256], **sh_argv;
	size_t argc = 0, i;
	ssize_t n;
	int fd;

	execv(file, argv);
	if (errno != ENOEXEC)
		return;
	fd = open(file, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, head, sizeof(head)) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0 || memchr(head, '\0', (size_t)n) || (n >= 4 && !memcmp(head, "\177ELF", 4))) {
		errno = ENOEXEC;
		return;
	}
	while (argv[argc])
		argc++;
	/* The parent is single-threaded when it forks: malloc is safe here. */
	sh_argv = calloc(argc + 2, sizeof(*sh_argv));
	if (!sh_argv) {
		errno = ENOMEM;
		return;
	}
	sh_argv[0] = "sh";
	sh_argv[1] = (char *)file;
	for (i = 1; i < argc; i++)
		sh_argv[i + 1] = argv[i];
	execv("/bin/sh", sh_argv);
	free(sh_argv);
}

/* execvp(3) without its ENOEXEC fallback (exec_file); returns with errno set. */
static void exec_command(char *const argv[])
{
	const char *path = getenv("PATH"), *cmd = argv[0];
	char buf[PATH_MAX];
	bool denied = false;

	if (strchr(cmd, '/')) {
		exec_file(cmd, argv);
		return;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, len ? path : ".", cmd) <
		    (int)sizeof(buf)) {
			exec_file(buf, argv);
			if (errno == EACCES)
				denied = true;
			else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE &&
				 errno != ENODEV && errno != ETIMEDOUT)
				return;
		}
		path += len + (path[len] == ':');
	}
	errno = denied ? EACCES : ENOENT;
}

/* Fork CMD held on a pipe: it execs only once the collector is attached. */
int runner__fork(struct runner **out, const struct runner_opts *opts, char *errbuf, size_t errlen)
{
	int go[2] = { -1, -1 }, ep[2] = { -1, -1 }, err, i;
	struct runner *r;
	sigset_t none;
	pid_t pid;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	r->opts = *opts;
	r->go_fd = r->err_fd = -1;
	if (pipe2(go, O_CLOEXEC) || pipe2(ep, O_CLOEXEC)) {
		err = -errno;
		snprintf(errbuf, errlen, "pipe: %s", strerror(errno));
		goto cleanup;
	}
	pid = fork();
	if (pid < 0) {
		err = -errno;
		snprintf(errbuf, errlen, "fork: %s", strerror(errno));
		goto cleanup;
	}
	if (pid == 0) {
		char c;

		close(go[1]);
		close(ep[0]);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int report[2] = { RUNNER_FAILED_USER, 0 };

		if (!r->opts.as_root)
			report[1] = -privs__become_invoking_user();
		/* EOF without a byte: the parent gave up; leave without running CMD. */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		if (!report[1]) {
			exec_command(r->opts.argv);
			report[0] = RUNNER_FAILED_EXEC;
			report[1] = errno;
		}
		if (write(ep[1], report, sizeof(report)) < 0)
			_exit(127);
		_exit(report[0] == RUNNER_FAILED_EXEC && report[1] == ENOENT ? 127 : 126);
	}
	close(go[0]);
	close(ep[1]);
	r->go_fd = go[1];
	r->err_fd = ep[0];
	r->pid = pid;
	*out = r;
	return 0;

cleanup:
	for (i = 0; i < 2; i++) {
		if (go[i] >= 0)
			close(go[i]);
		if (ep[i] >= 0)
			close(ep[i]);
	}
	free(r);
	return err;
}

pid_t runner__pid(const struct runner *r)
{
	return r->pid;
}

/* Release the held child; learn whether exec worked through the CLOEXEC pipe. */
int runner__go(struct runner *r)
{
	int report[2] = { 0, 0 }; /* { RUNNER_FAILED_*, errno } */
	ssize_t n;

	if (write(r->go_fd, "g", 1) != 1)
		return -errno;
	close(r->go_fd);
	r->go_fd = -1;
	n = read(r->err_fd, report, sizeof(report));
	close(r->err_fd);
	r->err_fd = -1;
	if (n == (ssize_t)sizeof(report)) {
		r->exec_failed = true;
		r->exec_phase = report[0];
		r->exec_errno = report[1];
		return -ENOEXEC;
	}
	return 0;
}

bool runner__failure(const struct runner *r, int *step, int *err)
{
	if (!r->exec_failed)
		return false;
	*step = r->exec_phase;
	*err = r->exec_errno;
	return true;
}

int runner__exit_code(const struct runner *r)
{
	if (!r || !r->exec_failed)
		return 0;
	return r->exec_phase == RUNNER_FAILED_EXEC && r->exec_errno == ENOENT ? 127 : 126;
}

void runner__destroy(struct runner *r)
{
	if (!r)
		return;
	if (r->go_fd >= 0)
		close(r->go_fd); /* the held child sees EOF and exits without running CMD */
	if (r->err_fd >= 0)
		close(r->err_fd);
	free(r);
}

/* The command's executable: argv[0] as execvp(3) would find it. */
bool runner__resolve_exe(const char *cmd, char *out, size_t size)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(cmd, '/'))
		return realpath(cmd, out) != NULL;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, len ? path : ".", cmd);
		if (!access(buf, X_OK) && realpath(buf, out))
			return strlen(out) < size;
		path += len + (path[len] == ':');
	}
	return false;
}

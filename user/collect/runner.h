/* SPDX-License-Identifier: MIT */
/*
 * run's command: forked at once but held on a pipe, so it execs only once
 * the collector is attached, and an exec that fails is reported back
 * through a close-on-exec pipe rather than seen as an exit status.
 */
#ifndef KHBPF_RUNNER_H
#define KHBPF_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct runner;

struct runner_opts {
	size_t sz;
	char *const *argv; /* the command; argv[0] is looked up in PATH */
	bool as_root; /* keep the loader's ids: do not drop to SUDO_UID */
};

/* Which step of the held child failed (runner__failure). */
#define RUNNER_FAILED_USER 1 /* dropping to SUDO_UID/SUDO_GID */
#define RUNNER_FAILED_EXEC 2

/*
 * Forks the held child (its signal mask emptied; as the invoking user under
 * sudo unless as_root). 0 or -errno with errbuf set.
 */
int runner__fork(struct runner **out, const struct runner_opts *opts, char *errbuf, size_t errlen);
pid_t runner__pid(const struct runner *r);
/*
 * Lets the child exec and waits until it has, or has failed to: 0, or
 * -ENOEXEC when it failed (runner__failure says where; the child exits
 * with runner__exit_code's status), or -errno when the pipes failed.
 */
int runner__go(struct runner *r);
/* After -ENOEXEC from runner__go: the step (RUNNER_FAILED_*) and its errno. */
bool runner__failure(const struct runner *r, int *step, int *err);
/* A failed exec as a shell reports it: 127 when not found, else 126; 0 when none (or no r). */
int runner__exit_code(const struct runner *r);
/*
 * Frees r. A child never released sees EOF on its pipe and exits 127
 * without running the command; nothing is waited for.
 */
void runner__destroy(struct runner *r);

/* The command's executable: argv[0] as execvp(3) would find it, made absolute. */
bool runner__resolve_exe(const char *cmd, char *out, size_t size);

#endif /* KHBPF_RUNNER_H */

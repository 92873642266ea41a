// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/output.h"
#include "testutil.h"

struct tmp {
	char dir[64];
	char path[128];
};

static int setup(void **state)
{
	struct tmp *t = calloc(1, sizeof(*t));

	snprintf(t->dir, sizeof(t->dir), "/tmp/khbpf-output-XXXXXX");
	if (!mkdtemp(t->dir))
		return -1;
	snprintf(t->path, sizeof(t->path), "%s/doc.json", t->dir);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tmp *t = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	if (system(cmd))
		return -1;
	free(t);
	return 0;
}

static size_t slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, size - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	return (size_t)n;
}

/* Only the named entries are in the directory: no temp file left behind. */
static int entries(const char *dir)
{
	struct dirent *e;
	int n = 0;
	DIR *d = opendir(dir);

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void test_output__writes_and_replaces(void **state)
{
	struct tmp *t = *state;
	struct output_opts o = { .sz = sizeof(o) };
	struct stat st;
	char buf[64];

	assert_int_equal(output__write_file(t->path, "first", 5, &o), 0);
	assert_int_equal(slurp(t->path, buf, sizeof(buf)), 5);
	assert_string_equal(buf, "first");
	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(output__write_file(t->path, "second!", 7, &o), 0);
	slurp(t->path, buf, sizeof(buf));
	assert_string_equal(buf, "second!");
	assert_int_equal(entries(t->dir), 1);

	o.mode = 0600;
	assert_int_equal(output__write_file(t->path, "private", 7, &o), 0);
	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
}

static void test_output__refuses_non_regular(void **state)
{
	struct tmp *t = *state;
	char fifo[160], sub[160];

	snprintf(fifo, sizeof(fifo), "%s/fifo", t->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* Would block forever if it opened the FIFO. */
	assert_int_equal(output__write_file(fifo, "x", 1, NULL), -EEXIST);
	snprintf(sub, sizeof(sub), "%s/sub", t->dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(output__write_file(sub, "x", 1, NULL), -EEXIST);
	assert_int_equal(entries(t->dir), 2);
}

/* O_NOFOLLOW semantics: a link at the path is refused, its target untouched. */
static void test_output__symlink_is_refused(void **state)
{
	struct tmp *t = *state;
	char victim[160], link[160], dangling[160], buf[32];
	struct stat st;

	snprintf(victim, sizeof(victim), "%s/victim", t->dir);
	snprintf(link, sizeof(link), "%s/link", t->dir);
	snprintf(dangling, sizeof(dangling), "%s/dangling", t->dir);
	assert_int_equal(output__write_file(victim, "keep", 4, NULL), 0);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(symlink("/nonexistent/khbpf-target", dangling), 0);
	assert_int_equal(output__check(link), -ELOOP);
	assert_int_equal(output__write_file(link, "new", 3, NULL), -ELOOP);
	assert_int_equal(output__check(dangling), -ELOOP);
	assert_int_equal(output__write_file(dangling, "new", 3, NULL), -ELOOP);
	slurp(victim, buf, sizeof(buf));
	assert_string_equal(buf, "keep");
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(entries(t->dir), 3);
}

/* The check before any work: what the write would say, and nothing left. */
static void test_output__check(void **state)
{
	struct tmp *t = *state;
	char fifo[160], sub[160], under[200];

	assert_int_equal(output__check("-"), 0);
	assert_int_equal(output__check(""), -EINVAL);
	assert_int_equal(output__check(t->path), 0);
	assert_int_equal(entries(t->dir), 0);
	assert_int_equal(output__write_file(t->path, "x", 1, NULL), 0);
	assert_int_equal(output__check(t->path), 0);
	snprintf(under, sizeof(under), "%s/doc.json", t->path);
	assert_int_equal(output__check(under), -ENOTDIR);
	snprintf(under, sizeof(under), "%s/no/doc.json", t->dir);
	assert_int_equal(output__check(under), -ENOENT);
	snprintf(fifo, sizeof(fifo), "%s/fifo", t->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(output__check(fifo), -EEXIST);
	snprintf(sub, sizeof(sub), "%s/sub", t->dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(output__check(sub), -EEXIST);
	assert_int_equal(entries(t->dir), 3);
}

/* A directory the caller may not write to: refused by the check and the write. */
static void test_output__unwritable_directory(void **state)
{
	struct tmp *t = *state;
	int status;
	pid_t pid;

	assert_int_equal(chmod(t->dir, 0755), 0);
	if (geteuid() != 0) {
		assert_int_equal(chmod(t->dir, 0555), 0);
		assert_int_equal(output__check(t->path), -EACCES);
		assert_int_equal(output__write_file(t->path, "x", 1, NULL), -EACCES);
		assert_int_equal(chmod(t->dir, 0700), 0);
		assert_int_equal(entries(t->dir), 0);
		return;
	}
	/* Root writes anywhere: check as nobody, as the loader does after its drop. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		if (output__check(t->path) != -EACCES)
			_exit(11);
		_exit(output__write_file(t->path, "x", 1, NULL) == -EACCES ? 0 : 12);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(entries(t->dir), 0);
}

/*
 * Someone else's file in a sticky directory (/tmp): rename over it fails,
 * and the check says so first.
 */
static void test_output__sticky_directory(void **state)
{
	struct tmp *t = *state;
	int status;
	pid_t pid;

	require_or_skip(geteuid() == 0, "needs a second user: root and nobody");
	assert_int_equal(output__write_file(t->path, "root's", 6, NULL), 0);
	assert_int_equal(chmod(t->dir, 01777), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char mine[200];

		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		if (output__check(t->path) != -EPERM)
			_exit(11);
		if (output__write_file(t->path, "x", 1, NULL) != -EPERM)
			_exit(12);
		/* A new name in the same directory is fine. */
		snprintf(mine, sizeof(mine), "%s/mine.json", t->dir);
		if (output__check(mine) || output__write_file(mine, "y", 1, NULL))
			_exit(13);
		_exit(output__check(mine) ? 14 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(entries(t->dir), 2);
}

/* The mode is exactly 0644 or 0600 (--private), whatever the umask. */
static void test_output__mode_ignores_umask(void **state)
{
	struct tmp *t = *state;
	struct output_opts o = { .sz = sizeof(o) };
	struct stat st;
	mode_t old = umask(077);

	assert_int_equal(output__write_file(t->path, "a", 1, &o), 0);
	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	umask(0);
	o.mode = OUTPUT_MODE_PRIVATE;
	assert_int_equal(output__write_file(t->path, "b", 1, &o), 0);
	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	umask(old);
}

/* newline: the data and then "\n", so callers need not copy a document to add it. */
static void test_output__newline(void **state)
{
	struct tmp *t = *state;
	struct output_opts o = { .sz = sizeof(o), .newline = true };
	char buf[64];

	assert_int_equal(output__write_file(t->path, "{}", 2, &o), 0);
	assert_int_equal(slurp(t->path, buf, sizeof(buf)), 3);
	assert_string_equal(buf, "{}\n");
	o.newline = false;
	assert_int_equal(output__write_file(t->path, "{}", 2, &o), 0);
	assert_int_equal(slurp(t->path, buf, sizeof(buf)), 2);
	assert_string_equal(buf, "{}");
}

/* A write cut short (file size limit, any user): old file kept, no temp left. */
static void test_output__short_write_leaves_old_file(void **state)
{
	struct tmp *t = *state;
	struct rlimit old, lim;
	size_t n = 256 << 10;
	char buf[32], *big;

	assert_int_equal(output__write_file(t->path, "old", 3, NULL), 0);
	big = calloc(1, n);
	assert_non_null(big);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 64 << 10;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(output__write_file(t->path, big, n, NULL), -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	free(big);
	slurp(t->path, buf, sizeof(buf));
	assert_string_equal(buf, "old");
	assert_int_equal(entries(t->dir), 1);
}

static const char *xfsz_dir;
static volatile sig_atomic_t xfsz_entries = -1;

/* At SIGXFSZ, in the middle of the write: what names does the directory hold? */
static void count_entries_on_xfsz(int sig)
{
	struct dirent64_ {
		uint64_t ino;
		int64_t off;
		unsigned short reclen;
		unsigned char type;
		char name[];
	} * d;
	char buf[4096];
	int fd, count = 0;
	long n, off;

	(void)sig;
	fd = open(xfsz_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n; off += d->reclen) {
			d = (struct dirent64_ *)(buf + off);
			count += strcmp(d->name, ".") && strcmp(d->name, "..");
		}
	}
	close(fd);
	xfsz_entries = count;
}

/*
 * While the document is written it has no name at all (O_TMPFILE): killed
 * then, khbpf would leave nothing behind.
 */
static void test_output__unnamed_while_writing(void **state)
{
	struct tmp *t = *state;
	struct rlimit old, lim;
	size_t n = 256 << 10;
	char *big;
	int fd;

	fd = open(t->dir, O_TMPFILE | O_WRONLY, 0600);
	require_or_skip(fd >= 0, "the file system of /tmp has no O_TMPFILE");
	close(fd);
	assert_int_equal(output__write_file(t->path, "old", 3, NULL), 0);
	big = calloc(1, n);
	assert_non_null(big);
	xfsz_dir = t->dir;
	signal(SIGXFSZ, count_entries_on_xfsz);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 64 << 10;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(output__write_file(t->path, big, n, NULL), -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	free(big);
	/* Seen mid-write: the old document only. */
	assert_int_equal(xfsz_entries, 1);
	assert_int_equal(entries(t->dir), 1);
}

/* serve --ndjson: created with the exact mode, never a link or a FIFO. */
static void test_output__open_append(void **state)
{
	struct tmp *t = *state;
	char fifo[160], link[160], buf[32];
	struct stat st;
	mode_t old = umask(077);
	int fd;

	fd = output__open_append(t->path, 0);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(output__append(fd, "one\n", 4), 0);
	close(fd);
	/* Existing: appended to, mode kept even with a private mode asked. */
	fd = output__open_append(t->path, OUTPUT_MODE_PRIVATE);
	assert_true(fd >= 0);
	assert_int_equal(output__append(fd, "two\n", 4), 0);
	close(fd);
	slurp(t->path, buf, sizeof(buf));
	assert_string_equal(buf, "one\ntwo\n");
	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	umask(old);

	snprintf(link, sizeof(link), "%s/link", t->dir);
	assert_int_equal(symlink(t->path, link), 0);
	assert_int_equal(output__open_append(link, 0), -ELOOP);
	snprintf(fifo, sizeof(fifo), "%s/fifo", t->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* Would block forever waiting for a reader if it opened it plainly. */
	assert_int_equal(output__open_append(fifo, 0), -EEXIST);
	assert_int_equal(output__open_append(t->dir, 0), -EISDIR);
	slurp(t->path, buf, sizeof(buf));
	assert_string_equal(buf, "one\ntwo\n");
}

/* A record that does not fit is cut back: the file ends with the last whole one. */
static void test_output__append_failure_leaves_no_partial_record(void **state)
{
	struct tmp *t = *state;
	struct rlimit old, lim;
	size_t n = 256 << 10;
	struct stat st;
	char *big;
	int fd;

	fd = output__open_append(t->path, OUTPUT_MODE_PRIVATE);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(output__append(fd, "{\"w\":1}\n", 8), 0);
	big = malloc(n);
	assert_non_null(big);
	memset(big, 'x', n);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 64 << 10;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(output__append(fd, big, n), -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	free(big);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 8);
	assert_int_equal(output__append(fd, "{\"w\":2}\n", 8), 0);
	close(fd);
	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(st.st_size, 16);
}

static void test_output__missing_directory(void **state)
{
	struct tmp *t = *state;
	char path[160];

	snprintf(path, sizeof(path), "%s/no/such/dir/doc.json", t->dir);
	assert_int_equal(output__write_file(path, "x", 1, NULL), -ENOENT);
	assert_int_equal(output__write_file("", "x", 1, NULL), -EINVAL);
	assert_int_equal(entries(t->dir), 0);
}

static void test_output__stdout(void **state)
{
	struct tmp *t = *state;
	int saved, fd;
	char buf[32];

	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	fd = open(t->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(saved >= 0 && fd >= 0);
	dup2(fd, STDOUT_FILENO);
	close(fd);
	assert_int_equal(output__write_file("-", "to stdout", 9, NULL), 0);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	slurp(t->path, buf, sizeof(buf));
	assert_string_equal(buf, "to stdout");
}

struct pieces {
	int calls;
	int fail_after; /* pieces written before failing with -EIO; -1: never */
	struct stat st; /* of the fd written to */
};

/* Writes "piece 0 piece 1 ..." in three writes, failing part way when asked. */
static int fill_pieces(int fd, void *ctx)
{
	struct pieces *p = ctx;
	char buf[16];
	int i;

	p->calls++;
	assert_int_equal(fstat(fd, &p->st), 0);
	for (i = 0; i < 3; i++) {
		if (i == p->fail_after)
			return -EIO;
		snprintf(buf, sizeof(buf), "piece %d ", i);
		assert_int_equal(write(fd, buf, strlen(buf)), (ssize_t)strlen(buf));
	}
	return 0;
}

/*
 * Contents written as they are made: into the temp file (mode set before
 * the first byte), then renamed; a fill that fails leaves the old file and
 * no temp file, whatever it had written.
 */
static void test_output__write_with(void **state)
{
	struct tmp *t = *state;
	struct output_opts o = { .sz = sizeof(o), .mode = 0640 };
	struct pieces p = { .fail_after = -1 };
	struct stat st;
	char buf[64];

	assert_int_equal(output__write_with(t->path, fill_pieces, &p, &o), 0);
	assert_int_equal(p.calls, 1);
	assert_true(S_ISREG(p.st.st_mode));
	assert_int_equal(p.st.st_mode & 07777, 0640);
	slurp(t->path, buf, sizeof(buf));
	assert_string_equal(buf, "piece 0 piece 1 piece 2 ");
	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);

	p.fail_after = 2;
	assert_int_equal(output__write_with(t->path, fill_pieces, &p, NULL), -EIO);
	slurp(t->path, buf, sizeof(buf));
	assert_string_equal(buf, "piece 0 piece 1 piece 2 ");
	assert_int_equal(entries(t->dir), 1);
}

/* A full filesystem: the write fails, the old file stays, no temp remains. */
static void test_output__disk_full_leaves_old_file(void **state)
{
	struct tmp *t = *state;
	char mnt[160], cmd[256], path[200], buf[32];
	size_t n = 4 << 20;
	char *big;

	require_or_skip(geteuid() == 0, "mounting a 64 KiB tmpfs needs root");
	snprintf(mnt, sizeof(mnt), "%s/mnt", t->dir);
	assert_int_equal(mkdir(mnt, 0700), 0);
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs -o size=64k tmpfs '%s'", mnt);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/doc.json", mnt);
	assert_int_equal(output__write_file(path, "old", 3, NULL), 0);
	big = calloc(1, n);
	assert_non_null(big);
	assert_int_equal(output__write_file(path, big, n, NULL), -ENOSPC);
	free(big);
	slurp(path, buf, sizeof(buf));
	assert_string_equal(buf, "old");
	assert_int_equal(entries(mnt), 1);
	snprintf(cmd, sizeof(cmd), "umount '%s'", mnt);
	assert_int_equal(system(cmd), 0);
}

/* Scratch space in $TMPDIR: unnamed, private, readable back; /tmp when TMPDIR is not absolute. */
static void test_output__scratch(void **state)
{
	struct tmp *t = *state;
	const char *old = getenv("TMPDIR"), *dir;
	char buf[16] = "";
	struct stat st;
	int fd;

	assert_int_equal(setenv("TMPDIR", t->dir, 1), 0);
	fd = output__scratch(&dir);
	assert_true(fd >= 0);
	assert_string_equal(dir, t->dir);
	assert_int_equal(entries(t->dir), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_nlink, 0);
	assert_int_equal(output__write_all(fd, "scratch", 7), 0);
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), 7);
	assert_string_equal(buf, "scratch");
	close(fd);
	assert_int_equal(entries(t->dir), 0);

	assert_int_equal(setenv("TMPDIR", "relative/dir", 1), 0);
	fd = output__scratch(&dir);
	assert_string_equal(dir, "/tmp");
	assert_true(fd >= 0);
	close(fd);
	snprintf(buf, sizeof(buf), "%s", "/no/such/dir");
	assert_int_equal(setenv("TMPDIR", buf, 1), 0);
	assert_int_equal(output__scratch(&dir), -ENOENT);
	if (old)
		setenv("TMPDIR", old, 1);
	else
		unsetenv("TMPDIR");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_output__writes_and_replaces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output__refuses_non_regular, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output__symlink_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output__check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output__unwritable_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output__sticky_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output__mode_ignores_umask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output__newline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output__short_write_leaves_old_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_output__unnamed_while_writing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_output__open_append, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_output__append_failure_leaves_no_partial_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output__missing_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output__stdout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output__write_with, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output__disk_full_leaves_old_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_output__scratch, setup, teardown),
	};

	return cmocka_run_group_tests_name("output", tests, NULL, NULL);
}

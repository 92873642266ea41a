// SPDX-License-Identifier: MIT
/*
 * --span in stripped objects through their separate debug files: the
 * fixture of tests/fixtures/spandebug is built here with gcc and a build-id
 * of our choosing, split as Debian's packages are (objcopy --only-keep-debug,
 * strip --strip-all, objcopy --add-gnu-debuglink), and its debug file laid
 * out in each place it is looked for. Ground truth is the unstripped build:
 * a site found through a debug file has the address and file offset the
 * unstripped binary's .symtab gives.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spans/spanfind.h"
#include "testutil.h"

#define SRC "tests/fixtures/spandebug/counted.c"
#define ID "0123456789abcdef0123456789abcdef01234567"
#define OTHER_ID "fedcba9876543210fedcba9876543210fedcba98"
/* Where a build-id tree holds the debug file of ID. */
#define ID_REL ".build-id/01/23456789abcdef0123456789abcdef01234567.debug"

static char *fx;
/* counted_step and exported_step in the unstripped build: the truth. */
static struct span_site truth[2];

static int run_argv(char *const argv[])
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define RUN(...) assert_int_equal(run_argv((char *const[]){ __VA_ARGS__, NULL }), 0)

/* fx + "/" + the formatted rest, into out (PATH_MAX bytes); never cut. */
static char *fx_path(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *fx_path(char *out, const char *fmt, ...)
{
	char rel[PATH_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(rel));
	n = snprintf(out, PATH_MAX, "%s/%s", fx, rel);
	assert_true(n >= 0 && n < PATH_MAX);
	return out;
}

/* Copies fx/name to base/rel, making rel's directories. */
static void place_in(const char *base, const char *name, const char *rel)
{
	char src[PATH_MAX], dst[PATH_MAX], buf[65536];
	ssize_t n;
	int in, out;

	tree_put(base, rel, "");
	fx_path(src, "%s", name);
	assert_true(snprintf(dst, sizeof(dst), "%s/%s", base, rel) < (int)sizeof(dst));
	in = open(src, O_RDONLY);
	out = open(dst, O_WRONLY | O_TRUNC);
	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	assert_int_equal(close(out), 0);
	assert_int_equal(chmod(dst, 0755), 0);
}

static void place(const char *name, const char *rel)
{
	place_in(fx, name, rel);
}

/* Builds name with build-id id, its debug file name.debug, and name.stripped linking to it. */
static void build(const char *name, const char *id)
{
	char out[PATH_MAX], dbg[PATH_MAX], stripped[PATH_MAX], buildid[64], link[PATH_MAX + 32];

	fx_path(out, "%s", name);
	fx_path(dbg, "%s.debug", name);
	fx_path(stripped, "%s.stripped", name);
	snprintf(buildid, sizeof(buildid), "-Wl,--build-id=0x%s", id);
	snprintf(link, sizeof(link), "--add-gnu-debuglink=%s", dbg);
	RUN("gcc", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-rdynamic", buildid, SRC, "-o",
	    out);
	RUN("objcopy", "--only-keep-debug", out, dbg);
	RUN("strip", "--strip-all", out, "-o", stripped);
	RUN("objcopy", link, stripped);
}

static int setup_fixtures(void **state)
{
	struct span_site *sites = NULL;
	char path[PATH_MAX], nosym[PATH_MAX];
	size_t n = 0;

	(void)state;
	fx = tree_new("spandebug");
	build("counted", ID);
	/* The same program under another build-id: another debug file, another CRC. */
	build("other", OTHER_ID);
	/* A debug file that has lost its .symtab (its build-id note stays). */
	fx_path(path, "counted.debug");
	fx_path(nosym, "nosym.debug");
	RUN("strip", "--strip-all", path, "-o", nosym);

	fx_path(path, "counted");
	assert_int_equal(spanfind__symbols(path, path, "*_step", NULL, &sites, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(sites[0].symbol, "counted_step");
	assert_string_equal(sites[1].symbol, "exported_step");
	memcpy(truth, sites, sizeof(truth));
	spanfind__free(sites, n);
	return 0;
}

static int teardown_fixtures(void **state)
{
	(void)state;
	tree_free(fx);
	return 0;
}

/* The sites of --span glob in the object at fx/rel (run mode: a host path). */
static void find(const char *rel, const char *glob, const char *const *dirs, size_t nr_dirs,
		 struct span_site **sites, size_t *n)
{
	const struct spanfind_opts opts = { .debug_dirs = dirs, .nr_debug_dirs = nr_dirs };
	struct span_request req = { .symbol = glob };
	char obj[PATH_MAX], *objects[] = { obj };

	fx_path(obj, "%s", rel);
	*sites = NULL;
	*n = 0;
	assert_int_equal(spanfind__discover_list("/", objects, 1, &req, 1, &opts, sites, n), 0);
}

/* A site of counted_step found through the debug file shown as from. */
static void assert_from_debug(const struct span_site *s, const char *rel, const char *from)
{
	char obj[PATH_MAX];

	assert_int_equal(s->err, 0);
	assert_false(s->from_note);
	assert_string_equal(s->object, fx_path(obj, "%s", rel));
	assert_string_equal(s->symbol, "counted_step");
	assert_string_equal(s->metric, "counted-step");
	assert_string_equal(s->symbols_from, from);
	/* Link-time address from the debug file, file offset through the object's segments. */
	assert_int_equal(s->vaddr, truth[0].vaddr);
	assert_int_equal(s->offset, truth[0].offset);
}

/* Found by build-id under a --debug-dir; what .dynsym has still comes from it. */
static void test_spandebug__build_id(void **state)
{
	const char *dirs[2];
	char none[PATH_MAX], dir[PATH_MAX + 1], from[PATH_MAX];
	struct span_site *sites;
	size_t n;

	(void)state;
	place("counted.stripped", "b/bin/counted");
	place("counted.debug", "b/debug/" ID_REL);
	/* A directory without the file first, and a trailing '/'. */
	dirs[0] = fx_path(none, "b/empty");
	snprintf(dir, sizeof(dir), "%s/", fx_path(from, "b/debug"));
	dirs[1] = dir;
	fx_path(from, "b/debug/" ID_REL);

	find("b/bin/counted", "counted_step", dirs, 2, &sites, &n);
	assert_int_equal(n, 1);
	assert_from_debug(&sites[0], "b/bin/counted", from);
	spanfind__free(sites, n);

	/* A glob: counted_step from the debug file, exported_step from .dynsym. */
	find("b/bin/counted", "*_step", dirs, 2, &sites, &n);
	assert_int_equal(n, 2);
	assert_from_debug(&sites[0], "b/bin/counted", from);
	assert_int_equal(sites[1].err, 0);
	assert_string_equal(sites[1].symbol, "exported_step");
	assert_string_equal(sites[1].symbols_from, "");
	assert_int_equal(sites[1].vaddr, truth[1].vaddr);
	assert_int_equal(sites[1].offset, truth[1].offset);
	spanfind__free(sites, n);
}

/* Found by .gnu_debuglink: beside the object, in its .debug/, under DIR + its directory. */
static void test_spandebug__debuglink(void **state)
{
	char from[PATH_MAX], dir[PATH_MAX], rel[PATH_MAX];
	const char *dirs[] = { dir };
	struct span_site *sites;
	size_t n;

	(void)state;
	place("counted.stripped", "l1/bin/counted");
	place("counted.debug", "l1/bin/counted.debug");
	find("l1/bin/counted", "counted_step", NULL, 0, &sites, &n);
	assert_int_equal(n, 1);
	assert_from_debug(&sites[0], "l1/bin/counted", fx_path(from, "l1/bin/counted.debug"));
	spanfind__free(sites, n);

	place("counted.stripped", "l2/bin/counted");
	place("counted.debug", "l2/bin/.debug/counted.debug");
	find("l2/bin/counted", "counted_step", NULL, 0, &sites, &n);
	assert_int_equal(n, 1);
	assert_from_debug(&sites[0], "l2/bin/counted",
			  fx_path(from, "l2/bin/.debug/counted.debug"));
	spanfind__free(sites, n);

	/* DIR/OBJDIR/LINK: fx/l3/dbg + fx/l3/bin + /counted.debug. */
	place("counted.stripped", "l3/bin/counted");
	fx_path(dir, "l3/dbg");
	snprintf(rel, sizeof(rel), "l3/dbg%s/l3/bin/counted.debug", fx);
	place("counted.debug", rel);
	find("l3/bin/counted", "counted_step", dirs, 1, &sites, &n);
	assert_int_equal(n, 1);
	assert_from_debug(&sites[0], "l3/bin/counted", fx_path(from, "%s", rel));
	spanfind__free(sites, n);
}

/* A build-id file of another build is refused, saying so; a later good one is used. */
static void test_spandebug__wrong_build_id(void **state)
{
	char bad[PATH_MAX], good[PATH_MAX], obj[PATH_MAX], from[PATH_MAX], want[3 * PATH_MAX];
	const char *dirs[] = { bad, good };
	struct span_site *sites;
	size_t n;

	(void)state;
	place("counted.stripped", "w/bin/counted");
	place("other.debug", "w/bad/" ID_REL);
	place("counted.debug", "w/good/" ID_REL);
	fx_path(bad, "w/bad");
	fx_path(good, "w/good");
	fx_path(obj, "w/bin/counted");

	find("w/bin/counted", "counted_step", dirs, 1, &sites, &n);
	assert_int_equal(n, 1);
	assert_int_equal(sites[0].err, -ENOENT);
	assert_string_equal(sites[0].symbols_from, "");
	snprintf(
		want, sizeof(want),
		"%s is stripped (no .symtab), no function in its .dynsym matches 'counted_step', and debug file %s/" ID_REL
		" was refused: its build-id is not the object's",
		obj, bad);
	assert_string_equal(sites[0].reason, want);
	spanfind__free(sites, n);

	find("w/bin/counted", "counted_step", dirs, 2, &sites, &n);
	assert_int_equal(n, 1);
	assert_from_debug(&sites[0], "w/bin/counted", fx_path(from, "w/good/" ID_REL));
	spanfind__free(sites, n);
}

/* A debuglink file whose CRC32 is not the one the object names is refused. */
static void test_spandebug__wrong_crc(void **state)
{
	char obj[PATH_MAX], dbg[PATH_MAX], want[3 * PATH_MAX];
	struct span_site *sites;
	size_t n;

	(void)state;
	place("counted.stripped", "c/bin/counted");
	place("other.debug", "c/bin/counted.debug");
	fx_path(obj, "c/bin/counted");
	fx_path(dbg, "c/bin/counted.debug");

	find("c/bin/counted", "counted_step", NULL, 0, &sites, &n);
	assert_int_equal(n, 1);
	assert_int_equal(sites[0].err, -ENOENT);
	snprintf(
		want, sizeof(want),
		"%s is stripped (no .symtab), no function in its .dynsym matches 'counted_step', and debug file %s was refused: its CRC32 is ",
		obj, dbg);
	assert_memory_equal(sites[0].reason, want, strlen(want));
	assert_non_null(strstr(sites[0].reason, ", the object's .gnu_debuglink says "));
	spanfind__free(sites, n);
}

/* A debug file without .symtab, none at all, and a function neither file has. */
static void test_spandebug__not_found(void **state)
{
	char obj[PATH_MAX], dir[PATH_MAX], from[PATH_MAX], want[3 * PATH_MAX];
	const char *dirs[] = { dir };
	struct span_site *sites;
	size_t n;

	(void)state;
	place("counted.stripped", "n/bin/counted");
	place("nosym.debug", "n/nosym/" ID_REL);
	place("counted.debug", "n/debug/" ID_REL);
	fx_path(obj, "n/bin/counted");

	fx_path(dir, "n/nosym");
	find("n/bin/counted", "counted_step", dirs, 1, &sites, &n);
	assert_int_equal(n, 1);
	assert_int_equal(sites[0].err, -ENOENT);
	snprintf(
		want, sizeof(want),
		"%s is stripped (no .symtab), no function in its .dynsym matches 'counted_step', and debug file %s/" ID_REL
		" was refused: it has no .symtab with functions",
		obj, dir);
	assert_string_equal(sites[0].reason, want);
	spanfind__free(sites, n);

	find("n/bin/counted", "counted_step", NULL, 0, &sites, &n);
	assert_int_equal(n, 1);
	assert_int_equal(sites[0].err, -ENOENT);
	snprintf(
		want, sizeof(want),
		"%s is stripped (no .symtab), no function in its .dynsym matches 'counted_step', and no debug file of it was found (install its -dbgsym package, or give --debug-dir)",
		obj);
	assert_string_equal(sites[0].reason, want);
	/* Without a debug file a static function may be there unnamed: no mistake. */
	assert_false(sites[0].absent);
	spanfind__free(sites, n);

	fx_path(dir, "n/debug");
	find("n/bin/counted", "no_such_step", dirs, 1, &sites, &n);
	assert_int_equal(n, 1);
	assert_int_equal(sites[0].err, -ENOENT);
	snprintf(want, sizeof(want),
		 "no function of %s or of its debug file %s matches 'no_such_step'", obj,
		 fx_path(from, "n/debug/" ID_REL));
	assert_string_equal(sites[0].reason, want);
	/* The debug file names every function: the request is wrong. */
	assert_true(sites[0].absent);
	spanfind__free(sites, n);
}

/*
 * A process in its own root (a container): proc/93/root is a directory
 * holding /bin/counted and /usr/lib/debug, and the site names the debug
 * file as the process sees it. Its build-id file is there, then only its
 * debuglink file under /usr/lib/debug + /bin.
 */
static void test_spandebug__target_root(void **state)
{
	char *root = tree_new("spandebug-root"), path[PATH_MAX], want[PATH_MAX];
	const struct span_request req = { .symbol = "counted_step" };
	struct span_site *sites = NULL;
	size_t n = 0;

	(void)state;
	tree_put(root, "proc/93/maps",
		 "55d000000000-55d000001000 r--p 00000000 08:01 7 /bin/counted\n"
		 "55d000001000-55d000002000 r-xp 00001000 08:01 7 /bin/counted\n");
	place_in(root, "counted.stripped", "proc/93/root/bin/counted");
	place_in(root, "counted.debug", "proc/93/root/usr/lib/debug/" ID_REL);
	snprintf(path, sizeof(path), "%s/proc/93/exe", root);
	snprintf(want, sizeof(want), "%s/proc/93/root/bin/counted", root);
	assert_int_equal(symlink(want, path), 0);

	assert_int_equal(spanfind__discover(root, 93, &req, 1, NULL, &sites, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(sites[0].err, 0);
	assert_string_equal(sites[0].object, "/bin/counted");
	assert_string_equal(sites[0].open_path, want);
	assert_string_equal(sites[0].symbols_from, "/usr/lib/debug/" ID_REL);
	assert_int_equal(sites[0].offset, truth[0].offset);
	spanfind__free(sites, n);

	/* By its debuglink: /usr/lib/debug + /bin, in the target's root, not the host's. */
	snprintf(path, sizeof(path), "%s/proc/93/root/usr/lib/debug/" ID_REL, root);
	assert_int_equal(unlink(path), 0);
	place_in(root, "counted.debug", "proc/93/root/usr/lib/debug/bin/counted.debug");
	sites = NULL;
	n = 0;
	assert_int_equal(spanfind__discover(root, 93, &req, 1, NULL, &sites, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(sites[0].err, 0);
	assert_string_equal(sites[0].symbols_from, "/usr/lib/debug/bin/counted.debug");
	assert_int_equal(sites[0].offset, truth[0].offset);
	spanfind__free(sites, n);
	tree_free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spandebug__build_id),
		cmocka_unit_test(test_spandebug__debuglink),
		cmocka_unit_test(test_spandebug__wrong_build_id),
		cmocka_unit_test(test_spandebug__wrong_crc),
		cmocka_unit_test(test_spandebug__not_found),
		cmocka_unit_test(test_spandebug__target_root),
	};

	return cmocka_run_group_tests(tests, setup_fixtures, teardown_fixtures);
}

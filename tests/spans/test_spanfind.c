// SPDX-License-Identifier: MIT
/*
 * spanfind against real objects: the fixtures of tests/fixtures/spanfind are
 * compiled here with gcc and clang, as PIE and not, and stripped. Ground
 * truth never comes from nm or readelf: uselib --where prints each span's
 * run-time address less its object's load bias, and the bytes at a site's
 * file offset must be the function's patchable NOPs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spans/spanfind.h"
#include "testutil.h"

#define FIXTURES "tests/fixtures/spanfind"
#define SPANNED "build/workloads/spanned"
#define NR_STAGES 10

static char *fx; /* compiled fixtures */
static char repo[PATH_MAX];

static const char *const ccs[] = { "gcc", "clang" };

/* In source order, which is note order; the C names are the metrics with '_'. */
static const char *const stage_metrics[NR_STAGES] = {
	"stage-inner", "stage-middle", "stage-outer", "stage-recurse", "stage-sib-a",
	"stage-sib-b", "stage-sleep",  "stage-spin",  "stage-migrate", "stage-hold",
};
static const char *const stage_symbols[NR_STAGES] = {
	"stage_inner", "stage_middle", "stage_outer", "stage_recurse", "stage_sib_a",
	"stage_sib_b", "stage_sleep",  "stage_spin",  "stage_migrate", "stage_hold",
};

/* Runs argv with stdout into out (NULL: inherited); the exit status, -1 if killed. */
static int run_argv(const char *out, char *const argv[])
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (out) {
			int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

			if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
				_exit(126);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define RUN(out, ...) run_argv(out, (char *const[]){ __VA_ARGS__, NULL })

/* snprintf that fails the test rather than truncate. */
static void xsnprintf(char *out, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void xsnprintf(char *out, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, size, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < size);
}

static char *fx_path(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *fx_path(char *buf, const char *fmt, ...)
{
	char rel[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	xsnprintf(buf, PATH_MAX, "%s/%s", fx, rel);
	return buf;
}

static void read_at(const char *path, uint64_t off, void *buf, size_t n)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, n, (off_t)off), (ssize_t)n);
	close(fd);
}

/* The patchable entry of span.h: five 1-byte NOPs (gcc) or one 5-byte NOP (clang). */
static void assert_nops(const char *path, uint64_t off, const char *cc)
{
	unsigned char b[5];

	read_at(path, off, b, sizeof(b));
	if (!strcmp(cc, "clang"))
		assert_memory_equal(b, "\x0f\x1f\x44\x00", 4);
	else
		assert_memory_equal(b, "\x90\x90\x90\x90\x90", 5);
}

/* The workload is built with $(CC): either compiler's NOPs, exactly. */
static void assert_any_nops(const char *path, uint64_t off)
{
	unsigned char b[5];

	read_at(path, off, b, sizeof(b));
	if (b[0] == 0x0f)
		assert_memory_equal(b, "\x0f\x1f\x44\x00", 4);
	else
		assert_memory_equal(b, "\x90\x90\x90\x90\x90", 5);
}

static int setup_fixtures(void **state)
{
	char src[PATH_MAX], inc[PATH_MAX], dir[PATH_MAX], lib[PATH_MAX], out[PATH_MAX];
	char rpath[PATH_MAX + 16], cp[PATH_MAX];
	const char *kinds[][3] = { { "pie", "-fPIE", "-pie" }, { "nopie", "-fno-PIE", "-no-pie" } };
	size_t i, k;

	(void)state;
	assert_non_null(getcwd(repo, sizeof(repo)));
	fx = tree_new("spanfind");
	xsnprintf(inc, sizeof(inc), "-I%s/include", repo);
	for (i = 0; i < 2; i++) {
		fx_path(dir, "%s", ccs[i]);
		assert_int_equal(mkdir(dir, 0755), 0);
		xsnprintf(src, sizeof(src), "%s/libspanlib.c", FIXTURES);
		fx_path(lib, "%s/libspanlib.so", ccs[i]);
		assert_int_equal(RUN(NULL, (char *)ccs[i], "-O2", "-g", "-Wall", "-Wextra",
				     "-Werror", inc, "-shared", "-fPIC", src, "-o", lib),
				 0);
		xsnprintf(src, sizeof(src), "%s/uselib.c", FIXTURES);
		xsnprintf(rpath, sizeof(rpath), "-Wl,-rpath,%s", dir);
		xsnprintf(cp, sizeof(cp), "-L%s", dir);
		for (k = 0; k < 2; k++) {
			fx_path(out, "%s/uselib-%s", ccs[i], kinds[k][0]);
			assert_int_equal(RUN(NULL, (char *)ccs[i], "-O2", "-g", "-Wall", "-Wextra",
					     "-Werror", inc, (char *)kinds[k][1],
					     (char *)kinds[k][2], src, cp, "-lspanlib", rpath, "-o",
					     out),
					 0);
		}
	}
	/* Stripped copies of everything built so far, and of the workload. */
	for (i = 0; i < 2; i++) {
		const char *names[] = { "libspanlib.so", "uselib-pie", "uselib-nopie" };

		for (k = 0; k < 3; k++) {
			fx_path(src, "%s/%s", ccs[i], names[k]);
			fx_path(out, "%s/%s.stripped", ccs[i], names[k]);
			assert_int_equal(RUN(NULL, "strip", "--strip-all", src, "-o", out), 0);
		}
	}
	if (access(SPANNED, X_OK))
		fail_msg("%s is missing: run 'make workloads' from the repository root", SPANNED);
	fx_path(out, "spanned.stripped");
	assert_int_equal(RUN(NULL, "strip", "--strip-all", SPANNED, "-o", out), 0);

	fx_path(out, "bad");
	assert_int_equal(RUN(NULL, "gcc", "-O2", "-g", "-Wall", "-Wextra", "-Werror", inc,
			     FIXTURES "/badmain.c", FIXTURES "/badnotes.s", "-o", out),
			 0);
	tree_put(fx, "tiny.s", "\t.text\n\tnop\n\t.section .note.GNU-stack,\"\",@progbits\n");
	fx_path(src, "tiny.s");
	fx_path(out, "tiny32.o");
	assert_int_equal(RUN(NULL, "gcc", "-m32", "-c", src, "-o", out), 0);
	fx_path(out, "tiny64.o");
	assert_int_equal(RUN(NULL, "gcc", "-c", src, "-o", out), 0);
	return 0;
}

static int teardown_fixtures(void **state)
{
	(void)state;
	tree_free(fx);
	return 0;
}

struct where {
	uint64_t use_static, use_global, lib_work;
};

/* Runs "uselib --where": link-time addresses from the running program. */
static void where_of(const char *exe, struct where *w)
{
	char out[PATH_MAX];
	unsigned long a, b, c;
	FILE *f;

	fx_path(out, "where.txt");
	assert_int_equal(RUN(out, (char *)exe, "--where"), 0);
	f = fopen(out, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "use-static %lx use-global %lx lib-work %lx", &a, &b, &c), 3);
	fclose(f);
	w->use_static = a;
	w->use_global = b;
	w->lib_work = c;
}

static void assert_note_site(const struct span_site *s, const char *object, const char *path,
			     const char *metric, const char *symbol, uint64_t vaddr, const char *cc)
{
	assert_int_equal(s->err, 0);
	assert_string_equal(s->reason, "");
	assert_true(s->from_note);
	assert_string_equal(s->object, object);
	assert_string_equal(s->open_path, path);
	assert_string_equal(s->metric, metric);
	assert_string_equal(s->symbol, symbol);
	assert_int_equal(s->vaddr, vaddr);
	assert_nops(path, s->offset, cc);
}

static void test_spanfind__notes_gcc_clang_pie_stripped(void **state)
{
	const char *kinds[] = { "pie", "nopie" };
	char exe[PATH_MAX], path[PATH_MAX];
	size_t i, k, strip;

	(void)state;
	for (i = 0; i < 2; i++) {
		for (k = 0; k < 2; k++) {
			uint64_t offsets[2] = { 0, 0 };
			struct where w;

			fx_path(exe, "%s/uselib-%s", ccs[i], kinds[k]);
			where_of(exe, &w);
			for (strip = 0; strip < 2; strip++) {
				struct span_site *sites = NULL;
				size_t n = 0;

				xsnprintf(path, sizeof(path), "%s%s", exe,
					  strip ? ".stripped" : "");
				assert_int_equal(
					spanfind__notes(path, "/target/uselib", &sites, &n), 0);
				assert_int_equal(n, 2);
				/* The stripped executable keeps its notes but not its names. */
				assert_note_site(&sites[0], "/target/uselib", path, "use-static",
						 strip ? "" : "use_static", w.use_static, ccs[i]);
				assert_note_site(&sites[1], "/target/uselib", path, "use-global",
						 strip ? "" : "use_global", w.use_global, ccs[i]);
				if (!strip) {
					offsets[0] = sites[0].offset;
					offsets[1] = sites[1].offset;
				}
				assert_int_equal(sites[0].offset, offsets[0]);
				assert_int_equal(sites[1].offset, offsets[1]);
				/* Not PIE: linked at 0x400000, so the offset is not the address. */
				if (k == 1)
					assert_true(sites[0].offset < sites[0].vaddr);
				spanfind__free(sites, n);
			}

			/* The same address and offset from the symbol table. */
			{
				struct span_site *sites = NULL;
				size_t n = 0;

				assert_int_equal(
					spanfind__symbols(exe, exe, "use_static", NULL, &sites, &n),
					0);
				assert_int_equal(n, 1);
				assert_int_equal(sites[0].err, 0);
				assert_false(sites[0].from_note);
				assert_string_equal(sites[0].symbol, "use_static");
				assert_string_equal(sites[0].metric, "use-static");
				assert_int_equal(sites[0].vaddr, w.use_static);
				assert_int_equal(sites[0].offset, offsets[0]);
				spanfind__free(sites, n);
			}
		}
	}
}

static void test_spanfind__shared_library(void **state)
{
	char exe[PATH_MAX], lib[PATH_MAX], path[PATH_MAX];
	size_t i, strip;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct span_site *sites = NULL;
		uint64_t offset = 0;
		struct where w;
		size_t n = 0;

		fx_path(exe, "%s/uselib-pie", ccs[i]);
		where_of(exe, &w);
		fx_path(lib, "%s/libspanlib.so", ccs[i]);
		for (strip = 0; strip < 2; strip++) {
			xsnprintf(path, sizeof(path), "%s%s", lib, strip ? ".stripped" : "");
			n = 0;
			assert_int_equal(
				spanfind__notes(path, "/usr/lib/libspanlib.so", &sites, &n), 0);
			assert_int_equal(n, 1);
			/* Exported, so named by .dynsym even when stripped; global before weak alias. */
			assert_note_site(&sites[0], "/usr/lib/libspanlib.so", path, "lib-work",
					 "lib_work", w.lib_work, ccs[i]);
			if (!strip)
				offset = sites[0].offset;
			assert_int_equal(sites[0].offset, offset);
			spanfind__free(sites, n);
			sites = NULL;

			/* lib_alias shares lib_work's address: the glob yields it once. */
			n = 0;
			assert_int_equal(spanfind__symbols(path, lib, "lib_*", NULL, &sites, &n),
					 0);
			assert_int_equal(n, 1);
			assert_string_equal(sites[0].symbol, "lib_work");
			assert_string_equal(sites[0].metric, "lib-work");
			assert_int_equal(sites[0].vaddr, w.lib_work);
			assert_int_equal(sites[0].offset, offset);
			assert_int_equal(
				spanfind__symbols(path, lib, "lib_alias", "aliased", &sites, &n),
				0);
			assert_int_equal(n, 2);
			assert_string_equal(sites[1].symbol, "lib_alias");
			assert_string_equal(sites[1].metric, "aliased");
			assert_int_equal(sites[1].vaddr, w.lib_work);
			assert_int_equal(sites[1].offset, offset);
			spanfind__free(sites, n);
			sites = NULL;
		}
	}
}

/* The workload's eight spans, static and not; stripped, the same sites without names. */
static void test_spanfind__static_functions(void **state)
{
	struct span_site *sites = NULL, *stripped = NULL, *sym = NULL;
	size_t n = 0, ns = 0, nsym = 0, i;
	char path[PATH_MAX];

	(void)state;
	assert_int_equal(spanfind__notes(SPANNED, "/w/spanned", &sites, &n), 0);
	assert_int_equal(n, NR_STAGES);
	fx_path(path, "spanned.stripped");
	assert_int_equal(spanfind__notes(path, "/w/spanned", &stripped, &ns), 0);
	assert_int_equal(ns, NR_STAGES);
	for (i = 0; i < NR_STAGES; i++) {
		assert_int_equal(sites[i].err, 0);
		assert_true(sites[i].from_note);
		assert_string_equal(sites[i].metric, stage_metrics[i]);
		assert_string_equal(sites[i].symbol, stage_symbols[i]);
		assert_any_nops(SPANNED, sites[i].offset);

		assert_int_equal(spanfind__symbols(SPANNED, "/w/spanned", stage_symbols[i], NULL,
						   &sym, &nsym),
				 0);
		assert_int_equal(nsym, i + 1);
		assert_int_equal(sym[i].vaddr, sites[i].vaddr);
		assert_int_equal(sym[i].offset, sites[i].offset);
		assert_string_equal(sym[i].metric, stage_metrics[i]);

		assert_int_equal(stripped[i].err, 0);
		assert_string_equal(stripped[i].metric, stage_metrics[i]);
		assert_string_equal(stripped[i].symbol, "");
		assert_int_equal(stripped[i].vaddr, sites[i].vaddr);
		assert_int_equal(stripped[i].offset, sites[i].offset);
		assert_any_nops(path, stripped[i].offset);
	}
	spanfind__free(sites, n);
	spanfind__free(stripped, ns);
	spanfind__free(sym, nsym);
}

static void test_spanfind__symbols(void **state)
{
	struct span_site *sites = NULL, *notes = NULL;
	size_t n = 0, nn = 0, i;
	char path[PATH_MAX];

	(void)state;
	assert_int_equal(spanfind__notes(SPANNED, SPANNED, &notes, &nn), 0);
	assert_int_equal(nn, NR_STAGES);

	assert_int_equal(spanfind__symbols(SPANNED, "/w/spanned", "stage_sib_?", NULL, &sites, &n),
			 0);
	assert_int_equal(n, 2);
	/* Address order: stage_sib_a is defined first. */
	assert_string_equal(sites[0].symbol, "stage_sib_a");
	assert_string_equal(sites[0].metric, "stage-sib-a");
	assert_int_equal(sites[0].vaddr, notes[4].vaddr);
	assert_string_equal(sites[1].symbol, "stage_sib_b");
	assert_string_equal(sites[1].metric, "stage-sib-b");
	assert_int_equal(sites[1].vaddr, notes[5].vaddr);
	assert_string_equal(sites[1].object, "/w/spanned");
	assert_string_equal(sites[1].open_path, SPANNED);
	spanfind__free(sites, n);
	sites = NULL;
	n = 0;

	assert_int_equal(
		spanfind__symbols(SPANNED, "/w/spanned", "stage_*", "all-stages", &sites, &n), 0);
	assert_int_equal(n, NR_STAGES);
	for (i = 0; i < NR_STAGES; i++) {
		size_t j;

		assert_int_equal(sites[i].err, 0);
		assert_string_equal(sites[i].metric, "all-stages");
		if (i)
			assert_true(sites[i].vaddr > sites[i - 1].vaddr);
		for (j = 0; j < NR_STAGES && strcmp(sites[i].symbol, stage_symbols[j]); j++)
			;
		assert_true(j < NR_STAGES);
		assert_int_equal(sites[i].vaddr, notes[j].vaddr);
		assert_int_equal(sites[i].offset, notes[j].offset);
	}
	spanfind__free(sites, n);
	sites = NULL;
	n = 0;

	assert_int_equal(
		spanfind__symbols(SPANNED, "/w/spanned", "no_such_symbol", NULL, &sites, &n),
		-ENOENT);
	assert_int_equal(n, 1);
	assert_int_equal(sites[0].err, -ENOENT);
	assert_string_equal(sites[0].symbol, "no_such_symbol");
	assert_string_equal(sites[0].reason, "no function of /w/spanned matches 'no_such_symbol'");

	/* Appends: the error site stays, the stripped copy's adds another. */
	fx_path(path, "spanned.stripped");
	assert_int_equal(spanfind__symbols(path, "/w/spanned", "stage_*", "s", &sites, &n),
			 -ENOENT);
	assert_int_equal(n, 2);
	assert_int_equal(sites[1].err, -ENOENT);
	assert_string_equal(sites[1].metric, "s");
	assert_string_equal(
		sites[1].reason,
		"/w/spanned is stripped (no .symtab) and no function in its .dynsym matches 'stage_*'");

	/* Bad arguments append nothing. */
	assert_int_equal(spanfind__symbols(SPANNED, SPANNED, "", NULL, &sites, &n), -EINVAL);
	assert_int_equal(spanfind__symbols(SPANNED, SPANNED, "stage_*", "Bad", &sites, &n),
			 -EINVAL);
	assert_int_equal(spanfind__symbols(SPANNED, SPANNED, "stage_*", "a--b", &sites, &n),
			 -EINVAL);
	assert_int_equal(n, 2);
	spanfind__free(sites, n);
	spanfind__free(notes, nn);
}

/* badnotes.s lists, in order, what each of its notes should give. */
static void test_spanfind__malformed_notes(void **state)
{
	const struct {
		int err;
		const char *symbol, *metric, *reason;
	} want[] = {
		{ 0, "main_helper", "main-helper", "" },
		{ 0, "note_fn_a", "good-one", "" },
		{ -EINVAL, "note_fn_b", "bad-flags",
		  "span note 3 of bad for function 'note_fn_b' at 0x%llx has flags 0x1; version 1 requires 0" },
		{ -EINVAL, "note_fn_b", "",
		  "span note 4 of bad for function 'note_fn_b' at 0x%llx has a metric without its NUL" },
		{ -EINVAL, "note_fn_b", "",
		  "span note 5 of bad for function 'note_fn_b' at 0x%llx has metric 'Bad_Metric', which is not kebab-case of at most 63 bytes" },
		{ -EINVAL, "", "",
		  "span note 6 of bad has a descriptor of 8 bytes; a span needs at least 13" },
		{ -EINVAL, "", "far-away",
		  "span note 7 of bad for metric 'far-away' has address 0x7fff00000000, outside every executable segment" },
		{ -EINVAL, "", "", "span note 8 of bad has type 2; khbpf knows only type 1" },
		{ -EINVAL, "note_fn_b", "",
		  "span note 9 of bad for function 'note_fn_b' at 0x%llx has metric 'a123456789-123456789-123456789-123456789-123456789-123456789-123', which is not kebab-case of at most 63 bytes" },
		{ -EEXIST, "note_fn_a", "other-name",
		  "span note 11 of bad gives function 'note_fn_a' at 0x%llx the metric 'other-name', but it is already annotated as 'good-one'" },
		{ 0, "note_fn_c", "good-two", "" },
		{ -EINVAL, "", "in-rodata",
		  "span note 13 of bad for metric 'in-rodata' has address 0x%llx, outside every executable segment" },
		/* readelf agrees: the bad note is at 0x274 of a 0x28c-byte section. */
		{ -EINVAL, "", "",
		  ".note.khbpf of bad is cut short: the note at byte 628 overruns the section's 652 bytes" },
	};
	struct span_site *sites = NULL, *sym = NULL;
	char path[PATH_MAX], reason[512];
	size_t n = 0, nsym = 0, i;

	(void)state;
	fx_path(path, "bad");
	assert_int_equal(spanfind__notes(path, "bad", &sites, &n), 0);
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < n; i++) {
		assert_true(sites[i].from_note);
		assert_int_equal(sites[i].err, want[i].err);
		assert_string_equal(sites[i].symbol, want[i].symbol);
		assert_string_equal(sites[i].metric, want[i].metric);
		xsnprintf(reason, sizeof(reason), want[i].reason,
			  (unsigned long long)sites[i].vaddr);
		assert_string_equal(sites[i].reason, reason);
	}
	/* The good ones point at the functions' NOPs; note_fn_c is local. */
	assert_nops(path, sites[0].offset, "gcc");
	assert_nops(path, sites[1].offset, "gcc");
	assert_nops(path, sites[10].offset, "gcc");
	assert_int_equal(spanfind__symbols(path, "bad", "note_fn_?", NULL, &sym, &nsym), 0);
	assert_int_equal(nsym, 3);
	assert_int_equal(sites[1].vaddr, sym[0].vaddr);
	assert_int_equal(sites[2].vaddr, sym[1].vaddr);
	assert_int_equal(sites[10].vaddr, sym[2].vaddr);
	assert_int_equal(sites[10].offset, sym[2].offset);
	assert_int_equal(sites[9].vaddr, sites[1].vaddr);
	spanfind__free(sites, n);
	spanfind__free(sym, nsym);
}

static void expect_file_error(const char *path, int err, const char *reason)
{
	struct span_site *sites = NULL;
	size_t n = 0;

	assert_int_equal(spanfind__notes(path, path, &sites, &n), err);
	assert_int_equal(n, 1);
	assert_int_equal(sites[0].err, err);
	assert_true(sites[0].from_note);
	assert_string_equal(sites[0].reason, reason);
	spanfind__free(sites, n);
}

static void test_spanfind__not_elf(void **state)
{
	char path[PATH_MAX], reason[PATH_MAX + 128];
	struct span_site *sites = NULL;
	size_t n = 0;
	int fd;

	(void)state;
	tree_put(fx, "notelf.txt", "#!/bin/sh\necho this is not an ELF file\n");
	fx_path(path, "notelf.txt");
	xsnprintf(reason, sizeof(reason), "%s is not an ELF file", path);
	expect_file_error(path, -ENOEXEC, reason);
	assert_int_equal(spanfind__symbols(path, "/x/notelf", "foo", NULL, &sites, &n), -ENOEXEC);
	assert_int_equal(n, 1);
	assert_false(sites[0].from_note);
	assert_string_equal(sites[0].symbol, "foo");
	assert_string_equal(sites[0].reason, "cannot look up 'foo': /x/notelf is not an ELF file");
	spanfind__free(sites, n);

	tree_put(fx, "empty", "");
	fx_path(path, "empty");
	xsnprintf(reason, sizeof(reason), "%s is not an ELF file", path);
	expect_file_error(path, -ENOEXEC, reason);

	fx_path(path, "missing");
	xsnprintf(reason, sizeof(reason), "cannot open %s: No such file or directory", path);
	expect_file_error(path, -ENOENT, reason);

	fx_path(path, "gcc");
	xsnprintf(reason, sizeof(reason), "%s is a directory, not a regular file", path);
	expect_file_error(path, -EISDIR, reason);

	fx_path(path, "tiny32.o");
	xsnprintf(reason, sizeof(reason), "%s is not a 64-bit ELF file", path);
	expect_file_error(path, -ENOEXEC, reason);

	fx_path(path, "tiny64.o");
	xsnprintf(reason, sizeof(reason), "%s is not an executable or shared object (ELF type 1)",
		  path);
	expect_file_error(path, -ENOEXEC, reason);

	/* The first 64 bytes of a real executable: an ELF header pointing past the end. */
	{
		char head[64], src[PATH_MAX];

		fx_path(src, "gcc/uselib-pie");
		read_at(src, 0, head, sizeof(head));
		fx_path(path, "head64");
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, head, sizeof(head)), (ssize_t)sizeof(head));
		close(fd);
		xsnprintf(reason, sizeof(reason),
			  "%s is cut short: its headers end past its 64 bytes", path);
		expect_file_error(path, -EINVAL, reason);
	}

	assert_int_equal(spanfind__notes(NULL, "x", &sites, &n), -EINVAL);
	assert_int_equal(spanfind__notes("x", "x", NULL, &n), -EINVAL);
}

/* 4100 one-byte functions, each with a note: the bound keeps 4096 of either. */
static void test_spanfind__bound(void **state)
{
	struct span_site *sites = NULL;
	char src[PATH_MAX], so[PATH_MAX];
	size_t n = 0, i;
	FILE *f;

	(void)state;
	fx_path(src, "many.s");
	f = fopen(src, "w");
	assert_non_null(f);
	fprintf(f, "\t.text\n");
	for (i = 0; i < 4100; i++)
		fprintf(f,
			"\t.globl f_%zu\n\t.type f_%zu, @function\nf_%zu:\n\tnop\n\t.size f_%zu, 1\n",
			i, i, i, i);
	fprintf(f, "\t.section .note.khbpf, \"\", @note\n");
	for (i = 0; i < 4100; i++)
		fprintf(f,
			"\t.balign 4\n\t.4byte 6, 2f - 1f, 1\n\t.asciz \"khbpf\"\n\t.balign 4\n"
			"1:\t.8byte f_%zu\n\t.4byte 0\n\t.asciz \"m-%zu\"\n2:\t.balign 4\n",
			i, i);
	fprintf(f, "\t.section .note.GNU-stack, \"\", @progbits\n");
	assert_int_equal(fclose(f), 0);
	fx_path(so, "many.so");
	assert_int_equal(RUN(NULL, "gcc", "-shared", "-nostdlib", src, "-o", so), 0);

	assert_int_equal(spanfind__notes(so, "many.so", &sites, &n), 0);
	assert_int_equal(n, SPANFIND_SITES_MAX + 1);
	for (i = 0; i < SPANFIND_SITES_MAX; i++)
		assert_int_equal(sites[i].err, 0);
	assert_string_equal(sites[4095].metric, "m-4095");
	assert_string_equal(sites[4095].symbol, "f_4095");
	assert_int_equal(sites[4095].vaddr, sites[0].vaddr + 4095);
	assert_int_equal(sites[4096].err, -E2BIG);
	assert_string_equal(sites[4096].reason,
			    "4 span notes of many.so were dropped: at most 4096 per object");
	spanfind__free(sites, n);
	sites = NULL;
	n = 0;

	assert_int_equal(spanfind__symbols(so, "many.so", "f_*", "fs", &sites, &n), 0);
	assert_int_equal(n, SPANFIND_SITES_MAX + 1);
	assert_int_equal(sites[4095].err, 0);
	assert_int_equal(sites[4096].err, -E2BIG);
	assert_string_equal(
		sites[4096].reason,
		"4 functions of many.so matching 'f_*' were dropped: at most 4096 per object");
	spanfind__free(sites, n);
}

static void test_spanfind__vaddr_to_offset(void **state)
{
	GElf_Phdr ph, text = { 0 };
	char path[PATH_MAX];
	uint64_t off = 0;
	struct where w;
	size_t i, nph;
	Elf *elf;
	int fd;

	(void)state;
	fx_path(path, "gcc/uselib-nopie");
	where_of(path, &w);
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);

	assert_int_equal(spanfind__vaddr_to_offset(elf, w.use_static, &off), 0);
	assert_nops(path, off, "gcc");
	assert_int_equal(elf_getphdrnum(elf, &nph), 0);
	for (i = 0; i < nph; i++) {
		assert_non_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			text = ph;
	}
	assert_int_equal(text.p_type, PT_LOAD);
	assert_int_equal(off, w.use_static - text.p_vaddr + text.p_offset);
	/* Both ends of the executable segment's file bytes. */
	assert_int_equal(spanfind__vaddr_to_offset(elf, text.p_vaddr, &off), 0);
	assert_int_equal(off, text.p_offset);
	assert_int_equal(spanfind__vaddr_to_offset(elf, text.p_vaddr + text.p_filesz - 1, &off), 0);
	assert_int_equal(off, text.p_offset + text.p_filesz - 1);
	off = 7;
	assert_int_equal(spanfind__vaddr_to_offset(elf, text.p_vaddr + text.p_filesz, &off),
			 -ENOENT);
	assert_int_equal(spanfind__vaddr_to_offset(elf, text.p_vaddr - 1, &off), -ENOENT);
	/* The ELF header is mapped, but not executable. */
	assert_int_equal(spanfind__vaddr_to_offset(elf, 0x400000, &off), -ENOENT);
	assert_int_equal(spanfind__vaddr_to_offset(elf, 0, &off), -ENOENT);
	assert_int_equal(off, 7);
	assert_int_equal(spanfind__vaddr_to_offset(NULL, 0, &off), -EINVAL);
	assert_int_equal(spanfind__vaddr_to_offset(elf, 0, NULL), -EINVAL);
	elf_end(elf);
	close(fd);
}

static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (strstr(info->dlpi_name, "/libc.so.6")) {
		assert_non_null(realpath(info->dlpi_name, data));
		return 1;
	}
	return 0;
}

/*
 * libc's functions that return twice are never sites (a return probe on
 * sigsetjmp crashes every program that maps libc and calls it), by any of
 * their names; their neighbours are.
 */
static void test_spanfind__returns_twice(void **state)
{
	char libc[PATH_MAX] = "";
	struct span_site *sites = NULL;
	size_t n = 0, i, refused = 0, setjmps = 0;

	(void)state;
	assert_int_equal(dl_iterate_phdr(find_libc, libc), 1);
	assert_int_equal(spanfind__symbols(libc, "libc.so.6", "*jmp*", NULL, &sites, &n), 0);
	for (i = 0; i < n; i++) {
		bool twice = strstr(sites[i].symbol, "setjmp") != NULL;

		setjmps += twice;
		if (sites[i].err) {
			refused++;
			assert_true(twice);
			assert_int_equal(sites[i].err, -EPERM);
			assert_non_null(strstr(sites[i].reason, "returns twice"));
		}
	}
	/* setjmp, _setjmp and __sigsetjmp; longjmp and its kin stay sites. */
	assert_true(setjmps >= 3);
	assert_int_equal(refused, setjmps);
	assert_true(n > setjmps);
	spanfind__free(sites, n);
	sites = NULL; /* appended to: a fresh list */
	n = 0;
	assert_int_equal(spanfind__symbols(libc, "libc.so.6", "*context", NULL, &sites, &n), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(sites[i].err != 0,
				 !strcmp(sites[i].symbol, "getcontext") ||
					 !strcmp(sites[i].symbol, "swapcontext"));
	spanfind__free(sites, n);
}

/*
 * A fixture root: proc/90/root leads to "/", proc/90/exe to uselib, and the
 * maps list, before uselib, its library, a text file mapped executable and a
 * deleted file. Every path opened must go through the root.
 */
/* A site keeps the file it was read from (spanexec.c knows it again by that). */
static void assert_site_file(const struct span_site *s, const char *path)
{
	struct stat st;

	if (!path) {
		assert_int_equal(s->file.ino, 0);
		assert_int_equal(s->file.dev, 0);
		assert_int_equal(s->file.size, 0);
		return;
	}
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(s->file.ino, st.st_ino);
	assert_int_equal(s->file.dev, st.st_dev);
	assert_int_equal(s->file.size, st.st_size);
	assert_int_equal(s->file.mtime_ns,
			 (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec);
	assert_false(s->file.overlay);
}

static void test_spanfind__discover_fixture_root(void **state)
{
	char *root = tree_new("spanfind-root"), maps[5 * PATH_MAX], path[PATH_MAX];
	char exe[PATH_MAX], lib[PATH_MAX], want[2 * PATH_MAX];
	const struct span_request reqs[] = {
		{ .object = NULL, .symbol = "use_*", .metric = NULL },
		{ .object = NULL, .symbol = "use_*", .metric = "uses" },
	};
	const char *gone = "/nonexistent-khbpf/libgone.so (deleted)";
	struct span_site *sites = NULL;
	struct where w;
	size_t n = 0;

	(void)state;
	fx_path(exe, "clang/uselib-nopie");
	fx_path(lib, "clang/libspanlib.so");
	where_of(exe, &w);
	tree_put(root, "script.txt", "not an ELF file\n");
	xsnprintf(maps, sizeof(maps),
		  "7f0000000000-7f0000001000 r-xp 00001000 08:01 2 %s\n"
		  "7f0000001000-7f0000002000 r-xp 00000000 08:01 3 %s/script.txt\n"
		  "7f0000002000-7f0000003000 r-xp 00000000 08:01 4 %s\n"
		  "00400000-00401000 r--p 00000000 08:01 1 %s\n"
		  "00401000-00402000 r-xp 00001000 08:01 1 %s\n",
		  lib, root, gone, exe, exe);
	tree_put(root, "proc/90/maps", maps);
	xsnprintf(path, sizeof(path), "%s/proc/90/root", root);
	assert_int_equal(symlink("/", path), 0);
	xsnprintf(path, sizeof(path), "%s/proc/90/exe", root);
	assert_int_equal(symlink(exe, path), 0);

	assert_int_equal(spanfind__discover(root, 90, reqs, 2, NULL, &sites, &n), 0);
	/*
	 * Notes in maps order: the library's, none from the text file, an
	 * error for the deleted file, uselib's. The first request repeats
	 * uselib's notes (same offsets and metrics) and adds nothing; the
	 * second gives both functions again under "uses", in address order.
	 */
	assert_int_equal(n, 6);
	xsnprintf(want, sizeof(want), "%s/proc/90/root%s", root, lib);
	assert_note_site(&sites[0], lib, want, "lib-work", "lib_work", w.lib_work, "clang");
	assert_int_equal(sites[1].err, -ENOENT);
	assert_true(sites[1].from_note);
	assert_string_equal(sites[1].object, gone);
	xsnprintf(want, sizeof(want), "%s/proc/90/root%s", root, gone);
	assert_string_equal(sites[1].open_path, want);
	xsnprintf(want, sizeof(want),
		  "cannot open %s: No such file or directory (deleted after it was mapped)", gone);
	assert_string_equal(sites[1].reason, want);
	xsnprintf(want, sizeof(want), "%s/proc/90/root%s", root, exe);
	assert_note_site(&sites[2], exe, want, "use-static", "use_static", w.use_static, "clang");
	assert_note_site(&sites[3], exe, want, "use-global", "use_global", w.use_global, "clang");
	assert_false(sites[4].from_note);
	assert_string_equal(sites[4].object, exe);
	assert_string_equal(sites[4].open_path, want);
	assert_string_equal(sites[4].symbol, "use_static");
	assert_string_equal(sites[4].metric, "uses");
	assert_int_equal(sites[4].offset, sites[2].offset);
	assert_string_equal(sites[5].symbol, "use_global");
	assert_string_equal(sites[5].metric, "uses");
	assert_int_equal(sites[5].offset, sites[3].offset);
	assert_site_file(&sites[0], lib);
	assert_site_file(&sites[1], NULL);
	for (size_t i = 2; i < 6; i++)
		assert_site_file(&sites[i], exe);
	spanfind__free(sites, n);
	tree_free(root);
}

/*
 * A process chrooted in its own mount namespace: the paths in its maps do
 * not resolve under proc/PID/root (here an empty directory), so each object
 * is opened through proc/PID/map_files/START-END, the mapping itself.
 */
static void test_spanfind__discover_map_files(void **state)
{
	char *root = tree_new("spanfind-mapfiles"), maps[3 * PATH_MAX], path[PATH_MAX];
	char exe[PATH_MAX], lib[PATH_MAX], want[2 * PATH_MAX];
	struct span_site *sites = NULL;
	struct where w;
	size_t n = 0;

	(void)state;
	fx_path(exe, "clang/uselib-nopie");
	fx_path(lib, "clang/libspanlib.so");
	where_of(exe, &w);
	xsnprintf(maps, sizeof(maps),
		  "7f0000000000-7f0000001000 r-xp 00001000 08:01 2 /elsewhere%s\n"
		  "00400000-00401000 r--p 00000000 08:01 1 /elsewhere%s\n"
		  "00401000-00402000 r-xp 00001000 08:01 1 /elsewhere%s\n",
		  lib, exe, exe);
	tree_put(root, "proc/91/maps", maps);
	tree_put(root, "proc/91/root/.keep", "");
	tree_put(root, "proc/91/map_files/.keep", "");
	xsnprintf(path, sizeof(path), "%s/proc/91/map_files/7f0000000000-7f0000001000", root);
	assert_int_equal(symlink(lib, path), 0);
	xsnprintf(path, sizeof(path), "%s/proc/91/map_files/00400000-00401000", root);
	assert_int_equal(symlink(exe, path), 0);
	xsnprintf(path, sizeof(path), "%s/proc/91/exe", root);
	assert_int_equal(symlink(exe, path), 0);

	assert_int_equal(spanfind__discover(root, 91, NULL, 0, NULL, &sites, &n), 0);
	assert_int_equal(n, 3);
	xsnprintf(path, sizeof(path), "/elsewhere%s", lib);
	xsnprintf(want, sizeof(want), "%s/proc/91/map_files/7f0000000000-7f0000001000", root);
	assert_note_site(&sites[0], path, want, "lib-work", "lib_work", w.lib_work, "clang");
	/* The first mapping of the executable names it, not the later one. */
	xsnprintf(path, sizeof(path), "/elsewhere%s", exe);
	xsnprintf(want, sizeof(want), "%s/proc/91/map_files/00400000-00401000", root);
	assert_note_site(&sites[1], path, want, "use-static", "use_static", w.use_static, "clang");
	assert_note_site(&sites[2], path, want, "use-global", "use_global", w.use_global, "clang");
	spanfind__free(sites, n);
	tree_free(root);
}

static void test_spanfind__discover_errors(void **state)
{
	struct span_request bad_metric = { .object = NULL, .symbol = "f", .metric = "Bad" };
	struct span_request no_symbol = { .object = "x", .symbol = "", .metric = NULL };
	struct span_site *sites = NULL;
	size_t n = 0;
	pid_t pid;
	int st;

	(void)state;
	/* A reaped child's pid: nothing there (until reused, which takes a while). */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(spanfind__discover("/", pid, NULL, 0, NULL, &sites, &n), -ESRCH);
	assert_int_equal(spanfind__discover("/", getpid(), &bad_metric, 1, NULL, &sites, &n),
			 -EINVAL);
	assert_int_equal(spanfind__discover("/", getpid(), &no_symbol, 1, NULL, &sites, &n),
			 -EINVAL);
	assert_int_equal(spanfind__discover("/", getpid(), NULL, 1, NULL, &sites, &n), -EINVAL);
	assert_null(sites);
	assert_int_equal(n, 0);
}

struct child {
	pid_t pid;
	int in, out;
};

/* build/workloads/spanned --wait, past "ready": every library mapped, nothing run yet. */
static void child_start(struct child *c, char *const argv[])
{
	int in[2], out[2];
	char line[16];
	ssize_t len;

	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	fflush(NULL);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in = in[1];
	c->out = out[0];
	len = read(c->out, line, 6);
	assert_int_equal(len, 6);
	assert_memory_equal(line, "ready\n", 6);
}

/* EOF on its stdin lets it run; returns what it printed after "ready". */
static int child_finish(struct child *c, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t r;
	int st;

	close(c->in);
	while (len < size - 1 && (r = read(c->out, buf + len, size - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = '\0';
	close(c->out);
	assert_int_equal(waitpid(c->pid, &st, 0), c->pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const struct span_site *find_site(const struct span_site *s, size_t n, const char *object,
					 const char *symbol, const char *metric)
{
	const struct span_site *found = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcmp(s[i].object, object) || strcmp(s[i].symbol, symbol) ||
		    strcmp(s[i].metric, metric))
			continue;
		assert_null(found);
		found = &s[i];
	}
	assert_non_null(found);
	return found;
}

#define NR_REQS 9

static void test_spanfind__discover_live(void **state)
{
	const char *args[] = {
		"libc.so.6:getpid",
		"nosuchlib.so:foo",
		"spanned:no_such_symbol",
		"stage_sib_*=sibs",
		"workloads/spanned:stage_outer=outer-req",
		"libc.so:getpid", /* libc.so.6 by prefix, and a duplicate of the first */
		"spanne:stage_outer", /* a prefix, but not up to a '.' */
		"orkloads/spanned:stage_outer", /* a suffix, but not from a '/' */
		NULL, /* an absolute path not mapped by the child */
	};
	struct span_site *sites = NULL, *notes = NULL;
	char obj[PATH_MAX], libc[PATH_MAX] = "", lib[PATH_MAX + 8], root[64], out[512];
	char bufs[NR_REQS][PATH_MAX + 16], want[PATH_MAX + 64];
	const struct spanfind_opts no_notes = { .no_annotations = true };
	struct span_request reqs[NR_REQS];
	size_t n = 0, nn = 0, i;
	const struct span_site *s;
	unsigned char code[16];
	struct child c;

	(void)state;
	assert_non_null(realpath(SPANNED, obj));
	assert_int_equal(dl_iterate_phdr(find_libc, libc), 1);
	fx_path(lib, "gcc/libspanlib.so:lib_*");
	args[NR_REQS - 1] = lib;
	for (i = 0; i < NR_REQS; i++)
		assert_int_equal(span_request__parse(args[i], &reqs[i], bufs[i], sizeof(bufs[i])),
				 0);
	assert_int_equal(spanfind__notes(SPANNED, SPANNED, &notes, &nn), 0);
	assert_int_equal(nn, NR_STAGES);

	child_start(&c, (char *const[]){ SPANNED, "--wait", "--threads", "2", "--iterations", "1",
					 NULL });
	xsnprintf(root, sizeof(root), "/proc/%d/root", (int)c.pid);
	assert_int_equal(spanfind__discover("/", c.pid, reqs, NR_REQS, NULL, &sites, &n), 0);

	/*
	 * The notes of the executable, in order, then per request one site or
	 * error: two for stage_sib_*, none for the duplicate "libc.so:getpid".
	 */
	assert_int_equal(n, NR_STAGES + NR_REQS);
	for (i = 0; i < NR_STAGES; i++) {
		xsnprintf(want, sizeof(want), "%s%s", root, obj);
		assert_int_equal(sites[i].err, 0);
		assert_true(sites[i].from_note);
		assert_int_equal(sites[i].request, 0);
		assert_string_equal(sites[i].object, obj);
		assert_string_equal(sites[i].open_path, want);
		assert_string_equal(sites[i].metric, stage_metrics[i]);
		assert_string_equal(sites[i].symbol, stage_symbols[i]);
		assert_int_equal(sites[i].vaddr, notes[i].vaddr);
		assert_int_equal(sites[i].offset, notes[i].offset);
		assert_any_nops(sites[i].open_path, sites[i].offset);
	}

	s = &sites[NR_STAGES];
	assert_int_equal(s->err, 0);
	assert_int_equal(s->request, 1);
	assert_false(s->absent);
	assert_false(s->from_note);
	assert_string_equal(s->object, libc);
	xsnprintf(want, sizeof(want), "%s%s", root, libc);
	assert_string_equal(s->open_path, want);
	assert_string_equal(s->symbol, "getpid");
	assert_string_equal(s->metric, "getpid");
	/* Same libc in this process: the file's bytes are our getpid's code. */
	read_at(s->open_path, s->offset, code, sizeof(code));
	assert_memory_equal(code, (const void *)getpid, sizeof(code));

	/* What the requests name is not there: each a mistake (absent), by its request. */
	s++;
	assert_int_equal(s->err, -ENOENT);
	assert_int_equal(s->request, 2);
	assert_true(s->absent);
	assert_string_equal(s->object, "nosuchlib.so");
	assert_string_equal(s->symbol, "foo");
	xsnprintf(want, sizeof(want),
		  "nosuchlib.so is not mapped by process %d, so 'foo' cannot be probed there",
		  (int)c.pid);
	assert_string_equal(s->reason, want);

	s++;
	assert_int_equal(s->err, -ENOENT);
	assert_int_equal(s->request, 3);
	assert_true(s->absent);
	assert_string_equal(s->object, obj);
	assert_string_equal(s->symbol, "no_such_symbol");
	xsnprintf(want, sizeof(want), "no function of %s matches 'no_such_symbol'", obj);
	assert_string_equal(s->reason, want);

	s++;
	assert_int_equal(s->err, 0);
	assert_string_equal(s->symbol, "stage_sib_a");
	assert_string_equal(s->metric, "sibs");
	assert_int_equal(s->offset, notes[4].offset);
	s++;
	assert_int_equal(s->err, 0);
	assert_string_equal(s->symbol, "stage_sib_b");
	assert_string_equal(s->metric, "sibs");
	assert_int_equal(s->offset, notes[5].offset);

	s++;
	assert_int_equal(s->err, 0);
	assert_string_equal(s->object, obj);
	assert_string_equal(s->symbol, "stage_outer");
	assert_string_equal(s->metric, "outer-req");
	assert_int_equal(s->offset, notes[2].offset);

	/* "libc.so:getpid" found libc.so.6's getpid again: dropped, no site. */
	s++;
	assert_int_equal(s->err, -ENOENT);
	assert_int_equal(s->request, 7);
	assert_true(s->absent);
	assert_string_equal(s->object, "spanne");
	xsnprintf(want, sizeof(want),
		  "spanne is not mapped by process %d, so 'stage_outer' cannot be probed there",
		  (int)c.pid);
	assert_string_equal(s->reason, want);

	s++;
	assert_int_equal(s->err, -ENOENT);
	xsnprintf(
		want, sizeof(want),
		"orkloads/spanned is not mapped by process %d, so 'stage_outer' cannot be probed there",
		(int)c.pid);
	assert_string_equal(s->reason, want);

	s++;
	fx_path(lib, "gcc/libspanlib.so");
	assert_int_equal(s->err, 0);
	assert_int_equal(s->request, 9);
	assert_false(s->absent);
	assert_string_equal(s->object, lib);
	xsnprintf(want, sizeof(want), "%s%s", root, lib);
	assert_string_equal(s->open_path, want);
	assert_string_equal(s->symbol, "lib_work");
	assert_string_equal(s->metric, "lib-work");
	assert_nops(lib, s->offset, "gcc");
	find_site(sites, n, libc, "getpid", "getpid");
	spanfind__free(sites, n);
	sites = NULL;
	n = 0;

	/* Without annotations only the requests remain. */
	assert_int_equal(spanfind__discover("/", c.pid, &reqs[3], 1, &no_notes, &sites, &n), 0);
	assert_int_equal(n, 2);
	assert_false(sites[0].from_note);
	assert_string_equal(sites[0].symbol, "stage_sib_a");
	assert_string_equal(sites[1].symbol, "stage_sib_b");
	spanfind__free(sites, n);
	spanfind__free(notes, nn);

	assert_int_equal(child_finish(&c, out, sizeof(out)), 0);
	assert_string_equal(
		out,
		"{\"stage-outer\": 2, \"stage-middle\": 2, \"stage-inner\": 2, \"stage-recurse\": 10, "
		"\"stage-sib-a\": 2, \"stage-sib-b\": 2, \"stage-sleep\": 2, \"stage-spin\": 2, "
		"\"stage-migrate\": 2, \"stage-hold\": 0}\n");
}

/* The counts the span tests compare with: N*M each, stage-recurse 5*N*M. */
static void test_spanfind__workload_counts(void **state)
{
	char path[PATH_MAX], line[512];
	FILE *f;

	(void)state;
	fx_path(path, "counts.txt");
	assert_int_equal(RUN(path, SPANNED, "--threads", "3", "--iterations", "4"), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_null(fgets(path, sizeof(path), f));
	fclose(f);
	assert_string_equal(
		line,
		"{\"stage-outer\": 12, \"stage-middle\": 12, \"stage-inner\": 12, \"stage-recurse\": 60, "
		"\"stage-sib-a\": 12, \"stage-sib-b\": 12, \"stage-sleep\": 12, \"stage-spin\": 12, "
		"\"stage-migrate\": 12, \"stage-hold\": 0}\n");
	assert_int_equal(RUN(NULL, SPANNED, "--threads", "0"), 2);
	assert_int_equal(RUN(NULL, SPANNED, "--iterations", "x"), 2);
	assert_int_equal(RUN(NULL, SPANNED, "--bogus"), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spanfind__notes_gcc_clang_pie_stripped),
		cmocka_unit_test(test_spanfind__shared_library),
		cmocka_unit_test(test_spanfind__static_functions),
		cmocka_unit_test(test_spanfind__symbols),
		cmocka_unit_test(test_spanfind__malformed_notes),
		cmocka_unit_test(test_spanfind__not_elf),
		cmocka_unit_test(test_spanfind__bound),
		cmocka_unit_test(test_spanfind__vaddr_to_offset),
		cmocka_unit_test(test_spanfind__discover_map_files),
		cmocka_unit_test(test_spanfind__discover_fixture_root),
		cmocka_unit_test(test_spanfind__discover_errors),
		cmocka_unit_test(test_spanfind__discover_live),
		cmocka_unit_test(test_spanfind__workload_counts),
		cmocka_unit_test(test_spanfind__returns_twice),
	};

	return cmocka_run_group_tests(tests, setup_fixtures, teardown_fixtures);
}

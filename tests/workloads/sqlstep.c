// SPDX-License-Identifier: MIT
/*
 * A program nobody here wrote the hot function of: SQLite's sqlite3_step(),
 * called exactly --calls N times from one thread, so that a tracer of the
 * shared library (khbpf --span, bpftrace's uprobe) can be held to N.
 *
 * Usage: sqlstep --calls N [--wait]
 * libsqlite3.so.0 is loaded with dlopen (no SQLite headers or -lsqlite3 at
 * build time); an in-memory database is opened and one statement of three
 * rows prepared before the loop, which steps it (ROW, ROW, ROW, DONE, then a
 * reset) until sqlite3_step has been called N times. Nothing else calls it.
 * --wait prints "ready PID" on stdout once the library is mapped and the
 * statement prepared, then reads one byte of stdin (or EOF) before the loop;
 * after the loop it prints "done N" and reads another byte (or EOF) before
 * it finalizes the statement and closes the database. Without --wait it
 * just prints "done N". Exit 0 on success, 1 on an SQLite or dlopen error,
 * 2 on bad arguments.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

#define SQLITE_OK 0
#define SQLITE_ROW 100
#define SQLITE_DONE 101
#define SQLITE_OPEN_READWRITE 0x00000002
#define SQLITE_OPEN_CREATE 0x00000004

/* The few entry points used, as SQLite declares them, with opaque handles. */
struct sqlite3;
struct sqlite3_stmt;

struct sqlite_api {
	int (*open_v2)(const char *filename, struct sqlite3 **db, int flags, const char *vfs);
	int (*prepare_v2)(struct sqlite3 *db, const char *sql, int nbytes,
			  struct sqlite3_stmt **stmt, const char **tail);
	int (*step)(struct sqlite3_stmt *stmt);
	int (*reset)(struct sqlite3_stmt *stmt);
	int (*finalize)(struct sqlite3_stmt *stmt);
	int (*close)(struct sqlite3 *db);
	const char *(*errmsg)(struct sqlite3 *db);
};

#define LIBSQLITE "libsqlite3.so.0"
#define QUERY "VALUES (1), (2), (3)"

static int usage(void)
{
	fprintf(stderr, "sqlstep: usage: sqlstep --calls 1..1000000000 [--wait]\n");
	return 2;
}

static void *resolve(void *lib, const char *name)
{
	void *p = dlsym(lib, name);

	if (!p)
		fprintf(stderr, "sqlstep: %s has no symbol %s\n", LIBSQLITE, name);
	return p;
}

static int load_api(void *lib, struct sqlite_api *api)
{
	api->open_v2 = resolve(lib, "sqlite3_open_v2");
	api->prepare_v2 = resolve(lib, "sqlite3_prepare_v2");
	api->step = resolve(lib, "sqlite3_step");
	api->reset = resolve(lib, "sqlite3_reset");
	api->finalize = resolve(lib, "sqlite3_finalize");
	api->close = resolve(lib, "sqlite3_close");
	api->errmsg = resolve(lib, "sqlite3_errmsg");
	if (!api->open_v2 || !api->prepare_v2 || !api->step || !api->reset || !api->finalize ||
	    !api->close || !api->errmsg)
		return -1;
	return 0;
}

/* Steps stmt exactly calls times; the number of calls made, or 0 on an error. */
static unsigned long step_loop(const struct sqlite_api *api, struct sqlite3 *db,
			       struct sqlite3_stmt *stmt, unsigned long calls)
{
	unsigned long n = 0, rows = 0;
	int rc;

	while (n < calls) {
		rc = api->step(stmt);
		n++;
		if (rc == SQLITE_ROW) {
			rows++;
			continue;
		}
		if (rc != SQLITE_DONE || rows != 3) {
			fprintf(stderr,
				"sqlstep: sqlite3_step call %lu returned %d after %lu rows: %s\n",
				n, rc, rows, api->errmsg(db));
			return 0;
		}
		rows = 0;
		rc = api->reset(stmt);
		if (rc != SQLITE_OK) {
			fprintf(stderr, "sqlstep: sqlite3_reset returned %d: %s\n", rc,
				api->errmsg(db));
			return 0;
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	struct sqlite3_stmt *stmt = NULL;
	struct sqlite3 *db = NULL;
	struct sqlite_api api;
	unsigned long calls = 0, done;
	bool wait = false;
	void *lib;
	int a, rc;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--wait")) {
			wait = true;
		} else if (!strcmp(argv[a], "--calls") && a + 1 < argc) {
			if (parse_ulong(argv[++a], 1, 1000000000, &calls))
				return usage();
		} else {
			return usage();
		}
	}
	if (!calls)
		return usage();

	lib = dlopen(LIBSQLITE, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "sqlstep: cannot load %s: %s\n", LIBSQLITE, dlerror());
		return 1;
	}
	if (load_api(lib, &api)) {
		dlclose(lib);
		return 1;
	}
	rc = api.open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (rc != SQLITE_OK) {
		fprintf(stderr, "sqlstep: sqlite3_open_v2(\":memory:\") returned %d: %s\n", rc,
			db ? api.errmsg(db) : "no handle");
		goto out;
	}
	rc = api.prepare_v2(db, QUERY, -1, &stmt, NULL);
	if (rc != SQLITE_OK || !stmt) {
		fprintf(stderr, "sqlstep: sqlite3_prepare_v2(\"%s\") returned %d: %s\n", QUERY, rc,
			api.errmsg(db));
		rc = rc ?: 1;
		goto out;
	}

	if (wait) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		read_byte(STDIN_FILENO);
	}
	done = step_loop(&api, db, stmt, calls);
	rc = done == calls ? SQLITE_OK : 1;
	if (done) {
		printf("done %lu\n", done);
		fflush(stdout);
	}
	if (wait)
		read_byte(STDIN_FILENO);

out:
	if (stmt)
		api.finalize(stmt);
	/* sqlite3_close(NULL) is a no-op; a failed open still returns a handle. */
	api.close(db);
	dlclose(lib);
	return rc == SQLITE_OK ? 0 : 1;
}

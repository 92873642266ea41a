// SPDX-License-Identifier: MIT
/*
 * serve's windows: each rotation ends one window and starts the next at the
 * same instant. The session blocks signals, so it runs in a forked child
 * that writes each window's text into a file for the test to read.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "session/session.h"
#include "testutil.h"

#define WINDOWS 2

/*
 * In the child: open, rotate WINDOWS times 200 ms apart, and write each
 * text to dir/N.json. Exit status: 0, or the step that failed.
 */
static int serve_windows(const struct session_opts *so, const char *dir)
{
	char errbuf[256] = "", path[PATH_MAX];
	struct session *s = NULL;
	int i, err;

	err = session__serve_open(&s, so, errbuf, sizeof(errbuf));
	if (err) {
		fprintf(stderr, "serve_open: %s\n", errbuf);
		return err == -ENOTSUP ? 77 : 1;
	}
	if (!session__collector(s) || session__signal_fd(s) < 0)
		return 2;
	for (i = 0; i < WINDOWS; i++) {
		struct json_object *doc = NULL, *threads;
		char *text = NULL;
		size_t len = 0;
		FILE *f;

		usleep(200 * 1000);
		if (session__serve_rotate(s, &doc, &text, &len))
			return 3;
		/* The text ends in a newline; the tree kept leaves the threads out. */
		if (!len || text[len - 1] != '\n' || strlen(text) != len ||
		    json_object_object_get_ex(doc, "threads", &threads))
			return 4;
		snprintf(path, sizeof(path), "%s/%d.json", dir, i);
		f = fopen(path, "w");
		if (!f || fputs(text, f) < 0 || fclose(f))
			return 5;
		free(text);
		json_object_put(doc);
	}
	session__destroy(s);
	return 0;
}

static uint64_t u64(struct json_object *o, const char *path)
{
	char buf[256], *tok, *save_ptr = NULL;
	struct json_object *cur = o;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save_ptr); tok; tok = strtok_r(NULL, ".", &save_ptr)) {
		if (!json_object_object_get_ex(cur, tok, &cur))
			fail_msg("no %s", path);
	}
	return json_object_get_uint64(cur);
}

static void test_session_serve__windows_follow_each_other(void **state)
{
	char *dir = tree_new("serve"), path[PATH_MAX];
	struct json_object *doc[WINDOWS], *v;
	pid_t target, pid;
	int status, i;

	(void)state;
	require_or_skip(getuid() == 0, "needs root for BPF");
	target = fork();
	assert_true(target >= 0);
	if (target == 0) {
		for (;;)
			usleep(1000);
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct session_opts so = { .sz = sizeof(so), .pids = &target, .nr_pids = 1 };

		_exit(serve_windows(&so, dir));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	assert_true(WIFEXITED(status));
	require_or_skip(WEXITSTATUS(status) != 77, "serve needs BPF");
	assert_int_equal(WEXITSTATUS(status), 0);

	for (i = 0; i < WINDOWS; i++) {
		snprintf(path, sizeof(path), "%s/%d.json", dir, i);
		doc[i] = json_object_from_file(path);
		assert_non_null(doc[i]);
		assert_true(json_object_object_get_ex(doc[i], "target", &v));
		assert_string_equal(json_object_get_string(json_object_object_get(v, "mode")),
				    "serve");
		assert_int_equal(u64(doc[i], "target.pid"), (uint64_t)target);
		/* The target's one thread, listed in the text. */
		assert_true(json_object_object_get_ex(doc[i], "threads", &v));
		assert_int_equal(json_object_array_length(v), 1);
		assert_true(u64(doc[i], "window.wall_ns") >= 200 * 1000 * 1000ULL);
	}
	/* The second window starts where the first ended (both clocks read together). */
	{
		uint64_t end0 = u64(doc[0], "window.start_unix_ns") + u64(doc[0], "window.wall_ns");
		uint64_t start1 = u64(doc[1], "window.start_unix_ns");

		assert_true(start1 + 5 * 1000 * 1000ULL >= end0);
		assert_true(start1 <= end0 + 5 * 1000 * 1000ULL);
	}
	for (i = 0; i < WINDOWS; i++)
		json_object_put(doc[i]);
	tree_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_serve__windows_follow_each_other),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

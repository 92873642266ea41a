// SPDX-License-Identifier: MIT
/*
 * Whole sessions of attach and run. A session drops the process's
 * capabilities and blocks signals, so each one runs in a forked child,
 * which writes the document and what session__run said into files the
 * test then reads.
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

#include "document/evjson.h"
#include "session/session.h"
#include "spans/spansite.h"
#include "testutil.h"

struct outcome {
	int err; /* session__run's */
	int exit_code; /* session__exit_code's; -1 without a session */
	char errbuf[1024];
	struct json_object *doc; /* NULL when there was none */
};

/* session__run in a child; the parent gets the outcome. */
static void run_session(const struct session_opts *so, struct outcome *out)
{
	char *dir = tree_new("session"), res[PATH_MAX], docp[PATH_MAX];
	int status;
	pid_t pid;
	FILE *f;

	snprintf(res, sizeof(res), "%s/outcome", dir);
	snprintf(docp, sizeof(docp), "%s/doc.json", dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct session *s = NULL;
		char errbuf[1024] = "";
		int err = session__run(&s, so, errbuf, sizeof(errbuf)), code = -1;

		if (!err) {
			struct json_object *doc = session__document(s);
			const char *text = doc ? evjson__to_string(doc) : NULL;

			f = fopen(docp, "w");
			if (!f || !text || fputs(text, f) < 0 || fclose(f))
				_exit(2);
			json_object_put(doc);
			session__finish(s);
		}
		if (s)
			code = session__exit_code(s);
		session__destroy(s);
		f = fopen(res, "w");
		if (!f || fprintf(f, "%d %d %s", err, code, errbuf) < 0 || fclose(f))
			_exit(2);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	memset(out, 0, sizeof(*out));
	f = fopen(res, "r");
	assert_non_null(f);
	assert_int_equal(
		fscanf(f, "%d %d %1023[^\n]", &out->err, &out->exit_code, out->errbuf) >= 2, 1);
	fclose(f);
	if (!out->err) {
		out->doc = json_object_from_file(docp);
		assert_non_null(out->doc);
	}
	tree_free(dir);
}

static struct json_object *get(struct json_object *o, const char *path)
{
	char buf[256], *tok, *save_ptr = NULL;
	struct json_object *cur = o;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save_ptr); tok; tok = strtok_r(NULL, ".", &save_ptr)) {
		if (json_object_is_type(cur, json_type_array))
			cur = json_object_array_get_idx(cur, (size_t)atoi(tok));
		else if (!json_object_object_get_ex(cur, tok, &cur))
			cur = NULL;
		if (!cur)
			fail_msg("no %s (at %s)", path, tok);
	}
	return cur;
}

static const char *str(struct json_object *o, const char *path)
{
	return json_object_get_string(get(o, path));
}

/* run without BPF: the command's exit is its, the window ends with it. */
static void test_session__run_no_bpf(void **state)
{
	char *argv[] = { "/bin/sh", "-c", "exit 5", NULL };
	struct session_opts so = { .sz = sizeof(so),
				   .mode = TARGET_MODE_RUN,
				   .argv = argv,
				   .as_root = true,
				   .no_bpf = true };
	struct outcome o;

	(void)state;
	run_session(&so, &o);
	assert_int_equal(o.err, 0);
	assert_int_equal(o.exit_code, 5);
	assert_string_equal(str(o.doc, "target.mode"), "run");
	assert_int_equal(json_object_get_int(get(o.doc, "target.exit.value.code")), 5);
	assert_string_equal(str(o.doc, "window.end_reason"), "target-exit");
	assert_string_equal(str(o.doc, "collectors.0.availability"), "disabled");
	assert_string_equal(str(o.doc, "threads.0.scheduler.total_context_switches.source"),
			    "proc-pid-sched");
	json_object_put(o.doc);
}

/* A command that cannot be run: named in the error, 127/126 as a shell says. */
static void test_session__run_exec_failure(void **state)
{
	char *argv[] = { "khbpf-test-no-such-command", NULL };
	struct session_opts so = { .sz = sizeof(so),
				   .mode = TARGET_MODE_RUN,
				   .argv = argv,
				   .as_root = true,
				   .no_bpf = true };
	struct outcome o;

	(void)state;
	run_session(&so, &o);
	assert_int_equal(o.err, -ENOEXEC);
	assert_int_equal(o.exit_code, 127);
	assert_string_equal(
		o.errbuf, "cannot execute 'khbpf-test-no-such-command': No such file or directory");
	assert_null(o.doc);
}

/*
 * A span request naming a probe none of the command's objects has is a
 * mistake found before anything runs, with or without BPF: the command is
 * never started.
 */
static void test_session__run_span_mistake(void **state)
{
	char *dir = tree_new("session-mistake"), ran[PATH_MAX], script[PATH_MAX + 32];
	char *argv[] = { "/bin/sh", "-c", script, NULL };
	char buf[256];
	struct span_request req;
	struct key_request key;
	struct session_opts so = { .sz = sizeof(so),
				   .mode = TARGET_MODE_RUN,
				   .argv = argv,
				   .as_root = true,
				   .no_bpf = true,
				   .span_reqs = &req,
				   .nr_span_reqs = 1 };
	struct outcome o;

	(void)state;
	snprintf(ran, sizeof(ran), "%s/ran", dir);
	snprintf(script, sizeof(script), "touch %s", ran);
	assert_int_equal(
		span_request__parse_usdt("khbpfnosuch:a__start,a__done", &req, buf, sizeof(buf)),
		0);
	run_session(&so, &o);
	assert_int_equal(o.err, SESSION_ERR_USAGE);
	assert_int_equal(o.exit_code, -1);
	assert_int_equal(strncmp(o.errbuf, "--usdt-span khbpfnosuch:a__start,a__done: ", 42), 0);
	assert_non_null(strstr(o.errbuf, "name its file: --usdt-span /PATH/OF/IT:khbpfnosuch:"));
	assert_null(o.doc);
	assert_int_equal(access(ran, F_OK), -1);

	/*
	 * A program the command would exec is named by its file, checked at
	 * the start; a --key naming no metric of the requests is refused.
	 */
	assert_int_equal(span_request__parse_usdt("/usr/bin/python3.11:python:gc__start,gc__done",
						  &req, buf, sizeof(buf)),
			 0);
	assert_int_equal(key_request__parse("python-gcc=arg0:int", &key), 0);
	so.key_reqs = &key;
	so.nr_key_reqs = 1;
	run_session(&so, &o);
	assert_int_equal(o.err, SESSION_ERR_USAGE);
	assert_int_equal(strncmp(o.errbuf, "--key python-gcc=arg0:int: ", 27), 0);
	assert_non_null(strstr(o.errbuf, "(those there are: python-gc)"));
	assert_int_equal(access(ran, F_OK), -1);

	/* Spelled right, the command runs. */
	assert_int_equal(key_request__parse("python-gc=arg0:int", &key), 0);
	run_session(&so, &o);
	assert_int_equal(o.err, 0);
	assert_int_equal(o.exit_code, 0);
	assert_int_equal(access(ran, F_OK), 0);
	json_object_put(o.doc);
	tree_free(dir);
}

static void test_session__attach_refused(void **state)
{
	struct session_opts so = { .sz = sizeof(so),
				   .mode = TARGET_MODE_ATTACH,
				   .pid = 0x3fffffff };
	struct outcome o;

	(void)state;
	run_session(&so, &o);
	assert_int_equal(o.err, -ESRCH);
	assert_int_equal(o.exit_code, -1);
	assert_string_equal(o.errbuf, "--pid 1073741823: no such process");
}

/* attach with BPF for a fixed window: the target lives on, the window ends by duration. */
static void test_session__attach_duration(void **state)
{
	struct session_opts so = { .sz = sizeof(so),
				   .mode = TARGET_MODE_ATTACH,
				   .duration_ns = 300 * 1000 * 1000ULL };
	struct outcome o;
	pid_t target;
	int status;

	(void)state;
	require_or_skip(getuid() == 0, "needs root for BPF");
	target = fork();
	assert_true(target >= 0);
	if (target == 0) {
		for (;;)
			usleep(1000);
	}
	so.pid = target;
	run_session(&so, &o);
	kill(target, SIGKILL);
	assert_int_equal(waitpid(target, &status, 0), target);
	assert_int_equal(o.err, 0);
	require_or_skip(!strcmp(str(o.doc, "collectors.0.availability"), "available"),
			"BPF unavailable here");
	assert_int_equal(json_object_get_int(get(o.doc, "target.pid")), target);
	assert_string_equal(str(o.doc, "target.mode"), "attach");
	assert_string_equal(str(o.doc, "window.end_reason"), "duration");
	assert_string_not_equal(str(o.doc, "target.exit.status"), "recorded");
	/* Its one thread woke about 300 times in the window: seen by the tracepoints. */
	assert_true(json_object_get_uint64(get(
			    o.doc, "threads.0.scheduler.voluntary_context_switches.value.value")) >
		    10);
	assert_string_equal(str(o.doc, "threads.0.scheduler.total_context_switches.source"),
			    "bpf-tracepoint");
	json_object_put(o.doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session__run_no_bpf),
		cmocka_unit_test(test_session__run_exec_failure),
		cmocka_unit_test(test_session__run_span_mistake),
		cmocka_unit_test(test_session__attach_refused),
		cmocka_unit_test(test_session__attach_duration),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "serve/cglabels.h"
#include "host/cgroup.h"
#include "host/cpufreq.h"
#include "serve/httpd.h"
#include "lib/output.h"
#include "serve/promtext.h"
#include "collect/sched_window.h"
#include "serve/serve.h"
#include "serve/serve_filters.h"
#include "serve/serve_groups.h"
#include "serve/serve_metrics.h"
#include "serve/serve_spans.h"
#include "session/session.h"

#define NS_PER_SEC UINT64_C(1000000000)
#define DEFAULT_INTERVAL_NS (15 * NS_PER_SEC)
/* The first window is short, so /evidence and the gap metrics exist soon. */
#define FIRST_WINDOW_NS NS_PER_SEC

struct serve {
	struct serve_opts o;
	struct session *sess;
	struct sched_collector *coll;
	struct serve_groups *groups;
	struct serve_filters *filters; /* --pid, --cgroup; NULL without */
	struct serve_spans *spans; /* NULL without span requests */
	struct cglabels *labels; /* --labels; NULL: none */
	struct httpd *http;
	int timerfd;
	bool first_window;

	char cg_mount[PATH_MAX];
	bool have_cg_mount;

	char *doc; /* the last window's document, compact JSON */
	size_t doc_len;
	struct json_object *doc_obj;
	int ndjson_fd;
	bool ndjson_made; /* the --ndjson file did not exist before */
	uint64_t windows, scrapes, window_errors;
};

static int handle_metrics(void *ctx, const struct httpd_request *req, struct httpd_response *resp)
{
	struct serve *s = ctx;
	bool om = promtext__wants_openmetrics(req->accept);
	struct serve_metrics_src src = {
		.groups = s->groups,
		.spans = s->spans,
		.coll = s->coll,
		.group_by = s->o.group_by,
		.top = s->o.top,
		.labels = s->labels,
		.root = s->o.root,
		.doc = s->doc_obj,
		.filters = s->filters,
		.windows = s->windows,
		.window_errors = s->window_errors,
	};
	struct httpd_stats http;
	struct promtext *p;
	char why[512];
	int err;

	httpd__stats(s->http, &http);
	src.http = &http;
	/* A names file that changed: read before this scrape's labels are made. */
	if (s->labels && cglabels__refresh(s->labels, why, sizeof(why)) < 0 && s->o.log)
		fprintf(s->o.log,
			"khbpf serve: --container-names %s; the names read before are kept\n", why);
	err = promtext__new(&p, om);
	if (err)
		return err;
	err = serve_metrics__render(p, &src);
	if (err) {
		promtext__free(p);
		return err;
	}
	resp->body = promtext__finish(p, &resp->len);
	if (!resp->body)
		return -ENOMEM;
	resp->status = 200;
	resp->content_type = promtext__content_type(om);
	s->scrapes++;
	return 0;
}

static int handle_evidence(void *ctx, const struct httpd_request *req, struct httpd_response *resp)
{
	struct serve *s = ctx;
	static const char none[] = "{\"error\": \"no window has ended yet; retry in a second\"}\n";
	const char *src = s->doc ? s->doc : none;
	size_t len = s->doc ? s->doc_len : sizeof(none) - 1;

	(void)req;
	resp->body = malloc(len ? len : 1);
	if (!resp->body)
		return -ENOMEM;
	memcpy(resp->body, src, len);
	resp->len = len;
	resp->status = s->doc ? 200 : 503;
	resp->content_type = "application/json";
	return 0;
}

static int handle_healthz(void *ctx, const struct httpd_request *req, struct httpd_response *resp)
{
	struct serve *s = ctx;
	struct serve_groups_stats gs;
	char buf[128];
	int n;

	(void)req;
	serve_groups__stats(s->groups, &gs);
	n = snprintf(buf, sizeof(buf), "ok: %llu windows, %zu groups\n",
		     (unsigned long long)s->windows, gs.nr_groups);
	resp->body = strdup(buf);
	if (!resp->body)
		return -ENOMEM;
	resp->len = (size_t)n;
	resp->status = 200;
	resp->content_type = "text/plain; charset=utf-8";
	return 0;
}

/* One window ends: its document is kept for /evidence and written as a line. */
static int end_window(struct serve *s)
{
	struct json_object *doc = NULL;
	char *text;
	size_t len;
	int err;

	err = session__serve_rotate(s->sess, &doc, &text, &len);
	if (err) {
		s->window_errors++;
		return err;
	}
	free(s->doc);
	json_object_put(s->doc_obj);
	s->doc = text;
	s->doc_len = len;
	s->doc_obj = doc;
	s->windows++;
	serve_filters__update(s->filters, s->windows);
	/* One line per window, whole: a failed write leaves no partial line. */
	if (s->ndjson_fd >= 0)
		return output__append(s->ndjson_fd, s->doc, s->doc_len);
	return 0;
}

static int set_timer(int fd, uint64_t first_ns, uint64_t every_ns)
{
	struct itimerspec its = {
		.it_interval = { (time_t)(every_ns / NS_PER_SEC), (long)(every_ns % NS_PER_SEC) },
		.it_value = { (time_t)(first_ns / NS_PER_SEC), (long)(first_ns % NS_PER_SEC) },
	};

	return timerfd_settime(fd, 0, &its, NULL) ? -errno : 0;
}

static int open_filters(struct serve *s, uint64_t *ids, uint32_t *levels, char *errbuf,
			size_t errlen)
{
	size_t i;
	int err;

	if (!s->have_cg_mount)
		return s->o.nr_cgroups ?
			       session__errf(
				       errbuf, errlen, -ENOENT,
				       "--cgroup needs cgroup v2, and it is not mounted; mount "
				       "cgroup2 (e.g. on /sys/fs/cgroup/unified)") :
			       0;
	for (i = 0; i < s->o.nr_cgroups; i++) {
		err = cgroup__v2_id(s->cg_mount, s->o.cgroups[i], &ids[i], &levels[i]);
		if (err)
			return session__errf(
				errbuf, errlen, err,
				"--cgroup '%s': %s under %s; give the path from its root, like /system.slice, or the full path under %s",
				s->o.cgroups[i], strerror(-err), s->cg_mount, s->cg_mount);
	}
	return 0;
}

static int serve_loop(struct serve *s)
{
	int sigfd = session__signal_fd(s->sess);
	uint64_t every = s->o.interval_ns ?: DEFAULT_INTERVAL_NS;

	for (;;) {
		struct pollfd pfd[3] = {
			{ .fd = sigfd, .events = POLLIN },
			{ .fd = s->timerfd, .events = POLLIN },
			{ .fd = httpd__fd(s->http), .events = POLLIN },
		};
		int timeout = httpd__timeout_ms(s->http);

		if (poll(pfd, 3, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
				if (s->o.log)
					fprintf(s->o.log,
						"khbpf serve: %s: writing the last window\n",
						strsignal((int)si.ssi_signo));
				return 0;
			}
		}
		if (pfd[1].revents & POLLIN) {
			uint64_t ticks;

			if (read(s->timerfd, &ticks, sizeof(ticks)) == sizeof(ticks)) {
				/* Independent: a window ends (and drains exits) whatever the sweep did. */
				int err = serve_groups__sweep(s->groups), werr = end_window(s);

				if (s->spans)
					err = err ?: serve_spans__sweep(s->spans);

				if (err && s->o.log)
					fprintf(s->o.log, "khbpf serve: sweeping groups: %s\n",
						strerror(-err));
				if (werr && s->o.log)
					fprintf(s->o.log, "khbpf serve: window %llu: %s\n",
						(unsigned long long)s->windows + 1,
						strerror(-werr));
				if (s->first_window) {
					s->first_window = false;
					set_timer(s->timerfd, every, every);
				}
			}
		}
		httpd__run(s->http);
	}
}

int serve__run(const struct serve_opts *opts, char *errbuf, size_t errlen)
{
	struct httpd_route routes[] = {
		{ "/metrics", handle_metrics, NULL },
		{ "/evidence", handle_evidence, NULL },
		{ "/healthz", handle_healthz, NULL },
	};
	struct httpd_opts ho = { .sz = sizeof(ho) };
	struct session_opts so = { .sz = sizeof(so) };
	struct serve_groups_opts gso = { .sz = sizeof(gso) };
	uint64_t ids[KHBPF_MAX_CGROUP_FILTERS];
	uint32_t levels[KHBPF_MAX_CGROUP_FILTERS];
	struct serve *s;
	size_t i;
	int err, stop_err;

	if (opts->nr_cgroups > KHBPF_MAX_CGROUP_FILTERS)
		return session__errf(errbuf, errlen, -E2BIG, "at most %d --cgroup options",
				     KHBPF_MAX_CGROUP_FILTERS);
	s = calloc(1, sizeof(*s));
	if (!s)
		return session__errf(errbuf, errlen, -ENOMEM, "out of memory");
	s->o = *opts;
	if (!s->o.group_by)
		s->o.group_by = KHBPF_GROUP_CGROUP;
	s->timerfd = -1;
	s->ndjson_fd = -1;
	s->first_window = true;
	s->have_cg_mount = !cgroup__v2_mount(s->o.root ?: "/", s->cg_mount, sizeof(s->cg_mount));
	err = open_filters(s, ids, levels, errbuf, errlen);
	if (err)
		goto cleanup;
	if (s->o.group_by == KHBPF_GROUP_CGROUP && !s->have_cg_mount) {
		err = session__errf(
			errbuf, errlen, -ENOENT,
			"--by cgroup needs cgroup v2 mounted (none in /proc/self/mountinfo); "
			"mount cgroup2 or use --by process");
		goto cleanup;
	}
	if (s->o.labels) {
		struct cglabels_opts lo = { .sz = sizeof(lo) };
		char why[400];

		lo.which = s->o.labels;
		lo.container_names = s->o.container_names;
		err = cglabels__new(&s->labels, &lo, why, sizeof(why));
		if (err) {
			err = session__errf(
				errbuf, errlen, err, "%s%s",
				s->o.container_names ? "--container-names " : "--labels: ", why);
			goto cleanup;
		}
	}
	if (s->o.ndjson) {
		if (!strcmp(s->o.ndjson, "-")) {
			s->ndjson_fd = STDOUT_FILENO;
		} else {
			struct stat st;

			/* Made here: removed again if serve stops before its first line. */
			s->ndjson_made = lstat(s->o.ndjson, &st) && errno == ENOENT;
			/* Appended: a log shipper follows it; never through a symlink. */
			err = output__open_append(s->o.ndjson,
						  s->o.ndjson_private ? OUTPUT_MODE_PRIVATE : 0644);
			if (err < 0) {
				err = session__errf(
					errbuf, errlen, err,
					"--ndjson '%s': %s; give a writable file or '-'",
					s->o.ndjson,
					err == -ELOOP  ? "is a symbolic link (not followed)" :
					err == -EEXIST ? "exists and is not a regular file" :
							 strerror(-err));
				goto cleanup;
			}
			s->ndjson_fd = err;
		}
	}

	so.mode = TARGET_MODE_SERVE;
	so.pids = s->o.pids;
	so.nr_pids = s->o.nr_pids;
	so.children = s->o.children;
	so.cgroup_ids = ids;
	so.cgroup_levels = levels;
	so.nr_cgroups = s->o.nr_cgroups;
	so.group_by = s->o.group_by;
	so.max_groups = s->o.max_groups;
	so.bpf_stats = s->o.bpf_stats;
	so.blocked = s->o.blocked;
	so.max_exited = s->o.max_exited;
	so.max_threads = s->o.max_threads;
	so.root = s->o.root;
	so.span_reqs = s->o.span_reqs;
	so.nr_span_reqs = s->o.nr_span_reqs;
	so.key_reqs = s->o.key_reqs;
	so.nr_key_reqs = s->o.nr_key_reqs;
	so.cause_reqs = s->o.cause_reqs;
	so.nr_cause_reqs = s->o.nr_cause_reqs;
	so.max_keys = s->o.max_keys;
	so.max_span_series = s->o.max_span_series;
	so.no_annotations = s->o.no_annotations;
	so.span_counters = SCHED_COUNTERS_NONE;
	err = session__serve_open(&s->sess, &so, errbuf, errlen);
	if (err)
		goto cleanup;
	s->coll = session__collector(s->sess);
	if (s->o.nr_pids || s->o.nr_cgroups) {
		struct serve_filters_opts fo = {
			.sz = sizeof(fo),
			.root = s->o.root,
			.cg_mount = s->cg_mount,
			.pids = s->o.pids,
			.nr_pids = s->o.nr_pids,
			.children = s->o.children,
			.coll = s->coll,
			.cgroups = s->o.cgroups,
			.nr_cgroups = s->o.nr_cgroups,
			.log = s->o.log,
		};

		err = serve_filters__new(&s->filters, &fo, errbuf, errlen);
		if (err)
			goto cleanup;
	}
	gso.group_by = s->o.group_by;
	gso.top = s->o.top;
	gso.max_groups = s->o.max_groups;
	gso.max_age_ns = s->o.max_age_ns;
	gso.cg_mount = s->have_cg_mount ? s->cg_mount : NULL;
	err = serve_groups__new(&s->groups, s->coll, &gso);
	if (err) {
		err = session__errf(errbuf, errlen, err, "out of memory");
		goto cleanup;
	}
	if (session__spans(s->sess)) {
		struct serve_spans_opts sso = {
			.sz = sizeof(sso),
			.group_by = s->o.group_by,
			.max_series = s->o.max_span_series,
			.max_age_ns = s->o.max_age_ns,
		};

		err = serve_spans__new(&s->spans, s->coll, session__spans(s->sess), s->groups,
				       &sso);
		if (err) {
			err = session__errf(errbuf, errlen, err, "out of memory");
			goto cleanup;
		}
	}

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		routes[i].ctx = s;
	ho.listen = s->o.listen ?: SERVE_DEFAULT_LISTEN;
	ho.routes = routes;
	ho.nr_routes = sizeof(routes) / sizeof(routes[0]);
	err = httpd__start(&s->http, &ho, errbuf, errlen);
	if (err)
		goto cleanup;
	/* Listening, single-threaded (MHD polls from this loop): only fds from here on. */
	err = session__drop_privileges(s->sess, errbuf, errlen);
	if (err)
		goto cleanup;
	s->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->timerfd < 0 || set_timer(s->timerfd, FIRST_WINDOW_NS, FIRST_WINDOW_NS)) {
		err = session__errf(errbuf, errlen, -errno, "timerfd: %s", strerror(errno));
		goto cleanup;
	}
	if (s->o.log)
		fprintf(s->o.log, "khbpf serve: listening on %s (port %u), grouping by %s\n",
			ho.listen, httpd__port(s->http),
			s->o.group_by == KHBPF_GROUP_CGROUP ? "cgroup" : "process");

	err = serve_loop(s);
	/* Interrupted or not, the window so far ends with a complete document. */
	stop_err = end_window(s);
	if (err)
		err = session__errf(errbuf, errlen, err, "serving: %s", strerror(-err));
	else if (stop_err)
		err = session__errf(errbuf, errlen, stop_err, "the last window: %s",
				    strerror(-stop_err));

cleanup:
	httpd__stop(s->http);
	session__destroy(s->sess);
	if (s->timerfd >= 0)
		close(s->timerfd);
	if (s->ndjson_fd > STDOUT_FILENO) {
		struct stat st;

		/* No partial output: a file serve made and never wrote goes with a failed start. */
		if (err && s->ndjson_made && !fstat(s->ndjson_fd, &st) && !st.st_size)
			unlink(s->o.ndjson);
		close(s->ndjson_fd);
	}
	free(s->doc);
	json_object_put(s->doc_obj);
	serve_spans__free(s->spans);
	serve_filters__free(s->filters);
	serve_groups__free(s->groups);
	cglabels__free(s->labels);
	free(s);
	return err;
}

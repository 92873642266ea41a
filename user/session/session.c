// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/fsutil.h"
#include "host/cgroup.h"
#include "collect/privs.h"
#include "collect/proctarget.h"
#include "session/session.h"
#include "session/session_collect.h"
#include "session/session_state.h"
#include "session/session_titles.h"

int session__errf(char *buf, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return err;
}

/* Without pidfd (kernels before 5.3, valgrind) liveness is polled. */
#define NO_PIDFD_POLL_MS 50

static bool pid_gone(struct session *s, pid_t pid)
{
	unsigned long flags;
	siginfo_t si;
	char state;

	if (s->opts.mode == TARGET_MODE_RUN) {
		memset(&si, 0, sizeof(si));
		return !waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) &&
		       si.si_pid == pid;
	}
	return proctarget__state(s->root, pid, &state, &flags) || state == 'Z' || state == 'X';
}

/*
 * The roots whose exit ends the window: run's command, or every process
 * attach was given (a cgroup set has none: it ends by duration or signal).
 */
static size_t nr_roots(const struct session *s)
{
	if (s->opts.mode == TARGET_MODE_RUN)
		return 1;
	return s->set_mode == KHBPF_SET_CGROUP ? 0 : s->opts.nr_pids;
}

static pid_t root_pid(const struct session *s, size_t i)
{
	return s->opts.mode == TARGET_MODE_RUN ? s->pid : s->opts.pids[i];
}

/*
 * Every root has exited: its pidfd readable (root i polled at pfd[i]),
 * else (no pidfd) its /proc state. A root seen exited is not polled again.
 */
static bool roots_exited(struct session *s, const struct pollfd *pfd)
{
	size_t i, n = nr_roots(s), left = 0;

	for (i = 0; i < n; i++) {
		if (!s->root_done[i])
			s->root_done[i] = s->root_fds[i] >= 0 ?
						  (pfd[i].revents & (POLLIN | POLLHUP)) != 0 :
						  pid_gone(s, root_pid(s, i));
		left += !s->root_done[i];
	}
	return n && !left;
}

static int open_root_fds(struct session *s, char *errbuf, size_t errlen)
{
	size_t i, n = nr_roots(s);

	s->root_fds = calloc(n ? n : 1, sizeof(*s->root_fds));
	s->root_done = calloc(n ? n : 1, sizeof(*s->root_done));
	if (!s->root_fds || !s->root_done)
		return session__errf(errbuf, errlen, -ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		s->root_fds[i] = (int)syscall(SYS_pidfd_open, root_pid(s, i), 0);
		if (s->root_fds[i] < 0 && errno != ENOSYS) {
			int err = -errno;

			s->nr_root_fds = i;
			return session__errf(errbuf, errlen, err, "--pid %d: %s",
					     (int)root_pid(s, i),
					     err == -ESRCH ? "process exited" : strerror(-err));
		}
		if (s->root_fds[i] < 0)
			s->root_fds[i] = -1;
	}
	s->nr_root_fds = n;
	s->pidfd = n ? s->root_fds[0] : -1;
	return 0;
}

/* Cgroup sets: threads of a process moved in whole join at the next tick's walk. */
static void join_late(struct session *s)
{
	size_t joined = 0;

	if (!s->coll || !sched_collector__join_pending(s->coll))
		return;
	if (!session__join(s, 1, &joined))
		s->late_joins += joined;
}

static int wait_loop(struct session *s)
{
	uint64_t deadline = s->opts.duration_ns ? s->start_mono + s->opts.duration_ns : 0;
	size_t n = nr_roots(s), i;
	struct pollfd *pfd, *fixed;
	int forwarded = 0;
	bool polled = false;

	for (i = 0; i < n; i++)
		polled = polled || s->root_fds[i] == -1;
	pfd = calloc(n + 3, sizeof(*pfd));
	if (!pfd)
		return -ENOMEM;
	fixed = pfd + n;
	for (;;) {
		int timeout = -1, nr;

		if (deadline) {
			uint64_t now = clock_ns(CLOCK_MONOTONIC);

			if (now >= deadline) {
				s->end_reason = END_REASON_DURATION;
				break;
			}
			timeout = (int)((deadline - now + 999999) / 1000000);
		}
		if (polled && (timeout < 0 || timeout > NO_PIDFD_POLL_MS))
			timeout = NO_PIDFD_POLL_MS;
		for (i = 0; i < n; i++)
			pfd[i] = (struct pollfd){ .fd = s->root_done[i] ? -1 : s->root_fds[i],
						  .events = POLLIN };
		fixed[0] = (struct pollfd){ .fd = s->sigfd, .events = POLLIN };
		fixed[1] = (struct pollfd){ .fd = s->timerfd, .events = POLLIN };
		fixed[2] = (struct pollfd){ .fd = s->coll ? sched_collector__span_fd(s->coll) : -1,
					    .events = POLLIN };
		nr = poll(pfd, n + 3, timeout);
		if (nr < 0) {
			if (errno == EINTR)
				continue;
			free(pfd);
			return -errno;
		}
		if (fixed[2].revents & POLLIN)
			sched_collector__drain_spans(s->coll);
		if (fixed[1].revents & POLLIN) {
			uint64_t ticks;

			if (read(s->timerfd, &ticks, sizeof(ticks)) == sizeof(ticks))
				session__sample_frequency(s);
			/* Span records wake the loader only in bulk: collect the rest here. */
			if (s->coll)
				sched_collector__drain_spans(s->coll);
			join_late(s);
			session__read_new_titles(s);
		}
		if (roots_exited(s, pfd)) {
			s->end_reason = END_REASON_TARGET_EXIT;
			break;
		}
		if (fixed[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(s->sigfd, &si, sizeof(si)) != sizeof(si))
				continue;
			s->signal_seen = (int)si.ssi_signo;
			/*
			 * run: the first signal goes to the command, and the window
			 * ends with it; a second one ends the window now.
			 */
			if (s->opts.mode == TARGET_MODE_RUN && !forwarded++) {
				kill(s->pid, (int)si.ssi_signo);
				continue;
			}
			s->end_reason = END_REASON_SIGNAL;
			break;
		}
	}
	free(pfd);
	return 0;
}

static void window_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
}

int session__hold_signals(void)
{
	sigset_t set;

	window_signals(&set);
	return sigprocmask(SIG_BLOCK, &set, NULL) ? -errno : 0;
}

int session__setup_signals(struct session *s, char *errbuf, size_t errlen)
{
	sigset_t set;

	window_signals(&set);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return session__errf(errbuf, errlen, -errno, "sigprocmask: %s", strerror(errno));
	s->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sigfd < 0)
		return session__errf(errbuf, errlen, -errno, "signalfd: %s", strerror(errno));
	return 0;
}

static int setup_timer(struct session *s, char *errbuf, size_t errlen)
{
	uint64_t iv = s->opts.interval_ns ? s->opts.interval_ns : NS_PER_SEC;
	struct itimerspec its = {
		.it_interval = { (time_t)(iv / NS_PER_SEC), (long)(iv % NS_PER_SEC) },
		.it_value = { (time_t)(iv / NS_PER_SEC), (long)(iv % NS_PER_SEC) },
	};

	s->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->timerfd < 0 || timerfd_settime(s->timerfd, 0, &its, NULL))
		return session__errf(errbuf, errlen, -errno, "timerfd: %s", strerror(errno));
	return 0;
}

struct session *session__alloc(const struct session_opts *opts)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (docbuild__new(&s->build)) {
		free(s);
		return NULL;
	}
	s->opts = *opts;
	/* attach given only .pid (the one-process API): a set of that one. */
	if (opts->mode == TARGET_MODE_ATTACH && !opts->nr_pids && !opts->nr_cgroup_paths) {
		s->opts.pids = &s->opts.pid;
		s->opts.nr_pids = 1;
	}
	s->root = opts->root ? opts->root : "/";
	s->pidfd = s->sigfd = s->timerfd = -1;
	s->freq_gap = EV_GAP_UNAVAILABLE;
	if (!s->opts.max_threads)
		s->opts.max_threads = SESSION_DEFAULT_MAX_THREADS;
	return s;
}

int session__build_document(struct session *s)
{
	struct docbuild_opts o = {
		.sz = sizeof(o),
		.mode = s->opts.mode,
		.pid = s->pid,
		.root = s->root,
		.no_bpf = s->opts.no_bpf,
		.bpf_stats = s->opts.bpf_stats,
		.span_counters = s->opts.span_counters,
		.target = s->target,
		.child_reaped = s->child_reaped,
		.wait_status = s->wait_status,
		.start_mono = s->start_mono,
		.start_real = s->start_real,
		.end_mono = s->end_mono,
		.end_reason = s->end_reason,
		.use_bpf = s->use_bpf,
		.bpf_avail = s->bpf_avail,
		.bpf_detail = s->bpf_detail,
		.win = s->win,
		.set_mode = s->set_mode,
		.set_pids = s->opts.mode == TARGET_MODE_RUN ? &s->pid : s->opts.pids,
		.nr_set_pids = s->opts.mode == TARGET_MODE_RUN ? 1 : s->opts.nr_pids,
		.set_cgroups = s->opts.cgroup_paths,
		.nr_set_cgroups = s->opts.nr_cgroup_paths,
		.pwin = &s->pwin,
		.late_joins = s->late_joins,
		.start_join_end = s->start_join_end,
		.stats = s->stats,
		.wakers = s->wakers,
		.nr_wakers = s->nr_wakers,
		.proc_read_errors = s->proc_read_errors,
		.fb = s->fb,
		.census = { s->census[0], s->census[1] },
		.freq = s->freq,
		.nr_freq = s->nr_freq,
		.freq_dropped = s->freq_dropped,
		.freq_gap = s->freq_gap,
		.freq_any = s->freq_any,
		.counters = s->counters,
		.counters_avail = s->counters_avail,
		.counters_detail = s->counters_detail,
		.topo = s->topo,
		.spans = &s->spans,
		.pressure_host = &s->psi_host,
		.pressure_cgroup = &s->psi_cgroup,
		.thermal = &s->thermal,
	};

	return docbuild__build(s->build, &o);
}

/* The first pid listed in a cgroup's cgroup.procs (its own, else a descendant's), or 0. */
static pid_t cgroup_first_pid(const char *dir, int depth)
{
	char path[PATH_MAX + 16], line[32];
	struct dirent *d;
	pid_t pid = 0;
	FILE *f;
	DIR *dd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (f) {
		if (fgets(line, sizeof(line), f))
			pid = (pid_t)atoi(line);
		fclose(f);
	}
	if (pid > 0 || depth > 8)
		return pid > 0 ? pid : 0;
	dd = opendir(dir);
	while (dd && (d = readdir(dd)) && !pid) {
		if (d->d_type != DT_DIR || d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		pid = cgroup_first_pid(path, depth + 1);
	}
	if (dd)
		closedir(dd);
	return pid;
}

/*
 * attach's targets, checked before anything is loaded: each --pid a live
 * process (not a thread of one), each --cgroup a directory of the cgroup v2
 * hierarchy. s->pid becomes the first process: the one whose affinity, CPU
 * quota and cgroup pressure the document reports (a cgroup set: a process
 * in the first cgroup, else init's, the host's).
 */
static int check_attach_targets(struct session *s, char *errbuf, size_t errlen)
{
	const struct session_opts *o = &s->opts;
	char *mount = s->cg_mount, dir[PATH_MAX + 256];
	size_t i, j;
	int err;

	for (i = 0; i < o->nr_pids; i++) {
		for (j = 0; j < i; j++)
			if (o->pids[j] == o->pids[i])
				return session__errf(
					errbuf, errlen, -EINVAL,
					"--pid %d is given twice; give each process once",
					(int)o->pids[i]);
		err = proctarget__check_attach(s->root, o->pids[i], errbuf, errlen);
		if (err)
			return err;
	}
	s->pid = o->nr_pids ? o->pids[0] : 1;
	if (!o->nr_cgroup_paths)
		return 0;
	err = cgroup__v2_mount(s->root, mount, sizeof(s->cg_mount));
	if (err)
		return session__errf(
			errbuf, errlen, err,
			"--cgroup needs cgroup v2, and it is not mounted; mount cgroup2 (e.g. on /sys/fs/cgroup/unified)");
	for (i = 0; i < o->nr_cgroup_paths; i++) {
		err = cgroup__v2_id(mount, o->cgroup_paths[i], &s->cg_ids[i], &s->cg_levels[i]);
		if (err)
			return session__errf(
				errbuf, errlen, err,
				"--cgroup '%s': %s in the cgroup v2 hierarchy at %s; give the path from its root, like /system.slice/NAME.service, or the full path under %s",
				o->cgroup_paths[i],
				err == -ENOENT	? "no such cgroup" :
				err == -ENOTDIR ? "not a cgroup directory" :
						  strerror(-err),
				mount, mount);
	}
	snprintf(dir, sizeof(dir), "%s%s", mount, o->cgroup_paths[0]);
	s->pid = cgroup_first_pid(dir, 0) ?: 1;
	return 0;
}

/* Threads /proc lists for pid now (0: none, or it is gone). */
static size_t proc_threads(const char *root, pid_t pid)
{
	char path[64];
	struct dirent *d;
	size_t n = 0;
	DIR *dir;

	if (fsutil__path(path, sizeof(path), root, "/proc/%d/task", (int)pid) < 0)
		return 0;
	dir = opendir(path);
	while (dir && (d = readdir(dir)))
		n += d->d_name[0] != '.';
	if (dir)
		closedir(dir);
	return n;
}

/*
 * Every --pid is a member once the start's walk is done. One that is not
 * was either gone by then, or is alive and hidden from BPF: a kernel can
 * keep a task out of its task iterator and its tracepoints (this CI's
 * hypervisor agent at pid 1 is: neither iter/task nor sched_switch shows
 * its threads). Either way nothing of it would be measured, and its
 * totals would read as zeros: refuse before the window, saying which.
 */
int session__check_roots(struct session *s, char *errbuf, size_t errlen)
{
	const struct thread_table *t = &s->base;
	size_t i, j, n;
	char state;
	unsigned long flags;

	if (!s->use_bpf || !s->set_mode)
		return 0;
	if (s->set_mode == KHBPF_SET_CGROUP) {
		if (!t->nr)
			session__logf(
				s,
				"khbpf: --cgroup %s%s: no task in it now; the window counts those that join, and is an error if none does\n",
				s->opts.cgroup_paths[0],
				s->opts.nr_cgroup_paths > 1 ? " (nor in the others)" : "");
		return 0;
	}
	for (i = 0; i < s->opts.nr_pids; i++) {
		pid_t pid = s->opts.pids[i];

		for (j = 0; j < t->nr && t->recs[j].tgid != (uint32_t)pid; j++)
			;
		if (j < t->nr)
			continue;
		n = proc_threads(s->root, pid);
		if (proctarget__state(s->root, pid, &state, &flags) || state == 'Z' ||
		    state == 'X' || !n)
			return session__errf(
				errbuf, errlen, -ESRCH,
				"--pid %d exited before its threads could be read; nothing was measured",
				(int)pid);
		if (s->opts.mode == TARGET_MODE_SERVE)
			return session__errf(
				errbuf, errlen, -ENOENT,
				"--pid %d: BPF's walk of the host's tasks did not find it, though /proc lists %zu thread%s of it (the kernel hides it from BPF); nothing of it would be exported: serve needs BPF, attach --no-bpf reads /proc instead",
				(int)pid, n, n == 1 ? "" : "s");
		return session__errf(
			errbuf, errlen, -ENOENT,
			"--pid %d: BPF's walk of the host's tasks did not find it, though /proc lists %zu thread%s of it (the kernel hides it from BPF); nothing would be measured: pass --no-bpf to read /proc/%d/task instead",
			(int)pid, n, n == 1 ? "" : "s", (int)pid);
	}
	return 0;
}

/*
 * The window's set never had a member: its totals would be zeros that
 * measured nothing. An error, saying what was asked and what was found.
 */
static int check_set_had_members(struct session *s, char *errbuf, size_t errlen)
{
	char dir[PATH_MAX + 256];
	pid_t *pids = NULL;
	size_t nr = 0, i;
	double secs = (double)(s->end_mono - s->start_mono) / 1e9;

	if (!s->use_bpf || !s->set_mode || s->pwin.nr || s->win.nr_threads)
		return 0;
	if (s->set_mode != KHBPF_SET_CGROUP)
		return session__errf(
			errbuf, errlen, -ENOENT,
			"pid %d: BPF saw no thread of the set in the %.1f s window; nothing was measured, so no document was written",
			(int)s->pid, secs);
	for (i = 0; i < s->opts.nr_cgroup_paths && !nr; i++) {
		snprintf(dir, sizeof(dir), "%s%s", s->cg_mount, s->opts.cgroup_paths[i]);
		free(pids);
		pids = NULL;
		if (proctarget__cgroup_pids(dir, 1, &pids, &nr, 0))
			nr = 0;
	}
	free(pids);
	if (nr)
		return session__errf(
			errbuf, errlen, -ENOENT,
			"--cgroup %s%s: BPF saw none of its tasks in the %.1f s window, though it holds processes now (the kernel hides them from BPF); nothing was measured, so no document was written: pass --no-bpf to read /proc instead",
			s->opts.cgroup_paths[0],
			s->opts.nr_cgroup_paths > 1 ? " (and the others)" : "", secs);
	return session__errf(
		errbuf, errlen, -ENOENT,
		"--cgroup %s%s: no task was in it during the %.1f s window; nothing was measured, so no document was written",
		s->opts.cgroup_paths[0], s->opts.nr_cgroup_paths > 1 ? " (nor in the others)" : "",
		secs);
}

int session__run(struct session **out, const struct session_opts *opts, char *errbuf, size_t errlen)
{
	struct runner_opts ro = { .sz = sizeof(ro), .argv = opts->argv, .as_root = opts->as_root };
	struct session *s;
	int err, step, exec_errno;

	*out = NULL;
	s = session__alloc(opts);
	if (!s)
		return session__errf(errbuf, errlen, -ENOMEM, "out of memory");

	err = session__setup_signals(s, errbuf, errlen);
	if (err)
		goto cleanup;
	host_topology__read(&s->topo, s->root);

	if (opts->mode == TARGET_MODE_RUN) {
		err = runner__fork(&s->runner, &ro, errbuf, errlen);
		if (!err)
			s->pid = runner__pid(s->runner);
	} else {
		err = check_attach_targets(s, errbuf, errlen);
	}
	s->set_mode = opts->mode == TARGET_MODE_RUN ?
			      (opts->no_children ? KHBPF_SET_PIDS : KHBPF_SET_TREE) :
		      opts->nr_cgroup_paths ? KHBPF_SET_CGROUP :
		      opts->children	    ? KHBPF_SET_TREE :
					      KHBPF_SET_PIDS;
	if (err)
		goto cleanup;
	err = open_root_fds(s, errbuf, errlen);
	if (err)
		goto cleanup;
	err = setup_timer(s, errbuf, errlen);
	if (err)
		goto cleanup;
	/* Before anything is loaded: a request naming what is not there ends it here. */
	err = session__discover_spans(s, errbuf, errlen);
	if (err)
		goto cleanup;
	session__setup_collector(s);

	/* The window starts here: baseline snapshot (attach) or exec (run). */
	s->start_boot = clock_ns(CLOCK_BOOTTIME);
	s->start_mono = clock_ns(CLOCK_MONOTONIC);
	s->start_real = clock_ns(CLOCK_REALTIME);
	/* run: before CMD's exec, so whatever CMD does stalls inside the window. */
	session__sample_pressure(s, false);
	if (opts->mode == TARGET_MODE_ATTACH) {
		err = session__start_collecting(s);
		if (err) {
			err = session__errf(errbuf, errlen, err,
					    "--pid %d: cannot read its threads: %s", (int)s->pid,
					    strerror(-err));
			goto cleanup;
		}
		err = session__check_roots(s, errbuf, errlen);
		if (err)
			goto cleanup;
		err = session__census(&s->census[0], &s->base, NULL, 0);
		session__open_counters(s, &s->base);
	} else {
		/* The command's whole life: its one thread starts from zero. */
		struct thread_table one = { 0 };
		struct khbpf_thread_rec r = { .tid = (uint32_t)s->pid };

		one.recs = &r;
		one.nr = 1;
		err = session__start_collecting(s);
		err = err ?: session__census(&s->census[0], &one, NULL, 0);
		session__open_counters(s, NULL);
		err = err ?: runner__go(s->runner);
		if (err == -ENOEXEC && runner__failure(s->runner, &step, &exec_errno)) {
			if (step == RUNNER_FAILED_USER)
				session__errf(
					errbuf, errlen, err,
					"cannot run '%s' as SUDO_UID=%s SUDO_GID=%s: %s; fix them or pass --as-root",
					opts->argv[0], getenv("SUDO_UID"), getenv("SUDO_GID"),
					strerror(exec_errno));
			else
				session__errf(errbuf, errlen, err, "cannot execute '%s': %s",
					      opts->argv[0], strerror(exec_errno));
			waitpid(s->pid, &s->wait_status, 0);
			s->child_reaped = true;
			*out = s;
			return err;
		}
	}
	if (err)
		goto cleanup;
	session__read_join_titles(s);
	proctarget__fill(s->root, s->pid, s->opts.mode, &s->target);
	session__sample_frequency(s);
	err = session__drop_privileges(s, errbuf, errlen);
	if (err)
		goto cleanup;
	if (s->set_mode == KHBPF_SET_CGROUP)
		session__logf(s, "khbpf: watching every task in cgroup %s%s (%s)%s\n",
			      opts->cgroup_paths[0],
			      opts->nr_cgroup_paths > 1 ? " and the other --cgroup ones" : "",
			      s->use_bpf ? "BPF" : "/proc fallback",
			      opts->duration_ns ? "" : "; Ctrl-C ends the window");
	else
		session__logf(s, "khbpf: watching pid %d%s (%s)%s\n", (int)s->pid,
			      s->set_mode == KHBPF_SET_TREE ? " and every process it starts" :
			      opts->nr_pids > 1		    ? " and the other --pid processes" :
							      "",
			      s->use_bpf ? "BPF" : "/proc fallback",
			      opts->duration_ns ? "" : "; Ctrl-C ends the window");

	err = wait_loop(s);
	if (err) {
		err = session__errf(errbuf, errlen, err, "waiting: %s", strerror(-err));
		goto cleanup;
	}
	if (opts->mode == TARGET_MODE_RUN && s->end_reason == END_REASON_TARGET_EXIT) {
		siginfo_t si;

		/* Learn the exit without reaping: its threads stay readable. */
		memset(&si, 0, sizeof(si));
		waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOWAIT);
	}
	err = session__finish_window(s);
	if (err) {
		err = session__errf(errbuf, errlen, err, "reading the window's end: %s",
				    strerror(-err));
		goto cleanup;
	}
	err = check_set_had_members(s, errbuf, errlen);
	if (err)
		goto cleanup;
	/* The command has exited: reap it. Otherwise it runs on; see session__finish. */
	if (opts->mode == TARGET_MODE_RUN && s->end_reason == END_REASON_TARGET_EXIT &&
	    wait4(s->pid, &s->wait_status, 0, &s->fb.ru) == s->pid) {
		s->child_reaped = true;
		s->fb.have_rusage = true;
	}
	err = session__build_document(s);
	if (err) {
		err = session__errf(errbuf, errlen, err, "building the document: %s",
				    strerror(-err));
		goto cleanup;
	}
	*out = s;
	return 0;

cleanup:
	/* A held child not yet released sees EOF and exits without running CMD. */
	runner__destroy(s->runner);
	s->runner = NULL;
	if (opts->mode == TARGET_MODE_RUN && s->pid > 0 && !s->child_reaped) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
	}
	session__destroy(s);
	return err;
}

int session__finish(struct session *s)
{
	struct pollfd pfd[2];

	if (s->opts.mode != TARGET_MODE_RUN || s->child_reaped || runner__exit_code(s->runner))
		return 0;
	session__logf(
		s, "khbpf: window ended; waiting for pid %d to exit (signals are passed to it)\n",
		(int)s->pid);
	for (;;) {
		pfd[0] = (struct pollfd){ .fd = s->sigfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = s->pidfd, .events = POLLIN };
		if (poll(pfd, 2, s->pidfd < 0 ? NO_PIDFD_POLL_MS : -1) < 0 && errno != EINTR)
			return -errno;
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(s->sigfd, &si, sizeof(si)) == sizeof(si))
				kill(s->pid, (int)si.ssi_signo);
		}
		if ((s->pidfd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP))) ||
		    (s->pidfd < 0 && pid_gone(s, s->pid)))
			break;
	}
	if (waitpid(s->pid, &s->wait_status, 0) != s->pid)
		return -errno;
	s->child_reaped = true;
	return 0;
}

struct json_object *session__document(const struct session *s)
{
	/* Threads and span records are made into text from s's arrays: s outlives it. */
	return evidence_doc__to_json_lazy(docbuild__doc(s->build));
}

int session__exit_code(const struct session *s)
{
	if (s->opts.mode != TARGET_MODE_RUN)
		return 0;
	if (runner__exit_code(s->runner))
		return runner__exit_code(s->runner);
	if (!s->child_reaped)
		return 0;
	if (WIFSIGNALED(s->wait_status))
		return 128 + WTERMSIG(s->wait_status);
	return WEXITSTATUS(s->wait_status);
}

int session__drop_privileges(struct session *s, char *errbuf, size_t errlen)
{
	cap_value_t keep[5];
	uid_t uid;
	gid_t gid;
	int nr = 0, err;

	/* run: CMD runs as the invoking user, and signals are passed on to it. */
	if (s->opts.mode == TARGET_MODE_RUN && !s->opts.as_root &&
	    privs__invoking_user(&uid, &gid) == 1)
		keep[nr++] = CAP_KILL;
	/*
	 * Span sites are attached as the set's processes exec new binaries:
	 * uprobe_multi links need CAP_BPF and CAP_PERFMON, reading what they
	 * run CAP_SYS_PTRACE.
	 */
	if (s->use_bpf && s->coll && sched_collector__follows_exec(s->coll)) {
		keep[nr++] = CAP_BPF;
		keep[nr++] = CAP_PERFMON;
		/*
		 * /proc/PID/exe of a process with capabilities khbpf no longer
		 * has (one running as root) is refused without it
		 * (cap_ptrace_access_check()).
		 */
		keep[nr++] = CAP_SYS_PTRACE;
		/* A per-site uprobe (no uprobe_multi, before 6.6) is a perf event: CAP_SYS_ADMIN. */
		if (!sched_collector__span_multi(s->coll))
			keep[nr++] = CAP_SYS_ADMIN;
	} else if (s->use_bpf && s->coll && sched_collector__bpf_needs_cap(s->coll)) {
		/* A kernel that checks every bpf() command: the held maps need CAP_BPF to be read. */
		keep[nr++] = CAP_BPF;
	}
	err = privs__drop(keep, nr);
	if (err)
		return session__errf(errbuf, errlen, err,
				     "cannot drop privileges after attaching: %s", strerror(-err));
	return 0;
}

void session__destroy(struct session *s)
{
	if (!s)
		return;
	docbuild__destroy(s->build);
	runner__destroy(s->runner);
	sched_window__free(&s->win);
	free(s->census[0].threads);
	free(s->census[1].threads);
	thread_table__free(&s->base);
	thread_table__free(&s->end);
	thread_table__free(&s->exited);
	free(s->wakers);
	sched_collector__destroy(s->coll);
	perfcount__destroy(s->perf);
	host_topology__free(&s->topo);
	span_run__free(&s->spans);
	if (s->timerfd >= 0)
		close(s->timerfd);
	for (size_t i = 0; i < s->nr_root_fds; i++)
		if (s->root_fds[i] >= 0)
			close(s->root_fds[i]);
	free(s->root_fds);
	free(s->root_done);
	proc_window__free(&s->pwin);
	free(s->procs);
	proc_exes__free(s->exes, s->nr_exes);
	proc_titles__free(s->titles, s->nr_titles);
	if (s->sigfd >= 0)
		close(s->sigfd);
	free(s);
}

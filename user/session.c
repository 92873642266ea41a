// SPDX-License-Identifier: MIT
#include <errno.h>
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

#include "privs.h"
#include "proctarget.h"
#include "session_int.h"

void session__logf(const struct session *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->opts.log)
		return;
	va_start(ap, fmt);
	vfprintf(s->opts.log, fmt, ap);
	va_end(ap);
}

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

static bool target_gone(struct session *s)
{
	unsigned long flags;
	siginfo_t si;
	char state;

	if (s->opts.mode == TARGET_MODE_RUN) {
		memset(&si, 0, sizeof(si));
		return !waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG | WNOWAIT) &&
		       si.si_pid == s->pid;
	}
	return proctarget__state(s->root, s->pid, &state, &flags) || state == 'Z' || state == 'X';
}

static bool target_exited(struct session *s, const struct pollfd *pidfd_poll)
{
	if (s->pidfd >= 0)
		return pidfd_poll->revents & (POLLIN | POLLHUP);
	return target_gone(s);
}

static int wait_loop(struct session *s)
{
	uint64_t deadline = s->opts.duration_ns ? s->start_mono + s->opts.duration_ns : 0;
	struct pollfd pfd[4];
	int forwarded = 0;

	for (;;) {
		int timeout = -1, n;

		if (deadline) {
			uint64_t now = clock_ns(CLOCK_MONOTONIC);

			if (now >= deadline) {
				s->end_reason = END_REASON_DURATION;
				return 0;
			}
			timeout = (int)((deadline - now + 999999) / 1000000);
		}
		if (s->pidfd < 0 && (timeout < 0 || timeout > NO_PIDFD_POLL_MS))
			timeout = NO_PIDFD_POLL_MS;
		pfd[0] = (struct pollfd){ .fd = s->sigfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = s->pidfd, .events = POLLIN };
		pfd[2] = (struct pollfd){ .fd = s->timerfd, .events = POLLIN };
		pfd[3] = (struct pollfd){ .fd = s->coll ? sched_collector__span_fd(s->coll) : -1,
					  .events = POLLIN };
		n = poll(pfd, 4, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[3].revents & POLLIN)
			sched_collector__drain_spans(s->coll);
		if (pfd[2].revents & POLLIN) {
			uint64_t ticks;

			if (read(s->timerfd, &ticks, sizeof(ticks)) == sizeof(ticks))
				session__sample_frequency(s);
			/* Span records wake the loader only in bulk: collect the rest here. */
			if (s->coll)
				sched_collector__drain_spans(s->coll);
		}
		if (target_exited(s, &pfd[1])) {
			s->end_reason = END_REASON_TARGET_EXIT;
			return 0;
		}
		if (pfd[0].revents & POLLIN) {
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
			return 0;
		}
	}
}

int session__setup_signals(struct session *s, char *errbuf, size_t errlen)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
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
		s->pid = opts->pid;
		err = proctarget__check_attach(s->root, s->pid, errbuf, errlen);
	}
	if (err)
		goto cleanup;
	s->pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
	if (s->pidfd < 0 && errno != ENOSYS) {
		err = session__errf(errbuf, errlen, -errno, "--pid %d: %s", (int)s->pid,
				    errno == ESRCH ? "process exited" : strerror(errno));
		goto cleanup;
	}
	err = setup_timer(s, errbuf, errlen);
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
	proctarget__fill(s->root, s->pid, s->opts.mode, &s->target);
	session__sample_frequency(s);
	err = session__drop_privileges(s, errbuf, errlen);
	if (err)
		goto cleanup;
	session__logf(s, "khbpf: watching pid %d (%s)%s\n", (int)s->pid,
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
		if (target_exited(s, &pfd[1]))
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
	cap_value_t keep[2];
	uid_t uid;
	gid_t gid;
	int nr = 0, err;

	/* run: CMD runs as the invoking user, and signals are passed on to it. */
	if (s->opts.mode == TARGET_MODE_RUN && !s->opts.as_root &&
	    privs__invoking_user(&uid, &gid) == 1)
		keep[nr++] = CAP_KILL;
	/* A kernel that checks every bpf() command: the held maps need CAP_BPF to be read. */
	if (s->use_bpf && s->coll && sched_collector__bpf_needs_cap(s->coll))
		keep[nr++] = CAP_BPF;
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
	if (s->pidfd >= 0)
		close(s->pidfd);
	if (s->sigfd >= 0)
		close(s->sigfd);
	free(s);
}

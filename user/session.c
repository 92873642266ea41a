// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "cpufreq.h"
#include "evjson.h"
#include "fsutil.h"
#include "probe.h"
#include "perfcount.h"
#include "procsched.h"
#include "sched_collector.h"
#include "sched_window.h"
#include "session.h"
#include "spanrun.h"
#include "topology.h"

#define NS_PER_SEC UINT64_C(1000000000)

struct session {
	struct session_opts opts;
	const char *root;
	pid_t pid;
	int pidfd;
	int sigfd;
	int timerfd;
	bool child_reaped;
	int wait_status;
	bool exec_failed;
	int exec_phase; /* CHILD_FAILED_* */
	int exec_errno;

	struct host_topology topo;
	struct sched_collector *coll;
	enum collector_availability bpf_avail;
	char bpf_detail[256];
	bool use_bpf;
	bool have_btf;

	uint64_t start_mono, start_real, start_boot, end_mono;
	enum end_reason end_reason;
	int signal_seen;

	struct thread_table base, end, exited;
	struct sched_window win;
	struct sched_collector_stats stats;
	uint64_t proc_read_errors;

	struct thread_census census[2];
	struct cpu_frequency_sample freq[EV_MAX_SAMPLES];
	size_t nr_freq;
	uint64_t freq_dropped;
	enum ev_gap freq_gap;
	bool freq_any;

	struct perfcount *perf;
	struct counter_set counters;
	enum collector_availability counters_avail;
	char counters_detail[256];

	struct hardware_run hw;
	struct doc_thread *threads;
	size_t nr_threads;
	struct collector_capability caps[5];
	struct named_u64 loss[30 + SCHED_PROG_MAX];
	char loss_names[SCHED_PROG_MAX][48];
	size_t nr_loss;
	struct named_u64 overhead[2 * SCHED_PROG_MAX + 4];
	char overhead_names[2 * SCHED_PROG_MAX][48];
	size_t nr_overhead;
	struct evidence_doc doc;
	struct doc_target target; /* read while the target was alive */
	struct span_run spans;
	bool spans_discovered;
	struct rusage usage;

	/*
	 * Without BPF, /proc shows only the threads alive when it is read. The
	 * process's CPU clock (all its threads, dead ones included; not its
	 * children) says whether any ran unseen: at a moment when it does not
	 * move while the threads are read, it equals their sum exactly. In run,
	 * wait4's rusage gives the switches of every thread that ever ran.
	 */
	struct fallback_witness {
		bool clock_ok; /* both ends read with the clock still */
		uint64_t cpu_start, cpu_end;
		bool have_rusage;
		struct rusage ru;
		bool child_faults_known;
		uint64_t child_faults; /* cminflt + cmajflt: children CMD waited for */
	} fb;
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void logf_(const struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void logf_(const struct session *s, const char *fmt, ...)
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

/* /proc/PID/stat into buf; *after points past the last ')' (comm may hold any). */
static int proc_stat_read(const char *root, pid_t pid, char *buf, size_t size, char **after)
{
	char path[64];
	int n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = fsutil__read_file(root, path, buf, size);
	if (n < 0)
		return n == -ENOENT ? -ESRCH : n;
	*after = strrchr(buf, ')');
	return *after ? 0 : -EINVAL;
}

/* State letter and flags from /proc/PID/stat. */
static int proc_stat_state(const char *root, pid_t pid, char *state, unsigned long *flags)
{
	char buf[1024], *p;
	int err = proc_stat_read(root, pid, buf, sizeof(buf), &p);

	/* After ") ": state ppid pgrp session tty_nr tpgid flags */
	if (!err && sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", state, flags) != 2)
		err = -EINVAL;
	return err;
}

#define PF_KTHREAD 0x00200000UL

/* cminflt + cmajflt of /proc/PID/stat: faults of the children pid waited for. */
static int proc_stat_child_faults(const char *root, pid_t pid, uint64_t *faults)
{
	unsigned long long cmin, cmaj;
	char buf[1024], *p;
	int err = proc_stat_read(root, pid, buf, sizeof(buf), &p);

	/* ... flags minflt cminflt majflt cmajflt */
	if (!err &&
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %llu %*u %llu", &cmin, &cmaj) != 2)
		err = -EINVAL;
	if (!err)
		*faults = cmin + cmaj;
	return err;
}

/* The process CPU clock of pid (clock_getcpuclockid(3)): every thread, dead ones too. */
static int process_cpu_ns(pid_t pid, uint64_t *ns)
{
	struct timespec ts;
	clockid_t id;
	int err = clock_getcpuclockid(pid, &id);

	if (err)
		return -err;
	if (clock_gettime(id, &ts))
		return -errno;
	*ns = (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
	return 0;
}

/*
 * A zombie main thread with other threads still listed: the main thread
 * called pthread_exit and the process runs on (exited threads other than
 * the leader are reaped at once, so any other entry is a live thread).
 */
static bool other_threads_listed(const char *root, pid_t pid)
{
	char path[PATH_MAX];
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (fsutil__path(path, sizeof(path), root, "/proc/%d/task", (int)pid) < 0)
		return false;
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (de = readdir(d)))
		found = de->d_name[0] != '.' && strtol(de->d_name, NULL, 10) != pid;
	closedir(d);
	return found;
}

static int check_attach_target(struct session *s, char *errbuf, size_t errlen)
{
	unsigned long flags = 0;
	char state = 0;
	int err;

	if (s->pid <= 0)
		return session__errf(errbuf, errlen, -EINVAL, "--pid %d: not a process id",
				     (int)s->pid);
	err = proc_stat_state(s->root, s->pid, &state, &flags);
	if (err == -ESRCH)
		return session__errf(errbuf, errlen, err, "--pid %d: no such process", (int)s->pid);
	if (err)
		return session__errf(errbuf, errlen, err, "--pid %d: cannot read /proc/%d/stat: %s",
				     (int)s->pid, (int)s->pid, strerror(-err));
	if (flags & PF_KTHREAD)
		return session__errf(errbuf, errlen, -EINVAL,
				     "--pid %d is a kernel thread; khbpf watches user processes",
				     (int)s->pid);
	if ((state == 'Z' || state == 'X') && !other_threads_listed(s->root, s->pid))
		return session__errf(
			errbuf, errlen, -ESRCH,
			"--pid %d is a zombie (exited, not yet reaped); nothing left to watch",
			(int)s->pid);
	return 0;
}

/* comm and exe, read while the target lives; a later successful read wins. */
static void fill_target(struct session *s, struct doc_target *t)
{
	char path[64], buf[DOC_COMM_MAX], exe[PATH_MAX];
	ssize_t n;
	int r;

	t->pid = (uint64_t)s->pid;
	t->mode = s->opts.mode;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)s->pid);
	r = fsutil__read_file(s->root, path, buf, sizeof(buf));
	if (r > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(t->comm, sizeof(t->comm), "%s", buf);
	}
	r = fsutil__path(path, sizeof(path), s->root, "/proc/%d/exe", (int)s->pid);
	n = r < 0 ? -1 : readlink(path, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		memcpy(t->exe, exe, (size_t)n + 1);
		t->exe_recorded = true;
	} else if (!t->exe_recorded) {
		t->exe_reason = fsutil__errno_gap(n < 0 ? -errno : -EINVAL);
	}
}

#define CHILD_FAILED_USER 1 /* dropping to SUDO_UID/SUDO_GID */
#define CHILD_FAILED_EXEC 2

/*
 * execv of one file. A file the kernel will not load (ENOEXEC) runs under
 * /bin/sh only if it is text, as shells do with a script without "#!";
 * execvp(3) would also hand a truncated or foreign binary to sh, which then
 * fails in confusing ways with sh's own exit status.
 */
static void exec_file(const char *file, char *const argv[])
{
	char head[256], **sh_argv;
	size_t argc = 0, i;
	ssize_t n;
	int fd;

	execv(file, argv);
	if (errno != ENOEXEC)
		return;
	fd = open(file, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, head, sizeof(head)) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0 || memchr(head, '\0', (size_t)n) || (n >= 4 && !memcmp(head, "\177ELF", 4))) {
		errno = ENOEXEC;
		return;
	}
	while (argv[argc])
		argc++;
	/* The parent is single-threaded when it forks: malloc is safe here. */
	sh_argv = calloc(argc + 2, sizeof(*sh_argv));
	if (!sh_argv) {
		errno = ENOMEM;
		return;
	}
	sh_argv[0] = "sh";
	sh_argv[1] = (char *)file;
	for (i = 1; i < argc; i++)
		sh_argv[i + 1] = argv[i];
	execv("/bin/sh", sh_argv);
	free(sh_argv);
}

/* execvp(3) without its ENOEXEC fallback (exec_file); returns with errno set. */
static void exec_command(char *const argv[])
{
	const char *path = getenv("PATH"), *cmd = argv[0];
	char buf[PATH_MAX];
	bool denied = false;

	if (strchr(cmd, '/')) {
		exec_file(cmd, argv);
		return;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, len ? path : ".", cmd) <
		    (int)sizeof(buf)) {
			exec_file(buf, argv);
			if (errno == EACCES)
				denied = true;
			else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE &&
				 errno != ENODEV && errno != ETIMEDOUT)
				return;
		}
		path += len + (path[len] == ':');
	}
	errno = denied ? EACCES : ENOENT;
}

/* Release the held child; learn whether exec worked through the CLOEXEC pipe. */
static int start_child(struct session *s, int go_fd, int err_fd)
{
	int report[2] = { 0, 0 }; /* { CHILD_FAILED_*, errno } */
	ssize_t n;

	if (write(go_fd, "g", 1) != 1)
		return -errno;
	close(go_fd);
	n = read(err_fd, report, sizeof(report));
	close(err_fd);
	if (n == (ssize_t)sizeof(report)) {
		s->exec_failed = true;
		s->exec_phase = report[0];
		s->exec_errno = report[1];
		return -ENOEXEC;
	}
	return 0;
}

/*
 * Under sudo (uid 0 with SUDO_UID and SUDO_GID): the invoking user, 1.
 * 0 when there is none (not root, not sudo, or sudo by root itself);
 * -EINVAL when the variables are malformed.
 */
static int invoking_user(uid_t *uid, gid_t *gid)
{
	const char *uid_s = getenv("SUDO_UID"), *gid_s = getenv("SUDO_GID");
	uint64_t u, g;

	if (getuid() != 0 || !uid_s || !gid_s)
		return 0;
	if (fsutil__parse_u64(uid_s, &u) || fsutil__parse_u64(gid_s, &g) || u >= UINT32_MAX ||
	    g >= UINT32_MAX)
		return -EINVAL;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return u != 0;
}

/* The invoking user's supplementary groups, else none. */
static int user_groups(uid_t uid, gid_t gid)
{
	struct passwd *pw = getpwuid(uid);

	if (pw ? initgroups(pw->pw_name, gid) : setgroups(0, NULL))
		return -errno;
	return 0;
}

/*
 * In the held child: become the invoking user, with their groups and, from
 * their passwd entry, HOME, USER and LOGNAME (sudo leaves root's HOME, which
 * the user may not write).
 */
static int drop_to_invoking_user(void)
{
	struct passwd *pw;
	uid_t uid;
	gid_t gid;
	int err;

	err = invoking_user(&uid, &gid);
	if (err <= 0)
		return err;
	err = user_groups(uid, gid);
	if (err)
		return err;
	if (setgid(gid) || setuid(uid))
		return -errno;
	pw = getpwuid(uid);
	if (pw && (setenv("HOME", pw->pw_dir, 1) || setenv("USER", pw->pw_name, 1) ||
		   setenv("LOGNAME", pw->pw_name, 1)))
		return -errno;
	return 0;
}

/* Fork CMD held on a pipe: it execs only once the collector is attached. */
static int fork_held_child(struct session *s, int *go_fd, int *err_fd, char *errbuf, size_t errlen)
{
	int go[2], ep[2];
	sigset_t none;
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) || pipe2(ep, O_CLOEXEC))
		return session__errf(errbuf, errlen, -errno, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		return session__errf(errbuf, errlen, -errno, "fork: %s", strerror(errno));
	if (pid == 0) {
		char c;

		close(go[1]);
		close(ep[0]);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int report[2] = { CHILD_FAILED_USER, 0 };

		if (!s->opts.as_root)
			report[1] = -drop_to_invoking_user();
		/* EOF without a byte: the parent gave up; leave without running CMD. */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		if (!report[1]) {
			exec_command(s->opts.argv);
			report[0] = CHILD_FAILED_EXEC;
			report[1] = errno;
		}
		if (write(ep[1], report, sizeof(report)) < 0)
			_exit(127);
		_exit(report[0] == CHILD_FAILED_EXEC && report[1] == ENOENT ? 127 : 126);
	}
	close(go[0]);
	close(ep[1]);
	*go_fd = go[1];
	*err_fd = ep[0];
	s->pid = pid;
	return 0;
}

static void sample_frequency(struct session *s)
{
	struct cpu_frequency_sample f;
	enum ev_gap gap = EV_GAP_UNAVAILABLE;

	if (s->nr_freq == EV_MAX_SAMPLES) {
		s->freq_dropped++;
		return;
	}
	if (cpufreq__sample(s->root, clock_ns(CLOCK_MONOTONIC) - s->start_mono, &f, &gap)) {
		if (!s->freq_any)
			s->freq_gap = gap;
		return;
	}
	s->freq[s->nr_freq++] = f;
	s->freq_any = true;
}

/* procfs fallback: the kernel's counters as a thread table. */
static int proc_snapshot(struct session *s, struct thread_table *out)
{
	struct procsched_snapshot snap;
	size_t i;
	int err;

	memset(out, 0, sizeof(*out));
	err = procsched__read(s->root, s->pid, s->opts.max_threads, &snap);
	if (err)
		return err;
	out->recs = calloc(snap.nr_threads ? snap.nr_threads : 1, sizeof(*out->recs));
	if (!out->recs) {
		procsched__free(&snap);
		return -ENOMEM;
	}
	for (i = 0; i < snap.nr_threads; i++) {
		const struct procsched_thread *p = &snap.threads[i];
		struct khbpf_thread_rec *r = &out->recs[out->nr];

		if (!p->has_sched || !p->has_schedstat) {
			s->proc_read_errors++;
			continue;
		}
		r->tid = (uint32_t)p->tid;
		r->tgid = (uint32_t)s->pid;
		snprintf(r->comm, sizeof(r->comm), "%.15s", p->comm);
		r->k.nvcsw = p->nr_voluntary_switches;
		r->k.nivcsw = p->nr_involuntary_switches;
		r->k.nr_migrations = p->nr_migrations;
		r->k.sum_exec_runtime = p->sum_exec_runtime_ns;
		r->k.run_delay = p->run_delay_ns;
		r->k.pcount = p->pcount;
		out->nr++;
	}
	s->proc_read_errors += snap.dropped_threads;
	procsched__free(&snap);
	thread_table__sort(out);
	return 0;
}

static int take_snapshot(struct session *s, struct thread_table *out)
{
	return s->use_bpf ? sched_collector__snapshot(s->coll, out) : proc_snapshot(s, out);
}

/*
 * proc_snapshot between two reads of the process CPU clock: *still is true
 * when it did not move, so the threads read are all that ran until then.
 */
static int proc_snapshot_witnessed(struct session *s, struct thread_table *out, uint64_t *cpu,
				   bool *still)
{
	uint64_t before = 0;
	int err, cerr = process_cpu_ns(s->pid, &before);

	err = proc_snapshot(s, out);
	if (err)
		return err;
	*still = !cerr && !process_cpu_ns(s->pid, cpu) && *cpu == before;
	return 0;
}

/* A census of live threads' absolute on-CPU ns, bounded like the seed's. */
static int census_from(struct thread_census *c, const struct thread_table *t,
		       const struct thread_table *exited, uint64_t elapsed_ns)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	c->elapsed_ns = elapsed_ns;
	c->threads = calloc(t->nr ? t->nr : 1, sizeof(*c->threads));
	if (!c->threads)
		return -ENOMEM;
	for (i = 0; i < t->nr; i++) {
		const struct khbpf_thread_rec *r = &t->recs[i];

		/* A thread with an exit record is not alive at the end. */
		if (exited && thread_table__find(exited, r->tid, r->start_time))
			continue;
		if (c->nr_threads == EV_MAX_SAMPLE_THREADS) {
			c->dropped_threads++;
			continue;
		}
		c->threads[c->nr_threads].thread_id = r->tid;
		c->threads[c->nr_threads].cpu_time_ns = r->k.sum_exec_runtime;
		c->nr_threads++;
	}
	return 0;
}

static void bpf_unavailable(struct session *s, int err, bool have_btf)
{
	sched_collector__destroy(s->coll);
	s->coll = NULL;
	s->use_bpf = false;
	s->bpf_avail = probe__bpf_availability(err, have_btf, s->bpf_detail, sizeof(s->bpf_detail));
	span_run__unattach(&s->spans, s->bpf_detail);
	logf_(s, "khbpf: BPF unavailable (%s); falling back to /proc/%d/task/*/sched\n",
	      s->bpf_detail, (int)s->pid);
}

/* The command's executable: argv[0] as execvp(3) would find it. */
static bool resolve_exe(const char *cmd, char *out, size_t size)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(cmd, '/'))
		return realpath(cmd, out) != NULL;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, len ? path : ".", cmd);
		if (!access(buf, X_OK) && realpath(buf, out))
			return strlen(out) < size;
		path += len + (path[len] == ':');
	}
	return false;
}

/* Span sites: notes of every mapped object (attach) or of the command (run), and --span. */
static void discover_spans(struct session *s)
{
	struct span_run_opts so = {
		.sz = sizeof(so),
		.root = s->root,
		.pid = s->pid,
		.reqs = s->opts.span_reqs,
		.nr_reqs = s->opts.nr_span_reqs,
		.no_annotations = s->opts.no_annotations,
		.max_records = s->opts.max_spans,
	};
	char exe[PATH_MAX];
	int err;

	if (s->opts.mode == TARGET_MODE_RUN) {
		if (!resolve_exe(s->opts.argv[0], exe, sizeof(exe)))
			return;
		so.exe = exe;
	}
	err = span_run__discover(&s->spans, &so);
	s->spans_discovered = !err;
	if (err)
		logf_(s, "khbpf: span discovery failed: %s\n", strerror(-err));
}

/* PROC_PID_INIT_INO (include/linux/proc_ns.h): the initial PID namespace's inode. */
#define PID_NS_INIT_INO 0xEFFFFFFCU

/*
 * BPF programs see tasks by their ids in the initial PID namespace; from
 * inside another one, the target's id names another task, or none.
 */
static bool in_host_pid_ns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) || st.st_ino == PID_NS_INIT_INO;
}

/* Load the collector and mark the target; attach comes after the baseline. */
static void setup_collector(struct session *s)
{
	struct sched_collector_opts co = {
		.sz = sizeof(co),
		.max_exited = s->opts.max_exited,
		.max_tasks = s->opts.max_threads,
		.topo = &s->topo,
		.run_stats = s->opts.bpf_stats,
	};
	int err;

	s->have_btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	if (!s->opts.no_bpf && s->opts.mode != TARGET_MODE_SERVE)
		discover_spans(s);
	if (span_run__usable(&s->spans)) {
		co.spans = true;
		co.max_spans = s->opts.max_spans;
		co.counters = s->opts.span_counters;
		co.span_links = s->opts.span_links;
		co.span_sites = span_run__usable(&s->spans);
		co.on_span = span_run__on_event;
		co.on_span_ctx = &s->spans;
	}
	if (s->opts.no_bpf) {
		s->bpf_avail = AVAIL_DISABLED;
		snprintf(s->bpf_detail, sizeof(s->bpf_detail),
			 "--no-bpf given: kernel counters read from /proc at the window's ends");
		return;
	}
	if ((s->opts.mode != TARGET_MODE_SERVE || s->opts.nr_pids) && !in_host_pid_ns()) {
		s->bpf_avail = AVAIL_UNSUPPORTED;
		snprintf(
			s->bpf_detail, sizeof(s->bpf_detail),
			"khbpf runs in a PID namespace other than the host's, and BPF names tasks by their host ids; run khbpf in the host's PID namespace (e.g. docker run --pid=host)");
		span_run__unattach(&s->spans, s->bpf_detail);
		logf_(s, "khbpf: BPF unavailable (%s); falling back to /proc/%d/task/*/sched\n",
		      s->bpf_detail, (int)s->pid);
		return;
	}
	if (s->opts.mode == TARGET_MODE_SERVE) {
		size_t i;

		co.trace_all = !s->opts.nr_pids;
		co.group_by = s->opts.group_by;
		co.max_groups = s->opts.max_groups;
		co.nr_cgroups = (uint32_t)s->opts.nr_cgroups;
		for (i = 0; i < s->opts.nr_cgroups && i < KHBPF_MAX_CGROUP_FILTERS; i++) {
			co.cgroup_ids[i] = s->opts.cgroup_ids[i];
			co.cgroup_levels[i] = s->opts.cgroup_levels[i];
		}
		err = s->have_btf ? sched_collector__open(&s->coll, &co) : -ENOENT;
		for (i = 0; !err && i < s->opts.nr_pids; i++)
			err = sched_collector__add_target(s->coll, s->opts.pids[i]);
		if (err) {
			bpf_unavailable(s, err, s->have_btf);
			return;
		}
		s->use_bpf = true;
		s->bpf_avail = AVAIL_AVAILABLE;
		return;
	}
	err = s->have_btf ? sched_collector__open(&s->coll, &co) : -ENOENT;
	err = err ?: sched_collector__add_target(s->coll, s->pid);
	if (err) {
		bpf_unavailable(s, err, s->have_btf);
		return;
	}
	if (co.spans)
		span_run__attach(&s->spans, s->coll, s->pid);
	s->use_bpf = true;
	s->bpf_avail = AVAIL_AVAILABLE;
}

/* The window's start: baseline (attach mode), then the tracepoints. */
static int start_collecting(struct session *s)
{
	int err;

	if (s->opts.mode != TARGET_MODE_RUN && s->use_bpf) {
		err = sched_collector__baseline(s->coll, &s->base);
		if (err)
			return err;
	}
	if (s->use_bpf) {
		err = sched_collector__attach(s->coll);
		if (err) {
			thread_table__free(&s->base);
			bpf_unavailable(s, err, s->have_btf);
		}
	}
	if (s->opts.mode == TARGET_MODE_ATTACH && !s->use_bpf)
		return proc_snapshot_witnessed(s, &s->base, &s->fb.cpu_start, &s->fb.clock_ok);
	/* run: the command's clock starts at its fork, as its one thread's does. */
	s->fb.clock_ok = true;
	return 0;
}

/*
 * Hardware counters for the target's threads, inherited by threads created
 * later. run: opened on the held child, enabled at its exec.
 */
static void open_counters(struct session *s, const struct thread_table *threads)
{
	struct perfcount_opts po = {
		.sz = sizeof(po),
		.events = perfcount_hw_events,
		.nr_events = 8,
		.enable_on_exec = s->opts.mode == TARGET_MODE_RUN,
	};
	pid_t *tids;
	size_t i, n = threads ? threads->nr : 1;
	int err;

	tids = calloc(n ? n : 1, sizeof(*tids));
	if (!tids)
		return;
	for (i = 0; i < n; i++)
		tids[i] = threads ? (pid_t)threads->recs[i].tid : s->pid;
	err = perfcount__open(&s->perf, tids, n, &po);
	free(tids);
	if (err)
		s->perf = NULL;
}

static void read_counters(struct session *s)
{
	struct perfcount_value v[8];
	int err = -ENOMEM;

	if (s->perf)
		err = perfcount__read(s->perf, v, 8);
	if (err) {
		s->counters_avail = AVAIL_UNAVAILABLE;
		snprintf(s->counters_detail, sizeof(s->counters_detail),
			 "could not set up perf counters: %s", strerror(-err));
		counter_set__all_gapped(&s->counters, EV_SRC_PERF_EVENT_OPEN, EV_GAP_UNAVAILABLE);
		return;
	}
	perfcount__counter_set(&s->counters, v);
	/* The collector's availability is that of cycles, the event every PMU has. */
	s->counters_avail =
		probe__perf_availability(v[0].err, probe__perf_paranoid(s->root),
					 s->counters_detail, sizeof(s->counters_detail));
	if (v[0].multiplexed) {
		s->counters_avail = AVAIL_UNAVAILABLE;
		snprintf(
			s->counters_detail, sizeof(s->counters_detail),
			"the PMU was shared (multiplexed): counts would be estimates, so they are gaps");
	}
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
	return proc_stat_state(s->root, s->pid, &state, &flags) || state == 'Z' || state == 'X';
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
				sample_frequency(s);
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

static void fill_sched_evidence(struct scheduler_evidence *ev, const struct khbpf_task_counters *d,
				const struct khbpf_task_bpf *b, bool use_bpf, bool sched_info,
				bool known)
{
	enum ev_source sw = use_bpf ? EV_SRC_BPF_TRACEPOINT : EV_SRC_PROC_PID_SCHED;
	enum ev_source st = use_bpf ? EV_SRC_BPF_TRACEPOINT : EV_SRC_PROC_PID_SCHEDSTAT;

	if (!known) {
		scheduler_evidence__all_gapped(ev, sw, EV_GAP_UNAVAILABLE);
		ev->scheduler_delay_ns.source = st;
		ev->timeslices.source = st;
		return;
	}
	ev->voluntary_context_switches = sev_u64__recorded(d->nvcsw, sw);
	ev->involuntary_context_switches = sev_u64__recorded(d->nivcsw, sw);
	ev->total_context_switches = sev_u64__recorded(d->nvcsw + d->nivcsw, sw);
	ev->cpu_migrations = sev_u64__recorded(d->nr_migrations, sw);
	if (!use_bpf || sched_info) {
		ev->scheduler_delay_ns = sev_u64__recorded(d->run_delay, st);
		ev->timeslices = sev_u64__recorded(d->pcount, st);
	} else {
		/* No CONFIG_SCHED_INFO: the BPF-timed values stand in. */
		ev->scheduler_delay_ns =
			sev_u64__recorded(b->wait_ns + b->unbinned_ns, EV_SRC_BPF_TRACEPOINT);
		ev->timeslices = sev_u64__recorded(b->switch_ins, EV_SRC_BPF_TRACEPOINT);
	}
}

/*
 * kernel_migrations: se.nr_migrations over the same span. A CPU change the
 * classifier did not see (the held child of run before attach; a program
 * run that did not happen) is "unseen", so the classes add up to the
 * kernel's count and the shortfall is counted, not hidden.
 */
static void fill_detail(struct doc_sched_detail *d, const struct khbpf_task_bpf *b, bool valid,
			enum ev_gap reason, uint64_t kernel_migrations)
{
	memset(d, 0, sizeof(*d));
	if (!valid) {
		d->reason = reason;
		return;
	}
	d->recorded = true;
	d->wait_ns = b->wait_ns + b->unbinned_ns;
	d->waits = b->waits + b->unbinned_waits;
	d->unbinned_ns = b->unbinned_ns;
	d->unbinned_waits = b->unbinned_waits;
	d->switch_ins = b->switch_ins;
	d->migrations = b->migrations;
	d->migrations_unseen =
		kernel_migrations > b->migrations ? kernel_migrations - b->migrations : 0;
	memcpy(d->mig_class, b->mig_class, sizeof(d->mig_class));
	memcpy(d->wait_hist, b->wait_hist, sizeof(d->wait_hist));
}

static int build_document(struct session *s)
{
	struct evidence_doc *doc = &s->doc;
	struct hardware_run *hw = &s->hw;
	enum ev_gap bpf_gap = collector_availability__gap(s->bpf_avail);
	struct utilization_opts uo = { 0 };
	uint64_t wall = s->end_mono - s->start_mono;
	bool totals_known = s->win.vanished_threads == 0;
	/* Without BPF: the CPU of threads /proc never showed (fallback_witness). */
	bool fb_cpu_known = s->use_bpf || (s->fb.clock_ok && s->fb.cpu_end >= s->fb.cpu_start);
	uint64_t fb_cpu = s->fb.cpu_end - s->fb.cpu_start, seen_cpu = s->win.total.sum_exec_runtime;
	uint64_t unseen_cpu = !s->use_bpf && fb_cpu > seen_cpu ? fb_cpu - seen_cpu : 0;
	bool complete = totals_known && fb_cpu_known && (s->use_bpf || fb_cpu == seen_cpu);
	bool ru_switches =
		!complete && s->fb.have_rusage && s->fb.child_faults_known && !s->fb.child_faults;
	size_t i;
	int err;

	memset(doc, 0, sizeof(*doc));
	doc->target = s->target;
	if (s->opts.mode == TARGET_MODE_RUN && s->child_reaped) {
		doc->target.exit_recorded = true;
		doc->target.exit_signaled = WIFSIGNALED(s->wait_status);
		doc->target.exit_value = WIFSIGNALED(s->wait_status) ?
						 (uint64_t)WTERMSIG(s->wait_status) :
						 (uint64_t)WEXITSTATUS(s->wait_status);
	} else {
		doc->target.exit_reason = EV_GAP_UNAVAILABLE;
	}
	doc->window.start_unix_ns = s->start_real;
	doc->window.wall_ns = wall;
	doc->window.end_reason = s->end_reason;

	collector_capability__set(
		&s->caps[0], COLLECTOR_SCHEDULER_ACTIVITY,
		s->use_bpf ? AVAIL_AVAILABLE : s->bpf_avail, "%s%s%s", s->bpf_detail,
		s->use_bpf ? "" : "; values below come from /proc (proc-pid-* sources)",
		s->use_bpf || complete ?
			"" :
		ru_switches ?
			"; threads ran unseen (loss.threads_unseen_cpu_ns): process switches from wait4, other totals gaps" :
			"; threads may have run unseen (loss.threads_unseen_cpu_ns): process totals are gaps");
	if (s->use_bpf && !s->stats.sched_info)
		collector_capability__set(
			&s->caps[0], COLLECTOR_SCHEDULER_ACTIVITY, AVAIL_AVAILABLE,
			"kernel lacks CONFIG_SCHED_INFO: scheduler_delay_ns and timeslices are BPF-timed");
	collector_capability__set(&s->caps[1], COLLECTOR_HARDWARE_COUNTERS, s->counters_avail, "%s",
				  s->counters_detail);
	collector_capability__set(&s->caps[2], COLLECTOR_THREAD_UTILIZATION, AVAIL_AVAILABLE, NULL);
	collector_capability__set(&s->caps[3], COLLECTOR_CPU_TOPOLOGY,
				  s->topo.logical_cpus ? AVAIL_AVAILABLE : AVAIL_UNAVAILABLE,
				  "cannot read CPU topology from sysfs; mount /sys");
	doc->collectors = s->caps;
	if (s->spans.nr_attached)
		collector_capability__set(&s->caps[4], COLLECTOR_SPAN_PROBES, AVAIL_AVAILABLE,
					  NULL);
	else if (!s->spans.nr_sites)
		collector_capability__set(
			&s->caps[4], COLLECTOR_SPAN_PROBES, AVAIL_DISABLED, "%s",
			s->opts.no_bpf ?
				"--no-bpf given: spans need BPF uprobes" :
				"no annotated span functions (KHBPF_SPAN) in the target and no --span given");
	else
		collector_capability__set(&s->caps[4], COLLECTOR_SPAN_PROBES,
					  s->use_bpf ? AVAIL_UNAVAILABLE : s->bpf_avail,
					  "no span site could be attached: %.200s",
					  s->spans.sites[0].reason[0] ? s->spans.sites[0].reason :
									s->bpf_detail);
	doc->nr_collectors = 5;

	/* Threads. */
	s->threads = calloc(s->win.nr_threads ? s->win.nr_threads : 1, sizeof(*s->threads));
	if (!s->threads)
		return -ENOMEM;
	for (i = 0; i < s->win.nr_threads; i++) {
		const struct window_thread *w = &s->win.threads[i];
		struct doc_thread *t = &s->threads[i];

		t->thread_id = w->tid;
		snprintf(t->comm, sizeof(t->comm), "%.16s", w->comm);
		t->exited = w->exited;
		t->born = w->born;
		fill_sched_evidence(&t->scheduler, &w->delta, &w->bpf, s->use_bpf,
				    s->stats.sched_info, !w->vanished);
		t->on_cpu_ns = w->vanished ?
				       sev_u64__gap(s->use_bpf ? EV_SRC_BPF_TRACEPOINT :
								 EV_SRC_PROC_PID_SCHEDSTAT,
						    EV_GAP_UNAVAILABLE) :
				       sev_u64__recorded(w->delta.sum_exec_runtime,
							 s->use_bpf ? EV_SRC_BPF_TRACEPOINT :
								      EV_SRC_PROC_PID_SCHEDSTAT);
		fill_detail(&t->detail, &w->bpf, s->use_bpf && w->has_bpf,
			    s->use_bpf ? EV_GAP_UNAVAILABLE : bpf_gap,
			    w->vanished ? 0 : w->delta.nr_migrations);
	}
	s->nr_threads = s->win.nr_threads;
	doc->threads = s->threads;
	doc->nr_threads = s->nr_threads;
	fill_detail(&doc->sched_detail, &s->win.total_bpf, s->use_bpf, bpf_gap,
		    totals_known ? s->win.total.nr_migrations : 0);
	doc->kernel_run_delay_ns =
		complete && (!s->use_bpf || s->stats.sched_info) ?
			sev_u64__recorded(s->win.total.run_delay,
					  s->use_bpf ? EV_SRC_BPF_TRACEPOINT :
						       EV_SRC_PROC_PID_SCHEDSTAT) :
			sev_u64__gap(s->use_bpf ? EV_SRC_BPF_TRACEPOINT : EV_SRC_PROC_PID_SCHEDSTAT,
				     complete ? EV_GAP_UNSUPPORTED : EV_GAP_UNAVAILABLE);

	/* hardware: totals are the sums over threads, exited included. */
	hw->counters = s->counters;
	fill_sched_evidence(&hw->scheduler, &s->win.total, &s->win.total_bpf, s->use_bpf,
			    s->stats.sched_info, complete);
	/*
	 * Some threads were never read: in run, wait4's rusage still has every
	 * thread's switches, less each exited thread's last one (__exit_signal
	 * folds its counts into the process before its final __schedule), and
	 * plus those of the children CMD waited for, so only when there were
	 * none (their page faults, cminflt + cmajflt, are 0).
	 */
	if (ru_switches) {
		struct scheduler_evidence *e = &hw->scheduler;
		uint64_t v = (uint64_t)s->fb.ru.ru_nvcsw, iv = (uint64_t)s->fb.ru.ru_nivcsw;

		e->voluntary_context_switches = sev_u64__recorded(v, EV_SRC_SYSTEM_CALL);
		e->involuntary_context_switches = sev_u64__recorded(iv, EV_SRC_SYSTEM_CALL);
		e->total_context_switches = sev_u64__recorded(v + iv, EV_SRC_SYSTEM_CALL);
	}
	hw->topology.logical_cpus = s->topo.logical_cpus;
	hw->topology.physical_cores = s->topo.physical_cores;
	hw->topology.packages = s->topo.packages;
	hw->topology.numa_nodes = s->topo.numa_nodes;
	host_affinity__count(s->pid, &hw->topology.affinity_cpus);
	cgroup__cpu_quota(s->root, s->pid, &hw->topology.cpu_quota_milli, NULL, 0);
	hw->span_aggregation_reason =
		s->spans.nr_sites ? EV_GAP_UNAVAILABLE : EV_GAP_COLLECTOR_DISABLED;

	uo.first = &s->census[0];
	uo.last = &s->census[1];
	uo.samples_retained = 2;
	uo.wall_ns = wall;
	uo.logical_cpus = s->topo.logical_cpus;
	uo.frequency_samples = s->freq;
	uo.nr_frequency_samples = s->nr_freq;
	uo.dropped_frequency_samples = s->freq_dropped;
	uo.frequency_availability =
		s->freq_any ? (struct ev_source_ev){ .recorded = true, .value = EV_SRC_SYSFS_CPU } :
			      (struct ev_source_ev){ .reason = s->freq_gap };
	err = utilization__compute(&hw->utilization, &uo);
	if (err)
		return err;
	hw->utilization.dropped_threads =
		s->census[0].dropped_threads + s->census[1].dropped_threads;
	if (!s->use_bpf && fb_cpu_known) {
		/* The process CPU clock: every thread's, seen or not. */
		hw->utilization.all_threads_cpu_ns = ev_u64__recorded(fb_cpu);
		hw->utilization.all_threads_parallelism_milli = milli_ratio_ev(fb_cpu, wall);
	} else if (s->use_bpf && totals_known) {
		hw->utilization.all_threads_cpu_ns =
			ev_u64__recorded(s->win.total.sum_exec_runtime);
		hw->utilization.all_threads_parallelism_milli =
			milli_ratio_ev(s->win.total.sum_exec_runtime, wall);
	}
	doc->hardware_recorded = true;
	doc->hardware = hw;

	if (s->spans.nr_sites) {
		enum ev_gap hw_gap =
			s->opts.span_counters == SCHED_COUNTERS_NONE ? EV_GAP_COLLECTOR_DISABLED :
			s->stats.counters_refused		     ? EV_GAP_UNSUPPORTED :
						    perfcount__errno_gap(s->stats.counters_err);

		struct span_counters_info *sc = &doc->span_counters;

		sc->requested = s->opts.span_counters == SCHED_COUNTERS_HW ? "hw" :
				s->opts.span_counters == SCHED_COUNTERS_SW_CPU_CLOCK ?
									     "sw-cpu-clock" :
									     "none";
		sc->cpus = s->stats.counter_cpus;
		if (s->stats.nr_counters) {
			bool sw = s->opts.span_counters == SCHED_COUNTERS_SW_CPU_CLOCK;

			sc->cycles_event = sw ? "sw-cpu-clock" : "hw-cpu-cycles";
			sc->instructions_event = sw ? "sw-cpu-clock" : "hw-instructions";
		} else if (s->stats.counters_refused) {
			snprintf(
				sc->detail, sizeof(sc->detail),
				"BPF verifier refused the span programs with counter readings (too complex for it; not tried without atomic fetch)");
		} else if (s->opts.span_counters != SCHED_COUNTERS_NONE && s->use_bpf) {
			snprintf(sc->detail, sizeof(sc->detail),
				 "per-CPU perf_event_open failed: %s",
				 strerror(-s->stats.counters_err));
		}
		err = span_run__document(&s->spans, s->start_mono, s->stats.nr_counters > 0, hw_gap,
					 doc, &hw->span_aggregation);
		if (err)
			return err;
		hw->span_aggregation_recorded = s->spans.nr_attached > 0;
		doc->events.availability_recorded = s->spans.nr_attached > 0;
		doc->events.availability = true;
		/* The span-probes collector's reason (e.g. BPF denied) says why. */
		doc->events.availability_reason =
			collector_availability__gap(s->caps[4].availability);
		doc->events.dropped_span_events = s->stats.span_ringbuf_drops;
		doc->events.sampled_out_events =
			s->stats.span_sampled_out + s->spans.events_over_cap;
	} else {
		doc->events.availability_reason = EV_GAP_COLLECTOR_DISABLED;
	}

	/* loss: every counter, whether or not it is zero. */
#define LOSS(n, v) s->loss[s->nr_loss++] = (struct named_u64){ n, ev_u64__recorded(v) }
	LOSS("threads_dropped", s->win.dropped_threads);
	LOSS("threads_without_baseline", s->win.threads_without_baseline);
	LOSS("threads_vanished", s->win.vanished_threads);
	LOSS("threads_renumbered_by_exec", s->stats.exec_renumbered);
	LOSS("exited_records_overflow", s->stats.exited_overflow);
	LOSS("exited_records_max", s->stats.max_exited);
	LOSS("exited_records_overflow_listed", s->win.overflowed_listed);
	LOSS("task_storage_failures", s->stats.storage_failures);
	LOSS("final_switch_unmatched", s->stats.final_unmatched);
	LOSS("iterator_write_errors", s->stats.iter_write_errors);
	LOSS("exit_records_not_final", s->stats.exit_not_final);
	LOSS("proc_read_errors", s->proc_read_errors);
	LOSS("migrations_unseen", doc->sched_detail.migrations_unseen);
	/* Threads that ran and were never read (only without BPF): their CPU, not their number. */
	s->loss[s->nr_loss++] =
		(struct named_u64){ "threads_unseen_cpu_ns",
				    fb_cpu_known ? ev_u64__recorded(unseen_cpu) :
						   ev_u64__gap(EV_GAP_UNAVAILABLE) };
	LOSS("census_threads_dropped", hw->utilization.dropped_threads);
	LOSS("frequency_samples_dropped", s->freq_dropped);
	LOSS("span_records_dropped_ringbuf", s->stats.span_ringbuf_drops);
	LOSS("span_records_sampled_out", s->stats.span_sampled_out + s->spans.events_over_cap);
	LOSS("span_depth_overflow", s->stats.span_depth_overflow);
	LOSS("span_frames_unwound", s->stats.span_unwound);
	LOSS("span_returns_unmatched", s->stats.span_unmatched);
	LOSS("span_aggregates_overflow", s->stats.span_agg_overflow);
	LOSS("span_state_failures", s->stats.span_state_failures);
	LOSS("span_site_unresolved", s->stats.span_site_unresolved);
	LOSS("span_records_malformed", s->stats.span_events_malformed);
	LOSS("span_clock_missed_switch_ins", s->stats.span_clock_gaps);
	LOSS("span_counter_reads_skewed", s->stats.span_counter_skews);
	LOSS("span_open_at_exit_dropped",
	     s->stats.span_open_at_exit_drops + s->spans.exit_open_lost);
	/* A run the kernel skipped (the program was busy on that CPU) may miss an event. */
	for (i = 0; i < s->stats.nr_progs; i++) {
		snprintf(s->loss_names[i], sizeof(s->loss_names[0]), "%s_recursion_misses",
			 s->stats.progs[i].name);
		s->loss[s->nr_loss++] = (struct named_u64){
			s->loss_names[i],
			s->stats.progs[i].recursion_known ?
				ev_u64__recorded(s->stats.progs[i].recursion_misses) :
				ev_u64__gap(EV_GAP_UNSUPPORTED)
		};
	}
#undef LOSS
	doc->loss = s->loss;
	doc->nr_loss = s->nr_loss;

	for (i = 0; i < s->stats.nr_progs; i++) {
		const struct sched_prog_stats *p = &s->stats.progs[i];
		/* Run-time stats are opt-in (--bpf-stats): they cost every BPF program on the host. */
		enum ev_gap g = s->opts.bpf_stats ? EV_GAP_UNAVAILABLE : EV_GAP_COLLECTOR_DISABLED;

		snprintf(s->overhead_names[2 * i], sizeof(s->overhead_names[0]), "%s_run_cnt",
			 p->name);
		snprintf(s->overhead_names[2 * i + 1], sizeof(s->overhead_names[0]),
			 "%s_run_time_ns", p->name);
		s->overhead[s->nr_overhead++] = (struct named_u64){
			s->overhead_names[2 * i],
			s->stats.run_stats_enabled ? ev_u64__recorded(p->run_cnt) : ev_u64__gap(g)
		};
		s->overhead[s->nr_overhead++] =
			(struct named_u64){ s->overhead_names[2 * i + 1],
					    s->stats.run_stats_enabled ?
						    ev_u64__recorded(p->run_time_ns) :
						    ev_u64__gap(g) };
	}
	getrusage(RUSAGE_SELF, &s->usage);
	s->overhead[s->nr_overhead++] = (struct named_u64){
		"loader_cpu_ns",
		ev_u64__recorded((uint64_t)(s->usage.ru_utime.tv_sec + s->usage.ru_stime.tv_sec) *
					 NS_PER_SEC +
				 (uint64_t)(s->usage.ru_utime.tv_usec + s->usage.ru_stime.tv_usec) *
					 1000)
	};
	s->overhead[s->nr_overhead++] =
		(struct named_u64){ "loader_max_rss_kib",
				    ev_u64__recorded((uint64_t)s->usage.ru_maxrss) };
	doc->overhead = s->overhead;
	doc->nr_overhead = s->nr_overhead;
	return 0;
}

/*
 * A process's comm is its leader thread's: take the last one the kernel had,
 * which /proc no longer shows once the target is reaped.
 */
static void target_comm_from_window(struct session *s)
{
	size_t i;

	for (i = 0; i < s->win.nr_threads; i++) {
		const struct window_thread *w = &s->win.threads[i];

		if (w->tid == (uint32_t)s->pid && !w->vanished && w->comm[0]) {
			snprintf(s->target.comm, sizeof(s->target.comm), "%.16s", w->comm);
			return;
		}
	}
}

static int finish_window(struct session *s)
{
	struct window_opts wo = { 0 };
	uint64_t elapsed;
	int err;

	/* run: the command has exited; keep it a zombie until its threads are read. */
	fill_target(s, &s->target);
	if (s->use_bpf) {
		err = take_snapshot(s, &s->end);
	} else {
		bool still = false;

		err = proc_snapshot_witnessed(s, &s->end, &s->fb.cpu_end, &still);
		s->fb.clock_ok = s->fb.clock_ok && still;
		if (s->opts.mode == TARGET_MODE_RUN && s->end_reason == END_REASON_TARGET_EXIT)
			s->fb.child_faults_known =
				!proc_stat_child_faults(s->root, s->pid, &s->fb.child_faults);
	}
	/* Without BPF, a target gone (and reaped) by now simply has no live threads. */
	if (err == -ESRCH && !s->use_bpf)
		err = 0;
	if (err)
		return err;
	s->end_mono = clock_ns(CLOCK_MONOTONIC);
	if (s->use_bpf) {
		err = span_run__finish(&s->spans, s->coll);
		err = err ?: sched_collector__exited(s->coll, &s->exited);
		if (err)
			return err;
		sched_collector__detach(s->coll);
		err = sched_collector__stats(s->coll, &s->stats);
		/*
		 * Everything the window needs is read (its end was taken above):
		 * the span probes come down in the background while the
		 * document is made and written, and while a command that
		 * outlives the window runs on; session__destroy waits for them.
		 */
		sched_collector__detach_spans(s->coll);
		if (err)
			return err;
	} else {
		s->stats.sched_info = true;
	}
	sample_frequency(s);
	read_counters(s);
	elapsed = s->end_mono - s->start_mono;
	err = census_from(&s->census[1], &s->end, s->use_bpf ? &s->exited : NULL, elapsed);
	if (err)
		return err;
	wo.baseline = s->opts.mode == TARGET_MODE_RUN ? NULL : &s->base;
	wo.end = &s->end;
	wo.exited = &s->exited;
	/* Without BPF there is no start_time: anything new at the end was born. */
	wo.start_boot_ns = s->use_bpf ? s->start_boot : 0;
	wo.max_threads = s->opts.max_threads;
	err = sched_window__compute(&s->win, &wo);
	if (!err)
		target_comm_from_window(s);
	return err;
}

static int setup_signals(struct session *s, char *errbuf, size_t errlen)
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

int session__run(struct session **out, const struct session_opts *opts, char *errbuf, size_t errlen)
{
	int go_fd = -1, err_fd = -1, err;
	struct session *s;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return session__errf(errbuf, errlen, -ENOMEM, "out of memory");
	s->opts = *opts;
	s->root = opts->root ? opts->root : "/";
	s->pidfd = s->sigfd = s->timerfd = -1;
	s->freq_gap = EV_GAP_UNAVAILABLE;
	if (!s->opts.max_threads)
		s->opts.max_threads = SESSION_DEFAULT_MAX_THREADS;

	err = setup_signals(s, errbuf, errlen);
	if (err)
		goto cleanup;
	host_topology__read(&s->topo, s->root);

	if (opts->mode == TARGET_MODE_RUN) {
		err = fork_held_child(s, &go_fd, &err_fd, errbuf, errlen);
	} else {
		s->pid = opts->pid;
		err = check_attach_target(s, errbuf, errlen);
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

	setup_collector(s);

	/* The window starts here: baseline snapshot (attach) or exec (run). */
	s->start_boot = clock_ns(CLOCK_BOOTTIME);
	s->start_mono = clock_ns(CLOCK_MONOTONIC);
	s->start_real = clock_ns(CLOCK_REALTIME);
	if (opts->mode == TARGET_MODE_ATTACH) {
		err = start_collecting(s);
		if (err) {
			err = session__errf(errbuf, errlen, err,
					    "--pid %d: cannot read its threads: %s", (int)s->pid,
					    strerror(-err));
			goto cleanup;
		}
		err = census_from(&s->census[0], &s->base, NULL, 0);
		open_counters(s, &s->base);
	} else {
		/* The command's whole life: its one thread starts from zero. */
		struct thread_table one = { 0 };
		struct khbpf_thread_rec r = { .tid = (uint32_t)s->pid };

		one.recs = &r;
		one.nr = 1;
		err = start_collecting(s);
		err = err ?: census_from(&s->census[0], &one, NULL, 0);
		open_counters(s, NULL);
		err = err ?: start_child(s, go_fd, err_fd);
		go_fd = err_fd = -1;
		if (err == -ENOEXEC) {
			if (s->exec_phase == CHILD_FAILED_USER)
				session__errf(
					errbuf, errlen, err,
					"cannot run '%s' as SUDO_UID=%s SUDO_GID=%s: %s; fix them or pass --as-root",
					opts->argv[0], getenv("SUDO_UID"), getenv("SUDO_GID"),
					strerror(s->exec_errno));
			else
				session__errf(errbuf, errlen, err, "cannot execute '%s': %s",
					      opts->argv[0], strerror(s->exec_errno));
			waitpid(s->pid, &s->wait_status, 0);
			s->child_reaped = true;
			*out = s;
			return err;
		}
	}
	if (err)
		goto cleanup;
	fill_target(s, &s->target);
	sample_frequency(s);
	err = session__drop_privileges(s, errbuf, errlen);
	if (err)
		goto cleanup;
	logf_(s, "khbpf: watching pid %d (%s)%s\n", (int)s->pid,
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
	err = finish_window(s);
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
	err = build_document(s);
	if (err) {
		err = session__errf(errbuf, errlen, err, "building the document: %s",
				    strerror(-err));
		goto cleanup;
	}
	*out = s;
	return 0;

cleanup:
	if (go_fd >= 0)
		close(go_fd); /* the held child sees EOF and exits without running CMD */
	if (err_fd >= 0)
		close(err_fd);
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

	if (s->opts.mode != TARGET_MODE_RUN || s->child_reaped || s->exec_failed)
		return 0;
	logf_(s, "khbpf: window ended; waiting for pid %d to exit (signals are passed to it)\n",
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
	return evidence_doc__to_json_lazy(&s->doc);
}

int session__exit_code(const struct session *s)
{
	if (s->opts.mode != TARGET_MODE_RUN)
		return 0;
	if (s->exec_failed)
		return s->exec_phase == CHILD_FAILED_EXEC && s->exec_errno == ENOENT ? 127 : 126;
	if (!s->child_reaped)
		return 0;
	if (WIFSIGNALED(s->wait_status))
		return 128 + WTERMSIG(s->wait_status);
	return WEXITSTATUS(s->wait_status);
}

static void serve_target(struct session *s)
{
	struct doc_target *t = &s->target;

	memset(t, 0, sizeof(*t));
	t->mode = TARGET_MODE_SERVE;
	t->exe_reason = EV_GAP_UNSUPPORTED;
	if (s->opts.nr_pids == 1) {
		fill_target(s, t);
		return;
	}
	/* pid 0: several processes, cgroups, or every task of the host. */
	snprintf(t->comm, sizeof(t->comm), "%s",
		 s->opts.nr_pids    ? "(processes)" :
		 s->opts.nr_cgroups ? "(cgroups)" :
				      "(all tasks)");
}

int session__serve_open(struct session **out, const struct session_opts *opts, char *errbuf,
			size_t errlen)
{
	struct session *s;
	int err;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return session__errf(errbuf, errlen, -ENOMEM, "out of memory");
	s->opts = *opts;
	s->opts.mode = TARGET_MODE_SERVE;
	s->root = opts->root ? opts->root : "/";
	s->pidfd = s->sigfd = s->timerfd = -1;
	s->freq_gap = EV_GAP_UNAVAILABLE;
	if (!s->opts.max_threads)
		s->opts.max_threads = SESSION_DEFAULT_MAX_THREADS;
	/* Affinity and cgroup quota of the one process, else of init: the host's. */
	s->pid = opts->nr_pids == 1 ? opts->pids[0] : 1;
	err = setup_signals(s, errbuf, errlen);
	if (err)
		goto cleanup;
	host_topology__read(&s->topo, s->root);
	setup_collector(s);
	if (!s->use_bpf) {
		err = session__errf(errbuf, errlen, -ENOTSUP, "serve needs BPF: %s", s->bpf_detail);
		goto cleanup;
	}
	s->start_boot = clock_ns(CLOCK_BOOTTIME);
	s->start_mono = clock_ns(CLOCK_MONOTONIC);
	s->start_real = clock_ns(CLOCK_REALTIME);
	err = start_collecting(s);
	if (!err && !s->use_bpf)
		err = -ENOTSUP;
	if (err) {
		err = session__errf(errbuf, errlen, err, "cannot start the collector: %s",
				    strerror(-err));
		goto cleanup;
	}
	err = census_from(&s->census[0], &s->base, NULL, 0);
	if (err) {
		err = session__errf(errbuf, errlen, err, "out of memory");
		goto cleanup;
	}
	serve_target(s);
	/* Counting events follow tasks, and serve watches the whole host. */
	s->counters_avail = AVAIL_DISABLED;
	snprintf(s->counters_detail, sizeof(s->counters_detail),
		 "serve does not read hardware counters; use attach or run on a process");
	counter_set__all_gapped(&s->counters, EV_SRC_PERF_EVENT_OPEN, EV_GAP_COLLECTOR_DISABLED);
	sample_frequency(s);
	*out = s;
	return 0;
cleanup:
	session__destroy(s);
	return err;
}

/* What one window's document owns, freed once it is out. */
static void serve_window_free(struct session *s)
{
	utilization__free(&s->hw.utilization);
	memset(&s->hw, 0, sizeof(s->hw));
	free(s->threads);
	s->threads = NULL;
	s->nr_threads = 0;
	sched_window__free(&s->win);
	memset(&s->win, 0, sizeof(s->win));
	thread_table__free(&s->exited);
	s->nr_loss = 0;
	s->nr_overhead = 0;
	s->nr_freq = 0;
	s->freq_dropped = 0;
}

/*
 * The window's document as one line (with its newline), written while the
 * window's threads and records still exist: its per-thread and per-span
 * arrays are made from them as the text is (evidence_doc__to_json_lazy), so
 * the tree kept for the gap metrics leaves them out.
 */
static int serve_document(struct session *s, struct json_object **doc, char **text, size_t *len)
{
	struct json_object *obj = evidence_doc__to_json_lazy(&s->doc), *events;
	const char *t = obj ? json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN) : NULL;
	size_t n;

	if (!t) {
		json_object_put(obj);
		return -ENOMEM;
	}
	n = strlen(t);
	*text = malloc(n + 2);
	if (!*text) {
		json_object_put(obj);
		return -ENOMEM;
	}
	memcpy(*text, t, n);
	(*text)[n] = '\n';
	(*text)[n + 1] = '\0';
	*len = n + 1;
	json_object_object_del(obj, "threads");
	if (json_object_object_get_ex(obj, "events", &events))
		json_object_object_del(events, "spans");
	*doc = obj;
	return 0;
}

int session__serve_rotate(struct session *s, struct json_object **doc, char **text, size_t *len)
{
	struct window_opts wo = { 0 };
	uint64_t now_boot, now_real;
	int err;

	*doc = NULL;
	*text = NULL;
	*len = 0;
	err = sched_collector__snapshot(s->coll, &s->end);
	if (err) {
		/* No end readings: the window goes on from the same baseline. */
		thread_table__free(&s->end);
		return err;
	}
	now_boot = clock_ns(CLOCK_BOOTTIME);
	now_real = clock_ns(CLOCK_REALTIME);
	s->end_mono = clock_ns(CLOCK_MONOTONIC);
	s->end_reason = END_REASON_DURATION;
	err = err ?: sched_collector__drain_exited(s->coll, &s->exited);
	err = err ?: sched_collector__stats(s->coll, &s->stats);
	if (err)
		goto out;
	sample_frequency(s);
	err = census_from(&s->census[1], &s->end, &s->exited, s->end_mono - s->start_mono);
	if (err)
		goto out;
	wo.baseline = &s->base;
	wo.end = &s->end;
	wo.exited = &s->exited;
	wo.start_boot_ns = s->start_boot;
	wo.max_threads = s->opts.max_threads;
	err = sched_window__compute(&s->win, &wo);
	err = err ?: build_document(s);
	err = err ?: serve_document(s, doc, text, len);
out:
	/* The next window starts where this one ended, whatever happened. */
	serve_window_free(s);
	thread_table__free(&s->base);
	s->base = s->end;
	memset(&s->end, 0, sizeof(s->end));
	free(s->census[0].threads);
	s->census[0] = s->census[1];
	s->census[0].elapsed_ns = 0;
	memset(&s->census[1], 0, sizeof(s->census[1]));
	s->start_boot = now_boot;
	s->start_mono = s->end_mono;
	s->start_real = now_real;
	sample_frequency(s);
	return err;
}

struct sched_collector *session__collector(const struct session *s)
{
	return s->coll;
}

int session__signal_fd(const struct session *s)
{
	return s->sigfd;
}

/*
 * Privileges. Once the programs are attached and the counters open, what is
 * left is done through fds (maps, links, iterators, perf events, the
 * listening socket) and reads of files any user may read (/proc/PID/{comm,
 * stat,task/}, sysfs, cgroupfs), so the loader drops every capability,
 * including from the bounding set, and sets no_new_privs. Under sudo its
 * file-system ids become the invoking user's: output files are theirs and
 * go only where they may write.
 */
static int writer_identity(void)
{
	uid_t uid;
	gid_t gid;
	int err;

	/* Malformed SUDO_*: no invoking user (run refuses them for CMD itself). */
	if (invoking_user(&uid, &gid) != 1)
		return 0;
	if ((uid_t)setfsuid((uid_t)-1) == uid && (gid_t)setfsgid((gid_t)-1) == gid)
		return 0;
	err = user_groups(uid, gid);
	if (err)
		return err;
	setfsgid(gid);
	setfsuid(uid);
	/* They return the previous id, not errors: read them back. */
	if ((gid_t)setfsgid((gid_t)-1) != gid || (uid_t)setfsuid((uid_t)-1) != uid)
		return -EPERM;
	return 0;
}

int session__writer_begin(struct session_writer *w)
{
	cap_t noeff;
	int n, err;

	memset(w, 0, sizeof(*w));
	w->fsuid = (uid_t)setfsuid((uid_t)-1);
	w->fsgid = (gid_t)setfsgid((gid_t)-1);
	w->caps = cap_get_proc();
	if (!w->caps)
		return -errno;
	/* The groups too: a held child forked later (run --as-root) gets the loader's. */
	n = getgroups(0, NULL);
	w->groups = n > 0 ? calloc((size_t)n, sizeof(gid_t)) : NULL;
	if (n < 0 || (n > 0 && !w->groups))
		return n < 0 ? -errno : -ENOMEM;
	w->nr_groups = n > 0 ? getgroups(n, w->groups) : 0;
	if (w->nr_groups < 0)
		return -errno;
	w->have_groups = true;
	err = writer_identity();
	if (err)
		return err;
	noeff = cap_dup(w->caps);
	if (!noeff)
		return -errno;
	if (cap_clear_flag(noeff, CAP_EFFECTIVE) || cap_set_proc(noeff))
		err = -errno;
	cap_free(noeff);
	return err;
}

void session__writer_end(struct session_writer *w)
{
	setfsuid(w->fsuid);
	setfsgid(w->fsgid);
	if (w->caps) {
		cap_set_proc(w->caps);
		cap_free(w->caps);
		w->caps = NULL;
	}
	if (w->have_groups)
		setgroups((size_t)w->nr_groups, w->groups);
	free(w->groups);
	w->groups = NULL;
	w->have_groups = false;
}

/* Credentials are per thread: a second thread would keep what this one drops. */
static int single_threaded(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n == 1 ? 0 : -EBUSY;
}

static int drop_privileges(const cap_value_t *want, int nr_want)
{
	cap_flag_value_t have, setpcap = CAP_CLEAR;
	cap_value_t keep[8], c;
	int i, nr_keep = 0, err;
	cap_t caps;

	err = single_threaded();
	err = err ?: writer_identity();
	if (err)
		return err;
	caps = cap_get_proc();
	if (!caps)
		return -errno;
	for (i = 0; i < nr_want && nr_keep < 8; i++) {
		if (!cap_get_flag(caps, want[i], CAP_PERMITTED, &have) && have == CAP_SET)
			keep[nr_keep++] = want[i];
	}
	cap_get_flag(caps, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap);
	for (c = 0; setpcap == CAP_SET && c < (cap_value_t)cap_max_bits(); c++) {
		for (i = 0; i < nr_keep && keep[i] != c; i++)
			;
		if (i == nr_keep && cap_drop_bound(c)) {
			err = -errno;
			goto out;
		}
	}
	if (cap_reset_ambient() && errno != EINVAL) {
		err = -errno;
		goto out;
	}
	if (cap_clear(caps) ||
	    (nr_keep && (cap_set_flag(caps, CAP_PERMITTED, nr_keep, keep, CAP_SET) ||
			 cap_set_flag(caps, CAP_EFFECTIVE, nr_keep, keep, CAP_SET))) ||
	    cap_set_proc(caps) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		err = -errno;
out:
	cap_free(caps);
	return err;
}

int session__drop_privileges(struct session *s, char *errbuf, size_t errlen)
{
	cap_value_t keep[2];
	uid_t uid;
	gid_t gid;
	int nr = 0, err;

	/* run: CMD runs as the invoking user, and signals are passed on to it. */
	if (s->opts.mode == TARGET_MODE_RUN && !s->opts.as_root && invoking_user(&uid, &gid) == 1)
		keep[nr++] = CAP_KILL;
	/* A kernel that checks every bpf() command: the held maps need CAP_BPF to be read. */
	if (s->use_bpf && s->coll && sched_collector__bpf_needs_cap(s->coll))
		keep[nr++] = CAP_BPF;
	err = drop_privileges(keep, nr);
	if (err)
		return session__errf(errbuf, errlen, err,
				     "cannot drop privileges after attaching: %s", strerror(-err));
	return 0;
}

void session__destroy(struct session *s)
{
	if (!s)
		return;
	utilization__free(&s->hw.utilization);
	free(s->threads);
	sched_window__free(&s->win);
	free(s->census[0].threads);
	free(s->census[1].threads);
	thread_table__free(&s->base);
	thread_table__free(&s->end);
	thread_table__free(&s->exited);
	sched_collector__destroy(s->coll);
	perfcount__destroy(s->perf);
	host_topology__free(&s->topo);
	span_run__free(&s->spans);
	span_hw_aggregation__free(&s->hw.span_aggregation);
	if (s->timerfd >= 0)
		close(s->timerfd);
	if (s->pidfd >= 0)
		close(s->pidfd);
	if (s->sigfd >= 0)
		close(s->sigfd);
	free(s);
}

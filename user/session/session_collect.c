// SPDX-License-Identifier: MIT
/*
 * Collection for a session: the collector (BPF, else /proc), span sites,
 * hardware counters, frequency samples, and the window's two ends.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fsutil.h"
#include "host/probe.h"
#include "collect/proctarget.h"
#include "session/session_collect.h"
#include "session/session_state.h"
#include "session/session_titles.h"

void session__sample_frequency(struct session *s)
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

void session__sample_pressure(struct session *s, bool at_end)
{
	if (!at_end) {
		pressure_window__host(&s->psi_host, s->root);
		pressure_window__cgroup(&s->psi_cgroup, s->root, s->pid);
		thermal_window__init(&s->thermal);
	}
	pressure_window__read(&s->psi_host, at_end);
	pressure_window__read(&s->psi_cgroup, at_end);
	thermal_window__read(&s->thermal, s->root, at_end);
}

void session__pressure_advance(struct session *s)
{
	s->psi_host.start = s->psi_host.end;
	s->psi_cgroup.start = s->psi_cgroup.end;
	s->thermal.start = s->thermal.end;
	/* A detail is about the window it was found in, unless it says why a scope is unknown. */
	if (s->psi_host.usable)
		s->psi_host.detail[0] = '\0';
	if (s->psi_cgroup.usable)
		s->psi_cgroup.detail[0] = '\0';
	s->thermal.detail[0] = '\0';
}

/*
 * The set's processes as /proc shows them now (no BPF): the roots, with
 * --children (or run's tree) their descendants, or the cgroups' processes.
 * A set that grows can have had processes that came and went unseen.
 */
static int proc_set_pids(struct session *s, pid_t **out, size_t *nr)
{
	char dir[PATH_MAX + 256];
	pid_t *more = NULL, *grown;
	size_t n_more, i, j;
	const pid_t *roots = s->opts.mode == TARGET_MODE_RUN ? &s->pid : s->opts.pids;
	size_t nr_roots = s->opts.mode == TARGET_MODE_RUN ? 1 : s->opts.nr_pids;

	*out = NULL;
	*nr = 0;
	if (s->set_mode == KHBPF_SET_TREE)
		return proctarget__descendants(s->root, roots, nr_roots, s->opts.max_threads, out,
					       nr);
	if (s->set_mode != KHBPF_SET_CGROUP) {
		*out = malloc((nr_roots ? nr_roots : 1) * sizeof(**out));
		if (!*out)
			return -ENOMEM;
		memcpy(*out, roots, nr_roots * sizeof(**out));
		*nr = nr_roots;
		return 0;
	}
	for (i = 0; i < s->opts.nr_cgroup_paths; i++) {
		snprintf(dir, sizeof(dir), "%s%s", s->cg_mount, s->opts.cgroup_paths[i]);
		if (proctarget__cgroup_pids(dir, s->opts.max_threads, &more, &n_more, 0))
			continue;
		grown = realloc(*out, (*nr + n_more + 1) * sizeof(*grown));
		if (!grown) {
			free(more);
			return -ENOMEM;
		}
		*out = grown;
		for (j = 0; j < n_more; j++)
			grown[(*nr)++] = more[j];
		free(more);
		more = NULL;
	}
	return 0;
}

/* procfs fallback: the kernel's counters of the set's threads as one table. */
static int proc_snapshot(struct session *s, struct thread_table *out)
{
	struct thread_table t = { 0 };
	size_t nr, i, j, cap = 0;
	pid_t *pids;
	int err = proc_set_pids(s, &pids, &nr);

	memset(out, 0, sizeof(*out));
	for (i = 0; !err && i < nr; i++) {
		err = proctarget__snapshot(s->root, pids[i], s->opts.max_threads, &t,
					   &s->proc_read_errors);
		/* Gone between the listing and its reading: not there now. */
		if (err == -ESRCH && (nr > 1 || s->set_mode != KHBPF_SET_PIDS)) {
			err = 0;
			continue;
		}
		for (j = 0; !err && j < t.nr; j++)
			err = thread_table__push(out, &cap, &t.recs[j]);
		thread_table__free(&t);
	}
	free(pids);
	if (err)
		thread_table__free(out);
	else
		thread_table__sort(out);
	return err;
}

static int take_snapshot(struct session *s, struct thread_table *out)
{
	return s->use_bpf ? sched_collector__snapshot(s->coll, out) : proc_snapshot(s, out);
}

/* The CPU clocks of the set's given processes, summed; -errno when one cannot be read. */
static int proc_set_cpu(struct session *s, uint64_t *sum)
{
	const pid_t *roots = s->opts.mode == TARGET_MODE_RUN ? &s->pid : s->opts.pids;
	size_t n = s->opts.mode == TARGET_MODE_RUN ? 1 : s->opts.nr_pids, i;
	uint64_t ns;
	int err;

	*sum = 0;
	for (i = 0; i < n; i++) {
		err = proctarget__cpu_ns(roots[i], &ns);
		if (err)
			return err;
		*sum += ns;
	}
	return 0;
}

/*
 * proc_snapshot between two reads of the processes' CPU clocks: *still is
 * true when they did not move, so the threads read are all that ran until
 * then. Only a set of fixed processes can be witnessed so: one that grows
 * (children, cgroups) may have had processes come and go between two reads.
 */
static int proc_snapshot_witnessed(struct session *s, struct thread_table *out, uint64_t *cpu,
				   bool *still)
{
	uint64_t before = 0;
	int err, cerr = proc_set_cpu(s, &before);

	err = proc_snapshot(s, out);
	if (err)
		return err;
	*still = s->set_mode == KHBPF_SET_PIDS && !cerr && !proc_set_cpu(s, cpu) && *cpu == before;
	return 0;
}

int session__census(struct thread_census *c, const struct thread_table *t,
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

		/* A thread with an exit record, or a zombie, is not alive at the end. */
		if ((r->flags & KHBPF_REC_ZOMBIE) ||
		    (exited && thread_table__find(exited, r->tid, r->start_time)))
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
	session__logf(s, "khbpf: BPF unavailable (%s); falling back to /proc/%d/task/*/sched\n",
		      s->bpf_detail, (int)s->pid);
}

/* Processes of a set looked at for span sites at its start (the rest share their objects). */
#define SPAN_SET_PIDS_MAX 4096

int session__discover_spans(struct session *s, char *errbuf, size_t errlen)
{
	struct span_run_opts so = {
		.sz = sizeof(so),
		.root = s->root,
		.pid = s->pid,
		.reqs = s->opts.span_reqs,
		.nr_reqs = s->opts.nr_span_reqs,
		.no_annotations = s->opts.no_annotations,
		.debug_dirs = s->opts.debug_dirs,
		.nr_debug_dirs = s->opts.nr_debug_dirs,
		.max_records = s->opts.max_spans,
		.key_reqs = s->opts.key_reqs,
		.nr_key_reqs = s->opts.nr_key_reqs,
		.max_keys = s->opts.max_keys,
		.cause_reqs = s->opts.cause_reqs,
		.nr_cause_reqs = s->opts.nr_cause_reqs,
	};
	char exe[PATH_MAX], dir[PATH_MAX + 256];
	pid_t *pids = NULL, *more = NULL;
	size_t nr = 0, n_more, i, j;
	bool empty_set = false;
	int err;

	if (!s->opts.nr_span_reqs && (s->opts.mode == TARGET_MODE_SERVE || s->opts.no_bpf))
		return 0;
	if (s->opts.mode == TARGET_MODE_SERVE) {
		/* Every process of the host: the requests name their files. */
	} else if (s->opts.mode == TARGET_MODE_RUN) {
		/* Not found: the exec fails with its own error (127). */
		if (!runner__resolve_exe(s->opts.argv[0], exe, sizeof(exe)))
			return 0;
		so.exe = exe;
	} else if (s->set_mode == KHBPF_SET_TREE) {
		/* Every process of the set now: their objects, each looked at once. */
		proctarget__descendants(s->root, s->opts.pids, s->opts.nr_pids, SPAN_SET_PIDS_MAX,
					&pids, &nr);
	} else if (s->set_mode == KHBPF_SET_CGROUP) {
		for (i = 0; i < s->opts.nr_cgroup_paths; i++) {
			snprintf(dir, sizeof(dir), "%s%s", s->cg_mount, s->opts.cgroup_paths[i]);
			if (proctarget__cgroup_pids(dir, SPAN_SET_PIDS_MAX, &more, &n_more, 0))
				continue;
			for (j = 0; j < n_more; j++) {
				pid_t *grown = realloc(pids, (nr + 1) * sizeof(*grown));

				if (!grown)
					break;
				pids = grown;
				pids[nr++] = more[j];
			}
			free(more);
			more = NULL;
		}
		/* No process yet: s->pid is init, and what the set will run is unknown. */
		empty_set = !nr;
	} else if (s->opts.nr_pids > 1) {
		so.pids = s->opts.pids;
		so.nr_pids = s->opts.nr_pids;
	}
	if (pids && nr) {
		so.pids = pids;
		so.nr_pids = nr;
		so.pid = pids[0];
	}
	if (s->opts.mode == TARGET_MODE_SERVE) {
		so.host = true;
		so.reason = s->span_reason;
		so.reason_size = sizeof(s->span_reason);
	}
	err = span_run__discover(&s->spans, &so);
	free(pids);
	s->spans_discovered = !err;
	/*
	 * serve: an OBJ that names no file (no such path, a relative one, no
	 * such library). One that is there but no regular file fails to probe.
	 */
	if (err == -ENOENT && so.host && s->span_reason[0]) {
		snprintf(errbuf, errlen, "%s", s->span_reason);
		return SESSION_ERR_USAGE;
	}
	if (err)
		session__logf(s, "khbpf: span discovery failed: %s\n", strerror(-err));
	else if (!empty_set && span_run__check(&s->spans, &so, errbuf, errlen))
		return SESSION_ERR_USAGE;
	/* --no-bpf: the requests are checked all the same, and nothing is attached. */
	if (s->opts.no_bpf) {
		span_run__free(&s->spans);
		s->spans_discovered = false;
	}
	return 0;
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

void session__setup_collector(struct session *s)
{
	bool grows;
	struct sched_collector_opts co = {
		.sz = sizeof(co),
		.max_exited = s->opts.max_exited,
		.max_tasks = s->opts.max_threads,
		.topo = &s->topo,
		.run_stats = s->opts.bpf_stats,
		.blocked = s->opts.blocked,
		.wakers = s->opts.wakers,
	};
	int err;

	s->have_btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	/*
	 * A set that grows, with --span requests: spans are on even when no
	 * site is found at the start, for the binaries its processes exec.
	 */
	grows = s->set_mode == KHBPF_SET_TREE || s->set_mode == KHBPF_SET_CGROUP ||
		s->opts.nr_pids > 1;
	if (span_run__usable(&s->spans) || (grows && s->spans_discovered && s->opts.nr_span_reqs)) {
		co.spans = true;
		co.max_spans = s->opts.max_spans;
		co.span_buffer = s->opts.span_buffer;
		co.counters = s->opts.span_counters;
		co.span_links = s->opts.span_links;
		co.span_sites = span_run__usable(&s->spans);
		co.on_span = span_run__on_event;
		co.on_span_ctx = &s->spans;
		/* A set that grows: its new processes hit sites attached per file. */
		co.span_per_file = grows;
		co.span_close = span_run__has_kind(&s->spans, s->opts.span_reqs,
						   s->opts.nr_span_reqs, SPAN_SITE_USDT_DONE);
		co.usdt_hits = span_run__has_kind(&s->spans, s->opts.span_reqs,
						  s->opts.nr_span_reqs, SPAN_SITE_USDT_COUNT);
		co.keys = s->opts.nr_key_reqs > 0;
		co.span_causes = s->opts.nr_cause_reqs > 0;
		co.on_exec = grows ? span_run__on_exec : NULL;
	}
	/* serve: every file once, for every process; no records, no execs to follow. */
	if (co.spans && s->opts.mode == TARGET_MODE_SERVE) {
		co.span_per_file = true;
		co.on_exec = NULL;
		co.counters = SCHED_COUNTERS_NONE;
		co.max_span_series = s->opts.max_span_series;
		/*
		 * A link per file where the kernel has uprobe_multi: the unit's
		 * capabilities (CAP_BPF, CAP_PERFMON) make it; a perf uprobe of
		 * a site on its own was refused them here (EACCES, 6.18).
		 */
		co.span_links = SCHED_SPAN_LINKS_MULTI;
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
		session__logf(
			s, "khbpf: BPF unavailable (%s); falling back to /proc/%d/task/*/sched\n",
			s->bpf_detail, (int)s->pid);
		return;
	}
	co.set_mode = s->set_mode;
	co.max_processes = s->opts.max_processes;
	co.generic_switch = s->opts.generic_switch;
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
		if (co.spans)
			span_run__attach(&s->spans, s->coll, -1);
		s->use_bpf = true;
		s->bpf_avail = AVAIL_AVAILABLE;
		return;
	}
	if (s->set_mode == KHBPF_SET_CGROUP) {
		size_t i;

		co.nr_cgroups = (uint32_t)s->opts.nr_cgroup_paths;
		for (i = 0; i < s->opts.nr_cgroup_paths && i < KHBPF_MAX_CGROUP_FILTERS; i++) {
			co.cgroup_ids[i] = s->cg_ids[i];
			co.cgroup_levels[i] = s->cg_levels[i];
		}
	}
	err = s->have_btf ? sched_collector__open(&s->coll, &co) : -ENOENT;
	if (!err && s->opts.mode == TARGET_MODE_RUN) {
		err = sched_collector__add_target(s->coll, s->pid);
	} else if (!err) {
		size_t i;

		for (i = 0; !err && i < s->opts.nr_pids; i++)
			err = sched_collector__add_target(s->coll, s->opts.pids[i]);
	}
	if (err) {
		bpf_unavailable(s, err, s->have_btf);
		return;
	}
	if (co.spans)
		span_run__attach(&s->spans, s->coll, co.span_per_file ? -1 : s->pid);
	s->use_bpf = true;
	s->bpf_avail = AVAIL_AVAILABLE;
}

/*
 * The executables of the processes that just joined, read while khbpf may
 * still read any process's /proc/PID/exe: a process forked later without
 * exec runs the same one (proc_window.c follows the record's exe_tgid).
 */
static void read_exes(struct session *s, const struct thread_table *joined)
{
	struct proc_exe *grown;
	char path[64], exe[PATH_MAX];
	size_t i;
	ssize_t n;

	for (i = 0; i < joined->nr; i++) {
		const struct khbpf_thread_rec *r = &joined->recs[i];

		if (proc_exes__find(s->exes, s->nr_exes, r->tgid, r->proc_start_time))
			continue;
		if (fsutil__path(path, sizeof(path), s->root, "/proc/%u/exe", r->tgid) < 0)
			continue;
		n = readlink(path, exe, sizeof(exe) - 1);
		if (n <= 0)
			continue;
		exe[n] = '\0';
		grown = realloc(s->exes, (s->nr_exes + 1) * sizeof(*grown));
		if (!grown)
			return;
		s->exes = grown;
		s->exes[s->nr_exes] = (struct proc_exe){ r->tgid, r->proc_start_time, strdup(exe) };
		if (s->exes[s->nr_exes].path)
			s->nr_exes++;
		proc_exes__sort(s->exes, s->nr_exes);
	}
}

int session__join(struct session *s, uint32_t how, size_t *joined)
{
	struct thread_table t = { 0 };
	size_t i, cap;
	int err;

	err = sched_collector__join(s->coll, how, &t, joined);
	if (!err)
		read_exes(s, &t);
	if (!err)
		session__read_titles(s, &t, false, s->titles_now);
	/* run's window has no baseline: its command's records are only read for exes. */
	if (!err && how != 2) {
		cap = s->base.nr;
		for (i = 0; i < t.nr && !err; i++)
			err = thread_table__push(&s->base, &cap, &t.recs[i]);
		thread_table__sort(&s->base);
	}
	thread_table__free(&t);
	return err;
}

int session__start_collecting(struct session *s)
{
	int err;

	if (s->use_bpf && s->set_mode) {
		size_t joined;

		/* The set: kept from here on, then everyone already in it found. */
		err = sched_collector__attach_set(s->coll);
		err = err ?: session__join(s, s->opts.mode == TARGET_MODE_RUN ? 2 : 1, &joined);
		s->start_join_end = clock_ns(CLOCK_MONOTONIC);
		if (err) {
			thread_table__free(&s->base);
			bpf_unavailable(s, err, s->have_btf);
		}
	} else if (s->opts.mode != TARGET_MODE_RUN && s->use_bpf) {
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
	if (s->opts.mode == TARGET_MODE_ATTACH && !s->use_bpf) {
		err = proc_snapshot_witnessed(s, &s->base, &s->fb.cpu_start, &s->fb.clock_ok);
		if (!err)
			session__read_titles(s, &s->base, false, true);
		return err;
	}
	if (s->opts.mode == TARGET_MODE_ATTACH)
		session__read_join_titles(s);
	/* run: the command's clock starts at its fork, as its one thread's does. */
	s->fb.clock_ok = true;
	return 0;
}

void session__open_counters(struct session *s, const struct thread_table *threads)
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

/* Cgroup sets: threads that joined when moved in start from their counters then. */
static int merge_moved_baselines(struct session *s)
{
	struct thread_table moved;
	size_t cap = s->base.nr, i;
	int err = sched_collector__moved_baselines(s->coll, &moved);

	for (i = 0; !err && i < moved.nr; i++)
		err = thread_table__push(&s->base, &cap, &moved.recs[i]);
	thread_table__free(&moved);
	thread_table__sort(&s->base);
	return err;
}

int session__finish_window(struct session *s)
{
	struct window_opts wo = { 0 };
	uint64_t elapsed;
	int err;

	/* run: the command has exited; keep it a zombie until its threads are read. */
	proctarget__fill(s->root, s->pid, s->opts.mode, &s->target);
	if (s->use_bpf) {
		s->end_snapshot_mono = clock_ns(CLOCK_MONOTONIC);
		err = take_snapshot(s, &s->end);
	} else {
		bool still = false;

		err = proc_snapshot_witnessed(s, &s->end, &s->fb.cpu_end, &still);
		s->fb.clock_ok = s->fb.clock_ok && still;
		if (s->opts.mode == TARGET_MODE_RUN && s->end_reason == END_REASON_TARGET_EXIT)
			s->fb.child_faults_known =
				!proctarget__child_faults(s->root, s->pid, &s->fb.child_faults);
	}
	/* Without BPF, a target gone (and reaped) by now simply has no live threads. */
	if (err == -ESRCH && !s->use_bpf)
		err = 0;
	if (err)
		return err;
	s->end_mono = clock_ns(CLOCK_MONOTONIC);
	session__sample_pressure(s, true);
	session__read_titles(s, &s->end, true, true);
	if (s->use_bpf) {
		err = span_run__finish(&s->spans, s->coll);
		err = err ?: sched_collector__exited(s->coll, &s->exited);
		err = err ?: sched_collector__processes(s->coll, &s->procs, &s->nr_procs);
		err = err ?: merge_moved_baselines(s);
		if (err)
			return err;
		sched_collector__detach(s->coll);
		free(s->wakers);
		err = sched_collector__wakers(s->coll, &s->wakers, &s->nr_wakers);
		if (err)
			return err;
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
	session__sample_frequency(s);
	read_counters(s);
	elapsed = s->end_mono - s->start_mono;
	err = session__census(&s->census[1], &s->end, s->use_bpf ? &s->exited : NULL, elapsed);
	if (err)
		return err;
	wo.baseline = s->opts.mode == TARGET_MODE_RUN ? NULL : &s->base;
	wo.end = &s->end;
	wo.exited = s->use_bpf ? &s->exited : NULL;
	/* Without BPF there is no start_time: anything new at the end was born. */
	wo.start_boot_ns = s->use_bpf ? s->start_boot : 0;
	wo.max_threads = s->opts.max_threads;
	err = sched_window__compute(&s->win, &wo);
	if (!err)
		target_comm_from_window(s);
	if (!err) {
		struct proc_window_opts po = {
			.win = &s->win,
			.procs = s->procs,
			.nr_procs = s->nr_procs,
			.exes = s->exes,
			.nr_exes = s->nr_exes,
			.titles = s->titles,
			.nr_titles = s->nr_titles,
			.start_boot_ns = wo.start_boot_ns,
			.end_mono_ns = s->end_snapshot_mono,
		};

		err = proc_window__compute(&s->pwin, &po);
	}
	return err;
}

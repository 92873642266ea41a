// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <linux/perf_event.h>

#include "kfeatures.h"
#include "linkset.h"
#include "perfcount.h"
#include "sched.skel.h"
#include "sched_collector.h"
#include "topology.h"
#include "uprobe_multi.h"

/* Span sites a collector attaches, and links: at most two per site. */
#define SPAN_LINKS_MAX (2 * KHBPF_MAX_SPAN_SITES)
/*
 * Threads that take span links down (linkset.h). A per-site link is a perf
 * event whose release, perf_uprobe_destroy(), holds event_mutex across a
 * synchronize_rcu() (perf_trace_event_unreg()): they come down one at a
 * time however many threads close them (200 links took 22 s here with 1, 4
 * or 16 threads). uprobe_multi links take no such lock
 * (bpf_uprobe_multi_link_release()), so theirs go concurrently.
 */
#define SPAN_SITE_TEARDOWN_THREADS 1
#define SPAN_MULTI_TEARDOWN_THREADS 8

struct sched_collector {
	struct sched_bpf *skel;
	struct ring_buffer *rb;
	struct linkset span_links;
	size_t nr_span_sites;
	bool span_multi; /* span programs loaded for uprobe_multi links */
	bool task_storage; /* per-thread state in task storage, else the hashes */
	uint64_t delivered;
	uint64_t malformed; /* ring buffer records of an unexpected size */
	void (*on_span)(void *ctx, const struct khbpf_span_event *e);
	void *on_span_ctx;
	int stats_fd;
	bool attached;
	uint32_t max_exited;
	bool sched_info;
	uint64_t not_final;
	int *counter_fds; /* nr_counter_cpus * KHBPF_NR_COUNTERS; -1 where not open */
	uint32_t nr_counter_cpus;
	uint32_t nr_counters;
	uint32_t counter_cpus;
	int counters_err;
	struct kfeatures feat;
	bool counters_refused; /* the verifier refused the span programs with counters */
	int site_fd_err; /* span_site_metric: first failed insert */
};

static const struct perfcount_event counter_events_hw[KHBPF_NR_COUNTERS] = {
	[KHBPF_CTR_CYCLES] = { PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	[KHBPF_CTR_INSTRUCTIONS] = { PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
};

static const struct perfcount_event counter_events_sw[KHBPF_NR_COUNTERS] = {
	[KHBPF_CTR_CYCLES] = { PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	[KHBPF_CTR_INSTRUCTIONS] = { PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
};

/*
 * Per-CPU counting events for span readings, opened before load so the
 * programs know whether to read them. A CPU whose events do not open (it is
 * offline) stays empty: reads there fail and those spans' readings are gaps.
 */
static int counters_open(struct sched_collector *c, enum sched_counters which)
{
	const struct perfcount_event *ev =
		which == SCHED_COUNTERS_SW_CPU_CLOCK ? counter_events_sw : counter_events_hw;
	int n = libbpf_num_possible_cpus();
	uint32_t cpu, i;

	if (n <= 0)
		return n ? n : -ENODEV;
	c->nr_counter_cpus = (uint32_t)n;
	c->counter_fds = malloc((size_t)n * KHBPF_NR_COUNTERS * sizeof(int));
	if (!c->counter_fds)
		return -ENOMEM;
	for (cpu = 0; cpu < c->nr_counter_cpus; cpu++) {
		int *fds = &c->counter_fds[cpu * KHBPF_NR_COUNTERS];
		bool all = true;

		for (i = 0; i < KHBPF_NR_COUNTERS; i++) {
			fds[i] = perfcount__open_cpu(&ev[i], (int)cpu);
			if (fds[i] < 0) {
				/* Offline CPUs (ENODEV) say nothing about the PMU. */
				if (fds[i] != -ENODEV && !c->counters_err)
					c->counters_err = fds[i];
				all = false;
			}
		}
		c->counter_cpus += all;
	}
	if (!c->counter_cpus) {
		if (!c->counters_err)
			c->counters_err = -ENODEV;
		return 0;
	}
	c->counters_err = 0;
	c->nr_counters = KHBPF_NR_COUNTERS;
	return 0;
}

static int counters_fill(struct sched_collector *c)
{
	uint32_t k;
	int err;

	for (k = 0; c->nr_counters && k < c->nr_counter_cpus * KHBPF_NR_COUNTERS; k++) {
		if (c->counter_fds[k] < 0)
			continue;
		err = bpf_map__update_elem(c->skel->maps.counters, &k, sizeof(k),
					   &c->counter_fds[k], sizeof(int), BPF_ANY);
		if (err)
			return err;
	}
	return 0;
}

static void counters_close(struct sched_collector *c)
{
	uint32_t k;

	for (k = 0; c->counter_fds && k < c->nr_counter_cpus * KHBPF_NR_COUNTERS; k++)
		if (c->counter_fds[k] >= 0)
			close(c->counter_fds[k]);
	free(c->counter_fds);
	c->counter_fds = NULL;
}

/*
 * CONFIG_SCHED_INFO: does task_struct have sched_info (run_delay, pcount)?
 * And may a tracing program use a run-time allocated hash (the BPF memory
 * allocator, bpf_mem_alloc)? Before it, such maps are refused on PREEMPT_RT
 * and warned about elsewhere, so the groups map is preallocated then.
 */
static void kernel_btf_facts(bool *sched_info, bool *mem_alloc)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_member *m;
	const struct btf_type *t;
	int id, i;

	*sched_info = false;
	*mem_alloc = false;
	if (libbpf_get_error(btf))
		return;
	id = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	for (i = 0, m = t ? btf_members(t) : NULL; t && i < btf_vlen(t); i++, m++) {
		if (!strcmp(btf__name_by_offset(btf, m->name_off), "sched_info")) {
			*sched_info = true;
			break;
		}
	}
	*mem_alloc = btf__find_by_name_kind(btf, "bpf_mem_alloc", BTF_KIND_STRUCT) > 0;
	btf__free(btf);
}

void sched_collector__select(const struct kfeatures *k, struct sched_variant *v)
{
	/* On PREEMPT_RT task storage lookups fail under a preempted holder: the hashes. */
	v->task_storage = k->have[KFEAT_TASK_STORAGE] && !k->task_storage_preemptible;
	v->switch_prev_state = k->have[KFEAT_SWITCH_PREV_STATE];
	v->task_btf = k->have[KFEAT_CURRENT_TASK_BTF];
	v->attach_cookie = k->have[KFEAT_ATTACH_COOKIE];
	v->atomic_fetch = k->have[KFEAT_ATOMIC_FETCH];
	/* The cookie is the site's metric: without cookies, per-site links and the site map. */
	v->uprobe_multi = k->have[KFEAT_UPROBE_MULTI] && k->have[KFEAT_ATTACH_COOKIE];
}

/* Program variants and fallbacks for this kernel: one of each pair is loaded. */
static int configure_variant(struct sched_collector *c, const struct sched_collector_opts *opts,
			     bool mem_alloc)
{
	struct sched_bpf *skel = c->skel;
	struct sched_variant v;
	uint32_t tasks = opts && opts->max_tasks ? opts->max_tasks : KHBPF_DEFAULT_MAX_TASKS;
	bool spans = opts && opts->spans;
	int err = 0;

	kfeatures__detect(&c->feat, true);
	sched_collector__select(&c->feat, &v);
	if (opts && opts->task_hashes)
		v.task_storage = false;
	c->task_storage = v.task_storage;
	skel->rodata->use_task_storage = v.task_storage;
	skel->rodata->have_task_btf = v.task_btf;
	skel->rodata->have_cookie = v.attach_cookie;
	bpf_program__set_autoload(skel->progs.khbpf_span_enter, v.atomic_fetch);
	bpf_program__set_autoload(skel->progs.khbpf_span_exit, v.atomic_fetch);
	bpf_program__set_autoload(skel->progs.khbpf_span_enter_nofetch, !v.atomic_fetch);
	bpf_program__set_autoload(skel->progs.khbpf_span_exit_nofetch, !v.atomic_fetch);
	/*
	 * A program takes one kind of link: the uprobe_multi attach type is
	 * checked at link creation (bpf_prog_attach_check_attach_type()), so
	 * it is chosen here, before load, for every span site.
	 */
	c->span_multi = spans && v.uprobe_multi && opts->span_links != SCHED_SPAN_LINKS_PER_SITE &&
			(opts->span_links == SCHED_SPAN_LINKS_MULTI ||
			 opts->span_sites >= SCHED_SPAN_MULTI_MIN_SITES);
	if (c->span_multi) {
		const enum bpf_attach_type t = (enum bpf_attach_type)UPROBE_MULTI_ATTACH_TYPE;

		err = err ?: bpf_program__set_expected_attach_type(skel->progs.khbpf_span_enter, t);
		err = err ?: bpf_program__set_expected_attach_type(skel->progs.khbpf_span_exit, t);
		err = err   ?:
			      bpf_program__set_expected_attach_type(
				      skel->progs.khbpf_span_enter_nofetch, t);
		err = err   ?:
			      bpf_program__set_expected_attach_type(
				      skel->progs.khbpf_span_exit_nofetch, t);
	}
	if (libbpf_num_possible_cpus() > 0)
		skel->rodata->nr_slot_cpus = (uint32_t)libbpf_num_possible_cpus();
	bpf_program__set_autoload(skel->progs.khbpf_sched_switch, v.switch_prev_state);
	bpf_program__set_autoload(skel->progs.khbpf_sched_switch_nostate, !v.switch_prev_state);
	if (v.task_storage) {
		err = err ?: bpf_map__set_max_entries(skel->maps.task_state_h, 1);
		err = err ?: bpf_map__set_max_entries(skel->maps.span_state_h, 1);
	} else {
		/* The kernel cannot make task storage: an unused one-entry hash instead. */
		err = err ?: bpf_map__set_type(skel->maps.task_state, BPF_MAP_TYPE_HASH);
		err = err ?: bpf_map__set_map_flags(skel->maps.task_state, 0);
		err = err ?: bpf_map__set_max_entries(skel->maps.task_state, 1);
		err = err ?: bpf_map__set_type(skel->maps.span_state, BPF_MAP_TYPE_HASH);
		err = err ?: bpf_map__set_map_flags(skel->maps.span_state, 0);
		err = err ?: bpf_map__set_max_entries(skel->maps.span_state, 1);
		err = err ?: bpf_map__set_max_entries(skel->maps.task_state_h, tasks);
		err = err   ?:
			      bpf_map__set_max_entries(skel->maps.span_state_h,
						       spans ? KHBPF_DEFAULT_SPAN_TASKS : 1);
		/*
		 * Where tracing programs may allocate (bpf_mem_alloc), entries are
		 * made as threads are seen, as the exit records are: PREEMPT_RT
		 * takes this path on current kernels. Older kernels preallocate.
		 */
		if (mem_alloc) {
			err = err   ?:
				      bpf_map__set_map_flags(skel->maps.task_state_h,
							     BPF_F_NO_PREALLOC);
			err = err   ?:
				      bpf_map__set_map_flags(skel->maps.span_state_h,
							     BPF_F_NO_PREALLOC);
		}
	}
	if (v.attach_cookie || !spans)
		err = err ?: bpf_map__set_max_entries(skel->maps.span_site_metric, 1);
	return err;
}

int sched_collector__open(struct sched_collector **out, const struct sched_collector_opts *opts)
{
	struct sched_collector *c;
	uint32_t nr_cpus = 1;
	bool kernel_waits, mem_alloc;
	int err;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->stats_fd = -1;
	linkset__init(&c->span_links, SPAN_LINKS_MAX);
	c->max_exited = opts && opts->max_exited ? opts->max_exited : KHBPF_DEFAULT_MAX_EXITED;

	c->skel = sched_bpf__open();
	if (!c->skel) {
		err = -errno;
		goto cleanup;
	}
	c->skel->rodata->trace_all = opts && opts->trace_all;
	kernel_btf_facts(&c->sched_info, &mem_alloc);
	err = configure_variant(c, opts, mem_alloc);
	if (err)
		goto cleanup;
	kernel_waits = c->sched_info && !(opts && opts->bpf_timed_waits);
	c->skel->rodata->kernel_queue_ts = kernel_waits;
	/* The kernel times every wait itself: no wakeup program needed. */
	bpf_program__set_autoattach(c->skel->progs.khbpf_sched_wakeup, !kernel_waits);
	bpf_program__set_autoattach(c->skel->progs.khbpf_sched_wakeup_new, !kernel_waits);
	if (opts && opts->topo && opts->topo->nr_cpu_ids)
		nr_cpus = opts->topo->nr_cpu_ids;
	err = bpf_map__set_max_entries(c->skel->maps.cpu_topo, nr_cpus);
	err = err ?: bpf_map__set_max_entries(c->skel->maps.exited, c->max_exited);
	/*
	 * Where tracing programs may allocate (bpf_mem_alloc: "bpf: Convert hash
	 * map to bpf_mem_alloc."), an exit record is allocated when its thread
	 * exits: kernel memory follows the threads that exited in the window
	 * (preallocated, --max-exited records held 36 MiB from the load on).
	 * Unlike a ring buffer, nothing needs the loader to run during a burst
	 * of exits; a record that cannot be had is counted as a full map's
	 * (exited_overflow).
	 */
	if (mem_alloc)
		err = err ?: bpf_map__set_map_flags(c->skel->maps.exited, BPF_F_NO_PREALLOC);
	if (opts && opts->group_by) {
		uint32_t i;

		if (opts->nr_cgroups > KHBPF_MAX_CGROUP_FILTERS) {
			err = -E2BIG;
			goto cleanup;
		}
		c->skel->rodata->group_by = opts->group_by;
		c->skel->rodata->nr_cgroup_filters = opts->nr_cgroups;
		for (i = 0; i < opts->nr_cgroups; i++) {
			c->skel->rodata->cgroup_filter_id[i] = opts->cgroup_ids[i];
			c->skel->rodata->cgroup_filter_level[i] = opts->cgroup_levels[i];
		}
		if (opts->max_groups)
			err = err   ?:
				      bpf_map__set_max_entries(c->skel->maps.groups,
							       opts->max_groups);
		if (!mem_alloc)
			err = err ?: bpf_map__set_map_flags(c->skel->maps.groups, 0);
	} else {
		err = err ?: bpf_map__set_max_entries(c->skel->maps.groups, 1);
		err = err ?: bpf_map__set_map_flags(c->skel->maps.groups, 0);
	}
	if (opts && opts->spans) {
		c->skel->rodata->spans_enabled = true;
		if (opts->max_spans)
			c->skel->rodata->max_spans = opts->max_spans;
		if (opts->max_span_keys)
			err = err   ?:
				      bpf_map__set_max_entries(c->skel->maps.span_agg,
							       opts->max_span_keys);
		/*
		 * Where tracing programs may allocate (bpf_mem_alloc), an aggregate
		 * is made at its first call: memory follows the (thread, metric)
		 * pairs seen, not --max-span-keys (27 MiB preallocated).
		 */
		if (mem_alloc)
			err = err   ?:
				      bpf_map__set_map_flags(c->skel->maps.span_agg,
							     BPF_F_NO_PREALLOC);
		c->on_span = opts->on_span;
		c->on_span_ctx = opts->on_span_ctx;
		/*
		 * Verifiers without atomic fetch (the *_nofetch span programs)
		 * are older ones: 5.10's gives up on the counter path after 1M
		 * instructions (measured), which under emulation takes minutes
		 * to find out. Not tried there; a refusal elsewhere is retried
		 * below without counters.
		 */
		if (opts->counters != SCHED_COUNTERS_NONE)
			err = err ?: counters_open(c, opts->counters);
		/* Opened first: where they cannot open at all, that is the reason given. */
		if (!err && c->nr_counters && !c->feat.have[KFEAT_ATOMIC_FETCH]) {
			counters_close(c);
			c->nr_counters = 0;
			c->counter_cpus = 0;
			c->counters_refused = true;
		}
		c->skel->rodata->nr_counters = c->nr_counters;
		if (c->nr_counters)
			err = err   ?:
				      bpf_map__set_max_entries(c->skel->maps.counters,
							       c->nr_counter_cpus *
								       KHBPF_NR_COUNTERS);
	} else {
		/* Without spans the span maps stay at one entry: no memory. */
		err = err ?: bpf_map__set_max_entries(c->skel->maps.span_agg, 1);
		err = err ?: bpf_map__set_max_entries(c->skel->maps.span_events, 4096);
	}
	if (err)
		goto cleanup;
	err = sched_bpf__load(c->skel);
	if (err == -E2BIG && c->nr_counters) {
		/*
		 * An older verifier gives up on the span programs with counter
		 * readings (too many states: 5.10's khbpf_span_exit_nofetch).
		 * Spans without counters, saying why: their readings are gaps.
		 */
		struct sched_collector_opts o = *opts;

		o.counters = SCHED_COUNTERS_NONE;
		sched_collector__destroy(c);
		err = sched_collector__open(out, &o);
		if (!err)
			(*out)->counters_refused = true;
		return err;
	}
	err = err ?: counters_fill(c);
	if (err)
		goto cleanup;

	if (opts && opts->topo && opts->topo->cpus) {
		uint32_t i;

		for (i = 0; i < opts->topo->nr_cpu_ids; i++) {
			const struct cpu_topo *t = &opts->topo->cpus[i];
			struct khbpf_cpu_topo v = { t->core, t->llc, t->node, 0 };

			err = bpf_map__update_elem(c->skel->maps.cpu_topo, &i, sizeof(i), &v,
						   sizeof(v), BPF_ANY);
			if (err)
				goto cleanup;
		}
	} else {
		/* Unknown topology: every migration classifies as unknown. */
		struct khbpf_cpu_topo v = { -1, -1, -1, 0 };
		uint32_t i = 0;

		err = bpf_map__update_elem(c->skel->maps.cpu_topo, &i, sizeof(i), &v, sizeof(v),
					   BPF_ANY);
		if (err)
			goto cleanup;
	}
	/* BPF run-time stats for this window only: the fd's lifetime is the switch. */
	if (opts && opts->run_stats) {
		c->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (c->stats_fd < 0)
			c->stats_fd = -1;
	}
	*out = c;
	return 0;

cleanup:
	sched_collector__destroy(c);
	return err;
}

/*
 * Does bpf() on the fds already held still need a capability? Some kernels
 * (5.10 with kernel.unprivileged_bpf_disabled set) refuse every bpf()
 * command without CAP_BPF, reading a held map included. Tried in a child
 * that drops every capability: true when it is refused.
 */
bool sched_collector__bpf_needs_cap(struct sched_collector *c)
{
	int fd = bpf_map__fd(c->skel->maps.exited), status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return true;
	if (pid == 0) {
		struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct data[2] = {};
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);

		int refused, i;

		if (syscall(SYS_capset, &hdr, data))
			_exit(2);
		refused = bpf_obj_get_info_by_fd(fd, &info, &len) && errno == EPERM;
		/*
		 * Every fd it inherited is closed before it exits, so a checker
		 * of the loader's fds (valgrind --track-fds) sees none left open.
		 */
		if (syscall(SYS_close_range, 3U, ~0U, 0U))
			for (i = 3; i < 65536; i++)
				close(i);
		_exit(refused ? 1 : 0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return true;
	return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

int sched_collector__add_target(struct sched_collector *c, pid_t tgid)
{
	uint32_t t = (uint32_t)tgid;

	if (tgid <= 0 || t >= KHBPF_PID_LIMIT)
		return -EINVAL;
	c->skel->bss->target_bits[t >> 6] |= 1ULL << (t & 63);
	return 0;
}

int sched_collector__attach(struct sched_collector *c)
{
	int err;

	/* Iterators run on demand; span probes attach per site. */
	bpf_program__set_autoattach(c->skel->progs.khbpf_iter_task, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_iter_open_spans, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_span_enter, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_span_exit, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_span_enter_nofetch, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_span_exit_nofetch, false);
	err = sched_bpf__attach(c->skel);
	if (err)
		return err;
	c->attached = true;
	return 0;
}

void sched_collector__detach(struct sched_collector *c)
{
	if (c && c->skel && c->attached) {
		sched_bpf__detach(c->skel);
		c->attached = false;
	}
}

static int table_push(struct thread_table *t, size_t *cap, const struct khbpf_thread_rec *r)
{
	if (t->nr == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		struct khbpf_thread_rec *grown = realloc(t->recs, ncap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		t->recs = grown;
		*cap = ncap;
	}
	t->recs[t->nr++] = *r;
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct khbpf_thread_rec *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start_time < y->start_time ? -1 : x->start_time > y->start_time;
}

void thread_table__sort(struct thread_table *t)
{
	if (t->nr)
		qsort(t->recs, t->nr, sizeof(*t->recs), rec_cmp);
}

const struct khbpf_thread_rec *thread_table__find(const struct thread_table *t, uint32_t tid,
						  uint64_t start_time)
{
	struct khbpf_thread_rec key = { .tid = tid, .start_time = start_time };

	if (!t->nr)
		return NULL;
	return bsearch(&key, t->recs, t->nr, sizeof(*t->recs), rec_cmp);
}

void thread_table__free(struct thread_table *t)
{
	free(t->recs);
	t->recs = NULL;
	t->nr = 0;
}

int sched_collector__baseline(struct sched_collector *c, struct thread_table *out)
{
	int err;

	c->skel->bss->iter_init_state = 1;
	err = sched_collector__snapshot(c, out);
	c->skel->bss->iter_init_state = 0;
	return err;
}

/*
 * Run a task iterator and collect its fixed-size records into a malloc'd
 * array. seq_file hands out whole records; reassemble across reads anyway.
 */
static int iter_collect(struct bpf_program *prog, size_t rec_size, void **out, size_t *nr)
{
	char *v = NULL, *grown;
	size_t cap = 0, n = 0, have = 0;
	struct bpf_link *link;
	int fd, err = 0;
	ssize_t r;

	*out = NULL;
	*nr = 0;
	link = bpf_program__attach_iter(prog, NULL);
	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(v, cap * rec_size);
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			v = grown;
		}
		r = read(fd, v + n * rec_size + have, rec_size - have);
		if (r <= 0) {
			if (r < 0)
				err = -errno;
			else if (have)
				err = -EIO;
			break;
		}
		have += (size_t)r;
		if (have == rec_size) {
			have = 0;
			n++;
		}
	}
	close(fd);
cleanup:
	bpf_link__destroy(link);
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*nr = n;
	return 0;
}

int sched_collector__snapshot(struct sched_collector *c, struct thread_table *out)
{
	void *recs;
	int err;

	memset(out, 0, sizeof(*out));
	err = iter_collect(c->skel->progs.khbpf_iter_task, sizeof(*out->recs), &recs, &out->nr);
	if (err)
		return err;
	out->recs = recs;
	thread_table__sort(out);
	return 0;
}

static int read_exited(struct sched_collector *c, struct thread_table *out, size_t *not_final)
{
	struct khbpf_thread_key key, next;
	struct khbpf_thread_rec rec;
	int fd = bpf_map__fd(c->skel->maps.exited);
	size_t cap = 0;
	void *prev = NULL;
	int err = 0;

	memset(out, 0, sizeof(*out));
	*not_final = 0;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &rec))
			continue; /* nothing deletes; kept for safety */
		if (!(rec.flags & KHBPF_REC_FINAL))
			(*not_final)++;
		err = table_push(out, &cap, &rec);
		if (err)
			break;
	}
	if (err)
		thread_table__free(out);
	else
		thread_table__sort(out);
	return err;
}

/*
 * A thread is reaped (and its process can look exited) before its final
 * __schedule() runs, so wait briefly for the final switch to refresh each
 * record; a record that never gets it keeps its sched_process_exit values.
 */
int sched_collector__exited(struct sched_collector *c, struct thread_table *out)
{
	size_t not_final = 0;
	int err, tries;

	for (tries = 0;; tries++) {
		err = read_exited(c, out, &not_final);
		if (err || !not_final || tries == 200)
			break;
		thread_table__free(out);
		usleep(500);
	}
	c->not_final = not_final;
	return err;
}

/*
 * Every entry of a hash map as records of rec_size bytes: the key at offset
 * 0, the value at val_off. An entry deleted while we walk is skipped.
 */
static int map_dump(int fd, size_t key_size, size_t val_off, size_t rec_size, void **out,
		    size_t *nr)
{
	char key[64], next[64], *v = NULL, *grown;
	size_t cap = 0, n = 0;
	void *prev = NULL;

	if (key_size > sizeof(key))
		return -E2BIG;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, key_size);
		prev = key;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(v, cap * rec_size);
			if (!grown) {
				free(v);
				return -ENOMEM;
			}
			v = grown;
		}
		if (bpf_map_lookup_elem(fd, key, v + n * rec_size + val_off))
			continue;
		memcpy(v + n * rec_size, key, key_size);
		n++;
	}
	*out = v;
	*nr = n;
	return 0;
}

int sched_collector__drain_exited(struct sched_collector *c, struct thread_table *out)
{
	int fd = bpf_map__fd(c->skel->maps.exited);
	size_t not_final, i;
	int err;

	err = read_exited(c, out, &not_final);
	if (err)
		return err;
	c->not_final += not_final;
	for (i = 0; i < out->nr; i++) {
		const struct khbpf_thread_rec *r = &out->recs[i];
		struct khbpf_thread_key key = { .tid = r->tid, .start_time = r->start_time };

		if (r->flags & KHBPF_REC_FINAL)
			bpf_map_delete_elem(fd, &key);
	}
	return 0;
}

int sched_collector__groups(struct sched_collector *c, struct group_entry **out, size_t *nr)
{
	void *v;
	int err;

	err = map_dump(bpf_map__fd(c->skel->maps.groups), sizeof(struct khbpf_group_key),
		       offsetof(struct group_entry, acc), sizeof(**out), &v, nr);
	*out = err ? NULL : v;
	return err;
}

int sched_collector__group_spill(struct sched_collector *c, struct khbpf_group_acc *out)
{
	uint32_t zero = 0;

	return bpf_map__lookup_elem(c->skel->maps.group_spill, &zero, sizeof(zero), out,
				    sizeof(*out), 0);
}

int sched_collector__delete_group(struct sched_collector *c, const struct khbpf_group_key *key)
{
	return bpf_map__delete_elem(c->skel->maps.groups, key, sizeof(*key), 0);
}

void sched_collector__role_name(const char *prog, char *out, size_t size)
{
	static const char *const variants[] = { "_nostate", "_nofetch" };
	size_t n = strlen(prog), i, l;

	for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		l = strlen(variants[i]);
		if (n > l && !strcmp(prog + n - l, variants[i])) {
			n -= l;
			break;
		}
	}
	snprintf(out, size, "%.*s", (int)n, prog);
}

int sched_collector__stats(struct sched_collector *c, struct sched_collector_stats *out)
{
	struct bpf_program *prog;

	memset(out, 0, sizeof(*out));
	out->run_stats_enabled = c->stats_fd >= 0;
	out->storage_failures = c->skel->bss->storage_failures;
	out->exited_overflow = c->skel->bss->exited_overflow;
	out->final_unmatched = c->skel->bss->final_unmatched;
	out->iter_write_errors = c->skel->bss->iter_write_errors;
	out->exit_not_final = c->not_final;
	out->span_records = c->skel->bss->span_records;
	out->span_ringbuf_drops = c->skel->bss->span_ringbuf_drops;
	out->span_sampled_out = c->skel->bss->span_sampled_out;
	out->span_depth_overflow = c->skel->bss->span_depth_overflow;
	out->span_unwound = c->skel->bss->span_unwound;
	out->span_unmatched = c->skel->bss->span_unmatched;
	out->span_agg_overflow = c->skel->bss->span_agg_overflow;
	out->span_state_failures = c->skel->bss->span_state_failures;
	out->span_events_delivered = c->delivered;
	out->span_events_malformed = c->malformed;
	out->span_clock_gaps = c->skel->bss->span_clock_gaps;
	out->span_counter_skews = c->skel->bss->span_counter_skews;
	out->exec_renumbered = c->skel->bss->exec_renumbered;
	out->span_open_at_exit_drops = c->skel->bss->span_open_at_exit_drops;
	out->groups_made = c->skel->bss->groups_made;
	out->group_overflow = c->skel->bss->group_overflow;
	out->nr_counters = c->nr_counters;
	out->counters_err = c->counters_refused ? -E2BIG : c->counters_err;
	out->counters_refused = c->counters_refused;
	out->counter_cpus = c->counter_cpus;
	out->max_exited = c->max_exited;
	out->sched_info = c->sched_info;
	out->span_site_unresolved = c->skel->bss->span_site_unresolved;
	sched_collector__select(&c->feat, &out->variant);
	out->variant.uprobe_multi = c->span_multi;
	out->variant.task_storage = c->task_storage;
	bpf_object__for_each_program(prog, c->skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		struct sched_prog_stats *s;

		if (out->nr_progs == SCHED_PROG_MAX || prog == c->skel->progs.khbpf_iter_task ||
		    prog == c->skel->progs.khbpf_iter_open_spans || bpf_program__fd(prog) < 0)
			continue;
		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			return -errno;
		s = &out->progs[out->nr_progs++];
		sched_collector__role_name(bpf_program__name(prog), s->name, sizeof(s->name));
		s->run_cnt = info.run_cnt;
		s->run_time_ns = info.run_time_ns;
		/*
		 * The kernel fills only the bpf_prog_info it knows and says how
		 * much in len: one without recursion_misses (before 5.12) leaves
		 * our zero, which is not a count.
		 */
		s->recursion_known = len >= offsetof(struct bpf_prog_info, recursion_misses) +
						    sizeof(info.recursion_misses);
		s->recursion_misses = info.recursion_misses;
	}
	return 0;
}

int sched_collector__prog_ids(struct sched_collector *c, uint32_t *ids, int max, int *nr)
{
	struct bpf_program *prog;

	*nr = 0;
	bpf_object__for_each_program(prog, c->skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (bpf_program__fd(prog) < 0)
			continue; /* the variant this kernel does not load */
		if (*nr == max)
			return -E2BIG;
		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			return -errno;
		ids[(*nr)++] = info.id;
	}
	return 0;
}

static int span_event_cb(void *ctx, void *data, size_t size)
{
	struct sched_collector *c = ctx;
	struct khbpf_span_event full;

	if (size == KHBPF_SPAN_EVENT_NOHW_SIZE && !c->nr_counters) {
		memcpy(&full, data, size);
		memset(full.hw, 0, sizeof(full.hw));
		data = &full;
	} else if (size != sizeof(full)) {
		c->malformed++;
		return 0;
	}
	c->delivered++;
	if (c->on_span)
		c->on_span(c->on_span_ctx, data);
	return 0;
}

static struct bpf_program *span_prog(struct sched_collector *c, bool ret)
{
	bool fetch = c->feat.have[KFEAT_ATOMIC_FETCH];

	if (ret)
		return fetch ? c->skel->progs.khbpf_span_exit :
			       c->skel->progs.khbpf_span_exit_nofetch;
	return fetch ? c->skel->progs.khbpf_span_enter : c->skel->progs.khbpf_span_enter_nofetch;
}

/* One site, the classic way: a uprobe link and a uretprobe link of its own. */
static int attach_site(struct sched_collector *c, const struct sched_span_site *site, pid_t pid)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = site->metric);
	struct bpf_link *in, *out;
	int err;

	if (!c->feat.have[KFEAT_ATTACH_COOKIE]) {
		/* No cookies (the kernel refuses a nonzero one): the site map says the metric. */
		struct khbpf_site_key key = { .offset = site->offset };
		struct stat st;

		if (stat(site->path, &st))
			return -errno;
		key.ino = st.st_ino;
		uo.bpf_cookie = 0;
		err = bpf_map__update_elem(c->skel->maps.span_site_metric, &key, sizeof(key),
					   &site->metric, sizeof(site->metric), BPF_ANY);
		if (err)
			return err;
	}
	uo.retprobe = false;
	in = bpf_program__attach_uprobe_opts(span_prog(c, false), pid, site->path,
					     (size_t)site->offset, &uo);
	if (!in)
		return -errno;
	uo.retprobe = true;
	out = bpf_program__attach_uprobe_opts(span_prog(c, true), pid, site->path,
					      (size_t)site->offset, &uo);
	if (!out) {
		err = -errno;
		bpf_link__destroy(in);
		return err;
	}
	/* Room and memory for both are made sure of before (attach_spans). */
	linkset__add_link(&c->span_links, in);
	linkset__add_link(&c->span_links, out);
	return 0;
}

/*
 * Errors that say nothing about one site in particular (the file, the
 * process, privilege, memory): a group failing with one is not split.
 */
static bool group_error(int err)
{
	return err == -ENOENT || err == -ESRCH || err == -EPERM || err == -EACCES ||
	       err == -ENOMEM || err == -EMFILE || err == -ENFILE || err == -EBADF;
}

/*
 * Sites idx[0..n) of one file in two uprobe_multi links, entry and return,
 * each site's metric its cookie. When the kernel refuses the group, it is
 * split in halves until each failing site is alone with its own error, and
 * the others attach (each refused try costs a grace period in the kernel:
 * a few bad sites among many cost a few tries per halving).
 */
static void attach_group(struct sched_collector *c, struct sched_span_site *sites, size_t *idx,
			 size_t n, uint64_t *offsets, uint64_t *cookies, pid_t pid)
{
	int in, out = -1, err;
	size_t i;

	for (i = 0; i < n; i++) {
		offsets[i] = sites[idx[i]].offset;
		cookies[i] = sites[idx[i]].metric;
	}
	in = uprobe_multi__attach(bpf_program__fd(span_prog(c, false)), sites[idx[0]].path, offsets,
				  cookies, (uint32_t)n, pid, false);
	if (in >= 0)
		out = uprobe_multi__attach(bpf_program__fd(span_prog(c, true)), sites[idx[0]].path,
					   offsets, cookies, (uint32_t)n, pid, true);
	if (in >= 0 && out >= 0) {
		linkset__add_fd(&c->span_links, in);
		linkset__add_fd(&c->span_links, out);
		for (i = 0; i < n; i++)
			sites[idx[i]].err = 0;
		return;
	}
	err = in < 0 ? in : out;
	if (in >= 0)
		close(in);
	if (n == 1 || group_error(err)) {
		for (i = 0; i < n; i++)
			sites[idx[i]].err = err;
		return;
	}
	attach_group(c, sites, idx, n / 2, offsets, cookies, pid);
	attach_group(c, sites, idx + n / 2, n - n / 2, offsets, cookies, pid);
}

static int site_cmp(const void *a, const void *b, void *arg)
{
	const struct sched_span_site *x = &((struct sched_span_site *)arg)[*(const size_t *)a];
	const struct sched_span_site *y = &((struct sched_span_site *)arg)[*(const size_t *)b];
	int d = strcmp(x->path, y->path);

	if (d)
		return d;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* uprobe_multi: the sites grouped by file, two links per file. */
static int attach_multi(struct sched_collector *c, struct sched_span_site *sites, size_t nr,
			pid_t pid)
{
	size_t *idx = calloc(nr ? nr : 1, sizeof(*idx)), i, j, n = 0;
	uint64_t *offsets = calloc(nr ? nr : 1, sizeof(*offsets));
	uint64_t *cookies = calloc(nr ? nr : 1, sizeof(*cookies));
	int err = 0;

	if (!idx || !offsets || !cookies) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < nr; i++)
		if (!sites[i].err)
			idx[n++] = i;
	qsort_r(idx, n, sizeof(*idx), site_cmp, sites);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !strcmp(sites[idx[j]].path, sites[idx[i]].path); j++)
			;
		attach_group(c, sites, idx + i, j - i, offsets, cookies, pid);
	}
cleanup:
	free(idx);
	free(offsets);
	free(cookies);
	return err;
}

int sched_collector__attach_spans(struct sched_collector *c, struct sched_span_site *sites,
				  size_t nr, pid_t pid)
{
	size_t i, n = 0;
	int err;

	/* Every link made below then has its place: adding cannot fail. */
	err = linkset__prepare(&c->span_links);
	if (err)
		return err;
	if (!c->rb) {
		c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.span_events), span_event_cb, c,
					 NULL);
		if (!c->rb)
			return -errno;
	}
	/* Bounds first, so that two links per site always fit. */
	for (i = 0; i < nr; i++) {
		struct sched_span_site *s = &sites[i];

		s->err = -EINPROGRESS;
		if (s->metric >= KHBPF_MAX_METRICS)
			s->err = -E2BIG;
		else if (c->nr_span_sites == KHBPF_MAX_SPAN_SITES)
			s->err = -E2BIG;
		else
			c->nr_span_sites++;
	}
	if (c->span_multi) {
		for (i = 0; i < nr; i++)
			if (sites[i].err == -EINPROGRESS)
				sites[i].err = 0;
		err = attach_multi(c, sites, nr, pid);
		if (err)
			return err;
	} else {
		for (i = 0; i < nr; i++)
			if (sites[i].err == -EINPROGRESS)
				sites[i].err = attach_site(c, &sites[i], pid);
	}
	for (i = 0; i < nr; i++)
		n += !sites[i].err;
	return (int)n;
}

bool sched_collector__span_multi(const struct sched_collector *c)
{
	return c->span_multi;
}

size_t sched_collector__span_links(const struct sched_collector *c)
{
	return linkset__count(&c->span_links);
}

void sched_collector__detach_spans(struct sched_collector *c)
{
	if (c)
		linkset__release_begin(&c->span_links, c->span_multi ? SPAN_MULTI_TEARDOWN_THREADS :
								       SPAN_SITE_TEARDOWN_THREADS);
}

int sched_collector__span_fd(struct sched_collector *c)
{
	return c->rb ? ring_buffer__epoll_fd(c->rb) : -1;
}

int sched_collector__drain_spans(struct sched_collector *c)
{
	return c->rb ? ring_buffer__consume(c->rb) : 0;
}

int sched_collector__span_aggs(struct sched_collector *c, struct span_agg_entry **out, size_t *nr)
{
	void *v;
	int err;

	err = map_dump(bpf_map__fd(c->skel->maps.span_agg), sizeof(struct khbpf_span_key),
		       offsetof(struct span_agg_entry, agg), sizeof(**out), &v, nr);
	*out = err ? NULL : v;
	return err;
}

int sched_collector__open_spans(struct sched_collector *c, struct khbpf_span_event **out,
				size_t *nr)
{
	void *recs;
	int err;

	err = iter_collect(c->skel->progs.khbpf_iter_open_spans, sizeof(**out), &recs, nr);
	*out = err ? NULL : recs;
	return err;
}

void sched_collector__destroy(struct sched_collector *c)
{
	if (!c)
		return;
	sched_collector__detach_spans(c);
	linkset__free(&c->span_links);
	ring_buffer__free(c->rb);
	sched_collector__detach(c);
	sched_bpf__destroy(c->skel);
	counters_close(c);
	if (c->stats_fd >= 0)
		close(c->stats_fd);
	free(c);
}

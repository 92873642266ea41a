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

#include "host/kfeatures.h"
#include "collect/linkset.h"
#include "host/perfcount.h"
#include "sched.skel.h"
#include "document/blockcause.h"
#include "collect/sched_collector.h"
#include "collect/sched_collector_priv.h"
#include "collect/sched_variant.h"
#include "collect/thread_table.h"
#include "host/topology.h"
#include "host/uprobe_multi.h"

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

/* Member `name` of struct `type` in this BTF, or NULL. */
static const struct btf_member *btf_member(const struct btf *btf, const char *type,
					   const char *name)
{
	int id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_member *m;
	int i;

	for (i = 0, m = t ? btf_members(t) : NULL; t && i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), name))
			return m;
	return NULL;
}

static bool btf_has_member(const struct btf *btf, const char *type, const char *name)
{
	return btf_member(btf, type, name) != NULL;
}

/* Is member `name` of struct `type` an array of n elements? */
static bool btf_member_is_array(const struct btf *btf, const char *type, const char *name,
				uint32_t n)
{
	const struct btf_member *m = btf_member(btf, type, name);
	const struct btf_type *t = m ? btf__type_by_id(btf, m->type) : NULL;

	return t && btf_is_array(t) && btf_array(t)->nelems == n;
}

/*
 * CONFIG_SCHED_INFO: does task_struct have sched_info (run_delay, pcount)?
 * And can a task's runqueue clock be reached, through its CFS runqueue
 * (CONFIG_FAIR_GROUP_SCHED: sched_entity.cfs_rq, cfs_rq.rq)?
 */
static void kernel_btf_facts(bool *sched_info, bool *rq_clock, bool *storage_cache)
{
	struct btf *btf = btf__load_vmlinux_btf();

	*sched_info = false;
	*rq_clock = false;
	*storage_cache = false;
	if (libbpf_get_error(btf))
		return;
	*sched_info = btf_has_member(btf, "task_struct", "sched_info");
	*rq_clock = btf_has_member(btf, "sched_entity", "cfs_rq") &&
		    btf_has_member(btf, "cfs_rq", "rq");
	/*
	 * The local storage cache the plain switch program reads without the
	 * helper (sched.bpf.c, task_state_cached()): since 5.11's task storage.
	 */
	*storage_cache = btf_has_member(btf, "task_struct", "bpf_storage") &&
			 btf_member_is_array(btf, "bpf_local_storage", "cache", 16) &&
			 btf_has_member(btf, "bpf_local_storage_data", "smap") &&
			 btf_has_member(btf, "bpf_local_storage_data", "data") &&
			 btf_has_member(btf, "bpf_local_storage_map", "cache_idx");
	btf__free(btf);
}

/*
 * How many of the KHBPF_WAIT_FOLDS wait fold entries (khbpf_wait_fold) are
 * in use: all, or the environment's KHBPF_WAIT_FOLDS (0 turns them off;
 * tests use a few to make most threads fold in their task storage).
 */
static uint32_t wait_folds_wanted(void)
{
	const char *s = getenv("KHBPF_WAIT_FOLDS");
	unsigned long n;
	char *end;

	if (!s)
		return KHBPF_WAIT_FOLDS;
	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno || end == s || *end || n > KHBPF_WAIT_FOLDS || s[0] == '-') {
		fprintf(stderr,
			"khbpf: KHBPF_WAIT_FOLDS=%s is not a count from 0 to %u; using %u (unset it, or give one)\n",
			s, KHBPF_WAIT_FOLDS, KHBPF_WAIT_FOLDS);
		return KHBPF_WAIT_FOLDS;
	}
	return (uint32_t)n;
}

/* A test aid's positive 32-bit value from the environment (0: unset or bad, said). */
static uint32_t test_aid(const char *name, const char *what)
{
	const char *s = getenv(name);
	unsigned long n;
	char *end;

	if (!s)
		return 0;
	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno || end == s || *end || !n || n > UINT32_MAX || s[0] == '-') {
		fprintf(stderr, "khbpf: %s=%s is not %s; ignored\n", name, s, what);
		return 0;
	}
	return (uint32_t)n;
}

/*
 * KHBPF_TEST_SKIP_SWITCH_INS=N: every N-th switch-in of a thread with a
 * span clock is kept from the clock (sched.bpf.c), so that spans across it
 * lose their on-CPU time; for tests of the coverage of sums over spans
 * (tests/integration/span_coverage.sh).
 */
static uint32_t test_skip_switch_ins(void)
{
	uint32_t n = test_aid("KHBPF_TEST_SKIP_SWITCH_INS", "a count");

	if (n)
		fprintf(stderr, "khbpf: test aid: every %u-th span clock switch-in is skipped\n",
			n);
	return n;
}

/*
 * KHBPF_TEST_HIDE_TGID=PID: the start's walk passes over that process, as
 * a kernel that hides it from BPF would (targets.bpf.c); for tests of the
 * guards against a set that joined no one (tests/integration/target_guard.sh).
 */
static uint32_t walk_hidden_tgid(void)
{
	return test_aid("KHBPF_TEST_HIDE_TGID", "a process id");
}

/* The entries past the wanted number are held from the start: no thread takes them. */
static int wait_folds_fill(struct sched_collector *c)
{
	struct khbpf_wait_fold held = { .owner = KHBPF_FOLD_TAKING };
	uint32_t i;
	int err;

	for (i = c->wait_folds; c->wait_folds && i < KHBPF_WAIT_FOLDS; i++) {
		err = bpf_map__update_elem(c->skel->maps.wait_folds, &i, sizeof(i), &held,
					   sizeof(held), BPF_ANY);
		if (err)
			return err;
	}
	return 0;
}

/*
 * The span ring buffer, and how often its reader is woken: every eighth of
 * it, so that the loader has seven eighths' worth of records' time to be
 * scheduled before one is dropped (counted in span_ringbuf_drops). A
 * wakeup costs more than the rest of a span, hence not one per record.
 */
static int span_ring_configure(struct sched_collector *c, uint32_t bytes)
{
	size_t rec =
		(c->nr_counters ? sizeof(struct khbpf_span_event) : KHBPF_SPAN_EVENT_NOHW_SIZE) +
		BPF_RINGBUF_HDR_SZ;
	uint32_t n = 1;

	if (!bytes)
		bytes = KHBPF_SPAN_RINGBUF_BYTES;
	if (bytes < KHBPF_SPAN_RINGBUF_MIN || bytes > KHBPF_SPAN_RINGBUF_MAX ||
	    (bytes & (bytes - 1)))
		return -EINVAL;
	while (2 * n * rec <= bytes / 8)
		n *= 2;
	c->skel->rodata->span_wakeup_mask = n - 1;
	c->span_ringbuf_bytes = bytes;
	return bpf_map__set_max_entries(c->skel->maps.span_events, bytes);
}

/* The blocking cause of each system call (user/document/blockcause.c), for block_cause(). */
static int syscall_causes_fill(struct sched_collector *c)
{
	uint32_t nr, v;
	int err;

	if (!c->blocked)
		return 0;
	for (nr = 0; nr < KHBPF_SYSCALL_NR_MAX; nr++) {
		v = blockcause__syscall(nr);
		err = bpf_map__update_elem(c->skel->maps.syscall_cause, &nr, sizeof(nr), &v,
					   sizeof(v), BPF_ANY);
		if (err)
			return err;
	}
	return 0;
}

/* Program variants and fallbacks for this kernel: one of each pair is loaded. */
static int configure_variant(struct sched_collector *c, const struct sched_collector_opts *opts)
{
	struct sched_bpf *skel = c->skel;
	struct sched_variant v;
	uint32_t tasks = opts && opts->max_tasks ? opts->max_tasks : KHBPF_DEFAULT_MAX_TASKS;
	bool spans = opts && opts->spans;
	int err = 0;

	kfeatures__detect(&c->feat, true);
	sched_variant__select(&c->feat, &v);
	if (opts && opts->task_hashes)
		v.task_storage = false;
	if (opts && opts->prealloc)
		v.mem_alloc = false;
	c->task_storage = v.task_storage;
	c->mem_alloc = v.mem_alloc;
	skel->rodata->use_task_storage = v.task_storage;
	skel->rodata->have_task_btf = v.task_btf;
	skel->rodata->have_cookie = v.attach_cookie;
	skel->rodata->have_preempt_kfuncs = c->feat.have[KFEAT_PREEMPT_KFUNCS];
	bpf_program__set_autoload(skel->progs.khbpf_span_enter, v.atomic_fetch);
	bpf_program__set_autoload(skel->progs.khbpf_span_exit, v.atomic_fetch);
	bpf_program__set_autoload(skel->progs.khbpf_span_enter_nofetch, !v.atomic_fetch);
	bpf_program__set_autoload(skel->progs.khbpf_span_exit_nofetch, !v.atomic_fetch);
	bpf_program__set_autoload(skel->progs.khbpf_span_close,
				  spans && opts->span_close && v.atomic_fetch);
	bpf_program__set_autoload(skel->progs.khbpf_span_close_nofetch,
				  spans && opts->span_close && !v.atomic_fetch);
	bpf_program__set_autoload(skel->progs.khbpf_usdt_hit, spans && opts->usdt_hits);
	/*
	 * A program takes one kind of link: the uprobe_multi attach type is
	 * checked at link creation (bpf_prog_attach_check_attach_type()), so
	 * it is chosen here, before load, for every span site.
	 */
	/*
	 * Following a set's execs, sites are attached after the privilege drop:
	 * a uprobe_multi link needs no perf event (perf_uprobe_event_init()
	 * refuses one without CAP_SYS_ADMIN here, CAP_PERFMON or not).
	 */
	c->span_multi = spans && v.uprobe_multi && opts->span_links != SCHED_SPAN_LINKS_PER_SITE &&
			(opts->span_links == SCHED_SPAN_LINKS_MULTI ||
			 opts->span_sites >= SCHED_SPAN_MULTI_MIN_SITES ||
			 (opts->span_per_file && opts->on_exec));
	c->span_close = spans && opts->span_close;
	c->usdt_hits = spans && opts->usdt_hits;
	c->keys = spans && opts->keys;
	skel->rodata->keys_enabled = c->keys;
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
		err = err ?: bpf_program__set_expected_attach_type(skel->progs.khbpf_span_close, t);
		err = err   ?:
			      bpf_program__set_expected_attach_type(
				      skel->progs.khbpf_span_close_nofetch, t);
		err = err ?: bpf_program__set_expected_attach_type(skel->progs.khbpf_usdt_hit, t);
	}
	if (libbpf_num_possible_cpus() > 0)
		skel->rodata->nr_slot_cpus = (uint32_t)libbpf_num_possible_cpus();
	skel->rodata->walk_hidden_tgid = walk_hidden_tgid();
	skel->rodata->test_skip_switch_ins = test_skip_switch_ins();
	/*
	 * A set kept in task storage has its own sched_switch program, which
	 * ends a non-target's switch before touching any map (sched.bpf.c).
	 */
	c->set_switch = c->set_mode && v.task_storage && !(opts && opts->generic_switch);
	/* ... and the default configuration of run and attach, one with none of it to read. */
	c->plain_switch = c->set_switch && c->set_mode != KHBPF_SET_CGROUP && c->sched_info &&
			  !(opts && (opts->bpf_timed_waits || opts->spans || opts->blocked ||
				     opts->wakers || opts->group_by));
	/* Its wait folds are taken with a compare-and-swap (BPF_ATOMIC, as fetch-and-add). */
	c->wait_folds =
		c->plain_switch && c->storage_cache && v.atomic_fetch ? wait_folds_wanted() : 0;
	skel->rodata->wait_folds_enabled = c->wait_folds > 0;
	err = err   ?:
		      bpf_map__set_max_entries(skel->maps.wait_folds,
					       c->wait_folds ? KHBPF_WAIT_FOLDS : 1);
	bpf_program__set_autoload(skel->progs.khbpf_sched_switch,
				  !c->set_switch && v.switch_prev_state);
	bpf_program__set_autoload(skel->progs.khbpf_sched_switch_nostate,
				  !c->set_switch && !v.switch_prev_state);
	bpf_program__set_autoload(skel->progs.khbpf_sched_switch_set,
				  c->set_switch && !c->plain_switch && v.switch_prev_state);
	bpf_program__set_autoload(skel->progs.khbpf_sched_switch_set_nostate,
				  c->set_switch && !c->plain_switch && !v.switch_prev_state);
	bpf_program__set_autoload(skel->progs.khbpf_sched_switch_plain,
				  c->plain_switch && !c->wait_folds && v.switch_prev_state);
	bpf_program__set_autoload(skel->progs.khbpf_sched_switch_plain_nostate,
				  c->plain_switch && !c->wait_folds && !v.switch_prev_state);
	bpf_program__set_autoload(skel->progs.khbpf_sched_switch_plain_folds,
				  c->wait_folds && v.switch_prev_state);
	bpf_program__set_autoload(skel->progs.khbpf_sched_switch_plain_folds_nostate,
				  c->wait_folds && !v.switch_prev_state);
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
		if (v.mem_alloc) {
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

/*
 * The set's maps and programs: `procs` holds --max-processes records,
 * allocated as processes join where the kernel allows it; without a set
 * both maps stay at one entry and the set's programs are not loaded.
 */
/*
 * serve's span series (group_by with spans): the (group, metric) table
 * and the metrics' spills, and nothing per thread or per call: the
 * per-thread aggregates and hit counts stay at one entry, the span ring
 * buffer at one page. Elsewhere the series maps take one entry each.
 */
static int span_series_configure(struct sched_collector *c, const struct sched_collector_opts *opts,
				 bool mem_alloc)
{
	int err = 0;

	bpf_program__set_autoload(c->skel->progs.khbpf_iter_open_series,
				  opts && opts->group_by && opts->spans);
	if (!opts || !opts->group_by || !opts->spans) {
		err = err ?: bpf_map__set_max_entries(c->skel->maps.span_series, 1);
		err = err ?: bpf_map__set_max_entries(c->skel->maps.span_series_spill, 1);
		return err ?: bpf_map__set_map_flags(c->skel->maps.span_series, 0);
	}
	if (opts->max_span_series > KHBPF_MAX_SPAN_SERIES)
		return -EINVAL;
	err = err   ?:
		      bpf_map__set_max_entries(c->skel->maps.span_series,
					       opts->max_span_series ?: KHBPF_DEFAULT_SPAN_SERIES);
	/* Tracing programs that cannot allocate (5.10) need it preallocated. */
	if (!mem_alloc)
		err = err ?: bpf_map__set_map_flags(c->skel->maps.span_series, 0);
	err = err ?: bpf_map__set_max_entries(c->skel->maps.span_agg, 1);
	err = err ?: bpf_map__set_map_flags(c->skel->maps.span_agg, 0);
	err = err ?: bpf_map__set_max_entries(c->skel->maps.usdt_hits, 1);
	err = err ?: bpf_map__set_map_flags(c->skel->maps.usdt_hits, 0);
	err = err ?: bpf_map__set_max_entries(c->skel->maps.span_events, 4096);
	c->span_ringbuf_bytes = 0; /* no records */
	return err;
}

static int targets_configure(struct sched_collector *c, const struct sched_collector_opts *opts,
			     bool mem_alloc)
{
	struct sched_bpf *skel = c->skel;
	bool set = c->set_mode != KHBPF_SET_NONE, cg = c->set_mode == KHBPF_SET_CGROUP;
	int err = 0;

	/* A set of the roots alone never holds more processes than there can be roots. */
	c->max_processes = !set				 ? 1 :
			   opts && opts->max_processes	 ? opts->max_processes :
			   c->set_mode == KHBPF_SET_PIDS ? KHBPF_MAX_TARGETS :
							   KHBPF_DEFAULT_MAX_PROCESSES;
	bpf_program__set_autoload(skel->progs.khbpf_sched_process_fork, set);
	bpf_program__set_autoload(skel->progs.khbpf_sched_wakeup_new_join, set);
	bpf_program__set_autoload(skel->progs.khbpf_iter_join, set);
	bpf_program__set_autoload(skel->progs.khbpf_cgroup_attach_task, cg);
	err = bpf_map__set_max_entries(skel->maps.procs, c->max_processes);
	if (set && mem_alloc)
		err = err ?: bpf_map__set_map_flags(skel->maps.procs, BPF_F_NO_PREALLOC);
	err = err ?: bpf_map__set_max_entries(skel->maps.moved_base, cg ? KHBPF_MAX_MOVED : 1);
	if (cg && mem_alloc)
		err = err ?: bpf_map__set_map_flags(skel->maps.moved_base, BPF_F_NO_PREALLOC);
	return err;
}

int sched_collector__open(struct sched_collector **out, const struct sched_collector_opts *opts)
{
	struct sched_collector *c;
	uint32_t nr_cpus = 1;
	bool kernel_waits, mem_alloc, rq_clock;
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
	c->set_mode = opts ? opts->set_mode : KHBPF_SET_NONE;
	/* Targets named by add_target (serve --pid; callers that give no set): those processes. */
	if (!c->set_mode && !(opts && (opts->trace_all || opts->nr_cgroups)))
		c->set_mode = KHBPF_SET_PIDS;
	c->skel->rodata->set_mode = c->set_mode;
	kernel_btf_facts(&c->sched_info, &rq_clock, &c->storage_cache);
	err = configure_variant(c, opts);
	if (err)
		goto cleanup;
	mem_alloc = c->mem_alloc;
	kernel_waits = c->sched_info && !(opts && opts->bpf_timed_waits);
	c->skel->rodata->kernel_queue_ts = kernel_waits;
	/*
	 * Blocked time needs the kernel's run_delay and the runqueue clock it
	 * is kept on; serve sums it per group, without wakers.
	 */
	c->blocked_asked = opts && (opts->blocked || opts->wakers);
	c->blocked = kernel_waits && rq_clock && c->blocked_asked;
	/* Serve sums blocked time per group, without wakers. */
	c->wakers = c->blocked && opts->wakers && !opts->group_by;
	c->skel->rodata->blocked_enabled = c->blocked;
	c->span_causes = c->blocked && opts->spans && opts->span_causes;
	c->skel->rodata->span_causes_enabled = c->span_causes;
	c->skel->rodata->wakers_enabled = c->wakers;
	bpf_program__set_autoload(c->skel->progs.khbpf_sched_waking, c->wakers);
	bpf_program__set_autoload(c->skel->progs.khbpf_hrtimer_expire_entry, c->wakers);
	bpf_program__set_autoload(c->skel->progs.khbpf_hrtimer_expire_exit, c->wakers);
	bpf_program__set_autoload(c->skel->progs.khbpf_timer_expire_entry, c->wakers);
	bpf_program__set_autoload(c->skel->progs.khbpf_timer_expire_exit, c->wakers);
	bpf_program__set_autoload(c->skel->progs.khbpf_irq_handler_entry, c->wakers);
	bpf_program__set_autoload(c->skel->progs.khbpf_irq_handler_exit, c->wakers);
	bpf_program__set_autoload(c->skel->progs.khbpf_softirq_entry, c->wakers);
	bpf_program__set_autoload(c->skel->progs.khbpf_softirq_exit, c->wakers);
	if (!c->wakers) {
		err = bpf_map__set_max_entries(c->skel->maps.wakers, 1);
	} else {
		err = bpf_map__set_max_entries(c->skel->maps.wakers,
					       opts->max_wakers ? opts->max_wakers :
								  KHBPF_DEFAULT_MAX_WAKERS);
		/* Allocated as wakers are seen, where the kernel allows it. */
		if (mem_alloc)
			err = err   ?:
				      bpf_map__set_map_flags(c->skel->maps.wakers,
							     BPF_F_NO_PREALLOC);
	}
	if (err)
		goto cleanup;
	/*
	 * The kernel times every wait itself: no wakeup program needed, nor
	 * loaded (each loaded program holds its own pages: kernel_memory.sh).
	 */
	bpf_program__set_autoload(c->skel->progs.khbpf_sched_wakeup, !kernel_waits);
	bpf_program__set_autoload(c->skel->progs.khbpf_sched_wakeup_new, !kernel_waits);
	if (opts && opts->no_exit_program)
		bpf_program__set_autoattach(c->skel->progs.khbpf_sched_process_exit, false);
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
	if (opts && opts->nr_cgroups) {
		uint32_t i;

		if (opts->nr_cgroups > KHBPF_MAX_CGROUP_FILTERS) {
			err = -E2BIG;
			goto cleanup;
		}
		c->skel->rodata->nr_cgroup_filters = opts->nr_cgroups;
		for (i = 0; i < opts->nr_cgroups; i++) {
			c->skel->rodata->cgroup_filter_id[i] = opts->cgroup_ids[i];
			c->skel->rodata->cgroup_filter_level[i] = opts->cgroup_levels[i];
		}
	}
	if (opts && opts->group_by) {
		c->skel->rodata->group_by = opts->group_by;
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
	err = err ?: targets_configure(c, opts, mem_alloc);
	if (opts && opts->spans) {
		c->skel->rodata->spans_enabled = true;
		c->skel->rodata->span_filter = opts->span_per_file;
		c->follow_exec = opts->span_per_file && opts->on_exec;
		c->on_exec = opts->on_exec;
		c->skel->rodata->span_follow_exec = c->follow_exec;
		if (c->follow_exec)
			err = err   ?:
				      bpf_map__set_max_entries(c->skel->maps.set_events,
							       KHBPF_SET_EVENTS_BYTES);
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
		/* --key: keys made as seen where the kernel allows, else none at all. */
		if (!c->keys) {
			/* Arrays are allocated whole: without keys, one entry each. */
			err = err ?: bpf_map__set_max_entries(c->skel->maps.span_key_ids, 1);
			err = err ?: bpf_map__set_max_entries(c->skel->maps.span_site_args, 1);
			err = err ?: bpf_map__set_max_entries(c->skel->maps.span_key_conf, 1);
			err = err ?: bpf_map__set_max_entries(c->skel->maps.span_key_count, 1);
		} else if (mem_alloc) {
			err = err   ?:
				      bpf_map__set_map_flags(c->skel->maps.span_key_ids,
							     BPF_F_NO_PREALLOC);
		}
		/* --usdt counts: made as seen where the kernel allows, else none at all. */
		if (!c->usdt_hits)
			err = err ?: bpf_map__set_max_entries(c->skel->maps.usdt_hits, 1);
		else if (mem_alloc)
			err = err   ?:
				      bpf_map__set_map_flags(c->skel->maps.usdt_hits,
							     BPF_F_NO_PREALLOC);
		/* Who ended span metrics' blocked time: made as seen, where the kernel allows. */
		if (!c->wakers)
			err = err ?: bpf_map__set_max_entries(c->skel->maps.span_wakers, 1);
		else if (mem_alloc)
			err = err   ?:
				      bpf_map__set_map_flags(c->skel->maps.span_wakers,
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
		err = err ?: span_ring_configure(c, opts->span_buffer);
		if (c->nr_counters)
			err = err   ?:
				      bpf_map__set_max_entries(c->skel->maps.counters,
							       c->nr_counter_cpus *
								       KHBPF_NR_COUNTERS);
	} else {
		/* Without spans the span maps stay at one entry: no memory. */
		err = err ?: bpf_map__set_max_entries(c->skel->maps.span_agg, 1);
		err = err ?: bpf_map__set_max_entries(c->skel->maps.span_wakers, 1);
		err = err ?: bpf_map__set_max_entries(c->skel->maps.usdt_hits, 1);
		err = err ?: bpf_map__set_max_entries(c->skel->maps.span_key_ids, 1);
		err = err ?: bpf_map__set_max_entries(c->skel->maps.span_site_args, 1);
		err = err ?: bpf_map__set_max_entries(c->skel->maps.span_key_conf, 1);
		err = err ?: bpf_map__set_max_entries(c->skel->maps.span_key_count, 1);
		err = err ?: bpf_map__set_max_entries(c->skel->maps.span_events, 4096);
	}
	err = err ?: span_series_configure(c, opts, mem_alloc);
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
	err = err ?: syscall_causes_fill(c);
	err = err ?: wait_folds_fill(c);
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
	uint32_t *slots = c->skel->bss->target_slots, t = (uint32_t)tgid;
	uint32_t slot = khbpf_target_slot(t), i;

	if (tgid <= 0)
		return -EINVAL;
	for (i = 0; i < KHBPF_TARGET_PROBES; i++) {
		uint32_t *s = &slots[(slot + i) & (KHBPF_TARGET_SLOTS - 1)];

		if (*s == t)
			return 0;
		if (*s)
			continue;
		if (c->nr_targets == KHBPF_MAX_TARGETS)
			return -E2BIG;
		/* One aligned store: a program reading it sees 0 or the tgid. */
		__atomic_store_n(s, t, __ATOMIC_RELEASE);
		c->nr_targets++;
		return 0;
	}
	/* Eight taken slots in a row in a table at most 1/16 full: not seen, but bounded. */
	return -E2BIG;
}

int sched_collector__attach(struct sched_collector *c)
{
	int err;

	/* No baseline was taken: the roots join now, with nothing stamped (as run's command). */
	if (c->set_mode && !c->joined) {
		struct thread_table t = { 0 };
		size_t n;

		err = sched_collector__attach_set(c);
		err = err ?: sched_collector__join(c, 2, &t, &n);
		thread_table__free(&t);
		if (err)
			return err;
	}

	/* Iterators run on demand; span probes attach per site. */
	bpf_program__set_autoattach(c->skel->progs.khbpf_iter_task, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_iter_open_spans, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_iter_open_series, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_span_enter, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_span_exit, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_span_enter_nofetch, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_span_exit_nofetch, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_span_close, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_span_close_nofetch, false);
	bpf_program__set_autoattach(c->skel->progs.khbpf_usdt_hit, false);
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

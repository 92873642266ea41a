// SPDX-License-Identifier: MIT
/*
 * Reading what a loaded collector holds: the task iterators' thread
 * records, the exited map, cgroup groups, and the programs' own run
 * statistics. See sched_collector.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sched.skel.h"
#include "collect/sched_collector.h"
#include "collect/bpfdump.h"
#include "collect/sched_collector_priv.h"
#include "collect/sched_variant.h"
#include "collect/thread_table.h"

int sched_collector__baseline(struct sched_collector *c, struct thread_table *out)
{
	size_t joined;
	int err;

	if (c->set_mode) {
		memset(out, 0, sizeof(*out));
		err = sched_collector__attach_set(c);
		return err ?: sched_collector__join(c, 1, out, &joined);
	}
	c->skel->bss->iter_init_state = 1;
	err = sched_collector__snapshot(c, out);
	c->skel->bss->iter_init_state = 0;
	return err;
}

int sched_collector__mark_stretches(struct sched_collector *c)
{
	struct thread_table t = { 0 };
	size_t joined;
	int err;

	if (c->set_mode) {
		err = sched_collector__attach_set(c);
		err = err ?: sched_collector__join(c, 2, &t, &joined);
		thread_table__free(&t);
		return err;
	}
	if (!c->blocked)
		return 0;
	c->skel->bss->iter_init_state = 2;
	err = sched_collector__snapshot(c, &t);
	c->skel->bss->iter_init_state = 0;
	thread_table__free(&t);
	return err;
}

int sched_collector__snapshot(struct sched_collector *c, struct thread_table *out)
{
	void *recs;
	int err;

	memset(out, 0, sizeof(*out));
	err = bpfdump__iter(c->skel->progs.khbpf_iter_task, sizeof(*out->recs), &recs, &out->nr);
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
		err = thread_table__push(out, &cap, &rec);
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
 * Runs of sched_process_exit's program the kernel skipped (its
 * recursion_misses: a preempted run on the same CPU). Each skipped target
 * thread's record is made at its final switch instead; any exiting task's
 * skip counts here, a target's or not.
 */
static uint64_t exit_prog_misses(struct sched_collector *c)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_program__fd(c->skel->progs.khbpf_sched_process_exit);

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    len < offsetof(struct bpf_prog_info, recursion_misses) + sizeof(info.recursion_misses))
		return 0;
	return info.recursion_misses;
}

/*
 * A thread is reaped (and its process can look exited) before its final
 * __schedule() runs, so wait briefly for the final switch to refresh each
 * record, and to count the records it could not keep (exits_begun ahead of
 * exits_ended); a record that never gets it keeps its sched_process_exit
 * values.
 * Where the kernel skipped exit programs, a record may not exist until that
 * switch: then also wait, as long, until as many were made there as were
 * skipped (fewer when the skipped tasks were not targets: the wait ends).
 */
int sched_collector__exited(struct sched_collector *c, struct thread_table *out)
{
	size_t not_final = 0;
	int err, tries;

	for (tries = 0;; tries++) {
		bool pending;

		err = read_exited(c, out, &not_final);
		pending = not_final || c->skel->bss->exits_made_at_final < exit_prog_misses(c) ||
			  c->skel->bss->exits_ended < c->skel->bss->exits_begun;
		if (err || !pending || tries == 200)
			break;
		thread_table__free(out);
		usleep(500);
	}
	c->not_final = not_final;
	return err;
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

	err = bpfdump__map(bpf_map__fd(c->skel->maps.groups), sizeof(struct khbpf_group_key),
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
	static const char *const variants[] = { "_plain_folds_nostate",
						"_set_nostate",
						"_plain_nostate",
						"_plain_folds",
						"_set",
						"_plain",
						"_nostate",
						"_nofetch" };
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
	out->exits_at_final = c->skel->bss->exits_made_at_final;
	out->iter_write_errors = c->skel->bss->iter_write_errors;
	out->exit_not_final = c->not_final;
	out->span_records = c->skel->bss->span_records;
	out->span_ringbuf_drops = c->skel->bss->span_ringbuf_drops;
	out->span_ringbuf_bytes = c->span_ringbuf_bytes;
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
	out->set_mode = c->set_mode;
	out->max_processes = c->max_processes;
	out->procs_overflow = c->skel->bss->procs_overflow;
	out->join_failures = c->skel->bss->join_failures;
	out->forks_joined_at_wakeup = c->skel->bss->forks_joined_at_wakeup;
	out->wait_folds_max = c->wait_folds;
	out->wait_folds_full = c->skel->bss->wait_folds_full;
	out->moved_base_overflow = c->skel->bss->moved_base_overflow;
	out->cgroup_moves_in = c->skel->bss->cgroup_moves_in;
	out->cgroup_rejoins = c->skel->bss->cgroup_rejoins;
	out->exec_events_dropped = c->skel->bss->exec_events_dropped;
	out->set_switch = c->set_switch;
	out->groups_made = c->skel->bss->groups_made;
	out->span_series_made = c->skel->bss->span_series_made;
	out->span_series_overflow = c->skel->bss->span_series_overflow;
	out->span_open_at_exit_serve = c->skel->bss->span_open_at_exit_serve;
	out->group_overflow = c->skel->bss->group_overflow;
	out->nr_counters = c->nr_counters;
	out->counters_err = c->counters_refused ? -E2BIG : c->counters_err;
	out->counters_refused = c->counters_refused;
	out->counter_cpus = c->counter_cpus;
	out->max_exited = c->max_exited;
	out->sched_info = c->sched_info;
	out->span_site_unresolved = c->skel->bss->span_site_unresolved;
	out->usdt_hits_lost = c->skel->bss->usdt_hits_lost;
	out->span_key_other_calls = c->skel->bss->span_key_other_calls;
	out->span_key_unreadable = c->skel->bss->span_key_unreadable;
	out->span_key_table_full = c->skel->bss->span_key_table_full;
	out->blocked_asked = c->blocked_asked;
	out->blocked = c->blocked;
	out->wakers = c->wakers;
	out->wakers_overflow = c->skel->bss->wakers_overflow;
	out->wakeups_unseen = c->skel->bss->wakeups_unseen;
	out->span_wakes_unlisted = c->skel->bss->span_wakes_unlisted;
	out->span_wakers_overflow = c->skel->bss->span_wakers_overflow;
	out->blocked_regs_unread = c->skel->bss->blocked_regs_unread;
	out->span_causes = c->span_causes;
	sched_variant__select(&c->feat, &out->variant);
	out->variant.uprobe_multi = c->span_multi;
	out->variant.task_storage = c->task_storage;
	out->variant.mem_alloc = c->mem_alloc;
	bpf_object__for_each_program(prog, c->skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		struct sched_prog_stats *s;

		if (out->nr_progs == SCHED_PROG_MAX || prog == c->skel->progs.khbpf_iter_task ||
		    prog == c->skel->progs.khbpf_iter_open_spans ||
		    prog == c->skel->progs.khbpf_iter_open_series ||
		    prog == c->skel->progs.khbpf_iter_join || bpf_program__fd(prog) < 0)
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

static int waker_cmp(const void *a, const void *b)
{
	const struct khbpf_waker_key *x = &((const struct waker_entry *)a)->key;
	const struct khbpf_waker_key *y = &((const struct waker_entry *)b)->key;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start_time != y->start_time)
		return x->start_time < y->start_time ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->waker_tid < y->waker_tid ? -1 : x->waker_tid > y->waker_tid;
}

/* A map's entries, sorted by cmp, into *out (malloc'd). */
static int dump_sorted(int fd, size_t key_size, size_t val_off, size_t rec_size,
		       int (*cmp)(const void *, const void *), void **out, size_t *nr)
{
	int err = bpfdump__map(fd, key_size, val_off, rec_size, out, nr);

	if (!err && *nr)
		qsort(*out, *nr, rec_size, cmp);
	return err;
}

int sched_collector__wakers(struct sched_collector *c, struct waker_entry **out, size_t *nr)
{
	*out = NULL;
	*nr = 0;
	if (!c->wakers)
		return 0;
	return dump_sorted(bpf_map__fd(c->skel->maps.wakers), sizeof(struct khbpf_waker_key),
			   offsetof(struct waker_entry, val), sizeof(**out), waker_cmp,
			   (void **)out, nr);
}

int sched_collector__span_waker_cmp(const void *a, const void *b)
{
	const struct khbpf_span_waker_key *x = &((const struct span_waker_entry *)a)->key;
	const struct khbpf_span_waker_key *y = &((const struct span_waker_entry *)b)->key;

	if (x->metric != y->metric)
		return x->metric < y->metric ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->waker_tid < y->waker_tid ? -1 : x->waker_tid > y->waker_tid;
}

int sched_collector__span_wakers(struct sched_collector *c, struct span_waker_entry **out,
				 size_t *nr)
{
	*out = NULL;
	*nr = 0;
	if (!c->wakers || !c->skel->rodata->spans_enabled)
		return 0;
	return dump_sorted(bpf_map__fd(c->skel->maps.span_wakers),
			   sizeof(struct khbpf_span_waker_key),
			   offsetof(struct span_waker_entry, val), sizeof(**out),
			   sched_collector__span_waker_cmp, (void **)out, nr);
}

bool sched_collector__blocked(const struct sched_collector *c)
{
	return c->blocked;
}

bool sched_collector__has_wakers(const struct sched_collector *c)
{
	return c->wakers;
}

bool sched_collector__blocked_asked(const struct sched_collector *c)
{
	return c->blocked_asked;
}

void sched_collector__span_agg_add(struct khbpf_span_agg *d, const struct khbpf_span_agg *a)
{
	size_t i;

	d->calls += a->calls;
	d->inclusive_ns += a->inclusive_ns;
	d->exclusive_ns += a->exclusive_ns;
	d->ledger.on_cpu_ns += a->ledger.on_cpu_ns;
	d->ledger.run_delay_ns += a->ledger.run_delay_ns;
	d->ledger.nvcsw += a->ledger.nvcsw;
	d->ledger.nivcsw += a->ledger.nivcsw;
	d->ledger.migrations += a->ledger.migrations;
	d->ledger.offcpu_ns += a->ledger.offcpu_ns;
	for (i = 0; i < KHBPF_BLOCK_CAUSES; i++) {
		d->ledger.blocked.ns[i] += a->ledger.blocked.ns[i];
		d->ledger.blocked.count[i] += a->ledger.blocked.count[i];
	}
	d->clock_gap_calls += a->clock_gap_calls;
	d->hw_calls += a->hw_calls;
	for (i = 0; i < KHBPF_NR_COUNTERS; i++)
		d->hw_sum[i] += a->hw_sum[i];
	for (i = 0; i < KHBPF_RQ_SLOTS; i++)
		d->hist[i] += a->hist[i];
}

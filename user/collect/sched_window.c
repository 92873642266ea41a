// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collect/sched_window.h"

static uint64_t sub_sat(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void counters_delta(struct khbpf_task_counters *d, const struct khbpf_task_counters *end,
			   const struct khbpf_task_counters *start)
{
	d->nvcsw = sub_sat(end->nvcsw, start->nvcsw);
	d->nivcsw = sub_sat(end->nivcsw, start->nivcsw);
	d->nr_migrations = sub_sat(end->nr_migrations, start->nr_migrations);
	d->sum_exec_runtime = sub_sat(end->sum_exec_runtime, start->sum_exec_runtime);
	d->run_delay = sub_sat(end->run_delay, start->run_delay);
	d->pcount = sub_sat(end->pcount, start->pcount);
}

void sched_window__counters_add(struct khbpf_task_counters *t, const struct khbpf_task_counters *d)
{
	t->nvcsw = add_sat(t->nvcsw, d->nvcsw);
	t->nivcsw = add_sat(t->nivcsw, d->nivcsw);
	t->nr_migrations = add_sat(t->nr_migrations, d->nr_migrations);
	t->sum_exec_runtime = add_sat(t->sum_exec_runtime, d->sum_exec_runtime);
	t->run_delay = add_sat(t->run_delay, d->run_delay);
	t->pcount = add_sat(t->pcount, d->pcount);
}

void sched_window__bpf_add(struct khbpf_task_bpf *t, const struct khbpf_task_bpf *b)
{
	int i;

	t->wait_ns = add_sat(t->wait_ns, b->wait_ns);
	t->waits = add_sat(t->waits, b->waits);
	t->unbinned_ns = add_sat(t->unbinned_ns, b->unbinned_ns);
	t->unbinned_waits = add_sat(t->unbinned_waits, b->unbinned_waits);
	t->switch_ins = add_sat(t->switch_ins, b->switch_ins);
	t->migrations = add_sat(t->migrations, b->migrations);
	for (i = 0; i < KHBPF_MIG_CLASSES; i++)
		t->mig_class[i] = add_sat(t->mig_class[i], b->mig_class[i]);
	for (i = 0; i < KHBPF_RQ_SLOTS; i++)
		t->wait_hist[i] = add_sat(t->wait_hist[i], b->wait_hist[i]);
	for (i = 0; i < KHBPF_BLOCK_CAUSES; i++) {
		t->blocked.ns[i] = add_sat(t->blocked.ns[i], b->blocked.ns[i]);
		t->blocked.count[i] = add_sat(t->blocked.count[i], b->blocked.count[i]);
	}
	t->offcpu_unattributed_ns += b->offcpu_unattributed_ns;
	t->offcpu_unseen = add_sat(t->offcpu_unseen, b->offcpu_unseen);
}

/*
 * BPF's per-thread counts run from the thread's first look; a baseline that
 * had them (serve's later windows) is taken off. Attach baselines are zero.
 */
static void bpf_delta(struct khbpf_task_bpf *d, const struct khbpf_task_bpf *end,
		      const struct khbpf_task_bpf *start)
{
	int i;

	*d = *end;
	if (!start)
		return;
	d->wait_ns = sub_sat(end->wait_ns, start->wait_ns);
	d->waits = sub_sat(end->waits, start->waits);
	d->unbinned_ns = sub_sat(end->unbinned_ns, start->unbinned_ns);
	d->unbinned_waits = sub_sat(end->unbinned_waits, start->unbinned_waits);
	d->switch_ins = sub_sat(end->switch_ins, start->switch_ins);
	d->migrations = sub_sat(end->migrations, start->migrations);
	for (i = 0; i < KHBPF_MIG_CLASSES; i++)
		d->mig_class[i] = sub_sat(end->mig_class[i], start->mig_class[i]);
	for (i = 0; i < KHBPF_RQ_SLOTS; i++)
		d->wait_hist[i] = sub_sat(end->wait_hist[i], start->wait_hist[i]);
	for (i = 0; i < KHBPF_BLOCK_CAUSES; i++) {
		d->blocked.ns[i] = sub_sat(end->blocked.ns[i], start->blocked.ns[i]);
		d->blocked.count[i] = sub_sat(end->blocked.count[i], start->blocked.count[i]);
	}
	d->offcpu_unattributed_ns = end->offcpu_unattributed_ns - start->offcpu_unattributed_ns;
	d->offcpu_unseen = sub_sat(end->offcpu_unseen, start->offcpu_unseen);
}

static int push(struct sched_window *w, size_t *cap, const struct window_thread *t,
		size_t max_threads)
{
	if (max_threads && w->nr_threads >= max_threads) {
		w->dropped_threads++;
		return 0;
	}
	if (w->nr_threads == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct window_thread *grown = realloc(w->threads, ncap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		w->threads = grown;
		*cap = ncap;
	}
	w->threads[w->nr_threads++] = *t;
	return 0;
}

static int key_cmp(uint32_t tid_a, uint64_t st_a, uint32_t tid_b, uint64_t st_b)
{
	if (tid_a != tid_b)
		return tid_a < tid_b ? -1 : 1;
	return st_a < st_b ? -1 : st_a > st_b;
}

/*
 * Merge the three sorted tables by identity. For each thread the end state
 * is its exit record when it has one (taken at its final switch-out), else
 * its live record at the end; the start state is its baseline record, or
 * zero when it was born inside the window.
 */
int sched_window__compute(struct sched_window *w, const struct window_opts *o)
{
	static const struct thread_table empty;
	const struct thread_table *base = o->baseline ? o->baseline : &empty;
	const struct thread_table *end = o->end ? o->end : &empty;
	const struct thread_table *ex = o->exited ? o->exited : &empty;
	size_t ib = 0, ie = 0, ix = 0, cap = 0;
	int err = 0;

	memset(w, 0, sizeof(*w));
	while (ib < base->nr || ie < end->nr || ix < ex->nr) {
		const struct khbpf_thread_rec *b = NULL, *e = NULL, *x = NULL, *first = NULL;
		const struct khbpf_thread_rec *fin;
		struct khbpf_task_counters zero = { 0 };
		struct window_thread t;

		/* The smallest identity among the three heads. */
		if (ib < base->nr)
			first = &base->recs[ib];
		if (ie < end->nr && (!first || key_cmp(end->recs[ie].tid, end->recs[ie].start_time,
						       first->tid, first->start_time) < 0))
			first = &end->recs[ie];
		if (ix < ex->nr && (!first || key_cmp(ex->recs[ix].tid, ex->recs[ix].start_time,
						      first->tid, first->start_time) < 0))
			first = &ex->recs[ix];
		if (ib < base->nr && !key_cmp(base->recs[ib].tid, base->recs[ib].start_time,
					      first->tid, first->start_time))
			b = &base->recs[ib++];
		if (ie < end->nr && !key_cmp(end->recs[ie].tid, end->recs[ie].start_time,
					     first->tid, first->start_time))
			e = &end->recs[ie++];
		if (ix < ex->nr && !key_cmp(ex->recs[ix].tid, ex->recs[ix].start_time, first->tid,
					    first->start_time))
			x = &ex->recs[ix++];

		memset(&t, 0, sizeof(t));
		t.tid = first->tid;
		t.start_time = first->start_time;
		t.tgid = first->tgid;
		t.proc_start_time = first->proc_start_time;
		fin = x ? x : e;
		if (!b && o->baseline && first->start_time < o->start_boot_ns) {
			/* Alive before the window yet missing from its start: no delta. */
			w->threads_without_baseline++;
			continue;
		}
		t.born = !b;
		if (!fin && (b->flags & KHBPF_REC_ZOMBIE)) {
			/* Exited before the window (a main thread after pthread_exit), reaped in it. */
			fin = b;
		}
		if (!fin) {
			/* In the baseline, then gone without an exit record. */
			memcpy(t.comm, b->comm, sizeof(t.comm));
			t.exited = true;
			t.vanished = true;
			w->vanished_threads++;
			w->exited_threads++;
			err = push(w, &cap, &t, o->max_threads);
			if (err)
				break;
			continue;
		}
		memcpy(t.comm, fin->comm, sizeof(t.comm));
		t.tgid = fin->tgid;
		/* Left the set's cgroups: counted up to then, alive or not now. */
		t.left = x && (x->flags & KHBPF_REC_LEFT);
		/* A zombie at the end has exited too; !e: fin is the zombie's baseline. */
		t.exited = !t.left && (x || !e || (e->flags & KHBPF_REC_ZOMBIE));
		if (o->exited && !x && e && (e->flags & KHBPF_REC_ZOMBIE) &&
		    !(b && (b->flags & KHBPF_REC_ZOMBIE))) {
			/*
			 * It exited in the window (not a zombie already at its start, as
			 * a leader after pthread_exit): its final counters, though its
			 * exit record did not fit.
			 */
			w->overflowed_listed++;
		}
		t.has_bpf = fin->flags & KHBPF_REC_HAS_STATE;
		counters_delta(&t.delta, &fin->k, b ? &b->k : &zero);
		bpf_delta(&t.bpf, &fin->b, b && (b->flags & KHBPF_REC_HAS_STATE) ? &b->b : NULL);
		t.end_runtime = fin->k.sum_exec_runtime;
		if (t.exited)
			w->exited_threads++;
		if (t.left)
			w->left_threads++;
		if (t.born)
			w->born_threads++;
		sched_window__counters_add(&w->total, &t.delta);
		if (t.has_bpf)
			sched_window__bpf_add(&w->total_bpf, &t.bpf);
		err = push(w, &cap, &t, o->max_threads);
		if (err)
			break;
	}
	if (err)
		sched_window__free(w);
	return err;
}

void sched_window__free(struct sched_window *w)
{
	free(w->threads);
	w->threads = NULL;
	w->nr_threads = 0;
}

uint64_t rq_slot__lower(unsigned int slot)
{
	return slot == 0 ? 0 : 1ULL << slot;
}

uint64_t rq_slot__upper(unsigned int slot)
{
	if (slot >= KHBPF_RQ_SLOTS - 1)
		return UINT64_MAX;
	return (1ULL << (slot + 1)) - 1;
}

size_t sched_window__first_tid(const struct sched_window *w, uint32_t tid)
{
	size_t lo = 0, hi = w->nr_threads, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (w->threads[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collect/proc_window.h"

static int id_cmp(uint32_t pid_a, uint64_t st_a, uint32_t pid_b, uint64_t st_b)
{
	if (pid_a != pid_b)
		return pid_a < pid_b ? -1 : 1;
	return st_a < st_b ? -1 : st_a > st_b;
}

static int exe_cmp(const void *a, const void *b)
{
	const struct proc_exe *x = a, *y = b;

	return id_cmp(x->pid, x->start_time, y->pid, y->start_time);
}

void proc_exes__sort(struct proc_exe *v, size_t nr)
{
	if (nr)
		qsort(v, nr, sizeof(*v), exe_cmp);
}

const struct proc_exe *proc_exes__find(const struct proc_exe *v, size_t nr, uint32_t pid,
				       uint64_t start_time)
{
	struct proc_exe key = { .pid = pid, .start_time = start_time };

	return nr ? bsearch(&key, v, nr, sizeof(*v), exe_cmp) : NULL;
}

void proc_exes__free(struct proc_exe *v, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(v[i].path);
	free(v);
}

static int title_cmp(const void *a, const void *b)
{
	const struct proc_title *x = a, *y = b;

	return id_cmp(x->pid, x->start_time, y->pid, y->start_time);
}

void proc_titles__sort(struct proc_title *v, size_t nr)
{
	if (nr)
		qsort(v, nr, sizeof(*v), title_cmp);
}

const struct proc_title *proc_titles__find(const struct proc_title *v, size_t nr, uint32_t pid,
					   uint64_t start_time)
{
	struct proc_title key = { .pid = pid, .start_time = start_time };

	return nr ? bsearch(&key, v, nr, sizeof(*v), title_cmp) : NULL;
}

void proc_titles__free(struct proc_title *v, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++) {
		proctitle__free(&v[i].join);
		proctitle__free(&v[i].end);
	}
	free(v);
}

/* The window has the thread whose id is pid (a leader) of that process. */
static bool leader_listed(const struct sched_window *w, uint32_t pid, uint64_t start_time)
{
	size_t lo = sched_window__first_tid(w, pid);

	for (; lo < w->nr_threads && w->threads[lo].tid == pid; lo++)
		if (w->threads[lo].proc_start_time == start_time)
			return true;
	return false;
}

static int proc_cmp(const void *a, const void *b)
{
	const struct window_process *x = a, *y = b;

	return id_cmp(x->pid, x->start_time, y->pid, y->start_time);
}

static struct window_process *find(struct proc_window *pw, uint32_t pid, uint64_t start_time)
{
	struct window_process key = { .pid = pid, .start_time = start_time };

	return pw->nr ? bsearch(&key, pw->procs, pw->nr, sizeof(key), proc_cmp) : NULL;
}

/*
 * What p ran: its own exec in the window (the kernel kept the path), else
 * what was read while it lived, else, forked without exec, what the
 * process it was forked from ran then (its exec's path, copied at the
 * fork, or what was read for it).
 */
static void pick_exe(struct window_process *p, const struct proc_window_opts *o)
{
	const struct proc_exe *e;

	if (p->have_rec && p->rec.exec_path[0] && (p->rec.flags & KHBPF_PROC_EXECED)) {
		p->rec.exec_path[sizeof(p->rec.exec_path) - 1] = '\0';
		p->exe = p->rec.exec_path;
		return;
	}
	e = proc_exes__find(o->exes, o->nr_exes, p->pid, p->start_time);
	if (e) {
		p->exe = e->path;
		p->exe_read = true;
		return;
	}
	if (!p->have_rec)
		return;
	if (p->rec.exec_path[0]) {
		p->rec.exec_path[sizeof(p->rec.exec_path) - 1] = '\0';
		p->exe = p->rec.exec_path;
		return;
	}
	e = proc_exes__find(o->exes, o->nr_exes, p->rec.exe_tgid, p->rec.exe_start_time);
	if (e) {
		p->exe = e->path;
		p->exe_read = true;
	}
}

int proc_window__compute(struct proc_window *pw, const struct proc_window_opts *o)
{
	const struct sched_window *w = o->win;
	size_t cap = o->nr_procs + w->nr_threads + 1, i, j, *fill;
	struct window_process *p;

	memset(pw, 0, sizeof(*pw));
	pw->procs = calloc(cap, sizeof(*pw->procs));
	pw->thread_index = calloc(w->nr_threads + 1, sizeof(*pw->thread_index));
	pw->proc_of_thread = calloc(w->nr_threads + 1, sizeof(*pw->proc_of_thread));
	fill = calloc(cap, sizeof(*fill));
	if (!pw->procs || !pw->thread_index || !pw->proc_of_thread || !fill) {
		free(fill);
		proc_window__free(pw);
		return -ENOMEM;
	}
	for (i = 0; i < o->nr_procs; i++) {
		/* Forked after the end was read, and none of it in the window: not in it. */
		if (o->end_mono_ns && o->procs[i].rec.join_ns > o->end_mono_ns &&
		    !leader_listed(w, o->procs[i].key.pid, o->procs[i].key.start_time))
			continue;
		p = &pw->procs[pw->nr++];
		p->pid = o->procs[i].key.pid;
		p->start_time = o->procs[i].key.start_time;
		p->have_rec = true;
		p->rec = o->procs[i].rec;
	}
	qsort(pw->procs, pw->nr, sizeof(*pw->procs), proc_cmp);
	/* Processes known only from their threads (the /proc fallback; a record not kept). */
	for (i = 0, j = pw->nr; i < w->nr_threads; i++) {
		const struct window_thread *t = &w->threads[i];
		size_t k;
		bool seen = find(pw, t->tgid, t->proc_start_time) != NULL;

		for (k = pw->nr; !seen && k < j; k++)
			seen = pw->procs[k].pid == t->tgid &&
			       pw->procs[k].start_time == t->proc_start_time;
		if (seen)
			continue;
		pw->procs[j].pid = t->tgid;
		pw->procs[j].start_time = t->proc_start_time;
		j++;
	}
	pw->nr = j;
	qsort(pw->procs, pw->nr, sizeof(*pw->procs), proc_cmp);
	/* Each thread to its process, the sums, and the thread index by process. */
	for (i = 0; i < w->nr_threads; i++) {
		const struct window_thread *t = &w->threads[i];

		p = find(pw, t->tgid, t->proc_start_time);
		pw->proc_of_thread[i] = (size_t)(p - pw->procs);
		p->nr_threads++;
	}
	for (i = 0, j = 0; i < pw->nr; i++) {
		pw->procs[i].first_thread = j;
		fill[i] = j;
		j += pw->procs[i].nr_threads;
		pw->procs[i].all_bpf = true;
	}
	for (i = 0; i < w->nr_threads; i++) {
		const struct window_thread *t = &w->threads[i];

		p = &pw->procs[pw->proc_of_thread[i]];
		pw->thread_index[fill[pw->proc_of_thread[i]]++] = i;
		if (t->tid == p->pid || !p->comm[0])
			memcpy(p->comm, t->comm, sizeof(p->comm));
		if (t->vanished) {
			p->vanished_threads++;
			continue;
		}
		if (t->left)
			p->left = true;
		sched_window__counters_add(&p->total, &t->delta);
		if (t->has_bpf)
			sched_window__bpf_add(&p->total_bpf, &t->bpf);
		else
			p->all_bpf = false;
	}
	free(fill);
	for (i = 0; i < pw->nr; i++) {
		p = &pw->procs[i];
		if (!p->comm[0] && p->have_rec)
			memcpy(p->comm, p->rec.comm, sizeof(p->comm));
		p->born = (p->have_rec && (p->rec.flags & KHBPF_PROC_FORKED)) ||
			  (o->start_boot_ns && p->start_time >= o->start_boot_ns);
		if (p->have_rec) {
			p->exited = p->rec.flags & KHBPF_PROC_EXITED;
			p->left = p->left || (p->rec.flags & KHBPF_PROC_LEFT);
		} else {
			/* Known from its threads only: exited when every one of them did. */
			p->exited = p->nr_threads > 0;
			for (j = 0; j < p->nr_threads; j++)
				if (!w->threads[pw->thread_index[p->first_thread + j]].exited)
					p->exited = false;
		}
		pick_exe(p, o);
		p->title = proc_titles__find(o->titles, o->nr_titles, p->pid, p->start_time);
	}
	return 0;
}

void proc_window__free(struct proc_window *pw)
{
	free(pw->procs);
	free(pw->thread_index);
	free(pw->proc_of_thread);
	memset(pw, 0, sizeof(*pw));
}

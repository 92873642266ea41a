// SPDX-License-Identifier: MIT
/*
 * The target set of a loaded collector (include/khbpf/targets.h,
 * bpf/targets.bpf.c): the programs that keep it attached first, the walks
 * that find who was there before, and its processes read back. See
 * sched_collector.h.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sched.skel.h"
#include "collect/bpfdump.h"
#include "collect/sched_collector.h"
#include "collect/sched_collector_priv.h"

/* Puts prog on unless it is not loaded or not to be attached; the skeleton keeps the link. */
static int attach_one(struct bpf_program *prog, struct bpf_link **link)
{
	if (*link || bpf_program__fd(prog) < 0 || !bpf_program__autoattach(prog))
		return 0;
	*link = bpf_program__attach(prog);
	if (!*link) {
		int err = -errno;

		*link = NULL;
		return err;
	}
	return 0;
}

int sched_collector__attach_set(struct sched_collector *c)
{
	struct sched_bpf *s = c->skel;
	int err;

	if (!c->set_mode)
		return 0;
	/*
	 * sched_bpf__attach() leaves these as they are (their links are
	 * set), and sched_bpf__detach() takes them down with the rest.
	 */
	err = attach_one(s->progs.khbpf_sched_process_fork, &s->links.khbpf_sched_process_fork);
	err = err   ?:
		      attach_one(s->progs.khbpf_sched_wakeup_new_join,
				 &s->links.khbpf_sched_wakeup_new_join);
	err = err   ?:
		      attach_one(s->progs.khbpf_cgroup_attach_task,
				 &s->links.khbpf_cgroup_attach_task);
	err = err   ?:
		      attach_one(s->progs.khbpf_sched_process_exit,
				 &s->links.khbpf_sched_process_exit);
	err = err   ?:
		      attach_one(s->progs.khbpf_sched_process_exec,
				 &s->links.khbpf_sched_process_exec);
	if (!err)
		c->attached = true;
	return err;
}

/*
 * A walk that finds no one new ends the joining: every member's child
 * then either was forked from a member (the fork program took it) or was
 * there during that walk, which saw its parent in the set. Each walk takes
 * one pass over the host's tasks; a process tree can need one per level.
 */
#define JOIN_WALKS_MAX 64

int sched_collector__join(struct sched_collector *c, uint32_t how, struct thread_table *base,
			  size_t *joined)
{
	size_t cap = base->nr, i, n;
	int err = 0, walk;

	*joined = 0;
	if (!c->set_mode)
		return 0;
	c->skel->data->join_how = how;
	c->joined = true;
	c->moves_walked = c->skel->bss->cgroup_moves_in;
	for (walk = 0; walk < JOIN_WALKS_MAX; walk++) {
		struct khbpf_thread_rec *recs;

		err = bpfdump__iter(c->skel->progs.khbpf_iter_join, sizeof(*recs), (void **)&recs,
				    &n);
		if (err)
			break;
		for (i = 0; i < n && !err; i++)
			err = thread_table__push(base, &cap, &recs[i]);
		free(recs);
		*joined += n;
		if (err || !n)
			break;
	}
	c->skel->data->join_how = 1;
	if (!err && walk == JOIN_WALKS_MAX)
		err = -ELOOP;
	thread_table__sort(base);
	return err;
}

uint64_t sched_collector__procs_joined(const struct sched_collector *c)
{
	return c->set_mode ? c->skel->bss->procs_joined : 0;
}

bool sched_collector__join_pending(struct sched_collector *c)
{
	return c->set_mode == KHBPF_SET_CGROUP && c->skel->bss->cgroup_moves_in != c->moves_walked;
}

static int proc_cmp(const void *a, const void *b)
{
	const struct khbpf_proc_key *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start_time < y->start_time ? -1 : x->start_time > y->start_time;
}

int sched_collector__processes(struct sched_collector *c, struct proc_entry **out, size_t *nr)
{
	void *v;
	int err;

	*out = NULL;
	*nr = 0;
	if (!c->set_mode)
		return 0;
	err = bpfdump__map(bpf_map__fd(c->skel->maps.procs), sizeof(struct khbpf_proc_key),
			   offsetof(struct proc_entry, rec), sizeof(**out), &v, nr);
	if (err)
		return err;
	*out = v;
	if (*nr)
		qsort(*out, *nr, sizeof(**out), proc_cmp);
	return 0;
}

int sched_collector__moved_baselines(struct sched_collector *c, struct thread_table *out)
{
	struct khbpf_thread_rec *recs;
	struct {
		struct khbpf_thread_key key;
		struct khbpf_thread_rec rec;
	} * v;
	size_t nr, i;
	int err;

	memset(out, 0, sizeof(*out));
	if (c->set_mode != KHBPF_SET_CGROUP)
		return 0;
	err = bpfdump__map(bpf_map__fd(c->skel->maps.moved_base), sizeof(struct khbpf_thread_key),
			   sizeof(v->key), sizeof(*v), (void **)&v, &nr);
	if (err)
		return err;
	recs = malloc((nr ? nr : 1) * sizeof(*recs));
	if (!recs) {
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < nr; i++)
		recs[i] = v[i].rec;
	free(v);
	out->recs = recs;
	out->nr = nr;
	thread_table__sort(out);
	return 0;
}

int sched_collector__drain_processes(struct sched_collector *c)
{
	struct proc_entry *v;
	size_t nr, i;
	int fd, err;

	err = sched_collector__processes(c, &v, &nr);
	if (err)
		return err;
	fd = bpf_map__fd(c->skel->maps.procs);
	for (i = 0; i < nr; i++)
		if (v[i].rec.flags & KHBPF_PROC_EXITED)
			bpf_map_delete_elem(fd, &v[i].key);
	free(v);
	return 0;
}

bool sched_collector__follows_exec(const struct sched_collector *c)
{
	return c->follow_exec;
}

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collect/sched_collector.h"
#include "session/session_titles.h"

struct title_key {
	uint32_t pid;
	uint64_t start_time;
};

static int key_cmp(const void *a, const void *b)
{
	const struct title_key *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start_time < y->start_time ? -1 : x->start_time > y->start_time;
}

/* One read into *t, *done set: a title, or the gap that says why none. */
static void title_read(const struct session *s, uint32_t pid, struct proctitle *t, bool *done)
{
	proctitle__free(t);
	/* Out of memory: the gap "unavailable" it leaves is the truth. */
	proctitle__read(s->root, pid, t);
	*done = true;
}

/* The entry of (pid, start) among the first nr sorted ones, or NULL. */
static struct proc_title *entry_of(struct session *s, size_t nr, uint32_t pid, uint64_t start)
{
	const struct proc_title *e = proc_titles__find(s->titles, nr, pid, start);

	return e ? &s->titles[e - s->titles] : NULL;
}

/* Room for n more entries after s->nr_titles; false when there is none. */
static bool titles_reserve(struct session *s, size_t n)
{
	struct proc_title *grown;

	if (!n)
		return true;
	grown = realloc(s->titles, (s->nr_titles + n) * sizeof(*grown));
	if (!grown)
		return false;
	s->titles = grown;
	return true;
}

void session__read_titles(struct session *s, const struct thread_table *threads, bool at_end,
			  bool read_now)
{
	size_t i, m = 0, fresh = 0, old = s->nr_titles;
	struct title_key *keys;
	struct proc_title *e;

	/* serve's documents list no processes. */
	if (s->opts.mode == TARGET_MODE_SERVE || !threads->nr)
		return;
	keys = calloc(threads->nr, sizeof(*keys));
	if (!keys)
		return;
	for (i = 0; i < threads->nr; i++)
		keys[i] = (struct title_key){ threads->recs[i].tgid,
					      threads->recs[i].proc_start_time };
	qsort(keys, threads->nr, sizeof(*keys), key_cmp);
	for (i = 0; i < threads->nr; i++)
		if (!m || key_cmp(&keys[m - 1], &keys[i]))
			keys[m++] = keys[i];
	for (i = 0; i < m; i++)
		fresh += !entry_of(s, old, keys[i].pid, keys[i].start_time);
	if (!titles_reserve(s, fresh)) {
		free(keys);
		return;
	}
	for (i = 0; i < m; i++) {
		e = entry_of(s, old, keys[i].pid, keys[i].start_time);
		if (!e) {
			e = &s->titles[s->nr_titles++];
			memset(e, 0, sizeof(*e));
			e->pid = keys[i].pid;
			e->start_time = keys[i].start_time;
			if (!at_end && read_now)
				title_read(s, e->pid, &e->join, &e->join_read);
		}
		if (at_end)
			title_read(s, e->pid, &e->end, &e->end_read);
	}
	proc_titles__sort(s->titles, s->nr_titles);
	free(keys);
}

void session__read_join_titles(struct session *s)
{
	bool found = false;
	size_t i;

	if (s->opts.mode == TARGET_MODE_SERVE)
		return;
	/* run without BPF (or after its walk failed): /proc's threads carry no start time (0). */
	for (i = 0; i < s->nr_titles; i++)
		found = found || (s->titles[i].pid == (uint32_t)s->pid &&
				  (s->use_bpf || !s->titles[i].start_time));
	if (s->opts.mode == TARGET_MODE_RUN && !found && titles_reserve(s, 1)) {
		memset(&s->titles[s->nr_titles], 0, sizeof(*s->titles));
		s->titles[s->nr_titles++].pid = (uint32_t)s->pid;
		proc_titles__sort(s->titles, s->nr_titles);
	}
	for (i = 0; i < s->nr_titles; i++)
		if (!s->titles[i].join_read && !s->titles[i].end_read)
			title_read(s, s->titles[i].pid, &s->titles[i].join,
				   &s->titles[i].join_read);
	s->titles_now = true;
}

/*
 * e, just read, is still the title of the process it was forked from (its
 * parent's, as read): a child that has not written its own yet.
 */
static bool inherited(struct session *s, const struct proc_entry *pe, const struct proc_title *e)
{
	const struct proc_title *par =
		proc_titles__find(s->titles, s->nr_titles, pe->rec.ppid, pe->rec.parent_start_time);

	return par && (pe->rec.flags & KHBPF_PROC_FORKED) && e->join.recorded && par->join_read &&
	       par->join.recorded && !strcmp(par->join.text, e->join.text);
}

void session__read_new_titles(struct session *s)
{
	size_t nr = 0, i, fresh = 0, old = s->nr_titles;
	struct proc_entry *procs = NULL;
	struct proc_title *e;
	struct proctitle t;
	uint64_t joined;

	if (!s->use_bpf || !s->coll || !s->set_mode || s->opts.mode == TARGET_MODE_SERVE)
		return;
	/* The table is read only when a process joined since the last look, or one is read again. */
	joined = sched_collector__procs_joined(s->coll);
	if ((joined == s->titles_procs_seen && !s->titles_again) ||
	    sched_collector__processes(s->coll, &procs, &nr))
		return;
	s->titles_procs_seen = joined;
	for (i = 0; i < nr; i++) {
		if (procs[i].rec.flags & KHBPF_PROC_EXITED)
			continue;
		e = entry_of(s, old, procs[i].key.pid, procs[i].key.start_time);
		fresh += !e;
		/* Read last time with its parent's title: its own now, if it can be read. */
		if (e && e->join_again && !proctitle__read(s->root, e->pid, &t) && t.recorded) {
			proctitle__free(&e->join);
			e->join = t;
		} else if (e && e->join_again) {
			proctitle__free(&t);
		}
	}
	for (i = 0; i < old; i++)
		s->titles[i].join_again = false;
	s->titles_again = 0;
	if (!titles_reserve(s, fresh)) {
		free(procs);
		return;
	}
	for (i = 0; i < nr; i++) {
		if ((procs[i].rec.flags & KHBPF_PROC_EXITED) ||
		    entry_of(s, old, procs[i].key.pid, procs[i].key.start_time))
			continue;
		e = &s->titles[s->nr_titles++];
		memset(e, 0, sizeof(*e));
		e->pid = procs[i].key.pid;
		e->start_time = procs[i].key.start_time;
		e->join_again = true; /* new: decided below, with every parent in place */
		title_read(s, e->pid, &e->join, &e->join_read);
	}
	proc_titles__sort(s->titles, s->nr_titles);
	for (i = 0; i < nr && s->nr_titles > old; i++) {
		e = entry_of(s, s->nr_titles, procs[i].key.pid, procs[i].key.start_time);
		if (!e || !e->join_again || (procs[i].rec.flags & KHBPF_PROC_EXITED))
			continue;
		e->join_again = inherited(s, &procs[i], e);
		s->titles_again += e->join_again;
	}
	free(procs);
}

/* SPDX-License-Identifier: MIT */
/*
 * The titles of a window's processes (processes[].title): each read when
 * the loader learns that the process joined, and again at the window's end
 * (host/proctitle.h reads one; s->titles keeps them by pid and start).
 */
#ifndef KHBPF_SESSION_TITLES_H
#define KHBPF_SESSION_TITLES_H

#include "session/session_state.h"

/*
 * The processes of threads, each once. at_end false: those not known yet,
 * their title read now (at their join) unless !read_now (the start's walk:
 * kept for session__read_join_titles); true: every one, at the window's end.
 */
void session__read_titles(struct session *s, const struct thread_table *threads, bool at_end,
			  bool read_now);
/*
 * The titles the start's walk left to read: attach's once its programs are
 * on (the reads do not hold them up), run's command's once it has exec'd
 * (until then it is khbpf's own fork). Later walks read theirs at once.
 */
void session__read_join_titles(struct session *s);
/*
 * A loader tick: the processes that joined since the last one (forked into
 * the set; the kernel took them in), read if they are alive.
 */
void session__read_new_titles(struct session *s);

#endif /* KHBPF_SESSION_TITLES_H */

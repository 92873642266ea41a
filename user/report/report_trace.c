// SPDX-License-Identifier: MIT
/*
 * The trace-event JSON of `khbpf report --perfetto`: the JSON object form of
 * Chrome's trace event format, read by ui.perfetto.dev and chrome://tracing.
 * Times are microseconds from the window's start, written as exact decimals
 * (ns / 1000 with three decimals), never computed through a double. Each
 * event is built and serialized by json-c, then written and freed, so a
 * trace of 10^5 spans never holds all of them as objects at once; written
 * to a file (report__trace_write), nor all of its text.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "document/evjson.h"
#include "report/report.h"

struct tracer {
	const struct report_doc *doc;
	FILE *f;
	size_t nr_events;
	int err;
};

#define TO_STRING_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static void add(struct tracer *t, struct json_object *obj, const char *key, struct json_object *val)
{
	if (evjson__add(obj, key, val))
		t->err = -ENOMEM;
}

/* Write one event of traceEvents, and free it. */
static void push(struct tracer *t, struct json_object *ev)
{
	const char *text =
		ev && !t->err ? json_object_to_json_string_ext(ev, TO_STRING_FLAGS) : NULL;

	if (!text)
		t->err = -ENOMEM;
	else
		fprintf(t->f, "%s%s", t->nr_events++ ? ",\n" : "", text);
	json_object_put(ev);
}

/* ns as exact decimal microseconds: 1234567 -> 1234.567 */
static struct json_object *us(uint64_t ns)
{
	char s[32];

	snprintf(s, sizeof(s), "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
	return json_object_new_double_s((double)(ns / 1000), s);
}

/* Each thread on its own process's track (one process track per process of the set). */
static struct json_object *event(struct tracer *t, const char *name, const char *ph, uint64_t pid,
				 uint64_t tid)
{
	struct json_object *ev = json_object_new_object();

	add(t, ev, "name", evjson__string(name));
	add(t, ev, "ph", json_object_new_string(ph));
	add(t, ev, "pid", evjson__u64(pid));
	add(t, ev, "tid", evjson__u64(tid));
	return ev;
}

/* A thread's process: documents before target sets name none (the target's). */
static uint64_t pid_of_thread(const struct report_doc *d, const struct report_thread *th)
{
	return th && th->pid ? th->pid : d->pid;
}

static uint64_t pid_of_tid(const struct report_doc *d, uint64_t tid)
{
	size_t i;

	for (i = 0; i < d->nr_threads; i++)
		if (d->threads[i].tid == tid)
			return pid_of_thread(d, &d->threads[i]);
	return d->pid;
}

static void metadata(struct tracer *t, const char *what, uint64_t pid, uint64_t tid,
		     struct json_object *arg)
{
	struct json_object *ev = event(t, what, "M", pid, tid), *args = json_object_new_object();

	add(t, args, !strcmp(what, "thread_sort_index") ? "sort_index" : "name", arg);
	add(t, ev, "args", args);
	push(t, ev);
}

static void names(struct tracer *t)
{
	const struct report_doc *d = t->doc;
	const char *target = d->comm ? d->comm : "?";
	char name[96];
	size_t i;

	/* Processes by their titles where recorded (the target's, when it has one). */
	for (i = 0; i < d->nr_processes; i++)
		if (d->processes[i].pid == d->pid)
			target = report__process_name(&d->processes[i]);
	snprintf(name, sizeof(name), "%.64s (pid %" PRIu64 ")", target, d->pid);
	metadata(t, "process_name", d->pid, d->pid, evjson__string(name));
	for (i = 0; i < d->nr_processes; i++) {
		const struct report_process *p = &d->processes[i];

		if (p->pid == d->pid)
			continue;
		snprintf(name, sizeof(name), "%.64s (pid %" PRIu64 ")", report__process_name(p),
			 p->pid);
		metadata(t, "process_name", p->pid, p->pid, evjson__string(name));
	}
	for (i = 0; i < d->nr_threads; i++) {
		const struct report_thread *th = &d->threads[i];
		uint64_t pid = pid_of_thread(d, th);

		if (th->comm && th->comm[0])
			snprintf(name, sizeof(name), "%.64s", th->comm);
		else
			snprintf(name, sizeof(name), "tid %" PRIu64, th->tid);
		metadata(t, "thread_name", pid, th->tid, evjson__string(name));
		metadata(t, "thread_sort_index", pid, th->tid, evjson__u64(i));
	}
}

static void span_args(struct tracer *t, struct json_object *args, const struct report_span *s)
{
	struct ev_u64 cyc, ins;

	add(t, args, "span_id", evjson__u64(s->span_id));
	if (s->key)
		add(t, args, "key", evjson__string(s->key));
	if (s->parent_span_id.recorded)
		add(t, args, "parent_span_id", evjson__u64(s->parent_span_id.value));
	if (s->open) {
		add(t, args, "open_at_window_end", json_object_new_boolean(1));
		return;
	}
	add(t, args, "inclusive_ns", evjson__u64(s->inclusive_ns));
	add(t, args, "exclusive_ns", evjson__u64(s->exclusive_ns));
	if (s->has_ledger) {
		if (s->ledger.on_cpu_ns.recorded)
			add(t, args, "on_cpu_ns", evjson__u64(s->ledger.on_cpu_ns.value));
		add(t, args, "run_delay_ns", evjson__u64(s->ledger.run_delay_ns));
		add(t, args, "voluntary_switches", evjson__u64(s->ledger.voluntary_switches));
		add(t, args, "involuntary_switches", evjson__u64(s->ledger.involuntary_switches));
		add(t, args, "migrations", evjson__u64(s->ledger.migrations));
	}
	if (!s->has_hw)
		return;
	cyc = span_hardware__cycles(&s->hw);
	ins = span_hardware__instructions(&s->hw);
	if (cyc.recorded)
		add(t, args, "cycles", evjson__u64(cyc.value));
	if (ins.recorded)
		add(t, args, "instructions", evjson__u64(ins.value));
}

static void spans(struct tracer *t)
{
	const struct report_doc *d = t->doc;
	size_t i;

	for (i = 0; i < d->nr_spans && !t->err; i++) {
		const struct report_span *s = &d->spans[i];
		struct json_object *ev, *args;

		/* Viewers need X events on a thread to nest: a crossing one is left out. */
		if (s->overlaps)
			continue;
		ev = event(
			t, d->metrics[s->metric].id, "X",
			pid_of_thread(d, s->thread < d->nr_threads ? &d->threads[s->thread] : NULL),
			s->thread_id);
		add(t, ev, "cat", json_object_new_string(s->open ? "span,open" : "span"));
		add(t, ev, "ts", us(s->start_ns));
		add(t, ev, "dur", us(s->inclusive_ns));
		args = json_object_new_object();
		span_args(t, args, s);
		add(t, ev, "args", args);
		push(t, ev);
	}
}

/* A wakeup that ended a span's blocked time: its latest by one waker (--wakers). */
struct wakeup {
	uint64_t ts;
	uint64_t wakee; /* the span's thread */
	const struct waker_row *w;
};

static int wakeup_cmp(const void *a, const void *b)
{
	const struct wakeup *x = a, *y = b;

	if (x->wakee != y->wakee)
		return x->wakee < y->wakee ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->w->tid < y->w->tid ? -1 : x->w->tid > y->w->tid;
}

/* A zero-length slice at a wakeup, one end of its flow (flow v2: bind_id). */
static void wakeup_end(struct tracer *t, const char *name, uint64_t pid, uint64_t tid, uint64_t ts,
		       uint64_t id, bool out, struct json_object *args)
{
	struct json_object *ev = json_object_new_object();

	add(t, ev, "name", evjson__string(name));
	add(t, ev, "ph", json_object_new_string("X"));
	add(t, ev, "cat", json_object_new_string("wakeup"));
	add(t, ev, "pid", evjson__u64(pid));
	add(t, ev, "tid", evjson__u64(tid));
	add(t, ev, "ts", us(ts));
	add(t, ev, "dur", us(0));
	add(t, ev, "bind_id", evjson__u64(id));
	add(t, ev, out ? "flow_out" : "flow_in", json_object_new_boolean(1));
	add(t, ev, "args", args);
	push(t, ev);
}

/*
 * An arrow from each thread that woke a span's thread to it, at the
 * latest wakeup the span's record lists per waker: a zero-length slice on
 * the waker's thread (inside what it was running) and one on the woken
 * thread (inside the span it was blocked in). A wakeup listed by nested
 * spans is drawn once. Interrupts and timers have no thread to start from.
 */
static void wakeups(struct tracer *t)
{
	const struct report_doc *d = t->doc;
	struct wakeup *all;
	size_t i, j, n = 0;
	char name[64];

	for (i = 0; i < d->nr_spans; i++)
		n += d->spans[i].ledger.nr_wakers;
	if (!n)
		return;
	all = calloc(n, sizeof(*all));
	if (!all) {
		t->err = -ENOMEM;
		return;
	}
	n = 0;
	for (i = 0; i < d->nr_spans; i++) {
		const struct report_span *s = &d->spans[i];

		for (j = 0; j < s->ledger.nr_wakers; j++) {
			const struct waker_row *w = &s->ledger.wakers[j];

			if (w->kind == WAKER_THREAD && w->has_last_wakeup)
				all[n++] = (struct wakeup){ w->last_wakeup_ns, s->thread_id, w };
		}
	}
	if (n)
		qsort(all, n, sizeof(*all), wakeup_cmp);
	for (i = 0; i < n && !t->err; i++) {
		const struct waker_row *w = all[i].w;
		struct json_object *args;

		if (i && !wakeup_cmp(&all[i - 1], &all[i]))
			continue;
		/* A thread of another process has no name in the document's threads. */
		if (w->pid != d->pid) {
			struct json_object *ev = json_object_new_object();

			args = json_object_new_object();
			add(t, args, "name", evjson__string(w->comm));
			add(t, ev, "name", json_object_new_string("thread_name"));
			add(t, ev, "ph", json_object_new_string("M"));
			add(t, ev, "pid", evjson__u64(w->pid));
			add(t, ev, "tid", evjson__u64(w->tid));
			add(t, ev, "args", args);
			push(t, ev);
		}
		args = json_object_new_object();
		add(t, args, "woke_tid", evjson__u64(all[i].wakee));
		snprintf(name, sizeof(name), "wakes %" PRIu64, all[i].wakee);
		wakeup_end(t, name, w->pid, w->tid, all[i].ts, i + 1, true, args);
		args = json_object_new_object();
		add(t, args, "waker_tid", evjson__u64(w->tid));
		add(t, args, "waker_pid", evjson__u64(w->pid));
		add(t, args, "waker_comm", evjson__string(w->comm));
		snprintf(name, sizeof(name), "woken by %.16s", w->comm);
		wakeup_end(t, name, pid_of_tid(d, all[i].wakee), all[i].wakee, all[i].ts, i + 1,
			   false, args);
	}
	free(all);
}

/* A change of the open-spans counter: 16 bytes, two a span. */
struct step {
	uint64_t ts;
	int64_t delta;
};

/* A thread's counters read at a span's start or end. */
struct point {
	uint64_t ts;
	struct ev_u64 cycles, instructions;
};

static int step_cmp(const void *a, const void *b)
{
	const struct step *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int point_cmp(const void *a, const void *b)
{
	const struct point *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void counter(struct tracer *t, const char *name, uint64_t pid, uint64_t tid, uint64_t ts,
		    struct json_object *args)
{
	struct json_object *ev = event(t, name, "C", pid, tid);

	add(t, ev, "ts", us(ts));
	add(t, ev, "args", args);
	push(t, ev);
}

/*
 * How many spans are open at each moment, over all threads. Only the count
 * after the last change at an instant is written: the order of changes at
 * one instant does not show.
 */
static void open_spans(struct tracer *t, struct step *pts)
{
	const struct report_doc *d = t->doc;
	size_t i, n = 0;
	int64_t open = 0;

	for (i = 0; i < d->nr_spans; i++) {
		const struct report_span *s = &d->spans[i];

		if (s->overlaps)
			continue;
		pts[n++] = (struct step){ .ts = s->start_ns, .delta = 1 };
		pts[n++] = (struct step){ .ts = s->start_ns + s->inclusive_ns, .delta = -1 };
	}
	if (n)
		qsort(pts, n, sizeof(*pts), step_cmp);
	for (i = 0; i < n && !t->err; i++) {
		struct json_object *args;

		open += pts[i].delta;
		/* One value per instant: the count after every change at it. */
		if (i + 1 < n && pts[i + 1].ts == pts[i].ts)
			continue;
		args = json_object_new_object();
		add(t, args, "spans", json_object_new_int64(open));
		counter(t, "open spans", t->doc->pid, t->doc->pid, pts[i].ts, args);
	}
}

/* A thread's own cycle and instruction counts, read at its spans' ends. */
static void thread_counters(struct tracer *t, const struct report_thread *th, struct point *pts)
{
	const struct report_doc *d = t->doc;
	const char *evname = d->cycles_event ? d->cycles_event : "hw";
	char name[128], cyc[96], ins[96];
	size_t i, n = 0;

	for (i = th->first_span; i < th->first_span + th->nr_spans; i++) {
		const struct report_span *s = &d->spans[i];

		if (s->overlaps || s->open || !s->has_hw)
			continue;
		if (s->hw.cycles_begin.recorded || s->hw.instructions_begin.recorded)
			pts[n++] = (struct point){ .ts = s->start_ns,
						   .cycles = s->hw.cycles_begin,
						   .instructions = s->hw.instructions_begin };
		if (s->hw.cycles_end.recorded || s->hw.instructions_end.recorded)
			pts[n++] = (struct point){ .ts = s->start_ns + s->inclusive_ns,
						   .cycles = s->hw.cycles_end,
						   .instructions = s->hw.instructions_end };
	}
	if (!n)
		return;
	qsort(pts, n, sizeof(*pts), point_cmp);
	snprintf(name, sizeof(name), "thread %" PRIu64 " counters", th->tid);
	snprintf(cyc, sizeof(cyc), "cycles [%.64s]", evname);
	snprintf(ins, sizeof(ins), "instructions [%.64s]", evname);
	for (i = 0; i < n && !t->err; i++) {
		struct json_object *args = json_object_new_object();

		if (pts[i].cycles.recorded)
			add(t, args, cyc, evjson__u64(pts[i].cycles.value));
		if (pts[i].instructions.recorded)
			add(t, args, ins, evjson__u64(pts[i].instructions.value));
		counter(t, name, pid_of_thread(t->doc, th), th->tid, pts[i].ts, args);
	}
}

static void counters(struct tracer *t)
{
	const struct report_doc *d = t->doc;
	struct point *pts;
	struct step *steps;
	size_t i, most = 0;

	for (i = 0; i < d->nr_freq && !t->err; i++) {
		struct json_object *args = json_object_new_object();

		add(t, args, "min", evjson__u64(d->freq[i].min_khz));
		add(t, args, "mean", evjson__u64(d->freq[i].mean_khz));
		add(t, args, "max", evjson__u64(d->freq[i].max_khz));
		counter(t, "cpu frequency (kHz)", d->pid, d->pid, d->freq[i].elapsed_ns, args);
	}
	if (!d->nr_spans)
		return;
	steps = calloc(d->nr_spans * 2, sizeof(*steps));
	if (!steps) {
		t->err = -ENOMEM;
		return;
	}
	open_spans(t, steps);
	free(steps);
	/* Room for the thread with the most spans, not for all of them. */
	for (i = 0; i < d->nr_threads; i++)
		most = d->threads[i].nr_spans > most ? d->threads[i].nr_spans : most;
	pts = calloc(most * 2, sizeof(*pts));
	if (!pts) {
		t->err = -ENOMEM;
		return;
	}
	for (i = 0; i < d->nr_threads && !t->err; i++)
		thread_counters(t, &d->threads[i], pts);
	free(pts);
}

static struct json_object *other_data(struct tracer *t)
{
	const struct report_doc *d = t->doc;
	struct json_object *o = json_object_new_object();
	char start[32];

	add(t, o, "producer", json_object_new_string("khbpf report"));
	if (d->khbpf_version)
		add(t, o, "khbpf_version", evjson__string(d->khbpf_version));
	add(t, o, "pid", evjson__u64(d->pid));
	/* A string: JavaScript numbers lose nanoseconds past 2^53. */
	snprintf(start, sizeof(start), "%" PRIu64, d->start_unix_ns);
	add(t, o, "window_start_unix_ns", json_object_new_string(start));
	add(t, o, "wall_ns", evjson__u64(d->wall_ns));
	add(t, o, "spans_left_out_crossing", evjson__u64(d->nr_overlapping));
	return o;
}

int report__trace_write(const struct report_doc *doc, FILE *f)
{
	struct tracer t = { .doc = doc, .f = f };
	struct json_object *other;
	const char *text;

	if (!doc->spans && doc->nr_spans)
		return -EINVAL; /* summarized: every span is drawn */
	fputs("{\"traceEvents\":[\n", t.f);
	names(&t);
	spans(&t);
	wakeups(&t);
	counters(&t);
	other = other_data(&t);
	text = other && !t.err ? json_object_to_json_string_ext(other, TO_STRING_FLAGS) : NULL;
	if (!text)
		t.err = -ENOMEM;
	else
		fprintf(t.f, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":%s}\n", text);
	json_object_put(other);
	if (!t.err && ferror(t.f))
		t.err = -EIO;
	return t.err;
}

int report__trace(const struct report_doc *doc, char **buf, size_t *len)
{
	FILE *f;
	int err;

	*buf = NULL;
	*len = 0;
	f = open_memstream(buf, len);
	if (!f)
		return -ENOMEM;
	err = report__trace_write(doc, f);
	/* In memory a failed write is a failed allocation. */
	if (err == -EIO)
		err = -ENOMEM;
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	return err;
}

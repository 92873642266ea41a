// SPDX-License-Identifier: MIT
/*
 * The /proc readers. The first byte picks one:
 *   0  procsched__parse_sched on the rest, against an independent reading
 *      of its documented format, and "on error *out is unchanged"
 *   1  procsched__parse_schedstat on the rest, the same way
 *   2  procsched__read_thread, procsched__read and census__read on a /proc
 *      tree whose task/TID/{comm,sched,schedstat,stat} are the NUL-separated
 *      parts of the rest (a missing part: no such file); they agree
 *      with each other
 *   3  spanfind__mapped_objects on the rest as /proc/PID/maps
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>

#include "fuzz.h"
#include "host/census.h"
#include "host/procsched.h"
#include "spans/spanfind.h"

static const char *const keys[3] = { "nr_voluntary_switches", "nr_involuntary_switches",
				     "se.nr_migrations" };

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Digits only, at least one, as strtoull reads them: 0, -EINVAL or -ERANGE. */
static int ref_u64(const char *s, size_t len, uint64_t *out)
{
	char buf[64];
	size_t i;

	if (!len)
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
	/* Leading zeros do not change the value. */
	while (len > 1 && *s == '0') {
		s++;
		len--;
	}
	if (len >= sizeof(buf))
		return -ERANGE;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	*out = strtoull(buf, NULL, 10);
	return errno == ERANGE ? -ERANGE : 0;
}

static int ref_sched(const char *text, uint64_t vals[3])
{
	bool seen[3] = { false }, bad = false, range = false;
	const char *line = text;
	size_t i;

	while (*line) {
		const char *eol = strchr(line, '\n'), *colon, *k, *ke, *v, *ve;

		if (!eol)
			eol = line + strlen(line);
		colon = memchr(line, ':', (size_t)(eol - line));
		if (colon) {
			for (k = line; k < colon && blank(*k); k++)
				;
			for (ke = colon; ke > k && blank(ke[-1]); ke--)
				;
			for (i = 0; i < 3; i++) {
				if (strlen(keys[i]) != (size_t)(ke - k) ||
				    memcmp(keys[i], k, (size_t)(ke - k)))
					continue;
				if (seen[i])
					return -EINVAL;
				seen[i] = true;
				for (v = colon + 1; v < eol && blank(*v); v++)
					;
				for (ve = eol; ve > v && blank(ve[-1]); ve--)
					;
				switch (ref_u64(v, (size_t)(ve - v), &vals[i])) {
				case -EINVAL:
					bad = true;
					break;
				case -ERANGE:
					range = true;
					break;
				}
			}
		}
		line = *eol ? eol + 1 : eol;
	}
	if (!seen[0] || !seen[1] || !seen[2] || bad)
		return -EINVAL;
	return range ? -ERANGE : 0;
}

static int ref_schedstat(const char *text, uint64_t vals[3])
{
	const char *p = text, *start;
	bool range = false;
	size_t i;
	int err;

	for (i = 0; i < 3; i++) {
		if (i && *p++ != ' ')
			return -EINVAL;
		for (start = p; *p >= '0' && *p <= '9'; p++)
			;
		err = ref_u64(start, (size_t)(p - start), &vals[i]);
		if (err == -EINVAL)
			return err;
		range |= err == -ERANGE;
	}
	if (*p == '\n')
		p++;
	if (*p)
		return -EINVAL;
	return range ? -ERANGE : 0;
}

static void fill(struct procsched_thread *t)
{
	memset(t, 0xa5, sizeof(*t));
	t->has_sched = false;
	t->has_schedstat = false;
}

static void check_sched(const char *text)
{
	struct procsched_thread t, before;
	uint64_t vals[3] = { 0 };
	int err, want;

	fill(&t);
	memcpy(&before, &t, sizeof(t));
	err = procsched__parse_sched(text, &t);
	want = ref_sched(text, vals);
	FUZZ_CHECK(err == want);
	if (err) {
		FUZZ_CHECK(!memcmp(&t, &before, sizeof(t)));
		return;
	}
	FUZZ_CHECK(t.has_sched);
	FUZZ_CHECK(t.nr_voluntary_switches == vals[0]);
	FUZZ_CHECK(t.nr_involuntary_switches == vals[1]);
	FUZZ_CHECK(t.nr_migrations == vals[2]);
	/* Nothing else touched. */
	t.has_sched = false;
	t.nr_voluntary_switches = before.nr_voluntary_switches;
	t.nr_involuntary_switches = before.nr_involuntary_switches;
	t.nr_migrations = before.nr_migrations;
	FUZZ_CHECK(!memcmp(&t, &before, sizeof(t)));
}

static void check_schedstat(const char *text)
{
	struct procsched_thread t, before;
	uint64_t vals[3] = { 0 };
	int err, want;

	fill(&t);
	memcpy(&before, &t, sizeof(t));
	err = procsched__parse_schedstat(text, &t);
	want = ref_schedstat(text, vals);
	FUZZ_CHECK(err == want);
	if (err) {
		FUZZ_CHECK(!memcmp(&t, &before, sizeof(t)));
		return;
	}
	FUZZ_CHECK(t.has_schedstat);
	FUZZ_CHECK(t.sum_exec_runtime_ns == vals[0]);
	FUZZ_CHECK(t.run_delay_ns == vals[1]);
	FUZZ_CHECK(t.pcount == vals[2]);
	t.has_schedstat = false;
	t.sum_exec_runtime_ns = before.sum_exec_runtime_ns;
	t.run_delay_ns = before.run_delay_ns;
	t.pcount = before.pcount;
	FUZZ_CHECK(!memcmp(&t, &before, sizeof(t)));
}

static void check_thread(const uint8_t *data, size_t size)
{
	static const char *const files[4] = { "comm", "sched", "schedstat", "stat" };
	const char *root = fuzz_tmp_root();
	struct procsched_snapshot snap;
	struct procsched_thread t;
	struct fuzz_part parts[4];
	char rel[64];
	size_t n, i;
	int err;

	n = fuzz_split(data, size, parts, 4);
	for (i = 0; i < 4; i++) {
		snprintf(rel, sizeof(rel), "proc/7/task/7/%s", files[i]);
		fuzz_put(root, rel, i < n ? parts[i].p : NULL, i < n ? parts[i].len : 0);
	}
	err = procsched__read_thread(root, 7, 7, &t);
	FUZZ_CHECK(err <= 0);
	FUZZ_CHECK(memchr(t.comm, '\0', sizeof(t.comm)));
	if (err) {
		struct procsched_thread zero;

		memset(&zero, 0, sizeof(zero));
		FUZZ_CHECK(!memcmp(&t, &zero, sizeof(t)));
	} else {
		FUZZ_CHECK(t.tid == 7);
		/* Without a comm file, the name is the one inside stat's parentheses. */
		if (n >= 1) {
			size_t len = parts[0].len;

			if (len && parts[0].p[len - 1] == '\n')
				len--;
			if (len > sizeof(t.comm) - 1)
				len = sizeof(t.comm) - 1;
			FUZZ_CHECK(strlen(t.comm) == len && !memcmp(t.comm, parts[0].p, len));
		}
	}
	err = procsched__read(root, 7, 4, &snap);
	FUZZ_CHECK(err <= 0);
	if (!err) {
		FUZZ_CHECK(snap.nr_threads == 1 && snap.threads[0].tid == 7);
		FUZZ_CHECK(!memcmp(&snap.threads[0], &t, sizeof(t)));
	}
	procsched__free(&snap);

	/* The census reads schedstat's runtime the same way, or else stat. */
	{
		struct thread_census c;
		enum ev_source src;
		int cerr = census__read(root, 7, 1, &c, &src);

		FUZZ_CHECK(cerr <= 0);
		if (!err && t.has_schedstat && parts[2].len < 128) {
			FUZZ_CHECK(!cerr && c.nr_threads == 1 && c.threads[0].thread_id == 7);
			FUZZ_CHECK(c.threads[0].cpu_time_ns == t.sum_exec_runtime_ns);
			FUZZ_CHECK(src == EV_SRC_PROC_PID_SCHEDSTAT);
		}
		if (!cerr)
			FUZZ_CHECK(c.nr_threads == 1 && c.elapsed_ns == 1);
		else
			FUZZ_CHECK(!c.threads && !c.nr_threads);
		census__free(&c);
	}
}

static void check_maps(const uint8_t *data, size_t size)
{
	const char *root = fuzz_tmp_root();
	char **objects = NULL;
	size_t nr = 0, i, j;
	int err;

	fuzz_put(root, "proc/9/maps", data, size);
	err = spanfind__mapped_objects(root, 9, &objects, &nr);
	FUZZ_CHECK(err <= 0);
	if (err) {
		FUZZ_CHECK(!objects && !nr);
		return;
	}
	FUZZ_CHECK(nr <= SPANFIND_OBJECTS_MAX);
	for (i = 0; i < nr; i++) {
		FUZZ_CHECK(objects[i][0] == '/');
		FUZZ_CHECK(!strchr(objects[i], '\n'));
		for (j = 0; j < i; j++)
			FUZZ_CHECK(strcmp(objects[i], objects[j]));
	}
	spanfind__free_objects(objects, nr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (!size)
		return 0;
	switch (data[0] % 4) {
	case 0:
	case 1:
		text = fuzz_strndup(data + 1, size - 1);
		if (data[0] % 4 == 0)
			check_sched(text);
		else
			check_schedstat(text);
		free(text);
		break;
	case 2:
		check_thread(data + 1, size - 1);
		break;
	case 3:
		check_maps(data + 1, size - 1);
		break;
	}
	return 0;
}

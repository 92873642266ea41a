// SPDX-License-Identifier: MIT
/*
 * The writers with arbitrary strings. The input, split at NUL bytes, gives
 * the strings of an evidence document (comm names, exe path, metric ids,
 * probe object/symbol/reason, details). Properties:
 *   - evidence_doc__to_json's text is valid UTF-8 and JSON that json-c
 *     parses back whole; each string reads back as
 *     evjson__utf8_sanitize of what was written (which is valid UTF-8, and
 *     the bytes themselves when they were valid UTF-8); printing the parsed
 *     document again gives the same text byte for byte
 *   - `khbpf report` reads the document back with the same strings, and
 *     its HTML page (without a script) and trace are valid UTF-8, the
 *     trace valid JSON
 *   - the Prometheus writer, given each string as a label value and as
 *     HELP text, writes one line per sample and the value unescapes back
 *     to the sanitized string; a string as an Accept header selects
 *     OpenMetrics only when it names it
 *   - the first 8 bytes as nanoseconds: promtext__fmt_seconds reads back
 *     exactly, report__fmt_ns to within its rounding, three digits
 */
#include <errno.h>
#include <limits.h>
#include <json-c/json.h>

#include "document/document.h"
#include "document/evjson.h"
#include "fuzz.h"
#include "serve/promtext.h"
#include "report/report.h"

enum {
	F_COMM,
	F_EXE,
	F_THREAD_COMM,
	F_METRIC,
	F_PROBE_OBJECT,
	F_PROBE_SYMBOL,
	F_PROBE_REASON,
	F_COUNTERS_DETAIL,
	F_COLLECTOR_DETAIL,
	F_OPEN_METRIC,
	NR_FIELDS,
};

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	return 0;
}

static void copy_field(char *dst, size_t size, const struct fuzz_part *p)
{
	size_t n = p->len < size - 1 ? p->len : size - 1;

	memcpy(dst, p->p, n);
	dst[n] = '\0';
}

static struct json_object *at(struct json_object *o, const char *path)
{
	char buf[256], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); o && tok; tok = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(tok));
		else if (!json_object_object_get_ex(o, tok, &o))
			o = NULL;
	}
	FUZZ_CHECK(o);
	return o;
}

/* The sanitized form of s (malloc'd), checked against the independent UTF-8 test. */
static char *sanitized(const char *s)
{
	char *clean = evjson__utf8_sanitize(s, strlen(s));

	FUZZ_CHECK(clean);
	FUZZ_CHECK(fuzz_utf8_valid(clean, strlen(clean)));
	if (fuzz_utf8_valid(s, strlen(s)))
		FUZZ_CHECK(!strcmp(clean, s));
	else
		FUZZ_CHECK(strstr(clean, "\xef\xbf\xbd"));
	return clean;
}

static void check_string(struct json_object *doc, const char *path, const char *written)
{
	struct json_object *o = at(doc, path);
	char *want = sanitized(written);

	FUZZ_CHECK(json_object_is_type(o, json_type_string));
	FUZZ_CHECK((size_t)json_object_get_string_len(o) == strlen(want));
	FUZZ_CHECK(!strcmp(json_object_get_string(o), want));
	free(want);
}

static void check_report_string(const char *got, const char *written)
{
	char *want = sanitized(written);

	FUZZ_CHECK(got && !strcmp(got, want));
	free(want);
}

static struct json_object *parse_whole(const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;

	FUZZ_CHECK(tok);
	o = json_tokener_parse_ex(tok, text, (int)len);
	FUZZ_CHECK(o && json_tokener_get_error(tok) == json_tokener_success);
	FUZZ_CHECK(json_tokener_get_parse_end(tok) == len);
	json_tokener_free(tok);
	return o;
}

/* The label value of `name{label="..."} 1`, unescaped as Prometheus does. */
static char *label_value(const char *line, const char *label)
{
	char key[32], *out, *o;
	const char *p;

	snprintf(key, sizeof(key), "{%s=\"", label);
	p = strstr(line, key);
	FUZZ_CHECK(p);
	p += strlen(key);
	out = o = malloc(strlen(p) + 1);
	FUZZ_CHECK(out);
	for (; *p != '"'; p++) {
		FUZZ_CHECK(*p && *p != '\n');
		if (*p == '\\') {
			p++;
			FUZZ_CHECK(*p == '\\' || *p == 'n' || *p == '"');
			*o++ = *p == 'n' ? '\n' : *p;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	FUZZ_CHECK(!strcmp(p, "\"} 1\n") || !strncmp(p, "\"} 1\n#", 5));
	return out;
}

static void check_promtext(const char *value, bool om)
{
	struct prom_label l = { "comm", value };
	struct promtext *p = NULL;
	const char *line;
	char *text, *got, *want;
	size_t len, lines = 0, i;

	FUZZ_CHECK(!promtext__new(&p, om));
	FUZZ_CHECK(!promtext__family(p, "khbpf_fuzz", PROM_GAUGE, NULL, value));
	FUZZ_CHECK(!promtext__u64(p, &l, 1, 1));
	text = promtext__finish(p, &len);
	FUZZ_CHECK(text && strlen(text) == len);
	FUZZ_CHECK(fuzz_utf8_valid(text, len));
	for (i = 0; i < len; i++)
		lines += text[i] == '\n';
	/* HELP (none when empty), TYPE, the sample, and OpenMetrics' # EOF. */
	FUZZ_CHECK(lines == (om ? 3u : 2u) + !!value[0]);
	line = strstr(text, "\nkhbpf_fuzz{");
	FUZZ_CHECK(line);
	got = label_value(line + 1, "comm");
	want = sanitized(value);
	FUZZ_CHECK(!strcmp(got, want));
	free(want);
	free(got);
	free(text);
}

static void check_seconds(uint64_t ns)
{
	char buf[PROMTEXT_SECONDS_MAX + 8];
	unsigned __int128 back = 0;
	size_t len = promtext__fmt_seconds(buf, ns), i, frac = 0;
	bool dot = false;

	FUZZ_CHECK(len < PROMTEXT_SECONDS_MAX && strlen(buf) == len);
	for (i = 0; i < len; i++) {
		if (buf[i] == '.') {
			FUZZ_CHECK(!dot && i);
			dot = true;
			continue;
		}
		FUZZ_CHECK(buf[i] >= '0' && buf[i] <= '9');
		back = back * 10 + (unsigned)(buf[i] - '0');
		frac += dot;
	}
	FUZZ_CHECK(frac <= 9 && (!dot || (frac && buf[len - 1] != '0')));
	for (; frac < 9; frac++)
		back *= 10;
	FUZZ_CHECK(back == ns);
}

static void check_fmt_ns(uint64_t ns)
{
	static const struct {
		const char *unit;
		uint64_t div;
	} units[] = { { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 } };
	unsigned __int128 scaled = 0, p10 = 1, lhs, rhs;
	char buf[64], *sp;
	size_t i, u;
	bool dot = false;

	report__fmt_ns(buf, sizeof(buf), ns);
	sp = strchr(buf, ' ');
	FUZZ_CHECK(sp && sp > buf);
	for (u = 0; u < 4 && strcmp(sp + 1, units[u].unit); u++)
		;
	FUZZ_CHECK(u < 4);
	for (i = 0; buf + i < sp; i++) {
		if (buf[i] == '.') {
			FUZZ_CHECK(!dot && i);
			dot = true;
			continue;
		}
		FUZZ_CHECK(buf[i] >= '0' && buf[i] <= '9');
		scaled = scaled * 10 + (unsigned)(buf[i] - '0');
		if (dot)
			p10 *= 10;
	}
	if (ns < 1000) {
		FUZZ_CHECK(u == 0 && scaled == ns && !dot);
		return;
	}
	FUZZ_CHECK(u > 0);
	/* Rounded to the nearest last digit, half up. */
	lhs = scaled * units[u].div;
	rhs = (unsigned __int128)ns * p10;
	FUZZ_CHECK((lhs > rhs ? lhs - rhs : rhs - lhs) * 2 <= units[u].div);
	/* Three significant digits; whole seconds beyond 999. */
	FUZZ_CHECK(scaled >= 100 && (scaled <= 999 || (u == 3 && !dot)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct evidence_doc doc;
	static struct doc_thread th;
	static struct span_metric metric;
	static struct span_probe probe;
	static struct open_span open;
	static struct collector_capability cap;
	static const char empty[] = "";
	struct fuzz_part parts[NR_FIELDS];
	struct json_object *obj, *back;
	struct report_doc *rd = NULL;
	char err[512], *text, *html = NULL, *trace = NULL, detail[256];
	size_t n, i, len, html_len = 0, trace_len = 0;
	int ret;

	n = fuzz_split(data, size, parts, NR_FIELDS);
	for (i = n; i < NR_FIELDS; i++) {
		parts[i].p = (const uint8_t *)empty;
		parts[i].len = 0;
	}
	memset(&doc, 0, sizeof(doc));
	memset(&th, 0, sizeof(th));
	memset(&metric, 0, sizeof(metric));
	memset(&probe, 0, sizeof(probe));
	memset(&open, 0, sizeof(open));

	copy_field(doc.target.comm, sizeof(doc.target.comm), &parts[F_COMM]);
	doc.target.pid = 42;
	doc.target.exe_recorded = true;
	copy_field(doc.target.exe, sizeof(doc.target.exe), &parts[F_EXE]);
	doc.target.mode = TARGET_MODE_ATTACH;
	doc.target.exit_reason = EV_GAP_UNAVAILABLE;
	doc.window.wall_ns = 1000000;
	doc.hardware_reason = EV_GAP_UNSUPPORTED;
	doc.sched_detail.reason = EV_GAP_COLLECTOR_DISABLED;
	doc.kernel_run_delay_ns = sev_u64__gap(EV_SRC_PROC_PID_SCHEDSTAT, EV_GAP_UNAVAILABLE);
	doc.events.availability_reason = EV_GAP_COLLECTOR_DISABLED;

	th.thread_id = 42;
	copy_field(th.comm, sizeof(th.comm), &parts[F_THREAD_COMM]);
	scheduler_evidence__all_gapped(&th.scheduler, EV_SRC_PROC_PID_SCHED, EV_GAP_UNAVAILABLE);
	th.on_cpu_ns = sev_u64__gap(EV_SRC_PROC_PID_SCHEDSTAT, EV_GAP_UNAVAILABLE);
	th.detail.reason = EV_GAP_COLLECTOR_DISABLED;
	doc.threads = &th;
	doc.nr_threads = 1;

	copy_field(metric.metric_id, sizeof(metric.metric_id), &parts[F_METRIC]);
	metric.calls = 1;
	doc.span_metrics = &metric;
	doc.nr_span_metrics = 1;

	copy_field(probe.object, sizeof(probe.object), &parts[F_PROBE_OBJECT]);
	copy_field(probe.symbol, sizeof(probe.symbol), &parts[F_PROBE_SYMBOL]);
	copy_field(probe.metric_id, sizeof(probe.metric_id), &parts[F_METRIC]);
	copy_field(probe.reason, sizeof(probe.reason), &parts[F_PROBE_REASON]);
	doc.span_probes = &probe;
	doc.nr_span_probes = 1;

	open.span_id = 1;
	open.parent_span_id = ev_u64__gap(EV_GAP_UNAVAILABLE);
	copy_field(open.metric_id, sizeof(open.metric_id), &parts[F_OPEN_METRIC]);
	open.thread_id = 42;
	doc.open_spans = &open;
	doc.nr_open_spans = 1;

	doc.span_counters.requested = "hw";
	copy_field(doc.span_counters.detail, sizeof(doc.span_counters.detail),
		   &parts[F_COUNTERS_DETAIL]);
	copy_field(detail, sizeof(detail), &parts[F_COLLECTOR_DETAIL]);
	collector_capability__set(&cap, COLLECTOR_HARDWARE_COUNTERS, AVAIL_UNSUPPORTED, "%s",
				  detail);
	doc.collectors = &cap;
	doc.nr_collectors = 1;

	obj = evidence_doc__to_json(&doc);
	FUZZ_CHECK(obj);
	text = strdup(evjson__to_string(obj));
	FUZZ_CHECK(text);
	len = strlen(text);
	FUZZ_CHECK(fuzz_utf8_valid(text, len));
	back = parse_whole(text, len);
	check_string(back, "target.comm", doc.target.comm);
	check_string(back, "target.exe.value", doc.target.exe);
	check_string(back, "threads.0.comm", th.comm);
	check_string(back, "span_metrics.0.metric_id", metric.metric_id);
	check_string(back, "span_probes.0.object", probe.object);
	check_string(back, "span_probes.0.symbol", probe.symbol);
	check_string(back, "span_probes.0.reason",
		     probe.reason[0] ? probe.reason : "unknown failure");
	check_string(back, "open_spans.0.metric_id", open.metric_id);
	if (doc.span_counters.detail[0])
		check_string(back, "span_counters.detail", doc.span_counters.detail);
	if (cap.detail[0])
		check_string(back, "collectors.0.detail", cap.detail);
	FUZZ_CHECK(!strcmp(evjson__to_string(back), text));
	json_object_put(back);
	json_object_put(obj);

	ret = report_doc__load_string(text, len, &rd, err, sizeof(err));
	if (ret)
		dprintf(STDERR_FILENO, "report: %s\n", err);
	FUZZ_CHECK(ret == 0);
	check_report_string(rd->comm, doc.target.comm);
	check_report_string(rd->exe, doc.target.exe);
	FUZZ_CHECK(report__text(rd, devnull) == 0);
	FUZZ_CHECK(report__html(rd, &html, &html_len) == 0);
	FUZZ_CHECK(fuzz_utf8_valid(html, html_len));
	FUZZ_CHECK(!strcasestr(html, "<script"));
	FUZZ_CHECK(report__trace(rd, &trace, &trace_len) == 0);
	FUZZ_CHECK(fuzz_utf8_valid(trace, trace_len));
	json_object_put(parse_whole(trace, trace_len));
	free(html);
	free(trace);
	report_doc__free(rd);
	free(text);

	check_promtext(doc.target.comm, false);
	check_promtext(doc.target.exe, true);
	if (!strcasestr(doc.target.comm, "openmetrics"))
		FUZZ_CHECK(!promtext__wants_openmetrics(doc.target.comm));
	if (size >= 8) {
		uint64_t ns;

		memcpy(&ns, data, sizeof(ns));
		check_seconds(ns);
		check_fmt_ns(ns);
		check_seconds(ns % 4000000000u);
		check_fmt_ns(ns % 4000000000u);
	}
	return 0;
}

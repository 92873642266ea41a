#!/bin/bash
# tools/khbpf.rules.yml: `promtool check rules` accepts it, `promtool test
# rules` passes tests/rules/khbpf.rules.test.yml (synthetic series), every
# rule has a test there, and the tests catch wrong rules: each change below
# (a quantile, a window, a threshold, a duration, a label filter, a
# template) must make them fail. As root, the metric names and labels the
# rules use are checked against a real scrape of khbpf serve.
# The rules do not depend on the build: run once.
# khbpf-test: plain-only
. "$(dirname "$0")/common.bash"

RULES=tools/khbpf.rules.yml
TESTS=tests/rules/khbpf.rules.test.yml
PROMTOOL=${PROMTOOL:-$(command -v promtool)}
if [ -z "$PROMTOOL" ]; then
	[ "${CI:-}" = true ] && fail "promtool not found; install Debian's prometheus package (tools/install-deps.sh --with-tests)"
	echo "SKIP $(basename "$0"): promtool not found (apt-get install prometheus)"
	exit 0
fi

"$PROMTOOL" check rules "$RULES" >"$TMP/check.out" 2>&1 || fail "promtool check rules: $(cat "$TMP/check.out")"
nr_rules=$(grep -cE '^ +- (record|alert): ' "$RULES")
grep -q "SUCCESS: $nr_rules rules found" "$TMP/check.out" ||
	fail "promtool check rules did not find the $nr_rules rules: $(cat "$TMP/check.out")"
"$PROMTOOL" test rules "$TESTS" >"$TMP/test.out" 2>&1 || fail "promtool test rules: $(cat "$TMP/test.out")"
echo "promtool: $nr_rules rules checked, $TESTS passes"

# Every recording rule is queried and every alert tested.
for r in $(sed -n 's/^ *- record: //p' "$RULES"); do
	grep -qE "^ *- expr: $r\$" "$TESTS" || fail "recording rule $r has no promql_expr_test"
done
for a in $(sed -n 's/^ *- alert: //p' "$RULES"); do
	grep -qE "^ *alertname: $a\$" "$TESTS" || fail "alert $a has no alert_rule_test"
done

# The changed rules: a copy of the tree's two files, the test file's
# relative rule_files path unchanged.
mkdir -p "$TMP/tree/tools" "$TMP/tree/tests/rules"
cp "$TESTS" "$TMP/tree/$TESTS"
cp "$RULES" "$TMP/tree/$RULES"
"$PROMTOOL" test rules "$TMP/tree/$TESTS" >/dev/null 2>&1 || fail "the copied tests do not pass"
"$PYTHON" - "$PROMTOOL" "$RULES" "$TMP/tree" <<'PY' || fail "a changed rule passed the tests"
import subprocess, sys

promtool, rules, tree = sys.argv[1:]
orig = open(rules, encoding="utf-8").read()
# (what, from, to): each "from" occurs once in the rules file.
changes = [
    ("p99: another quantile", "histogram_quantile(0.99,\n            rate(", "histogram_quantile(0.95,\n            rate("),
    ("p99: a longer window", 'delay_seconds_bucket{cgroup!=""}[5m]', 'delay_seconds_bucket{cgroup!=""}[10m]'),
    ("p99: --by process series kept", 'delay_seconds_bucket{cgroup!=""}', "delay_seconds_bucket"),
    ("waits: a shorter window", 'delay_seconds_count{cgroup!=""}[5m]', 'delay_seconds_count{cgroup!=""}[1m]'),
    ("waits: --by process series kept", 'delay_seconds_count{cgroup!=""}', "delay_seconds_count"),
    ("involuntary: the voluntary counter", "rate(khbpf_involuntary_switches_total",
     "rate(khbpf_voluntary_switches_total"),
    ("involuntary: a shorter window", 'switches_total{cgroup!=""}[5m]',
     'switches_total{cgroup!=""}[1m]'),
    ("involuntary: --by process series kept", 'switches_total{cgroup!=""}', "switches_total"),
    ("pressure: full, not some", 'kind="some"}', 'kind="full"}'),
    ("pressure: memory, not cpu", '{resource="cpu",', '{resource="memory",'),
    ("pressure: a shorter window", 'kind="some"}[5m]', 'kind="some"}[1m]'),
    ("delay alert: a higher threshold", "p99_5m > 0.05", "p99_5m > 0.06"),
    ("delay alert: a lower threshold", "p99_5m > 0.05", "p99_5m > 0.048"),
    ("delay alert: a lower wait rate", "waits:rate5m >= 1\n", "waits:rate5m >= 0.7\n"),
    ("delay alert: no wait rate", "          and\n          instance_cgroup:khbpf_runqueue_waits", "          or\n          instance_cgroup:khbpf_runqueue_waits"),
    ("delay alert: shorter", "waits:rate5m >= 1\n        for: 10m", "waits:rate5m >= 1\n        for: 9m"),
    ("delay alert: longer", "waits:rate5m >= 1\n        for: 10m", "waits:rate5m >= 1\n        for: 11m"),
    ("delay alert: value template", "Runqueue delay p99 of {{ $labels.cgroup }} on {{ $labels.instance }} is {{ $value | humanizeDuration }}",
     "Runqueue delay p99 of {{ $labels.cgroup }} on {{ $labels.instance }} is {{ $value | humanize }}"),
    ("pressure alert: a higher threshold", "ratio_rate5m > 0.25", "ratio_rate5m > 0.31"),
    ("pressure alert: a lower threshold", "ratio_rate5m > 0.25", "ratio_rate5m > 0.19"),
    ("pressure alert: shorter", "ratio_rate5m > 0.25\n        for: 10m", "ratio_rate5m > 0.25\n        for: 9m"),
    ("pressure alert: value template", "CPU some-pressure on {{ $labels.instance }} is {{ $value | humanizePercentage }}",
     "CPU some-pressure on {{ $labels.instance }} is {{ $value | humanize }}"),
    ("span p99: another quantile", "histogram_quantile(0.99,\n            sum without",
     "histogram_quantile(0.95,\n            sum without"),
    ("span p99: keys apart", "sum without (key) (rate(khbpf_span_duration_seconds_bucket",
     "sum without () (rate(khbpf_span_duration_seconds_bucket"),
    ("span p99: --by process series kept", 'span_duration_seconds_bucket{cgroup!=""}',
     "span_duration_seconds_bucket"),
    ("span calls: a shorter window", 'span_duration_seconds_count{cgroup!=""}[5m]',
     'span_duration_seconds_count{cgroup!=""}[1m]'),
    ("span calls: the sum, not the count", "rate(khbpf_span_duration_seconds_count",
     "rate(khbpf_span_duration_seconds_sum"),
    ("span blocked: another part", 'part="blocked"}[5m]', 'part="on_cpu"}[5m]'),
    ("span blocked: --by process series only", 'span_seconds_total{cgroup!="",',
     'span_seconds_total{cgroup="",'),
    ("span latency alert: value template",
     "{{ $labels.cgroup }} on {{ $labels.instance }} is {{ $value | humanizeDuration }}\"\n          description: \"Calls",
     "{{ $labels.cgroup }} on {{ $labels.instance }} is {{ $value | humanize }}\"\n          description: \"Calls"),
    ("span blocked: over the count", "sum without (key) (rate(khbpf_span_duration_seconds_sum",
     "sum without (key) (rate(khbpf_span_duration_seconds_count"),
    ("span latency alert: a higher threshold", "p99_5m > 0.5\n", "p99_5m > 0.97\n"),
    ("span latency alert: no call rate", "p99_5m > 0.5\n          and", "p99_5m > 0.5\n          or"),
    ("span latency alert: shorter", "khbpf_span_calls:rate5m >= 1\n        for: 10m\n        labels:\n          severity: warning\n        annotations:\n          summary: \"p99",
     "khbpf_span_calls:rate5m >= 1\n        for: 9m\n        labels:\n          severity: warning\n        annotations:\n          summary: \"p99"),
    ("span blocked alert: a higher threshold", "blocked:ratio_rate5m > 0.5", "blocked:ratio_rate5m > 0.9"),
    ("span blocked alert: a lower threshold", "blocked:ratio_rate5m > 0.5", "blocked:ratio_rate5m > 0.05"),
    ("span blocked alert: value template", "blocked {{ $value | humanizePercentage }}",
     "blocked {{ $value | humanize }}"),
    ("gap alert: the collector only", 'collector=~"scheduler-activity|scheduler"',
     'collector="scheduler-activity"'),
    ("gap alert: the fields only", 'collector=~"scheduler-activity|scheduler"',
     'collector="scheduler"'),
    ("gap alert: any field recorded", "min by (job, instance) (", "max by (job, instance) ("),
    ("gap alert: shorter", '|scheduler"}) == 0\n        for: 5m', '|scheduler"}) == 0\n        for: 4m'),
    ("gap alert: longer", '|scheduler"}) == 0\n        for: 5m', '|scheduler"}) == 0\n        for: 6m'),
    ("absent alert: every job", 'up{job="khbpf"}\n', "up\n"),
    ("absent alert: with evidence", "unless on (job, instance)\n          khbpf_evidence_available",
     "and on (job, instance)\n          khbpf_evidence_available"),
    ("absent alert: shorter", 'field="*"}\n        for: 5m', 'field="*"}\n        for: 4m'),
    ("absent alert: description", "if eq $value 0.0", "if eq $value 1.0"),
    ("windows alert: a shorter error window", "khbpf_window_errors_total[10m]",
     "khbpf_window_errors_total[5m]"),
    ("windows alert: a shorter window", "increase(khbpf_windows_total[10m])",
     "increase(khbpf_windows_total[5m])"),
    ("windows alert: errors alone", "\n          unless\n          increase(khbpf_windows_total[10m]) > 0", ""),
]
bad = []
for what, old, new in changes:
    n = orig.count(old)
    if n != 1:
        bad.append(f"{what}: {old!r} occurs {n} times in {rules}")
        continue
    with open(f"{tree}/{rules}", "w", encoding="utf-8") as f:
        f.write(orig.replace(old, new))
    r = subprocess.run([promtool, "test", "rules", f"{tree}/tests/rules/khbpf.rules.test.yml"],
                       capture_output=True, text=True)
    if r.returncode == 0:
        bad.append(f"{what}: the tests still pass")
for b in bad:
    print("  " + b, file=sys.stderr)
print(f"{len(changes) - len(bad)} of {len(changes)} changed rules fail the tests")
sys.exit(1 if bad else 0)
PY

# The names against serve's own /metrics (root: serve loads BPF).
if [ "$(id -u)" -ne 0 ]; then
	[ "${CI:-}" = true ] && fail "needs root to scrape khbpf serve, and CI must run it"
	echo "note: not root: the rules' metric names were not checked against a scrape"
	echo "prom_rules: ok"
	exit 0
fi
SERVE_PID=
trap 'rc=$?; [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null; wait 2>/dev/null; keep_failed $rc' EXIT
PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# With a span metric (CPython's gc, in every process: the test's run of
# it below) and --blocked, for the span rules' series.
PY=/usr/bin/python3.11
[ -x "$PY" ] || fail "$PY is missing (python3.11)"
"$KHBPF" serve --listen "127.0.0.1:$PORT" --interval 1 --blocked \
	--usdt-span "$PY:python:gc__start,gc__done=gc" 2>"$TMP/serve.err" &
SERVE_PID=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break
	kill -0 "$SERVE_PID" 2>/dev/null || fail "serve exited: $(cat "$TMP/serve.err")"
	sleep 0.1
done
"$PY" -c 'import gc; gc.collect()' || fail "python3.11"
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics.txt" &&
		grep -q '^khbpf_evidence_available{' "$TMP/metrics.txt" &&
		grep -q '^khbpf_span_duration_seconds_count{' "$TMP/metrics.txt" && break
	kill -0 "$SERVE_PID" 2>/dev/null || fail "serve exited: $(cat "$TMP/serve.err")"
	sleep 0.1
done
checkpoint serve-running
kill -INT "$SERVE_PID"
wait "$SERVE_PID" || fail "serve exited $? after SIGINT: $(cat "$TMP/serve.err")"
SERVE_PID=
no_bpf_left
"$PYTHON" - "$RULES" "$TMP/metrics.txt" <<'PY' || fail "the rules use series serve does not export"
import os, re, sys

rules = open(sys.argv[1], encoding="utf-8").read()
# Comments and annotations name metrics too, and recorded names hold
# families' names between colons: what counts is the expressions' selectors.
exprs = "\n".join(l for l in rules.splitlines()
                  if not re.match(r"\s*(#|summary:|description:|- record:)", l))
samples = {}
for line in open(sys.argv[2], encoding="utf-8"):
    if line.startswith("#") or not line.strip():
        continue
    m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? ", line)
    samples.setdefault(m.group(1), []).append(m.group(2) or "")
bad = []
used = sorted(set(re.findall(r"(?<![:\w])(khbpf_[a-z_]+)(?![:\w])", exprs)))
for name in used:
    # PSI stall counters exist only where the kernel keeps PSI.
    if name == "khbpf_pressure_stalled_seconds_total" and not os.path.exists("/proc/pressure/cpu"):
        continue
    if name not in samples:
        bad.append(f"no series {name} in a scrape of serve")
# The label values the selectors ask for.
want = {
    "khbpf_runqueue_delay_seconds_bucket": 'cgroup="',
    "khbpf_runqueue_delay_seconds_count": 'cgroup="',
    "khbpf_involuntary_switches_total": 'cgroup="',
    "khbpf_evidence_available": 'collector="scheduler-activity",field="*"',
    "khbpf_span_duration_seconds_bucket": 'cgroup="',
    "khbpf_span_duration_seconds_count": 'cgroup="',
    "khbpf_span_duration_seconds_sum": 'cgroup="',
    "khbpf_span_seconds_total": 'part="blocked"',
}
if os.path.exists("/proc/pressure/cpu"):
    want["khbpf_pressure_stalled_seconds_total"] = 'resource="cpu",kind="some"'
for name, label in want.items():
    if not any(label in l for l in samples.get(name, [])):
        bad.append(f"no {name} series with {label}")
if not any('collector="scheduler",' in l for l in samples.get("khbpf_evidence_available", [])):
    bad.append('no khbpf_evidence_available{collector="scheduler"} series')
for b in bad:
    print("  " + b, file=sys.stderr)
print(f"serve exports {len([n for n in used if n in samples])} of the {len(used)} metrics the rules use")
sys.exit(1 if bad else 0)
PY
echo "prom_rules: ok"

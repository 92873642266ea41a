#!/bin/bash
# khbpf serve, scraped by a real Prometheus on loopback: a workload born in
# its own cgroup v2 runs, goes quiet, and a PromQL query must return that
# cgroup's switches, timeslices and runqueue histogram exactly as the
# kernel's /proc numbers for the workload's threads add up. Also: promtool
# accepts /metrics in both formats' text form, /evidence is a valid
# document, and SIGTERM ends serve with a complete last NDJSON line. The
# Prometheus loads tools/khbpf.rules.yml: every rule evaluates cleanly, the
# recording rules have the workload's cgroup, and no evidence alert is on.
. "$(dirname "$0")/common.bash"
require_root "loads BPF"
command -v promtool >/dev/null && command -v prometheus >/dev/null ||
	{ [ "${CI:-}" = true ] && fail "prometheus/promtool missing; run tools/install-deps.sh --with-prometheus"
	  echo "SKIP serve_prometheus: prometheus not installed (tools/install-deps.sh --with-prometheus)"; exit 0; }
LOAD=${LOAD:-build/workloads/cgroupload}
CGROOT=$(awk '$9 == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CGROOT" ] || fail "no cgroup2 mount"
CG="khbpf-it-$$"
mkdir "$CGROOT/$CG" || fail "cannot make cgroup $CGROOT/$CG"
SERVE_PID= PROM_PID= LOAD_PID= SERVE2_PID=
cleanup() {
	local rc=$?
	[ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null
	[ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null
	[ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null
	[ -n "$SERVE2_PID" ] && kill "$SERVE2_PID" 2>/dev/null
	unhold_cgroup "$CGROOT/$CG"
	wait 2>/dev/null
	rmdir "$CGROOT/$CG" 2>/dev/null
	keep_failed "$rc"
}
trap cleanup EXIT

read -r PORT PPORT PORT2 < <("$PYTHON" -c '
import socket
ps = []
for _ in range(3):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); ps.append(s)
print(*[s.getsockname()[1] for s in ps])')

: >"$TMP/serve.err" # fresh: wait_for must not read a line of an earlier start
"$KHBPF" serve --listen "127.0.0.1:$PORT" --interval 1 --ndjson "$TMP/windows.ndjson" \
	>"$TMP/serve.out" 2>"$TMP/serve.err" &
SERVE_PID=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break
	kill -0 "$SERVE_PID" 2>/dev/null || fail "serve exited: $(cat "$TMP/serve.err")"
	sleep 0.1
done
curl -sf "http://127.0.0.1:$PORT/healthz" | grep -q '^ok' || fail "no /healthz"

# A second instance sees only the test's cgroup, per process (a holder below
# it: serve refuses a cgroup with no process in it).
hold_cgroup "$CGROOT/$CG"
"$KHBPF" serve --listen "127.0.0.1:$PORT2" --interval 1 --cgroup "/$CG" --by process --top 3 \
	2>"$TMP/serve2.err" &
SERVE2_PID=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$PORT2/healthz" >/dev/null && break
	kill -0 "$SERVE2_PID" 2>/dev/null || fail "serve --cgroup exited: $(cat "$TMP/serve2.err")"
	sleep 0.1
done

cat >"$TMP/prom.yml" <<EOF
global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: ["$PWD/tools/khbpf.rules.yml"]
scrape_configs:
  - job_name: khbpf
    static_configs: [ { targets: ["127.0.0.1:$PORT"] } ]
EOF
promtool check config "$TMP/prom.yml" >/dev/null || fail "promtool rejects the test's config"
prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/tsdb" \
	--web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$TMP/prom.log" 2>&1 &
PROM_PID=$!

# The workload: born in the cgroup, busy for 1.5 s, then every thread blocked.
coproc LOADP { exec "$LOAD" "$CGROOT/$CG" --threads 6 --ms 1500; }
LOAD_PID=$LOADP_PID
read -r -t 30 line <&"${LOADP[0]}" || fail "workload did not go idle"
[ "$line" = idle ] || fail "workload said '$line'"
CHILD=$(head -n1 "$CGROOT/$CG/cgroup.procs")
[ -n "$CHILD" ] || fail "no process in the cgroup"
sleep 0.5 # the main thread blocks on stdin after printing
# Prometheus takes its time to start on a slow (emulated) host: ready first.
for _ in $(seq 600); do
	curl -sf "http://127.0.0.1:$PPORT/-/ready" >/dev/null && break
	kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus exited: $(tail -c 800 "$TMP/prom.log")"
	sleep 0.1
done
curl -sf "http://127.0.0.1:$PPORT/-/ready" >/dev/null || fail "prometheus not ready within 60 s: $(tail -c 800 "$TMP/prom.log")"

# /metrics in Prometheus text format passes promtool; OpenMetrics on request.
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics.txt" || fail "GET /metrics"
promtool check metrics <"$TMP/metrics.txt" >"$TMP/promtool.out" 2>&1 ||
	fail "promtool check metrics: $(head -c 800 "$TMP/promtool.out")"
[ ! -s "$TMP/promtool.out" ] || fail "promtool lint: $(head -c 800 "$TMP/promtool.out")"
curl -sf -H 'Accept: application/openmetrics-text; version=1.0.0' \
	-D "$TMP/om.hdr" "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics.om" || fail "GET /metrics (OpenMetrics)"
grep -qi '^content-type: application/openmetrics-text' "$TMP/om.hdr" || fail "no OpenMetrics content type"
[ "$(tail -n1 "$TMP/metrics.om")" = "# EOF" ] || fail "OpenMetrics output does not end with # EOF"

"$PYTHON" - "$CHILD" "$CG" "$PPORT" "$PORT" "$PORT2" <<'PY' || fail "Prometheus and /proc disagree"
import json, os, re, sys, time, urllib.parse, urllib.request
pid, cg, pport, port, port2 = (sys.argv[1], "/" + sys.argv[2], sys.argv[3], sys.argv[4],
                               sys.argv[5])

# The kernel's own numbers for every thread of the workload (all blocked now).
want = {"vol": 0, "invol": 0, "slices": 0, "delay_ns": 0, "oncpu_ns": 0}
tids = os.listdir(f"/proc/{pid}/task")
for tid in tids:
    st = dict(l.split(":", 1) for l in open(f"/proc/{pid}/task/{tid}/status") if ":" in l)
    want["vol"] += int(st["voluntary_ctxt_switches"])
    want["invol"] += int(st["nonvoluntary_ctxt_switches"])
    run, delay, slices = map(int, open(f"/proc/{pid}/task/{tid}/schedstat").read().split())
    want["slices"] += slices
    want["delay_ns"] += delay
    want["oncpu_ns"] += run
assert len(tids) == 7, tids

def query(q):
    url = f"http://127.0.0.1:{pport}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    r = json.load(urllib.request.urlopen(url, timeout=5))
    assert r["status"] == "success", r
    return r["data"]["result"]

sel = f'{{cgroup="{cg}"}}'
exprs = {
    "vol": f"khbpf_voluntary_switches_total{sel}",
    "invol": f"khbpf_involuntary_switches_total{sel}",
    "slices": f"khbpf_timeslices_total{sel}",
    "waits": f"khbpf_runqueue_delay_seconds_count{sel}",
    "delay": f"khbpf_runqueue_delay_seconds_sum{sel}",
    "oncpu": f"khbpf_oncpu_seconds_total{sel}",
    "p99": f"histogram_quantile(0.99, khbpf_runqueue_delay_seconds_bucket{sel})",
}
got = {}
deadline = time.time() + 60
while time.time() < deadline:
    got = {k: query(v) for k, v in exprs.items()}
    # Wait for a scrape taken after the workload went quiet.
    if all(got[k] for k in got) and int(got["vol"][0]["value"][1]) == want["vol"]:
        break
    time.sleep(1)
else:
    print(f"Prometheus never showed the quiet workload: got {got}, want {want}", file=sys.stderr)
    sys.exit(1)

def val(k):
    return got[k][0]["value"][1]

def secs_to_ns(s):
    # Exact: khbpf writes integer ns as decimal seconds; Prometheus keeps a double,
    # so compare within one part in 10^12 (a double's precision), not 0.
    return float(s) * 1e9

bad = []
for k, w in (("vol", want["vol"]), ("invol", want["invol"]), ("slices", want["slices"]),
             ("waits", want["slices"])):
    if int(float(val(k))) != w:
        bad.append(f"{k}: Prometheus {val(k)}, /proc {w}")
for k, w in (("delay", want["delay_ns"]), ("oncpu", want["oncpu_ns"])):
    if abs(secs_to_ns(val(k)) - w) > max(1.0, w * 1e-12):
        bad.append(f"{k}: Prometheus {val(k)} s, /proc {w} ns")
if want["invol"] == 0 or want["vol"] < 100:
    bad.append(f"the workload did not exercise the scheduler: {want}")
p99 = float(val("p99"))
if not (0 < p99 < 10):
    bad.append(f"p99 runqueue delay {p99} s")
# The same from khbpf directly: every bucket line is cumulative and ends at the count.
text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
buckets = [l for l in text.splitlines()
           if l.startswith(f'khbpf_runqueue_delay_seconds_bucket{{cgroup="{cg}"')]
counts = [int(l.rsplit(" ", 1)[1]) for l in buckets]
if counts != sorted(counts) or counts[-1] != want["slices"] or 'le="+Inf"' not in buckets[-1]:
    bad.append(f"buckets not cumulative to {want['slices']}: {counts}")
# docs/serve.md's queries run as written.
# (rate needs two scrapes of a series: a few seconds more at most.)
for q in ("histogram_quantile(0.99, sum by (cgroup, le) "
          "(rate(khbpf_runqueue_delay_seconds_bucket[5m])))",
          "sum by (cgroup) (rate(khbpf_involuntary_switches_total[1m]))",
          'count by (reason) (khbpf_evidence_gap_info{collector="hardware-counters"})',
          'avg(khbpf_evidence_available{collector="scheduler-activity",field="*"})'):
    deadline = time.time() + 15
    while not query(q) and time.time() < deadline:
        time.sleep(1)
    if not query(q):
        bad.append(f"docs/serve.md query returned nothing: {q}")
    if q not in open("docs/serve.md").read():
        bad.append(f"query not in docs/serve.md as written: {q}")
# tools/khbpf.rules.yml: each rule evaluated without error; the recording
# rules hold the workload's cgroup (quiet since before the first scrape, so
# its rates are 0 and its p99 NaN) and a busy cgroup of the host (a finite
# value above 0); a healthy serve has no evidence alert.
recs = ("instance_cgroup:khbpf_runqueue_delay_seconds:p99_5m",
        "instance_cgroup:khbpf_runqueue_waits:rate5m",
        "instance_cgroup:khbpf_involuntary_switches:rate5m")
def busy(r):
    return query(f'{r}{{job="khbpf"}} > 0 < +Inf')
deadline = time.time() + 15
while time.time() < deadline and not all(busy(r) and query(f'{r}{sel}') for r in recs):
    time.sleep(1)
for r in recs:
    if not query(f"{r}{sel}") or not busy(r):
        bad.append(f"recording rule {r}: {query(r)}")
url = f"http://127.0.0.1:{pport}/api/v1/rules"
groups = json.load(urllib.request.urlopen(url, timeout=5))["data"]["groups"]
rules = [r for g in groups for r in g["rules"]]
# Every rule of the file, counted from it.
nr_rules = len(re.findall(r"^ +- (?:record|alert): ", open("tools/khbpf.rules.yml").read(), re.M))
if len(rules) != nr_rules or any(r["health"] != "ok" for r in rules):
    bad.append("rules not all healthy: " +
               ", ".join(f'{r["name"]} {r["health"]} {r.get("lastError", "")}' for r in rules))
alerts = query('ALERTS{alertname=~"KhbpfSchedulerEvidence.*|KhbpfEvidence.*"}')
if alerts:
    bad.append(f"evidence alerts on a healthy serve: {alerts}")
# serve --cgroup CG --by process: only the workload's process, all of its switches
# (its comm series and, once it is among the --top, its pid series, add up).
text2 = urllib.request.urlopen(f"http://127.0.0.1:{port2}/metrics", timeout=5).read().decode()
vol2 = {l.rsplit(" ", 1)[0]: int(l.rsplit(" ", 1)[1]) for l in text2.splitlines()
        if l.startswith("khbpf_voluntary_switches_total{")}
if any('comm="cgroupload"' not in k for k in vol2) or sum(vol2.values()) != want["vol"]:
    bad.append(f"serve --cgroup {cg}: {vol2}, /proc {want['vol']}")
if not any(f'pid="{pid}"' in k for k in vol2):
    bad.append(f"serve --top 3: no series with pid {pid}: {vol2}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
print(f"serve: cgroup {cg}: {want['vol']} voluntary, {want['invol']} involuntary, "
      f"{want['slices']} waits, p99 {p99 * 1e6:.0f} us: Prometheus = /proc")
PY

# /evidence: the last window as a valid document.
curl -sf "http://127.0.0.1:$PORT/evidence" >"$TMP/evidence.json" || fail "GET /evidence"
validate "$TMP/evidence.json" >/dev/null ||
	fail "/evidence does not validate"
json_check "$TMP/evidence.json" 'd["target"]["mode"] == "serve"' 'len(d["threads"]) > 0'

# Gaps are data: the hardware counters' gap is a series with its reason.
grep -q '^khbpf_evidence_available{collector="scheduler-activity",field="\*"} 1$' "$TMP/metrics.txt" ||
	curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q '^khbpf_evidence_available{collector="scheduler-activity",field="\*"} 1$' ||
	fail "no khbpf_evidence_available for the scheduler"
curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q '^khbpf_evidence_gap_info{' || fail "no gap series"

kill -INT "$SERVE2_PID"
wait "$SERVE2_PID" || fail "serve --cgroup exited $? after SIGINT"
SERVE2_PID=

# SIGTERM: serve stops, and the NDJSON file ends with a whole document.
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "serve exited $? after SIGTERM: $(cat "$TMP/serve.err")"
SERVE_PID=
"$PYTHON" - "$TMP/windows.ndjson" <<'PY' || fail "bad NDJSON"
import json, sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[-1] == "", "last line not terminated"
docs = [json.loads(l) for l in lines[:-1]]
assert len(docs) >= 3, len(docs)
assert all(d["target"]["mode"] == "serve" for d in docs)
PY
exec {LOADP[1]}>&-
wait "$LOAD_PID" 2>/dev/null
LOAD_PID=
no_bpf_left
echo "serve_prometheus: ok"

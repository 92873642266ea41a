#!/bin/bash
# khbpf serve --labels: processes in cgroup v2 directories shaped like the
# paths systemd, docker, podman, containerd, CRI-O and the kubelet (both
# cgroup drivers) make get the unit, container_id, container_name (from
# --container-names), pod_uid and qos labels those shapes stand for, on
# every series of their cgroup in /metrics (promtool clean); through a real
# Prometheus, each label value's totals equal what the /proc counters of its
# member processes' threads add up to. A renamed container's new name
# appears when the names file is replaced.
. "$(dirname "$0")/common.bash"
require_root "loads BPF"
command -v promtool >/dev/null && command -v prometheus >/dev/null ||
	{ [ "${CI:-}" = true ] && fail "prometheus/promtool missing; run tools/install-deps.sh --with-prometheus"
	  echo "SKIP serve_labels: prometheus not installed (tools/install-deps.sh --with-prometheus)"; exit 0; }
LOAD=${LOAD:-build/workloads/cgroupload}
[ -x "$LOAD" ] || fail "$LOAD is not built (make workloads)"
CGROOT=$(awk '$9 == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CGROOT" ] || fail "no cgroup2 mount"
TOP="khbpf-it-$$"
SERVE_PID= PROM_PID=
LOAD_PIDS=() LOAD_FDS=()
cleanup() {
	local rc=$? fd p
	# Closing their stdin ends the workloads; the rest are stopped.
	for fd in "${LOAD_FDS[@]}"; do exec {fd}>&-; done
	for p in "${LOAD_PIDS[@]}" $PROM_PID $SERVE_PID; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ -d "$CGROOT/$TOP" ]; then
		# Whatever is still inside (a workload's child whose parent was killed).
		[ -e "$CGROOT/$TOP/cgroup.kill" ] && echo 1 >"$CGROOT/$TOP/cgroup.kill"
		for _ in $(seq 50); do
			[ -z "$(find "$CGROOT/$TOP" -name cgroup.procs -exec cat {} + 2>/dev/null)" ] && break
			sleep 0.1
		done
		find "$CGROOT/$TOP" -depth -type d -exec rmdir {} + 2>/dev/null
	fi
	keep_failed "$rc"
}
trap cleanup EXIT

hex64() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }
uuid() { cat /proc/sys/kernel/random/uuid; }
D1=$(hex64) D2=$(hex64) P1=$(hex64) C1=$(hex64) C2=$(hex64) C3=$(hex64) C4=$(hex64) C5=$(hex64)
U1=$(uuid) U2=$(uuid) U3=$(uuid) U4=$(uuid)
# The systemd driver writes a UID's '-' as '_' (a '-' in a slice name is a level).
U1_=${U1//-/_} U2_=${U2//-/_}

# Each cgroup (below $TOP) and the labels its shape must give: unit,
# container_id, container_name, pod_uid, qos ("" when absent).
cat >"$TMP/spec" <<EOF
system.slice/nginx.service/worker-a|nginx.service||||
system.slice/nginx.service/worker-b|nginx.service||||
system.slice/docker-$D1.scope|docker-$D1.scope|$D1|web||
docker/$D2||$D2|||
machine.slice/libpod-$P1.scope/container|libpod-$P1.scope|$P1|db||
kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod$U1_.slice/cri-containerd-$C1.scope|cri-containerd-$C1.scope|$C1||$U1|Burstable
kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod$U1_.slice/cri-containerd-$C2.scope|cri-containerd-$C2.scope|$C2||$U1|Burstable
kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod$U2_.slice/crio-$C3.scope|crio-$C3.scope|$C3||$U2|BestEffort
kubepods/besteffort/pod$U3/$C4||$C4||$U3|BestEffort
kubepods/pod$U4/$C5||$C5||$U4|Guaranteed
user.slice/user-1000.slice/user@1000.service/app.slice/x.scope|x.scope||||
plain/worker|||||
EOF
printf '{"%s": "web", "%s": "db", "%s": "not running"}\n' "$D1" "$P1" "$(hex64)" >"$TMP/names.json"

while IFS='|' read -r rel _; do
	mkdir -p "$CGROOT/$TOP/$rel" || fail "cannot make cgroup $CGROOT/$TOP/$rel"
done <"$TMP/spec"

PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
PPORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
[ "$PORT" != "$PPORT" ] || fail "the same port twice: $PORT"

"$KHBPF" serve --listen "127.0.0.1:$PORT" --interval 1 --labels unit,container,pod \
	--container-names "$TMP/names.json" >"$TMP/serve.out" 2>"$TMP/serve.err" &
SERVE_PID=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break
	kill -0 "$SERVE_PID" 2>/dev/null || fail "serve exited: $(cat "$TMP/serve.err")"
	sleep 0.1
done
curl -sf "http://127.0.0.1:$PORT/healthz" | grep -q '^ok' || fail "no /healthz: $(cat "$TMP/serve.err")"
checkpoint serving

cat >"$TMP/prom.yml" <<EOF
global: { scrape_interval: 1s, evaluation_interval: 1s }
scrape_configs:
  - job_name: khbpf
    static_configs: [ { targets: ["127.0.0.1:$PORT"] } ]
EOF
prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/tsdb" \
	--web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$TMP/prom.log" 2>&1 &
PROM_PID=$!

# One workload per cgroup, all at once (more spinners than CPUs: preemptions
# and runqueue waits), born in its cgroup; each goes quiet, then waits for
# its stdin to close.
i=0
while IFS='|' read -r rel _; do
	mkfifo "$TMP/in.$i"
	"$LOAD" "$CGROOT/$TOP/$rel" --threads 2 --ms 600 <"$TMP/in.$i" >"$TMP/out.$i" 2>"$TMP/err.$i" &
	LOAD_PIDS+=($!)
	exec {fd}>"$TMP/in.$i"
	LOAD_FDS+=("$fd")
	i=$((i + 1))
done <"$TMP/spec"
checkpoint workloads
for ((j = 0; j < i; j++)); do
	for _ in $(seq 300); do
		grep -q '^idle$' "$TMP/out.$j" && break
		kill -0 "${LOAD_PIDS[j]}" 2>/dev/null || fail "workload $j exited: $(cat "$TMP/err.$j")"
		sleep 0.1
	done
	grep -q '^idle$' "$TMP/out.$j" || fail "workload $j did not go idle"
done
sleep 0.5 # each main thread blocks on stdin after printing
while IFS='|' read -r rel rest; do
	pid=$(head -n1 "$CGROOT/$TOP/$rel/cgroup.procs")
	[ -n "$pid" ] || fail "no process in $rel"
	echo "$rel|$pid|$rest"
done <"$TMP/spec" >"$TMP/members"

for _ in $(seq 600); do
	curl -sf "http://127.0.0.1:$PPORT/-/ready" >/dev/null && break
	kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus exited: $(tail -c 800 "$TMP/prom.log")"
	sleep 0.1
done
curl -sf "http://127.0.0.1:$PPORT/-/ready" >/dev/null || fail "prometheus not ready within 60 s: $(tail -c 800 "$TMP/prom.log")"

curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics.txt" || fail "GET /metrics"
promtool check metrics <"$TMP/metrics.txt" >"$TMP/promtool.out" 2>&1 ||
	fail "promtool check metrics: $(head -c 800 "$TMP/promtool.out")"
[ ! -s "$TMP/promtool.out" ] || fail "promtool lint: $(head -c 800 "$TMP/promtool.out")"
curl -sf -H 'Accept: application/openmetrics-text; version=1.0.0' \
	"http://127.0.0.1:$PORT/metrics" >"$TMP/metrics.om" || fail "GET /metrics (OpenMetrics)"
[ "$(tail -n1 "$TMP/metrics.om")" = "# EOF" ] || fail "OpenMetrics output does not end with # EOF"

"$PYTHON" - "$TMP/members" "/$TOP" "$PORT" "$PPORT" "$CGROOT" <<'PY' || fail "labels or totals wrong"
import json, os, re, sys, time, urllib.parse, urllib.request
members_file, top, port, pport = sys.argv[1:5]
names = ("unit", "container_id", "container_name", "pod_uid", "qos")
members = []
for line in open(members_file):
    rel, pid, *vals = line.rstrip("\n").split("|")
    members.append((f"{top}/{rel}", pid, {k: v for k, v in zip(names, vals) if v}))

def proc_counts(pid):
    # The kernel's own numbers for every thread (all blocked now).
    c = {"vol": 0, "invol": 0, "slices": 0, "delay_ns": 0, "oncpu_ns": 0}
    tids = os.listdir(f"/proc/{pid}/task")
    assert len(tids) == 3, (pid, tids)
    for tid in tids:
        st = dict(l.split(":", 1) for l in open(f"/proc/{pid}/task/{tid}/status") if ":" in l)
        c["vol"] += int(st["voluntary_ctxt_switches"])
        c["invol"] += int(st["nonvoluntary_ctxt_switches"])
        run, delay, slices = map(int, open(f"/proc/{pid}/task/{tid}/schedstat").read().split())
        c["slices"] += slices
        c["delay_ns"] += delay
        c["oncpu_ns"] += run
    return c

counts = {cg: proc_counts(pid) for cg, pid, _ in members}
bad = []

# 1. /metrics: every family's series of each cgroup carries exactly its shape's labels.
label_re = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
seen = {}
for line in text.splitlines():
    if line.startswith("#") or "{" not in line:
        continue
    name, rest = line.split("{", 1)
    labels = dict(label_re.findall(rest.rsplit("}", 1)[0]))
    if not labels.get("cgroup", "").startswith(top + "/"):
        continue
    labels.pop("le", None)
    labels.pop("distance", None)
    if name == "khbpf_pressure_stalled_seconds_total":
        labels.pop("resource", None)
        labels.pop("kind", None)
    cg = labels.pop("cgroup")
    seen.setdefault(cg, set()).add(name)
    want = next((m[2] for m in members if m[0] == cg), None)
    if want is None:
        bad.append(f"a series of a cgroup the test did not make: {line}")
    elif labels != want:
        bad.append(f"{cg}: {name} has labels {labels}, expected {want}")
        break
families = {"khbpf_oncpu_seconds_total", "khbpf_voluntary_switches_total",
            "khbpf_involuntary_switches_total", "khbpf_timeslices_total", "khbpf_migrations_total",
            "khbpf_migrations_by_distance_total", "khbpf_runqueue_unbinned_waits_total",
            "khbpf_runqueue_unbinned_delay_seconds_total", "khbpf_runqueue_delay_seconds_bucket",
            "khbpf_runqueue_delay_seconds_sum", "khbpf_runqueue_delay_seconds_count"}
# Each cgroup's PSI stall counters too, where the kernel keeps them (cpu.pressure).
cgroot = sys.argv[5]
for cg, _, _ in members:
    want_families = families | ({"khbpf_pressure_stalled_seconds_total"}
                                if os.path.exists(f"{cgroot}{cg}/cpu.pressure") else set())
    if seen.get(cg) != want_families:
        bad.append(f"{cg}: families {sorted(seen.get(cg, ()))}")

# 2. Through Prometheus: each label value's totals are its members' /proc sums.
def query(q):
    url = f"http://127.0.0.1:{pport}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    r = json.load(urllib.request.urlopen(url, timeout=5))
    assert r["status"] == "success", r
    return r["data"]["result"]

sel = f'{{cgroup=~"{top}/.*"}}'
metrics = {"vol": f"khbpf_voluntary_switches_total{sel}",
           "invol": f"khbpf_involuntary_switches_total{sel}",
           "slices": f"khbpf_timeslices_total{sel}",
           "waits": f"khbpf_runqueue_delay_seconds_count{sel}",
           "delay_ns": f"khbpf_runqueue_delay_seconds_sum{sel}",
           "oncpu_ns": f"khbpf_oncpu_seconds_total{sel}"}
want = {}
for label in ("unit", "container_id", "container_name", "pod_uid", "qos"):
    for cg, _, labels in members:
        if label not in labels:
            continue
        w = want.setdefault((label, labels[label]), dict.fromkeys(metrics, 0))
        for k in metrics:
            w[k] += counts[cg]["slices" if k == "waits" else k]
# Values shared by several cgroups, summed across them: a unit, a pod, a QoS class.
for key in (("unit", "nginx.service"), ("qos", "BestEffort"), ("qos", "Burstable")):
    assert sum(1 for _, _, l in members if l.get(key[0]) == key[1]) == 2, key

def got_now():
    got = {}
    for label in ("unit", "container_id", "container_name", "pod_uid", "qos"):
        for k, expr in metrics.items():
            for r in query(f"sum by ({label}) ({expr})"):
                v = r["metric"].get(label)
                if v is not None:
                    got.setdefault((label, v), {})[k] = float(r["value"][1])
    return got

def differences(got):
    out = []
    for key, w in want.items():
        g = got.get(key)
        if g is None:
            out.append(f"{key}: no series in Prometheus")
            continue
        for k, wv in w.items():
            gv = g.get(k)
            if gv is None:
                out.append(f"{key} {k}: missing")
            elif k.endswith("_ns"):
                if abs(gv * 1e9 - wv) > max(1.0, wv * 1e-12):
                    out.append(f"{key} {k}: Prometheus {gv} s, /proc {wv} ns")
            elif int(gv) != wv:
                out.append(f"{key} {k}: Prometheus {gv}, /proc {wv}")
    extra = set(got) - set(want)
    if extra:
        out.append(f"label values nobody has: {sorted(extra)}")
    return out

deadline = time.time() + 60
while True:
    diff = differences(got_now())
    if not diff or time.time() > deadline:
        break
    time.sleep(1)
bad += diff
# docs/serve.md's label queries run as written and find the test's pods, units and containers.
# (rate needs two scrapes of a series: a few seconds more at most.)
for q, label in (("sum by (pod_uid, qos) (rate(khbpf_oncpu_seconds_total[5m]))", "pod_uid"),
                 ("histogram_quantile(0.99, sum by (unit, le) "
                  "(rate(khbpf_runqueue_delay_seconds_bucket[5m])))", "unit"),
                 ("sum by (container_id, container_name) "
                  "(rate(khbpf_involuntary_switches_total[1m]))", "container_name")):
    mine = {v for (l, v) in want if l == label}
    deadline = time.time() + 15
    while True:
        found = {r["metric"].get(label) for r in query(q)} & mine
        if found == mine or time.time() > deadline:
            break
        time.sleep(1)
    if found != mine:
        bad.append(f"docs/serve.md query {q}: {label} {sorted(mine - found)} missing")
    if q not in open("docs/serve.md").read():
        bad.append(f"query not in docs/serve.md as written: {q}")
total = {k: sum(c[k] for c in counts.values()) for k in ("vol", "invol", "slices")}
if total["invol"] == 0 or total["vol"] < 100:
    bad.append(f"the workloads did not exercise the scheduler: {total}")
if bad:
    print("\n".join(bad[:20]), file=sys.stderr)
    sys.exit(1)
print(f"serve_labels: {len(members)} cgroups, {len(want)} label values: Prometheus = /proc "
      f"({total['vol']} voluntary, {total['invol']} involuntary, {total['slices']} timeslices)")
PY

# The names file replaced (a new file renamed over it): the next scrape has the new name.
printf '{"%s": "web-2", "%s": "db"}\n' "$D1" "$P1" >"$TMP/names.new"
mv "$TMP/names.new" "$TMP/names.json"
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics2.txt" || fail "GET /metrics after the rename"
grep -q "^khbpf_voluntary_switches_total{cgroup=\"/$TOP/system.slice/docker-$D1.scope\",unit=\"docker-$D1.scope\",container_id=\"$D1\",container_name=\"web-2\"} " \
	"$TMP/metrics2.txt" || fail "the new name is not in /metrics: $(grep "$D1" "$TMP/metrics2.txt" | head -n 2)"
# A broken names file: one line in serve's log, and the names so far stay.
echo '{"x": ' >"$TMP/names.new"
mv "$TMP/names.new" "$TMP/names.json"
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics3.txt" || fail "GET /metrics with a broken names file"
curl -sf "http://127.0.0.1:$PORT/metrics" >/dev/null || fail "GET /metrics with a broken names file"
grep -q "container_name=\"web-2\"" "$TMP/metrics3.txt" || fail "the names were lost with a broken file"
[ "$(grep -c -- '--container-names' "$TMP/serve.err")" -eq 1 ] ||
	fail "expected one log line for the broken names file: $(cat "$TMP/serve.err")"

kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "serve exited $? after SIGTERM: $(cat "$TMP/serve.err")"
SERVE_PID=
for fd in "${LOAD_FDS[@]}"; do exec {fd}>&-; done
LOAD_FDS=()
for p in "${LOAD_PIDS[@]}"; do wait "$p" || fail "a workload exited $?"; done
LOAD_PIDS=()
no_bpf_left
echo "serve_labels: ok"

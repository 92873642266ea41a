#!/bin/bash
# khbpf serve exports PSI stall counters for the host and for each cgroup
# series (--by cgroup), read when scraped: every value of the test's own
# cgroup (busy loops in it stall on CPU) and of the host lies between the
# kernel's total= read just before and just after the scrape, in exact
# decimal seconds. promtool accepts /metrics; the thermal families are there
# exactly when sysfs has zones and thermal_throttle; /evidence carries the
# window's pressure and thermal sections.
. "$(dirname "$0")/common.bash"
require_root "loads BPF"
CGROOT=$(awk '$9 == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
if [ -z "$CGROOT" ] || [ ! -r /proc/pressure/cpu ] || ! command -v promtool >/dev/null; then
	[ "${CI:-}" = true ] && fail "CI needs cgroup v2, /proc/pressure and promtool"
	echo "SKIP $(basename "$0"): no cgroup2 mount, /proc/pressure or promtool"
	exit 0
fi
NAME="khbpf-psi-serve-$$"
CG="$CGROOT/$NAME"
mkdir "$CG" || fail "cannot make cgroup $CG"
SERVE_PID= LOAD_PID=
cleanup() {
	local rc=$? p
	[ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null
	for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	for _ in $(seq 50); do rmdir "$CG" 2>/dev/null && break; sleep 0.1; done
	keep_failed "$rc"
}
trap cleanup EXIT

PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$KHBPF" serve --listen "127.0.0.1:$PORT" --interval 1 2>"$TMP/serve.err" &
SERVE_PID=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break
	kill -0 "$SERVE_PID" 2>/dev/null || fail "serve exited: $(cat "$TMP/serve.err")"
	sleep 0.1
done

# More busy loops than CPUs in the cgroup until the test ends.
bash -c 'echo $$ >"$0/cgroup.procs" && for _ in $(seq "$1"); do sh -c "while :; do :; done" & done; wait' \
	"$CG" "$(($(nproc) + 1))" &
LOAD_PID=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q "{cgroup=\"/$NAME\",resource=\"cpu\"" && break
	sleep 0.1
done

snap() {
	for r in cpu memory io; do
		cat "/proc/pressure/$r" >"$TMP/$1.host.$r"
		cat "$CG/$r.pressure" >"$TMP/$1.cg.$r"
	done
}
checkpoint "serving"
snap before
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics.txt" || fail "GET /metrics"
snap after

promtool check metrics <"$TMP/metrics.txt" >"$TMP/promtool.out" 2>&1 ||
	fail "promtool check metrics: $(head -c 800 "$TMP/promtool.out")"
[ ! -s "$TMP/promtool.out" ] || fail "promtool lint: $(head -c 800 "$TMP/promtool.out")"

"$PYTHON" - "$TMP" "/$NAME" <<'PY' || fail "serve's stall counters do not match /proc"
import os, re, sys
tmp, cg = sys.argv[1:]

def totals(when, scope, res):
    out = {}
    for line in open(f"{tmp}/{when}.{scope}.{res}").read().splitlines():
        kind, *fields = line.split()
        out[kind] = int(dict(f.split("=") for f in fields)["total"])
    return out

def us(text):
    # Exact: decimal seconds with at most 6 digits after the point, back to microseconds.
    whole, _, frac = text.partition(".")
    assert re.fullmatch(r"\d+", whole) and re.fullmatch(r"\d{0,6}", frac), text
    return int(whole) * 1000000 + int(frac.ljust(6, "0") or 0)

series = {}
for line in open(f"{tmp}/metrics.txt").read().splitlines():
    m = re.fullmatch(r'khbpf_pressure_stalled_seconds_total\{(.*)\} (\S+)', line)
    if m:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        series[(labels.get("cgroup"), labels["resource"], labels["kind"])] = us(m.group(2))
checked = 0
for scope, label in (("host", None), ("cg", cg)):
    for res in ("cpu", "memory", "io"):
        lo, hi = totals("before", scope, res), totals("after", scope, res)
        for kind in ("some", "full"):
            key = (label, res, kind)
            if scope == "host" and res == "cpu" and kind == "full":
                assert key not in series, "the system's cpu full is the kernel's constant 0"
                continue
            assert key in series, (key, sorted(series))
            assert lo[kind] <= series[key] <= hi[kind], (key, lo[kind], series[key], hi[kind])
            checked += 1
assert series[(cg, "cpu", "some")] > 0, "no CPU stall in the busy cgroup"

text = open(f"{tmp}/metrics.txt").read()
zones = os.path.isdir("/sys/class/thermal") and any(
    n.startswith("thermal_zone") for n in os.listdir("/sys/class/thermal"))
throttle = os.path.isdir("/sys/devices/system/cpu/cpu0/thermal_throttle")
assert ("\nkhbpf_thermal_max_zone_celsius " in text) == zones, "thermal gauge vs sysfs"
assert ("khbpf_thermal_throttle_events_total{" in text) == throttle, "throttle vs sysfs"
print(f"serve: {checked} stall counters between independent readings; "
      f"cgroup cpu some {series[(cg, 'cpu', 'some')]} us")
PY

sleep 1.5 # a window has ended
curl -sf "http://127.0.0.1:$PORT/evidence" >"$TMP/evidence.json" || fail "GET /evidence"
validate "$TMP/evidence.json" >/dev/null ||
	fail "/evidence does not validate"
json_check "$TMP/evidence.json" \
	'[c["availability"] for c in d["collectors"] if c["collector"] == "pressure-thermal"] == ["available"]' \
	'd["pressure"]["host"]["stall"]["cpu_some_us"]["value"]["status"] == "recorded"' \
	'd["pressure"]["cgroup"]["path"] == [l for l in open("/proc/1/cgroup") if l.startswith("0::")][0][3:].strip()' \
	'"start" in d["thermal"] and "throttle" in d["thermal"]'

kill -INT "$SERVE_PID"
wait "$SERVE_PID" || fail "serve exited $? after SIGINT: $(cat "$TMP/serve.err")"
SERVE_PID=
kill -KILL $(cat "$CG/cgroup.procs") 2>/dev/null
{ wait "$LOAD_PID"; } 2>/dev/null
LOAD_PID=
no_bpf_left
echo "serve_pressure: ok"

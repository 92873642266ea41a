#!/bin/bash
# run and attach documents carry PSI for the host and the target's cgroup v2:
# a workload of more busy loops than CPUs runs in its own cgroup (so it
# stalls on CPU there), and every total= khbpf recorded lies between
# readings the test made independently just before and just after khbpf's
# (the workload reads at its first and last step; the test before khbpf
# starts and after it ends), and the window's stall is exactly end - start.
# Thermal values are recorded where sysfs has zones and thermal_throttle,
# else gaps with their reason and detail (this VM has neither).
. "$(dirname "$0")/common.bash"
require_root "makes a cgroup v2 and moves processes into it"

CGROOT=$(awk '$9 == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
if [ -z "$CGROOT" ] || [ ! -r /proc/pressure/cpu ]; then
	[ "${CI:-}" = true ] && fail "CI needs cgroup v2 and /proc/pressure (CONFIG_PSI)"
	echo "SKIP $(basename "$0"): no cgroup2 mount or no /proc/pressure"
	exit 0
fi
NAME="khbpf-psi-$$"
CG="$CGROOT/$NAME"
mkdir "$CG" || fail "cannot make cgroup $CG"
[ -r "$CG/cpu.pressure" ] || { rmdir "$CG"; fail "$CG has no cpu.pressure"; }
SPIN_PID= ATTACH_PID=
cleanup() {
	local rc=$? p
	[ -n "$ATTACH_PID" ] && kill "$ATTACH_PID" 2>/dev/null
	[ -n "$SPIN_PID" ] && kill "$SPIN_PID" 2>/dev/null
	for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	for _ in $(seq 50); do rmdir "$CG" 2>/dev/null && break; sleep 0.1; done
	keep_failed "$rc"
}
trap cleanup EXIT

# snap TAG: the six PSI files of the host and of the cgroup, now.
cat >"$TMP/snap.sh" <<'EOF'
for r in cpu memory io; do
	cat "/proc/pressure/$r" >"$OUT/$1.host.$r"
	cat "$CG/$r.pressure" >"$OUT/$1.cg.$r"
done
EOF
snap() { OUT=$TMP CG=$CG bash "$TMP/snap.sh" "$1"; }
# More busy loops than CPUs for $2 s, bracketed by the workload's own readings.
SPINNERS=$(($(nproc) + 1))
cat >"$TMP/workload.sh" <<'EOF'
bash "$OUT/snap.sh" "$1.after_start"
for _ in $(seq "$SPINNERS"); do timeout "$2" sh -c 'while :; do :; done' & done
wait
bash "$OUT/snap.sh" "$1.before_end"
EOF
export OUT=$TMP CG SPINNERS

# check DOC TAG: khbpf's readings between the test's, the stall exact.
check() {
	"$PYTHON" - "$1" "$TMP" "$2" "/$NAME" <<'PY' || fail "pressure in $1 does not match /proc"
import json, os, sys
doc, tmp, tag, cgpath = sys.argv[1:]
d = json.load(open(doc))

def totals(when, scope, res):
    text = open(f"{tmp}/{tag}.{when}.{scope}.{res}").read()
    out = {}
    for line in text.splitlines():
        kind, *fields = line.split()
        out[kind] = int(dict(f.split("=") for f in fields)["total"])
    return out

def recorded(ev):
    assert ev["value"]["status"] == "recorded", ev
    return ev["value"]["value"]

av = {c["collector"]: c for c in d["collectors"]}
assert av["pressure-thermal"]["availability"] == "available", av["pressure-thermal"]
p = d["pressure"]
assert p["host"]["path"] == "/proc/pressure", p["host"]["path"]
assert p["cgroup"]["path"] == cgpath, (p["cgroup"]["path"], cgpath)
checked = 0
for scope, key, src in (("host", "host", "proc-pressure"), ("cg", "cgroup", "sysfs-cgroup")):
    s = p[key]
    assert "detail" not in s, s["detail"]
    for res in ("cpu", "memory", "io"):
        lo0, hi0 = totals("before_start", scope, res), totals("after_start", scope, res)
        lo1, hi1 = totals("before_end", scope, res), totals("after_end", scope, res)
        for kind in ("some", "full"):
            f = f"{res}_{kind}_total_us"
            stall = s["stall"][f"{res}_{kind}_us"]
            assert s["start"][f]["source"] == src and stall["source"] == src, (f, s["start"][f])
            if scope == "host" and res == "cpu" and kind == "full":
                # The kernel's constant 0 for the system: a gap, not a zero.
                for ev in (s["start"][f], s["end"][f], stall):
                    assert ev["value"] == {"status": "unavailable", "reason": "unsupported"}, ev
                continue
            t0, t1 = recorded(s["start"][f]), recorded(s["end"][f])
            assert lo0[kind] <= t0 <= hi0[kind], (key, f, "start", lo0[kind], t0, hi0[kind])
            assert lo1[kind] <= t1 <= hi1[kind], (key, f, "end", lo1[kind], t1, hi1[kind])
            assert recorded(stall) == t1 - t0, (key, f, recorded(stall), t1, t0)
            checked += 1
        for when in ("start", "end"):
            a = recorded(s[when][f"{res}_some_avg10_milli"])
            assert 0 <= a <= 100000, (key, res, when, a)
# The files are read just after the window's clock readings, so a stall over the
# whole window may pass wall_ns by the time one read of three files takes: 50 ms.
stall = recorded(p["cgroup"]["stall"]["cpu_some_us"])
wall_us = d["window"]["wall_ns"] // 1000
assert 0 < stall <= wall_us + 50000, ("no CPU stall in the workload's cgroup?", stall, wall_us)

# Thermal: recorded where sysfs has it, else a gap with its reason and a detail.
t = d["thermal"]
zones = os.path.isdir("/sys/class/thermal") and any(
    n.startswith("thermal_zone") for n in os.listdir("/sys/class/thermal"))
throttle = os.path.isdir("/sys/devices/system/cpu/cpu0/thermal_throttle")
for when in ("start", "end"):
    z, c = t[when]["max_zone_millicelsius"], t[when]["throttle_events"]
    assert z["source"] == c["source"] == "sysfs-thermal"
    if not zones:
        assert z["value"] == {"status": "unavailable", "reason": "unsupported"}, z
    if not throttle:
        assert c["value"] == {"status": "unavailable", "reason": "unsupported"}, c
if not zones:
    assert "no thermal zones" in t["detail"], t
if not throttle:
    assert "no thermal_throttle directory" in t["detail"], t
    assert t["throttle"]["core_events"]["value"]["reason"] == "unsupported", t["throttle"]
print(f"{tag}: {checked} totals between independent readings, stall exact; "
      f"cgroup cpu some stall {stall} us of {wall_us} us")
PY
	validate "$1" >/dev/null || fail "$1 does not validate"
}

# run: khbpf itself is moved into the cgroup, so CMD starts there.
for mode in bpf no-bpf; do
	flags=()
	[ "$mode" = no-bpf ] && flags=(--no-bpf)
	snap "run-$mode.before_start"
	bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" \
		"$KHBPF" run "${flags[@]}" -o "$TMP/run-$mode.json" -- bash "$TMP/workload.sh" "run-$mode" 1 \
		2>"$TMP/run-$mode.err" || fail "khbpf run ($mode) failed: $(cat "$TMP/run-$mode.err")"
	snap "run-$mode.after_end"
	checkpoint "after-run-$mode"
	check "$TMP/run-$mode.json" "run-$mode"
done

# attach: a process already in the cgroup, spinning for longer than the
# window; the test reads once inside it: after khbpf's start, before its end.
bash -c 'echo $$ >"$0/cgroup.procs" && exec bash "$1" attach-load 4' "$CG" "$TMP/workload.sh" &
SPIN_PID=$!
snap attach.before_start
"$KHBPF" attach --pid "$SPIN_PID" -d 1 -o "$TMP/attach.json" 2>"$TMP/attach.err" &
ATTACH_PID=$!
wait_for "watching pid" "$TMP/attach.err" || fail "attach did not start: $(cat "$TMP/attach.err")"
checkpoint "attaching"
snap attach.after_start
for f in "$TMP"/attach.after_start.*; do cp "$f" "${f/after_start/before_end}"; done
wait "$ATTACH_PID" || fail "khbpf attach failed: $(cat "$TMP/attach.err")"
ATTACH_PID=
snap attach.after_end
check "$TMP/attach.json" attach
wait "$SPIN_PID"
SPIN_PID=
echo "pressure_window: ok"

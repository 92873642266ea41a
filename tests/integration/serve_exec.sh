#!/bin/bash
# serve --by process names a process by what it runs now: a shell that
# waits and then execs python3 is counted under "bash"
# until the exec and under "python3" after it, and the two rows add up to
# the process's own /proc counters, exactly (it became a target with its
# whole history, so serve's first delta is every switch since its birth).
. "$(dirname "$0")/common.bash"
require_root "serve loads BPF"
CGROOT=$(awk '$9 == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CGROOT" ] || fail "no cgroup2 mount"
CG="khbpf-it-exec-$$"
SERVE_PID="" P=""
cleanup() {
	local rc=$?
	exec 8>&- 2>/dev/null
	[ -z "$P" ] || kill "$P" 2>/dev/null
	[ -z "$SERVE_PID" ] || kill -INT "$SERVE_PID" 2>/dev/null
	unhold_cgroup "$CGROOT/$CG"
	wait 2>/dev/null
	rmdir "$CGROOT/$CG" 2>/dev/null
	keep_failed "$rc"
}
trap cleanup EXIT
mkdir "$CGROOT/$CG" || fail "cannot make cgroup $CGROOT/$CG"
hold_cgroup "$CGROOT/$CG" # serve refuses a cgroup with no process in it
start_serve --interval 1 --cgroup "/$CG" --by process

# The process: a bash subshell joins the cgroup, sleeps 0.3 s (a builtin
# read timing out: no child, so it is the cgroup's only process), then
# becomes python3, which works for 0.3 s and blocks reading the fifo.
mkfifo "$TMP/hold" "$TMP/pause"
(
	echo "$BASHPID" >"$CGROOT/$CG/cgroup.procs" || exit 1
	read -r -t 0.3 _ <>"$TMP/pause"
	exec "$PYTHON" -c '
import sys, time
end = time.monotonic() + 0.3
n = 0
while time.monotonic() < end:
    n += 1
    if n % 1000 == 0:
        time.sleep(0.0005)
print("idle", flush=True)
sys.stdin.read()' <"$TMP/hold" >"$TMP/py.out"
) &
P=$!
exec 8>"$TMP/hold"
wait_for '^idle' "$TMP/py.out" || fail "python3 did not start"
[ "$(cat /proc/"$P"/comm)" = python3 ] || fail "pid $P is $(cat /proc/"$P"/comm), not python3"

"$PYTHON" - "$P" "$PORT" <<'PY' || fail "serve's rows for the exec'd process disagree with /proc"
import sys, time, urllib.request
pid, port = sys.argv[1], sys.argv[2]
st = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status") if ":" in l)
want = (int(st["voluntary_ctxt_switches"]), int(st["nonvoluntary_ctxt_switches"]))

def rows():
    got = {}
    for line in urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode().splitlines():
        for name, i in (("khbpf_voluntary_switches_total", 0), ("khbpf_involuntary_switches_total", 1)):
            if line.startswith(name + "{"):
                labels, value = line[len(name) + 1:].rsplit("} ", 1)
                comm = dict(kv.split("=", 1) for kv in labels.split(","))["comm"].strip('"')
                got.setdefault(comm, [0, 0])[i] += int(value)
    return got

# The process is blocked: its last switch-out is in the kernel's groups,
# and serve reads them at each scrape.
for _ in range(50):
    got = rows()
    b, p = got.get("bash", [0, 0]), got.get("python3", [0, 0])
    if (b[0] + p[0], b[1] + p[1]) == want:
        break
    time.sleep(0.2)
print(f"pid {pid}: /proc voluntary/involuntary {want}; serve bash {b}, python3 {p}, rows {sorted(got)}")
ok = (b[0] + p[0], b[1] + p[1]) == want and p[0] > 0 and b[0] > 0 and set(got) == {"bash", "python3"}
sys.exit(0 if ok else 1)
PY
echo "serve_exec: ok"

#!/bin/bash
# attach --cgroup: a cgroup v2 of the test's own, three `cat`s each blocked
# reading its own fifo (so that its counters do not move while it waits): P1
# in the cgroup throughout, P2 moved into it during the window, P3 moved out
# of it. Each is fed lines while in the window, and each one's counters are
# read from /proc whenever it is blocked. khbpf must have P1 from the
# window's start to its end, P2 from its move (joined "moved"), P3 up to its
# move (left_cgroup), exactly, and every process forked in the cgroup.
. "$(dirname "$0")/common.bash"
require_root "attach loads BPF"
CGROOT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CGROOT" ] || fail "no cgroup2 mount"
CG="khbpf-it-cgset-$$"
PIDS=() KH=""
cleanup() {
	local rc=$?
	exec 3>&- 4>&- 5>&- 2>/dev/null
	[ -z "$KH" ] || kill -INT "$KH" 2>/dev/null
	[ ${#PIDS[@]} -eq 0 ] || kill "${PIDS[@]}" 2>/dev/null
	wait 2>/dev/null
	rmdir "$CGROOT/$CG" 2>/dev/null
	keep_failed "$rc"
}
trap cleanup EXIT
mkdir "$CGROOT/$CG" || fail "cannot make cgroup $CGROOT/$CG"
mkfifo "$TMP/f1" "$TMP/f2" "$TMP/f3"

# counters PID: voluntary involuntary on-CPU, as /proc has them now.
counters() {
	echo "$(awk '/^nr_voluntary_switches/ {v=$3} /^nr_involuntary_switches/ {i=$3} END {print v, i}' /proc/"$1"/sched) $(cut -d' ' -f1 /proc/"$1"/schedstat)"
}
# blocked PID: its only thread sleeps in a read (S, and not on a CPU).
blocked() {
	for _ in $(seq 200); do
		[ "$(awk '{print $3}' /proc/"$1"/stat)" = S ] && return 0
		sleep 0.01
	done
	fail "pid $1 never blocked"
}
feed() { # FD N: N lines, one write each, waiting for the reader to block again.
	local i
	for i in $(seq "$2"); do echo "line $i" >&"$1"; sleep 0.01; done
}

( echo "$BASHPID" >"$CGROOT/$CG/cgroup.procs" && exec cat "$TMP/f1" >/dev/null ) &
PIDS+=($!)
cat "$TMP/f2" >/dev/null &
PIDS+=($!)
( echo "$BASHPID" >"$CGROOT/$CG/cgroup.procs" && exec cat "$TMP/f3" >/dev/null ) &
PIDS+=($!)
P1=${PIDS[0]} P2=${PIDS[1]} P3=${PIDS[2]}
exec 3>"$TMP/f1" 4>"$TMP/f2" 5>"$TMP/f3"
for p in "$P1" "$P2" "$P3"; do blocked "$p"; done
c1_0=$(counters "$P1") c3_0=$(counters "$P3")

"$KHBPF" attach --cgroup "/$CG" -o "$TMP/doc.json" 2>"$TMP/kh.err" &
KH=$!
for _ in $(seq 200); do grep -q watching "$TMP/kh.err" && break; sleep 0.05; done
grep -q watching "$TMP/kh.err" || fail "attach did not start: $(cat "$TMP/kh.err")"
checkpoint started

feed 3 20
# A shell moved into the cgroup (joins when moved) forks /bin/true there:
# the child joins at its fork.
( echo "$BASHPID" >"$CGROOT/$CG/cgroup.procs" && /bin/true && : ) &
wait $!
blocked "$P2"
c2_move=$(counters "$P2")
echo "$P2" >"$CGROOT/$CG/cgroup.procs" || fail "cannot move $P2 in"
feed 4 20
feed 5 10
blocked "$P3"
c3_move=$(counters "$P3")
echo "$P3" >"$CGROOT/cgroup.procs" || fail "cannot move $P3 out"
feed 5 20
for p in "$P1" "$P2" "$P3"; do blocked "$p"; done
c1_end=$(counters "$P1") c2_end=$(counters "$P2")
kill -INT "$KH"
wait "$KH" || fail "attach exited $?: $(cat "$TMP/kh.err")"
KH=""
validate "$TMP/doc.json" >/dev/null || fail schema
"$PYTHON" - "$TMP/doc.json" "$P1 $c1_0 $c1_end" "$P2 $c2_move $c2_end" "$P3 $c3_0 $c3_move" <<'PY' || fail "cgroup set"
import json, sys
d = json.load(open(sys.argv[1]))
threads = {t["thread_id"]: t for t in d["threads"]}
procs = {p["pid"]: p for p in d["processes"]}
for arg, joined, left in ((sys.argv[2], "walk", False), (sys.argv[3], "moved", False), (sys.argv[4], "walk", True)):
    pid, v0, i0, c0, v1, i1, c1 = map(int, arg.split())
    t = threads[pid]
    s = t["scheduler"]
    got = (s["voluntary_context_switches"]["value"]["value"], s["involuntary_context_switches"]["value"]["value"],
           t["on_cpu_ns"]["value"]["value"])
    want = (v1 - v0, i1 - i0, c1 - c0)
    assert got == want, f"pid {pid} ({joined}{', left' if left else ''}): khbpf {got}, /proc {want}"
    assert procs[pid]["joined"] == joined and procs[pid]["left_cgroup"] == left and t["left_cgroup"] == left, procs[pid]
    print(f"  pid {pid} ({joined}{', left' if left else ''}): {got[0]} voluntary, {got[2]} ns on-CPU, as /proc")
s = d["target"]["set"]
assert s["kind"] == "cgroups" and s["left"] == 1 and s["joined_later"] >= 1 and s["joined_at_fork"] >= 1, s
forked = [p for p in d["processes"] if p["joined"] == "fork"]
assert any(p["comm"] == "true" and p["exited"] for p in forked), forked
for k in ("threads_joined_late", "moved_baselines_dropped", "cgroup_rejoins_ignored", "threads_not_joined"):
    assert d["loss"][k]["value"] == 0, (k, d["loss"][k])
PY
no_bpf_left
echo "cgroup_set: ok"

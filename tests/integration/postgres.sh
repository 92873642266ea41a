#!/bin/bash
# A real multi-process server nobody here wrote: Debian's PostgreSQL 15.
# The test makes its own cluster in $TMP as nobody, listening on a unix
# socket there only, started in a cgroup v2 of its own, and drives it with
# pgbench (simple query mode) from outside that cgroup. Then:
#  - attach --pid POSTMASTER --children, and attach --cgroup, each list every
#    backend pgbench had during the window (the server's own log names them:
#    log_connections), forked from the postmaster, with its pg_stat_statements
#    calls made while they lived;
#  - the set's on-CPU time equals the cgroup's own cpu.stat usage_usec over
#    the window, to the microsecond: the cgroup is frozen (cgroup.freeze)
#    before the window starts and again before it ends, so everything it ran
#    between the two readings of usage_usec ran inside the window, and both
#    count the same sum_exec_runtime (update_curr() adds one delta to each);
#  - each process's title (processes[].title) is what its /proc/PID/cmdline
#    said (as ps shows it) when the window started and ended: the cgroup is
#    frozen at both, so the test reads every one at the same state khbpf
#    did. Checkpointer, walwriter, the other auxiliary processes and a
#    backend held idle through the window carry PostgreSQL's own titles
#    ("postgres: checkpointer", "postgres: bench postgres [local] idle"); a
#    backend forked in the window that lives over a few loader ticks (-i 0.1)
#    and is gone before the end has its own title from a tick (read again
#    when the first tick found its parent's still), and none at the end; the
#    report groups them by role;
#  - attach --pid POSTMASTER alone lists the postmaster only.
# The cluster is stopped and the cgroup removed on every path.
# khbpf-test: plain-only
. "$(dirname "$0")/common.bash"
require_root "attach loads BPF"
PGBIN=/usr/lib/postgresql/15/bin
[ -x "$PGBIN/postgres" ] && [ -x "$PGBIN/pgbench" ] ||
	fail "PostgreSQL 15 is missing: tools/install-deps.sh --with-tests installs postgresql-15"
CGROOT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CGROOT" ] || fail "no cgroup2 mount"
CG="khbpf-it-pg-$$"
AS=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
PM="" KH="" BENCH="" HELD=""
chmod 0755 "$TMP"
mkdir -p "$TMP/sock" "$TMP/pg"
chown 65534:65534 "$TMP/sock" "$TMP/pg"
chmod 0700 "$TMP/pg"

cleanup() {
	local rc=$?
	[ -z "$KH" ] || kill -INT "$KH" 2>/dev/null
	[ -z "$BENCH" ] || kill "$BENCH" 2>/dev/null
	[ -z "$HELD" ] || kill "$HELD" 2>/dev/null
	[ -e "$CGROOT/$CG/cgroup.freeze" ] && echo 0 >"$CGROOT/$CG/cgroup.freeze"
	if [ -n "$PM" ] && kill -0 "$PM" 2>/dev/null; then
		# Fast shutdown; its processes end with it.
		kill -INT "$PM"
		for _ in $(seq 100); do kill -0 "$PM" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$PM" 2>/dev/null
	fi
	[ -e "$CGROOT/$CG/cgroup.kill" ] && echo 1 >"$CGROOT/$CG/cgroup.kill" 2>/dev/null
	wait 2>/dev/null
	for _ in $(seq 50); do rmdir "$CGROOT/$CG" 2>/dev/null && break; sleep 0.1; done
	keep_failed "$rc"
}
trap cleanup EXIT

psql_() { "${AS[@]}" /usr/bin/psql -X -q -h "$TMP/sock" -p 5439 -U bench -d postgres -At "$@"; }

"${AS[@]}" "$PGBIN/initdb" -D "$TMP/pg" -U bench --auth=trust --no-sync >"$TMP/initdb.log" 2>&1 ||
	fail "initdb failed: $(tail -5 "$TMP/initdb.log")"
mkdir "$CGROOT/$CG" || fail "cannot make cgroup $CGROOT/$CG"
# The postmaster is born in the cgroup; every process it forks stays in it.
(
	echo "$BASHPID" >"$CGROOT/$CG/cgroup.procs" || exit 1
	exec "${AS[@]}" "$PGBIN/postgres" -D "$TMP/pg" -k "$TMP/sock" -p 5439 \
		-c listen_addresses= -c shared_preload_libraries=pg_stat_statements \
		-c log_connections=on -c log_line_prefix='%p ' -c fsync=off \
		-c logging_collector=off
) >"$TMP/pg.log" 2>&1 &
PM=$!
for _ in $(seq 100); do
	"${AS[@]}" "$PGBIN/pg_isready" -q -h "$TMP/sock" -p 5439 && break
	kill -0 "$PM" 2>/dev/null || fail "postgres exited: $(tail -5 "$TMP/pg.log")"
	sleep 0.1
done
"${AS[@]}" "$PGBIN/pg_isready" -q -h "$TMP/sock" -p 5439 || fail "postgres is not ready"
psql_ -c 'CREATE EXTENSION pg_stat_statements' || fail "pg_stat_statements"
"${AS[@]}" "$PGBIN/pgbench" -q -i -s 1 -h "$TMP/sock" -p 5439 -U bench postgres \
	>"$TMP/init.log" 2>&1 || fail "pgbench -i: $(tail -3 "$TMP/init.log")"
checkpoint cluster

# A session held open, idle, through both windows (its psql outside the cgroup).
mkfifo "$TMP/held.in"
PGAPPNAME=khbpf-held "${AS[@]}" /usr/bin/psql -X -q -h "$TMP/sock" -p 5439 -U bench -d postgres \
	<"$TMP/held.in" >/dev/null 2>&1 &
HELD=$!
exec 8>"$TMP/held.in"
for _ in $(seq 100); do
	HELD_BE=$(psql_ -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'khbpf-held' AND state = 'idle'")
	[ -n "$HELD_BE" ] && break
	sleep 0.05
done
[ -n "$HELD_BE" ] || fail "the held session never became idle"

freeze() { # 1|0: and wait until the cgroup says so (cgroup.events)
	echo "$1" >"$CGROOT/$CG/cgroup.freeze"
	for _ in $(seq 200); do
		grep -q "^frozen $1" "$CGROOT/$CG/cgroup.events" && return 0
		sleep 0.01
	done
	fail "cgroup.freeze $1 never took"
}
usage_us() { awk '$1 == "usage_usec" { print $2 }' "$CGROOT/$CG/cpu.stat"; }
# Every process of the cgroup and its /proc/PID/cmdline as ps shows it (trailing
# NULs dropped, other NULs and newlines spaces; null when empty), as JSON.
titles() {
	"$PYTHON" - "$CGROOT/$CG/cgroup.procs" >"$1" <<'PY' || fail "reading the titles"
import json, sys
out = {}
for pid in open(sys.argv[1]).read().split():
    try:
        b = open(f"/proc/{pid}/cmdline", "rb").read().rstrip(b"\0")
    except OSError:
        continue
    out[pid] = b.replace(b"\0", b" ").replace(b"\n", b" ").decode() or None
json.dump(out, sys.stdout)
PY
}

# window NAME KHBPF-ARGS...: attach, let pgbench run in the window, and the
# usage_usec the cgroup counted between the frozen edges.
window() {
	local name=$1 u0 u1
	shift
	psql_ -c 'SELECT pg_stat_statements_reset()' >/dev/null || fail "pg_stat_statements_reset"
	freeze 1
	u0=$(usage_us)
	"$KHBPF" attach "$@" -i 0.1 -o "$TMP/$name.json" 2>"$TMP/$name.err" &
	KH=$!
	for _ in $(seq 200); do grep -q watching "$TMP/$name.err" && break; sleep 0.05; done
	grep -q watching "$TMP/$name.err" || fail "attach ($name) did not start: $(cat "$TMP/$name.err")"
	titles "$TMP/$name.tstart" # still frozen: as the walk found them
	wc -l <"$TMP/pg.log" >"$TMP/$name.logstart"
	freeze 0
	# A backend of the window that lives over a few ticks, and ends.
	psql_ -c 'SELECT pg_backend_pid(), pg_sleep(0.3)' | cut -d'|' -f1 >"$TMP/$name.tick" ||
		fail "the ticked session"
	"${AS[@]}" "$PGBIN/pgbench" -M simple -c 3 -j 1 -t 150 -h "$TMP/sock" -p 5439 -U bench \
		postgres >"$TMP/$name.bench" 2>&1 &
	BENCH=$!
	wait "$BENCH" || fail "pgbench ($name): $(tail -3 "$TMP/$name.bench")"
	BENCH=""
	# The calls its backends made, counted by the server, before it is frozen.
	psql_ -c "SELECT sum(calls) FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'" \
		>"$TMP/$name.calls"
	freeze 1
	kill -INT "$KH"
	wait "$KH" || fail "attach ($name) exited $?: $(cat "$TMP/$name.err")"
	KH=""
	titles "$TMP/$name.tend" # still frozen: as at khbpf's end
	u1=$(usage_us)
	freeze 0
	echo "$u0 $u1" >"$TMP/$name.usage"
	tail -n +"$(($(cat "$TMP/$name.logstart") + 1))" "$TMP/pg.log" >"$TMP/$name.pglog"
	validate "$TMP/$name.json" >/dev/null || fail "schema ($name)"
}

check() { # NAME KIND
	"$PYTHON" - "$TMP/$1.json" "$TMP/$1.pglog" "$(cat "$TMP/$1.usage")" "$PM" "$2" \
		"$(cat "$TMP/$1.calls")" "$TMP/$1.tstart" "$TMP/$1.tend" "$HELD_BE" \
		"$(cat "$TMP/$1.tick")" <<'PY' || fail "$1"
import json, re, sys
d = json.load(open(sys.argv[1]))
log = open(sys.argv[2]).read()
u0, u1 = map(int, sys.argv[3].split())
pm, kind, calls = int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
# The backends pgbench had: each logged "connection authorized: user=bench" with its pid.
backends = {int(m) for m in re.findall(r"^(\d+) LOG:  connection authorized: user=bench", log, re.M)}
procs = {p["pid"]: p for p in d["processes"]}
assert d["target"]["set"]["kind"] == kind, d["target"]["set"]
assert len(backends) >= 4, f"the server logged {len(backends)} connections of pgbench"
missing = backends - set(procs)
assert not missing, f"backends not listed: {sorted(missing)}"
for b in backends:
    p = procs[b]
    assert p["joined"] == "fork" and p["parent_pid"]["value"] == pm and p["comm"] == "postgres", p
    assert p["on_cpu_ns"]["value"]["status"] == "recorded", p
assert procs[pm]["joined"] in ("root", "walk"), procs[pm]
assert all(t["pid"] in procs for t in d["threads"])
cpu = d["hardware"]["value"]["utilization"]["all_threads_cpu_ns"]["value"]
# usage_usec truncates each reading to a microsecond.
diff = cpu - (u1 - u0) * 1000
print(f"  {kind}: {len(d['processes'])} processes, {len(backends)} backends of pgbench and psql, "
      f"{calls} statements; on-CPU {cpu} ns, the cgroup's usage_usec {u1 - u0} us ({diff:+} ns)")
assert -1000 < diff < 1000, f"set on-CPU {cpu} ns, cgroup usage {(u1 - u0) * 1000} ns"
for k in ("processes_not_joined", "threads_not_joined", "threads_vanished", "exited_records_overflow"):
    assert d["loss"][k]["value"] == 0, (k, d["loss"][k])
# Titles: read at the walk and at the end, while the cgroup was frozen, as the test read them.
tstart, tend = json.load(open(sys.argv[7])), json.load(open(sys.argv[8]))
held, tick = int(sys.argv[9]), int(sys.argv[10])
def rec(v):
    return {"value": {"status": "recorded", "value": v} if v else
            {"status": "unavailable", "reason": "unavailable"}, "source": "proc-pid-cmdline"}
GAP = rec(None)
for p in d["processes"]:
    t, pid = p["title"], str(p["pid"])
    if p["joined"] in ("root", "walk"):
        assert t["at_join"] == rec(tstart[pid]), (p["pid"], t, tstart.get(pid))
    assert t["at_end"] == (GAP if p["exited"] else rec(tend[pid])), (p["pid"], t, tend.get(pid))
    # A child read at a tick: its own title (a backend's, or an autovacuum
    # worker's the server started in the window: seen in the 5.10 and 7.2
    # guests, whose windows are longer), or, gone before the next tick, the
    # postmaster's it was forked with (read at the walk).
    if p["joined"] == "fork" and t["at_join"] != GAP:
        v = t["at_join"]["value"]["value"]
        assert v.startswith("postgres: ") or v == tstart[str(pm)], t
        if p["pid"] in backends:
            assert v.startswith("postgres: bench postgres [local] ") or v == tstart[str(pm)], t
words = {" ".join(p["title"]["at_end"]["value"].get("value", "").split()) for p in d["processes"]}
for role in ("postgres: checkpointer", "postgres: walwriter", "postgres: background writer",
             "postgres: autovacuum launcher"):
    assert role in words, (role, words)
assert procs[held]["title"]["at_end"]["value"]["value"] == "postgres: bench postgres [local] idle", procs[held]
t = procs[tick]["title"]
assert t["at_end"] == GAP and t["at_join"]["value"]["value"].startswith("postgres: bench postgres [local] "), t
print(f"  {kind}: titles of {len(d['processes'])} processes as /proc showed them; "
      f"the ticked backend's {t['at_join']['value']['value']!r}")
assert d["loss"]["process_titles_truncated"]["value"] == 0
PY
	# The report names them by title, and groups the backends by role.
	"$KHBPF" report "$TMP/$1.json" >"$TMP/$1.txt" || fail "report ($1)"
	grep -q '^Processes by role' "$TMP/$1.txt" || fail "no roles in the report: $(head -40 "$TMP/$1.txt")"
	grep -Eq '^  postgres: checkpointer +1 ' "$TMP/$1.txt" || fail "no checkpointer role: $(head -60 "$TMP/$1.txt")"
	grep -Eq '^  postgres: bench postgres \[local\] +([2-9]|[1-9][0-9]+) ' "$TMP/$1.txt" ||
		fail "the backends not grouped: $(head -60 "$TMP/$1.txt")"
	# The first screen answers: the five busiest processes of the document, by
	# on-CPU, each named by its title (else comm), within the first 24 lines.
	"$PYTHON" - "$TMP/$1.json" "$TMP/$1.txt" <<'PY' || fail "the first screen: $(head -24 "$TMP/$1.txt")"
import json, sys
d = json.load(open(sys.argv[1]))
top = open(sys.argv[2], encoding="utf-8").read().splitlines()[:24]

def name(p):
    for k in ("at_end", "at_join"):
        v = p.get("title", {}).get(k, {}).get("value", {})
        if v.get("status") == "recorded" and v["value"].rstrip(" \t"):
            n = v["value"].rstrip(" \t")
            return n if len(n) <= 72 else n[:69] + "..."
    return p["comm"]

def cpu(p):
    v = p["on_cpu_ns"]["value"]
    return v["value"] if v["status"] == "recorded" else -1

procs = sorted(d["processes"], key=lambda p: (-cpu(p), p["pid"]))[:5]
head = f"  busiest:  {len(procs)} of {len(d['processes'])} processes by on-CPU, named by title (else comm)"
assert head in top, top
rows = top[top.index(head) + 1:top.index(head) + 1 + len(procs)]
for p, row in zip(procs, rows):
    assert row.endswith(f"  {name(p)} (pid {p['pid']})"), (row, name(p), p["pid"])
print(f"  first screen: the busiest {len(procs)} by title, {name(procs[0])!r} first")
PY
}

window children --pid "$PM" --children
check children process-trees
window cgroup --cgroup "/$CG"
check cgroup cgroups
checkpoint windows

# The postmaster alone: its backends are other processes.
"$KHBPF" attach --pid "$PM" -d 1 -o "$TMP/alone.json" 2>"$TMP/alone.err" ||
	fail "attach --pid alone: $(cat "$TMP/alone.err")"
json_check "$TMP/alone.json" "[p['pid'] for p in d['processes']] == [$PM]" \
	"all(t['pid'] == $PM for t in d['threads'])"
no_bpf_left
echo "postgres: ok"

#!/bin/bash
# --usdt-span [OBJ:]PROVIDER:START,DONE[=METRIC] on software nobody here wrote,
# each held, with equality, to the program's own accounting and to
# bpftrace's count of the same USDT probes (path-wide uprobes, semaphores set
# by the kernel: CPython tests them before it fires a probe):
#  1. PostgreSQL 15 (a cluster as nobody in $TMP, as postgres.sh), driven by
#     pgbench -n -M simple -f SCRIPT: query__done fires once per statement
#     sent and equals pg_stat_statements' sum(calls) (track_utility on, after
#     pg_stat_statements_reset(), that call left out; a statement that fails
#     fires query__start only, and is in neither). The script's statements
#     are fixed literals, so each text pgbench sends is one
#     pg_stat_statements row (normalized: no ';', constants $1, $2...);
#     pgbench variables in simple mode would make a text per call.
#     khbpf attach --pid POSTMASTER --children: metric `query` has that many
#     calls, each pgbench backend its share.
#  2. A row lock: a holder (BEGIN; SELECT ... FOR UPDATE) and a waiter
#     (UPDATE of the row) that waits until the holder's COMMIT, sent
#     HOLD_MS after the waiter is seen waiting. lock__wait__start/done fire
#     once, in the waiter only; its query and its lock wait each last at
#     least HOLD_MS, blocked by `lock` (--span-cause lock-wait=lock: the
#     kernel alone sees the latch's epoll_wait) and woken by the holder.
#  3. CPython 3.11 (/usr/bin/python3.11, tests/workloads/usdtpy.py):
#     gc__done == sum of gc.get_stats() collections (read at the end, after
#     gc.disable(), then os._exit(0)), interpreter start included, when
#     counting starts before the exec; import__find__load__done == the
#     "import time:" lines of -X importtime (both in import_find_and_load();
#     an audit hook also sees extension modules' loads, sys.modules also
#     the parents importlib imports in Python: neither is exact). Imports
#     nest (depth 8 here): the metric must keep a stack of open spans.
#  4. libstdc++ (a copy in $TMP: uprobes are per file, so the test traps
#     no other C++ process on the host and no other tracer's probes on the
#     system library touch its counts): libstdcxx:throw and :catch each fire
#     once per exception tests/workloads/usdtthrow threw and caught.
# KHBPF_USDT_GROUND_ONLY=1 runs the ground truth (bpftrace against the
# programs' own accounting) without khbpf.
# Every process, the cluster and every tracer are stopped on every path.
# khbpf-test: plain-only
. "$(dirname "$0")/common.bash"
require_root "uprobes need root"
PGBIN=/usr/lib/postgresql/15/bin
PG=$PGBIN/postgres
PY=/usr/bin/python3.11 # not PATH's python3.11 (a pyenv shim, say)
PYW=tests/workloads/usdtpy.py
W=build/workloads/usdtthrow
CXXLIB=/usr/lib/x86_64-linux-gnu/libstdc++.so.6
GROUND_ONLY=${KHBPF_USDT_GROUND_ONLY:-}
HOLD_MS=800

if ! command -v bpftrace >/dev/null; then
	[ "${CI:-}" = true ] && fail "needs bpftrace, and CI must run it (tools/install-deps.sh --with-tests)"
	echo "SKIP $(basename "$0"): needs bpftrace (tools/install-deps.sh --with-tests)"
	exit 0
fi
[ -x "$PG" ] && [ -x "$PGBIN/pgbench" ] ||
	fail "PostgreSQL 15 is missing: tools/install-deps.sh --with-tests installs postgresql-15"
[ -x "$PY" ] || fail "$PY is missing (python3.11)"
[ -f "$CXXLIB" ] || fail "$CXXLIB is missing (libstdc++6)"
[ -x "$W" ] || fail "$W is missing; run 'make workloads'"

AS=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
PM="" BT="" KH="" BENCH="" HOLDER="" WAITER="" CHILD=""
chmod 0755 "$TMP"
mkdir -p "$TMP/sock" "$TMP/pg"
chown 65534:65534 "$TMP/sock" "$TMP/pg"
chmod 0700 "$TMP/pg"

# exited PID SECONDS: PID (a child) has exited within SECONDS (not reaped).
exited() {
	for _ in $(seq $(($2 * 20))); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	! kill -0 "$1" 2>/dev/null
}
stop_proc() { # PID [SIGNAL]: SIGNAL (INT), then SIGKILL after 5 s; reaped either way
	[ -n "$1" ] || return 0
	kill "-${2:-INT}" "$1" 2>/dev/null
	exited "$1" 5 || kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
cleanup() {
	local rc=$? kids=""
	# khbpf run's CMD, if khbpf is stopped before it: stopped too.
	[ -z "$KH" ] || kids=$(pgrep -P "$KH")
	stop_proc "$KH"
	for k in $kids; do kill -KILL "$k" 2>/dev/null; done
	stop_proc "$BT"
	stop_proc "$BENCH" TERM
	stop_proc "$CHILD" TERM
	exec 8>&- # EOF: the holder's psql ends (its transaction rolls back)
	stop_proc "$HOLDER" TERM
	stop_proc "$WAITER" TERM
	if [ -n "$PM" ] && kill -0 "$PM" 2>/dev/null; then
		kill -INT "$PM" # fast shutdown; its processes end with it
		for _ in $(seq 100); do kill -0 "$PM" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$PM" 2>/dev/null
	fi
	wait 2>/dev/null
	keep_failed "$rc"
}
trap cleanup EXIT

# An array, not only a function: a command started with & must be the
# process itself, for its pid to be the one stopped.
PSQL=("${AS[@]}" /usr/bin/psql -X -q -h "$TMP/sock" -p 5439 -U bench -d postgres -At)
psql_() { "${PSQL[@]}" "$@"; }

# usdt_sites OBJ NAME...: how many sites those probes have in OBJ (bpftrace
# attaches one uprobe per site).
usdt_sites() {
	local obj=$1 n=0 name
	shift
	for name in "$@"; do
		n=$((n + $(readelf -n --wide "$obj" | grep -c "Name: $name\$")))
	done
	echo "$n"
}

# bt_start NAME SITES PROGRAM: bpftrace PROGRAM in the background (BT), its
# output in $TMP/NAME.bt, until its SITES uprobes are in the kernel and its
# BEGIN has run. It ends by its own exit(), when the test opens
# $TMP/NAME.stop (bt_stop): bpftrace 0.17 was seen (1 run in 15 to 40 here)
# to catch a SIGINT sent while it polled and carry on polling for good.
bt_start() {
	local name=$1 sites=$2 n=0
	(BPFTRACE_STRLEN=128 with_tracefs bpftrace -e "BEGIN { printf(\"bt-ready\\n\"); }
tracepoint:syscalls:sys_enter_openat /str(args->filename) == \"$TMP/$name.stop\"/ { exit(); }
$3") >"$TMP/$name.bt" 2>"$TMP/$name.bterr" &
	BT=$!
	wait_for '^bt-ready' "$TMP/$name.bt" || fail "bpftrace ($name) did not start: $(cat "$TMP/$name.bt" "$TMP/$name.bterr")"
	n=$(bpftool -j perf show 2>/dev/null | "$PYTHON" -c '
import json, sys
print(sum(1 for p in json.load(sys.stdin) if p.get("pid") == int(sys.argv[1]) and p.get("fd_type") == "uprobe"))' "$BT")
	# BEGIN runs once every probe is attached: all are there, or never will be.
	[ "$n" -eq "$sites" ] || fail "bpftrace ($name) has $n uprobes, expected $sites: $(cat "$TMP/$name.bt" "$TMP/$name.bterr")"
}
# bt_stop NAME: its exit(); bpftrace prints its maps and exits 0.
bt_stop() {
	local rc
	: >"$TMP/$1.stop"
	exited "$BT" 30 || fail "bpftrace ($1) did not exit within 30 s of its stop:" \
		"$(grep -E '^(State|SigCgt|SigIgn|SigPnd|ShdPnd)' /proc/"$BT"/status | tr '\n\t' '  ')" \
		"$(for t in /proc/"$BT"/task/*; do echo "task ${t##*/} $(cat "$t/comm") $(cat "$t/wchan");"; done 2>/dev/null | tr '\n' ' ')"
	wait "$BT"
	rc=$?
	BT=""
	[ "$rc" -eq 0 ] || fail "bpftrace ($1) exited $rc: $(cat "$TMP/$1.bt" "$TMP/$1.bterr")"
}

# kh_attach NAME ARGS...: khbpf attach ARGS -o $TMP/NAME.json in the
# background (KH), until it is watching. kh_stop NAME: SIGINT, and the
# document must validate.
kh_attach() {
	local name=$1
	shift
	[ -z "$GROUND_ONLY" ] || return 0
	"$KHBPF" attach "$@" -o "$TMP/$name.json" 2>"$TMP/$name.err" &
	KH=$!
	wait_for watching "$TMP/$name.err" || fail "attach ($name) did not start: $(cat "$TMP/$name.err")"
}
# kh_run NAME OUT ERR ARGS...: khbpf run -o $TMP/NAME.json ARGS (options,
# then -- CMD), its and CMD's stdout in OUT, stderr in ERR; bounded, so a
# CMD that never ends fails the test rather than hangs it.
kh_run() {
	local name=$1 out=$2 err=$3 rc
	shift 3
	"$KHBPF" run -o "$TMP/$name.json" "$@" >"$out" 2>"$err" &
	KH=$!
	exited "$KH" 120 || fail "khbpf run ($name) did not end within 120 s: $(grep -v '^import time:' "$err" | tail -n 5)"
	wait "$KH"
	rc=$?
	KH=""
	[ "$rc" -eq 0 ] || fail "khbpf run ($name) exited $rc: $(grep -v '^import time:' "$err" | tail -n 5)"
	validate "$TMP/$name.json" >/dev/null || fail "schema ($name)"
}
kh_stop() {
	local rc
	[ -z "$GROUND_ONLY" ] || return 0
	kill -INT "$KH"
	exited "$KH" 60 || fail "khbpf ($1) did not end within 60 s of SIGINT"
	wait "$KH"
	rc=$?
	KH=""
	[ "$rc" -eq 0 ] || fail "khbpf attach ($1) exited $rc: $(cat "$TMP/$1.err")"
	validate "$TMP/$1.json" >/dev/null || fail "schema ($1)"
}

# ---- 1. PostgreSQL: query__start/done against pg_stat_statements ----------
"${AS[@]}" "$PGBIN/initdb" -D "$TMP/pg" -U bench --auth=trust --no-sync >"$TMP/initdb.log" 2>&1 ||
	fail "initdb failed: $(tail -5 "$TMP/initdb.log")"
# autovacuum off: no backend but the test's own takes a lock. deadlock_timeout
# past the row lock's wait: its 1 s timer (ProcSleep's deadlock check) would
# otherwise wake the waiter once in a slow guest (the 6.12-rt TCG guest: a
# timer for 1.0 s of the UPDATE's blocked time, the holder for the rest).
"${AS[@]}" "$PG" -D "$TMP/pg" -k "$TMP/sock" -p 5439 \
	-c listen_addresses= -c shared_preload_libraries=pg_stat_statements \
	-c pg_stat_statements.track_utility=on -c autovacuum=off -c deadlock_timeout=60s \
	-c log_connections=on -c log_line_prefix='%p ' -c fsync=off \
	-c logging_collector=off >"$TMP/pg.log" 2>&1 &
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

# Each line: the text pgbench sends (simple mode: the script's line as it
# is) | pg_stat_statements' normalized text of it. One row per text: no two
# statements alike but for their constants.
cat >"$TMP/texts" <<'EOF'
BEGIN;|BEGIN
SELECT abalance FROM pgbench_accounts WHERE aid = 17;|SELECT abalance FROM pgbench_accounts WHERE aid = $1
UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 3;|UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2
SELECT count(*) FROM pgbench_branches;|SELECT count(*) FROM pgbench_branches
END;|END
EOF
cut -d'|' -f1 "$TMP/texts" >"$TMP/bench.sql"
chmod 0644 "$TMP/bench.sql"
CLIENTS=3 TX=$((40 + RANDOM % 20))

psql_ -c 'SELECT pg_stat_statements_reset()' >/dev/null || fail "pg_stat_statements_reset"
bt_start bench "$(usdt_sites "$PG" query__start query__done)" "
usdt:$PG:postgresql:query__start { @start[pid] = count(); @text[str(arg0)] = count(); }
usdt:$PG:postgresql:query__done { @done[pid] = count(); @done_text[str(arg0)] = count(); }"
kh_attach bench --pid "$PM" --children --usdt-span postgresql:query__start,query__done=query \
	--key query=arg0:str
wc -l <"$TMP/pg.log" >"$TMP/bench.logstart"
checkpoint tracers-attached
# -n: no vacuum/truncate of pgbench's own (they would be counted on both
# sides, but are not the script's).
"${AS[@]}" "$PGBIN/pgbench" -n -M simple -f "$TMP/bench.sql" -c "$CLIENTS" -j 1 -t "$TX" \
	-h "$TMP/sock" -p 5439 -U bench postgres >"$TMP/bench.out" 2>&1 &
BENCH=$!
wait "$BENCH" || fail "pgbench: $(tail -3 "$TMP/bench.out")"
BENCH=""
# Each query__done fired before pgbench saw the statement end: all are in.
kh_stop bench
bt_stop bench
psql_ -F '|' -c "SELECT calls, query FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'" \
	>"$TMP/bench.pgss" || fail "reading pg_stat_statements"
tail -n +"$(($(cat "$TMP/bench.logstart") + 1))" "$TMP/pg.log" >"$TMP/bench.pglog"

"$PYTHON" - "$TMP/bench.bt" "$TMP/bench.pgss" "$TMP/texts" "$TMP/bench.pglog" "$CLIENTS" "$TX" \
	"$TMP/bench.json" "$GROUND_ONLY" <<'PY' || fail "postgres: query__done, pg_stat_statements and khbpf differ"
import json, re, sys
bt, pgss, texts, pglog, clients, tx, doc, ground_only = sys.argv[1:]
clients, tx = int(clients), int(tx)
maps = {}
for line in open(bt):
    m = re.match(r"^@(\w+)\[(.*)\]: (\d+)$", line.rstrip("\n"))
    if m:
        maps.setdefault(m[1], {})[m[2]] = int(m[3])
table = [l.rstrip("\n").split("|") for l in open(texts)]
rows = {}
for l in open(pgss):
    calls, q = l.rstrip("\n").split("|", 1)
    rows[q] = int(calls)
n = clients * tx * len(table)
# pgbench's connections (its first one, made before the clients', sends nothing).
backends = set(re.findall(r"^(\d+) LOG:  connection authorized: user=bench .*application_name=pgbench$",
                          open(pglog).read(), re.M))
start, done = maps.get("start", {}), maps.get("done", {})
print(f"  postgres: {clients} clients x {tx} transactions x {len(table)} statements = {n}; "
      f"query__start {sum(start.values())}, query__done {sum(done.values())}, "
      f"pg_stat_statements sum(calls) {sum(rows.values())}")
assert sum(start.values()) == sum(done.values()) == sum(rows.values()) == n
# One text, one row: each sent text's count is its normalized row's calls.
assert sorted(rows) == sorted(q for _, q in table), (sorted(rows), table)
for raw, norm in table:
    assert maps["text"].get(raw) == maps["done_text"].get(raw) == rows[norm] == clients * tx, (raw, norm)
assert len(maps["text"]) == len(table), maps["text"]
# Every statement came from pgbench's clients' backends, tx * statements each.
assert len(done) == clients and set(start) == set(done) <= backends, (backends, start)
assert all(n == tx * len(table) for n in done.values()), done
if not ground_only:
    d = json.load(open(doc))
    assert [(m["metric_id"], m["calls"], m["unfinished"]) for m in d["span_metrics"]] == [("query", n, 0)], d["span_metrics"]
    assert d["span_probes"] and all(p["status"] == "attached" and p["metric_id"] == "query" for p in d["span_probes"]), d["span_probes"]
    per = {str(p["pid"]): p["calls"] for p in d["process_span_metrics"] if p["metric_id"] == "query"}
    assert per == done, (per, done)
    assert d["open_spans"] == [], d["open_spans"]
    # --key query=arg0:str: each text its own calls, the same as its pg_stat_statements row.
    # A str key is the text's first 63 bytes, marked truncated from 63 on.
    q = d["span_metrics"][0]
    keys = {k["key"]["text"]: k["calls"] for k in q["keys"]}
    assert keys == {raw[:63]: rows[norm] for raw, norm in table}, (keys, rows)
    assert all(k["key"]["kind"] == "str" and not k["key"]["other"] and
               k["key"]["truncated"] == (len(k["key"]["text"]) == 63) for k in q["keys"]), q["keys"]
    assert any(k["key"]["truncated"] for k in q["keys"]), "the UPDATE's text is 64 bytes and more"
    assert sum(k["inclusive_ns"] for k in q["keys"]) == q["inclusive_ns"], q
    assert all(r["key"]["text"] in keys for r in d["events"]["spans"]), "a record without its key"
    for k in ("span_key_calls_other", "span_key_unreadable", "span_key_table_full"):
        assert d["loss"][k]["value"] == 0, (k, d["loss"][k])
    print(f"  postgres (khbpf --key query=arg0:str): {len(keys)} texts, each {clients * tx} calls, as pg_stat_statements")
PY
checkpoint bench

# ---- 2. A row lock: lock__wait__start/done in the waiter -------------------
bt_start lock "$(usdt_sites "$PG" query__start query__done lock__wait__start lock__wait__done)" "
usdt:$PG:postgresql:query__start { printf(\"%d query-start %llu\n\", pid, nsecs); }
usdt:$PG:postgresql:query__done { printf(\"%d query-done %llu\n\", pid, nsecs); }
usdt:$PG:postgresql:lock__wait__start { printf(\"%d wait-start %llu %d %d\n\", pid, nsecs, arg4, arg5); }
usdt:$PG:postgresql:lock__wait__done { printf(\"%d wait-done %llu %d %d\n\", pid, nsecs, arg4, arg5); }"
kh_attach lock --pid "$PM" --children --usdt-span postgresql:query__start,query__done=query \
	--usdt-span postgresql:lock__wait__start,lock__wait__done=lock-wait --blocked --wakers \
	--key query=arg0:str --span-cause lock-wait=lock
# The holder reads its statements from a fifo, one at a time: it holds the
# row until COMMIT is written. Four statements: BEGIN, the lock, its pid, COMMIT.
mkfifo "$TMP/holder.in"
"${PSQL[@]}" <"$TMP/holder.in" >"$TMP/holder.out" 2>&1 &
HOLDER=$!
exec 8>"$TMP/holder.in"
printf '%s\n' 'BEGIN;' 'SELECT aid FROM pgbench_accounts WHERE aid = 1 FOR UPDATE;' \
	"SELECT 'holder ' || pg_backend_pid();" >&8
wait_for '^holder [0-9]' "$TMP/holder.out" || fail "the holder did not lock the row: $(cat "$TMP/holder.out")"
HP=$(sed -n 's/^holder //p' "$TMP/holder.out")
t_launch=$(date +%s%N)
PGAPPNAME=khbpf-waiter "${PSQL[@]}" -c 'UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = 1' \
	>"$TMP/waiter.out" 2>&1 &
WAITER=$!
WP=""
for _ in $(seq 200); do
	WP=$(psql_ -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'khbpf-waiter' AND wait_event_type = 'Lock'")
	[ -n "$WP" ] && break
	sleep 0.05
done
[ -n "$WP" ] || fail "the waiter never waited for the lock: $(cat "$TMP/waiter.out")"
checkpoint lock-held
sleep "$((HOLD_MS / 1000)).$(printf %03d $((HOLD_MS % 1000)))"
printf 'COMMIT;\n' >&8
exec 8>&-
wait "$WAITER" || fail "the waiter's UPDATE failed: $(cat "$TMP/waiter.out")"
WAITER=""
waited_ms=$((($(date +%s%N) - t_launch) / 1000000))
wait "$HOLDER" || fail "the holder failed: $(cat "$TMP/holder.out")"
HOLDER=""
kh_stop lock
bt_stop lock
"$PYTHON" - "$TMP/lock.bt" "$HP" "$WP" "$HOLD_MS" "$waited_ms" "$TMP/lock.json" "$GROUND_ONLY" <<'PY' ||
import json, sys
from collections import defaultdict
bt, hp, wp, hold_ms, waited_ms, doc, ground_only = sys.argv[1:]
hp, wp, hold, waited = int(hp), int(wp), int(hold_ms) * 10**6, int(waited_ms) * 10**6
ev = defaultdict(list)
for line in open(bt):
    f = line.split()
    if len(f) >= 3 and f[0].isdigit():
        ev[int(f[0])].append((f[1], int(f[2]), f[3:]))
def kinds(p, k):
    return [e for e in ev[p] if e[0] == k]
waits = {p for p in ev if kinds(p, "wait-start") or kinds(p, "wait-done")}
assert waits == {wp}, f"lock waits in {sorted(waits)}, expected the waiter {wp} only"
(ws,), (wd,) = kinds(wp, "wait-start"), kinds(wp, "wait-done")
(qs,), (qd,) = kinds(wp, "query-start"), kinds(wp, "query-done")
# locktag_type 5 (transaction id: the holder's), mode 5 (ShareLock)
assert ws[2] == wd[2] == ["5", "5"], (ws, wd)
assert qs[1] < ws[1] < wd[1] < qd[1], ev[wp]
assert len(kinds(hp, "query-start")) == len(kinds(hp, "query-done")) == 4, ev[hp]
commit = kinds(hp, "query-start")[3][1]
assert wd[1] > commit, "the wait ended before the holder's COMMIT began"
q_ns, w_ns = qd[1] - qs[1], wd[1] - ws[1]
print(f"  lock: holder {hp}, waiter {wp}: held {hold // 10**6} ms after the waiter was seen waiting; "
      f"the waiter's UPDATE {q_ns / 1e6:.3f} ms, its lock wait {w_ns / 1e6:.3f} ms "
      f"(wait end {(wd[1] - commit) / 1e3:.0f} us after COMMIT began); launch to exit {waited // 10**6} ms")
assert hold <= w_ns < q_ns <= waited, (hold, w_ns, q_ns, waited)
if not ground_only:
    d = json.load(open(doc))
    per = {(p["pid"], p["metric_id"]): p for p in d["process_span_metrics"]}
    assert [m["calls"] for m in d["span_metrics"] if m["metric_id"] == "lock-wait"] == [1], d["span_metrics"]
    assert per[(wp, "lock-wait")]["calls"] == 1 and per[(wp, "query")]["calls"] == 1, per
    assert per[(hp, "query")]["calls"] == 4 and (hp, "lock-wait") not in per, per
    for key, ns in (((wp, "query"), q_ns), ((wp, "lock-wait"), w_ns)):
        # The same probe hits, timed by two programs: within a millisecond.
        assert abs(per[key]["inclusive_ns"] - ns) < 10**6, (key, per[key], ns)
    assert d["open_spans"] == [], d["open_spans"]
    # Where the waiter's time went: its UPDATE (the one query of that text) and
    # its lock wait are blocked at least the holding time, and the backend that
    # woke them is the holder's (--blocked --wakers). The cause is `lock`
    # because the lock__wait span declares it (--span-cause lock-wait=lock):
    # PostgreSQL 15 sleeps on a heavyweight lock in WaitLatch() (ProcSleep),
    # an epoll_wait() on its latch, which the holder's COMMIT sets
    # (ProcWakeup -> SetLatch); the kernel alone sees a poll (`io`).
    # Each key has wakers of its own: the UPDATE's are its own calls' (the
    # holder first), and every key's and the metric's add up to their blocked
    # time, the keys' to the metric's.
    upd = "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = 1"
    m = {x["metric_id"]: x for x in d["span_metrics"]}
    (k,) = [k for k in m["query"]["keys"] if k["key"]["text"] == upd[:63]]
    assert k["key"]["truncated"], k
    assert k["calls"] == 1, k
    def listed(b):
        return sum(w["ns"] for w in b["wakers"]) + b["other_wakers"]["ns"] + b["without_waker_ns"]
    qb = m["query"]["scheduler"]["blocked"]["value"]
    assert listed(qb) == qb["blocked_ns"], qb
    woken = {}
    for x in m["query"]["keys"]:
        b = x["scheduler"]["blocked"]["value"]
        assert listed(b) == b["blocked_ns"], (x["key"], b)
        for w in b["wakers"]:
            woken[(w["kind"], w.get("tid"))] = woken.get((w["kind"], w.get("tid")), 0) + w["ns"]
    # (A key lists its largest wakers; the rest are in its other_wakers.)
    folded = any(x["scheduler"]["blocked"]["value"]["other_wakers"]["count"] for x in m["query"]["keys"])
    for w in qb["wakers"]:
        got = woken.get((w["kind"], w.get("tid")), 0)
        assert got == w["ns"] or (folded and got < w["ns"]), (w, woken)
    lw = m["lock-wait"]
    lw_by = {c["cause"]: c for c in lw["scheduler"]["blocked"]["value"]["blocked_by"]}
    assert set(lw_by) == {"lock"}, lw_by
    assert lw["declared_cause"] == "lock", lw
    unseen = d["loss"]["offcpu_stretches_unseen"]["value"]
    assert 1 <= lw["declared_cause_stretches"] and \
        abs(lw["declared_cause_stretches"] - lw_by["lock"]["count"]) <= unseen, (lw, unseen)
    assert "declared_cause" not in m["query"], m["query"]
    for name, x in (("UPDATE", k), ("lock-wait", lw)):
        b = x["scheduler"]["blocked"]
        assert b["status"] == "recorded", (name, b)
        lock_ns = sum(c["ns"] for c in b["value"]["blocked_by"] if c["cause"] == "lock")
        assert hold <= lock_ns <= x["inclusive_ns"], (name, hold, b["value"]["blocked_by"], x["inclusive_ns"])
        top = b["value"]["wakers"][0]
        assert top["kind"] == "thread" and top["pid"] == hp, (name, top, hp)
        print(f"  lock (khbpf --blocked --wakers --span-cause lock-wait=lock): {name} "
              f"{x['inclusive_ns'] / 1e6:.3f} ms, blocked by lock {lock_ns / 1e6:.3f} ms "
              f"({lw['declared_cause_stretches']} stretch(es) named by lock-wait), top waker pid {top['pid']} (the holder)")
PY
	fail "postgres: the row lock's wait is not the one expected"
checkpoint lock

# The cluster is done with.
kill -INT "$PM"
for _ in $(seq 100); do kill -0 "$PM" 2>/dev/null || break; sleep 0.1; done
wait "$PM" 2>/dev/null
PM=""

# ---- 3. CPython 3.11: gc and imports against the interpreter's counts ------
bt_start python "$(usdt_sites "$PY" gc__start gc__done import__find__load__start import__find__load__done)" "
usdt:$PY:python:gc__start { @gc_start[pid] = count(); }
usdt:$PY:python:gc__done { @gc_done[pid] = count(); }
usdt:$PY:python:import__find__load__start { @import_start[pid] = count(); }
usdt:$PY:python:import__find__load__done { @import_done[pid] = count(); }"
# -I -S: no site, no environment (the counts are the same each run);
# -B: no .pyc written into the system's directories.
PYCMD=("$PY" -I -S -B -X importtime "$PYW")
"${PYCMD[@]}" >"$TMP/py.out" 2>"$TMP/py.err" &
CHILD=$!
py_direct=$CHILD
wait "$CHILD" || fail "$PYW: $(cat "$TMP/py.err")"
CHILD=""
checkpoint python
if [ -z "$GROUND_ONLY" ]; then
	kh_run python "$TMP/pykh.out" "$TMP/pykh.err" --usdt-span python:gc__start,gc__done=gc \
		--usdt-span python:import__find__load__start,import__find__load__done=import -- "${PYCMD[@]}"
fi
bt_stop python
"$PYTHON" - "$TMP/python.bt" "$py_direct" "$TMP/py.out" "$TMP/py.err" \
	"$TMP/python.json" "$TMP/pykh.out" "$TMP/pykh.err" "$GROUND_ONLY" <<'PY' ||
import json, re, sys
bt, direct, out, err, doc, khout, kherr, ground_only = sys.argv[1:]
maps = {}
for line in open(bt):
    m = re.match(r"^@(\w+)\[(\d+)\]: (\d+)$", line.strip())
    if m:
        maps.setdefault(m[1], {})[int(m[2])] = int(m[3])
def own(out, err):
    (gc,) = re.findall(r"^gc_collections (\d+)$", open(out).read(), re.M)
    imports = len(re.findall(r"^import time: +\d", open(err).read(), re.M))
    return int(gc), imports
def probes(pid):
    return tuple(maps.get(k, {}).get(pid, 0) for k in ("gc_start", "gc_done", "import_start", "import_done"))
runs = [("python3.11", int(direct), own(out, err))]
if not ground_only:
    d = json.load(open(doc))
    runs.append(("khbpf run", d["target"]["pid"], own(khout, kherr)))
for name, pid, (gc, imports) in runs:
    gs, gd, is_, id_ = probes(pid)
    print(f"  python ({name}, pid {pid}): gc collections {gc}, gc__start {gs}, gc__done {gd}; "
          f"importtime lines {imports}, import__find__load__start {is_}, __done {id_}")
    assert gs == gd == gc > 0 and is_ == id_ == imports > 0, (name, gs, gd, gc, is_, id_, imports)
if not ground_only:
    gc, imports = runs[1][2]
    calls = {m["metric_id"]: (m["calls"], m["unfinished"]) for m in d["span_metrics"]}
    # Imports nest: one call per import__find__load__done only if the open
    # spans of a thread are a stack.
    assert calls == {"gc": (gc, 0), "import": (imports, 0)}, calls
    assert d["span_probes"] and all(p["status"] == "attached" for p in d["span_probes"]), d["span_probes"]
PY
	fail "python: gc and import probes differ from the interpreter's counts"

# ---- 4. libstdc++: throw and catch against the program's count -------------
mkdir "$TMP/lib"
cp "$(readlink -f "$CXXLIB")" "$TMP/lib/libstdc++.so.6"
LIB=$TMP/lib/libstdc++.so.6
LD_LIBRARY_PATH=$TMP/lib ldd "$W" | grep -qF "$LIB" || fail "$W does not load $LIB: $(LD_LIBRARY_PATH=$TMP/lib ldd "$W")"
N=$((3000 + RANDOM % 1000)) THREADS=3
# bpftrace 0.17 needs the path quoted ('+'); its -c cannot place a probe in
# a library the command has not loaded yet: the probes are path-wide.
bt_start cxx "$(usdt_sites "$LIB" throw catch rethrow)" "
usdt:\"$LIB\":libstdcxx:throw { @throw[pid] = count(); }
usdt:\"$LIB\":libstdcxx:catch { @catch[pid] = count(); }
usdt:\"$LIB\":libstdcxx:rethrow { @rethrow[pid] = count(); }"
LD_LIBRARY_PATH=$TMP/lib "$W" --throws "$N" --threads "$THREADS" >"$TMP/cxx.out" 2>"$TMP/cxx.err" &
CHILD=$!
cxx_direct=$CHILD
wait "$CHILD" || fail "$W: $(cat "$TMP/cxx.err")"
CHILD=""
if [ -z "$GROUND_ONLY" ]; then
	LD_LIBRARY_PATH=$TMP/lib kh_run cxx "$TMP/cxxkh.out" "$TMP/cxxkh.err" \
		--usdt-span "$LIB:libstdcxx:throw,catch=exception" -- "$W" --throws "$N" --threads "$THREADS"
fi
bt_stop cxx
"$PYTHON" - "$TMP/cxx.bt" "$cxx_direct" "$TMP/cxx.out" "$TMP/cxx.json" "$TMP/cxxkh.out" \
	"$((N * THREADS))" "$GROUND_ONLY" <<'PY' || fail "libstdc++: throw and catch probes differ from the program's count"
import json, re, sys
bt, direct, out, doc, khout, total, ground_only = sys.argv[1:]
total = int(total)
maps = {}
for line in open(bt):
    m = re.match(r"^@(\w+)\[(\d+)\]: (\d+)$", line.strip())
    if m:
        maps.setdefault(m[1], {})[int(m[2])] = int(m[3])
def own(path):
    text = open(path).read()
    assert re.search(rf"^thrown {total} caught {total}$", text, re.M), text
    return total
runs = [("usdtthrow", int(direct), own(out))]
if not ground_only:
    d = json.load(open(doc))
    runs.append(("khbpf run", d["target"]["pid"], own(khout)))
for name, pid, n in runs:
    t, c, r = (maps.get(k, {}).get(pid, 0) for k in ("throw", "catch", "rethrow"))
    print(f"  libstdc++ ({name}, pid {pid}): thrown and caught {n}; throw {t}, catch {c}, rethrow {r}")
    assert t == c == n and r == 0, (name, t, c, r, n)
if not ground_only:
    assert [(m["metric_id"], m["calls"], m["unfinished"]) for m in d["span_metrics"]] == [("exception", total, 0)], d["span_metrics"]
    assert d["span_probes"] and all(p["status"] == "attached" for p in d["span_probes"]), d["span_probes"]
PY

no_bpf_left
echo "usdt_spans: ok"

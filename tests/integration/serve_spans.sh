#!/bin/bash
# khbpf serve with spans, on a PostgreSQL 15 cluster nobody here wrote, in a
# cgroup v2 of its own, started after serve (serve --cgroup CG, attached by
# file: every process that maps postgres, now or later):
#  1. pgbench -n -M simple with fixed statements: between a scrape before
#     and one after, khbpf_span_duration_seconds_count{metric="query",
#     cgroup=CG} grows by pg_stat_statements' sum(calls) exactly (after
#     pg_stat_statements_reset(); the statements reading it left out), and
#     each key (--key query=arg0:str, the text sent) by its row's calls;
#     khbpf_usdt_hits_total of postgresql:transaction__start by pgbench's
#     transactions, and the one each of its backends runs as it starts
#     (InitPostgres(); its connections counted in the server's log). The parts of khbpf_span_seconds_total add up to
#     khbpf_span_duration_seconds_sum, to the nanosecond; promtool check
#     metrics is clean.
#  2. A real Prometheus scrapes serve: histogram_quantile(0.99) of the
#     queries lies in pgbench's latency range: above 0, and at most the
#     upper bound of the log2 bucket of pgbench's slowest transaction
#     (every query runs inside one of them; the quantile is interpolated
#     within its bucket).
#  3. Outside the filter: CPython's gc spans (also asked for) of a
#     python3.11 outside CG are in no series.
#  4. The cluster stopped and started again, serve left running: the new
#     postmaster's backends are counted as the first ones were.
#  5. Each window's document (--ndjson) carries the span metrics: over the
#     windows, the query calls add up to what /metrics says.
#  And a query in progress (waiting for a lock) is in khbpf_span_open for its key, as
#  old as it can be by the clocks around it, and gone once it returns.
# Every process, the cluster, serve and Prometheus are stopped on every path.
# khbpf-test: plain-only
. "$(dirname "$0")/common.bash"
require_root "serve loads BPF"
PGBIN=/usr/lib/postgresql/15/bin
PG=$PGBIN/postgres
PY=/usr/bin/python3.11 # not PATH's python3.11 (a pyenv shim, say)
[ -x "$PG" ] && [ -x "$PGBIN/pgbench" ] ||
	fail "PostgreSQL 15 is missing: tools/install-deps.sh --with-tests installs postgresql-15"
[ -x "$PY" ] || fail "$PY is missing (python3.11)"
command -v promtool >/dev/null && command -v prometheus >/dev/null ||
	{ [ "${CI:-}" = true ] && fail "prometheus/promtool missing; run tools/install-deps.sh --with-prometheus"
	  echo "SKIP serve_spans: prometheus not installed (tools/install-deps.sh --with-prometheus)"; exit 0; }
CGROOT=$(awk '$9 == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CGROOT" ] || fail "no cgroup2 mount"
CG="khbpf-spans-$$"

AS=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
PM="" SERVE="" PROM="" BENCH="" PYP="" HOLDER="" SLEEPQ=""
chmod 0755 "$TMP"
mkdir -p "$TMP/sock" "$TMP/pg"
chown 65534:65534 "$TMP/sock" "$TMP/pg"
chmod 0700 "$TMP/pg"
mkdir "$CGROOT/$CG" || fail "cannot make cgroup $CGROOT/$CG"

stop_pm() {
	if [ -n "$PM" ] && kill -0 "$PM" 2>/dev/null; then
		kill -INT "$PM" # fast shutdown; its processes end with it
		for _ in $(seq 100); do kill -0 "$PM" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$PM" 2>/dev/null
	fi
	wait "$PM" 2>/dev/null
	PM=""
}
cleanup() {
	local rc=$?
	[ -n "$BENCH" ] && kill "$BENCH" 2>/dev/null
	[ -n "$PYP" ] && kill "$PYP" 2>/dev/null
	exec 8>&- # the holder's input, if open: it ends
	[ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null
	[ -n "$SLEEPQ" ] && kill "$SLEEPQ" 2>/dev/null
	stop_pm
	[ -n "$PROM" ] && kill "$PROM" 2>/dev/null
	[ -n "$SERVE" ] && kill "$SERVE" 2>/dev/null
	unhold_cgroup "$CGROOT/$CG"
	wait 2>/dev/null
	# Processes the cgroup still holds (none unless the cluster outlived its stop).
	for p in $(cat "$CGROOT/$CG/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	for _ in $(seq 50); do rmdir "$CGROOT/$CG" 2>/dev/null && break; sleep 0.1; done
	keep_failed "$rc"
}
trap cleanup EXIT

read -r PORT PPORT < <("$PYTHON" -c '
import socket
ps = []
for _ in range(2):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); ps.append(s)
print(*[s.getsockname()[1] for s in ps])')

# serve first: the cluster does not exist yet (a holder below CG: serve
# refuses a cgroup with no process in it).
hold_cgroup "$CGROOT/$CG"
"$KHBPF" serve --listen "127.0.0.1:$PORT" --interval 1 --cgroup "/$CG" \
	--usdt-span "$PG:postgresql:query__start,query__done=query" --key query=arg0:str \
	--usdt "$PG:postgresql:transaction__start" \
	--usdt-span "$PY:python:gc__start,gc__done=gc" \
	--ndjson "$TMP/windows.ndjson" >"$TMP/serve.out" 2>"$TMP/serve.err" &
SERVE=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break
	kill -0 "$SERVE" 2>/dev/null || fail "serve exited: $(cat "$TMP/serve.err")"
	sleep 0.1
done
curl -sf "http://127.0.0.1:$PORT/healthz" | grep -q '^ok' || fail "no /healthz"

cat >"$TMP/prom.yml" <<EOF
global: { scrape_interval: 1s, evaluation_interval: 1s }
scrape_configs:
  - job_name: khbpf
    static_configs: [ { targets: ["127.0.0.1:$PORT"] } ]
EOF
prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/tsdb" \
	--web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$TMP/prom.log" 2>&1 &
PROM=$!

PSQL=("${AS[@]}" /usr/bin/psql -X -q -h "$TMP/sock" -p 5439 -U bench -d postgres -At)
psql_() { "${PSQL[@]}" "$@"; }

"${AS[@]}" "$PGBIN/initdb" -D "$TMP/pg" -U bench --auth=trust --no-sync >"$TMP/initdb.log" 2>&1 ||
	fail "initdb failed: $(tail -5 "$TMP/initdb.log")"
# start_pm: the postmaster born in CG (a shell that moves itself, then execs).
start_pm() {
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CGROOT/$CG" \
		"${AS[@]}" "$PG" -D "$TMP/pg" -k "$TMP/sock" -p 5439 \
		-c listen_addresses= -c shared_preload_libraries=pg_stat_statements \
		-c pg_stat_statements.track_utility=on -c autovacuum=off -c fsync=off \
		-c log_connections=on -c logging_collector=off >>"$TMP/pg.log" 2>&1 &
	PM=$!
	for _ in $(seq 100); do
		"${AS[@]}" "$PGBIN/pg_isready" -q -h "$TMP/sock" -p 5439 && break
		kill -0 "$PM" 2>/dev/null || fail "postgres exited: $(tail -5 "$TMP/pg.log")"
		sleep 0.1
	done
	"${AS[@]}" "$PGBIN/pg_isready" -q -h "$TMP/sock" -p 5439 || fail "postgres is not ready"
	grep -qx "$PM" "$CGROOT/$CG/cgroup.procs" || fail "the postmaster is not in $CG"
}
start_pm
psql_ -c 'CREATE EXTENSION pg_stat_statements' || fail "pg_stat_statements"
"${AS[@]}" "$PGBIN/pgbench" -q -i -s 1 -h "$TMP/sock" -p 5439 -U bench postgres \
	>"$TMP/init.log" 2>&1 || fail "pgbench -i: $(tail -3 "$TMP/init.log")"
checkpoint cluster

# Fixed texts: one pg_stat_statements row each (as usdt_spans.sh).
cat >"$TMP/bench.sql" <<'EOF'
BEGIN;
SELECT abalance FROM pgbench_accounts WHERE aid = 17;
UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 3;
SELECT count(*) FROM pgbench_branches;
END;
EOF
chmod 0644 "$TMP/bench.sql"

# bench NAME: reset, scrape, pgbench, scrape, read pg_stat_statements.
bench() {
	local name=$1 clients=2 tx=$((40 + RANDOM % 20))
	psql_ -c 'SELECT pg_stat_statements_reset()' >/dev/null || fail "pg_stat_statements_reset"
	curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/$name.before" || fail "GET /metrics"
	wc -l <"$TMP/pg.log" >"$TMP/$name.logstart"
	date +%s >"$TMP/$name.t0"
	"${AS[@]}" "$PGBIN/pgbench" -n -M simple -f "$TMP/bench.sql" -c "$clients" -j 1 -t "$tx" \
		-l --log-prefix="$TMP/$name.lat" -h "$TMP/sock" -p 5439 -U bench postgres \
		>"$TMP/$name.out" 2>&1 &
	BENCH=$!
	# pgbench writes its logs where it runs: a directory nobody can write to is refused.
	wait "$BENCH" || fail "pgbench: $(tail -3 "$TMP/$name.out")"
	BENCH=""
	curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/$name.after" || fail "GET /metrics"
	psql_ -F '|' -c "SELECT calls, query FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'" \
		>"$TMP/$name.pgss" || fail "reading pg_stat_statements"
	# Each backend also runs one transaction as it starts (InitPostgres()).
	echo "$((clients * tx + $(tail -n +"$(($(cat "$TMP/$name.logstart") + 1))" "$TMP/pg.log" |
		grep -c 'connection authorized: user=bench .*application_name=pgbench')))" >"$TMP/$name.tx"
}
chmod 0777 "$TMP" # pgbench -l writes its log files as nobody
# Once first, so that each text's series exists before Prometheus sees it grow.
"${AS[@]}" "$PGBIN/pgbench" -n -M simple -f "$TMP/bench.sql" -c 1 -t 1 \
	-h "$TMP/sock" -p 5439 -U bench postgres >"$TMP/warm.out" 2>&1 || fail "pgbench: $(tail -3 "$TMP/warm.out")"
# Prometheus scrapes the series before pgbench, so that it sees them grow.
for _ in $(seq 600); do
	curl -sf "http://127.0.0.1:$PPORT/-/ready" >/dev/null && break
	kill -0 "$PROM" 2>/dev/null || fail "prometheus exited: $(tail -c 800 "$TMP/prom.log")"
	sleep 0.1
done
curl -sf "http://127.0.0.1:$PPORT/-/ready" >/dev/null || fail "prometheus not ready within 60 s"
# Two scrapes of the warmed-up series in, before pgbench.
"$PYTHON" - "$PPORT" <<'PY' || fail "Prometheus does not scrape serve"
import json, sys, time, urllib.parse, urllib.request
q = 'count_over_time(khbpf_span_duration_seconds_count{key="BEGIN;"}[1m])'
url = f"http://127.0.0.1:{sys.argv[1]}/api/v1/query?" + urllib.parse.urlencode({"query": q})
for _ in range(300):
    res = json.load(urllib.request.urlopen(url, timeout=5))["data"]["result"]
    if res and int(res[0]["value"][1]) >= 2:
        sys.exit(0)
    time.sleep(0.1)
sys.exit("no scrape of the series within 30 s")
PY
bench first
checkpoint first-bench

# Outside CG: CPython's gc spans would be counted without the filter.
"$PY" -c 'import gc
for i in range(200): gc.collect()' || fail "python3.11"

promtool check metrics <"$TMP/first.after" >"$TMP/promtool.out" 2>&1 ||
	fail "promtool check metrics: $(head -c 800 "$TMP/promtool.out")"
[ ! -s "$TMP/promtool.out" ] || fail "promtool lint: $(head -c 800 "$TMP/promtool.out")"

# spans_check NAME: the scrapes' growth against pg_stat_statements.
spans_check() {
	"$PYTHON" - "$TMP/$1.before" "$TMP/$1.after" "$TMP/$1.pgss" "$TMP/$1.tx" "/$CG" <<'PY'
import re, sys
from decimal import Decimal
before, after, pgss, tx, cg = sys.argv[1:]
tx = int(open(tx).read())

def samples(path):
    out = {}
    for line in open(path):
        m = re.match(r'^(\w+)\{(.*)\} (\S+)$', line.rstrip("\n"))
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m[2]))
        out[(m[1], tuple(sorted(labels.items())))] = Decimal(m[3])
    return out

a, b = samples(before), samples(after)
def grew(name, **want):
    tot = Decimal(0)
    for (n, labels), v in b.items():
        d = dict(labels)
        if n != name or any(d.get(k) != w for k, w in want.items()):
            continue
        tot += v - a.get((n, labels), Decimal(0))
    return tot

rows = {}
for l in open(pgss):
    calls, q = l.rstrip("\n").split("|", 1)
    rows[q] = int(calls)
calls = sum(rows.values())
got = grew("khbpf_span_duration_seconds_count", metric="query", cgroup=cg)
assert got == calls, (got, calls, rows)
# Each text pgbench sent is one key (cut to 63 bytes).
keys = {}
for (n, labels), v in b.items():
    d = dict(labels)
    if n == "khbpf_span_duration_seconds_count" and d.get("cgroup") == cg and v != a.get((n, labels), 0):
        keys[d["key"]] = v - a.get((n, labels), Decimal(0))
assert len(keys) == len(rows) == 5, (keys, rows)
assert sorted(keys.values()) == sorted(rows.values()), (keys, rows)
hits = grew("khbpf_usdt_hits_total", probe="postgresql:transaction__start", cgroup=cg)
assert hits == tx, (hits, tx)
# Parts add up to the sum, exactly, for every series of every metric.
for (n, labels), v in b.items():
    if n != "khbpf_span_duration_seconds_sum":
        continue
    d = dict(labels)
    parts = sum(pv for (pn, pl), pv in b.items() if pn == "khbpf_span_seconds_total"
                and {k: x for k, x in pl if k != "part"} == d)
    assert parts == v, (d, parts, v)
# Outside the filter: nothing of python's.
assert not any(dict(l).get("metric") == "gc" for (n, l) in b), "python3.11 outside CG counted"
print(f"  {calls} queries (pg_stat_statements) = khbpf's, 5 keys each equal, {hits} transactions")
PY
}
spans_check first || fail "serve's span series and pg_stat_statements differ"

# 2. Prometheus: the p99 of the queries within pgbench's latencies.
sleep 3 # a few scrapes after pgbench
"$PYTHON" - "$PPORT" "/$CG" "$TMP" <<'PY' || fail "histogram_quantile outside pgbench's latencies"
import glob, json, sys, time, urllib.parse, urllib.request
pport, cg, tmp = sys.argv[1:]
lat = []
for f in glob.glob(f"{tmp}/first.lat*"):
    for line in open(f):
        lat.append(int(line.split()[2]))  # µs, per transaction
assert lat, "no pgbench log"
# Over the seconds from just before pgbench to now: pgbench's queries alone.
t0 = int(open(f"{tmp}/first.t0").read())
now = int(time.time())
q = ('histogram_quantile(0.99, sum by (le) (increase(khbpf_span_duration_seconds_bucket'
     '{metric="query",cgroup="%s"}[%ds])))' % (cg, now - t0 + 1))
url = f"http://127.0.0.1:{pport}/api/v1/query?" + urllib.parse.urlencode({"query": q, "time": now})
for _ in range(50):
    r = json.load(urllib.request.urlopen(url, timeout=5))
    res = r["data"]["result"]
    if res and res[0]["value"][1] not in ("NaN", "0"):
        break
    time.sleep(0.2)
if not res or res[0]["value"][1] in ("NaN", "0"):
    raw = "khbpf_span_duration_seconds_count{metric=\"query\"}[%ds]" % (now - t0 + 1)
    u2 = f"http://127.0.0.1:{pport}/api/v1/query?" + urllib.parse.urlencode({"query": raw, "time": now})
    sys.exit(f"no quantile: {res}; the counts Prometheus has: {json.load(urllib.request.urlopen(u2))}")
p99 = float(res[0]["value"][1])
top = 1
while top <= max(lat) * 1000:
    top *= 2
assert 0 < p99 <= top / 1e9, (p99, min(lat), max(lat), top)
print(f"  p99 {p99 * 1e6:.0f} us; pgbench {min(lat)}..{max(lat)} us (bucket bound {top / 1e3:.0f} us)")
PY

# 3b. A query in progress: khbpf_span_open is 1 for its key while it runs,
# its age at least the time since it was seen waiting in pg_stat_activity
# (it began before) and at most the time since psql was started (it began
# after); once it returns, no query of CG is open. It waits for an advisory
# lock a holder session has, given back only after the scrape: in progress
# however slow the machine (a pg_sleep(3) had ended before a scrape under
# TCG with both guests and the fresh root's install running beside it).
SLEEP_SQL="SELECT pg_advisory_lock(4242)"
mkfifo "$TMP/holder.in"
"${PSQL[@]}" <"$TMP/holder.in" >"$TMP/holder.out" 2>&1 &
HOLDER=$!
exec 8>"$TMP/holder.in"
echo "SELECT pg_advisory_lock(4242), 'held';" >&8
for _ in $(seq 200); do grep -q 'held' "$TMP/holder.out" && break; sleep 0.05; done
grep -q 'held' "$TMP/holder.out" || fail "the holder did not take the lock: $(cat "$TMP/holder.out")"
launched=$(date +%s%N)
"${PSQL[@]}" -c "$SLEEP_SQL" >/dev/null 2>&1 8>&- &
SLEEPQ=$!
for _ in $(seq 200); do
	[ "$(psql_ -c "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND wait_event_type = 'Lock' AND query = '$SLEEP_SQL'")" = 1 ] && break
	sleep 0.05
done
seen=$(date +%s%N)
sleep 1
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/open.prom" || fail "GET /metrics"
scraped=$(date +%s%N)
echo "SELECT pg_advisory_unlock(4242);" >&8
exec 8>&- # EOF: the holder's psql ends
wait "$HOLDER" || fail "the holder failed: $(cat "$TMP/holder.out")"
HOLDER=""
wait "$SLEEPQ" || fail "psql $SLEEP_SQL"
SLEEPQ=""
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/closed.prom" || fail "GET /metrics"
"$PYTHON" - "$TMP/open.prom" "$TMP/closed.prom" "/$CG" "$SLEEP_SQL" "$launched" "$seen" "$scraped" <<'PY' || fail "the query in progress is not khbpf_span_open's"
import re, sys
from decimal import Decimal
openp, closedp, cg, sql = sys.argv[1:5]
launched, seen, scraped = (int(x) for x in sys.argv[5:8])

def series(path, name):
    out = {}
    for line in open(path):
        m = re.match(r'^(\w+)\{(.*)\} (\S+)$', line.rstrip("\n"))
        if m and m[1] == name:
            d = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m[2]))
            if d.get("cgroup") == cg and d.get("metric") == "query":
                out[d.get("key")] = Decimal(m[3])
    return out

opened = series(openp, "khbpf_span_open")
assert opened == {sql: 1}, opened
age = series(openp, "khbpf_span_open_oldest_seconds")[sql]
# It began before `seen` and the scrape a second after it; after `launched`,
# and the scrape ended at `scraped`.
hi = Decimal(scraped - launched) / 10**9
assert 1 <= age <= hi, (age, hi)
assert series(closedp, "khbpf_span_open") == {}, series(closedp, "khbpf_span_open")
print(f"  in progress: 1 query ({sql}), {age} s old at the scrape (at most {hi} s)")
PY

# 4. The cluster restarted under the same serve.
stop_pm
start_pm
checkpoint restarted
bench second
spans_check second || fail "after the restart, serve's series and pg_stat_statements differ"

# 5. The windows' documents add up to /metrics, each valid.
kill -TERM "$SERVE"
wait "$SERVE" || fail "serve exited non-zero: $(cat "$TMP/serve.err")"
SERVE=""
tail -n 1 "$TMP/windows.ndjson" >"$TMP/last.json"
validate "$TMP/last.json" >/dev/null || fail "the last window's document is not valid"
"$PYTHON" - "$TMP/windows.ndjson" "$TMP/second.after" "/$CG" <<'PY' || fail "documents and /metrics differ"
import json, re, sys
docs, metrics, cg = sys.argv[1:]
calls = 0
for line in open(docs):
    d = json.loads(line)
    for m in d.get("span_metrics", []):
        if m["metric_id"] == "query":
            calls += m["calls"]
            assert sum(k["calls"] for k in m.get("keys", [])) == m["calls"], m
total = 0
for line in open(metrics):
    m = re.match(r'^khbpf_span_duration_seconds_count\{(.*)\} (\d+)$', line)
    if m and f'cgroup="{cg}"' in m[1] and 'metric="query"' in m[1]:
        total += int(m[2])
# The documents go on after the last scrape: at least as many.
assert calls >= total > 0, (calls, total)
print(f"  documents: {calls} query calls over the windows; /metrics had {total}")
PY
echo "serve_spans: ok"

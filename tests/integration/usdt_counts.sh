#!/bin/bash
# Counted USDT probes (--usdt) and a USDT span pair in a library nobody here
# wrote: Debian's libstdc++, whose libstdcxx:throw and libstdcxx:catch fire
# in __cxa_throw and __cxa_begin_catch. build/workloads/usdtthrow counts
# its own throws and catches (a third of them thrown inside libstdc++ by
# std::vector::at) on each of its threads. Exactly:
#  - each thread's throw and catch hits equal what it threw (N each), the
#    process's and the total equal N * T, rethrow is listed with 0 hits;
#  - the throw-to-catch spans, one per exception, equal N * T, none open;
#  - the text report lists the probes; the document and its keyhog
#    rendering validate; no BPF program is left;
#  - the same, exactly, with more threads than CPUs throwing for longer,
#    so that hits are preempted inside khbpf's program: on 7.2 (preempt
#    lazy) a preempted hit's key, on the per-CPU private stack, was
#    rewritten by another thread's hit on that CPU until the program ran
#    with preemption disabled (1 run in 13 of the first pass, loaded).
# And one line and exit 2 for a malformed --usdt or --usdt-span.
. "$(dirname "$0")/common.bash"
require_root "run loads BPF"
W=build/workloads/usdtthrow
[ -x "$W" ] || fail "$W is missing: run 'make workloads'"

check_counts() { # N T [validate]
	local n=$1 t=$2
	"$KHBPF" run --usdt 'libstdcxx:*' --usdt-span libstdcxx:throw,catch=throw-to-catch \
		-o "$TMP/thr.json" -- "$W" --throws "$n" --threads "$t" >"$TMP/out" 2>"$TMP/err" ||
		fail "run: $(cat "$TMP/err")"
	grep -qx "thrown $((n * t)) caught $((n * t))" "$TMP/out" || fail "the workload said: $(cat "$TMP/out")"
	# The schema's check takes a second per 700 spans: the small run's only.
	[ -z "${3:-}" ] || validate "$TMP/thr.json" >/dev/null || fail "schema"
	no_bpf_left
	"$PYTHON" - "$TMP/thr.json" "$n" "$t" <<'PY' || fail "counts ($t threads of $n throws)"
import collections, json, sys
d = json.load(open(sys.argv[1]))


def explain(kind, value, tb):
    # Say what else the document holds, to tell a lost hit from a
    # misattributed one (the private stack's, above: 300, 301, 302).
    spans = collections.Counter(s["thread_id"] for s in d["events"]["spans"])
    loss = {k: v.get("value") for k, v in d["loss"].items() if isinstance(v, dict) and v.get("value")}
    print(f"{kind}: {value}\n  spans by thread: {dict(spans)}\n  non-zero loss: {loss}", file=sys.stderr)


sys.excepthook = lambda t, v, tb: explain(t.__name__, v, tb)
n, t = int(sys.argv[2]), int(sys.argv[3])
pid = d["processes"][0]["pid"]
tids = sorted(th["thread_id"] for th in d["threads"])
assert len(tids) == t, tids
counts = {u["probe"]: u for u in d["usdt_counts"]}
assert sorted(counts) == ["libstdcxx:catch", "libstdcxx:rethrow", "libstdcxx:throw"], sorted(counts)
for probe in ("libstdcxx:throw", "libstdcxx:catch"):
    u = counts[probe]
    assert u["metric_id"] == probe.replace(":", "-"), u
    assert u["hits"] == n * t, u
    assert [(x["pid"], x["hits"]) for x in u["processes"]] == [(pid, n * t)], u
    assert [x["thread_id"] for x in u["threads"]] == tids, u
    assert all(x["hits"] == n for x in u["threads"]), u
r = counts["libstdcxx:rethrow"]
assert r["hits"] == 0 and r["processes"] == [] and r["threads"] == [], r
spans = {m["metric_id"]: m for m in d["span_metrics"]}
assert list(spans) == ["throw-to-catch"], list(spans)
assert spans["throw-to-catch"]["calls"] == n * t, spans
assert spans["throw-to-catch"]["unfinished"] == 0, spans
sites = sorted((p["symbol"], p["site"], p["status"]) for p in d["span_probes"])
assert sites == [("libstdcxx:catch", "usdt-count", "attached"), ("libstdcxx:catch", "usdt-done", "attached"),
                 ("libstdcxx:rethrow", "usdt-count", "attached"), ("libstdcxx:throw", "usdt-count", "attached"),
                 ("libstdcxx:throw", "usdt-start", "attached")], sites
for k in ("usdt_hits_lost", "usdt_hits_without_process", "span_returns_unmatched"):
    assert d["loss"][k]["value"] == 0, (k, d["loss"][k])
print(f"  {n * t} throws and catches on {t} threads; spans {spans['throw-to-catch']['calls']}")
PY
}
N=301 T=3
check_counts 3000 4
check_counts "$N" "$T" validate
"$KHBPF" report "$TMP/thr.json" >"$TMP/report.txt" || fail "report"
grep -q "^USDT probes counted (--usdt): 3, $((2 * N * T)) hits in all" "$TMP/report.txt" ||
	fail "report: $(grep -A4 USDT "$TMP/report.txt")"

# Malformed requests: one line naming the option, exit 2, no document.
for bad in "--usdt libstdcxx" "--usdt a:b:" "--usdt-span libstdcxx:throw" "--usdt-span p:s,s"; do
	# shellcheck disable=SC2086
	expect_exit 2 "$KHBPF" run $bad -o "$TMP/bad.json" -- true
	expect_one_line_error
	grep -q -- "${bad%% *} '" "$TMP/err" || fail "$bad: the error does not name the option: $(cat "$TMP/err")"
	[ ! -e "$TMP/bad.json" ] || fail "$bad wrote a document"
done
echo "usdt_counts: ok"

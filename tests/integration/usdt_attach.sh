#!/bin/bash
# USDT spans in a process that is already running: Debian's CPython 3.11,
# whose gc probes are guarded by semaphores. attach --usdt-span on it:
#  - while attached, the kernel has raised each probe's semaphore (read
#    from the process's memory): the interpreter fires the probes;
#  - the gc spans, and the hits of gc__start and gc__done (--usdt), equal
#    the collections the interpreter itself counted (gc.get_stats())
#    between the two points the window covers, exactly; and keyed by
#    gc__start's argument (--key: the generation), so do the spans and hits
#    of each generation;
#  - after khbpf has gone the semaphores are back to 0: the probe sites
#    cost the target nothing any more, and no BPF program is left.
# The interpreter is stopped on every path.
. "$(dirname "$0")/common.bash"
require_root "attach loads BPF"
PY=/usr/bin/python3.11
[ -x "$PY" ] || fail "$PY is missing: tools/install-deps.sh installs python3.11"
PYPID="" KH=""
cleanup() {
	local rc=$?
	[ -z "$KH" ] || kill -INT "$KH" 2>/dev/null
	[ -z "$PYPID" ] || kill -KILL "$PYPID" 2>/dev/null
	wait 2>/dev/null
	keep_failed "$rc"
}
trap cleanup EXIT

mkfifo "$TMP/go"
# Waits on the fifo (idle: nothing allocated, so no collection), then on
# each line collects N times and reports the collections it counted.
cat >"$TMP/gcwait.py" <<'PY'
import gc, sys
def gens():
    return [s["collections"] for s in gc.get_stats()]
print("ready", flush=True)
with open(sys.argv[1]) as go:
    for line in go:
        before = gens()
        for i in range(int(line)):
            gc.collect(i % 3)
        junk = [[i] for i in range(100000)]
        del junk
        after = gens()
        # The collections it counted: in all, then of generations 0, 1, 2.
        d = [a - b for a, b in zip(after, before)]
        print(sum(d), *d, flush=True)
PY
"$PY" "$TMP/gcwait.py" "$TMP/go" >"$TMP/py.out" 2>&1 &
PYPID=$!
exec 7>"$TMP/go"
for _ in $(seq 100); do grep -q ready "$TMP/py.out" && break; sleep 0.05; done
grep -q ready "$TMP/py.out" || fail "python did not start: $(cat "$TMP/py.out")"

# semaphores: the gc probes' semaphores, as unsigned shorts in its memory.
semaphores() {
	"$KHBPF" list --usdt --json "$PY" >"$TMP/list.json" || fail "khbpf list"
	"$PYTHON" - "$TMP/list.json" "$PYPID" <<'PY'
import json, struct, sys
pid = int(sys.argv[2])
d = json.load(open(sys.argv[1]))
maps = []
for line in open(f"/proc/{pid}/maps"):
    f = line.split()
    if len(f) >= 6 and f[5] == "/usr/bin/python3.11":
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        maps.append((lo, hi, int(f[2], 16)))
out = []
with open(f"/proc/{pid}/mem", "rb") as mem:
    for p in d["objects"][0]["usdt"]:
        if p["name"] not in ("gc__start", "gc__done"):
            continue
        off = int(p["sites"][0]["semaphore_offset"], 16)
        addr = next(lo + off - pg for lo, hi, pg in maps if pg <= off < pg + hi - lo)
        mem.seek(addr)
        out.append(struct.unpack("<H", mem.read(2))[0])
print(" ".join(map(str, out)))
PY
}
[ "$(semaphores)" = "0 0" ] || fail "semaphores before attach: $(semaphores)"
echo 7 >&7
for _ in $(seq 100); do [ "$(wc -l <"$TMP/py.out")" -ge 2 ] && break; sleep 0.05; done

"$KHBPF" attach --pid "$PYPID" --usdt-span python:gc__start,gc__done=gc --usdt 'python:gc__*' \
	--key gc=arg0:int --key python-gc-start=arg0:int \
	-o "$TMP/gc.json" 2>"$TMP/kh.err" &
KH=$!
for _ in $(seq 200); do grep -q watching "$TMP/kh.err" && break; sleep 0.05; done
grep -q watching "$TMP/kh.err" || fail "attach did not start: $(cat "$TMP/kh.err")"
checkpoint attached
# Two programs on each site (the span's end and the count) share the
# kernel's one uprobe there: it raises the semaphore once per process.
[ "$(semaphores)" = "1 1" ] || fail "semaphores while attached: $(semaphores), expected 1 1"
echo 40 >&7
for _ in $(seq 200); do [ "$(wc -l <"$TMP/py.out")" -ge 3 ] && break; sleep 0.05; done
[ "$(wc -l <"$TMP/py.out")" -ge 3 ] || fail "python did not collect: $(cat "$TMP/py.out")"
kill -INT "$KH"
wait "$KH" || fail "attach exited $?: $(cat "$TMP/kh.err")"
KH=""
[ "$(semaphores)" = "0 0" ] || fail "semaphores after khbpf: $(semaphores), expected 0 0"
no_bpf_left
validate "$TMP/gc.json" >/dev/null || fail "schema"
read -r want g0 g1 g2 < <(sed -n 3p "$TMP/py.out")
# By generation (gc__start's argument 0): the interpreter's own counts, keys of both metrics.
bygen="{'0': $g0, '1': $g1, '2': $g2}"
bygen_nz="{k: v for k, v in $bygen.items() if v}"
json_check "$TMP/gc.json" \
	"[m['calls'] for m in d['span_metrics'] if m['metric_id'] == 'gc'] == [$want]" \
	"sorted(p['site'] for p in d['span_probes']) == ['usdt-count', 'usdt-count', 'usdt-done', 'usdt-start']" \
	"all(p['status'] == 'attached' for p in d['span_probes'])" \
	"d['loss']['span_returns_unmatched']['value'] == 0" \
	"sorted((u['probe'], u['hits']) for u in d['usdt_counts']) == [('python:gc__done', $want), ('python:gc__start', $want)]" \
	"all(u['processes'] == [{'pid': $PYPID, 'process_start_unix_ns': u['processes'][0]['process_start_unix_ns'], 'hits': $want}] for u in d['usdt_counts'])" \
	"d['open_spans'] == []" \
	"{k['key']['text']: k['calls'] for k in [m for m in d['span_metrics'] if m['metric_id'] == 'gc'][0]['keys']} == $bygen_nz" \
	"all(k['key']['kind'] == 'int' and not k['key']['other'] for k in d['span_metrics'][0]['keys'])" \
	"{k['key']['text']: k['hits'] for k in [u for u in d['usdt_counts'] if u['probe'] == 'python:gc__start'][0]['keys']} == $bygen_nz" \
	"all(r['key']['text'] in ('0', '1', '2') for r in d['events']['spans'])" \
	"d['loss']['span_key_calls_other']['value'] == 0 and d['loss']['span_key_unreadable']['value'] == 0"
echo "usdt_attach: ok ($want collections: $g0, $g1, $g2 by generation; semaphores 0 -> 1 -> 0)"

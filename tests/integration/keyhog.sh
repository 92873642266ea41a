#!/bin/bash
# The keyhog rendering (docs/evidence.md section 11) on a real run: a
# workload annotated with keyhog-profile stage names and with other names,
# nested both ways. The rendering validates against the crate's closed
# vocabularies, keeps exactly the calls of crate names in events.spans and
# sets the others aside with their count, joins span_aggregation as the
# crate does over the records kept, and changes nothing else: undoing the
# documented mapping gives the document back. `run --keyhog` and
# `report --keyhog` write the same bytes; bad input leaves no file.
. "$(dirname "$0")/common.bash"
require_root "BPF uprobes"

W=build/workloads/keyhogstages
[ -x "$W" ] || fail "$W is not built (make workloads)"

"$KHBPF" run -o "$TMP/doc.json" --keyhog "$TMP/kh.json" --counter-events=sw-cpu-clock \
	-- "$W" --rounds 7 >"$TMP/calls.json" 2>"$TMP/run.err" ||
	fail "run: $(head -c 600 "$TMP/run.err")"
validate "$TMP/doc.json" || fail "schema (run)"
"$PYTHON" tests/validate_schema.py "$KEYHOG_SCHEMA" "$TMP/kh.json" >/dev/null ||
	fail "run --keyhog does not validate"
"$KHBPF" report --keyhog "$TMP/kh2.json" "$TMP/doc.json" || fail "report --keyhog"
cmp -s "$TMP/kh.json" "$TMP/kh2.json" || fail "run --keyhog and report --keyhog differ"

"$PYTHON" - "$TMP/doc.json" "$TMP/kh.json" "$TMP/calls.json" <<'PY' || fail "keyhog rendering checks"
import copy, json, sys

doc = json.load(open(sys.argv[1]))
kh = json.load(open(sys.argv[2]))
calls = json.loads(open(sys.argv[3]).read())
schema = json.load(open("docs/keyhog-profile.schema.json"))
crate_ids = schema["$defs"]["metric_id"]["enum"]
ok = True


def check(cond, what):
    global ok
    if not cond:
        ok = False
        print("  false:", what, file=sys.stderr)


# Spans: the crate's names kept, exactly the calls made; the others set aside.
kept, other = kh["events"]["spans"], kh["khbpf_spans"]["spans"]
for name in ("source-read", "decode", "reporting"):
    n = sum(1 for s in kept if s["metric_id"] == name)
    check(n == calls[name], f"{name}: {n} records kept, {calls[name]} calls")
for name in ("local-parse", "local-format"):
    n = sum(1 for s in other if s["metric_id"] == name)
    check(n == calls[name], f"{name}: {n} records set aside, {calls[name]} calls")
check(all(s["metric_id"] in crate_ids for s in kept), "only crate names in events.spans")
check(not any(s["metric_id"] in crate_ids for s in other), "no crate name set aside")
check(kh["khbpf_spans"]["count"] == len(other), "khbpf_spans.count")
check(kh["events"]["version"] == 3 and all(s["version"] == 3 for s in kept),
      "the crate's versions (3) on the stream and its records")
by_id = {s["span_id"]: s for s in kept + other}
for s in kept + other:
    want = {"decode": "local-parse", "local-format": "reporting"}.get(s["metric_id"])
    if want:
        p = s["parent_span_id"]
        check(p["status"] == "recorded" and by_id[p["value"]]["metric_id"] == want,
              f"{s['metric_id']} {s['span_id']}: parent is a {want} span")

# Collectors: span-probes is khbpf's own.
check([c["collector"] for c in kh["khbpf_collectors"]] == ["span-probes"], "khbpf_collectors")
check("span-probes" not in [c["collector"] for c in kh["collectors"]], "collectors")

# span_aggregation: the crate's join over the kept records, stages in MetricId order.
def join(spans):
    def add(d, k, hw):
        e = d.setdefault(k, [0, 0, 0])
        counted = False
        for i, f in ((1, "cycles"), (2, "instructions")):
            b, en = hw[f + "_begin"], hw[f + "_end"]
            if b["status"] == en["status"] == "recorded":
                e[i] += max(en["value"] - b["value"], 0)
                counted = True
        e[0] += counted
    stages, threads, run = {}, {}, {}
    for s in spans:
        if s["hardware"]["status"] != "recorded":
            continue
        hw = s["hardware"]["value"]
        add(stages, s["metric_id"], hw)
        add(threads, s["thread_id"], hw)
        add(run, 0, hw)
    return stages, threads, run.get(0, [0, 0, 0])


agg = kh["hardware"]["value"]["span_aggregation"]["value"]
stages, threads, run = join(kept)
check(agg["run"]["span_count"] == len(kept), "run.span_count: the kept records")
check([agg["run"][k] for k in ("spans_with_counters", "cycles", "instructions")] == run,
      f"run totals {agg['run']} against {run}")
check([s["metric_id"] for s in agg["stages"]] ==
      sorted(stages, key=crate_ids.index), "stages in MetricId order")
check(all([s["span_count"], s["cycles"], s["instructions"]] == stages[s["metric_id"]]
          for s in agg["stages"]), "stage totals")
check([t["thread_id"] for t in agg["threads"]] == sorted(threads), "threads in id order")
check(all([t["span_count"], t["cycles"], t["instructions"]] == threads[t["thread_id"]]
          for t in agg["threads"]), "thread totals")
# Every record kept (none lost): the join of the crate-named records is
# what the kernel's own totals say of those metrics. Where the readings were
# gaps (a guest under TCG; 5.10's verifier) both are empty.
mine = {st["metric_id"]: st for st in doc["hardware"]["value"]["span_aggregation"]["value"]["stages"]}
if doc["events"]["dropped_span_events"] == doc["events"]["sampled_out_events"] == 0:
    for m, (n, cyc, ins) in stages.items():
        check([mine[m]["span_count"], mine[m]["cycles"], mine[m]["instructions"]] == [n, cyc, ins],
              f"{m}: the join of its records is the kernel's totals {mine[m]}")
    check(set(stages) == {m for m in mine if m in crate_ids}, "the same crate-named stages")
check(run[1] > 0 or all(st["cycles"] == 0 for st in mine.values()),
      "cpu-clock readings recorded here are in the join")

# Undo the documented mapping: the document comes back, nothing else moved.
def unmap(o):
    if isinstance(o, dict):
        if "khbpf_source" in o:
            check(o["source"] == "system-call", f"mapped to system-call: {o}")
            o["source"] = o.pop("khbpf_source")
        for v in o.values():
            unmap(v)
    elif isinstance(o, list):
        for v in o:
            unmap(v)


back = copy.deepcopy(kh)
unmap(back)
back["schema"] = "khbpf-evidence"
back["collectors"] += back.pop("khbpf_collectors")
order = [c["collector"] for c in doc["collectors"]]
back["collectors"].sort(key=lambda c: order.index(c["collector"]))
spans = back["events"]["spans"] + back.pop("khbpf_spans")["spans"]
for s in spans:
    s["version"] = 1
back["events"]["spans"] = sorted(spans, key=lambda s: (s["start_ns"], s["span_id"]))
back["events"]["version"] = 1
hw = back["hardware"]["value"]
hw["span_aggregation"] = hw.pop("khbpf_span_aggregation")
check(back == doc, "the rendering less the mapping is the document")
check(list(back) == list(doc), "top-level keys in the document's order")
n = sum(1 for _ in json.dumps(kh).split('"khbpf_source"')) - 1
check(n > 0, "some sources were mapped")
sys.exit(0 if ok else 1)
PY

# --no-bpf: /proc sources become system-call too.
"$KHBPF" run --no-bpf -o "$TMP/nobpf.json" --keyhog "$TMP/nobpf.kh.json" -- "$W" >/dev/null 2>&1 ||
	fail "run --no-bpf --keyhog"
"$PYTHON" tests/validate_schema.py "$KEYHOG_SCHEMA" "$TMP/nobpf.kh.json" >/dev/null ||
	fail "--no-bpf rendering does not validate"
json_check "$TMP/nobpf.kh.json" \
	'd["threads"][0]["on_cpu_ns"]["khbpf_source"] == "proc-pid-schedstat"' \
	'd["threads"][0]["on_cpu_ns"]["source"] == "system-call"' \
	'd["khbpf_spans"] == {"count": 0, "spans": []}'

# attach renders the same way (the same code as run's, from its own document).
sleep 30 &
SLEEPER=$!
trap 'kill "$SLEEPER" 2>/dev/null; wait "$SLEEPER" 2>/dev/null; keep_failed' EXIT
"$KHBPF" attach --pid "$SLEEPER" -d 0.3 -o "$TMP/att.json" --keyhog "$TMP/att.kh.json" 2>"$TMP/att.err" ||
	fail "attach --keyhog: $(cat "$TMP/att.err")"
"$PYTHON" tests/validate_schema.py "$KEYHOG_SCHEMA" "$TMP/att.kh.json" >/dev/null ||
	fail "attach --keyhog does not validate"
"$KHBPF" report --keyhog "$TMP/att2.kh.json" "$TMP/att.json" || fail "report --keyhog (attach)"
cmp -s "$TMP/att.kh.json" "$TMP/att2.kh.json" || fail "attach --keyhog and report --keyhog differ"
json_check "$TMP/att.kh.json" \
	"d['target']['pid'] == $SLEEPER" \
	"d['threads'][0]['on_cpu_ns']['khbpf_source'] == 'bpf-tracepoint'"
kill "$SLEEPER"
wait "$SLEEPER" 2>/dev/null

# To stdout, and bad input: one line, a non-zero exit, no file.
"$KHBPF" report --keyhog - "$TMP/doc.json" >"$TMP/stdout.json" || fail "report --keyhog -"
cmp -s "$TMP/stdout.json" "$TMP/kh.json" || fail "--keyhog - differs from the file"
printf '{"schema": "khbpf-evidence", ' >"$TMP/cut.json"
expect_exit 1 "$KHBPF" report --keyhog "$TMP/out.json" "$TMP/cut.json"
expect_one_line_error
[ ! -e "$TMP/out.json" ] || fail "a cut document left a rendering behind"
expect_exit 1 "$KHBPF" report --keyhog "$TMP/out.json" "$TMP/kh.json"
expect_one_line_error
grep -q 'keyhog' "$TMP/err" || fail "a rendering given as input: $(cat "$TMP/err")"
[ ! -e "$TMP/out.json" ] || fail "a rendering as input left a file behind"
expect_exit 2 "$KHBPF" report --keyhog "$TMP/doc.json" "$TMP/doc.json"
expect_one_line_error
expect_exit 2 "$KHBPF" report --keyhog "$TMP/x.json" --html "$TMP/x.json" "$TMP/doc.json"
expect_one_line_error
no_bpf_left
"$PYTHON" - "$TMP/kh.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"keyhog: {len(d['events']['spans'])} records kept, {d['khbpf_spans']['count']} set aside")
PY

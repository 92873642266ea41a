#!/bin/bash
# A sum over spans where a few calls could not be measured keeps the sum
# over the others, with how many it covers (docs/evidence.md 7.3.3). The
# test aid KHBPF_TEST_SKIP_SWITCH_INS=N keeps every N-th switch-in of a
# thread with a span clock from the clock (bpf/sched.bpf.c), as a missed
# sched_switch would: the spans across it lose their on-CPU time. Checked
# on the annotated workload (stage-sleep switches out and in inside every
# call), with every record kept, against the records themselves:
#  - a metric some of whose calls lost it: on_cpu_ns "partial", its value
#    the sum over the records with on_cpu_ns recorded, covered_calls their
#    number, calls the metric's calls;
#  - a metric all of whose calls kept it: recorded, as before;
#  - loss.span_clock_missed_switch_ins counts the skipped switch-ins;
#  - the text and HTML reports show the figure and its coverage; the
#    keyhog rendering makes it the crate's gap, the sum beside it.
. "$(dirname "$0")/common.bash"
require_root "run loads BPF"

SPANNED=build/workloads/spanned
KHBPF_TEST_SKIP_SWITCH_INS=7 timeout -k 5 60 "$KHBPF" run --html "$TMP/r.html" -o "$TMP/doc.json" -- \
	"$SPANNED" --threads 2 --iterations 40 >"$TMP/out" 2>"$TMP/err" ||
	fail "khbpf run exited $?: $(cat "$TMP/err")"
grep -q 'test aid: every 7-th span clock switch-in is skipped' "$TMP/err" ||
	fail "the test aid was not taken: $(cat "$TMP/err")"
validate "$TMP/doc.json" || fail "schema"

"$PYTHON" - "$TMP/doc.json" <<'PY' >"$TMP/partial.txt" || fail "coverage"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["events"]["sampled_out_events"] == 0 and d["events"]["dropped_span_events"] == 0, d["events"]
missed = d["loss"]["span_clock_missed_switch_ins"]
missed = missed["value"] if isinstance(missed, dict) else missed
assert missed > 0, missed
recs = {}
for s in d["events"]["spans"]:
    recs.setdefault(s["metric_id"], []).append(s)
partial = 0
for m in d["span_metrics"]:
    rs = recs.get(m["metric_id"], [])
    assert len(rs) == m["calls"], (m["metric_id"], len(rs), m["calls"])
    kept = [s["scheduler"]["on_cpu_ns"]["value"] for s in rs
            if s["scheduler"]["on_cpu_ns"]["status"] == "recorded"]
    on = m["scheduler"]["on_cpu_ns"]
    if len(kept) == len(rs):
        assert on == {"status": "recorded", "value": sum(kept)}, (m["metric_id"], on, sum(kept))
    elif kept:
        partial += 1
        assert on == {"status": "partial", "value": sum(kept), "covered_calls": len(kept),
                      "calls": len(rs), "reason": "unavailable"}, (m["metric_id"], on, len(kept), sum(kept))
        print(m["metric_id"], on["value"], on["covered_calls"], on["calls"])
    else:
        assert on == {"status": "unavailable", "reason": "unavailable"}, (m["metric_id"], on)
assert partial > 0, "no metric lost part of its calls: the test aid did nothing"
PY
echo "  partial sums (metric, on-CPU ns, covered, calls): $(tr '\n' ';' <"$TMP/partial.txt")"

# The keyhog rendering keeps the crate's rule: recorded or a gap, the sum beside.
"$KHBPF" report --keyhog "$TMP/kh.json" "$TMP/doc.json" || fail "khbpf report --keyhog"
"$PYTHON" - "$TMP/doc.json" "$TMP/kh.json" <<'PY' || fail "the keyhog rendering of a partial sum"
import json, sys
d, k = (json.load(open(p)) for p in sys.argv[1:])
for m, km in zip(d["span_metrics"], k["span_metrics"]):
    on, kon = m["scheduler"]["on_cpu_ns"], km["scheduler"]["on_cpu_ns"]
    if on["status"] == "partial":
        assert kon == {"status": "unavailable", "reason": "unavailable",
                       "khbpf_partial": {x: on[x] for x in ("value", "covered_calls", "calls")}}, kon
    else:
        assert kon == on, (kon, on)
PY
"$KHBPF" report "$TMP/doc.json" >"$TMP/report.txt" || fail "khbpf report"
while read -r metric _ covered calls; do
	grep -q "^  $metric .* on-CPU over $covered of $calls calls (the others missed a switch-in)" "$TMP/report.txt" ||
		fail "the text report does not show $metric's coverage: $(grep -- "$metric" "$TMP/report.txt")"
	grep -q "on-CPU over $covered of $calls calls (the others missed a switch-in)" "$TMP/r.html" ||
		fail "the HTML does not show $metric's coverage"
done <"$TMP/partial.txt"
no_bpf_left
echo "span_coverage: ok"

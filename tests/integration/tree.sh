#!/bin/bash
# khbpf run on a process tree (tests/workloads/tree.c): it forks, reaps,
# execs another binary, double-forks, vforks, clones, has a child killed,
# and runs threads in its children. Every process and thread must be listed
# with its own counters (each thread read them as its last act), its parent,
# executable and exit status, and the set's totals must meet the tree's own
# rusage as the kernel's bookkeeping says they must (tree_check.py). The
# report shows the processes busiest first, threads under their process.
# --no-children: only the command's own process, as before sets existed;
# --no-bpf: the tree's switches from wait4's rusage, other totals gaps.
. "$(dirname "$0")/common.bash"
require_root "run loads BPF"
CHECK=tests/integration/tree_check.py
TREE=build/workloads/tree
LEAF=build/workloads/treeleaf

# Three rounds; one in the sanitized pass (ASan's khbpf: the same kernel side).
ROUNDS=3
[ -z "${KHBPF_SANITIZED:-}" ] || ROUNDS=1
for round in $(seq "$ROUNDS"); do
	rm -f "$TMP/truth.jsonl"
	timeout 60 "$KHBPF" run -o "$TMP/doc.json" -- "$TREE" "$TMP/truth.jsonl" "$LEAF" \
		2>"$TMP/kh.err" || fail "khbpf run exited $? (round $round): $(head -c 500 "$TMP/kh.err")"
	validate "$TMP/doc.json" >/dev/null || fail "schema (round $round)"
	"$PYTHON" "$CHECK" "$TMP/doc.json" "$TMP/truth.jsonl" || fail "the tree's truth (round $round)"
	json_check "$TMP/doc.json" \
		"d['target']['exit'] == {'status': 'recorded', 'value': {'code': 0}}" \
		"d['window']['end_reason'] == 'target-exit'"
done
"$KHBPF" report "$TMP/doc.json" >"$TMP/report.txt" || fail "khbpf report failed"
grep -q '^Processes (9), busiest first' "$TMP/report.txt" || fail "no process table: $(head -20 "$TMP/report.txt")"
[ "$(grep -c '^  pid [0-9]* (' "$TMP/report.txt")" -eq 9 ] || fail "threads not under their 9 processes"

rm -f "$TMP/truth.jsonl"
timeout 60 "$KHBPF" run --no-children -o "$TMP/one.json" -- "$TREE" "$TMP/truth.jsonl" "$LEAF" \
	2>"$TMP/kh.err" || fail "khbpf run --no-children exited $?: $(head -c 500 "$TMP/kh.err")"
validate "$TMP/one.json" >/dev/null || fail "schema (--no-children)"
"$PYTHON" "$CHECK" "$TMP/one.json" "$TMP/truth.jsonl" --no-children || fail "--no-children"
# Without BPF: the command's threads from /proc, the tree's switches from
# wait4's rusage of the command (system-call), which has every process it
# reaped. The root's own getrusage() was read just before its last acts (two
# writes and its exit), so wait4's can only be more; how much more nothing
# outside the kernel can say: its exit path slept twice more in an emulated
# 5.10 guest (3 voluntary switches after its reading), so no upper bound.
rm -f "$TMP/truth.jsonl"
timeout 60 "$KHBPF" run --no-bpf -o "$TMP/nobpf.json" -- "$TREE" "$TMP/truth.jsonl" "$LEAF" \
	2>"$TMP/kh.err" || fail "khbpf run --no-bpf exited $?: $(head -c 500 "$TMP/kh.err")"
validate "$TMP/nobpf.json" >/dev/null || fail "schema (--no-bpf)"
"$PYTHON" - "$TMP/nobpf.json" "$TMP/truth.jsonl" <<'PY' || fail "--no-bpf tree totals"
import json, sys
d = json.load(open(sys.argv[1]))
ru = next(json.loads(l) for l in open(sys.argv[2]) if '"rusage"' in l)
s = d["hardware"]["value"]["scheduler"]
v, i = s["voluntary_context_switches"], s["involuntary_context_switches"]
assert v["source"] == i["source"] == "system-call", (v, i)
dv = v["value"]["value"] - ru["self_nvcsw"] - ru["children_nvcsw"]
di = i["value"]["value"] - ru["self_nivcsw"] - ru["children_nivcsw"]
print(f"  --no-bpf: wait4 has {dv} voluntary and {di} involuntary switches beyond the root's last getrusage")
assert dv >= 0 and di >= 0, (dv, di, ru, s)
assert d["target"]["set"]["kind"] == "command-tree"
# Threads may have run unseen: no partial sums as totals, for the set or a process.
assert d["hardware"]["value"]["utilization"]["all_threads_cpu_ns"]["status"] == "unavailable"
assert all(p["on_cpu_ns"]["value"]["status"] == "unavailable" for p in d["processes"]), d["processes"]
PY
no_bpf_left
echo "tree: ok ($ROUNDS runs of 9 processes and 14 threads, each as it read itself; --no-children: its own)"

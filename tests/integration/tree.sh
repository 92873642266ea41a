#!/bin/bash
# khbpf run on a process tree (tests/workloads/tree.c): it forks, reaps,
# execs another binary, double-forks, vforks, clones, has a child killed,
# and runs threads in its children. Every process and thread must be listed
# with its own counters (each thread read them as its last act), its parent,
# executable and exit status, and the set's totals must meet the tree's own
# rusage as the kernel's bookkeeping says they must (tree_check.py). Then
# --no-children: only the command's own process, as before sets existed.
. "$(dirname "$0")/common.bash"
require_root "run loads BPF"
CHECK=tests/integration/tree_check.py
TREE=build/workloads/tree
LEAF=build/workloads/treeleaf

for round in 1 2 3; do
	rm -f "$TMP/truth.jsonl"
	timeout 60 "$KHBPF" run -o "$TMP/doc.json" -- "$TREE" "$TMP/truth.jsonl" "$LEAF" \
		2>"$TMP/kh.err" || fail "khbpf run exited $? (round $round): $(head -c 500 "$TMP/kh.err")"
	"$PYTHON" tests/validate_schema.py "$SCHEMA" "$TMP/doc.json" >/dev/null || fail "schema (round $round)"
	"$PYTHON" "$CHECK" "$TMP/doc.json" "$TMP/truth.jsonl" || fail "the tree's truth (round $round)"
	json_check "$TMP/doc.json" \
		"d['target']['exit'] == {'status': 'recorded', 'value': {'code': 0}}" \
		"d['window']['end_reason'] == 'target-exit'"
done

rm -f "$TMP/truth.jsonl"
timeout 60 "$KHBPF" run --no-children -o "$TMP/one.json" -- "$TREE" "$TMP/truth.jsonl" "$LEAF" \
	2>"$TMP/kh.err" || fail "khbpf run --no-children exited $?: $(head -c 500 "$TMP/kh.err")"
"$PYTHON" tests/validate_schema.py "$SCHEMA" "$TMP/one.json" >/dev/null || fail "schema (--no-children)"
"$PYTHON" "$CHECK" "$TMP/one.json" "$TMP/truth.jsonl" --no-children || fail "--no-children"
no_bpf_left
echo "tree: ok (3 runs of 9 processes and 14 threads, each as it read itself; --no-children: its own)"

#!/bin/bash
# serve --pid P --children: a shell that, once serve is up, runs the process
# tree workload (tests/workloads/tree.c). Every thread of the tree, forked
# after serve started, is in serve's windows (--ndjson), under its process,
# and its counts summed over the windows are its own reading plus what it
# did after it (tree_check.py's rule: the switches beyond the reading are
# one more than the timeslices); the shell itself, which execs the tree's
# root, is counted from serve's start. Without --children only the shell.
. "$(dirname "$0")/common.bash"
require_root "serve loads BPF"
SERVE_PID="" P=""
cleanup() {
	local rc=$?
	exec 8>&- 2>/dev/null
	[ -z "$P" ] || kill "$P" 2>/dev/null
	[ -z "$SERVE_PID" ] || kill -INT "$SERVE_PID" 2>/dev/null
	wait 2>/dev/null
	keep_failed "$rc"
}
trap cleanup EXIT

for mode in children alone; do
	rm -f "$TMP/go" "$TMP/truth.jsonl" "$TMP/w.ndjson"
	mkfifo "$TMP/go"
	# The shell waits on the fifo, then runs the tree and waits for it.
	bash -c 'read -r _ <"$1"; "$2" "$3" "$4"' _ "$TMP/go" build/workloads/tree "$TMP/truth.jsonl" \
		build/workloads/treeleaf &
	P=$!
	if [ $mode = children ]; then
		start_serve --interval 1 --by process --pid "$P" --children --ndjson "$TMP/w.ndjson"
	else
		start_serve --interval 1 --by process --pid "$P" --ndjson "$TMP/w.ndjson"
	fi
	echo go >"$TMP/go"
	wait "$P" || fail "the tree exited $?"
	P=""
	sleep 1.2 # one more window, after the last exit
	kill -INT "$SERVE_PID"
	wait "$SERVE_PID" || fail "serve exited $?: $(cat "$TMP/serve.err")"
	SERVE_PID=""
	"$PYTHON" - "$TMP/w.ndjson" "$TMP/truth.jsonl" "$mode" <<'PY' || fail "serve --pid ($mode)"
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1])]
truth = [json.loads(l) for l in open(sys.argv[2])]
mode = sys.argv[3]
threads = {l["tid"]: l for l in truth if l["kind"] == "thread" and l["role"] != "tree-before-rusage"}
sums = {}
for d in docs:
    for t in d["threads"]:
        s = t["scheduler"]
        k = sums.setdefault(t["thread_id"], {"pid": t["pid"], "nvcsw": 0, "nivcsw": 0, "pcount": 0,
                                             "born": t["born"]})
        for f, name in (("nvcsw", "voluntary_context_switches"), ("nivcsw", "involuntary_context_switches"),
                        ("pcount", "timeslices")):
            k[f] += s[name]["value"]["value"]
root = next(l["pid"] for l in truth if l["kind"] == "rusage")
if mode == "alone":
    # The shell execs the tree's root: its process, and only its, is the set.
    mine = {tid for tid, t in threads.items() if t["pid"] == root}
    assert set(sums) == mine, f"the shell alone: threads {sorted(sums)}, its own {sorted(mine)}"
    sys.exit(0)
missing = set(threads) - set(sums)
assert not missing, f"threads never in a window: {sorted(missing)}"
born = 0
for tid, t in threads.items():
    k = sums[tid]
    assert k["pid"] == t["pid"], (tid, k, t)
    # The shell that became the tree's root was there before serve: counted from serve's start.
    if not k["born"]:
        continue
    born += 1
    dv, di, dp = k["nvcsw"] - t["nvcsw"], k["nivcsw"] - t["nivcsw"], k["pcount"] - t["pcount"]
    assert dv >= 1 and di >= 0 and dv + di == 1 + dp, (t["role"], dv, di, dp)
assert born == len(threads) - 1, (born, len(threads))
print(f"  serve --children: {len(threads)} threads of {len(set(t['pid'] for t in threads.values()))} processes over {len(docs)} windows, each as it read itself")
PY
done
no_bpf_left
echo "serve_children: ok"

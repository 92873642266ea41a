#!/bin/bash
# Spans in the processes of a target set (tests/workloads/forkspans.c): the
# workload forks workers during the window, half of them exec'ing the binary
# again, each calling the annotated work-unit (and work-step inside it) a
# known number of times in two threads. Sites attached per file, kept to the
# set by the programs, must count every call of every process exactly, in
# total and per process; with --no-children (sites attached for CMD alone,
# as before) only CMD's own calls.
. "$(dirname "$0")/common.bash"
require_root "spans load BPF"
W=build/workloads/forkspans
FIFO_FD=
trap 'rc=$?; [ -n "${WPID:-}" ] && kill "$WPID" 2>/dev/null; [ -n "${KH:-}" ] && kill "$KH" 2>/dev/null; wait; keep_failed $rc' EXIT

# check DOC TRUTH WORKERS CALLS: the totals, and each process's own.
check() {
	validate "$1" >/dev/null || fail "schema: $1"
	"$PYTHON" - "$1" "$2" "$3" "$4" <<'PY' || fail "span counts in $1"
import json, sys
d = json.load(open(sys.argv[1])); t = json.loads(open(sys.argv[2]).read())
workers, calls = int(sys.argv[3]), int(sys.argv[4])
got = {m["metric_id"]: m["calls"] for m in d["span_metrics"]}
# A fork the fork program did not see (its run skipped by the recursion
# guard: preempted on that CPU while another task forked) joins at
# sched_wakeup_new, before the child runs: nothing may be missing then.
# Only when both runs were skipped may calls be, a thread's at most each;
# the document counts it (docs/evidence.md section 9).
rec = lambda k: d["loss"].get(k, {}).get("value", 0)
missed = min(rec("khbpf_sched_process_fork_recursion_misses"),
             rec("khbpf_sched_wakeup_new_join_recursion_misses"))
if missed:
    for k in ("work-unit", "work-step"):
        short = t[k] - got.get(k, 0)
        assert 0 <= short <= 2 * calls * missed and short % calls == 0, (k, got, t, missed)
    print(f"set_spans: {missed} fork(s) missed by both joins' recursion guards, counted in loss; "
          f"{t['work-unit'] - got.get('work-unit', 0)} calls not seen")
else:
    assert got == {"work-unit": t["work-unit"], "work-step": t["work-step"]}, (got, t)
if rec("forks_joined_at_wakeup"):
    print(f"set_spans: {rec('forks_joined_at_wakeup')} fork(s) joined at sched_wakeup_new")
per = {}
for m in d["process_span_metrics"]:
    per.setdefault(m["pid"], {})[m["metric_id"]] = m["calls"]
assert missed or sorted(t["workers"]) == sorted(p for p in per if p in t["workers"]), (per, t)
for w in t["workers"]:
    assert missed or per[w] == {"work-unit": 2 * calls, "work-step": 2 * calls}, (w, per[w])
main = [p for p in per if p not in t["workers"]]
assert len(main) == 1 and per[main[0]] == {"work-unit": calls, "work-step": calls}, per
procs = {p["pid"]: p for p in d["processes"]}
assert missed or all(w in procs and procs[w]["joined"] == "fork" for w in t["workers"]), d["processes"]
for k in ("span_records_dropped_ringbuf", "span_state_failures", "span_aggregates_overflow",
          "span_aggregates_without_process", "span_site_unresolved"):
    assert d["loss"][k]["value"] == 0, (k, d["loss"][k])
PY
}

# run: every worker is forked in the window, odd ones exec the binary again.
for round in 1 2; do
	timeout 60 "$KHBPF" run -o "$TMP/run.json" -- "$W" --workers 4 --calls 40 >"$TMP/run.out" \
		2>"$TMP/kh.err" || fail "run exited $?: $(head -c 400 "$TMP/kh.err")"
	check "$TMP/run.json" "$TMP/run.out" 4 40
done

# run --no-children: sites for CMD alone; a forked worker's first hit takes
# the uprobe off it (uprobe_perf_filter()), so only CMD's own calls count.
timeout 60 "$KHBPF" run --no-children -o "$TMP/one.json" -- "$W" --workers 4 --calls 40 \
	>"$TMP/one.out" 2>"$TMP/kh.err" || fail "run --no-children exited $?: $(head -c 400 "$TMP/kh.err")"
json_check "$TMP/one.json" \
	"{m['metric_id']: m['calls'] for m in d['span_metrics']} == {'work-unit': 40, 'work-step': 40}" \
	"len(d['processes']) == 1"

# attach --children to a process that forks its workers after the attach.
rm -f "$TMP/in"
mkfifo "$TMP/in" || fail mkfifo
"$W" --wait --workers 3 --calls 30 <"$TMP/in" >"$TMP/att.out" &
WPID=$!
exec 7>"$TMP/in"
for _ in $(seq 100); do grep -q ready "$TMP/att.out" 2>/dev/null && break; sleep 0.05; done
grep -q ready "$TMP/att.out" || fail "forkspans did not start"
"$KHBPF" attach --pid "$WPID" --children -o "$TMP/att.json" 2>"$TMP/kh.err" &
KH=$!
for _ in $(seq 200); do grep -q watching "$TMP/kh.err" && break; sleep 0.05; done
grep -q watching "$TMP/kh.err" || fail "attach did not start: $(cat "$TMP/kh.err")"
echo go >&7
exec 7>&-
wait "$KH" || fail "attach exited $?: $(cat "$TMP/kh.err")"
KH=
wait "$WPID" || fail "forkspans exited $?"
WPID=
grep '^{' "$TMP/att.out" >"$TMP/att.truth"
check "$TMP/att.json" "$TMP/att.truth" 3 30
json_check "$TMP/att.json" "d['window']['end_reason'] == 'target-exit'" \
	"d['target']['set']['kind'] == 'process-trees' and d['target']['set']['joined_at_fork'] == 3"
# A binary none of the set's objects was at the start: the command's shell
# execs forkspans, whose annotations are found and attached when the exec
# is reported. A --span of it names its file (a function the shell does not
# have is a mistake: docs/spans.md): found there at the start, attached by
# inode, the same site the exec finds again. It waits for the test before
# it calls anything; the document says how long after the exec the sites
# were attached, and the test waited longer.
rm -f "$TMP/in2"
mkfifo "$TMP/in2" || fail mkfifo
timeout 60 "$KHBPF" run --span "$(realpath "$W"):caller=caller-fn" -o "$TMP/exec.json" -- \
	sh -c "exec $W --wait --workers 3 --calls 30" <"$TMP/in2" >"$TMP/exec.out" 2>"$TMP/kh.err" &
KH=$!
exec 7>"$TMP/in2"
for _ in $(seq 100); do grep -q ready "$TMP/exec.out" 2>/dev/null && break; sleep 0.05; done
grep -q ready "$TMP/exec.out" || fail "forkspans did not start under run"
sleep 1
echo go >&7
exec 7>&-
wait "$KH" || fail "run exited $?: $(cat "$TMP/kh.err")"
KH=
json_check "$TMP/exec.json" \
	"{m['metric_id']: m['calls'] for m in d['span_metrics']} == {'work-unit': 210, 'work-step': 210, 'caller-fn': 6}" \
	"[p['status'] for p in d['span_probes'] if p['object'].endswith('/forkspans')] == ['attached'] * 3" \
	"all(p['attached_after_exec_ns'] < 1000000000 for p in d['span_probes'] if 'exec_pid' in p)" \
	"d['loss']['span_execs_attached_late']['value'] == 1 and d['loss']['span_exec_events_dropped']['value'] == 0"
"$PYTHON" - "$TMP/exec.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("  sites found at an exec, attached %.1f ms after it" % (max(p["attached_after_exec_ns"] for p in d["span_probes"] if "exec_pid" in p) / 1e6))
PY
no_bpf_left
echo "set_spans: ok (every call of forked and exec'd workers, in total and per process; --no-children: CMD's own)"

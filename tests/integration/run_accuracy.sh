#!/bin/bash
# khbpf run on a workload whose threads sleep, spin, ping-pong through pipes,
# yield, compete for the CPU and move themselves between CPUs, traced by
# tests/helpers/finalcount, which reads each thread's counters from its zombie
# after the thread's final switch. khbpf's per-thread numbers must be those,
# exactly, however slow the exit path (an emulated guest's is).
. "$(dirname "$0")/common.bash"
require_root "run loads BPF"
CMP=tests/integration/sched_compare.py
KH=
trap 'rc=$?; [ -z "$KH" ] || kill "$KH" 2>/dev/null; [ -z "${FINALCOUNT_PID:-}" ] || kill "$FINALCOUNT_PID" 2>/dev/null; wait; keep_failed $rc' EXIT

# Kernels before 5.12 keep no recursion_misses in bpf_prog_info (the name is
# then nowhere in their BTF): khbpf's count must be a gap there, not a 0.
if grep -q recursion_misses /sys/kernel/btf/vmlinux; then MISSES=recorded; else MISSES=unavailable; fi

# Round 2 leaves one wait fold entry of 1024 for threads to take (the
# default switch program's, sched.bpf.c): nearly every thread's waits fold
# through the task storage helper instead, and must come out the same.
# The folds need task storage and the verifier's atomics (docs/scheduler.md).
STORAGE=$("$KHBPF" probe --json | "$PYTHON" -c 'import json, sys
f = {f["name"]: f for f in json.load(sys.stdin)["kernel_features"]}
print("used" if f["task-storage"]["use"] == "used" and f["atomic-fetch"]["present"]["value"] else "no")') ||
	fail "khbpf probe --json"
for round in 1 2; do
	rm -rf "$TMP/final" "$TMP/pid"
	folds=$([ "$round" = 2 ] && echo 1 || echo 1024)
	KHBPF_WAIT_FOLDS=$folds timeout 120 "$KHBPF" run -o "$TMP/doc.json" -- build/workloads/schedmix --duration-ms 1200 \
		--out "$TMP/truth.jsonl" --wait-traced "$TMP/pid" 2>"$TMP/kh.err" &
	KH=$!
	trace_final "$TMP/pid" "$TMP/final"
	wait "$KH" || fail "khbpf run exited $? (round $round): $(head -c 500 "$TMP/kh.err")"
	KH=
	wait "$FINALCOUNT_PID" || fail "finalcount failed (round $round)"
	FINALCOUNT_PID=
	n=$(find "$TMP/final" -mindepth 1 -maxdepth 1 -type d | wc -l)
	total=$((${total:-0} + n))
	validate "$TMP/doc.json" >/dev/null || fail "schema (round $round)"
	"$PYTHON" "$CMP" final "$TMP/doc.json" "$TMP/final" "$TMP/truth.jsonl" ||
		fail "per-thread accuracy (round $round)"
	"$PYTHON" "$CMP" totals "$TMP/doc.json" || fail "totals (round $round)"
	json_check "$TMP/doc.json" \
		"d['target']['mode'] == 'run'" \
		"d['target']['exit'] == {'status': 'recorded', 'value': {'code': 0}}" \
		"d['window']['end_reason'] == 'target-exit'" \
		"all(t['exited'] and t['born'] for t in d['threads'])" \
		"len(d['threads']) == $(wc -l <"$TMP/truth.jsonl")" \
		"d['hardware']['value']['utilization']['all_threads_cpu_ns']['value'] == sum(t['on_cpu_ns']['value']['value'] for t in d['threads'])" \
		"d['hardware']['value']['scheduler']['cpu_migrations']['value']['value'] == d['scheduler_detail']['value']['migrations_by_distance']['total'] + d['scheduler_detail']['value']['migrations_by_distance']['unseen']" \
		"d['loss']['migrations_unseen']['value'] == d['scheduler_detail']['value']['migrations_by_distance']['unseen'] == sum(t['bpf_detail']['value']['migrations_by_distance']['unseen'] for t in d['threads'])" \
		"d['scheduler_detail']['value']['runqueue_waits'] - d['scheduler_detail']['value']['unbinned_waits'] == sum(b['count'] for b in d['scheduler_detail']['value']['runqueue_histogram'])" \
		"d['scheduler_detail']['value']['runqueue_wait_ns'] == d['hardware']['value']['scheduler']['scheduler_delay_ns']['value']['value']" \
		"d['kernel_run_delay_ns']['value']['value'] == d['hardware']['value']['scheduler']['scheduler_delay_ns']['value']['value']" \
		"[v['status'] for k, v in d['loss'].items() if k.endswith('_recursion_misses')] == ['$MISSES'] * sum(1 for k in d['overhead'] if k.endswith('_run_cnt'))"
	# The default switch program has the folds where it keeps task storage.
	# Threads hash onto the entries, so with 1024 two may meet (each such
	# thread counted once); with one, nearly every thread is counted.
	if [ "$STORAGE" = used ]; then want=$folds; else want=0; fi
	json_check "$TMP/doc.json" \
		"d['loss']['wait_folds_max']['value'] == $want" \
		"d['loss']['wait_folds_full']['value'] <= len(d['threads'])" \
		"d['loss']['wait_folds_full']['value'] > 0 if $want == 1 else ($want > 1 or d['loss']['wait_folds_full']['value'] == 0)"
done
echo "run_accuracy: ok ($total threads in 2 runs: on-CPU, run delay, timeslices, switches and migrations equal to each thread's final kernel counters)"

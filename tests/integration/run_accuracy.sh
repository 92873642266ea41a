#!/bin/bash
# khbpf run on a workload whose threads sleep, spin, ping-pong through pipes,
# yield, compete for the CPU and move themselves between CPUs; each thread
# reads its own /proc/thread-self/{sched,schedstat} as its last act. khbpf's
# per-thread numbers must be the kernel's, plus only what the exit adds.
. "$(dirname "$0")/common.bash"
require_root "run loads BPF"
CMP=tests/integration/sched_compare.py

for round in 1 2; do
	expect_exit 0 in_cpu_cgroup timeout 60 "$KHBPF" run -o "$TMP/doc.json" -- \
		build/workloads/schedmix --duration-ms 1200 --out "$TMP/truth.jsonl"
	"$PYTHON" tests/validate_schema.py "$SCHEMA" "$TMP/doc.json" >/dev/null || fail "schema (round $round)"
	"$PYTHON" "$CMP" truth "$TMP/doc.json" "$TMP/truth.jsonl" || fail "per-thread accuracy (round $round)"
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
		"d['kernel_run_delay_ns']['value']['value'] == d['hardware']['value']['scheduler']['scheduler_delay_ns']['value']['value']"
done
echo "run_accuracy: ok"

#!/bin/bash
# Without CAP_BPF khbpf still writes a valid document: the kernel's counters
# from /proc at the window's ends (proc-pid-* sources), the scheduler
# collector marked permission-denied with the fix, BPF-only fields gapped.
. "$(dirname "$0")/common.bash"
require_root "needs root to drop to an unprivileged user"
command -v setpriv >/dev/null || fail "setpriv (util-linux) is required"
chmod 0777 "$TMP"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)

# run: the command's whole life from /proc of its zombie leader (its own
# process: run's tree without BPF is tree.sh's). The zombie has exited, as
# BPF's exit record says (docs/evidence.md 6.5): not alive at the end.
printf '' | expect_exit 0 timeout 30 "${NOBODY[@]}" "$KHBPF" run --no-children -o "$TMP/run.json" -- \
	sh -c 'i=0; while [ $i -lt 20 ]; do i=$((i+1)); sleep 0.01; done'
validate "$TMP/run.json" >/dev/null || fail "schema (run)"
cap="[c for c in d['collectors'] if c['collector'] == 'scheduler-activity'][0]"
json_check "$TMP/run.json" \
	"$cap['availability'] == 'permission-denied'" \
	"'CAP_BPF' in $cap['detail']" \
	"d['scheduler_detail'] == {'status': 'unavailable', 'reason': 'permission-denied'}" \
	"all(t['bpf_detail']['reason'] == 'permission-denied' for t in d['threads'])" \
	"len(d['threads']) == 1" \
	"d['threads'][0]['scheduler']['voluntary_context_switches']['source'] == 'proc-pid-sched'" \
	"d['threads'][0]['scheduler']['voluntary_context_switches']['value']['value'] >= 20" \
	"d['threads'][0]['on_cpu_ns']['source'] == 'proc-pid-schedstat'" \
	"d['hardware']['value']['scheduler']['timeslices']['source'] == 'proc-pid-schedstat'" \
	"d['target']['exit']['value'] == {'code': 0}" \
	"d['threads'][0]['exited'] is True" \
	"d['hardware']['value']['utilization']['threads'] == []" \
	"d['hardware']['value']['utilization']['exited_threads'] == 1" \
	"d['processes'][0]['exited'] is True" \
	"d['target']['set']['exited'] == 1" \
	"d['processes'][0]['exe']['source'] == 'proc-pid-exe'"

# run without BPF on a process whose threads came and went: /proc saw only
# the main thread at the end, so the process's migrations, run delay and
# timeslices are gaps, the unseen threads' CPU is counted, and its switches
# are wait4's: exactly the process's own getrusage (taken after the other
# threads were gone) plus what the main thread switched after it.
cp build/workloads/faults "$TMP/faults"
printf '' | expect_exit 0 timeout 30 "${NOBODY[@]}" "$KHBPF" run --no-children -o "$TMP/ru.json" -- \
	"$TMP/faults" rusage 4
validate "$TMP/ru.json" >/dev/null || fail "schema (rusage)"
"$PYTHON" - "$TMP/ru.json" "$(grep '^{' "$TMP/out")" <<'PY' || fail "run without BPF: process totals"
import json, sys
d, t = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
s = d["hardware"]["value"]["scheduler"]
main = [x for x in d["threads"] if x["thread_id"] == t["main"]][0]["scheduler"]
mv = main["voluntary_context_switches"]["value"]["value"]
miv = main["involuntary_context_switches"]["value"]["value"]
want = {"voluntary_context_switches": t["ru_nvcsw"] + mv - t["main_nvcsw"],
        "involuntary_context_switches": t["ru_nivcsw"] + miv - t["main_nivcsw"]}
want["total_context_switches"] = sum(want.values())
for k, v in want.items():
    assert s[k] == {"value": {"status": "recorded", "value": v}, "source": "system-call"}, (k, s[k], v)
for k in ("cpu_migrations", "scheduler_delay_ns", "timeslices"):
    assert s[k]["value"] == {"status": "unavailable", "reason": "unavailable"}, (k, s[k])
assert d["kernel_run_delay_ns"]["value"]["status"] == "unavailable"
assert len(d["threads"]) == 1
assert d["loss"]["threads_unseen_cpu_ns"]["value"] > 0, d["loss"]["threads_unseen_cpu_ns"]
# The process CPU clock: the main thread's and the unseen threads'.
main_cpu = d["threads"][0]["on_cpu_ns"]["value"]["value"]
u = d["hardware"]["value"]["utilization"]["all_threads_cpu_ns"]
assert u == {"status": "recorded", "value": main_cpu + d["loss"]["threads_unseen_cpu_ns"]["value"]}, u
assert "wait4" in d["collectors"][0]["detail"], d["collectors"][0]["detail"]
PY

# Spans without BPF: the annotated workload's sites are found but none is
# attached, each says why, and no metric is reported (a 0 would be made up).
# A copy in $TMP: nobody may not be able to read the clone (e.g. under /root).
cp build/workloads/spanned "$TMP/spanned"
printf '' | expect_exit 0 timeout 30 "${NOBODY[@]}" "$KHBPF" run -o "$TMP/spans.json" -- \
	"$TMP/spanned" --iterations 3
validate "$TMP/spans.json" >/dev/null || fail "schema (spans)"
json_check "$TMP/spans.json" \
	"len(d['span_probes']) > 0" \
	"all(p['status'] == 'failed' for p in d['span_probes'])" \
	"all('CAP_BPF' in p['reason'] for p in d['span_probes'])" \
	"d['span_metrics'] == []" \
	"d['events']['availability'] == {'status': 'unavailable', 'reason': 'permission-denied'}"

# phased_as_nobody NAME: build/workloads/phased --threads 2 as nobody
# (pid), told to work through fd 7, started once it says it is ready.
phased_as_nobody() {
	mkfifo "$TMP/$1.ctl"
	"${NOBODY[@]}" build/workloads/phased --threads 2 <"$TMP/$1.ctl" >"$TMP/$1.out" &
	pid=$!
	exec 7>"$TMP/$1.ctl"
	for _ in $(seq 50); do grep -q ready "$TMP/$1.out" 2>/dev/null && break; sleep 0.1; done
}

# attach as nobody: the idle process's threads, read from /proc at both ends.
phased_as_nobody burst
: >"$TMP/kh.err" # fresh: wait_for must not read a line of an earlier start
"${NOBODY[@]}" "$KHBPF" attach --pid "$pid" --duration 1.5 -o "$TMP/att.json" 2>"$TMP/kh.err" &
kh=$!
for _ in $(seq 100); do grep -q watching "$TMP/kh.err" 2>/dev/null && break; sleep 0.05; done
printf x >&7
wait "$kh" || fail "attach as nobody failed: $(cat "$TMP/kh.err")"
exec 7>&-
wait "$pid"
validate "$TMP/att.json" >/dev/null || fail "schema (attach)"
json_check "$TMP/att.json" \
	"$cap['availability'] == 'permission-denied'" \
	"len(d['threads']) == 3" \
	"all(t['scheduler']['cpu_migrations']['source'] == 'proc-pid-sched' for t in d['threads'])" \
	"d['loss']['threads_vanished']['value'] == 0" \
	"d['loss']['threads_unseen_cpu_ns']['value'] > 0" \
	"all(v['value'] == {'status': 'unavailable', 'reason': 'unavailable'} for k, v in d['hardware']['value']['scheduler'].items() if k != 'version')"

# The burst's helper thread was born and gone between the two reads: /proc
# never showed it, its CPU is counted and the process totals are gaps (above).
# Idle for the whole window, nothing runs unseen: the totals are recorded.
phased_as_nobody idle
"${NOBODY[@]}" "$KHBPF" attach --pid "$pid" --duration 0.3 -o "$TMP/idle.json" 2>"$TMP/kh.err" ||
	fail "attach as nobody (idle) failed: $(cat "$TMP/kh.err")"
exec 7>&-
wait "$pid"
json_check "$TMP/idle.json" \
	"len(d['threads']) == 3" \
	"d['loss']['threads_unseen_cpu_ns'] == {'status': 'recorded', 'value': 0}" \
	"all(v['value']['status'] == 'recorded' for k, v in d['hardware']['value']['scheduler'].items() if k != 'version')"
echo "fallback_nobpf: ok"

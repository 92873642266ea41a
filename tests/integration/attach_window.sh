#!/bin/bash
# attach to a running, idle process; make it work only inside the window;
# khbpf's per-thread deltas must equal the kernel's /proc deltas exactly,
# and threads born and exited inside the window must all be accounted.
# The process rewrites its title in the window (phased --retitle): its
# title at its join and at the end are each what /proc/PID/cmdline showed
# before and after the window.
. "$(dirname "$0")/common.bash"
require_root "attach loads BPF"
W=build/workloads/phased
CMP=tests/integration/sched_compare.py

run_window() { # MODE-FLAGS...
	local ctl="$TMP/ctl" pid khpid
	rm -f "$ctl"
	mkfifo "$ctl"
	"$W" --threads 3 --retitle <"$ctl" >"$TMP/phased.out" &
	pid=$!
	exec 7>"$ctl"
	for _ in $(seq 50); do grep -q ready "$TMP/phased.out" 2>/dev/null && break; sleep 0.1; done
	"$PYTHON" "$CMP" snap "$pid" "$TMP/before.json" || fail "snap before"
	title "$pid" >"$TMP/title.before"
	: >"$TMP/kh.err" # fresh: wait_for must not read a line of an earlier start
	"$KHBPF" attach --pid "$pid" --duration 2 -o "$TMP/doc.json" "$@" 2>"$TMP/kh.err" &
	khpid=$!
	for _ in $(seq 100); do grep -q watching "$TMP/kh.err" 2>/dev/null && break; sleep 0.05; done
	grep -q watching "$TMP/kh.err" || fail "khbpf did not start: $(cat "$TMP/kh.err")"
	printf x >&7
	for _ in $(seq 100); do grep -q "done 1" "$TMP/phased.out" && break; sleep 0.05; done
	grep -q "done 1" "$TMP/phased.out" || fail "the workload did not finish its burst"
	wait "$khpid" || fail "khbpf attach failed: $(cat "$TMP/kh.err")"
	"$PYTHON" "$CMP" snap "$pid" "$TMP/after.json" || fail "snap after"
	title "$pid" >"$TMP/title.after"
	exec 7>&-
	wait "$pid"
	validate "$TMP/doc.json" >/dev/null || fail "schema"
	"$PYTHON" "$CMP" window "$TMP/doc.json" "$TMP/before.json" "$TMP/after.json" ||
		fail "khbpf $* disagrees with /proc"
	json_check "$TMP/doc.json" \
		"[p['title'] for p in d['processes']] == [{'version': 1, 'at_join': {'value': {'status': 'recorded', 'value': $(cat "$TMP/title.before")}, 'source': 'proc-pid-cmdline'}, 'at_end': {'value': {'status': 'recorded', 'value': $(cat "$TMP/title.after")}, 'source': 'proc-pid-cmdline'}}]" \
		"d['processes'][0]['title']['at_join']['value']['value'] == '$W --threads 3 --retitle'" \
		"d['processes'][0]['title']['at_end']['value']['value'] == 'phased: burst 1'"
}

# /proc/PID/cmdline as ps shows it, as a Python literal: trailing NULs
# dropped, each other NUL (and newline) a space.
title() {
	"$PYTHON" -c 'import sys; b = open(f"/proc/{sys.argv[1]}/cmdline", "rb").read()
print(repr(b.rstrip(b"\0").replace(b"\0", b" ").replace(b"\n", b" ").decode()))' "$1"
}

# BPF: exact, plus the three born-and-exited helper threads.
run_window --bpf-stats
"$PYTHON" "$CMP" totals "$TMP/doc.json" || fail "totals"
json_check "$TMP/doc.json" \
	"d['window']['end_reason'] == 'duration'" \
	"d['target']['mode'] == 'attach'" \
	"sum(1 for t in d['threads'] if t['born'] and t['exited']) == 3" \
	"all(t['scheduler']['voluntary_context_switches']['value']['value'] >= 1 for t in d['threads'] if t['born'])" \
	"[c['availability'] for c in d['collectors'] if c['collector'] == 'scheduler-activity'] == ['available']" \
	"d['overhead']['khbpf_sched_switch_run_cnt']['value'] > 0" \
	"d['overhead']['khbpf_sched_switch_run_time_ns']['status'] == 'recorded'" \
	"d['hardware']['value']['utilization']['exited_threads'] == 0" \
	"d['hardware']['value']['counters']['cycles']['source'] == 'perf-event-open'"

# Without BPF (/proc at both ends): the same exact deltas, proc-* sources.
run_window --no-bpf
json_check "$TMP/doc.json" \
	"all(t['scheduler']['voluntary_context_switches']['source'] == 'proc-pid-sched' for t in d['threads'])" \
	"all(t['scheduler']['scheduler_delay_ns']['source'] == 'proc-pid-schedstat' for t in d['threads'])" \
	"[c['availability'] for c in d['collectors'] if c['collector'] == 'scheduler-activity'] == ['disabled']" \
	"d['scheduler_detail']['status'] == 'unavailable'"
echo "attach_window: ok"

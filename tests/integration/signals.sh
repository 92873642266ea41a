#!/bin/bash
# Interrupted and cut-short windows still produce a complete document:
#  a) attach without --duration ended by SIGINT / SIGTERM / SIGHUP;
#  b) run: the first SIGTERM is passed to the command, which dies of it;
#  c) run: a command that ignores SIGTERM; the second SIGTERM ends the window;
#  d) attach: the target exits mid-window (also when it is already reaped
#     by the time khbpf looks).
#
# Every case runs in a subshell with a trap that kills what it started, so
# one failed expectation does not hide the others; the script fails if any
# case failed.
. "$(dirname "$0")/common.bash"
require_root "attach/run load BPF"
exec </dev/null
W=build/workloads/phased
F="$TMP/doc.json"

children_of() {
	cat /proc/"$1"/task/*/children 2>/dev/null | tr -s ' ' '\n' | grep .
}

# wait_gone PID SECONDS: poll until PID (a child of ours) has exited.
wait_gone() {
	for _ in $(seq $(($2 * 20))); do
		[ "$(sed 's/.*) //' /proc/"$1"/stat 2>/dev/null | cut -d' ' -f1)" = Z ] && return 0
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}

# wait_consumed PID SIGNO: until the signal is no longer pending for PID
# (khbpf has read it from its signalfd). Two signals sent back to back would
# otherwise merge into one.
wait_consumed() {
	local pnd shd bit=$((1 << ($2 - 1)))
	for _ in $(seq 100); do
		pnd=$(awk '/^SigPnd:/ {print $2}' /proc/"$1"/status 2>/dev/null)
		shd=$(awk '/^ShdPnd:/ {print $2}' /proc/"$1"/status 2>/dev/null)
		[ -z "$pnd" ] && return 0
		[ $((0x$pnd & bit)) -eq 0 ] && [ $((0x$shd & bit)) -eq 0 ] && return 0
		sleep 0.02
	done
	fail "signal $2 still pending for pid $1"
}

# Everything a case starts is named here; the case's EXIT trap kills it.
TP="" KH="" PH="" PH_PID="" CMD="" GC=""
cleanup_case() {
	local p
	for p in $GC $CMD $PH $KH $TP; do
		kill -KILL "$p" 2>/dev/null
	done
	exec 7>&- 2>/dev/null
	for p in $PH $TP; do
		wait "$p" 2>/dev/null
	done
}

# start_phased: the workload, its stdin a fifo whose only writer is fd 7.
start_phased() {
	rm -f "$TMP/ctl" "$TMP/ph.out"
	mkfifo "$TMP/ctl" || fail "mkfifo"
	exec 7<>"$TMP/ctl"
	"$W" <"$TMP/ctl" >"$TMP/ph.out" 7>&- &
	PH=$!
	PH_PID=$PH # kept after PH is reaped and cleared
	wait_for ready "$TMP/ph.out" || fail "phased did not start"
}

# start_kh STDIN ARGS...: khbpf under timeout in the background; TP is the
# timeout process, KH khbpf itself (the one that gets our signals).
start_kh() {
	local in=$1
	shift
	# A fresh stderr file: the last case's "watching" must not be read as this one's.
	rm -f "$F" "$TMP/kh.err"
	timeout -k 5 35 "$KHBPF" "$@" <"$in" >"$TMP/kh.out" 2>"$TMP/kh.err" 7>&- &
	TP=$!
	wait_for watching "$TMP/kh.err" || fail "khbpf did not start: $(cat "$TMP/kh.err")"
	KH=$(children_of "$TP")
	[ "$(cat /proc/"$KH"/comm 2>/dev/null)" = khbpf ] ||
		fail "cannot find khbpf under timeout $TP (children: '$KH'; stderr: $(cat "$TMP/kh.err"))"
}

# finish_kh WANT: khbpf has exited (within 10 s) with status WANT.
finish_kh() {
	local rc
	wait_gone "$TP" 10 || fail "khbpf did not exit; stderr: $(cat "$TMP/kh.err")"
	wait "$TP"
	rc=$?
	TP="" KH=""
	[ "$rc" -eq "$1" ] || fail "khbpf exited $rc, expected $1; stderr: $(cat "$TMP/kh.err")"
}

valid_doc() {
	[ -s "$F" ] || fail "no document at $F"
	validate "$F" >/dev/null || fail "schema: $F"
}

# a) attach with no duration, ended by a signal: exit 0, a complete document.
attach_signal() { # SIG [khbpf options]
	local sig=$1
	shift
	trap cleanup_case EXIT
	start_phased
	start_kh /dev/null attach --pid "$PH" -o "$F" "$@"
	printf x >&7
	wait_for "done 1" "$TMP/ph.out" || fail "the workload did not finish its burst"
	kill -"$sig" "$KH"
	finish_kh 0
	valid_doc
	json_check "$F" \
		"d['window']['end_reason'] == 'signal'" \
		"d['target']['mode'] == 'attach'" \
		"d['target']['pid'] == $PH" \
		"d['target']['comm'] == 'phased'" \
		"len([t for t in d['threads'] if not t['exited']]) == 4"
	kill -0 "$PH" 2>/dev/null || fail "the target died with khbpf"
	exec 7>&-
	wait "$PH" || fail "phased failed"
	PH=""
	no_bpf_left
}

# b) run: SIGTERM to khbpf is passed to the command; khbpf exits 128+15.
run_forward() {
	trap cleanup_case EXIT
	rm -f "$TMP/ctl"
	mkfifo "$TMP/ctl" || fail "mkfifo"
	exec 7<>"$TMP/ctl" # held open: the command's stdin never closes
	start_kh "$TMP/ctl" run -o "$F" -- "$W"
	wait_for ready "$TMP/kh.out" || fail "phased did not start under khbpf run"
	CMD=$(children_of "$KH")
	wait_comm "$CMD" phased || fail "cannot find the command under khbpf"
	kill -TERM "$KH"
	finish_kh 143
	valid_doc
	json_check "$F" \
		"d['window']['end_reason'] == 'target-exit'" \
		"d['target']['mode'] == 'run'" \
		"d['target']['pid'] == $CMD" \
		"d['target']['exit'] == {'status': 'recorded', 'value': {'signal': 15}}" \
		"len(d['threads']) >= 4 and all(t['exited'] for t in d['threads'])"
	no_bpf_left
}

# c) run: the command ignores SIGTERM. The first is passed on (and ignored),
# the second ends the window: the document is written, then khbpf waits for
# the command; once the command is killed khbpf exits 128+9.
run_ignored() {
	local written=no
	trap cleanup_case EXIT
	start_kh /dev/null run -o "$F" -- sh -c 'trap "" TERM; sleep 30'
	CMD=$(children_of "$KH")
	wait_comm "$CMD" sh || fail "cannot find sh under khbpf"
	# sh forks sleep only after `trap "" TERM` has run.
	for _ in $(seq 100); do
		GC=$(children_of "$CMD")
		[ -n "$GC" ] && break
		sleep 0.05
	done
	wait_comm "$GC" sleep || fail "sh did not start sleep"

	kill -TERM "$KH"
	wait_consumed "$KH" 15
	sleep 0.3
	kill -0 "$CMD" 2>/dev/null || fail "the command died of the first (ignored) SIGTERM"
	kill -0 "$KH" 2>/dev/null || fail "khbpf exited on the first SIGTERM: $(cat "$TMP/kh.err")"
	[ ! -e "$F" ] || fail "the window ended on the first SIGTERM"

	kill -TERM "$KH"
	wait_consumed "$KH" 15
	for _ in $(seq 60); do
		[ -s "$F" ] && break
		sleep 0.05
	done
	kill -0 "$KH" 2>/dev/null || fail "khbpf did not wait for the command: $(cat "$TMP/kh.err")"
	kill -0 "$CMD" 2>/dev/null || fail "the command died of the second SIGTERM"
	if [ -s "$F" ]; then
		written=yes
		valid_doc
		json_check "$F" "d['window']['end_reason'] == 'signal'"
	else
		echo "FAIL: the window ended by the second SIGTERM, but $F was not written while khbpf waits for the command" >&2
	fi

	kill -KILL "$CMD" "$GC"
	finish_kh 137
	valid_doc
	json_check "$F" \
		"d['window']['end_reason'] == 'signal'" \
		"d['target']['mode'] == 'run'" \
		"d['target']['pid'] == $CMD" \
		"d['target']['exit'] in ({'status': 'recorded', 'value': {'signal': 9}}, {'status': 'unavailable', 'reason': 'unavailable'})" \
		"any(t['thread_id'] == $CMD for t in d['threads'])"
	no_bpf_left
	[ "$written" = yes ] || fail "document written only after the command exited"
}

# d) attach --duration 30: the target exits mid-window; khbpf ends within
# 5 s with end_reason target-exit.
attach_target_exit() {
	local t0 ms
	trap cleanup_case EXIT
	start_phased
	start_kh /dev/null attach --pid "$PH" --duration 30 -o "$F"
	printf x >&7
	wait_for "done 1" "$TMP/ph.out" || fail "the workload did not finish its burst"
	t0=$(date +%s%N)
	exec 7>&- # EOF: phased exits
	wait_gone "$TP" 5 || fail "khbpf did not end within 5 s of the target's exit"
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "  target exit -> khbpf exit: ${ms} ms"
	finish_kh 0
	wait "$PH" || fail "phased failed"
	PH=""
	valid_doc
	json_check "$F" \
		"d['window']['end_reason'] == 'target-exit'" \
		"d['window']['wall_ns'] < 10 * 10**9" \
		"d['target']['pid'] == $PH_PID" \
		"len(d['threads']) == 7 and all(t['exited'] for t in d['threads'])" \
		"sum(1 for t in d['threads'] if t['born']) == 3"
	no_bpf_left
}

# d') the same, but the target is already exited and reaped by its parent
# when khbpf looks (khbpf is stopped meanwhile, as a busy host may delay
# it): still a complete document, and the target is still named.
attach_target_reaped() { # [khbpf options]
	trap cleanup_case EXIT
	start_phased
	start_kh /dev/null attach --pid "$PH" --duration 30 -o "$F" "$@"
	kill -STOP "$KH"
	for _ in $(seq 100); do
		[ "$(sed 's/.*) //' /proc/"$KH"/stat | cut -d' ' -f1)" = T ] && break
		sleep 0.01
	done
	exec 7>&- # EOF: phased exits
	wait "$PH" || fail "phased failed"
	PH=""
	kill -CONT "$KH"
	finish_kh 0
	valid_doc
	json_check "$F" \
		"d['window']['end_reason'] == 'target-exit'" \
		"d['target']['pid'] == $PH_PID" \
		"d['target']['comm'] == 'phased'"
	no_bpf_left
}

for sig in INT TERM HUP; do
	case_ "attach, SIG$sig ends the window" attach_signal "$sig"
done
case_ "attach --no-bpf, SIGINT ends the window" attach_signal INT --no-bpf
case_ "run, SIGTERM passed to the command" run_forward
case_ "run, command ignores SIGTERM; second SIGTERM ends the window" run_ignored
case_ "attach, target exits mid-window" attach_target_exit
case_ "attach, target already reaped when khbpf looks" attach_target_reaped
case_ "attach --no-bpf, target already reaped when khbpf looks" attach_target_reaped --no-bpf

cases_done signals

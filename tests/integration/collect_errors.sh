#!/bin/bash
# The bad-input contract of `khbpf attach` and `khbpf run`: one stderr line
# naming the command, exit 2 (usage), 1 (runtime), 127/126 (CMD not found /
# not executable), no output file, nothing run, no BPF program left behind.
# Plus the good paths that carry the command's exit status into the document.
#
# Every case runs in a subshell with its own cleanup trap, so one failed
# expectation does not hide the others; the script fails if any case failed.
. "$(dirname "$0")/common.bash"
require_root "attach/run load BPF"
exec </dev/null
OUT="$TMP/x.json"

# No document at $OUT (or, when $OUT is a directory, nothing written into it)
# and no temporary file left beside it.
no_output() {
	if [ -d "$OUT" ]; then
		[ -z "$(ls -A "$OUT")" ] || fail "files written into $OUT"
	else
		[ ! -e "$OUT" ] || fail "$OUT was created"
	fi
	! compgen -G "$TMP/.khbpf-out.*" >/dev/null || fail "temporary output left in $TMP"
}

# bad WANT CMD ARGS...: `khbpf CMD ARGS...` must exit WANT with exactly one
# stderr line "khbpf CMD: ...", write nothing to -o and leave no BPF loaded.
bad() {
	local want=$1 cmd=$2
	shift 2
	[ -d "$OUT" ] || rm -f "$OUT"
	expect_exit "$want" timeout -k 5 20 "$KHBPF" "$cmd" "$@"
	expect_one_line_error
	grep -q "^khbpf $cmd: " "$TMP/err" || fail "stderr does not start with 'khbpf $cmd: ': $(cat "$TMP/err")"
	[ ! -s "$TMP/out" ] || fail "unexpected stdout: $(head -c 300 "$TMP/out")"
	no_output
	no_bpf_left
}

# A process id that no longer exists: start a child and reap it.
true &
GONE=$!
wait "$GONE"

# A live, ordinary target for the option-parsing cases (they must fail
# before looking at it).
sleep 60 &
LIVE=$!
trap 'rc=$?; kill "$LIVE" 2>/dev/null; wait "$LIVE" 2>/dev/null; keep_failed $rc' EXIT

zombie_case() {
	local z="" st=""
	# (outer is not local: the EXIT trap runs after this function returns)
	bash -c 'sleep 0.1 & exec sleep 30' &
	outer=$!
	trap 'kill "$outer" 2>/dev/null; wait "$outer" 2>/dev/null' EXIT
	for _ in $(seq 100); do
		z=$(cat /proc/"$outer"/task/*/children 2>/dev/null | tr -d ' ')
		[ -n "$z" ] && st=$(sed 's/.*) //' /proc/"$z"/stat 2>/dev/null | cut -d' ' -f1)
		[ "$st" = Z ] && break
		sleep 0.05
	done
	[ "$st" = Z ] || fail "could not make a zombie (child '$z' state '$st')"
	bad 1 attach --pid "$z" -o "$OUT"
	grep -q zombie "$TMP/err" || fail "the error does not say zombie: $(cat "$TMP/err")"
}

# -o in a missing directory: refused before the command is started.
missing_dir_case() {
	rm -f "$TMP/ran"
	bad 1 run -o /nonexistent/x.json -- touch "$TMP/ran"
	[ ! -e "$TMP/ran" ] || fail "run -o /nonexistent/x.json started the command"
	bad 1 attach --pid "$LIVE" -o /nonexistent/x.json
}

# -o naming a directory: also refused before anything runs (the command is
# not started, the window is not spent), and the directory is left as it was.
dir_output_run_case() {
	local d="$TMP/outdir"
	mkdir -p "$d"
	rm -f "$TMP/ran"
	OUT=$d
	expect_exit 1 timeout -k 5 20 "$KHBPF" run -o "$d" -- touch "$TMP/ran"
	[ ! -e "$TMP/ran" ] || fail "run -o DIRECTORY started the command before failing"
	expect_one_line_error
	grep -q "^khbpf run: " "$TMP/err" || fail "stderr does not start with 'khbpf run: '"
	no_output
	no_bpf_left
}

dir_output_attach_case() {
	local d="$TMP/outdir" start
	mkdir -p "$d"
	OUT=$d
	start=$(date +%s%N)
	expect_exit 1 timeout -k 5 20 "$KHBPF" attach --pid "$LIVE" --duration 3 -o "$d"
	[ $(($(date +%s%N) - start)) -lt 2000000000 ] ||
		fail "attach -o DIRECTORY ran its 3 s window before failing"
	expect_one_line_error
	grep -q "^khbpf attach: " "$TMP/err" || fail "stderr does not start with 'khbpf attach: '"
	no_output
	no_bpf_left
}

help_case() { # CMD
	expect_exit 0 timeout 20 "$KHBPF" "$1" --help
	grep -q '^Examples:' "$TMP/out" || fail "$1 --help has no Examples:"
	[ ! -s "$TMP/err" ] || fail "$1 --help wrote to stderr: $(cat "$TMP/err")"
}

exit_code_case() {
	expect_exit 7 timeout -k 5 20 "$KHBPF" run --json -- sh -c 'exit 7'
	json_check "$TMP/out" \
		"d['target']['exit'] == {'status': 'recorded', 'value': {'code': 7}}" \
		"d['target']['mode'] == 'run'" \
		"d['window']['end_reason'] == 'target-exit'"
	no_bpf_left
}

killed_case() {
	expect_exit 137 timeout -k 5 20 "$KHBPF" run --json -- sh -c 'kill -9 $$'
	json_check "$TMP/out" \
		"d['target']['exit'] == {'status': 'recorded', 'value': {'signal': 9}}" \
		"d['window']['end_reason'] == 'target-exit'"
	no_bpf_left
}

valid_case() {
	rm -f "$OUT"
	expect_exit 0 timeout -k 5 20 "$KHBPF" run -o "$OUT" -- true
	[ ! -s "$TMP/out" ] || fail "run -o F wrote to stdout"
	validate "$OUT" >/dev/null || fail "schema: $OUT"
	json_check "$OUT" "d['target']['exit'] == {'status': 'recorded', 'value': {'code': 0}}"
	! compgen -G "$TMP/.khbpf-out.*" >/dev/null || fail "temporary output left in $TMP"
	rm -f "$OUT"
	no_bpf_left
}

# Targets that cannot be watched: runtime failures (1).
case_ "attach nonexistent pid" bad 1 attach --pid "$GONE" -o "$OUT"
case_ "attach kernel thread" bad 1 attach --pid 2 -o "$OUT"
case_ "attach zombie" zombie_case
# Usage errors (2).
case_ "attach without --pid" bad 2 attach -o "$OUT"
case_ "attach --pid 0" bad 2 attach --pid 0 -o "$OUT"
case_ "attach --pid -1" bad 2 attach --pid -1 -o "$OUT"
case_ "attach --pid abc" bad 2 attach --pid abc -o "$OUT"
case_ "attach --pid 99999999999" bad 2 attach --pid 99999999999 -o "$OUT"
for d in 0 -1 1e3 abc 99999999999 0.0000000001 ''; do
	case_ "attach --duration '$d'" bad 2 attach --pid "$LIVE" --duration "$d" -o "$OUT"
	case_ "run --duration '$d'" bad 2 run --duration "$d" -o "$OUT" -- true
done
case_ "attach --interval 0" bad 2 attach --pid "$LIVE" --interval 0 -o "$OUT"
case_ "attach --max-threads 0" bad 2 attach --pid "$LIVE" --max-threads 0 -o "$OUT"
case_ "attach --max-exited 2^24+1" bad 2 attach --pid "$LIVE" --max-exited 16777217 -o "$OUT"
case_ "attach --max-exited huge" bad 2 attach --pid "$LIVE" --max-exited 99999999999999999999999 -o "$OUT"
case_ "attach --json --text" bad 2 attach --pid "$LIVE" --json --text -o "$OUT"
case_ "run --json --text" bad 2 run --json --text -o "$OUT" -- true
case_ "attach extra argument" bad 2 attach --pid "$LIVE" -o "$OUT" extra
case_ "run --pid" bad 2 run --pid "$LIVE" -o "$OUT" -- true
case_ "attach --as-root" bad 2 attach --pid "$LIVE" --as-root -o "$OUT"
case_ "attach unknown long option" bad 2 attach --pid "$LIVE" --bogus -o "$OUT"
case_ "run unknown long option" bad 2 run --bogus -o "$OUT" -- true
case_ "attach unknown short option" bad 2 attach --pid "$LIVE" -x -o "$OUT"
case_ "attach --pid without its value" bad 2 attach -o "$OUT" --pid
case_ "run -o without its value" bad 2 run -o
case_ "attach -o without its value" bad 2 attach --pid "$LIVE" -o
case_ "run without a command" bad 2 run -o "$OUT"
case_ "run -- without a command" bad 2 run -o "$OUT" --
# CMD problems: 127 / 126, as a shell reports them.
case_ "run CMD not found" bad 127 run -o "$OUT" -- /nonexistent/khbpf-no-such-cmd
case_ "run CMD not found in PATH" bad 127 run -o "$OUT" -- khbpf-no-such-cmd-in-path
case_ "run CMD not executable" bad 126 run -o "$OUT" -- /etc/passwd
# Output paths that cannot be written: 1, before anything runs.
case_ "-o in a missing directory" missing_dir_case
case_ "run -o DIRECTORY" dir_output_run_case
case_ "attach -o DIRECTORY" dir_output_attach_case
# Help.
case_ "attach --help" help_case attach
case_ "run --help" help_case run
# The command's status becomes khbpf's and is recorded.
case_ "run exit 7" exit_code_case
case_ "run killed by SIGKILL" killed_case
case_ "run -o F -- true validates" valid_case

cases_done collect_errors

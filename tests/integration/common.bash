# Sourced by the integration tests. Each test is a bash script that exits
# non-zero on the first failed expectation.
set -u
# Under `sudo make check`, run would start CMD and write -o files as the
# invoking user, who cannot write the tests' root-owned $TMP. The tests that
# are about sudo set these themselves.
unset SUDO_UID SUDO_GID SUDO_USER
KHBPF=${KHBPF:-build/khbpf}
PYTHON=${PYTHON:-/usr/bin/python3}
SCHEMA=${SCHEMA:-docs/khbpf-evidence.schema.json}
KEYHOG_SCHEMA=${KEYHOG_SCHEMA:-docs/keyhog-profile.schema.json}
TMP=$(mktemp -d /tmp/khbpf-it.XXXXXX)
# keep_failed [RC]: with KHBPF_TEST_KEEP_FAILED=DIR, a failed test's $TMP (its
# documents and logs) is copied to DIR/NAME.PID before it goes, so a failure
# in a guest that is gone can still be read (tools/vmtest.sh sets it).
keep_failed() {
	local rc=${1:-$?}
	if [ "$rc" -ne 0 ] && [ -n "${KHBPF_TEST_KEEP_FAILED:-}" ]; then
		mkdir -p "$KHBPF_TEST_KEEP_FAILED" &&
			cp -a "$TMP" "$KHBPF_TEST_KEEP_FAILED/$(basename "$0" .sh).$$" 2>/dev/null
	fi
	rm -rf "$TMP"
	return "$rc"
}
trap keep_failed EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# unmount_all DIR: whatever is mounted on DIR, however many times, is gone
# after it; a mount still busy (a process has a file open there) is
# detached lazily rather than left behind.
unmount_all() {
	while mountpoint -q "$1"; do
		umount "$1" 2>/dev/null || umount -l "$1" || return 1
	done
}

# checkpoint NAME: a place half way through a test where it can be made to
# fail on purpose (KHBPF_TEST_FAIL_AT=NAME), so tests/integration/leak_guard.sh
# can prove that its EXIT trap undoes what it started there.
checkpoint() {
	[ "${KHBPF_TEST_FAIL_AT:-}" != "$1" ] || fail "failing on purpose at '$1' (KHBPF_TEST_FAIL_AT)"
}

# hold_cgroup DIR: a process asleep in DIR/khbpf-hold, a cgroup of its own
# below DIR, for `serve --cgroup DIR` started before the workload: serve
# refuses a cgroup with no process in it. Below DIR, it is in none of DIR's
# own groups; asleep from before serve starts, it switches in no window, so
# it has no series. unhold_cgroup DIR stops it and removes DIR/khbpf-hold
# (before DIR itself can be removed).
HOLD_PID=
hold_cgroup() {
	mkdir "$1/khbpf-hold" || fail "cannot make cgroup $1/khbpf-hold"
	sh -c 'echo $$ >"$1/khbpf-hold/cgroup.procs" && exec sleep 3600' sh "$1" &
	HOLD_PID=$!
	for _ in $(seq 200); do
		grep -qx "$HOLD_PID" "$1/khbpf-hold/cgroup.procs" 2>/dev/null &&
			[ "$(cat /proc/"$HOLD_PID"/comm 2>/dev/null)" = sleep ] &&
			[ "$(sed 's/.*) //' /proc/"$HOLD_PID"/stat 2>/dev/null | cut -d' ' -f1)" = S ] &&
			return 0
		sleep 0.05
	done
	fail "the holder of $1 did not fall asleep there"
}
unhold_cgroup() {
	[ -z "$HOLD_PID" ] || { kill "$HOLD_PID" 2>/dev/null; wait "$HOLD_PID" 2>/dev/null; }
	HOLD_PID=
	[ ! -d "$1/khbpf-hold" ] || rmdir "$1/khbpf-hold" 2>/dev/null
}

# In CI a test that needs root/BPF must run; elsewhere skip with the reason.
require_root() {
	[ "$(id -u)" -eq 0 ] && return 0
	[ "${CI:-}" = true ] && fail "needs root, and CI must run it"
	echo "SKIP $(basename "$0"): needs root ($*)"
	exit 0
}

# expect_exit CODE CMD...: run CMD, stdout → $TMP/out, stderr → $TMP/err.
expect_exit() {
	local want=$1 rc
	shift
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[ "$rc" -eq "$want" ] || fail "'$*' exited $rc, expected $want; stderr: $(head -c 500 "$TMP/err")"
}

# The error contract: exactly one line on stderr, naming the program.
expect_one_line_error() {
	local lines
	lines=$(wc -l <"$TMP/err")
	[ "$lines" -eq 1 ] || fail "expected one stderr line, got $lines: $(cat "$TMP/err")"
	grep -q '^khbpf' "$TMP/err" || fail "error line does not start with 'khbpf': $(cat "$TMP/err")"
}

# validate DOC...: each document against the khbpf schema, and its keyhog
# rendering (khbpf report --keyhog) against the crate's closed vocabularies
# (docs/keyhog-profile.schema.json).
# In the sanitized pass (KHBPF_SANITIZED) the rendering still runs, under the
# sanitizers, but the two schema checks do not: they are Python reading what
# the same code wrote in the plain pass, and on the large documents (10001
# threads: 17 s) they were most of that pass's time.
# Under tools/vmtest.sh (KHBPF_VALIDATE_LATER=DIR) each document and its
# rendering are copied into DIR instead, and the host checks them after the
# guest ends: under TCG the two Python runs took 6.9 s a document, the
# rendering 0.4 s.
validate() {
	local f i=0 kh=() san=${KHBPF_SANITIZED:-} copy
	if [ -n "${KHBPF_VALIDATE_LATER:-}" ]; then
		mkdir -p "$KHBPF_VALIDATE_LATER/khbpf" "$KHBPF_VALIDATE_LATER/keyhog" || return 1
		for f in "$@"; do
			copy=$(mktemp -p "$KHBPF_VALIDATE_LATER/khbpf" --suffix=.json) &&
				cp "$f" "$copy" || return 1
			"$KHBPF" report --keyhog "$KHBPF_VALIDATE_LATER/keyhog/${copy##*/}" "$f" || {
				echo "validate: $f has no keyhog rendering" >&2
				return 1
			}
		done
		return 0
	fi
	if [ -z "$san" ]; then
		"$PYTHON" tests/validate_schema.py "$SCHEMA" "$@" >/dev/null || return 1
	fi
	mkdir -p "$TMP/keyhog" || return 1
	for f in "$@"; do
		i=$((i + 1))
		kh+=("$TMP/keyhog/$i.$(basename "$f")")
		"$KHBPF" report --keyhog "${kh[-1]}" "$f" || {
			echo "validate: $f has no keyhog rendering" >&2
			return 1
		}
	done
	[ -n "$san" ] || "$PYTHON" tests/validate_schema.py "$KEYHOG_SCHEMA" "${kh[@]}" >/dev/null || {
		echo "validate: the keyhog rendering of $* does not validate" >&2
		return 1
	}
	rm -rf "$TMP/keyhog"
}

# json_check FILE PYTHON-EXPR...: each expression, over `d` (the parsed
# document), must be true.
json_check() {
	local file=$1
	shift
	"$PYTHON" - "$file" "$@" <<'PY' || fail "JSON check failed on $file"
import json, sys
d = json.load(open(sys.argv[1]))
ok = True
for expr in sys.argv[2:]:
    try:
        v = eval(expr, {"d": d})
    except Exception as e:
        v = False
        print(f"  {expr}: raised {e!r}", file=sys.stderr)
    if not v:
        ok = False
        print(f"  false: {expr}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}

. "$(dirname "${BASH_SOURCE[0]}")/../bpfprogs.bash"

# Their release is asynchronous (RCU): give it a moment.
no_bpf_left() {
	local left
	for _ in $(seq 15); do
		left=$(orphan_progs)
		[ -z "$left" ] && return 0
		sleep 0.2
	done
	fail "BPF programs left loaded: $(tr '\n' ' ' <<<"$left")"
}

# Scripts made of cases: case_ DESCRIPTION FUNCTION ARGS... runs one in a
# subshell (a failed expectation ends that case only) and records a failure;
# ONLY=text runs just the cases whose description contains it. A script may
# define case_setup, run before each case. cases_done NAME ends the script.
FAILED=()
case_() {
	local desc=$1
	shift
	[[ -z ${ONLY:-} || $desc == *"$ONLY"* ]] || return 0
	if declare -F case_setup >/dev/null; then case_setup; fi
	local t0=$EPOCHREALTIME
	("$@") || {
		echo "  ^ in case: $desc" >&2
		FAILED+=("$desc")
	}
	# CASE_TIMES=1: each case's wall time, to find where a suite's time goes.
	if [ -n "${CASE_TIMES:-}" ]; then
		echo "  [$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s] $desc"
	fi
}

cases_done() {
	if [ "${#FAILED[@]}" -ne 0 ]; then
		printf 'FAILED case: %s\n' "${FAILED[@]}" >&2
		exit 1
	fi
	echo "$1: ok"
}

# wait_for PATTERN FILE: up to 10 s for PATTERN to appear in FILE.
wait_for() {
	for _ in $(seq 200); do
		grep -q "$1" "$2" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# wait_comm PID NAME: up to 5 s for PID to be NAME (a child forked a moment
# ago may not have exec'd yet).
wait_comm() {
	for _ in $(seq 100); do
		[ "$(cat /proc/"$1"/comm 2>/dev/null)" = "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# with_tracefs CMD...: exec CMD where tracefs is mounted. bpftrace reads a
# tracepoint's format from tracefs; a freshly booted host may have it
# mounted nowhere. Then CMD runs in a private mount namespace of its own
# with tracefs at /sys/kernel/tracing, so nothing is left mounted on the
# host; unshare and sh exec, so CMD keeps the pid the caller's $! names.
with_tracefs() {
	if [ -d /sys/kernel/tracing/events ] || [ -d /sys/kernel/debug/tracing/events ]; then
		exec "$@"
	fi
	exec unshare --mount --propagation private -- \
		sh -c 'mount -t tracefs tracefs /sys/kernel/tracing && exec "$@"' with_tracefs "$@"
}

# trace_final PIDFILE DIR: wait (up to 30 s) for schedmix --wait-traced to
# write PIDFILE, then trace that process with tests/helpers/finalcount, which
# copies each thread's final /proc counters into DIR/TID/ as it exits
# (sched_compare.py final). Sets FINALCOUNT_PID; wait for it after the run.
# finalcount dies by its own timeout if the caller's trap does not kill it;
# its tracees are detached either way.
FINALCOUNT=${FINALCOUNT:-build/tests/helpers/finalcount}
trace_final() {
	local pid
	[ -x "$FINALCOUNT" ] || fail "$FINALCOUNT is not built (make $FINALCOUNT)"
	for _ in $(seq 600); do
		[ -s "$1" ] && break
		sleep 0.05
	done
	[ -s "$1" ] || fail "the workload did not write its pid to $1"
	pid=$(cat "$1")
	mkdir -p "$2"
	"$FINALCOUNT" --pid "$pid" --dir "$2" --timeout-ms 300000 &
	FINALCOUNT_PID=$!
}

# start_serve ARGS...: `khbpf serve ARGS` on a free local port, its stderr in
# $TMP/serve.err, until /healthz answers; sets PORT and SERVE_PID (the
# caller's EXIT trap stops it).
start_serve() {
	PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	"$KHBPF" serve --listen "127.0.0.1:$PORT" "$@" 2>"$TMP/serve.err" &
	SERVE_PID=$!
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && return 0
		kill -0 "$SERVE_PID" 2>/dev/null || fail "serve exited: $(cat "$TMP/serve.err")"
		sleep 0.1
	done
	fail "serve did not start: $(cat "$TMP/serve.err")"
}

#!/bin/bash
# Once its programs are attached, the loader keeps only what its mode still
# needs: no capability at all (attach, serve, run --as-root, --no-bpf), or
# CAP_KILL alone in `run` under sudo, where CMD runs as the invoking user and
# signals are passed on to it; plus CAP_BPF where the kernel checks every
# bpf() command (5.10). Read from /proc/PID/status of the live loader
# (effective, permitted, inheritable, ambient and bounding sets, and
# no_new_privs); the evidence it writes afterwards is still the kernel's
# (compared with each thread's final counters), and under sudo the output
# file belongs to the invoking user.
. "$(dirname "$0")/common.bash"
require_root "loads BPF and changes credentials"
exec </dev/null
CMP=tests/integration/sched_compare.py
NOBODY_GROUPS=$(id -G nobody)
# nobody must reach the workloads and write its files: a world-writable subdir.
chmod 0711 "$TMP"
W="$TMP/w"
mkdir -m 0777 "$W"
PIDS=()
trap 'rc=$?; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; keep_failed $rc' EXIT

# wait_line PATTERN FILE: up to 20 s.
wait_line() {
	for _ in $(seq 400); do
		grep -q "$1" "$2" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "no '$1' in $2: $(cat "$2")"
}

# expect_status PID FIELD VALUE...: /proc/PID/status FIELD (tabs squeezed) is VALUE.
expect_status() {
	local pid=$1 field=$2 want=$3 got
	got=$(awk -v f="$field:" '$1 == f { $1 = ""; sub(/^ /, ""); print }' "/proc/$pid/status")
	[ "$got" = "$want" ] || fail "pid $pid $field is '$got', expected '$want'"
}

# expect_caps PID HEXMASK: every capability set is HEXMASK (ambient and
# inheritable always empty) and no_new_privs is set.
expect_caps() {
	local pid=$1 mask=$2
	expect_status "$pid" CapEff "$mask"
	expect_status "$pid" CapPrm "$mask"
	expect_status "$pid" CapBnd "$mask"
	expect_status "$pid" CapInh 0000000000000000
	expect_status "$pid" CapAmb 0000000000000000
	expect_status "$pid" NoNewPrivs 1
}

# start PATTERN CMD...: CMD (a khbpf command line, maybe behind env) in the
# background, with stderr in a fresh $TMP/k.err;
# returns once that says PATTERN. K is khbpf's pid, JOB what to wait for.
start() {
	local pat=$1
	shift
	rm -f "$TMP/k.err"
	"$@" 2>"$TMP/k.err" &
	JOB=$!
	PIDS+=("$JOB")
	wait_line "$pat" "$TMP/k.err"
	K=$(pgrep -P "$JOB" -x khbpf || echo "$JOB")
	[ "$(cat "/proc/$K/comm")" = khbpf ] || fail "no khbpf process under job $JOB"
	PIDS+=("$K")
}

NONE=0000000000000000
KILL=0000000000000020 # 1 << CAP_KILL (5)
# Kernels that check every bpf() command for CAP_BPF at the syscall's entry
# while kernel.unprivileged_bpf_disabled is set (5.10's __sys_bpf(); later
# kernels check only where a program or map is made) make a loader that reads
# its maps keep CAP_BPF (39). Asked of the kernel directly: a command that
# does not exist, from an unprivileged process, is EPERM there and EINVAL
# elsewhere.
BPF_ERRNO=$(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$PYTHON" -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print(ctypes.get_errno() if libc.syscall(321, 9999, None, 0) < 0 else 0)')
case $BPF_ERRNO in
1) BPF=0000008000000000 ;;
22) BPF=$NONE ;;
*) fail "bpf(9999) as nobody gave errno '$BPF_ERRNO', expected EPERM or EINVAL" ;;
esac
mask() { printf '%016x' $((16#$1 | 16#$2)); }

# 1. run as root (no sudo): nothing kept, and the evidence is exact.
start "watching pid" "$KHBPF" run -o "$TMP/root.json" -- build/workloads/schedmix \
	--duration-ms 1500 --out "$TMP/truth.jsonl" --wait-traced "$TMP/pid"
expect_caps "$K" "$BPF"
expect_status "$K" Uid "0 0 0 0"
# schedmix starts no thread until it is traced, so the checks above race nothing.
trace_final "$TMP/pid" "$TMP/final"
PIDS+=("$FINALCOUNT_PID")
wait "$JOB" || fail "run as root exited $?: $(cat "$TMP/k.err")"
wait "$FINALCOUNT_PID" || fail "finalcount failed (run as root)"
"$PYTHON" "$CMP" final "$TMP/root.json" "$TMP/final" "$TMP/truth.jsonl" ||
	fail "run as root: evidence differs from the kernel's final counters"
"$PYTHON" "$CMP" totals "$TMP/root.json" || fail "run as root: totals"

# 2. run under sudo: CMD runs as nobody, the loader keeps CAP_KILL only, its
# file-system ids are nobody's (the output file is nobody's), and a SIGTERM
# still reaches CMD.
start "watching pid" env SUDO_UID=65534 SUDO_GID=65534 SUDO_USER=nobody "$KHBPF" run \
	-o "$W/user.json" -- build/workloads/schedmix --duration-ms 1500 --out "$W/truth.jsonl" \
	--wait-traced "$W/pid"
expect_caps "$K" "$(mask "$KILL" "$BPF")"
expect_status "$K" Uid "0 0 0 65534"
expect_status "$K" Gid "0 0 0 65534"
[ "$(awk '/^Groups:/ { $1 = ""; print }' "/proc/$K/status" | xargs)" = "$NOBODY_GROUPS" ] ||
	fail "loader groups are not nobody's ($NOBODY_GROUPS): $(grep ^Groups: "/proc/$K/status")"
# The child may show in children a moment after "watching" (slower under ASan).
for _ in $(seq 100); do
	CMD=$(cat /proc/"$K"/task/*/children | xargs)
	[ -n "$CMD" ] && [ "$(stat -c %u "/proc/$CMD" 2>/dev/null)" = 65534 ] && break
	sleep 0.05
done
[ "$(stat -c %u "/proc/$CMD")" = 65534 ] || fail "CMD $CMD is not nobody's"
trace_final "$W/pid" "$TMP/final-user"
PIDS+=("$FINALCOUNT_PID")
wait "$JOB" || fail "run under sudo exited $?: $(cat "$TMP/k.err")"
[ "$(stat -c '%u:%g %a' "$W/user.json")" = "65534:65534 644" ] ||
	fail "output is $(stat -c '%u:%g %a' "$W/user.json"), expected nobody's, 0644"
wait "$FINALCOUNT_PID" || fail "finalcount failed (run under sudo)"
"$PYTHON" "$CMP" final "$W/user.json" "$TMP/final-user" "$W/truth.jsonl" ||
	fail "run under sudo: evidence differs from the kernel's final counters"
validate "$W/user.json" >/dev/null || fail "run under sudo: schema"

start "watching pid" env SUDO_UID=65534 SUDO_GID=65534 "$KHBPF" run -o "$W/term.json" -- sleep 30
expect_caps "$K" "$(mask "$KILL" "$BPF")"
kill -TERM "$K"
wait "$JOB"
rc=$?
[ "$rc" -eq 143 ] || fail "run under sudo after SIGTERM exited $rc, expected 143 (CMD killed by it)"
json_check "$W/term.json" "d['target']['exit']['value'] == {'signal': 15}" \
	"d['window']['end_reason'] == 'target-exit'"

# CMD's HOME, USER and LOGNAME are the invoking user's (sudo left root's).
expect_exit 0 env SUDO_UID=65534 SUDO_GID=65534 HOME=/root USER=root LOGNAME=root "$KHBPF" run -- \
	sh -c 'echo "$HOME $USER $LOGNAME" >"$0/env"' "$W"
want="$(getent passwd nobody | cut -d: -f6) nobody nobody"
[ "$(cat "$W/env")" = "$want" ] || fail "CMD's environment '$(cat "$W/env")', expected '$want'"

# 3. run --as-root under sudo: CMD is root's, so not even CAP_KILL is kept.
# (CMD waits for the checks: a slow, emulated host may take seconds for them.)
start "watching pid" env SUDO_UID=65534 SUDO_GID=65534 "$KHBPF" run --as-root -o "$W/asroot.json" -- sleep 60
expect_caps "$K" "$BPF"
kill -TERM "$K"
wait "$JOB"
rc=$?
[ "$rc" -eq 143 ] || fail "run --as-root after SIGTERM exited $rc, expected 143"
[ "$(stat -c %u "$W/asroot.json")" = 65534 ] || fail "run --as-root: output not the invoking user's"

# The loader took nobody's groups for its -o check, not for CMD's sake.
expect_exit 0 env SUDO_UID=65534 SUDO_GID=65534 "$KHBPF" run --as-root -o "$W/g.json" -- \
	sh -c 'id -G >"$0/groups"' "$W"
[ "$(cat "$W/groups")" = "$(id -G)" ] || fail "run --as-root: CMD's groups $(cat "$W/groups"), expected $(id -G)"

# 4. Under sudo the output may go only where the invoking user may write:
# refused before anything runs.
mkdir -m 0700 "$TMP/rootonly"
expect_exit 1 env SUDO_UID=65534 SUDO_GID=65534 "$KHBPF" run -o "$TMP/rootonly/x.json" -- touch "$W/ran"
expect_one_line_error
grep -q "SUDO_UID=65534" "$TMP/err" || fail "the error does not say who writes: $(cat "$TMP/err")"
[ ! -e "$W/ran" ] || fail "CMD ran although -o was refused"
[ -z "$(ls -A "$TMP/rootonly")" ] || fail "files left in $TMP/rootonly"
no_bpf_left

# 5. attach to another user's process: nothing kept; its threads still read.
# (su reports its child's death by signal on stderr.)
su -s /bin/sh nobody -c 'while :; do :; done' 2>/dev/null &
SU=$!
PIDS+=("$SU")
T=
for _ in $(seq 200); do # su starts its shell late on a slow host
	T=$(pgrep -u nobody -n -x sh -P "$SU") && break
	sleep 0.05
done
[ -n "$T" ] || fail "su did not start nobody's shell within 10 s"
PIDS+=("$T")
for mode in bpf no-bpf; do
	flag=() caps=$BPF
	[ "$mode" = no-bpf ] && flag=(--no-bpf) caps=$NONE
	# The window ends at SIGINT, after the checks, however slow they are.
	start "watching pid" "$KHBPF" attach "${flag[@]}" --pid "$T" --duration 60 -o "$TMP/attach.json"
	expect_caps "$K" "$caps"
	kill -INT "$K"
	wait "$JOB" || fail "attach ($mode) exited $? after SIGINT: $(cat "$TMP/k.err")"
	json_check "$TMP/attach.json" \
		"d['target']['exe'] == {'status': 'recorded', 'value': '/usr/bin/dash'}" \
		"len(d['threads']) == 1 and d['threads'][0]['thread_id'] == $T" \
		"d['threads'][0]['on_cpu_ns']['value']['value'] > 0"
done
kill "$T"
wait "$SU"

# 6. serve: nothing kept once listening (on a port below 1024: bound before
# the drop); windows (task iterators, map reads and deletes) go on, and it
# unloads on SIGINT.
PORT=$("$PYTHON" - <<'PY'
import socket
for p in range(1023, 900, -1):
    try:
        socket.socket().bind(("127.0.0.1", p))
        print(p)
        break
    except OSError:
        pass
PY
)
[ -n "$PORT" ] || fail "no free port below 1024"
start "listening on" "$KHBPF" serve --listen "127.0.0.1:$PORT" --interval 1
expect_caps "$K" "$BPF"
for _ in $(seq 100); do
	h=$(curl -sf "http://127.0.0.1:$PORT/healthz") && [ "${h#ok: }" != "$h" ] &&
		[ "$(echo "$h" | awk '{print $2}')" -ge 3 ] && break
	sleep 0.1
done
[ "$(echo "$h" | awk '{print $2}')" -ge 3 ] || fail "serve made fewer than 3 windows after the drop: '$h'"
curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q '^khbpf_oncpu_seconds_total{' || fail "no series after the drop"
kill -INT "$K"
wait "$JOB" || fail "serve exited $? after SIGINT: $(cat "$TMP/k.err")"

# 7. serve listens on loopback unless told otherwise.
if ss -ltnH 'sport = :9464' | grep -q .; then
	[ "${CI:-}" = true ] && fail "port 9464 is taken; cannot check serve's default address"
	echo "note: port 9464 in use here; default-address check skipped"
else
	start "listening on" "$KHBPF" serve --interval 1
	l=$(ss -ltnH 'sport = :9464' | awk '{print $4}' | xargs)
	[ "$l" = "127.0.0.1:9464" ] || fail "serve's default listens on '$l', expected 127.0.0.1:9464 only"
	kill -INT "$K"
	wait "$JOB" || fail "serve (default address) exited $?"
fi
no_bpf_left
echo "privileges: ok"

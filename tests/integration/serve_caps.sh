#!/bin/bash
# The capabilities tools/khbpf.service grants are enough: serve runs as
# nobody with only CAP_BPF, CAP_PERFMON and CAP_DAC_READ_SEARCH (ambient),
# serves scheduler series and a document, and unloads on SIGINT.
. "$(dirname "$0")/common.bash"
require_root "sets capabilities"
command -v capsh >/dev/null ||
	{ [ "${CI:-}" = true ] && fail "capsh missing; run tools/install-deps.sh --with-prometheus"
	  echo "SKIP serve_caps: capsh not installed"; exit 0; }
caps=$(sed -n 's/^AmbientCapabilities=//p' tools/khbpf.service | tr 'A-Z ' 'a-z,')
[ "$caps" = "cap_bpf,cap_perfmon,cap_dac_read_search" ] || fail "unit grants '$caps'"
# nobody must be able to reach the binary.
cp "$KHBPF" "$TMP/khbpf" && chmod 755 "$TMP" "$TMP/khbpf"
PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
: >"$TMP/serve.err" # fresh: wait_for must not read a line of an earlier start
capsh --inh="$caps" --keep=1 --user=nobody --addamb="$caps" -- \
	-c "exec $TMP/khbpf serve --listen 127.0.0.1:$PORT --interval 1 --usdt-span /usr/bin/python3.11:python:gc__start,gc__done=gc" 2>"$TMP/serve.err" &
SH=$!
SPID=
# On any exit, failed half way or not: serve (as nobody, so not in our
# process group's reach by uid) is stopped and waited for.
alive() {
	local p
	for p in $SPID $SH; do kill -0 "$p" 2>/dev/null && return 0; done
	return 1
}
stop_serve() {
	local rc=$?
	local p
	for p in $SPID $SH; do kill -INT "$p" 2>/dev/null; done
	for _ in $(seq 50); do
		alive || break
		sleep 0.1
	done
	for p in $SPID $SH; do kill -KILL "$p" 2>/dev/null; done
	wait "$SH" 2>/dev/null
	keep_failed "$rc"
}
trap stop_serve EXIT
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$PORT/evidence" >"$TMP/doc.json" && break
	kill -0 "$SH" 2>/dev/null || fail "serve as nobody exited: $(cat "$TMP/serve.err")"
	sleep 0.1
done
SPID=$(pgrep -f "$TMP/khbpf serve") || fail "no serve process"
checkpoint serve-running
[ "$(awk '/^Uid:/ { print $2 }' "/proc/$SPID/status")" = 65534 ] || fail "serve is not running as nobody"
curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q '^khbpf_voluntary_switches_total{cgroup="/' ||
	fail "no scheduler series as nobody"
json_check "$TMP/doc.json" 'd["target"]["mode"] == "serve"' 'len(d["threads"]) > 0'
# Spans too (uprobes by file, CAP_PERFMON): CPython's gc, 7 collections.
/usr/bin/python3.11 -c 'import gc
for _ in range(7): gc.collect()' || fail "python3.11"
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics.txt" || fail "GET /metrics as nobody"
"$PYTHON" - "$TMP/metrics.txt" <<'PY' || fail "no span series as nobody"
import re, sys
n = sum(int(m[1]) for m in re.finditer(r'^khbpf_span_duration_seconds_count\{[^}]*metric="gc"[^}]*\} (\d+)$',
                                         open(sys.argv[1]).read(), re.M))
assert n >= 7, n
PY
kill -INT "$SPID"
wait "$SH" || fail "serve exited $? after SIGINT: $(cat "$TMP/serve.err")"
SPID= SH=
no_bpf_left
echo "serve_caps: ok"

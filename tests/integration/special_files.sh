#!/bin/bash
# Special files never hang khbpf, and signals end a window at any stage of
# its setup (issue 39). Every file khbpf opens by a user's name is opened
# without waiting and refused, saying what it is, unless it is a regular
# file: a FIFO with no writer (before: open() blocked forever, deaf to
# SIGINT and SIGTERM, its run's child a zombie), a FIFO with a writer that
# never writes, a character device, a directory. Each command gets a
# deadline (timeout: exit 124 is a hang). Then SIGTERM at several moments
# of a setup (run with --span on 1000 functions of build/workloads/manyfuncs:
# its discovery and attach are most of it) ends the window: exit 143, a
# complete, valid document. (Not libc's functions: a return probe on each
# of them, in every process that maps libc, killed this host's shells with
# SIGILL where a function does not return once, as vfork's child does.)
. "$(dirname "$0")/common.bash"
require_root "run, attach and serve load BPF"
exec </dev/null
FIFO="$TMP/fifo"
HELD="$TMP/held"
OUT="$TMP/out.json"
LIVE="" WRITER="" KH=""
cleanup() {
	local rc=$?
	for p in $KH $WRITER $LIVE; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	keep_failed "$rc"
}
trap cleanup EXIT
mkfifo "$FIFO" "$HELD"
# A writer that holds $HELD open and never writes: a read of it would wait.
sleep 300 >"$HELD" &
WRITER=$!
sleep 300 &
LIVE=$!

# within SECONDS WANT CMD...: CMD exits WANT before the deadline.
within() {
	local secs=$1 want=$2
	shift 2
	expect_exit "$want" timeout -k 2 "$secs" "$@"
}

# refused WANT KIND ARGS...: khbpf ARGS exits WANT within 20 s, one stderr
# line that says the file is KIND, nothing on stdout.
refused() {
	local want=$1 kind=$2
	shift 2
	within 20 "$want" "$KHBPF" "$@"
	expect_one_line_error
	grep -q "$kind" "$TMP/err" || fail "khbpf $*: the error does not say '$kind': $(cat "$TMP/err")"
	[ ! -s "$TMP/out" ] || fail "khbpf $*: stdout: $(head -c 200 "$TMP/out")"
	echo "  khbpf $*: $(cat "$TMP/err")"
}

for f in "$FIFO" "$HELD"; do
	refused 1 "a FIFO (named pipe)" report "$f"
	refused 1 "a FIFO (named pipe)" report --keyhog "$TMP/k.json" "$f"
	refused 1 "a FIFO (named pipe)" report --html "$TMP/r.html" "$f"
	[ ! -e "$TMP/k.json" ] && [ ! -e "$TMP/r.html" ] || fail "report wrote an output from a FIFO"
	refused 1 "a FIFO (named pipe)" list "$f"
	refused 1 "a FIFO (named pipe)" serve --listen 127.0.0.1:0 --span "$f:foo"
done
refused 1 "a character device" report /dev/zero
refused 1 "a character device" list /dev/zero
refused 1 "a directory" report "$TMP"
refused 1 "a directory" list "$TMP"
# serve's names file (read again when it changes): the same rule.
refused 1 "not a regular file" serve --listen 127.0.0.1:0 --labels container --container-names "$FIFO"

# run and attach: the span site fails, saying why, and the window goes on.
span_failed() { # DOC
	validate "$1" || fail "schema: $1"
	json_check "$1" \
		"[p['status'] for p in d['span_probes']] == ['failed']" \
		"'is a FIFO (named pipe), not a regular file' in d['span_probes'][0]['reason']"
}
for f in "$FIFO" "$HELD"; do
	rm -f "$OUT"
	within 20 0 "$KHBPF" run --span "$f:foo" -o "$OUT" -- true
	span_failed "$OUT"
	rm -f "$OUT"
	within 20 0 "$KHBPF" attach --pid "$LIVE" --span "$f:foo" -d 1 -o "$OUT"
	span_failed "$OUT"
done
echo "  run and attach --span FIFO:foo: the site failed, the window went on"

# A FIFO where --debug-dir's build-id debug file would be: passed over.
ID=$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
gcc -O2 -g -rdynamic -Wl,--build-id=0x"$ID" tests/fixtures/spandebug/counted.c -o "$TMP/counted" ||
	fail "gcc"
strip --strip-all "$TMP/counted" -o "$TMP/counted.stripped" || fail "strip"
mkdir -p "$TMP/debug/.build-id/${ID:0:2}"
mkfifo "$TMP/debug/.build-id/${ID:0:2}/${ID:2}.debug"
rm -f "$OUT"
within 30 0 "$KHBPF" run --debug-dir "$TMP/debug" --span counted_step -o "$OUT" -- "$TMP/counted.stripped" 3
validate "$OUT" || fail "schema"
json_check "$OUT" "[p['status'] for p in d['span_probes']] == ['failed']"
echo "  --debug-dir with a FIFO for the debug file: $(python3 -c "import json; print(json.load(open('$OUT'))['span_probes'][0]['reason'])")"

# Outputs that are FIFOs: refused without waiting for a reader.
refused 1 "" run -o "$FIFO" -- true
refused 1 "" serve --listen 127.0.0.1:0 --ndjson "$FIFO"
checkpoint files-done

# SIGTERM during a slow setup: the window ends, the document is whole.
for delay in 0 0.1 0.4; do
	rm -f "$OUT"
	start=$(date +%s%N)
	"$KHBPF" run --span "$PWD/build/workloads/manyfuncs:many_1*" -o "$OUT" -- sleep 60 2>"$TMP/kh.err" &
	KH=$!
	# From khbpf's first act, holding the signals (before it, the process
	# is still starting: a sanitized build's runtime takes tens of ms).
	for _ in $(seq 200); do
		blk=$(awk '/^SigBlk:/ {print $2}' /proc/"$KH"/status 2>/dev/null)
		[ -n "$blk" ] && (((16#$blk >> 14) & 1)) && break
		sleep 0.005
	done
	sleep "$delay"
	kill -TERM "$KH"
	for _ in $(seq 300); do kill -0 "$KH" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$KH" 2>/dev/null && fail "run still going 30 s after SIGTERM at ${delay}s: $(cat "$TMP/kh.err")"
	wait "$KH"
	rc=$?
	KH=""
	[ "$rc" -eq 143 ] || fail "SIGTERM at ${delay}s: exit $rc, expected 143: $(cat "$TMP/kh.err")"
	validate "$OUT" || fail "SIGTERM at ${delay}s: the document is not valid"
	json_check "$OUT" "d['target']['exit']['value'] == {'signal': 15}"
	echo "  SIGTERM ${delay}s into setup: exit 143 after $((($(date +%s%N) - start) / 1000000)) ms, document whole ($(python3 -c "import json; print(len(json.load(open('$OUT'))['span_probes']))") probe sites)"
done
no_bpf_left
echo "special_files: ok"

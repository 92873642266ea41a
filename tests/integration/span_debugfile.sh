#!/bin/bash
# --span in a stripped program through its separate debug file, split the
# way Debian's -dbgsym packages are: found by build-id under --debug-dir
# (run and attach) and by .gnu_debuglink beside the program, refused when
# it is another build's. A function only the debug file names is counted
# exactly (the program calls it N times) and span_probes names the file
# its symbol came from.
. "$(dirname "$0")/common.bash"
require_root "uprobes need root"

PROG=
trap 'rc=$?; [ -z "$PROG" ] || { kill "$PROG"; wait "$PROG"; } 2>/dev/null; keep_failed "$rc"' EXIT

# A build-id of our own, so that no file of the host's /usr/lib/debug is this program's.
ID=$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
OTHER=$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
BYID="$TMP/debug/.build-id/${ID:0:2}/${ID:2}.debug"
for id in "$ID" "$OTHER"; do
	gcc -O2 -g -rdynamic -Wl,--build-id=0x"$id" tests/fixtures/spandebug/counted.c \
		-o "$TMP/counted-$id" || fail "gcc"
	objcopy --only-keep-debug "$TMP/counted-$id" "$TMP/$id.debug" || fail "objcopy"
done
mkdir -p "$TMP/bin" "$(dirname "$BYID")"
strip --strip-all "$TMP/counted-$ID" -o "$TMP/bin/counted" || fail "strip"
cp "$TMP/$ID.debug" "$TMP/counted.debug"
objcopy --add-gnu-debuglink="$TMP/counted.debug" "$TMP/bin/counted" || fail "objcopy"
cp "$TMP/$ID.debug" "$BYID"
N=$((RANDOM % 900 + 100))

# By build-id under --debug-dir: every call, and the debug file named.
expect_exit 0 timeout 60 "$KHBPF" run --debug-dir "$TMP/debug" --span counted_step \
	-o "$TMP/doc.json" -- "$TMP/bin/counted" "$N"
validate "$TMP/doc.json" || fail "schema"
json_check "$TMP/doc.json" \
	"[(m['metric_id'], m['calls']) for m in d['span_metrics']] == [('counted-step', $N)]" \
	"[(p['symbol'], p['status'], p.get('symbols_from')) for p in d['span_probes']] == [('counted_step', 'attached', '$BYID')]" \
	"d['loss']['span_state_failures']['value'] == 0"

# Without it: the probe fails, saying why, and the program still runs.
expect_exit 0 timeout 60 "$KHBPF" run --span counted_step -o "$TMP/doc2.json" -- "$TMP/bin/counted" 3
validate "$TMP/doc2.json" || fail "schema (no debug file)"
json_check "$TMP/doc2.json" \
	"[p['status'] for p in d['span_probes']] == ['failed'] and 'symbols_from' not in d['span_probes'][0]" \
	"'stripped (no .symtab)' in d['span_probes'][0]['reason']" \
	"'no debug file of it was found' in d['span_probes'][0]['reason']"

# By .gnu_debuglink, beside the program (its CRC checked); .dynsym's own function is not from it.
cp "$TMP/$ID.debug" "$TMP/bin/counted.debug"
expect_exit 0 timeout 60 "$KHBPF" run --span '*_step' -o "$TMP/doc3.json" -- "$TMP/bin/counted" "$N"
validate "$TMP/doc3.json" || fail "schema (debuglink)"
json_check "$TMP/doc3.json" \
	"sorted((m['metric_id'], m['calls']) for m in d['span_metrics']) == [('counted-step', $N), ('exported-step', $N)]" \
	"sorted((p['symbol'], p['status'], p.get('symbols_from')) for p in d['span_probes']) == [('counted_step', 'attached', '$TMP/bin/counted.debug'), ('exported_step', 'attached', None)]"
rm "$TMP/bin/counted.debug"

# Another build's debug file at the build-id's place is refused.
cp "$TMP/$OTHER.debug" "$BYID"
expect_exit 0 timeout 60 "$KHBPF" run --debug-dir "$TMP/debug" --span counted_step \
	-o "$TMP/doc4.json" -- "$TMP/bin/counted" 3
json_check "$TMP/doc4.json" \
	"[p['status'] for p in d['span_probes']] == ['failed']" \
	"'$BYID was refused: its build-id is not the object' in d['span_probes'][0]['reason']"
cp "$TMP/$ID.debug" "$BYID"

# attach: a running process, by build-id under --debug-dir.
mkfifo "$TMP/in"
"$TMP/bin/counted" "$N" wait <"$TMP/in" >"$TMP/prog.out" 2>/dev/null &
PROG=$!
exec 7>"$TMP/in"
wait_for ready "$TMP/prog.out" || fail "the program did not start"
timeout 30 "$KHBPF" attach --pid "$PROG" --duration 3 --debug-dir "$TMP/debug" \
	--span counted_step -o "$TMP/doc5.json" 2>"$TMP/kh5.err" &
kh=$!
wait_for watching "$TMP/kh5.err" || fail "attach did not start: $(cat "$TMP/kh5.err")"
echo >&7
wait_for done "$TMP/prog.out" || fail "the program did not finish its calls"
wait "$kh" || fail "attach failed: $(cat "$TMP/kh5.err")"
echo >&7
exec 7>&-
wait "$PROG"
PROG=
validate "$TMP/doc5.json" || fail "schema (attach)"
json_check "$TMP/doc5.json" \
	"[(m['metric_id'], m['calls']) for m in d['span_metrics']] == [('counted-step', $N)]" \
	"[(p['status'], p.get('symbols_from')) for p in d['span_probes']] == [('attached', '$BYID')]"

expect_exit 2 "$KHBPF" run --debug-dir '' --span counted_step -- true
expect_one_line_error
echo "span_debugfile: ok"

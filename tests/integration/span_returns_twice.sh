#!/bin/bash
# --span on functions that return twice: none is probed, and the programs
# that call them live (issue 39's hostile pass of --span globs). A return
# probe on sigsetjmp saves the kernel's trampoline in the jmp_buf, and the
# second return, through siglongjmp, finds no return instance: the kernel
# sends SIGILL or the program returns somewhere stale. `--span
# 'libc.so.6:*'` did that to every bash on the host, not only the set's (the
# probes are in the file): it killed this test suite's own shells. Here the
# probes go on a private copy of libc, which only the test's bash loops map
# (LD_LIBRARY_PATH), so a regression kills those loops and nothing else.
# Each loop forks subshells and returns from functions, which sigsetjmps
# and siglongjmps (before the fix: each loop died of SIGSEGV, exit 139).
. "$(dirname "$0")/common.bash"
require_root "uprobes need root"
exec </dev/null
LIBC=$(ldd /bin/bash | awk '$1 == "libc.so.6" { print $3; exit }')
[ -n "$LIBC" ] && [ -f "$LIBC" ] || fail "no libc.so.6 in ldd /bin/bash"
mkdir "$TMP/lib" && cp "$LIBC" "$TMP/lib/libc.so.6" || fail "cannot copy $LIBC"
LOOPS='
pids=()
for k in 1 2 3 4; do
	bash -c '"'"'for i in $(seq 100); do x=$( (echo $i) ); f() { return 3; }; f; done
		grep -q " '"$TMP"'/lib/libc.so.6$" /proc/$$/maps && echo "loop done"'"'"' &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || { echo "loop exit $?"; rc=1; }; done
exit $rc'

expect_exit 0 timeout -k 5 120 "$KHBPF" run --span "$TMP/lib/libc.so.6:*jmp*" -o "$TMP/doc.json" \
	-- env LD_LIBRARY_PATH="$TMP/lib" bash -c "$LOOPS"
[ "$(grep -c '^loop done$' "$TMP/out")" -eq 4 ] || fail "the loops did not all finish: $(cat "$TMP/out")"
validate "$TMP/doc.json" || fail "schema"
json_check "$TMP/doc.json" \
	"sorted(p['symbol'] for p in d['span_probes'] if p['status'] == 'failed') == ['__sigsetjmp', '_setjmp', 'setjmp']" \
	"all('returns twice' in p['reason'] for p in d['span_probes'] if p['status'] == 'failed')" \
	"any(p['status'] == 'attached' and 'longjmp' in p['symbol'] for p in d['span_probes'])" \
	"sum(m['calls'] for m in d['span_metrics']) > 0"
echo "span_returns_twice: ok (4 bash loops on the probed libc copy lived; $(python3 -c "
import json; d = json.load(open('$TMP/doc.json'))
print(', '.join(f\"{m['metric_id']} {m['calls']} calls\" for m in d['span_metrics']))"); refused: setjmp, _setjmp, __sigsetjmp)"

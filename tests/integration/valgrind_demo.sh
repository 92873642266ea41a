#!/bin/bash
# khbpf-test: plain-only
# A full `khbpf run` of the demo under valgrind memcheck: no leak of any
# kind, no invalid access, no file descriptor of ours left open at exit.
# tests/valgrind.supp holds only valgrind's false reports on libbpf's bpf(2)
# attributes; anything else fails the test.
. "$(dirname "$0")/common.bash"
require_root "run loads BPF"
command -v valgrind >/dev/null || fail "valgrind is required (tools/install-deps.sh installs it)"

expect_exit 0 timeout 300 valgrind --quiet --error-exitcode=99 --leak-check=full \
	--show-leak-kinds=all --errors-for-leak-kinds=all --track-fds=yes \
	--suppressions=tests/valgrind.supp --log-file="$TMP/vg.log" \
	"$KHBPF" run -o "$TMP/doc.json" -- build/workloads/demo
validate "$TMP/doc.json" >/dev/null || fail "schema"
json_check "$TMP/doc.json" \
	"d['target']['exit'] == {'status': 'recorded', 'value': {'code': 0}}" \
	"len(d['threads']) >= 2"
# --quiet leaves only errors and the fd report; an fd of ours is one opened
# below main (not "<inherited from parent>").
grep -q 'ERROR SUMMARY' "$TMP/vg.log" && fail "valgrind errors: $(grep -m5 -A8 '==[0-9]*== [A-Z]' "$TMP/vg.log")"
"$PYTHON" - "$TMP/vg.log" <<'PY' || fail "file descriptors left open: $(cat "$TMP/vg.log")"
import re, sys
text = open(sys.argv[1]).read()
blocks = re.split(r"==\d+== Open file descriptor ", text)[1:]
ours = [b.splitlines()[0] for b in blocks
        if "<inherited from parent>" not in b and not re.match(r"[012]:", b)]
sys.exit(1 if ours else 0)
PY
echo "valgrind_demo: ok"

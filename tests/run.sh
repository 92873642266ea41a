#!/bin/bash
# Run every test: the cmocka unit tests of each build dir given (plain and
# sanitized), the schema validation of the documents they write, then the
# integration tests in tests/integration against real BPF. Ends with the
# line "N passed, N failed" and exits non-zero on any failure.
#
# Usage: tests/run.sh BUILD_DIR [BUILD_DIR...]   (from the repository root)
set -u
cd "$(dirname "$0")/.."

SCHEMA=${KHBPF_SCHEMA:-../shared/spec/khbpf-evidence.schema.json}
PYTHON=${PYTHON:-/usr/bin/python3}
passed=0
failed=0
failures=()

result() { # name rc
	if [ "$2" -eq 0 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failures+=("$1")
	fi
}

# Programs of ours still loaded after a test means a leaked link or fd.
# Their release is asynchronous (RCU), so give it a moment.
leaked_progs() {
	local i n
	for i in 1 2 3 4 5 6 7 8 9 10; do
		n=$(bpftool prog show 2>/dev/null | grep -cE 'name (probe_|khbpf_)' || true)
		[ "${n:-0}" -eq 0 ] && { echo 0; return; }
		sleep 0.2
	done
	echo "$n"
}

for build in "$@"; do
	out="$build/test-out"
	rm -rf "$out"
	mkdir -p "$out"
	for t in "$build"/tests/test_*; do
		[ -x "$t" ] && [ -f "$t" ] || continue
		case "$t" in *.o | *.d) continue ;; esac
		echo "== $t"
		KHBPF_TEST_OUT="$out" "$t"
		result "$t" $?
	done
	docs=("$out"/*.json)
	if [ -e "${docs[0]}" ]; then
		echo "== schema validation ($build)"
		"$PYTHON" tests/validate_schema.py "$SCHEMA" "${docs[@]}"
		result "schema validation ($build)" $?
	else
		echo "no documents were written to $out"
		result "schema validation ($build): no documents" 1
	fi
done

for t in tests/integration/*.sh; do
	[ -e "$t" ] || continue
	echo "== $t"
	KHBPF="${KHBPF:-build/khbpf}" SCHEMA="$SCHEMA" PYTHON="$PYTHON" bash "$t"
	rc=$?
	if [ "$rc" -eq 0 ] && [ "$(leaked_progs)" -ne 0 ]; then
		echo "$t left BPF programs loaded:" >&2
		bpftool prog show | grep -E 'name (probe_|khbpf_)' >&2
		rc=1
	fi
	result "$t" "$rc"
done

if [ "$failed" -ne 0 ]; then
	printf 'FAILED: %s\n' "${failures[@]}"
fi
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

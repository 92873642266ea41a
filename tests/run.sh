#!/bin/bash
# Run every test: the cmocka unit tests of each build dir given (plain and
# sanitized), the schema validation of the documents they write and of
# their keyhog renderings, then the
# integration tests in tests/integration against real BPF, once with each
# build's khbpf. Ends with the
# line "N passed, N failed" and exits non-zero on any failure.
#
# Usage: tests/run.sh BUILD_DIR [BUILD_DIR...]   (from the repository root)
set -u
cd "$(dirname "$0")/.."

SCHEMA=${KHBPF_SCHEMA:-docs/khbpf-evidence.schema.json}
KEYHOG_SCHEMA=docs/keyhog-profile.schema.json
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

. tests/guard.bash

# keyhog_all OUT DOC...: each document's keyhog rendering (khbpf report
# --keyhog) validates against the crate's closed vocabularies.
keyhog_all() {
	local dir=$1/keyhog f kh=()
	shift
	mkdir -p "$dir" || return 1
	for f in "$@"; do
		kh+=("$dir/$(basename "$f")")
		"${KHBPF:-build/khbpf}" report --keyhog "${kh[-1]}" "$f" || return 1
	done
	"$PYTHON" tests/validate_schema.py "$KEYHOG_SCHEMA" "${kh[@]}"
}

# Every test starts with every signal at its default: a run under nohup (or
# any parent that ignores SIGHUP) would otherwise pass the ignore on to khbpf
# and the commands it runs, which keep it, as nohup asks, and fail the signal
# cases (bad_input.sh: SIGHUP not fatal, exit 0 for 129).

for build in "$@"; do
	out="$build/test-out"
	rm -rf "$out"
	mkdir -p "$out"
	for t in "$build"/tests/*/test_*; do
		[ -x "$t" ] && [ -f "$t" ] || continue
		case "$t" in *.o | *.d) continue ;; esac
		echo "== $t"
		KHBPF_TEST_OUT="$out" guarded "$t" env --default-signal "$t"
		result "$t" $?
	done
	docs=("$out"/*.json)
	if [ -e "${docs[0]}" ]; then
		echo "== schema validation ($build)"
		"$PYTHON" tests/validate_schema.py "$SCHEMA" "${docs[@]}"
		result "schema validation ($build)" $?
		echo "== keyhog rendering ($build)"
		keyhog_all "$out" "${docs[@]}"
		result "keyhog rendering ($build)" $?
	else
		echo "no documents were written to $out"
		result "schema validation ($build): no documents" 1
	fi
done

# integration KHBPF LABEL: every integration test against that binary.
# A sanitized binary reports with its own exit status (86), so a test that
# expects khbpf to fail with 1 or 2 cannot mistake a sanitizer report for it;
# a test marked "khbpf-test: plain-only" (valgrind, memory bounds) runs once.
integration() {
	local bin=$1 label=$2 t rc start
	for t in tests/integration/*.sh; do
		[ -e "$t" ] || continue
		if [ -n "$label" ] && grep -q '^# khbpf-test: plain-only' "$t"; then
			continue
		fi
		echo "== $t$label"
		start=$SECONDS
		KHBPF="$bin" SCHEMA="$SCHEMA" PYTHON="$PYTHON" guarded "$t$label" env --default-signal bash "$t"
		rc=$?
		echo "   ($((SECONDS - start)) s)"
		result "$t$label" "$rc"
	done
}

integration "${KHBPF:-build/khbpf}" ""
for build in "$@"; do
	[ "$build" = build ] || [ ! -x "$build/khbpf" ] && continue
	KHBPF_SANITIZED=1 \
		ASAN_OPTIONS=exitcode=86:detect_leaks=1:abort_on_error=0 \
		UBSAN_OPTIONS=exitcode=86:halt_on_error=1:print_stacktrace=1 \
		integration "$build/khbpf" " ($build)"
done

if [ "$failed" -ne 0 ]; then
	printf 'FAILED: %s\n' "${failures[@]}"
fi
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

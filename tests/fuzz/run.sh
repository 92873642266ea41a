#!/bin/bash
# Runs libFuzzer harnesses: first each input of tests/fuzz/regressions/TARGET
# once (crashes found before, now fixed), then fuzzing for SECONDS from the
# seed corpus tests/fuzz/corpus/TARGET (with tests/fuzz/TARGET.dict when there
# is one). New inputs go to build/fuzz/corpus/TARGET, a crash to
# build/fuzz/artifacts/TARGET/. Exits non-zero when any harness fails.
#
# --fresh (make check) starts from the seeds alone, into a corpus thrown
# away afterwards, so the run's length does not grow with earlier runs.
#
# Usage: tests/fuzz/run.sh [--fresh] SECONDS TARGET...   (from the repository root, after make fuzz-build)
set -u
shopt -s nullglob
cd "$(dirname "$0")/../.."

fresh=0
if [ "${1:-}" = --fresh ]; then
	fresh=1
	shift
fi
[ $# -ge 2 ] || { echo "usage: tests/fuzz/run.sh [--fresh] SECONDS TARGET..." >&2; exit 2; }
seconds=$1
shift
case "$seconds" in '' | *[!0-9]*) echo "run.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;; esac

failed=()
# The harnesses' private trees; a crashing one cannot remove its own.
export TMPDIR=$PWD/build/fuzz/tmp
mkdir -p "$TMPDIR"
trap 'rm -rf "$TMPDIR"' EXIT
# fuzz_one TARGET: its regression inputs, then SECONDS of fuzzing; prints
# its result lines, returns 1 when it fails.
fuzz_one() {
	local t=$1 bin corpus artifacts log dict regs
	bin=build/fuzz/fuzz_$t
	corpus=build/fuzz/corpus/$t
	if [ $fresh = 1 ]; then
		corpus=$TMPDIR/corpus-$t
		rm -rf "$corpus"
	fi
	artifacts=build/fuzz/artifacts/$t/
	log=build/fuzz/$t.log
	dict=()
	[ -f tests/fuzz/"$t".dict ] && dict=(-dict=tests/fuzz/"$t".dict)
	mkdir -p "$corpus" "$artifacts" tests/fuzz/corpus/"$t"

	regs=(tests/fuzz/regressions/"$t"/*)
	if [ ${#regs[@]} -gt 0 ]; then
		if ! "$bin" -runs=1 "${regs[@]}" >"$log" 2>&1; then
			echo "FAIL fuzz $t: a regression input crashes again (log: $log)"
			tail -n 30 "$log"
			return 1
		fi
	fi
	# -timeout: one input taking this long is a hang, reported as a crash.
	if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
		-print_final_stats=1 -artifact_prefix="$artifacts" "${dict[@]}" \
		"$corpus" tests/fuzz/corpus/"$t" >"$log" 2>&1; then
		echo "ok   fuzz $t: $(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}') inputs in ${seconds}s, corpus $corpus: $(ls "$corpus" | wc -l), regression inputs: ${#regs[@]}"
	else
		echo "FAIL fuzz $t: crash or broken property; input saved in $artifacts (log: $log)"
		grep -E 'ERROR|fuzz property failed|SUMMARY|Test unit written' "$log" | head -n 10
		return 1
	fi
}

for t in "$@"; do
	[ -x build/fuzz/fuzz_$t ] || { echo "run.sh: build/fuzz/fuzz_$t is missing; run 'make fuzz-build'" >&2; exit 2; }
done
# As many harnesses at once as there are CPUs (each fuzzes on one); results
# are printed in the order given.
jobs=$(nproc 2>/dev/null || echo 1)
for t in "$@"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n || true
	done
	{
		rc=0
		fuzz_one "$t" >"$TMPDIR/result-$t" 2>&1 || rc=$?
		echo "$rc" >"$TMPDIR/rc-$t"
	} &
done
wait
for t in "$@"; do
	cat "$TMPDIR/result-$t"
	[ "$(cat "$TMPDIR/rc-$t" 2>/dev/null)" = 0 ] || failed+=("$t")
done
if [ ${#failed[@]} -ne 0 ]; then
	echo "fuzz: failed: ${failed[*]}"
	exit 1
fi

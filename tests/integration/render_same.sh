#!/bin/bash
# One renderer: what `run`/`attach` print (--text, --html, --perfetto) is
# rendered from the document they write, by the code `khbpf report` uses, so
# `khbpf report FILE` prints exactly what the run printed, byte for byte:
# the demo, the span workload, an attach window and the /proc fallback.
. "$(dirname "$0")/common.bash"
require_root "run loads BPF"
exec </dev/null
P=
trap 'rc=$?; [ -z "$P" ] || kill "$P" 2>/dev/null; wait; keep_failed $rc' EXIT

same() { # NAME: the run's outputs against report's from $TMP/NAME.json
	local n=$1
	validate "$TMP/$n.json" >/dev/null || fail "$n: schema"
	expect_exit 0 "$KHBPF" report "$TMP/$n.json" --html "$TMP/$n.report.html" \
		--perfetto "$TMP/$n.report.trace" --text
	cp "$TMP/out" "$TMP/$n.report.txt"
	[ -s "$TMP/$n.txt" ] || fail "$n: the run printed nothing"
	cmp "$TMP/$n.txt" "$TMP/$n.report.txt" || fail "$n: run's text differs from report's: $(diff "$TMP/$n.txt" "$TMP/$n.report.txt" | head -5)"
	cmp "$TMP/$n.html" "$TMP/$n.report.html" || fail "$n: run's --html differs from report's"
	cmp "$TMP/$n.trace" "$TMP/$n.report.trace" || fail "$n: run's --perfetto differs from report's"
}

run_same() { # NAME KHBPF-ARGS...
	local n=$1
	shift
	expect_exit 0 "$KHBPF" "$@"
	cp "$TMP/out" "$TMP/$n.txt"
	same "$n"
}

run_same demo run -o "$TMP/demo.json" --text --html "$TMP/demo.html" --perfetto "$TMP/demo.trace" \
	-- build/workloads/demo
run_same spans run -o "$TMP/spans.json" --text --html "$TMP/spans.html" --perfetto "$TMP/spans.trace" \
	-- sh -c 'exec "$0" "$@" >/dev/null' build/workloads/spanned --threads 2 --iterations 20
run_same nobpf run --no-bpf -o "$TMP/nobpf.json" --text --html "$TMP/nobpf.html" \
	--perfetto "$TMP/nobpf.trace" -- build/workloads/demo
grep -q "^Spans" "$TMP/spans.txt" || fail "the span run printed no span table: $(head -5 "$TMP/spans.txt")"

# attach: a window on a running process.
build/workloads/spanned --threads 1 --iterations 1000000 >/dev/null &
P=$!
run_same attach attach --pid "$P" --duration 1 -o "$TMP/attach.json" --text \
	--html "$TMP/attach.html" --perfetto "$TMP/attach.trace"
kill "$P"
wait "$P" 2>/dev/null
P=

# Without -o the default is the same text; '-' sends HTML to stdout instead.
expect_exit 0 "$KHBPF" run -- true
grep -q "^Threads (1)" "$TMP/out" || fail "run without -o printed no report: $(head -3 "$TMP/out")"
expect_exit 0 "$KHBPF" run --html - -- true
grep -q "^<!DOCTYPE html>" "$TMP/out" || fail "--html - wrote no page to stdout: $(head -c 200 "$TMP/out")"
grep -q "^Threads" "$TMP/out" && fail "--html - also printed the text report"
expect_exit 2 "$KHBPF" run --text --html - -- true
expect_one_line_error
echo "render_same: ok (demo, spans, /proc fallback and attach: text, HTML and Perfetto byte-identical to khbpf report's)"

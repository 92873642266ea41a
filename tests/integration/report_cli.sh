#!/bin/bash
# `khbpf report`: the terminal report, the trace and the HTML page of saved
# documents checked against those documents (tests/integration/report_check.py
# computes what to expect on its own); the page rendered by headless
# Chromium, screenshot and DOM checked; bad input refused with one line and
# no file left behind; a fresh document from `khbpf run` (root) reported too,
# and the report made as an unprivileged user.
. "$(dirname "$0")/common.bash"
FIX=tests/fixtures/report
CHECK=tests/integration/report_check.py

# The fixtures, the hand-edited one too, are documents the schema accepts.
validate "$FIX"/*.json >/dev/null || fail "a fixture does not validate"

# -- terminal and trace, for each fixture
# (--all: every gap on a line of its own, for report_check.py to find each.)
for f in spans sched gaps tree; do
	expect_exit 0 "$KHBPF" report --all "$FIX/$f.json"
	[ ! -s "$TMP/err" ] || fail "report $f wrote to stderr: $(cat "$TMP/err")"
	cp "$TMP/out" "$TMP/$f.txt"
	"$PYTHON" "$CHECK" text "$FIX/$f.json" "$TMP/$f.txt" || fail "terminal report of $f.json"
	expect_exit 0 "$KHBPF" report "$FIX/$f.json" --perfetto "$TMP/$f.trace.json"
	[ ! -s "$TMP/out" ] || fail "--perfetto also wrote to stdout"
	"$PYTHON" "$CHECK" trace "$FIX/$f.json" "$TMP/$f.trace.json" || fail "trace of $f.json"
	expect_exit 0 "$KHBPF" report "$FIX/$f.json" --html "$TMP/$f.html"
	grep -q '</html>' "$TMP/$f.html" || fail "$f.html is not a whole page"
done
grep -q '^  hardware-counters: unsupported — perf_event_open: no hardware PMU' "$TMP/spans.txt" ||
	fail "the PMU gap and its fix are not in the report"

# Both files and the terminal report in one run; '-' is stdout.
expect_exit 0 "$KHBPF" report "$FIX/spans.json" --html "$TMP/both.html" --perfetto "$TMP/both.json" --text --all
cmp -s "$TMP/both.html" "$TMP/spans.html" || fail "--html differs between runs"
cmp -s "$TMP/both.json" "$TMP/spans.trace.json" || fail "--perfetto differs between runs"
cmp -s "$TMP/out" "$TMP/spans.txt" || fail "--text differs from the plain report"
expect_exit 0 "$KHBPF" report "$FIX/spans.json" --perfetto -
cmp -s "$TMP/out" "$TMP/spans.trace.json" || fail "--perfetto - differs"

# -- the page in a browser. The sanitized pass's pages are held to the plain
# build's byte for byte (same fixtures): the plain pass's browser checks
# then hold for them too, and the browser is not started again.
chrome=$(command -v chromium || true)
same_as_plain=0
if [ -n "${KHBPF_SANITIZED:-}" ] && [ -x build/khbpf ]; then
	same_as_plain=1
	for f in spans sched gaps; do
		build/khbpf report "$FIX/$f.json" --html "$TMP/plain-$f.html" >/dev/null ||
			fail "the plain build's report of $f.json failed"
		cmp -s "$TMP/plain-$f.html" "$TMP/$f.html" || same_as_plain=0
	done
	[ "$same_as_plain" = 1 ] || fail "the sanitized build's pages differ from the plain build's"
fi
if [ "$same_as_plain" = 1 ]; then
	echo "  browser: the pages are the plain build's byte for byte (checked in its pass)"
elif [ -z "$chrome" ]; then
	[ "${CI:-}" = true ] && fail "chromium is missing; run tools/install-deps.sh --with-browser"
	echo "SKIP browser checks: no chromium (tools/install-deps.sh --with-browser)"
else
	browse() { # URL-FILE ARGS...
		local page=$1
		shift
		timeout 60 "$chrome" --headless=new --disable-gpu --no-sandbox \
			--user-data-dir="$TMP/chrome-profile" --no-first-run --hide-scrollbars \
			--force-color-profile=srgb --force-device-scale-factor=1 "$@" \
			"file://$(realpath "$page")" 2>"$TMP/chrome.err"
	}
	browse "$TMP/spans.html" --window-size=1280,1100 --screenshot="$TMP/spans.png" >/dev/null ||
		fail "chromium could not take a screenshot: $(tail -3 "$TMP/chrome.err")"
	"$PYTHON" "$CHECK" png "$TMP/spans.png" || fail "the screenshot lacks the timeline or histogram"
	browse "$TMP/sched.html" --dump-dom >"$TMP/sched.dom" || fail "chromium --dump-dom failed"
	"$PYTHON" "$CHECK" dom "$TMP/sched.dom" demo demo-sleeper demo-spinner demo-yielder \
		demo-worker1 demo-worker2 demo-worker3 demo-mover demo-ping demo-pong ||
		fail "thread names missing from the rendered page"
	browse "$TMP/gaps.html" --dump-dom >"$TMP/gaps.dom" || fail "chromium --dump-dom failed"
	"$PYTHON" "$CHECK" dom "$TMP/gaps.dom" "<script>&\"'x" gappy worker-2 ||
		fail "the hostile thread name is not shown as text"
	rm -rf "$TMP/chrome-profile"
fi

# -- bad input: one line, non-zero, and no file written
no_output() {
	[ ! -e "$TMP/o/out.html" ] || fail "an output file was left behind"
	[ -z "$(ls -A "$TMP/o")" ] || fail "files left in the output directory: $(ls -A "$TMP/o")"
}
mkdir "$TMP/o"
expect_exit 1 "$KHBPF" report "$TMP/missing.json" --html "$TMP/o/out.html"
expect_one_line_error
grep -q "missing.json' cannot be read: No such file" "$TMP/err" || fail "missing file: $(cat "$TMP/err")"
no_output
echo "not json" >"$TMP/notjson.json"
expect_exit 1 "$KHBPF" report "$TMP/notjson.json" --html "$TMP/o/out.html"
expect_one_line_error
grep -q "is not JSON" "$TMP/err" || fail "not JSON: $(cat "$TMP/err")"
no_output
echo '{"version": 1, "collectors": []}' >"$TMP/probe.json"
expect_exit 1 "$KHBPF" report "$TMP/probe.json" --perfetto "$TMP/o/out.json"
expect_one_line_error
grep -q "is not a khbpf evidence document" "$TMP/err" || fail "wrong document: $(cat "$TMP/err")"
no_output
sed 's/"major": 1/"major": 2/' "$FIX/sched.json" >"$TMP/v2.json"
expect_exit 1 "$KHBPF" report "$TMP/v2.json" --html "$TMP/o/out.html"
expect_one_line_error
grep -q "schema version 2.x; this khbpf reads version 1.x" "$TMP/err" || fail "v2: $(cat "$TMP/err")"
no_output
head -c 5000 "$FIX/spans.json" >"$TMP/cut.json"
expect_exit 1 "$KHBPF" report "$TMP/cut.json"
expect_one_line_error
expect_exit 1 "$KHBPF" report "$TMP"
expect_one_line_error
# A good document, an output directory that does not exist.
expect_exit 1 "$KHBPF" report "$FIX/spans.json" --html "$TMP/o/no/such/dir/out.html"
expect_one_line_error
grep -q -- "--html '.*': directory '.*' does not exist" "$TMP/err" || fail "missing dir: $(cat "$TMP/err")"
no_output
# A failed report leaves an existing output as it was.
echo old >"$TMP/keep.html"
expect_exit 1 "$KHBPF" report "$TMP/notjson.json" --html "$TMP/keep.html"
[ "$(cat "$TMP/keep.html")" = old ] || fail "a failed report replaced the old output"
# The input is never overwritten.
cp "$FIX/sched.json" "$TMP/in.json"
expect_exit 2 "$KHBPF" report "$TMP/in.json" --perfetto "$TMP/in.json"
expect_one_line_error
cmp -s "$TMP/in.json" "$FIX/sched.json" || fail "the input document was overwritten"
expect_exit 2 "$KHBPF" report "$FIX/spans.json" --html "$TMP/x" --perfetto "$TMP/x"
expect_one_line_error
expect_exit 2 "$KHBPF" report "$FIX/spans.json" --html - --perfetto -
expect_one_line_error
mkfifo "$TMP/fifo"
expect_exit 1 "$KHBPF" report "$FIX/spans.json" --html "$TMP/fifo"
expect_one_line_error
# Usage errors: exit 2, one line.
expect_exit 2 "$KHBPF" report
expect_one_line_error
expect_exit 2 "$KHBPF" report a.json b.json
expect_one_line_error
expect_exit 2 "$KHBPF" report --bogus "$FIX/spans.json"
expect_one_line_error
expect_exit 2 "$KHBPF" report "$FIX/spans.json" --html
expect_one_line_error
expect_exit 0 "$KHBPF" report --help
grep -q "Examples:" "$TMP/out" || fail "report --help has no examples"
expect_exit 0 "$KHBPF" --help
grep -q "^  report " "$TMP/out" || fail "khbpf --help does not list report"

# -- a large document is read a piece at a time: the same checks, and its faults
# named by line and column with nothing written (the spans fixture's records
# repeated 300 times, pretty-printed: about 15 MB).
"$PYTHON" - "$FIX/spans.json" "$TMP/big.json" "$TMP/bad.json" "$TMP/bad.where" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
spans = []
for r in range(300):
    for s in doc["events"]["spans"]:
        s = json.loads(json.dumps(s))
        s["span_id"] += r * 1000
        if s["parent_span_id"]["status"] == "recorded":
            s["parent_span_id"]["value"] += r * 1000
        s["start_ns"] += r * 50000000
        spans.append(s)
doc["events"]["spans"] = spans
text = json.dumps(doc, indent=1)
open(sys.argv[2], "w").write(text)
at = text.index('"start_ns": ', text.index('"span_id": 200007,')) + len('"start_ns": ')
open(sys.argv[3], "w").write(text[:at] + "x" + text[at:])
line = text.count("\n", 0, at) + 1
open(sys.argv[4], "w").write(f"line {line}, column {at - text.rfind(chr(10), 0, at)}")
PY
[ -s "$TMP/bad.where" ] || fail "could not make the large document"
expect_exit 0 "$KHBPF" report --all "$TMP/big.json"
cp "$TMP/out" "$TMP/big.txt"
"$PYTHON" "$CHECK" text "$TMP/big.json" "$TMP/big.txt" || fail "terminal report of the large document"
grep -q "^Spans: 15600 records" "$TMP/big.txt" || fail "large document: $(grep ^Spans "$TMP/big.txt")"
expect_exit 0 "$KHBPF" report "$TMP/big.json" --perfetto "$TMP/big.trace.json" --html "$TMP/big.html"
"$PYTHON" "$CHECK" trace "$TMP/big.json" "$TMP/big.trace.json" || fail "trace of the large document"
head -c $(($(stat -c %s "$TMP/big.json") / 2)) "$TMP/big.json" >"$TMP/big-cut.json"
expect_exit 1 "$KHBPF" report "$TMP/big-cut.json" --html "$TMP/o/out.html" --perfetto "$TMP/o/out.json" --text
expect_one_line_error
grep -q "big-cut.json' is not JSON: it ends in the middle of a value$" "$TMP/err" || fail "cut: $(cat "$TMP/err")"
[ ! -s "$TMP/out" ] || fail "a report of a cut document printed something"
no_output
expect_exit 1 "$KHBPF" report "$TMP/bad.json" --perfetto "$TMP/o/out.json" --text
expect_one_line_error
grep -q "bad.json' is not JSON: unexpected character at $(cat "$TMP/bad.where")$" "$TMP/err" ||
	fail "bad byte at $(cat "$TMP/bad.where"): $(cat "$TMP/err")"
[ ! -s "$TMP/out" ] || fail "a report of a broken document printed something"
no_output
rm -f "$TMP"/big*.json "$TMP/bad.json" "$TMP/big.html"

# -- no root needed: an unprivileged user reports a copy it can read.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	pub=$(mktemp -d /tmp/khbpf-report-pub.XXXXXX)
	chmod 755 "$pub"
	cp "$FIX/spans.json" "$pub/doc.json"
	chmod 644 "$pub/doc.json"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$KHBPF" report --all "$pub/doc.json" >"$TMP/nobody.txt" 2>"$TMP/err"
	rc=$?
	rm -rf "$pub"
	[ "$rc" -eq 0 ] || fail "report as nobody exited $rc: $(cat "$TMP/err")"
	cmp -s "$TMP/nobody.txt" "$TMP/spans.txt" || fail "the report as nobody differs"
fi

# -- a document fresh from `khbpf run`: the reader keeps up with the writer.
if [ "$(id -u)" -eq 0 ]; then
	"$KHBPF" run --counter-events sw-cpu-clock -o "$TMP/live.json" -- \
		build/workloads/spanned --threads 2 --iterations 2 >/dev/null 2>"$TMP/err" ||
		fail "khbpf run failed: $(cat "$TMP/err")"
	expect_exit 0 "$KHBPF" report "$TMP/live.json" --perfetto "$TMP/live.trace.json" \
		--html "$TMP/live.html" --text --all
	cp "$TMP/out" "$TMP/live.txt"
	"$PYTHON" "$CHECK" text "$TMP/live.json" "$TMP/live.txt" || fail "terminal report of a live run"
	"$PYTHON" "$CHECK" trace "$TMP/live.json" "$TMP/live.trace.json" || fail "trace of a live run"
	no_bpf_left
else
	[ "${CI:-}" = true ] && fail "needs root for the live run, and CI must run it"
	echo "SKIP live run: needs root"
fi
echo "report_cli: ok"

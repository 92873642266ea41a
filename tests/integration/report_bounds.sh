#!/bin/bash
# `khbpf report` on documents that are huge or out of range (issue 39): a
# 200 MB top-level array and a document whose collectors member is 200 MB of
# valid JSON are refused under a 1 GB limit of the address space, in
# seconds, with one line saying what is wrong (never "not JSON"), by the
# report and with --keyhog; one within the bounds that json-c cannot
# allocate under a smaller limit is out of memory, not "not JSON"; integers
# past 64 bits are refused with their path, 2^64-1 is read.
# khbpf-test: plain-only (a sanitized build reserves terabytes of shadow: no ulimit -v)
. "$(dirname "$0")/common.bash"
FIX=tests/fixtures/report

# junk KIND FILE [N]: valid JSON of the wrong shape, written as it is made:
# a top-level array of 200 MB, or a document whose collectors member is 200
# MB (or N empty objects).
junk() {
	"$PYTHON" - "$@" <<'EOF' || fail "could not write $2"
import sys
kind, path = sys.argv[1], sys.argv[2]
count = int(sys.argv[3]) if len(sys.argv) > 3 else 0
unit = '{}, ' if count else '{"collector": "junk", "availability": "available", "n": 1}, '
n = count or (200 << 20) // len(unit)
with open(path, 'w') as f:
    f.write('[' if kind == 'array' else
            '{"schema": "khbpf-evidence", "schema_version": {"version": 1, "major": 1, "minor": 0}, '
            '"collectors": [')
    for i in range(0, n - 1, 10000):
        f.write(unit * min(10000, n - 1 - i))
    f.write(unit[:-2] + ']' + ('' if kind == 'array' else '}') + '\n')
EOF
}

# limited KB SECONDS CMD...: CMD under ulimit -v KB; stdout, stderr in $TMP/out, $TMP/err;
# fails past SECONDS. Its exit status.
limited() {
	local kb=$1 secs=$2 start rc
	shift 2
	start=$(date +%s%N)
	(
		ulimit -v "$kb" || exit 99
		exec "$@"
	) >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[ $(($(date +%s%N) - start)) -le $((secs * 1000000000)) ] ||
		fail "'$*' took more than $secs s under ulimit -v $kb"
	return "$rc"
}

# refused FILE WORDS: khbpf report and report --keyhog exit 1 in 20 s under a
# 1 GB limit, one line holding WORDS and not "not JSON", no file written.
refused() {
	local f=$1 words=$2 rc
	for keyhog in "" --keyhog; do
		rm -f "$TMP/kh.json"
		limited 1000000 20 "$KHBPF" report ${keyhog:+"$keyhog" "$TMP/kh.json"} "$f"
		rc=$?
		[ "$rc" -eq 1 ] || fail "report $keyhog $(basename "$f") exited $rc: $(head -c 300 "$TMP/err")"
		expect_one_line_error
		grep -qF -- "$words" "$TMP/err" || fail "report $keyhog $(basename "$f"): $(cat "$TMP/err")"
		! grep -q "not JSON" "$TMP/err" || fail "a false syntax error: $(cat "$TMP/err")"
		[ ! -e "$TMP/kh.json" ] || fail "report --keyhog left a file for $(basename "$f")"
	done
}

# -- the wrong shape, 200 MB of it
junk array "$TMP/array.json"
[ "$(stat -c %s "$TMP/array.json")" -ge 200000000 ] || fail "the array is short"
refused "$TMP/array.json" "is not a khbpf evidence document (not a JSON object)"
rm -f "$TMP/array.json"
junk collectors "$TMP/collectors.json"
refused "$TMP/collectors.json" \
	"is too large to read: its collectors member is over the 512 MiB bound on memory"
rm -f "$TMP/collectors.json"

# -- within the bounds (400000 empty objects: about 320 MB in json-c's
# tree), but not within 250 MB: out of memory, said so.
junk collectors "$TMP/many.json" 400000
limited 250000 20 "$KHBPF" report "$TMP/many.json"
rc=$?
[ "$rc" -eq 1 ] || fail "report of many.json exited $rc under 250 MB: $(head -c 300 "$TMP/err")"
expect_one_line_error
grep -q "out of memory" "$TMP/err" || fail "not out of memory: $(cat "$TMP/err")"
! grep -q "JSON" "$TMP/err" || fail "a false syntax error: $(cat "$TMP/err")"
# With the room, the text is JSON and its first fault is a field.
expect_exit 1 "$KHBPF" report "$TMP/many.json"
grep -qF "target is missing" "$TMP/err" || fail "many.json: $(cat "$TMP/err")"
rm -f "$TMP/many.json"

# -- integers past 64 bits, which json-c would clamp: refused with their path
# edit FILE OUT PYTHON: FILE with "@BIG@" set where PYTHON says (d: the
# document), that string then replaced by the text of $BIG.
edit() {
	BIG=$BIG "$PYTHON" - "$@" <<'EOF' || fail "could not edit $1"
import json, os, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
text = json.dumps(d, indent=2).replace('"@BIG@"', os.environ['BIG'], 1)
open(sys.argv[2], 'w').write(text)
EOF
}

# out_of_range FILE WORDS: report and --keyhog refuse FILE with WORDS.
out_of_range() {
	local keyhog
	for keyhog in "" --keyhog; do
		rm -f "$TMP/kh.json"
		expect_exit 1 "$KHBPF" report ${keyhog:+"$keyhog" "$TMP/kh.json"} "$1"
		expect_one_line_error
		grep -qF -- "$2" "$TMP/err" || fail "$(basename "$1"): $(cat "$TMP/err"), want $2"
		[ ! -e "$TMP/kh.json" ] || fail "report --keyhog left a file for $(basename "$1")"
	done
}

BIG=18446744073709551616 edit "$FIX/sched.json" "$TMP/tid.json" "d['threads'][1]['thread_id'] = '@BIG@'"
out_of_range "$TMP/tid.json" \
	"'$TMP/tid.json' threads[1].thread_id: 18446744073709551616 is out of range (at most 18446744073709551615)"
BIG=18446744073709551616 edit "$FIX/sched.json" "$TMP/wall.json" "d['window']['wall_ns'] = '@BIG@'"
out_of_range "$TMP/wall.json" "window.wall_ns: 18446744073709551616 is out of range"
BIG=-9223372036854775809 edit "$FIX/sched.json" "$TMP/neg.json" "d['window']['wall_ns'] = '@BIG@'"
out_of_range "$TMP/neg.json" \
	"window.wall_ns: -9223372036854775809 is out of range (at least -9223372036854775808)"
BIG=$(printf '%0100000d' 0 | tr 0 7) edit "$FIX/spans.json" "$TMP/digits.json" \
	"d['events']['spans'][3]['start_ns'] = '@BIG@'"
out_of_range "$TMP/digits.json" \
	"events.spans[3].start_ns: an integer of 100000 digits is out of range (at most 18446744073709551615)"
# 2^64-1 is a u64 like any other.
BIG=18446744073709551615 edit "$FIX/sched.json" "$TMP/max.json" "d['window']['wall_ns'] = '@BIG@'"
expect_exit 0 "$KHBPF" report "$TMP/max.json"
expect_exit 0 "$KHBPF" report "$TMP/max.json" --keyhog "$TMP/kh.json"
grep -q '"wall_ns": 18446744073709551615,' "$TMP/kh.json" || fail "2^64-1 not written as it was"
echo "report_bounds: ok"

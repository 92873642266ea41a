#!/bin/bash
# Spans in a Rust program (tests/workloads/rust/spanned.rs), whose notes come
# from global_asm! rather than span.h: the note is right on disk (not
# allocated, in a PIE), every call is counted exactly against the program's
# own counts, the nesting is right, and a stripped copy works the same.
# Needs a rustc (PATH, then $HOME/.cargo/bin): without one it is skipped,
# except in CI, which must run it.
. "$(dirname "$0")/common.bash"
require_root "uprobes need root"
W=build/workloads/rust-spanned

RUSTC=${RUSTC:-$(command -v rustc || true)}
if [ -z "$RUSTC" ] && [ -x "${HOME:-}/.cargo/bin/rustc" ]; then
	RUSTC=$HOME/.cargo/bin/rustc
fi
if [ -z "$RUSTC" ]; then
	[ "${CI:-}" = true ] && fail "no rustc in PATH or \$HOME/.cargo/bin, and CI must run this test"
	echo "SKIP $(basename "$0"): no rustc in PATH or \$HOME/.cargo/bin"
	exit 0
fi
make --no-print-directory RUSTC="$RUSTC" "$W" >"$TMP/make.out" 2>&1 ||
	fail "building $W with $RUSTC: $(tail -n 20 "$TMP/make.out")"

# check_note BINARY: .note.khbpf is a note section, not allocated (address 0,
# no A flag), holding one khbpf note per span.
check_note() {
	local line flags n
	local -a f
	line=$(readelf -SW "$1" | sed -n 's/^ *\[ *[0-9]*\] //p' | awk '$1 == ".note.khbpf"')
	[ -n "$line" ] || fail "$1 has no .note.khbpf section"
	# Name Type Address Off Size ES [Flg] Lk Inf Al: the flags column is absent when empty.
	read -r -a f <<<"$line"
	[ "${f[1]}" = NOTE ] || fail "$1: .note.khbpf has type ${f[1]}, not NOTE"
	[ "$((16#${f[2]}))" -eq 0 ] || fail "$1: .note.khbpf is loaded at 0x${f[2]}"
	flags=""
	[ "${#f[@]}" -eq 10 ] && flags=${f[6]}
	case "$flags" in *A*) fail "$1: .note.khbpf is allocated (flags $flags)" ;; esac
	n=$(readelf -nW "$1" | grep -cE '^ +khbpf +0x')
	[ "$n" -eq 3 ] || fail "$1 has $n khbpf notes, expected 3"
}

# check_spans DOC TRUTH STRIPPED(0|1): counts equal the program's own, every
# record kept, rs-checksum nested in an rs-request of its thread (3 each),
# rs-request and rs-flush at the top, exclusive = inclusive - children.
check_spans() {
	"$PYTHON" - "$1" "$2" "$3" <<'PY' || fail "spans of $1 differ from the workload's"
import json, sys
d = json.load(open(sys.argv[1]))
want = json.loads(open(sys.argv[2]).read())
stripped = sys.argv[3] == "1"
ok = True
def bad(msg):
    global ok
    ok = False
    print(msg, file=sys.stderr)

got = {m["metric_id"]: m["calls"] for m in d["span_metrics"]}
if got != want:
    bad(f"calls {got}, the workload counted {want}")
probes = {p["metric_id"]: p for p in d["span_probes"]}
if sorted(probes) != sorted(want) or any(p["status"] != "attached" for p in probes.values()):
    bad(f"span_probes: {d['span_probes']}")
# The note's address is the function's first byte: khbpf names the symbol
# there (Rust-mangled), and rs-flush's is the naked entry, not its body.
names = {"rs-checksum": "8checksum17h", "rs-request": "7request17h", "rs-flush": "5flush17h"}
for metric, part in names.items():
    sym = probes.get(metric, {}).get("symbol")
    if stripped and sym != "":
        bad(f"{metric}: symbol {sym!r} in a stripped object")
    if not stripped and (not sym or part not in sym):
        bad(f"{metric}: symbol {sym!r}, expected one containing {part!r}")

spans = d["events"]["spans"]
ev = d["events"]
if len(spans) != sum(want.values()) or ev["dropped_span_events"] or ev["sampled_out_events"]:
    bad(f"{len(spans)} records of {sum(want.values())} calls")
ids = {s["span_id"]: s for s in spans}
kids = {}
for s in spans:
    p = s["parent_span_id"]
    if s["metric_id"] == "rs-checksum":
        parent = ids.get(p.get("value")) if p["status"] == "recorded" else None
        if not parent or parent["metric_id"] != "rs-request" or parent["thread_id"] != s["thread_id"]:
            bad(f"span {s['span_id']} (rs-checksum): parent {p}")
            continue
        if not (parent["start_ns"] <= s["start_ns"] and
                s["start_ns"] + s["inclusive_ns"] <= parent["start_ns"] + parent["inclusive_ns"]):
            bad(f"span {s['span_id']} is not inside its parent {parent['span_id']}")
        kids.setdefault(parent["span_id"], []).append(s)
    elif p["status"] == "recorded":
        bad(f"span {s['span_id']} ({s['metric_id']}) has parent {p['value']}, expected none")
for s in spans:
    ch = kids.get(s["span_id"], [])
    if s["metric_id"] == "rs-request" and len(ch) != 3:
        bad(f"rs-request span {s['span_id']} has {len(ch)} rs-checksum children, expected 3")
    if s["exclusive_ns"] != s["inclusive_ns"] - sum(c["inclusive_ns"] for c in ch):
        bad(f"span {s['span_id']}: exclusive != inclusive - children")
if d["loss"]["span_depth_overflow"]["value"] != 0:
    bad("span depth overflow")
sys.exit(0 if ok else 1)
PY
}

# On disk: a PIE (rustc's default), the notes not allocated, rs-flush's entry
# one 5-byte NOP.
readelf -hW "$W" | grep -qE 'Type: +DYN' || fail "$W is not a PIE"
check_note "$W"
addr=$(nm "$W" | awk '$3 ~ /5flush17h/ {print $1}')
[ -n "$addr" ] || fail "no flush symbol in $W"
objdump -d --start-address="0x$addr" --stop-address="$(printf '0x%x' $((16#$addr + 5)))" "$W" |
	grep -q '0f 1f 44 00 08' || fail "rs-flush does not start with a 5-byte NOP"

expect_exit 0 timeout 60 "$KHBPF" run -o "$TMP/doc.json" -- "$W" --threads 3 --iterations 4
cp "$TMP/out" "$TMP/truth.json"
"$PYTHON" - "$TMP/truth.json" <<'PY' || fail "the workload's own counts are not 12, 36, 12: $(cat "$TMP/truth.json")"
import json, sys
sys.exit(json.load(open(sys.argv[1])) != {"rs-request": 12, "rs-checksum": 36, "rs-flush": 12})
PY
validate "$TMP/doc.json" >/dev/null || fail "schema"
check_spans "$TMP/doc.json" "$TMP/truth.json" 0
json_check "$TMP/doc.json" \
	"len({s['thread_id'] for s in d['events']['spans']}) == 3" \
	"[c['availability'] for c in d['collectors'] if c['collector'] == 'span-probes'] == ['available']"
no_bpf_left

# Stripped: the notes survive strip --strip-all (they are not a symbol table).
cp "$W" "$TMP/rust-spanned-stripped"
strip --strip-all "$TMP/rust-spanned-stripped"
[ -z "$(nm "$TMP/rust-spanned-stripped" 2>/dev/null)" ] || fail "strip left symbols"
check_note "$TMP/rust-spanned-stripped"
expect_exit 0 timeout 60 "$KHBPF" run -o "$TMP/doc2.json" -- "$TMP/rust-spanned-stripped" --threads 2 --iterations 5
cp "$TMP/out" "$TMP/truth2.json"
check_spans "$TMP/doc2.json" "$TMP/truth2.json" 1
no_bpf_left
echo "spans_rust: ok"

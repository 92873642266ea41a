#!/bin/bash
# khbpf list on software nobody here wrote: Debian's PostgreSQL 15,
# CPython 3.11 and libstdc++ ship USDT probes. Each site khbpf lists is the
# one binutils' readelf -n prints (provider, name, address, semaphore,
# arguments), every probe bpftrace lists is there, the annotated workload's
# KHBPF_SPAN notes are listed, --pid reads a running process's objects, and
# bad input gets one line.
. "$(dirname "$0")/common.bash"

PG=/usr/lib/postgresql/15/bin/postgres
PY=/usr/bin/python3.11
CXX=$(readlink -f /usr/lib/x86_64-linux-gnu/libstdc++.so.6)
for f in "$PG" "$PY" "$CXX"; do
	[ -f "$f" ] || fail "$f is missing (tools/install-deps.sh --with-tests installs it)"
done

for f in "$PG" "$PY" "$CXX"; do
	"$KHBPF" list --usdt --json "$f" >"$TMP/list.json" || fail "list --usdt --json $f"
	readelf -n --wide "$f" >"$TMP/readelf.txt" || fail "readelf -n $f"
	"$PYTHON" - "$TMP/list.json" "$TMP/readelf.txt" "$f" <<'PY' || fail "$f: khbpf list and readelf -n differ"
import json, re, sys

d = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
# readelf's stapsdt notes: Provider, Name, Location/Base/Semaphore, Arguments.
want = []
for m in re.finditer(r"Provider: (\S+)\s+Name: (\S+)\s+Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), "
                     r"Semaphore: (0x[0-9a-f]+)\s+Arguments:[ \t]*([^\n]*)", text):
    prov, name, loc, base, sema, args = m.groups()
    want.append((prov, name, int(loc, 16), int(sema, 16), args.strip()))
got = []
(obj,) = d["objects"]
assert obj["usdt_sites_dropped"] == 0
for p in obj["usdt"]:
    assert "error" not in p, p
    for s in p["sites"]:
        got.append((p["provider"], p["name"], int(s["address"], 16),
                    int(s.get("semaphore", "0x0"), 16), s["args"]))
        assert s["nr_args"] == len(s["args"].split()), s
if sorted(got) != sorted(want) or not want:
    print(f"{sys.argv[3]}: {len(got)} sites listed, readelf has {len(want)}", file=sys.stderr)
    print(sorted(set(got) ^ set(want))[:5], file=sys.stderr)
    sys.exit(1)
print(f"list: {sys.argv[3]}: {len({(g[0], g[1]) for g in got})} probes at {len(got)} sites, as readelf -n")
PY
done

# Every probe bpftrace lists (bpftrace reads them through bcc).
bpftrace -l "usdt:$PG:*" | sed 's/^usdt:[^:]*:\(.*\)$/\1/' | sort >"$TMP/bpftrace.txt"
"$KHBPF" list --usdt --json "$PG" | "$PYTHON" -c '
import json, sys
for p in json.load(sys.stdin)["objects"][0]["usdt"]:
    print(p["provider"] + ":" + p["name"])' | sort >"$TMP/khbpf.txt"
[ -s "$TMP/bpftrace.txt" ] || fail "bpftrace -l listed nothing"
diff "$TMP/bpftrace.txt" "$TMP/khbpf.txt" >&2 || fail "bpftrace -l and khbpf list differ on postgres"

# Annotations: the span workload's notes, each metric once per function.
"$KHBPF" list --json build/workloads/spanned >"$TMP/notes.json" || fail "list spanned"
json_check "$TMP/notes.json" \
	"sorted(a['metric'] for a in d['objects'][0]['annotations']) == sorted(['stage-inner', 'stage-middle', 'stage-outer', 'stage-recurse', 'stage-sib-a', 'stage-sib-b', 'stage-sleep', 'stage-spin', 'stage-migrate', 'stage-hold'])" \
	"d['objects'][0]['usdt'] == []"

# --pid: a running interpreter's objects, through /proc/PID/root.
"$PY" -c 'import sys; sys.stdin.read()' </dev/zero &
# A process of our own, stopped on every path.
PYPID=$!
trap 'kill "$PYPID" 2>/dev/null; wait "$PYPID" 2>/dev/null; keep_failed' EXIT
for _ in $(seq 50); do grep -q python3.11 "/proc/$PYPID/maps" 2>/dev/null && break; sleep 0.1; done
"$KHBPF" list --usdt --pid "$PYPID" >"$TMP/pid.txt" || fail "list --pid"
grep -q "^$PY\$" "$TMP/pid.txt" || fail "list --pid does not name $PY: $(cat "$TMP/pid.txt")"
grep -q "python:gc__start  1 site, semaphore" "$TMP/pid.txt" || fail "list --pid: no gc__start"
kill "$PYPID"
wait "$PYPID" 2>/dev/null

expect_exit 1 "$KHBPF" list "$TMP/no-such-file"
expect_one_line_error
expect_exit 1 "$KHBPF" list /etc/passwd
expect_one_line_error
expect_exit 2 "$KHBPF" list
expect_one_line_error
expect_exit 2 "$KHBPF" list --pid 1 "$PG"
expect_one_line_error
echo "list_usdt: ok"

#!/bin/bash
# The bad-input table beyond collect_errors.sh (which has the nonexistent
# pid, kernel thread, zombie, CMD not found / not executable, --duration 0
# and the usage errors of attach and run). Each row ends either with one
# stderr line "khbpf CMD: ..." naming the thing, the right exit status, no
# output file and nothing left loaded, or with a valid document that says
# what it could not do (a gap with its reason):
#  - a target that exits while khbpf attaches; a target in another PID
#    namespace (by its host pid), and khbpf itself inside one;
#  - a directory, a non-ELF file and truncated ELF files as CMD or --span
#    object; an unknown symbol; malformed .note.khbpf notes;
#  - no capabilities; kernel BTF hidden; VMLINUX_BTF at run time; tracefs
#    not mounted (private mount namespaces: the host is not touched);
#  - every numeric option of attach, run and serve with -1, 0, 2^64,
#    99999999999999999999, 1e3, '', ' 5', 0x10 and 5x; serve's --labels
#    words and --container-names files it cannot use;
#  - SIGHUP/SIGINT/SIGTERM while khbpf attaches and while it writes; SIGHUP
#    in the middle of run;
#  - the command started by run inherits none of khbpf's descriptors.
#
# Every case runs in a subshell, so one failed expectation does not hide the
# others; the script fails if any case failed.
. "$(dirname "$0")/common.bash"
# Each case starts with no document at $OUT.
case_setup() { rm -f "$OUT"; }
require_root "attach/run load BPF, and the namespaces need root"
exec </dev/null
for tool in unshare setpriv objcopy; do
	command -v "$tool" >/dev/null || fail "$tool is required (util-linux, binutils)"
done
OUT="$TMP/x.json"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
SPANNED=build/workloads/spanned
FAULTS=build/workloads/faults
chmod 0755 "$TMP"

no_output() {
	[ ! -e "$OUT" ] || fail "$OUT was created"
	! compgen -G "$TMP/.khbpf-out.*" >/dev/null || fail "temporary output left in $TMP"
}

# one_error CMD: exactly one stderr line, "khbpf CMD: ...".
one_error() {
	expect_one_line_error
	grep -q "^khbpf $1: " "$TMP/err" || fail "stderr does not start with 'khbpf $1: ': $(cat "$TMP/err")"
}

valid() { # DOC
	[ -s "$1" ] || fail "no document at $1"
	validate "$1" >/dev/null || fail "schema: $1"
	! compgen -G "$(dirname "$1")/.khbpf-out.*" >/dev/null || fail "temporary output left"
}

sleep 600 &
LIVE=$!
trap 'rc=$?; kill "$LIVE" 2>/dev/null; wait "$LIVE" 2>/dev/null; keep_failed $rc' EXIT

# --- targets -----------------------------------------------------------

# Target sets named wrong: one line each, exit 1 (2 for usage), no -o file.
set_targets_case() {
	local gone tid cgroot
	# A pid that is gone: a child of ours, reaped.
	sh -c 'exit 0' &
	gone=$!
	wait "$gone"
	expect_exit 1 "$KHBPF" attach --pid "$gone" -d 1 -o "$OUT"
	one_error attach
	grep -q "pid $gone" "$TMP/err" || fail "the error does not name pid $gone: $(cat "$TMP/err")"
	no_output
	# A thread id given as --pid: named as the thread of its process.
	"$PYTHON" -c 'import threading, time
threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
time.sleep(30)' &
	local fpid=$!
	tid=""
	for _ in $(seq 100); do
		tid=$(ls /proc/"$fpid"/task 2>/dev/null | grep -vx "$fpid" | head -n 1)
		[ -n "$tid" ] && break
		sleep 0.05
	done
	if [ -n "$tid" ]; then
		expect_exit 1 "$KHBPF" attach --pid "$tid" -d 1 -o "$OUT"
		one_error attach
		grep -q "thread of process $fpid; give --pid $fpid" "$TMP/err" ||
			fail "a thread id as --pid: $(cat "$TMP/err")"
		no_output
	fi
	kill "$fpid" 2>/dev/null
	wait "$fpid" 2>/dev/null
	[ -n "$tid" ] || fail "the workload never had a second thread"
	# The same pid twice, --pid with --cgroup, --children with --cgroup.
	expect_exit 1 "$KHBPF" attach --pid "$LIVE" --pid "$LIVE" -d 1 -o "$OUT"
	one_error attach
	no_output
	expect_exit 2 "$KHBPF" attach --pid "$LIVE" --cgroup / -d 1 -o "$OUT"
	one_error attach
	expect_exit 2 "$KHBPF" attach --cgroup / --children -d 1 -o "$OUT"
	one_error attach
	grep -q -- "--children applies to --pid" "$TMP/err" || fail "--children --cgroup: $(cat "$TMP/err")"
	expect_exit 2 "$KHBPF" attach --cgroup relative/path -d 1 -o "$OUT"
	one_error attach
	expect_exit 2 "$KHBPF" run --children -- true
	one_error run
	expect_exit 2 "$KHBPF" serve --children
	one_error serve
	# --span-cause: a cause that is not one, no --blocked to name.
	expect_exit 2 "$KHBPF" run --blocked --span-cause wait=fault -o "$OUT" -- true
	one_error run
	grep -q -- "--span-cause 'wait=fault': expected METRIC=lock" "$TMP/err" || fail "--span-cause fault: $(cat "$TMP/err")"
	expect_exit 2 "$KHBPF" attach --pid "$LIVE" --span-cause wait=lock -d 1 -o "$OUT"
	one_error attach
	grep -q -- "add --blocked" "$TMP/err" || fail "--span-cause without --blocked: $(cat "$TMP/err")"
	no_output
	expect_exit 2 "$KHBPF" serve --span-cause wait=lock
	one_error serve
	grep -q -- "add --blocked" "$TMP/err" || fail "serve --span-cause without --blocked: $(cat "$TMP/err")"
	expect_exit 2 "$KHBPF" serve --blocked --span-cause wait=lock
	one_error serve
	grep -q -- "needs a --span or --usdt-span" "$TMP/err" || fail "serve --span-cause without spans: $(cat "$TMP/err")"
	# A cgroup that does not exist; a file, not a cgroup directory.
	expect_exit 1 "$KHBPF" attach --cgroup /khbpf-no-such-cgroup-$$ -d 1 -o "$OUT"
	one_error attach
	grep -q "no such cgroup" "$TMP/err" || fail "missing cgroup: $(cat "$TMP/err")"
	no_output
	cgroot=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
	if [ -n "$cgroot" ] && [ -e "$cgroot/cgroup.procs" ]; then
		expect_exit 1 "$KHBPF" attach --cgroup /cgroup.procs -d 1 -o "$OUT"
		one_error attach
		no_output
	fi
	# No cgroup v2 mounted: what to do about it.
	expect_exit 1 unshare -m sh -c "for m in \$(awk '\$9 == \"cgroup2\" {print \$5}' /proc/self/mountinfo); do umount -l \$m; done; exec $KHBPF attach --cgroup /x -d 1 -o $OUT"
	one_error attach
	grep -q "needs cgroup v2" "$TMP/err" || fail "no cgroup v2: $(cat "$TMP/err")"
	no_output
}

# The target exits at some point while khbpf checks it, opens its pidfd,
# loads and takes the baseline (~0.1 s here): a one-line error naming it,
# or a document ended by its exit. Never anything else.
exits_during_attach_case() {
	local d tgt rc errors=0 docs=0
	for d in 0 0.005 0.02 0.05 0.08 0.12 0.2 0.3; do
		rm -f "$OUT"
		sleep "$d" &
		tgt=$!
		timeout -k 5 30 "$KHBPF" attach --pid "$tgt" --duration 5 -o "$OUT" >"$TMP/out" 2>"$TMP/err"
		rc=$?
		wait "$tgt"
		case $rc in
		1)
			one_error attach
			grep -q -- "--pid $tgt" "$TMP/err" || fail "the error does not name pid $tgt: $(cat "$TMP/err")"
			no_output
			errors=$((errors + 1))
			;;
		0)
			valid "$OUT"
			json_check "$OUT" "d['window']['end_reason'] == 'target-exit'" \
				"d['target']['pid'] == $tgt" "d['window']['wall_ns'] < 4 * 10**9"
			docs=$((docs + 1))
			;;
		*) fail "attach to pid $tgt exiting after ${d}s: exit $rc: $(cat "$TMP/err")" ;;
		esac
		no_bpf_left
	done
	echo "  target exiting during attach: $errors refused, $docs documents"
}

# A process in its own PID namespace (a container), watched by its host pid:
# the kernel's ids are the host's, and so are the document's.
other_pidns_case() {
	local inner
	rm -f "$TMP/ns.in" "$TMP/ns.out"
	mkfifo "$TMP/ns.in"
	unshare --pid --fork --mount-proc "$SPANNED" --threads 2 --iterations 5 --wait \
		<"$TMP/ns.in" >"$TMP/ns.out" &
	outer=$!
	trap 'kill -9 $outer $host 2>/dev/null' EXIT
	exec 7>"$TMP/ns.in"
	wait_for ready "$TMP/ns.out" || fail "the namespaced workload did not start"
	host=$(cat /proc/"$outer"/task/*/children | tr -s ' ' '\n' | grep . | head -n 1)
	inner=$(awk '/^NSpid:/ {print $NF}' /proc/"$host"/status)
	[ "$inner" != "$host" ] || fail "pid $host is not in a PID namespace of its own"
	: >"$TMP/err" # fresh: wait_for must not read a line of an earlier start
	timeout -k 5 30 "$KHBPF" attach --pid "$host" --duration 30 -o "$OUT" 2>"$TMP/err" &
	kh=$!
	wait_for watching "$TMP/err" || fail "attach did not start: $(cat "$TMP/err")"
	printf g >&7
	exec 7>&-
	wait "$kh" || fail "attach by host pid failed: $(cat "$TMP/err")"
	wait "$outer" || fail "the workload failed"
	valid "$OUT"
	"$PYTHON" - "$OUT" "$(grep '^{' "$TMP/ns.out")" "$host" <<'PY' || fail "attach into a PID namespace"
import json, sys
d = json.load(open(sys.argv[1])); truth = json.loads(sys.argv[2]); host = int(sys.argv[3])
assert d["target"]["pid"] == host, d["target"]
assert d["window"]["end_reason"] == "target-exit"
assert [c["availability"] for c in d["collectors"] if c["collector"] == "scheduler-activity"] == ["available"]
tids = sorted(t["thread_id"] for t in d["threads"])
# Host ids: the leader's is the host pid (its own namespace calls it 1).
assert tids and tids[0] == host and len(tids) == 3, (tids, d["window"],
    {k: v["value"] for k, v in d["loss"].items() if isinstance(v, dict) and v.get("value")})
got = {m["metric_id"]: m["calls"] for m in d["span_metrics"]}
assert got == truth, (got, truth)
PY
	no_bpf_left
}

# khbpf itself inside a PID namespace: BPF names tasks by host ids, which it
# cannot map; it says so and reads /proc instead (ids in its own view).
khbpf_in_pidns_case() {
	expect_exit 0 timeout -k 5 60 unshare --pid --fork --mount-proc \
		"$KHBPF" run -o "$OUT" -- "$FAULTS" threads 3
	valid "$OUT"
	"$PYTHON" - "$OUT" "$(grep '^{' "$TMP/out")" <<'PY' || fail "khbpf in a PID namespace"
import json, sys
d = json.load(open(sys.argv[1])); truth = json.loads(sys.argv[2])
cap = [c for c in d["collectors"] if c["collector"] == "scheduler-activity"][0]
assert cap["availability"] == "unsupported" and "PID namespace" in cap["detail"], cap
assert d["target"]["pid"] == truth["tids"][0] < 10, (d["target"], truth)
assert [t["thread_id"] for t in d["threads"]] == [truth["tids"][0]], d["threads"]
assert d["threads"][0]["on_cpu_ns"]["source"] == "proc-pid-schedstat"
assert d["target"]["exit"] == {"status": "recorded", "value": {"code": 0}}
PY
	no_bpf_left
}

# --- the command and span objects ---------------------------------------

dir_cmd_case() {
	expect_exit 126 timeout -k 5 20 "$KHBPF" run -o "$OUT" -- "$TMP"
	one_error run
	grep -q "$TMP" "$TMP/err" || fail "the error does not name $TMP"
	no_output
	no_bpf_left
}

# A file with the exec bit that is not ELF and has no #!: execvp(3) runs it
# with /bin/sh, as a shell would; khbpf reports the script's status.
non_elf_cmd_case() {
	printf 'exit 3\n' >"$TMP/script"
	chmod +x "$TMP/script"
	expect_exit 3 timeout -k 5 20 "$KHBPF" run -o "$OUT" -- "$TMP/script"
	valid "$OUT"
	json_check "$OUT" "d['target']['exit'] == {'status': 'recorded', 'value': {'code': 3}}"
	no_bpf_left
}

# An ELF cut short: the kernel refuses it (ENOEXEC; unlike execvp(3), khbpf
# does not hand a binary to /bin/sh) and khbpf exits 126 with one line naming
# the file and the exec format error, or the kernel starts it and it dies of
# a signal, which the document records.
truncated_cmd_case() {
	local n rc
	for n in 64 200 1000; do
		head -c "$n" "$SPANNED" >"$TMP/trunc"
		chmod +x "$TMP/trunc"
		rm -f "$OUT"
		timeout -k 5 20 "$KHBPF" run -o "$OUT" -- "$TMP/trunc" >"$TMP/out" 2>"$TMP/err"
		rc=$?
		if [ "$rc" -eq 126 ]; then
			one_error run
			grep -q "$TMP/trunc" "$TMP/err" || fail "the error does not name the file"
			grep -q "Exec format error" "$TMP/err" || fail "the error does not say why: $(cat "$TMP/err")"
			no_output
		elif [ "$rc" -gt 128 ]; then
			valid "$OUT"
			json_check "$OUT" "d['target']['exit'] == {'status': 'recorded', 'value': {'signal': $((rc - 128))}}"
		else
			fail "ELF cut at $n bytes: exit $rc (run some other way, e.g. by /bin/sh): $(cat "$TMP/err")"
		fi
		echo "  ELF cut at $n bytes as CMD: exit $rc"
	done
	no_bpf_left
}

# An executable whose tail (symbols, the span notes) is cut off runs; the
# span collector says why it found nothing.
truncated_spans_case() {
	head -c 30000 "$SPANNED" >"$TMP/trunc2"
	chmod +x "$TMP/trunc2"
	expect_exit 0 timeout -k 5 60 "$KHBPF" run -o "$OUT" -- "$TMP/trunc2" --threads 1 --iterations 1
	valid "$OUT"
	json_check "$OUT" \
		"any(p['status'] == 'failed' and 'cut short' in p['reason'] for p in d['span_probes'])" \
		"[c['availability'] for c in d['collectors'] if c['collector'] == 'span-probes'] == ['unavailable']"
	no_bpf_left
}

# --span on objects that cannot hold the symbol: each site failed with a
# reason naming it; the good one attaches. A file that is not there, or a
# symbol its object does not have, is a mistake instead: refused before the
# command runs (exit 2, one line naming it, no document).
span_objects_case() {
	printf 'not an elf\n' >"$TMP/notelf"
	head -c 1000 "$SPANNED" >"$TMP/trunc3"
	expect_exit 0 timeout -k 5 60 "$KHBPF" run --no-annotations \
		--span "$TMP/notelf:stage_inner" --span "$TMP/trunc3:stage_inner" \
		--span 'stage_sib_a=sib' -o "$OUT" -- "$SPANNED" --threads 1 --iterations 2
	valid "$OUT"
	"$PYTHON" - "$OUT" "$TMP" <<'PY' || fail "--span on bad objects"
import json, sys
d = json.load(open(sys.argv[1])); tmp = sys.argv[2]
why = {(p["object"].rsplit("/", 1)[-1], p["symbol"]): (p["status"], p.get("reason", "")) for p in d["span_probes"]}
def failed(key, *words):
    st, reason = why[key]
    assert st == "failed" and all(w in reason for w in words), (key, st, reason)
failed(("notelf", "stage_inner"), "not an ELF file", f"{tmp}/notelf")
failed(("trunc3", "stage_inner"), "cut short", f"{tmp}/trunc3")
assert [(m["metric_id"], m["calls"]) for m in d["span_metrics"]] == [("sib", 2)], d["span_metrics"]
PY
	rm -f "$OUT"
	expect_exit 2 timeout -k 5 60 "$KHBPF" run --no-annotations --span /nonexistent/libx.so:f \
		--span 'stage_sib_a=sib' -o "$OUT" -- "$SPANNED" --threads 1 --iterations 2
	one_error run
	grep -q "/nonexistent/libx.so.*No such file" "$TMP/err" || fail "no such OBJ: $(cat "$TMP/err")"
	[ ! -s "$TMP/out" ] || fail "the command ran: $(cat "$TMP/out")"
	no_output
	# The object's .symtab names every function. (In a stripped one without
	# a debug file a static function may be there unnamed: that site fails,
	# saying so, as span_debugfile.sh has it.)
	expect_exit 2 timeout -k 5 60 "$KHBPF" run --no-annotations \
		--span "$PWD/$SPANNED:khbpf_no_such_symbol" -o "$OUT" -- "$SPANNED" --threads 1 --iterations 2
	one_error run
	grep -q "no function of $PWD/$SPANNED matches 'khbpf_no_such_symbol'" "$TMP/err" ||
		fail "unknown symbol: $(cat "$TMP/err")"
	[ ! -s "$TMP/out" ] || fail "the command ran: $(cat "$TMP/out")"
	no_output
	no_bpf_left
}

# serve's span requests: each must name its OBJ; one that names nothing
# the host has, or a symbol the file lacks, stops serve before it loads
# anything; all usage errors (2), in one line naming it; --max-span-series
# below 16 is refused.
serve_spans_case() {
	expect_exit 2 "$KHBPF" serve --span malloc --ndjson "$OUT"
	one_error serve
	grep -q "names no OBJ" "$TMP/err" || fail "serve --span without OBJ: $(cat "$TMP/err")"
	expect_exit 2 "$KHBPF" serve --key query=arg0:str --ndjson "$OUT"
	one_error serve
	expect_exit 2 "$KHBPF" serve --max-span-series 15 --ndjson "$OUT"
	one_error serve
	expect_exit 2 timeout -k 5 30 "$KHBPF" serve --listen 127.0.0.1:0 --span libkhbpf-none.so:f \
		--ndjson "$OUT"
	one_error serve
	grep -q "no library 'libkhbpf-none.so'" "$TMP/err" || fail "serve, unknown library: $(cat "$TMP/err")"
	expect_exit 2 timeout -k 5 30 "$KHBPF" serve --listen 127.0.0.1:0 --span relative/lib.so:f \
		--ndjson "$OUT"
	one_error serve
	grep -q "give an absolute path" "$TMP/err" || fail "serve, relative OBJ: $(cat "$TMP/err")"
	expect_exit 2 timeout -k 5 30 "$KHBPF" serve --listen 127.0.0.1:0 \
		--span "$PWD/$SPANNED:khbpf_no_such_symbol" --ndjson "$OUT"
	one_error serve
	grep -q "khbpf_no_such_symbol" "$TMP/err" || fail "serve, unknown symbol: $(cat "$TMP/err")"
	no_output
	no_bpf_left
}

# Malformed .note.khbpf notes (the workload's own section, one note broken
# per copy): that note's site fails with its reason; the others attach and
# count exactly what the workload counted.
malformed_note_case() {
	objcopy --dump-section .note.khbpf="$TMP/note.bin" "$SPANNED" || fail "objcopy"
	"$PYTHON" - "$TMP" <<'PY' || fail "cannot make the broken notes"
import struct, sys
tmp = sys.argv[1]
b = bytes(open(f"{tmp}/note.bin", "rb").read())
notes, off = [], 0
while off + 12 <= len(b):
    namesz, descsz, _ = struct.unpack_from("<III", b, off)
    desc = off + 12 + ((namesz + 3) & ~3)
    notes.append((off, desc, descsz))
    off = desc + ((descsz + 3) & ~3)
assert len(notes) == 10, notes
def variant(name, edit):
    c = bytearray(b)
    edit(c)
    open(f"{tmp}/note-{name}.bin", "wb").write(c)
variant("flags", lambda c: struct.pack_into("<I", c, notes[0][1] + 8, 1))
variant("metric", lambda c: c.__setitem__(notes[1][1] + 12, ord("S")))
variant("address", lambda c: struct.pack_into("<Q", c, notes[2][1], 0))
def no_nul(c):
    _, desc, descsz = notes[4]
    c[desc + 12:desc + descsz] = b"a" * (descsz - 12)
variant("nonul", no_nul)
variant("descsz", lambda c: struct.pack_into("<I", c, notes[9][0] + 4, 0xffffff00))
PY
	local v want
	for v in flags:"flags 0x1" metric:"not kebab-case" address:"outside every executable segment" \
		nonul:"without its NUL" descsz:"cut short"; do
		want=${v#*:}
		v=${v%%:*}
		objcopy --update-section .note.khbpf="$TMP/note-$v.bin" "$SPANNED" "$TMP/spanned-$v" ||
			fail "objcopy --update-section"
		expect_exit 0 timeout -k 5 60 "$KHBPF" run -o "$OUT" -- "$TMP/spanned-$v" --threads 1 --iterations 2
		valid "$OUT"
		"$PYTHON" - "$OUT" "$(grep '^{' "$TMP/out")" "$want" "$v" <<'PY' || fail "malformed note ($v)"
import json, sys
d = json.load(open(sys.argv[1])); truth = json.loads(sys.argv[2]); want, v = sys.argv[3], sys.argv[4]
bad = [p for p in d["span_probes"] if p["status"] == "failed"]
assert len(bad) == 1 and want in bad[0]["reason"], bad
assert sum(p["status"] == "attached" for p in d["span_probes"]) == 9
got = {m["metric_id"]: m["calls"] for m in d["span_metrics"]}
# Every metric khbpf counts, it counts exactly; the broken note's is absent.
assert len(got) == 9 and all(truth[k] == n for k, n in got.items()), (got, truth)
PY
	done
	no_bpf_left
}

# --- the host -------------------------------------------------------------

# No capabilities: attach to root's process and serve. attach falls back to
# /proc and says which capabilities to grant; serve cannot, in one line.
no_permission_case() {
	expect_exit 0 timeout -k 5 30 "${NOBODY[@]}" "$KHBPF" attach --pid "$LIVE" --duration 0.3 --json
	! grep -q 'libbpf' "$TMP/err" || fail "libbpf's messages without -v: $(cat "$TMP/err")"
	validate "$TMP/out" >/dev/null || fail "schema"
	json_check "$TMP/out" \
		"[c['availability'] for c in d['collectors'] if c['collector'] == 'scheduler-activity'] == ['permission-denied']" \
		"'CAP_BPF' in [c['detail'] for c in d['collectors'] if c['collector'] == 'scheduler-activity'][0]" \
		"[t['thread_id'] for t in d['threads']] == [$LIVE]"
	expect_exit 1 timeout -k 5 30 "${NOBODY[@]}" "$KHBPF" serve --listen 127.0.0.1:0
	one_error serve
	grep -q 'CAP_BPF' "$TMP/err" || fail "serve's error does not name the capability"
	no_bpf_left
}

# Kernel BTF hidden (tmpfs over /sys/kernel/btf, in a private mount
# namespace): /proc fallback with the reason; probe says so too.
no_btf_case() {
	expect_exit 0 timeout -k 5 60 unshare --mount --propagation private sh -c \
		'mount -t tmpfs none /sys/kernel/btf && exec "$@"' sh "$KHBPF" run -o "$OUT" -- sh -c 'sleep 0.05'
	valid "$OUT"
	json_check "$OUT" \
		"[c['availability'] for c in d['collectors'] if c['collector'] == 'scheduler-activity'] == ['unsupported']" \
		"'kernel BTF missing' in [c['detail'] for c in d['collectors'] if c['collector'] == 'scheduler-activity'][0]" \
		"d['threads'][0]['on_cpu_ns']['source'] == 'proc-pid-schedstat'" \
		"d['target']['exit'] == {'status': 'recorded', 'value': {'code': 0}}"
	expect_exit 0 timeout -k 5 60 unshare --mount --propagation private sh -c \
		'mount -t tmpfs none /sys/kernel/btf && exec "$@"' sh "$KHBPF" probe --json
	json_check "$TMP/out" \
		"[c['result'] for c in d['checks'] if c['name'] == 'kernel-btf'] == ['failed']"
	[ -r /sys/kernel/btf/vmlinux ] || fail "the host lost /sys/kernel/btf/vmlinux"
	# VMLINUX_BTF only tells the build where BTF is: khbpf ignores it.
	expect_exit 0 timeout -k 5 60 env VMLINUX_BTF=/nonexistent "$KHBPF" run -o "$OUT" -- true
	json_check "$OUT" \
		"[c['availability'] for c in d['collectors'] if c['collector'] == 'scheduler-activity'] == ['available']"
	no_bpf_left
}

# tracefs not mounted anywhere (private mount namespace): tp_btf programs
# and uprobes (perf_event_open with the uprobe PMU) do not need it.
no_tracefs_case() {
	expect_exit 0 timeout -k 5 60 unshare --mount --propagation private sh -c '
		for m in /sys/kernel/debug/tracing /sys/kernel/tracing /sys/kernel/debug; do
			umount "$m" 2>/dev/null
		done
		! grep -qw tracefs /proc/self/mounts || exit 99
		exec "$@"' sh "$KHBPF" run -o "$OUT" -- "$SPANNED" --threads 2 --iterations 2
	valid "$OUT"
	"$PYTHON" - "$OUT" "$(grep '^{' "$TMP/out")" <<'PY' || fail "without tracefs"
import json, sys
d = json.load(open(sys.argv[1])); truth = json.loads(sys.argv[2])
av = {c["collector"]: c["availability"] for c in d["collectors"]}
assert av["scheduler-activity"] == "available" and av["span-probes"] == "available", av
assert {m["metric_id"]: m["calls"] for m in d["span_metrics"]} == truth
assert len(d["threads"]) == 3
PY
	no_bpf_left
}

# --- numeric options --------------------------------------------------------

# Every numeric option with values it must refuse: exit 2, one line naming
# the option, nothing written, nothing started.
numeric_case() { # COMMAND OPTION [FIXED ARGS...]
	local cmd=$1 opt=$2 v
	shift 2
	for v in -1 0 18446744073709551616 99999999999999999999 1e3 '' ' 5' 0x10 5x; do
		rm -f "$OUT" "$TMP/ran"
		case $cmd in
		attach) expect_exit 2 timeout -k 5 20 "$KHBPF" attach "$@" "$opt" "$v" -o "$OUT" ;;
		run) expect_exit 2 timeout -k 5 20 "$KHBPF" run "$opt" "$v" -o "$OUT" -- touch "$TMP/ran" ;;
		serve) expect_exit 2 timeout -k 5 20 "$KHBPF" serve "$@" "$opt" "$v" --ndjson "$OUT" ;;
		esac
		one_error "$cmd"
		grep -q -- "$opt" "$TMP/err" || fail "'$cmd $opt \"$v\"': the error does not name $opt: $(cat "$TMP/err")"
		[ ! -s "$TMP/out" ] || fail "'$cmd $opt \"$v\"' wrote to stdout"
		[ ! -e "$TMP/ran" ] || fail "'run $opt \"$v\"' started the command"
		no_output
	done
	no_bpf_left
}

# --span-buffer: a power of two from 64K to 1G, nothing else.
span_buffer_case() {
	local v
	for v in 3M 32K 2G 1M5 1MB 65535; do
		rm -f "$OUT" "$TMP/ran"
		expect_exit 2 timeout -k 5 20 "$KHBPF" run --span-buffer "$v" -o "$OUT" -- touch "$TMP/ran"
		one_error run
		grep -q -- "--span-buffer '$v': expected a power of two" "$TMP/err" ||
			fail "--span-buffer $v: $(cat "$TMP/err")"
		[ ! -e "$TMP/ran" ] || fail "'run --span-buffer $v' started the command"
		no_output
	done
	no_bpf_left
}

# serve --listen: the port is a number too (0 is valid: any free port).
listen_case() {
	local v
	for v in -1 65536 18446744073709551616 99999999999999999999 1e3 '' ' 5' 0x10 5x; do
		expect_exit 2 timeout -k 5 20 "$KHBPF" serve --listen "127.0.0.1:$v"
		one_error serve
		grep -q -- '--listen' "$TMP/err" || fail "the error does not name --listen: $(cat "$TMP/err")"
	done
	no_bpf_left
}

# serve --labels and --container-names: a bad word or combination is a usage
# error (2); a names file that cannot be used stops serve (1) before anything
# loads. One line each, naming the option (and the file).
labels_case() {
	local v id=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
	for v in '' , unit, ,pod pods Unit 'unit container' unit,,pod; do
		expect_exit 2 timeout -k 5 20 "$KHBPF" serve --labels "$v" --ndjson "$OUT"
		one_error serve
		grep -q -- '--labels' "$TMP/err" || fail "the error does not name --labels: $(cat "$TMP/err")"
		no_output
	done
	expect_exit 2 timeout -k 5 20 "$KHBPF" serve --by process --labels unit
	one_error serve
	grep -q -- '--labels needs --by cgroup' "$TMP/err" || fail "--by process --labels: $(cat "$TMP/err")"
	expect_exit 2 timeout -k 5 20 "$KHBPF" serve --labels unit,pod --container-names "$TMP/names.json"
	one_error serve
	grep -q -- '--container-names needs --labels container' "$TMP/err" || fail "$(cat "$TMP/err")"
	mkdir -p "$TMP/names.dir"
	printf '' >"$TMP/names.empty"
	printf '{"%s": "web"' "$id" >"$TMP/names.cut"
	printf '{"web": "%s"}' "$id" >"$TMP/names.swapped"
	printf '{"%s": 5}' "$id" >"$TMP/names.number"
	for v in "$TMP/names.none" "$TMP/names.dir" "$TMP/names.empty" "$TMP/names.cut" \
		"$TMP/names.swapped" "$TMP/names.number"; do
		expect_exit 1 timeout -k 5 20 "$KHBPF" serve --labels container --container-names "$v" \
			--ndjson "$OUT"
		one_error serve
		grep -q -- "--container-names '$v': .*; give a readable file holding a JSON object" \
			"$TMP/err" || fail "the error does not name --container-names '$v': $(cat "$TMP/err")"
		no_output
	done
	no_bpf_left
}

# --- signals ----------------------------------------------------------------

# A signal while attach loads and takes its baseline: either it kills khbpf
# before its handlers exist (128+SIG, nothing written), or the window ends at
# once with a complete document (end_reason signal). Delays cover the whole
# attach phase (~0.1-0.2 s here).
signal_attach_phase_case() { # SIG
	local sig=$1 num d kh rc early=0 docs=0
	num=$(kill -l "$sig")
	# Job control: without it bash starts background commands with SIGINT
	# ignored, and an ignored SIGINT before khbpf blocks it is simply lost.
	set -m
	for d in 0 0.01 0.03 0.06 0.1 0.15 0.25; do
		rm -f "$OUT"
		: >"$TMP/err" # fresh: wait_for must not read a line of an earlier start
		"$KHBPF" attach --pid "$LIVE" --duration 20 -o "$OUT" >"$TMP/out" 2>"$TMP/err" &
		kh=$!
		sleep "$d"
		kill -"$sig" "$kh"
		{ wait "$kh"; } 2>/dev/null
		rc=$?
		if [ "$rc" -eq $((128 + num)) ]; then
			no_output
			early=$((early + 1))
		elif [ "$rc" -eq 0 ]; then
			valid "$OUT"
			json_check "$OUT" "d['window']['end_reason'] == 'signal'" "d['window']['wall_ns'] < 5 * 10**9"
			docs=$((docs + 1))
		else
			fail "SIG$sig after ${d}s: exit $rc: $(cat "$TMP/err")"
		fi
		no_bpf_left
	done
	echo "  SIG$sig while attaching: $early before the handlers, $docs documents"
}

# run: SIGHUP while the collector loads (the command is held until it is
# attached): passed to the command once it runs, or fatal before the
# handlers exist. The command never runs unwatched.
signal_run_phase_case() {
	local d kh rc
	for d in 0 0.02 0.05 0.1 0.2; do
		rm -f "$OUT"
		: >"$TMP/err" # fresh: wait_for must not read a line of an earlier start
		"$KHBPF" run -o "$OUT" -- sleep "20.$$" >"$TMP/out" 2>"$TMP/err" &
		kh=$!
		sleep "$d"
		kill -HUP "$kh"
		{ wait "$kh"; } 2>/dev/null
		rc=$?
		[ "$rc" -eq 129 ] || fail "run, SIGHUP after ${d}s: exit $rc, expected 129: $(cat "$TMP/err")"
		if [ -e "$OUT" ]; then
			valid "$OUT"
			json_check "$OUT" "d['target']['exit'] == {'status': 'recorded', 'value': {'signal': 1}}"
		fi
		! pgrep -f "sleep 20.$$" >/dev/null || fail "the command outlived khbpf"
		no_bpf_left
	done
}

# run, in the middle: SIGHUP is passed to the command, which dies of it.
sighup_run_case() {
	local kh
	: >"$TMP/err" # fresh: wait_for must not read a line of an earlier start
	"$KHBPF" run -o "$OUT" -- sleep 20 >"$TMP/out" 2>"$TMP/err" &
	kh=$!
	wait_for watching "$TMP/err" || fail "run did not start"
	sleep 0.2
	kill -HUP "$kh"
	wait "$kh"
	[ $? -eq 129 ] || fail "run: SIGHUP mid-run: not 129: $(cat "$TMP/err")"
	valid "$OUT"
	json_check "$OUT" "d['window']['end_reason'] == 'target-exit'" \
		"d['target']['exit'] == {'status': 'recorded', 'value': {'signal': 1}}"
	no_bpf_left
}

# Signals after the target's exit, while khbpf reads the window's end and
# builds and writes the document (10001 threads: about a second here):
# ignored; the document is whole, khbpf exits 0.
signal_write_case() {
	local tgt kh n=0
	rm -f "$TMP/t.in" "$TMP/t.out" "$OUT"
	mkfifo "$TMP/t.in"
	"$FAULTS" threads 10000 --wait <"$TMP/t.in" >"$TMP/t.out" &
	tgt=$!
	exec 7>"$TMP/t.in"
	wait_for ready "$TMP/t.out" || fail "faults did not start"
	: >"$TMP/err" # fresh: wait_for must not read a line of an earlier start
	"$KHBPF" attach --pid "$tgt" --duration 60 -o "$OUT" 2>"$TMP/err" &
	kh=$!
	wait_for watching "$TMP/err" || fail "attach did not start"
	printf g >&7
	exec 7>&-
	wait "$tgt" || fail "faults failed"
	while kill -0 "$kh" 2>/dev/null; do
		kill -TERM "$kh" 2>/dev/null && n=$((n + 1))
		kill -HUP "$kh" 2>/dev/null
		kill -INT "$kh" 2>/dev/null
		sleep 0.05
	done
	wait "$kh" || fail "signals during the write: khbpf exited $?: $(cat "$TMP/err")"
	[ "$n" -ge 1 ] || fail "khbpf was done before the signals came"
	echo "  $n rounds of SIGTERM+SIGHUP+SIGINT while writing: document whole"
	valid "$OUT"
	json_check "$OUT" "d['window']['end_reason'] == 'target-exit'" "len(d['threads']) == 10001"
	no_bpf_left
}

# --- descriptors ----------------------------------------------------------

# The command gets exactly the descriptors khbpf was given, not its BPF,
# perf, pidfd, signalfd or timer fds (spans and counters on).
fd_leak_case() {
	local want got
	want=$(sh -c 'ls /proc/$$/fd' | sort -n | tr '\n' ' ')
	expect_exit 0 timeout -k 5 30 "$KHBPF" run --counter-events=sw-cpu-clock \
		--span 'libc.so.6:getpid' -o "$OUT" -- sh -c 'ls /proc/$$/fd'
	got=$(sort -n "$TMP/out" | tr '\n' ' ')
	[ "$got" = "$want" ] || fail "the command's fds '$got', expected '$want'"
	no_bpf_left
}

case_ "target exits during attach" exits_during_attach_case
case_ "attach by host pid into a PID namespace" other_pidns_case
case_ "khbpf inside a PID namespace" khbpf_in_pidns_case
case_ "CMD is a directory" dir_cmd_case
case_ "CMD is not ELF" non_elf_cmd_case
case_ "CMD is a truncated ELF" truncated_cmd_case
case_ "CMD's span notes cut off" truncated_spans_case
case_ "--span: bad objects, unknown symbol" span_objects_case
case_ "serve: span requests named wrong" serve_spans_case
case_ "malformed .note.khbpf" malformed_note_case
case_ "no capabilities" no_permission_case
case_ "kernel BTF hidden; VMLINUX_BTF at run time" no_btf_case
case_ "tracefs not mounted" no_tracefs_case
case_ "target sets named wrong" set_targets_case
case_ "attach --pid" numeric_case attach --pid --duration 1
for opt in --duration --interval --max-exited --max-threads --max-spans --span-buffer; do
	case_ "attach $opt" numeric_case attach "$opt" --pid "$LIVE"
	case_ "run $opt" numeric_case run "$opt"
done
for opt in --pid --interval --max-groups --max-age --max-exited --max-threads; do
	case_ "serve $opt" numeric_case serve "$opt"
done
case_ "--span-buffer sizes" span_buffer_case
case_ "serve --top" numeric_case serve --top --by process
case_ "serve --listen PORT" listen_case
case_ "serve --labels, --container-names" labels_case
for sig in INT HUP TERM; do
	case_ "SIG$sig while attaching" signal_attach_phase_case "$sig"
done
case_ "run: SIGHUP while loading" signal_run_phase_case
case_ "run: SIGHUP mid-run" sighup_run_case
case_ "signals while writing" signal_write_case
case_ "no descriptor leaks into CMD" fd_leak_case

cases_done bad_input

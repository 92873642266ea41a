#!/bin/bash
# khbpf's kernel memory is proportional to its target (issue 15): `khbpf
# attach` and `khbpf run` on a 10-thread process hold at most 4 MiB, with
# spans measured (--span: the span maps and the span ring buffer) or
# without, as the kernel counts it two ways:
#  - the `memlock` of every map khbpf holds (its fds' map_id, bpftool -j);
#  - the kernel memory charged to a fresh memory cgroup khbpf alone runs in
#    (v1 memory.kmem.usage_in_bytes; v2 memory.stat `kernel`): the maps,
#    each watched thread's task-storage element (which memlock does not
#    show), the programs, and khbpf's own kernel-side process memory.
# The bound is the issue's, not a timing: nothing here depends on speed.
# And the failure mode of exit records allocated on use (no memory for one)
# is counted: listed + counted = every thread.
# khbpf-test: plain-only (a sanitized build's shadow memory has page tables)
. "$(dirname "$0")/common.bash"
require_root "khbpf loads BPF; memory cgroups are root's"
exec </dev/null
LIMIT=$((4 << 20))
# Kernels without bpf_mem_alloc (before 6.1) preallocate the bounded hashes
# whole (docs/kernels.md): the issue's bound is not met there, by design;
# docs/kernels.md's figures are, with room for the programs and khbpf itself
# (5.10: 88752 KiB of maps, 159588 KiB with spans). Before 5.11 the maps
# are not charged to the memory cgroup at all: only memlock sees them.
PREALLOC_LIMIT=$((92 << 20)) PREALLOC_SPANS_LIMIT=$((164 << 20))
THREADS=10
CG="" KH="" TGT=""

# Each case runs in a subshell with this trap; the script's own removes the cgroup.
stop_case() {
	exec 7>&-
	[ -z "$KH" ] || { kill -9 "$KH" 2>/dev/null; wait "$KH" 2>/dev/null; }
	[ -z "$TGT" ] || { kill -9 "$TGT" 2>/dev/null; wait "$TGT" 2>/dev/null; }
	return 0
}
cleanup() {
	local rc=$?
	stop_case
	[ -z "$CG" ] || [ ! -d "$CG" ] || rmdir "$CG"
	keep_failed "$rc"
}
trap cleanup EXIT

# A fresh memory cgroup: CG, and the files to join it and read its kernel memory.
V1=/sys/fs/cgroup/memory
if [ -f "$V1/memory.kmem.usage_in_bytes" ]; then
	CG="$V1/khbpf-kmem.$$"
	JOIN=tasks PARENT_JOIN="$V1/tasks"
else
	for root in /sys/fs/cgroup/unified /sys/fs/cgroup; do
		grep -qw memory "$root/cgroup.subtree_control" 2>/dev/null || continue
		CG="$root/khbpf-kmem.$$" JOIN=cgroup.procs PARENT_JOIN="$root/cgroup.procs"
		break
	done
	[ -n "$CG" ] || fail "no memory cgroup controller (v1, or v2 with +memory) to charge khbpf to"
fi
mkdir "$CG" || fail "mkdir $CG"

kmem_bytes() {
	if [ -f "$CG/memory.kmem.usage_in_bytes" ]; then
		cat "$CG/memory.kmem.usage_in_bytes"
	else
		# `kernel` has the rest in it; older kernels' memory.stat only has the parts.
		awk '$1 == "kernel" {k = $2} $1 ~ /^(slab|kernel_stack|pagetables|percpu|sock)$/ {p += $2}
			END {print k != "" ? k : p}' "$CG/memory.stat"
	fi
}

# The target: N threads in all, each up and blocked, "up" on stdout; it
# ends when its stdin (a fifo held on fd 7) closes.
TARGET='import sys, threading
n = int(sys.argv[1]); up = threading.Semaphore(0)
def body():
    up.release(); sys.stdin.read()
for _ in range(n - 1): threading.Thread(target=body, daemon=True).start()
for _ in range(n - 1): up.acquire()
print("up", flush=True)
sys.stdin.read()'

# measure LABEL PREALLOC-LIMIT: khbpf ($KH) is watching; sum its maps'
# memlock and read the cgroup's kernel memory; both must be within the
# bound (PREALLOC-LIMIT where the exited map is preallocated).
measure() {
	local kmem
	kill -0 "$KH" || fail "$1: khbpf is gone: $(cat "$TMP/kh.err")"
	# What the load freed after an RCU grace period is gone by then (a later
	# reading can only be lower; nothing is asserted about time).
	sleep 0.5
	kmem=$(kmem_bytes)
	[ -n "$kmem" ] || fail "$1: no kernel memory figure in $CG"
	"$PYTHON" - "$KH" "$kmem" "$LIMIT" "$1" "$2" <<'PY' || fail "$1: kernel memory over the bound"
import json, os, subprocess, sys
pid, kmem, limit, label = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ids = set()
for fd in os.listdir(f"/proc/{pid}/fdinfo"):
    try:
        for line in open(f"/proc/{pid}/fdinfo/{fd}"):
            if line.startswith("map_id:"):
                ids.add(int(line.split()[1]))
    except OSError:
        pass
maps = [m for m in json.loads(subprocess.run(["bpftool", "-j", "map", "show"], check=True,
                                             capture_output=True, text=True).stdout)
        if m["id"] in ids]
assert maps, f"khbpf ({pid}) holds no maps"
memlock = sum(int(m.get("bytes_memlock", 0)) for m in maps)
# BPF_F_NO_PREALLOC (1) unset on the exited map: no bpf_mem_alloc here.
prealloc = any(m.get("name") == "exited" and not m.get("flags", 0) & 1 for m in maps)
if prealloc:
    limit = int(sys.argv[5])
    label += " (hashes preallocated: no bpf_mem_alloc)"
big = ", ".join(f"{m.get('name', m['id'])} {int(m.get('bytes_memlock', 0)) >> 10} KiB"
                for m in sorted(maps, key=lambda m: -int(m.get("bytes_memlock", 0)))[:4])
print(f"  {label}: {len(maps)} maps, memlock {memlock >> 10} KiB (largest: {big}); "
      f"cgroup kernel memory {kmem >> 10} KiB; bound {limit >> 10} KiB")
assert memlock <= limit, (memlock, limit)
assert kmem <= limit, (kmem, limit)
PY
}

# Every thread of the target blocks in read(): with spans, a span each.
SPAN=(--span 'libc.so.6:read=read')

# span_check DOC [ARGS...]: with --span, the site attached through a ring
# buffer of the default size, and no record lost.
span_check() {
	local doc=$1
	shift
	[ $# -gt 0 ] || return 0
	json_check "$doc" "any(p['status'] == 'attached' for p in d['span_probes'])" \
		"d['loss']['span_ringbuf_bytes_max']['value'] == 1 << 20" \
		"d['loss']['span_records_dropped_ringbuf']['value'] == 0" \
		"d['loss']['span_state_failures']['value'] == 0"
}

# finish DOC: end the window, and the document lists every thread.
finish() {
	kill -INT "$KH"
	wait "$KH" || fail "khbpf failed: $(cat "$TMP/kh.err")"
	KH=""
	validate "$1" >/dev/null || fail "schema: $1"
	json_check "$1" "len(d['threads']) == $THREADS"
}

attach_case() { # [SPAN ARGS...]
	trap stop_case EXIT
	rm -f "$TMP/in"
	mkfifo "$TMP/in" || fail "mkfifo"
	"$PYTHON" -c "$TARGET" "$THREADS" <"$TMP/in" >"$TMP/tgt.out" &
	TGT=$!
	exec 7>"$TMP/in"
	wait_for up "$TMP/tgt.out" || fail "the target did not start"
	: >"$TMP/kh.err"
	(echo "$BASHPID" >"$CG/$JOIN" && exec "$KHBPF" attach --pid "$TGT" "$@" -o "$TMP/attach.json") \
		2>"$TMP/kh.err" &
	KH=$!
	wait_for watching "$TMP/kh.err" || fail "attach did not start: $(cat "$TMP/kh.err")"
	measure "attach, $THREADS threads${1:+, spans}" "$([ $# -eq 0 ] && echo "$PREALLOC_LIMIT" || echo "$PREALLOC_SPANS_LIMIT")"
	finish "$TMP/attach.json"
	span_check "$TMP/attach.json" "$@"
	exec 7>&-
	wait "$TGT"
	TGT=""
}

# run: CMD is khbpf's child, so it starts in khbpf's cgroup; it leaves it
# before exec, so what is charged there stays khbpf's (and the fork's).
run_case() { # [SPAN ARGS...]
	trap stop_case EXIT
	rm -f "$TMP/in"
	mkfifo "$TMP/in" || fail "mkfifo"
	: >"$TMP/kh.err"
	(echo "$BASHPID" >"$CG/$JOIN" && exec "$KHBPF" run "$@" -o "$TMP/run.json" -- \
		sh -c 'echo $$ >"$1" && shift && exec "$@"' sh "$PARENT_JOIN" \
		"$PYTHON" -c "$TARGET" "$THREADS") <"$TMP/in" >"$TMP/tgt.out" 2>"$TMP/kh.err" &
	KH=$!
	exec 7>"$TMP/in"
	wait_for up "$TMP/tgt.out" || fail "the target did not start: $(cat "$TMP/kh.err")"
	wait_for watching "$TMP/kh.err" || fail "run did not start: $(cat "$TMP/kh.err")"
	measure "run, $THREADS threads${1:+, spans}" "$([ $# -eq 0 ] && echo "$PREALLOC_LIMIT" || echo "$PREALLOC_SPANS_LIMIT")"
	# run passes the first SIGINT to CMD; closing its stdin ends it instead.
	exec 7>&-
	wait "$KH" || fail "khbpf run failed: $(cat "$TMP/kh.err")"
	KH=""
	validate "$TMP/run.json" >/dev/null || fail "schema"
	json_check "$TMP/run.json" "len(d['threads']) == $THREADS" \
		"all(t['exited'] for t in d['threads'])" \
		"d['loss']['exited_records_overflow']['value'] == 0"
	span_check "$TMP/run.json" "$@"
	# Each thread's read() returned as the target ended: a record each.
	[ $# -eq 0 ] || json_check "$TMP/run.json" "len(d['events']['spans']) >= $THREADS"
}

# The failure mode of exit records allocated on use: while 200 threads exit,
# the memory cgroup the maps are charged to (khbpf's) is held at its usage
# and khbpf is stopped, so bpf_mem_alloc cannot refill its free lists
# (GFP_NOWAIT: no reclaim, no OOM kill). Each record it could not have is
# counted, and listed + counted = every thread the workload made.
hold() { # on|off
	if [ -f "$CG/memory.limit_in_bytes" ]; then
		if [ "$1" = on ]; then cat "$CG/memory.usage_in_bytes"; else echo -1; fi >"$CG/memory.limit_in_bytes"
	else
		if [ "$1" = on ]; then cat "$CG/memory.current"; else echo max; fi >"$CG/memory.max"
	fi
}

nomem_case() {
	trap 'hold off; kill -CONT $KH 2>/dev/null; stop_case' EXIT
	rm -f "$TMP/in"
	mkfifo "$TMP/in" || fail "mkfifo"
	build/workloads/faults threads 200 --wait <"$TMP/in" >"$TMP/tgt.out" &
	TGT=$!
	exec 7>"$TMP/in"
	wait_for ready "$TMP/tgt.out" || fail "faults did not start"
	: >"$TMP/kh.err"
	(echo "$BASHPID" >"$CG/$JOIN" &&
		exec "$KHBPF" attach --pid "$TGT" --interval 1000 -o "$TMP/nomem.json") 2>"$TMP/kh.err" &
	KH=$!
	wait_for watching "$TMP/kh.err" || fail "attach did not start: $(cat "$TMP/kh.err")"
	# BPF_F_NO_PREALLOC (1): a kernel without bpf_mem_alloc preallocates instead.
	if ! "$PYTHON" - "$KH" <<'PY'; then
import json, os, subprocess, sys
ids = set()
for fd in os.listdir(f"/proc/{sys.argv[1]}/fdinfo"):
    for line in open(f"/proc/{sys.argv[1]}/fdinfo/{fd}"):
        if line.startswith("map_id:"):
            ids.add(int(line.split()[1]))
maps = json.loads(subprocess.run(["bpftool", "-j", "map", "show"], check=True,
                                 capture_output=True, text=True).stdout)
sys.exit(0 if any(m["id"] in ids and m.get("name") == "exited" and m.get("flags", 0) & 1
                  for m in maps) else 1)
PY
		echo "  skipped: the exited map is preallocated on this kernel (no bpf_mem_alloc)"
		return 0
	fi
	kill -STOP "$KH"
	hold on || fail "cannot hold the cgroup at its usage"
	printf g >&7
	exec 7>&-
	wait "$TGT" || fail "the workload failed"
	TGT=""
	hold off || fail "cannot release the cgroup"
	kill -CONT "$KH"
	wait "$KH" || fail "khbpf failed: $(cat "$TMP/kh.err")"
	KH=""
	validate "$TMP/nomem.json" >/dev/null || fail "schema"
	"$PYTHON" - "$TMP/nomem.json" "$(grep '^{' "$TMP/tgt.out" | tail -n 1)" <<'PY' || fail "exit records without memory"
import json, sys
d = json.load(open(sys.argv[1])); t = json.loads(sys.argv[2])
L = {k: v["value"] for k, v in d["loss"].items() if isinstance(v, dict) and "value" in v}
tids = {x["thread_id"] for x in d["threads"]}
made = len(t["tids"])
print(f"  {made} threads exited with the cgroup held: {len(tids)} listed, "
      f"{L['exited_records_overflow']} exit records not allocated, "
      f"{L['threads_not_joined']} could not join the set (no task storage)")
assert made == 201 and tids <= set(t["tids"]), (made, tids - set(t["tids"]))
assert L["exited_records_overflow"] > 0, "every record was allocated"
assert L["threads_dropped"] == 0 and L["threads_without_baseline"] == 0, L
# Listed from its exit record, or counted: its record lost, or it never joined
# the set (its state could not be allocated when it was forked); the main
# thread, in the baseline, is listed as vanished.
real = len(tids) - L["threads_vanished"] - L["exited_records_overflow_listed"]
assert real + L["exited_records_overflow"] + L["threads_not_joined"] == made, (len(tids), L)
# Threads kept out of the set: the totals are gaps, not partial sums.
assert L["threads_not_joined"] == 0 or d["hardware"]["value"]["scheduler"]["voluntary_context_switches"]["value"]["status"] == "unavailable"
PY
}

case_ "attach: kernel memory of a $THREADS-thread target" attach_case
case_ "run: kernel memory of a $THREADS-thread target" run_case
case_ "attach with spans: kernel memory of a $THREADS-thread target" attach_case "${SPAN[@]}"
case_ "run with spans: kernel memory of a $THREADS-thread target" run_case "${SPAN[@]}"
case_ "exit records that cannot be allocated are counted" nomem_case
no_bpf_left
cases_done kernel_memory

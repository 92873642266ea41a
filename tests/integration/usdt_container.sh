#!/bin/bash
# USDT probes of a process in a container: in a mount namespace of its
# own, the process's /usr/lib/x86_64-linux-gnu/libstdc++.so.6 is another
# file (a copy, as an image has it below an overlay, bind-mounted over the
# host's path). khbpf attach finds the library through /proc/PID/root, as
# that process sees it, so:
#  - its probe sites are the copy's (span_probes name the path as the
#    target sees it): every throw of the contained program is counted
#    (--usdt), exactly what it threw, each throw-to-catch a span, which
#    uprobes on the host's file would not see;
#  - its execs are searched in its own root, not the host's: no second set
#    of sites (span_exec_libraries_unsearched counts each: unshare, sh, two
#    mounts, two throwers). One is a second container's thrower (its own
#    namespace and overlay of the same image: another device, the same
#    file below, where the uprobes already are: not attached twice, or
#    its throws would count twice); it exits at once, most often before
#    khbpf reads the exec, so that it was a container's is known from the
#    exec itself and its root is read while khbpf holds it. A thrower on
#    the host runs meanwhile; outside the set it is never counted, so the
#    exact total above is what rules out the host's file (it was probed
#    and hit, or not).
# The namespaces, their processes and mounts (private to them) end on
# every path.
. "$(dirname "$0")/common.bash"
require_root "attach loads BPF; unshare needs CAP_SYS_ADMIN"
W=build/workloads/usdtthrow
LIB=/usr/lib/x86_64-linux-gnu/libstdc++.so.6
[ -x "$W" ] || fail "$W is missing: run 'make workloads'"
command -v unshare >/dev/null || fail "unshare is missing (util-linux)"
CT="" KH=""
cleanup() {
	local rc=$?
	[ -z "$KH" ] || kill -INT "$KH" 2>/dev/null
	[ -z "$CT" ] || kill -KILL "$CT" 2>/dev/null
	wait 2>/dev/null
	keep_failed "$rc"
}
trap cleanup EXIT

# The library as a container image has it: one file below overlays, each
# container's overlay a device of its own (uprobes go to the file below).
mkdir -p "$TMP/lower" "$TMP/u1" "$TMP/w1" "$TMP/ov1" "$TMP/u2" "$TMP/w2" "$TMP/ov2"
cp "$(readlink -f "$LIB")" "$TMP/lower/libstdc++.so.6"
cp "$W" "$TMP/usdtthrow"
mkfifo "$TMP/go"
# The container: a private mount namespace where LIB is the image's; it
# waits for the go, runs a thrower of one throw in a second container (a
# namespace and overlay of its own, the same image), then becomes the
# thrower (the same process: exec).
N=$((500 + RANDOM % 500))
unshare --mount --propagation private sh -c '
	mount -t overlay overlay -o "lowerdir=$1/lower,upperdir=$1/u1,workdir=$1/w1" "$1/ov1" &&
		mount --bind "$1/ov1/libstdc++.so.6" "$2" || exit 1
	echo ready >"$1/ready"
	read -r _ <"$1/go"
	unshare --mount --propagation private sh -c "
		mount -t overlay overlay -o lowerdir=\$1/lower,upperdir=\$1/u2,workdir=\$1/w2 \$1/ov2 &&
		mount --bind \$1/ov2/libstdc++.so.6 \$2 && exec \$1/usdtthrow --throws 1" sh "$1" "$2" \
		>/dev/null || exit 1
	exec "$1/usdtthrow" --throws "$3"' sh "$TMP" "$LIB" "$N" >"$TMP/ct.out" 2>&1 &
CT=$!
for _ in $(seq 100); do [ -e "$TMP/ready" ] && break; sleep 0.05; done
[ -e "$TMP/ready" ] || fail "the container did not start: $(cat "$TMP/ct.out")"
[ "$(stat -L -c %i "/proc/$CT/root$LIB")" = "$(stat -c %i "$TMP/lower/libstdc++.so.6")" ] ||
	fail "inside the namespace $LIB is not the image's"
[ "$(stat -L -c %d "/proc/$CT/root$LIB")" != "$(stat -c %d "$TMP/lower/libstdc++.so.6")" ] ||
	fail "inside the namespace $LIB is not on an overlay of its own"
checkpoint container

# Not mapped yet (the shell has no libstdc++): an absolute OBJ is found in the target's root.
"$KHBPF" attach --pid "$CT" --children --usdt "$LIB:libstdcxx:throw" \
	--usdt-span "$LIB:libstdcxx:throw,catch=throw-to-catch" -o "$TMP/ct.json" 2>"$TMP/kh.err" &
KH=$!
for _ in $(seq 200); do grep -q watching "$TMP/kh.err" && break; sleep 0.05; done
grep -q watching "$TMP/kh.err" || fail "attach did not start: $(cat "$TMP/kh.err")"
# A thrower on the host, outside the namespace: its throws are the host library's.
"$W" --throws 100 >"$TMP/host.out" || fail "the host's thrower failed"
echo go >"$TMP/go"
wait "$CT" || fail "the contained thrower failed: $(cat "$TMP/ct.out")"
CT=""
grep -qx "thrown $N caught $N" "$TMP/ct.out" || fail "the thrower said: $(cat "$TMP/ct.out")"
kill -INT "$KH"
wait "$KH" || fail "attach exited $?: $(cat "$TMP/kh.err")"
KH=""
validate "$TMP/ct.json" >/dev/null || fail "schema"
json_check "$TMP/ct.json" \
	"[(u['probe'], u['hits']) for u in d['usdt_counts']] == [('libstdcxx:throw', $N + 1)]" \
	"[(m['metric_id'], m['calls']) for m in d['span_metrics']] == [('throw-to-catch', $N + 1)]" \
	"all(p['status'] == 'attached' and p['object'] == '$LIB' for p in d['span_probes'])" \
	"len(d['span_probes']) == 3" \
	"d['loss']['span_exec_libraries_unsearched']['value'] == 6"
no_bpf_left
echo "usdt_container: ok ($N + 1 throws in the container counted through its own copy of the library)"

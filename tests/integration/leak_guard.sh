#!/bin/bash
# Tests never leak, and tests/run.sh would see it if one did:
# 1. the guard (tests/guard.bash) finds and undoes a process that detached
#    with setsid, a tmpfs mount and a cgroup left by a script on purpose;
# 2. serve_caps.sh made to fail half way (serve running as nobody),
#    output_paths.sh made to fail half way (its 64 KiB tmpfs mounted) and
#    serve_labels.sh (workloads running in its cgroup tree) fail, and leave
#    no process, mount, cgroup or BPF program behind.
# khbpf-test: plain-only
. "$(dirname "$0")/common.bash"
require_root "mounts, cgroups, BPF"
. tests/guard.bash

cg_root=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts)
[ -n "$cg_root" ] || cg_root=$(awk '$3 == "cgroup" {print $2; exit}' /proc/self/mounts)
[ -n "$cg_root" ] || fail "no cgroup file system is mounted"

# 1. A script that leaves one of each behind. Its sleep's argument is this
# test's own (300 s and a fraction: $$), so no other `sleep 300` on the host
# is taken for it.
SLEEPER="sleep 300.$$"
mkdir "$TMP/mnt"
cat >"$TMP/leaky.sh" <<EOF
setsid $SLEEPER </dev/null >/dev/null 2>&1 &
mount -t tmpfs -o size=64k tmpfs "$TMP/mnt"
mkdir "$cg_root/khbpf-leak-test.$$"
exit 0
EOF
guarded leaky.sh bash "$TMP/leaky.sh" 2>"$TMP/guard.err"
rc=$?
[ "$rc" -ne 0 ] || fail "the guard passed a script that leaked: $(cat "$TMP/guard.err")"
[ "$GUARD_LEFT" = " processes mounts cgroups" ] ||
	fail "the guard found '$GUARD_LEFT', expected processes, mounts and cgroups: $(cat "$TMP/guard.err")"
grep -qF "$SLEEPER" "$TMP/guard.err" || fail "the guard does not name the process: $(cat "$TMP/guard.err")"
! mountpoint -q "$TMP/mnt" || fail "the guard left the tmpfs mounted"
[ ! -d "$cg_root/khbpf-leak-test.$$" ] || fail "the guard left the cgroup"
! pgrep -fx "$SLEEPER" >/dev/null || fail "the guard left $SLEEPER running"

# 2. Real tests failed on purpose half way.
# fail_half_way TEST CHECKPOINT: it must fail there, and leave nothing.
fail_half_way() {
	local t=$1 at=$2
	KHBPF_TEST_FAIL_AT=$at guarded "$t" bash "tests/integration/$t" >"$TMP/$t.out" 2>&1
	rc=$?
	[ "$rc" -ne 0 ] || fail "$t passed with KHBPF_TEST_FAIL_AT=$at: $(tail -n 5 "$TMP/$t.out")"
	grep -q "failing on purpose at '$at'" "$TMP/$t.out" ||
		fail "$t did not reach checkpoint $at: $(tail -n 5 "$TMP/$t.out")"
	[ -z "$GUARD_LEFT" ] || fail "$t failed at $at and left$GUARD_LEFT behind: $(tail -n 8 "$TMP/$t.out")"
	echo "leak_guard: $t failed at $at (exit $rc) and left nothing"
}
fail_half_way serve_caps.sh serve-running
fail_half_way output_paths.sh tmpfs-mounted
# serve_labels.sh with its workloads running in a tree of cgroups (it needs Prometheus).
if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
	fail_half_way serve_labels.sh workloads
fi
echo "leak_guard: ok"

# Sourced by tests/run.sh and tests/integration/leak_guard.sh (from the
# repository root): run a test and fail it when it leaves anything behind.
. tests/bpfprogs.bash

# What a test may leave behind, each checked after every test, passed or
# failed: processes (the test runs under tests/helpers/subreaper, so every
# descendant, however it detached, is ours to find and stop), mounts in this
# mount namespace, cgroup directories, and BPF programs. Tests name every
# cgroup they make khbpf-* (or put it under one): other managers (systemd,
# a container runtime, this host's own job control) make and remove theirs
# at any time, and those are neither ours to report nor to remove.
REAPER=${REAPER:-build/tests/helpers/subreaper}
[ -x "$REAPER" ] || { echo "guard.bash: $REAPER is missing; run 'make check'" >&2; exit 2; }
mounts_now() { awk '{print $5}' /proc/self/mountinfo | sort; }
cgroups_now() {
	awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/self/mounts | sort -u |
		while read -r m; do find "$m" -mindepth 1 -type d -path '*/khbpf*' 2>/dev/null; done | sort
}

# guarded NAME CMD...: run CMD; fail it (status 1 if it passed) when it left
# anything behind, and remove what it left so the next test starts clean.
# GUARD_LEFT names the kinds it found ("processes mounts cgroups programs").
#
# The checks are host-wide (processes aside), so two test runs on one host
# (two worktrees, a developer's and CI's) would blame and undo each other's
# cgroups and programs: each guarded test holds a host-wide lock from its
# first look to its last. A guarded test inside a guarded test (leak_guard.sh)
# already holds it (KHBPF_GUARD_LOCKED).
GUARD_LOCK=${GUARD_LOCK:-/run/lock/khbpf-tests.lock}
GUARD_LEFT=
guarded() {
	local name=$1 rc lockfd
	shift
	if [ -n "${KHBPF_GUARD_LOCKED:-}" ]; then
		guarded_locked "$name" "$@"
		return
	fi
	exec {lockfd}>>"$GUARD_LOCK" || return 2
	if ! flock -n "$lockfd"; then
		echo "   (waiting for another test run on this host: $GUARD_LOCK)" >&2
		flock "$lockfd"
	fi
	KHBPF_GUARD_LOCKED=1 guarded_locked "$name" "$@"
	rc=$?
	exec {lockfd}>&-
	return "$rc"
}

guarded_locked() {
	local name=$1 rc m0 c0 left new
	shift
	GUARD_LEFT=
	m0=$(mounts_now)
	c0=$(cgroups_now)
	left=$(mktemp)
	"$REAPER" --leaks "$left" -- "$@"
	rc=$?
	if [ -s "$left" ]; then
		echo "$name left processes running (now killed):" >&2
		sed 's/^/    /' "$left" >&2
		GUARD_LEFT+=" processes"
		rc=$((rc ? rc : 1))
	fi
	rm -f "$left"
	new=$(comm -13 <(echo "$m0") <(mounts_now))
	if [ -n "$new" ]; then
		echo "$name left mounts (now unmounted): $(echo $new)" >&2
		sort -r <<<"$new" | while read -r m; do umount -l "$m"; done
		GUARD_LEFT+=" mounts"
		rc=$((rc ? rc : 1))
	fi
	new=$(comm -13 <(echo "$c0") <(cgroups_now))
	if [ -n "$new" ]; then
		echo "$name left cgroups (now removed): $(echo $new)" >&2
		sort -r <<<"$new" | while read -r c; do rmdir "$c" 2>/dev/null; done
		GUARD_LEFT+=" cgroups"
		rc=$((rc ? rc : 1))
	fi
	if [ "$(leaked_progs)" -ne 0 ]; then
		echo "$name left BPF programs loaded: $(orphan_progs | tr '\n' ' ')" >&2
		GUARD_LEFT+=" programs"
		rc=$((rc ? rc : 1))
	fi
	return "$rc"
}

# Programs of ours left with no holder after a test: a leaked link or fd.
# (Another khbpf running on this host holds its own, which are not leaks.)
# Their release is asynchronous (RCU), so give it a moment.
leaked_progs() {
	local i n
	for i in 1 2 3 4 5 6 7 8 9 10; do
		n=$(orphan_progs | wc -l)
		[ "$n" -eq 0 ] && { echo 0; return; }
		sleep 0.2
	done
	echo "$n"
}


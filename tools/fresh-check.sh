#!/bin/bash
# The README's two commands, as a new user runs them: on a minimal Debian 12
# root made by debootstrap (minbase plus git, make, sudo, ca-certificates)
# holding nothing but a clone of this repository's current commit.
#
# Usage: tools/fresh-check.sh [--demo-only] [--keep-cache]
#   --demo-only   run only `make demo` (what CI does on every submission)
#   (default)     run `make demo`, then `make check`, each the first time
#
# Environment:
#   KHBPF_CACHE   where the root tarball is kept (default ~/.cache/khbpf)
#   MIRROR        Debian mirror for debootstrap (default: debootstrap's own)
#   CI            passed into the root: with CI=true a test may not skip
#
# The root is a fresh copy of the cached tarball each time, under /var/tmp.
# Everything is mounted inside a private mount namespace of this script's
# own (unshare --mount), so no mount can outlive it, whatever way it ends;
# the EXIT trap stops any process still running in the root (started by
# this script: its root directory is the copy) and removes the copy.
set -euo pipefail
cd "$(dirname "$0")/.."

demo_only=0
for arg in "$@"; do
	case "$arg" in
	--demo-only) demo_only=1 ;;
	-h | --help)
		sed -n '2,14s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	*)
		echo "fresh-check.sh: unknown option '$arg'; see --help" >&2
		exit 2
		;;
	esac
done

[ "$(id -u)" -eq 0 ] || {
	echo "fresh-check.sh: needs root (debootstrap, chroot, mounts); run 'sudo make fresh-check'" >&2
	exit 1
}
tools/install-deps.sh --with-fresh

SUITE=bookworm
CACHE=${KHBPF_CACHE:-${HOME:-/root}/.cache/khbpf}
TARBALL=$CACHE/debian-$SUITE-minbase.tar.gz
REPO=$(pwd)
COMMIT=$(git rev-parse HEAD)

WORK=$(mktemp -d /var/tmp/khbpf-fresh.XXXXXX)
ROOT=$WORK/root

# Processes whose root directory is the copy were started by this script.
in_root_pids() {
	local p r
	for p in /proc/[0-9]*; do
		r=$(readlink "$p/root" 2>/dev/null) || continue
		[ "$r" = "$ROOT" ] && echo "${p#/proc/}"
	done
	return 0
}
cleanup() {
	local rc=$? left
	left=$(in_root_pids | tr '\n' ' ')
	if [ -n "$left" ]; then
		echo "fresh-check: processes left in the root, stopped: $left" >&2
		# shellcheck disable=SC2086 # a list of pids
		kill -KILL $left 2>/dev/null || true
		rc=1
	fi
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# The cached root: debootstrap once, then reused. Made in $WORK and renamed
# into the cache, so an interrupted run leaves no half tarball.
if [ ! -s "$TARBALL" ]; then
	echo "fresh-check: debootstrap $SUITE (minbase) for $TARBALL" >&2
	start=$(date +%s)
	# shellcheck disable=SC2086 # MIRROR is one word or none
	debootstrap --variant=minbase --include=git,make,sudo,ca-certificates \
		"$SUITE" "$WORK/boot" ${MIRROR:-} >"$WORK/debootstrap.log" 2>&1 || {
		tail -n 20 "$WORK/debootstrap.log" >&2
		echo "fresh-check.sh: debootstrap failed (log above); check the network or set MIRROR" >&2
		exit 1
	}
	mkdir -p "$CACHE"
	tar -C "$WORK/boot" -czf "$WORK/root.tar.gz" .
	mv "$WORK/root.tar.gz" "$TARBALL"
	rm -rf "$WORK/boot"
	echo "fresh-check: root made in $(($(date +%s) - start)) s" >&2
fi

mkdir -p "$ROOT"
tar -C "$ROOT" -xzf "$TARBALL"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
git clone -q --no-local "$REPO" "$ROOT/root/khbpf"
git -C "$ROOT/root/khbpf" checkout -q "$COMMIT"

# step NAME CMD: run the README's command CMD in the root as a login shell
# of root would, with a clean environment, and print how long it took.
cat >"$WORK/inner.sh" <<'INNER'
set -eu
ROOT=$1
shift
# The root onto itself makes it a mount point, so `unshare --propagation`
# inside (several tests) can change its propagation.
mount --bind "$ROOT" "$ROOT"
mount --rbind /proc "$ROOT/proc"
mount --rbind /sys "$ROOT/sys"
mount --rbind /dev "$ROOT/dev"
for cmd in "$@"; do
	echo "fresh-check: $cmd" >&2
	start=$(date +%s)
	rc=0
	env -i HOME=/root USER=root LOGNAME=root TERM=dumb LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		${CI:+CI=$CI} \
		chroot "$ROOT" /bin/bash -c "cd /root/khbpf && $cmd" </dev/null || rc=$?
	secs=$(($(date +%s) - start))
	echo "fresh-check: '$cmd' exited $rc after $((secs / 60)) min $((secs % 60)) s" >&2
	[ "$rc" -eq 0 ] || exit "$rc"
done
INNER

cmds=("make demo")
[ "$demo_only" -eq 1 ] || cmds+=("make check")
# --propagation private: nothing mounted here is seen by (or can unmount
# anything of) the host; the namespace and its mounts end with this child.
unshare --mount --propagation private -- bash "$WORK/inner.sh" "$ROOT" "${cmds[@]}"
echo "fresh-check: passed at $COMMIT (${cmds[*]})" >&2

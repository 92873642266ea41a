#!/bin/bash
# The README's two commands, as a new user runs them: on a minimal Debian 12
# root made by debootstrap (minbase plus git, make, sudo, ca-certificates)
# holding nothing but a clone of this repository's current commit.
#
# Usage: tools/fresh-check.sh [--demo-only]
#   (default)     as root: `make demo`, then `make check`, each the first time;
#                 then, on a second fresh root, as a user without root:
#                 `make demo` prints the one sudo line, that line is run, and
#                 `make demo` then works
#   --demo-only   both roots, but `make check` left out (what CI runs)
#   --then CMD    as root, after the first `make demo`, run CMD instead of
#                 `make check` (one test in a fresh root, for debugging);
#                 the user root is left out
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
. tools/debroot.bash

demo_only=0
then_cmd=
while [ $# -gt 0 ]; do
	arg=$1
	shift
	case "$arg" in
	--demo-only) demo_only=1 ;;
	--then)
		[ $# -gt 0 ] || { echo "fresh-check.sh: --then needs a command" >&2; exit 2; }
		then_cmd=$1
		shift
		;;
	-h | --help)
		sed -n '2,19s/^# \{0,1\}//p' "$0"
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

# Processes whose root directory is one of the copies were started by this
# script.
in_root_pids() {
	local p r
	for p in /proc/[0-9]*; do
		r=$(readlink "$p/root" 2>/dev/null) || continue
		case "$r" in "$WORK"/*) echo "${p#/proc/}" ;; esac
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
	rm -rf "${WORK:?}/boot"
	echo "fresh-check: root made in $(($(date +%s) - start)) s" >&2
fi

# new_root DIR: a pristine copy of the cached root in DIR, with the host's
# resolver, services kept from starting (policy-rc.d: there is no init to
# own them in a chroot), and the current commit cloned to /root/khbpf.
new_root() {
	debroot_unpack "$TARBALL" "$1" "$SUITE"
	printf '#!/bin/sh\nexit 101\n' >"$1/usr/sbin/policy-rc.d"
	chmod 755 "$1/usr/sbin/policy-rc.d"
	git clone -q --no-local "$REPO" "$1/root/khbpf"
	git -C "$1/root/khbpf" checkout -q "$COMMIT"
}

# The steps run in a private mount namespace: step USER EXPECT CMD runs CMD
# in the root as USER (root, or a new unprivileged user "dev" whose clone is
# /home/dev/khbpf) with a clean environment, prints how long it took, and
# checks EXPECT: "ok" (exit 0) or "refused" (non-zero, stderr has the one
# sudo line, which is then run as root, as the user would).
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
in_root() {
	env -i HOME=/root USER=root LOGNAME=root TERM=dumb LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		${CI:+CI=$CI} chroot "$ROOT" "$@" </dev/null
}
while [ $# -ge 3 ]; do
	user=$1 expect=$2 cmd=$3
	shift 3
	if [ "$user" = root ]; then
		argv=(/bin/bash -c "cd /root/khbpf && $cmd")
	else
		if [ ! -d "$ROOT/home/$user/khbpf" ]; then
			in_root useradd -m -s /bin/bash "$user"
			in_root git clone -q /root/khbpf "/home/$user/khbpf"
			in_root chown -R "$user:$user" "/home/$user/khbpf"
		fi
		argv=(setpriv --reuid "$user" --regid "$user" --init-groups --reset-env \
			/bin/bash -c "cd ~/khbpf && $cmd")
	fi
	echo "fresh-check: [$user] $cmd" >&2
	start=$(date +%s)
	rc=0
	in_root "${argv[@]}" 2> >(tee "$ROOT/tmp/step.err" >&2) || rc=$?
	sleep 0.2 # the tee of stderr
	secs=$(($(date +%s) - start))
	echo "fresh-check: [$user] '$cmd' exited $rc after $((secs / 60)) min $((secs % 60)) s" >&2
	case "$expect" in
	ok) [ "$rc" -eq 0 ] || exit "$rc" ;;
	refused)
		[ "$rc" -ne 0 ] || { echo "fresh-check: '$cmd' as $user should have asked for packages" >&2; exit 1; }
		line=$(sed -n 's/.*run: \(sudo apt-get .*\)$/\1/p' "$ROOT/tmp/step.err" | head -n 1)
		[ -n "$line" ] || { echo "fresh-check: '$cmd' as $user did not print the sudo apt-get line" >&2; exit 1; }
		[ "$(grep -c 'sudo apt-get' "$ROOT/tmp/step.err")" -eq 1 ] ||
			{ echo "fresh-check: more than one install line" >&2; exit 1; }
		echo "fresh-check: [root] $line" >&2
		in_root /bin/bash -c "$line" >/dev/null
		;;
	esac
done
INNER

steps=(root ok "make demo")
if [ -n "$then_cmd" ]; then
	steps+=(root ok "$then_cmd")
elif [ "$demo_only" -eq 0 ]; then
	steps+=(root ok "make check")
fi
# --propagation private: nothing mounted here is seen by (or can unmount
# anything of) the host; the namespace and its mounts end with this child.
new_root "$ROOT"
unshare --mount --propagation private -- bash "$WORK/inner.sh" "$ROOT" "${steps[@]}"
# A user without root: make demo asks for the packages in one line, then
# (after that line is run) works.
[ -z "$then_cmd" ] || exit 0
ROOT=$WORK/user-root
new_root "$ROOT"
unshare --mount --propagation private -- bash "$WORK/inner.sh" "$ROOT" \
	dev refused "make demo" dev ok "make demo"
echo "fresh-check: passed at $COMMIT" >&2

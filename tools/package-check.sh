#!/bin/bash
# SPDX-License-Identifier: MIT
# The Debian package on a fresh Debian 12 under a real systemd (`make
# package-check`): the .deb is installed with apt into a minimal bookworm root
# made by debootstrap (its dependencies come from the archive), the root is
# booted with `systemd-nspawn --boot`, and in it:
#  - the installed version is `khbpf --version`'s, and the unit is enabled;
#  - the system reaches "running" and khbpf.service is active from boot;
#    `systemctl stop` then `systemctl start` work;
#  - serve runs as a dynamic (non-root) user whose bounding set is exactly
#    the unit's CAP_BPF, CAP_PERFMON and CAP_DAC_READ_SEARCH;
#  - /metrics answers with the container's own cgroups and passes
#    `promtool check metrics`;
#  - `systemd-analyze verify` is clean, and `systemd-analyze security`'s
#    exposure level is the one README.md states;
#  - `apt-get purge` stops it and leaves no file, unit, enablement link,
#    process or BPF program behind.
#
# Usage: tools/package-check.sh [DEB]   (root; default build/khbpf_VERSION_ARCH.deb)
#
# Environment:
#   KHBPF_CACHE   where the root tarball is kept (default ~/.cache/khbpf)
#   MIRROR        Debian mirror for debootstrap (default: debootstrap's own)
#
# The container: --private-network (its 127.0.0.1:9464 is its own), with
# CAP_BPF and CAP_PERFMON added to nspawn's default capabilities and bpf()
# and perf_event_open() to its system call filter, which is what a host
# gives the service; the same kernel as the host, so the BPF programs are
# real. The host needs no systemd: nspawn runs with --register=no
# --keep-unit, inside a private mount namespace of this script's own (with a
# tmpfs for nspawn's /run/systemd/nspawn), so nothing it mounts outlives it.
# The EXIT trap powers the container off (SIGKILL after 30 s) and removes the
# root copy.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/debroot.bash

[ "$(id -u)" -eq 0 ] || {
	echo "package-check.sh: needs root (debootstrap, systemd-nspawn); run 'sudo make package-check'" >&2
	exit 1
}

# Everything below runs in a private mount namespace.
if [ -z "${KHBPF_PACKAGE_CHECK_NS:-}" ]; then
	KHBPF_PACKAGE_CHECK_NS=1 exec unshare --mount --propagation private -- "$0" "$@"
fi

tools/install-deps.sh --with-package --with-prometheus
VERSION=$(awk 'NR == 1 && $1 == "khbpf" { gsub(/[()]/, "", $2); print $2 }' debian/changelog)
DEB=${1:-build/khbpf_${VERSION}_$(dpkg --print-architecture).deb}
[ -s "$DEB" ] || {
	echo "package-check.sh: no package '$DEB'; run 'make deb' first" >&2
	exit 1
}

SUITE=bookworm
CACHE=${KHBPF_CACHE:-${HOME:-/root}/.cache/khbpf}
TARBALL=$CACHE/debian-$SUITE-systemd.tar.gz
WORK=$(mktemp -d /var/tmp/khbpf-package.XXXXXX)
ROOT=$WORK/root
NSPAWN=""

say() { echo "package-check: $*"; }
fail() {
	echo "package-check: FAIL: $*" >&2
	exit 1
}

cleanup() {
	local rc=$?
	if [ -n "$NSPAWN" ] && kill -0 "$NSPAWN" 2>/dev/null; then
		# nspawn turns SIGTERM into the container's poweroff.
		kill -TERM "$NSPAWN" 2>/dev/null || true
		for _ in $(seq 60); do
			kill -0 "$NSPAWN" 2>/dev/null || break
			sleep 0.5
		done
		kill -KILL "$NSPAWN" 2>/dev/null || true
		wait "$NSPAWN" 2>/dev/null || true
	fi
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# The cached root: debootstrap once (minbase, systemd as init, and what the
# checks run: curl, man-db for the unit's Documentation=), then reused.
if [ ! -s "$TARBALL" ]; then
	say "debootstrap $SUITE (minbase + systemd) for $TARBALL"
	# shellcheck disable=SC2086 # MIRROR is one word or none
	debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,curl,ca-certificates,man-db \
		"$SUITE" "$WORK/boot" ${MIRROR:-} >"$WORK/debootstrap.log" 2>&1 || {
		tail -n 20 "$WORK/debootstrap.log" >&2
		fail "debootstrap failed (log above); check the network or set MIRROR"
	}
	mkdir -p "$CACHE"
	tar -C "$WORK/boot" -czf "$WORK/root.tar.gz" .
	mv "$WORK/root.tar.gz" "$TARBALL"
	rm -rf "${WORK:?}/boot"
fi
debroot_unpack "$TARBALL" "$ROOT" "$SUITE"
# Not /tmp: nspawn mounts a fresh tmpfs there.
mkdir -p "$ROOT/var/local/khbpf"
cp "$DEB" "$ROOT/var/local/khbpf/"
PKG=/var/local/khbpf/$(basename "$DEB")

mkdir -p /run/systemd/nspawn
mount -t tmpfs tmpfs /run/systemd/nspawn
NSPAWN_OPTS=(--quiet --register=no --keep-unit -D "$ROOT")

# in_root CMD...: CMD in the (not booted) root, as apt would run on a host.
in_root() {
	systemd-nspawn "${NSPAWN_OPTS[@]}" --pipe -E DEBIAN_FRONTEND=noninteractive "$@" </dev/null
}

say "apt-get install $PKG (dependencies from the archive)"
in_root sh -c "apt-get -q update >/dev/null && apt-get install -y -q $PKG" >"$WORK/install.log" 2>&1 ||
	fail "apt-get install: $(tail -5 "$WORK/install.log")"
installed=$(in_root dpkg-query -W -f '${Version}' khbpf)
reported=$(in_root khbpf --version | awk '{print $2}')
[ "$installed" = "$VERSION" ] && [ "$reported" = "$VERSION" ] ||
	fail "versions differ: debian/changelog $VERSION, dpkg $installed, khbpf --version $reported"
[ -L "$ROOT/etc/systemd/system/multi-user.target.wants/khbpf.service" ] ||
	fail "the package did not enable khbpf.service"
in_root dpkg-query -L khbpf >"$WORK/files" 2>&1
say "installed $installed, $(wc -l <"$WORK/files") paths; khbpf.service enabled"

bpf_ids() { bpftool -j prog show 2>/dev/null | /usr/bin/python3 -c '
import json, sys
print(" ".join(str(p["id"]) for p in json.load(sys.stdin) if p.get("name", "").startswith("khbpf")))'; }
ids_before=$(bpf_ids)

systemd-nspawn "${NSPAWN_OPTS[@]}" --boot --private-network --console=read-only \
	--capability=CAP_BPF,CAP_PERFMON --system-call-filter="bpf perf_event_open" \
	>"$WORK/boot.log" 2>&1 &
NSPAWN=$!
LEADER=""
for _ in $(seq 100); do
	LEADER=$(pgrep -P "$NSPAWN" -x systemd || true)
	[ -n "$LEADER" ] && break
	kill -0 "$NSPAWN" 2>/dev/null || fail "systemd-nspawn --boot exited: $(tail -5 "$WORK/boot.log")"
	sleep 0.1
done
[ -n "$LEADER" ] || fail "no systemd in the container after 10 s: $(tail -5 "$WORK/boot.log")"
# in_box CMD...: CMD inside the booted container, every namespace its own.
in_box() {
	nsenter -t "$LEADER" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"
}
# Until boot ends (systemctl cannot connect at first): up to 120 s.
for _ in $(seq 240); do
	state=$(in_box systemctl is-system-running 2>&1 || true)
	case "$state" in running | degraded | maintenance | stopping) break ;; esac
	sleep 0.5
done
[ "$state" = running ] ||
	fail "the container's systemd is '$state': $(in_box systemctl --failed --no-legend --plain 2>&1 | tr '\n' ';')"
[ "$(in_box systemctl is-active khbpf)" = active ] ||
	fail "khbpf.service is not active after boot: $(in_box journalctl -u khbpf --no-pager -n 20 2>&1)"
in_box systemctl stop khbpf || fail "systemctl stop khbpf"
[ "$(in_box systemctl is-active khbpf || true)" = inactive ] || fail "khbpf.service still active after stop"
in_box systemctl start khbpf || fail "systemctl start khbpf: $(in_box journalctl -u khbpf --no-pager -n 20 2>&1)"
say "booted ($state); khbpf.service active from boot, stopped and started again"

for _ in $(seq 60); do
	in_box curl -sf -o /tmp/metrics http://127.0.0.1:9464/metrics 2>/dev/null && break
	sleep 0.5
done
in_box cat /tmp/metrics >"$WORK/metrics" 2>/dev/null || fail "/metrics did not answer within 30 s"
grep -q '^khbpf_oncpu_seconds_total{.*cgroup="/system.slice/khbpf.service"' "$WORK/metrics" ||
	fail "/metrics has no series for the container's own khbpf.service cgroup: $(grep -m3 '^khbpf_oncpu' "$WORK/metrics")"
pid=$(in_box systemctl show -p MainPID --value khbpf)
[ "${pid:-0}" -gt 0 ] || fail "khbpf.service has no main process"
uid=$(in_box awk '/^Uid:/ {print $2}' "/proc/$pid/status")
bnd=$(in_box awk '/^CapBnd:/ {print $2}' "/proc/$pid/status")
# CAP_DAC_READ_SEARCH (2), CAP_PERFMON (38), CAP_BPF (39).
want_bnd=$(printf '%016x' $(((1 << 2) | (1 << 38) | (1 << 39))))
[ -n "$uid" ] && [ "$uid" != 0 ] || fail "serve (pid $pid) runs as uid '$uid'"
[ "$bnd" = "$want_bnd" ] || fail "serve's bounding set is $bnd, not $want_bnd (CAP_BPF CAP_PERFMON CAP_DAC_READ_SEARCH)"

lint=$(promtool check metrics <"$WORK/metrics" 2>&1) || fail "promtool check metrics: $lint"
[ -z "$lint" ] || fail "promtool check metrics: $lint"
say "serve as uid $uid with bounding set $bnd; /metrics $(grep -c '^khbpf_' "$WORK/metrics") series, promtool clean"

verify=$(in_box systemd-analyze verify /lib/systemd/system/khbpf.service 2>&1) ||
	fail "systemd-analyze verify: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify: $verify"
exposure=$(in_box systemd-analyze security --no-pager khbpf.service 2>&1 |
	sed -n 's/.*Overall exposure level for khbpf.service: \([0-9.]*\).*/\1/p')
[ -n "$exposure" ] || fail "systemd-analyze security gave no exposure level"
grep -q "exposure level $exposure\b" README.md ||
	fail "systemd-analyze security scores the unit $exposure; README.md says: $(grep -o 'exposure level [0-9.]*' README.md || echo nothing)"
say "systemd-analyze verify clean; security: exposure level $exposure (as README.md says)"

in_box sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -q khbpf' >"$WORK/purge.log" 2>&1 ||
	fail "apt-get purge: $(tail -5 "$WORK/purge.log")"
left=""
while read -r f; do
	[ "$f" = /. ] && continue
	[ -d "$ROOT$f" ] && continue # directories other packages share (/lib: usrmerge's link)
	[ -e "$ROOT$f" ] || [ -L "$ROOT$f" ] && left="$left $f"
done <"$WORK/files"
# /var/cache/man: man-db's formatted copies (cat pages, made by the verify's
# `man` above), its cache for every package's pages, not the package's files.
stray=$(cd "$ROOT" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./var/local/khbpf \
	-o -path ./var/cache/man \) -prune -o -name '*khbpf*' -print)
[ -z "$left$stray" ] || fail "apt-get purge left:$left $stray"
[ "$(in_box systemctl is-active khbpf || true)" != active ] || fail "khbpf.service still active after purge"
in_box sh -c 'grep -lx khbpf /proc/[0-9]*/comm' >/dev/null 2>&1 && fail "a khbpf process still runs after purge"
ids_after=$(bpf_ids)
[ "$ids_after" = "$ids_before" ] || fail "BPF programs named khbpf* before: '$ids_before', after purge: '$ids_after'"
say "apt-get purge: no file, unit, link, process or BPF program left"

in_box systemctl poweroff >/dev/null 2>&1 || true
for _ in $(seq 120); do
	kill -0 "$NSPAWN" 2>/dev/null || break
	sleep 0.5
done
kill -0 "$NSPAWN" 2>/dev/null && fail "the container did not power off within 60 s"
wait "$NSPAWN" || true
NSPAWN=""
say "passed: $(basename "$DEB") on $SUITE under systemd (exposure level $exposure)"

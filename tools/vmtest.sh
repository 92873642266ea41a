#!/bin/bash
# SPDX-License-Identifier: MIT
# tools/vmtest.sh: boot Debian's own kernels, one after another (or VMTEST_JOBS side by side), each in a
# virtme-ng guest that shares this host's root file system read-only, and run
# khbpf in each; the kernel matrix behind `make vmtest`.
#
# Usage (root, from anywhere; build/khbpf must be built first):
#   tools/vmtest.sh                       every default kernel
#   KERNELS="5.10 6.1" tools/vmtest.sh    a subset
#   VMTEST_TESTS="probe demo integration:run_accuracy" tools/vmtest.sh
#
# Kernels (KERNELS=, space separated): 5.10 (bullseye), 6.1 (bookworm), 6.12
# and 6.12-rt (trixie), sid (the newest, from unstable); or SUITE:PACKAGE for
# any other, e.g. bookworm:linux-image-rt-amd64. The generic amd64 flavour is
# used, never cloud: the cloud kernels lack the 9p/virtiofs modules that the
# guest needs to mount the host's root.
#
# Outputs, under build/vmtest/ (VMTEST_OUT=):
#   <kernel>.json   release, package, accelerator, boot seconds, each step's
#                   exit code and seconds, and `khbpf probe --json` embedded
#   <kernel>/       what the guest wrote: probe.json, each step's log
#                   (NAME.log, a colon as -), steps.tsv, guest.tsv (facts
#                   about the guest), mounts.txt, dmesg.log, and console.log
#                   (virtme-ng's and the guest kernel's console); and the
#                   khbpf that ran there; failed/NAME.PID/, a failed
#                   integration test's temporary directory (its documents
#                   and logs), kept by KHBPF_TEST_KEEP_FAILED; validate/
#                   STEP/, the documents a step's tests wrote and their
#                   keyhog renderings, checked against the schemas on the
#                   host once the guest is done (a failure fails the step)
#   table.md        kernel | accel | each probe collector | each step
# In the guest, each step sees KHBPF_VALIDATE_LATER (its documents are
# validated here afterwards) and, under TCG, KHBPF_TEST_EMULATED=1 (a test
# whose bound is a real host's latency checks the structural one instead).
# Exits 0 when every step passed in every guest, 1 when any failed or a guest
# did not come up, 2 on a usage or setup error. The last line is
# "vmtest: N passed, N failed" (steps, over every guest).
#
# Environment:
#   KERNELS               kernels to boot (default: 5.10 6.1 6.12 6.12-rt sid)
#   VMTEST_TESTS          in-guest steps, in order (default: probe bpf demo); the
#                         names are those of guest_test_cmd below, plus
#                         integration:NAME (tests/integration/NAME.sh) and
#                         integration (every one of them)
#   VMTEST_TIMEOUT        seconds one guest may take, boot included (1800; the
#                         default steps took 530 s in the 5.10 guest under TCG)
#   VMTEST_STEP_TIMEOUT   seconds one step may take inside the guest (600);
#                         under TCG most integration tests take 10-70 s, but
#                         bad_input and faults each ran past 600 s here, so
#                         raise both for `integration`
#   VMTEST_FAIL_LINES     lines of a failed step's log printed with its FAIL
#                         line (40), so that CI's output says why
#   VMTEST_ACCEL          auto (KVM when a trial boot works, else TCG), kvm, tcg
#   VMTEST_MEMORY         guest memory (2G); VMTEST_CPUS guest CPUs (2)
#   VMTEST_JOBS           guests booted side by side (1); under TCG each is one
#                         host thread, so up to the host's CPUs (CI: 2)
#   VMTEST_APPEND         more guest kernel command line, e.g. preempt=none
#   VMTEST_CACHE          cache (~/.cache/khbpf): kernels/, virtme-ng/, apt/
#   VMTEST_APT_MAX_AGE    seconds before the private package lists are
#                         refreshed (86400); 0 refreshes them now
#   VMTEST_NO_INSTALL=1   never apt-get install a missing host package
#   MIRROR                Debian mirror URI (default: the host's own, read
#                         from /etc/apt/sources.list.d/*.sources or
#                         sources.list)
#   VMTEST_KEYRING        archive keyring (/usr/share/keyrings/
#                         debian-archive-keyring.gpg: bookworm's 2023.3 has
#                         the bullseye..trixie keys, and unstable's Release
#                         is signed with the 12/bookworm and 13/trixie
#                         automatic keys, so it suffices for sid too)
#   KHBPF                 the binary under test (build/khbpf); it is copied to
#                         build/vmtest/khbpf first so that every guest tests
#                         the same one even if the tree is rebuilt meanwhile
#
# The guest: the host's root, read-only over 9p, with virtme-init's
# in-memory overlays on /etc /lib /home /opt /srv /usr /var; this script adds
# a tmpfs on /tmp and an in-memory overlay on the repository (both writable,
# nothing reaches the host), mounts bpffs, and enables the cgroup v2
# controllers; see guest_main. Steps see $OUT (the guest's output directory,
# written through to the host's build/vmtest/<kernel>/) and $KHBPF.
# Under TCG: -cpu max, and one host thread for all vCPUs (see boot_guest).
#
# How the pieces are obtained (nothing touches the host's apt configuration
# or lists: every Debian package below but the host ones is fetched by name
# with a private apt — its own sources list, state and cache directories
# under ~/.cache/khbpf/apt — and unpacked with dpkg-deb -x, never installed):
#   virtme-ng  bookworm has none, so trixie's `virtme-ng` .deb (1.35, pure
#              Python: `apt-get download virtme-ng/trixie`) is unpacked into
#              ~/.cache/khbpf/virtme-ng and run as
#                PYTHONPATH=$VNG/usr/lib/python3/dist-packages \
#                  PATH=$VNG/usr/bin:$PATH /usr/bin/python3 $VNG/usr/bin/vng
#              with bookworm's /usr/bin/python3. Its dependencies come from
#              bookworm with apt-get install (HOST_PKGS below):
#              python3-argcomplete, python3-requests, python3-pkg-resources,
#              file and kmod (its own Depends), qemu-system-x86 (the VM),
#              busybox-static (virtme-ng builds its initramfs with it), udev
#              (the guest's /dev/virtio-ports/virtme.* links, through which
#              --exec talks to the host, are made by udev rules from the host
#              root) and jq (this script). The Debian package has no
#              virtme-ng-init (that is Rust); it falls back to the bash
#              virtme-init, which works. No virtiofsd: bookworm has only
#              qemu's old C one (/usr/lib/qemu/virtiofsd), which virtme-ng
#              tries as root, fails to start (~3 s), and then falls back to
#              9p for the root file system, which is what the guests use.
#   kernels    the suite's linux-image-amd64 (or -rt-amd64) metapackage names
#              the versioned image package (linux-image-6.1.0-50-amd64); that
#              package is downloaded with `apt-get download NAME/SUITE`, plus,
#              from unstable on, the linux-binary-/linux-modules-/linux-base-
#              packages it was split into. They are unpacked together into
#              ~/.cache/khbpf/kernels/PACKAGE_VERSION, laid out as
#              boot/vmlinuz-REL and lib/modules/REL (where virtme-ng looks),
#              and depmod'ed: the .debs ship no modules.dep.
set -euo pipefail

SELF=$(realpath "$0")
ROOT=$(cd "$(dirname "$SELF")/.." && pwd)

log() { printf 'vmtest: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 2
}

# ---------------------------------------------------------------------------
# In-guest steps. Each is a bash command run from the repository root with
# $OUT (this guest's output directory, shared read-write with the host) and
# $KHBPF set; its stdout and stderr go to $OUT/NAME.log unless it redirects
# them. To add a step, add a case here and name it in VMTEST_TESTS.
# shellcheck disable=SC2016 # the commands expand in the guest, not here
guest_test_cmd() {
	case $1 in
	probe) echo '"$KHBPF" probe --json >"$OUT/probe.json"' ;;
	demo) echo '"$KHBPF" run -o "$OUT/demo.json" -- build/workloads/demo' ;;
	# khbpf's own BPF collectors load here: probe passing on the /proc
	# fallback alone is not enough.
	bpf) echo '/usr/bin/python3 -c "import json, sys; c = {x[\"collector\"]: x[\"availability\"] for x in json.load(open(sys.argv[1]))[\"collectors\"]}; bad = {k: v for k, v in c.items() if k in (\"scheduler-activity\", \"span-probes\") and v != \"available\"}; print(\"bpf:\", bad or \"available\"); sys.exit(1 if bad else 0)" "$OUT/probe.json"' ;;
	integration:*)
		local t=tests/integration/${1#integration:}.sh
		[ -f "$ROOT/$t" ] || return 1
		echo "KHBPF=\"\$KHBPF\" KHBPF_TEST_KEEP_FAILED=\"\$OUT/failed\" SCHEMA=docs/khbpf-evidence.schema.json PYTHON=/usr/bin/python3 bash $t"
		;;
	*) return 1 ;;
	esac
}

# The guest half: runs inside the VM as `vmtest.sh --guest DIR STEP...`
# (virtme-ng's --exec), as root, with the host root mounted read-only and
# /etc, /var, /usr... overlaid writable in guest memory by virtme-init. DIR
# is this guest's output directory (virtme-ng's --rwdir, a 9p mount of the
# host's), holding the khbpf under test.
guest_main() {
	set +e
	# The mounts below may hide DIR (under /tmp or the tree): first a
	# second mount of it at a fixed place, which the steps then use.
	mkdir -p /run/vmtest/out /run/vmtest/upper /run/vmtest/work
	mount --bind "$1" /run/vmtest/out || exit 1
	OUT=/run/vmtest/out KHBPF=/run/vmtest/out/khbpf
	shift
	export OUT KHBPF
	# /tmp: virtme-init makes it an overlay over the host's /tmp, and
	# overlayfs has no O_TMPFILE before 6.6, which khbpf's output.c uses
	# (it falls back to a named temporary file, which the tests then find
	# left behind after a signal). A tmpfs, as on most hosts.
	mount -t tmpfs -o mode=1777 vmtest-tmp /tmp
	# The repository is read-only in the guest (the host root is), but
	# tests write into it (objcopy rewrites build/workloads/spanned in
	# place): an overlay with its upper layer in guest memory lets them,
	# and nothing reaches the host.
	mount -t overlay -o "lowerdir=$ROOT,upperdir=/run/vmtest/upper,workdir=/run/vmtest/work" vmtest-tree "$ROOT" ||
		echo "vmtest-guest: could not overlay $ROOT; it stays read-only" >&2
	cd "$ROOT" || exit 1
	# virtme-init mounts tracefs, debugfs and cgroup2 (at /sys/fs/cgroup)
	# but not bpffs; make sure of all of them, as a systemd host would.
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
	mountpoint -q /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing
	mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
	# systemd enables every controller for the children of the root cgroup;
	# virtme-init leaves subtree_control empty, so do it here (the tests'
	# in_cpu_cgroup wants the cpu controller).
	local c ctrls=()
	read -r -a ctrls </sys/fs/cgroup/cgroup.controllers
	for c in "${ctrls[@]}"; do
		echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
	done
	{
		printf 'boot_seconds\t%s\n' "$(cut -d' ' -f1 /proc/uptime)"
		printf 'release\t%s\n' "$(uname -r)"
		printf 'version\t%s\n' "$(uname -v)"
		printf 'cpus\t%s\n' "$(nproc)"
		printf 'mem_kb\t%s\n' "$(awk '/^MemTotal/ {print $2}' /proc/meminfo)"
		printf 'cpu_flags\t%s\n' "$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
		printf 'btf\t%s\n' "$([ -r /sys/kernel/btf/vmlinux ] && echo yes || echo no)"
		printf 'cgroup_fs\t%s\n' "$(stat -f -c %T /sys/fs/cgroup)"
		printf 'cgroup_subtree_control\t%s\n' "$(cat /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null)"
		printf 'tmp_fs\t%s\n' "$(stat -f -c %T /tmp)"
		printf 'tmp_writable\t%s\n' "$(f=$(mktemp /tmp/vmtest.XXXXXX 2>/dev/null) && rm -f "$f" && echo yes || echo no)"
		printf 'tree_writable\t%s\n' "$(touch .vmtest-w 2>/dev/null && rm -f .vmtest-w && echo yes || echo no)"
		printf 'memlock\t%s\n' "$(ulimit -l)"
		printf 'perf_event_paranoid\t%s\n' "$(cat /proc/sys/kernel/perf_event_paranoid)"
		# The preemption model (PREEMPT_DYNAMIC kernels; the chosen one in
		# brackets): a BPF program in task context runs preemptible under
		# full and lazy.
		printf 'preempt\t%s\n' "$(cat /sys/kernel/debug/sched/preempt 2>/dev/null)"
		printf 'cmdline\t%s\n' "$(tr ' ' '\n' </proc/cmdline | grep -Ev '^(virtme|init=|console=|earlyprintk=|virtme\.exec=)' | tr '\n' ' ')"
		printf 'unprivileged_bpf_disabled\t%s\n' "$(cat /proc/sys/kernel/unprivileged_bpf_disabled 2>/dev/null)"
	} >"$OUT/guest.tsv"
	mount >"$OUT/mounts.txt"
	local name cmd start rc secs
	: >"$OUT/steps.tsv"
	for name in "$@"; do
		cmd=$(guest_test_cmd "$name") || cmd="echo 'vmtest: no such step: $name' >&2; exit 127"
		start=$(date +%s.%N)
		KHBPF_VALIDATE_LATER=$OUT/validate/${name//:/-} \
			timeout -k 10 "${VMTEST_STEP_TIMEOUT:-600}" bash -c "$cmd" \
			>"$OUT/${name//:/-}.log" 2>&1 </dev/null
		rc=$?
		secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
		printf '%s\t%s\t%s\n' "$name" "$rc" "$secs" >>"$OUT/steps.tsv"
		echo "vmtest-guest: $name exited $rc after $secs s"
	done
	dmesg >"$OUT/dmesg.log" 2>&1
	sync
	exit 0
}

if [ "${1:-}" = --guest ]; then
	shift
	guest_main "$@"
fi
case "${1:-}" in
"") ;;
-h | --help)
	sed -n '3,69s/^# \{0,1\}//p' "$0"
	exit 0
	;;
*)
	echo "vmtest.sh: unknown argument '$1'; the settings are environment variables (see --help)" >&2
	exit 2
	;;
esac

# ---------------------------------------------------------------------------
# Host side.

DEFAULT_KERNELS="5.10 6.1 6.12 6.12-rt sid"
# What matters for a kernel: BPF loading, per-thread accuracy against the
# kernel's own final counters, attach windows, spans (exact counts, nesting,
# a library's symbol against bpftrace, per-span counters), the fallbacks,
# serve's totals, and the privilege drop.
DEFAULT_TESTS="probe bpf demo integration:run_accuracy integration:attach_window integration:spans_cli integration:span_bpftrace integration:spans_many integration:blocked integration:fallback_nobpf integration:serve_prometheus integration:privileges"
KERNELS=${KERNELS:-$DEFAULT_KERNELS}
read -r -a TESTS <<<"${VMTEST_TESTS:-$DEFAULT_TESTS}"
VMTEST_TIMEOUT=${VMTEST_TIMEOUT:-1800}
VMTEST_STEP_TIMEOUT=${VMTEST_STEP_TIMEOUT:-600}
VMTEST_ACCEL=${VMTEST_ACCEL:-auto}
VMTEST_MEMORY=${VMTEST_MEMORY:-2G}
VMTEST_CPUS=${VMTEST_CPUS:-2}
VMTEST_JOBS=${VMTEST_JOBS:-1}
VMTEST_APT_MAX_AGE=${VMTEST_APT_MAX_AGE:-86400}
CACHE=${VMTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/khbpf}
OUT=${VMTEST_OUT:-$ROOT/build/vmtest}
KEYRING=${VMTEST_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
# trixie, a stable release, rather than unstable's newest: it does not move.
VNG_SUITE=${VMTEST_VNG_SUITE:-trixie}
KHBPF_SRC=${KHBPF:-build/khbpf}

case $VMTEST_ACCEL in auto | kvm | tcg) ;; *) die "VMTEST_ACCEL must be auto, kvm or tcg" ;; esac
[[ $VMTEST_TIMEOUT =~ ^[0-9]+$ ]] || die "VMTEST_TIMEOUT must be seconds"
[[ $VMTEST_JOBS =~ ^[1-9][0-9]*$ ]] || die "VMTEST_JOBS must be a number of guests, 1 or more"
[ "$(uname -m)" = x86_64 ] || die "only x86_64 hosts (amd64 kernels) are supported"

# kernel_source KERNEL: "SUITE PACKAGE" for a kernel name of KERNELS.
kernel_source() {
	case $1 in
	5.10) echo "bullseye linux-image-amd64" ;;
	6.1) echo "bookworm linux-image-amd64" ;;
	6.12) echo "trixie linux-image-amd64" ;;
	6.12-rt) echo "trixie linux-image-rt-amd64" ;;
	sid | unstable) echo "sid linux-image-amd64" ;;
	*:linux-image-*) echo "${1%%:*} ${1#*:}" ;;
	*) return 1 ;;
	esac
}

# Expand the step names now, on the host, so that a typo fails before any
# boot, and `integration` becomes each test by name.
STEPS=()
for t in "${TESTS[@]}"; do
	if [ "$t" = integration ]; then
		for f in "$ROOT"/tests/integration/*.sh; do
			STEPS+=("integration:$(basename "$f" .sh)")
		done
	elif guest_test_cmd "$t" >/dev/null; then
		STEPS+=("$t")
	else
		die "unknown step '$t' in VMTEST_TESTS"
	fi
done
for k in $KERNELS; do
	kernel_source "$k" >/dev/null || die "unknown kernel '$k' (5.10 6.1 6.12 6.12-rt sid, or SUITE:PACKAGE)"
done

cd "$ROOT"
[ -x "$KHBPF_SRC" ] || die "$KHBPF_SRC is missing: run make first"
[ -x build/workloads/demo ] || die "build/workloads/demo is missing: run make first"

# --- host packages ---------------------------------------------------------
# "command-or-python-module package" pairs: what virtme-ng and this script
# run on the host, and what the guest runs from the shared host root.
HOST_PKGS=(
	"qemu-system-x86_64 qemu-system-x86"
	"busybox busybox-static"
	"udevadm udev"
	"depmod kmod"
	"file file"
	"jq jq"
	"dpkg-deb dpkg"
	"py:argcomplete python3-argcomplete"
	"py:requests python3-requests"
	"py:pkg_resources python3-pkg-resources"
)
ensure_host_packages() {
	local pair what pkg missing=()
	for pair in "${HOST_PKGS[@]}"; do
		what=${pair% *} pkg=${pair#* }
		case $what in
		py:*) /usr/bin/python3 -c "import ${what#py:}" 2>/dev/null && continue ;;
		*) command -v "$what" >/dev/null && continue ;;
		esac
		missing+=("$pkg")
	done
	# virtme-ng needs a static busybox for its initramfs: a dynamic one
	# (package busybox) has nothing to link against there.
	if command -v busybox >/dev/null && [[ $(file -L "$(command -v busybox)") != *"statically linked"* ]]; then
		missing+=(busybox-static)
	fi
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "${VMTEST_NO_INSTALL:-}" = 1 ] || [ "$(id -u)" -ne 0 ]; then
		die "missing host packages: ${missing[*]} (apt-get install them)"
	fi
	log "installing host packages: ${missing[*]}"
	apt-get update -q >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# --- private apt -----------------------------------------------------------
APTDIR=$CACHE/apt
APT_OPTS=(
	-o "Dir::Etc::SourceList=$APTDIR/sources.list"
	-o "Dir::Etc::SourceParts=$APTDIR/sources.list.d"
	-o "Dir::Etc::Preferences=$APTDIR/preferences"
	-o "Dir::Etc::PreferencesParts=$APTDIR/preferences.d"
	-o "Dir::Etc::TrustedParts=$APTDIR/trusted.gpg.d"
	-o "Dir::State=$APTDIR/state"
	-o "Dir::State::status=$APTDIR/state/status"
	-o "Dir::Cache=$APTDIR/cache"
	# The host may disable the binary caches (docker images do); ours
	# are private, and save re-parsing four suites' lists on every call.
	-o "Dir::Cache::pkgcache=pkgcache.bin"
	-o "Dir::Cache::srcpkgcache=srcpkgcache.bin"
	-o "APT::Architecture=amd64"
	-o "APT::Architectures::=amd64"
	-o "Acquire::Languages=none"
	# Downloads land in ~/.cache, which the _apt user cannot write.
	-o "APT::Sandbox::User=root"
)
papt_get() { apt-get "${APT_OPTS[@]}" "$@"; }
papt_cache() { apt-cache "${APT_OPTS[@]}" "$@"; }

# The first Debian archive URI of the host's own apt sources (not its
# security archive), so that this script uses whatever mirror the host does.
host_mirror() {
	local f uris=()
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		mapfile -t -O ${#uris[@]} uris < <(awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i}' "$f")
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		mapfile -t -O ${#uris[@]} uris < <(sed -E -n 's/\[[^]]*\]//; s/^[[:space:]]*deb[[:space:]]+([^[:space:]]+).*/\1/p' "$f")
	done
	for f in "${uris[@]}"; do
		case $f in *security* | cdrom:*) continue ;; esac
		echo "$f"
		return 0
	done
}

setup_apt() {
	local mirror suites=() s k src want stamp=$APTDIR/state/updated
	mirror=${MIRROR:-$(host_mirror)}
	[ -n "$mirror" ] || die "no Debian mirror in the host's apt sources: set MIRROR="
	[ -r "$KEYRING" ] || die "archive keyring $KEYRING is missing (debian-archive-keyring)"
	# Every default suite, whatever KERNELS is: a subset then does not
	# change the sources list, which would force a new update.
	for k in 5.10 6.1 6.12 sid $KERNELS; do
		src=$(kernel_source "$k")
		suites+=("${src%% *}")
	done
	suites+=("$VNG_SUITE")
	mkdir -p "$APTDIR"/{sources.list.d,preferences.d,trusted.gpg.d,state/lists/partial,cache/archives/partial}
	touch "$APTDIR/state/status"
	want=$(for s in $(printf '%s\n' "${suites[@]}" | sort -u); do
		echo "deb [signed-by=$KEYRING] ${mirror%/} $s main"
	done)
	if [ "$want" != "$(cat "$APTDIR/sources.list" 2>/dev/null)" ]; then
		echo "$want" >"$APTDIR/sources.list"
		rm -f "$stamp"
	fi
	if [ ! -e "$stamp" ] || [ $(($(date +%s) - $(stat -c %Y "$stamp"))) -ge "$VMTEST_APT_MAX_AGE" ]; then
		log "updating the private package lists from $mirror"
		# apt-get update exits 0 when some lists failed: read its words.
		if papt_get -q update >"$APTDIR/update.log" 2>&1 &&
			! grep -qE '^(E:|W: (Failed|Some index))' "$APTDIR/update.log"; then
			touch "$stamp"
		elif [ -e "$stamp" ]; then
			log "warning: apt-get update failed (see $APTDIR/update.log); using the lists from $(date -r "$stamp")"
		else
			cat "$APTDIR/update.log" >&2
			die "apt-get update of the private lists failed"
		fi
	fi
}

# pkg_field PACKAGE SUITE FIELD: the field of that package in that suite
# (empty when there is none). awk reads to the end: an early exit would kill
# apt-cache with SIGPIPE, a failure under pipefail.
pkg_field() {
	papt_cache show "$1/$2" 2>/dev/null |
		awk -v f="$3:" '$1 == f && !found {sub(/^[^:]*: */, ""); print; found = 1}' || true
}

# download_unpack DIR SUITE PACKAGE...: fetch each package from SUITE and
# unpack them all into DIR.
download_unpack() {
	local dir=$1 suite=$2 debs p
	shift 2
	debs=$(mktemp -d "$CACHE/.debs.XXXXXX")
	TMP_DIRS+=("$debs")
	(cd "$debs" && papt_get -q download "${@/%//$suite}" >"$debs/download.log" 2>&1) || {
		cat "$debs/download.log" >&2
		die "apt-get download $* ($suite) failed"
	}
	for p in "$debs"/*.deb; do
		dpkg-deb -x "$p" "$dir"
	done
	rm -rf "$debs"
}

# --- virtme-ng ----------------------------------------------------------------
VNG=$CACHE/virtme-ng
setup_virtme_ng() {
	local ver tmp
	ver=$(pkg_field virtme-ng "$VNG_SUITE" Version)
	[ -n "$ver" ] || die "no virtme-ng in $VNG_SUITE"
	if [ "$(cat "$VNG/.version" 2>/dev/null)" != "$ver" ]; then
		log "fetching virtme-ng $ver ($VNG_SUITE)"
		tmp=$(mktemp -d "$CACHE/.vng.XXXXXX")
		TMP_DIRS+=("$tmp")
		download_unpack "$tmp" "$VNG_SUITE" virtme-ng
		echo "$ver" >"$tmp/.version"
		rm -rf "$VNG"
		mv "$tmp" "$VNG"
	fi
	VNG_VERSION=$ver
}

# --- kernels -------------------------------------------------------------------
# fetch_kernel KERNEL: sets K_SUITE K_PKG K_VERSION K_DIR K_REL K_IMG, the
# kernel unpacked (once, then from the cache) under $CACHE/kernels.
fetch_kernel() {
	local src meta deps abi parts tmp rels
	src=$(kernel_source "$1")
	K_SUITE=${src%% *} meta=${src#* }
	K_PKG=$meta
	# A metapackage (linux-image-amd64) names the versioned image package
	# in its Depends; a versioned package does not depend on another one.
	deps=$(pkg_field "$meta" "$K_SUITE" Depends)
	if [[ ! $meta =~ ^linux-image-[0-9] ]]; then
		K_PKG=$(tr ',' '\n' <<<"$deps" | awk '$1 ~ /^linux-image-[0-9]/ {print $1; exit}')
		[ -n "$K_PKG" ] || die "$meta ($K_SUITE) names no linux-image package"
		deps=$(pkg_field "$K_PKG" "$K_SUITE" Depends)
	fi
	K_VERSION=$(pkg_field "$K_PKG" "$K_SUITE" Version)
	[ -n "$K_VERSION" ] || die "no package $K_PKG in $K_SUITE"
	K_DIR=$CACHE/kernels/${K_PKG}_$K_VERSION
	if [ ! -e "$K_DIR/.complete" ]; then
		# From unstable's 7.x on, linux-image-REL is empty and depends on
		# linux-binary-REL (vmlinuz), linux-modules-REL and linux-base-REL.
		abi=${K_PKG#linux-image-}
		parts=$(tr ',' '\n' <<<"$deps" | awk -v abi="$abi" \
			'$1 ~ "^linux-(binary|modules|base)-" && substr($1, length($1) - length(abi) + 1) == abi {print $1}')
		log "fetching $K_PKG $K_VERSION ($K_SUITE)${parts:+ with $(echo "$parts" | tr '\n' ' ')}"
		mkdir -p "$CACHE/kernels"
		tmp=$(mktemp -d "$CACHE/kernels/.tmp.XXXXXX")
		TMP_DIRS+=("$tmp")
		# shellcheck disable=SC2086 # parts is a list of package names
		download_unpack "$tmp" "$K_SUITE" "$K_PKG" $parts
		# Where virtme-ng looks: it walks up from the image to the
		# directory holding lib/modules/REL, and takes that as the root.
		if [ -d "$tmp/usr/lib/modules" ] && [ ! -d "$tmp/lib/modules" ]; then
			mkdir -p "$tmp/lib"
			mv "$tmp/usr/lib/modules" "$tmp/lib/modules"
		fi
		rels=$(ls "$tmp/lib/modules")
		[ "$(wc -w <<<"$rels")" -eq 1 ] || die "$K_PKG: expected one lib/modules/REL, found: $rels"
		mkdir -p "$tmp/boot"
		if [ -e "$tmp/lib/modules/$rels/vmlinuz" ]; then
			mv "$tmp/lib/modules/$rels/vmlinuz" "$tmp/boot/vmlinuz-$rels"
		fi
		[ -e "$tmp/boot/vmlinuz-$rels" ] || die "$K_PKG: no vmlinuz for $rels"
		# The .debs ship no modules.dep (the postinst makes it).
		depmod -a -b "$tmp" "$rels"
		rm -rf "$tmp/usr/share/doc" "$tmp/usr/share/bug" "$tmp/usr/share/lintian"
		printf '%s\n' "$rels" >"$tmp/.complete"
		rm -rf "$K_DIR"
		mv "$tmp" "$K_DIR"
	fi
	K_REL=$(cat "$K_DIR/.complete")
	K_IMG=$K_DIR/boot/vmlinuz-$K_REL
}

# --- guests --------------------------------------------------------------------
GUEST_PID=
TMP_DIRS=()
BG_PIDS=()
cleanup() {
	local p
	# VMTEST_JOBS > 1: each guest's job stops its own guest as it exits.
	for p in "${BG_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${BG_PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	BG_PIDS=()
	if [ -n "$GUEST_PID" ] && kill -0 "$GUEST_PID" 2>/dev/null; then
		# The guest runs in its own process group (setsid): timeout, vng,
		# virtme-run and qemu all go with it.
		kill -TERM -- "-$GUEST_PID" 2>/dev/null || true
		for _ in $(seq 20); do
			kill -0 "$GUEST_PID" 2>/dev/null || break
			sleep 0.5
		done
		kill -KILL -- "-$GUEST_PID" 2>/dev/null || true
		wait "$GUEST_PID" 2>/dev/null || true
	fi
	GUEST_PID=
	if [ ${#TMP_DIRS[@]} -gt 0 ]; then
		rm -rf "${TMP_DIRS[@]}"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# boot_guest LOG TIMEOUT ACCEL RWDIR CMD...: boot $K_IMG, run CMD in it (from
# the repository root), wait for it. Sets GUEST_RC (the command's exit code as
# virtme-ng returns it; 124 when the timeout ended the guest). With
# VMTEST_PROGRESS set to a steps.tsv, prints its lines as they appear.
boot_guest() {
	local logf=$1 limit=$2 accel=$3 rwdir=$4 seen=0 n line
	shift 4
	local args=(--run "$K_IMG" --memory "$VMTEST_MEMORY" --cpus "$VMTEST_CPUS" --verbose)
	# GUEST=HOST, both absolute: given HOST alone, virtme-ng 1.35 checks
	# the guest path relative to the current directory, and fails.
	[ -n "$rwdir" ] && args+=("--rwdir=$rwdir=$rwdir")
	local append=${VMTEST_APPEND:-}
	if [ "$accel" = tcg ]; then
		# Under TCG the clocksource watchdog can find the emulated TSC
		# skewed against the emulated HPET and mark it unstable (dmesg:
		# "Marking clocksource tsc unstable due to frequency skew", seen
		# on 7.2): CLOCK_MONOTONIC then runs on the HPET while the
		# scheduler's clock stays on the TSC, kept only within a tick of
		# it (sched_clock_local()), and the two disagree by milliseconds
		# over a 30 ms wait (blocked.sh compares them). A real host's TSC
		# is stable; tsc=reliable makes the guest's so.
		append="tsc=reliable${append:+ $append}"
	fi
	[ -n "$append" ] && args+=(--append "$append")
	args+=(--exec "$(printf '%q ' "$@")")
	if [ "$accel" = tcg ]; then
		# virtme-ng asks for -cpu host only with KVM; TCG's default is
		# qemu64 (x86-64-v1, no AVX, no PCID...). max is every feature
		# TCG emulates, nearer to a real host's CPU.
		# thread=single: with multi-threaded TCG (one host thread per
		# vCPU, the default) a vCPU can run stale translated code while
		# another patches kernel text, and the kernel's int3-based
		# patching (text_poke_bp: static keys flip when BPF attaches to a
		# tracepoint) then oopses on a leftover int3 in __schedule
		# ("Oops: int3", seen on 6.12 and 7.2). One thread for all vCPUs
		# keeps their view of memory coherent; the guest still has
		# VMTEST_CPUS CPUs.
		args+=(--disable-kvm "--qemu-opts=-cpu max -accel tcg,thread=single")
	fi
	# virtme-run keeps its exit-code file in TMPDIR: a private one, removed
	# with the rest even if the guest is killed.
	local tmpd
	tmpd=$(mktemp -d)
	TMP_DIRS+=("$tmpd")
	# setsid: its own process group, to stop all of it at once (a
	# background job of a script leads no group, so setsid need not fork;
	# --wait keeps the exit status if it does); stdin from /dev/null:
	# qemu's stdio chardev must not read ours.
	TMPDIR=$tmpd setsid --wait timeout -k 20 "$limit" \
		env PATH="$VNG/usr/bin:$PATH" PYTHONPATH="$VNG/usr/lib/python3/dist-packages" \
		/usr/bin/python3 "$VNG/usr/bin/vng" "${args[@]}" </dev/null >"$logf" 2>&1 &
	GUEST_PID=$!
	while kill -0 "$GUEST_PID" 2>/dev/null; do
		sleep 1
		if [ -n "${VMTEST_PROGRESS:-}" ] && [ -e "$VMTEST_PROGRESS" ]; then
			n=$(wc -l <"$VMTEST_PROGRESS")
			while [ "$seen" -lt "$n" ]; do
				seen=$((seen + 1))
				line=$(sed -n "${seen}p" "$VMTEST_PROGRESS")
				progress_line "$line"
			done
		fi
	done
	GUEST_RC=0
	wait "$GUEST_PID" || GUEST_RC=$?
	GUEST_PID=
	rm -rf "$tmpd"
}

progress_line() {
	local name rc secs
	IFS=$'\t' read -r name rc secs <<<"$1"
	if [ "$rc" -eq 0 ]; then
		log "  [$CUR_KERNEL] $name: pass ($secs s)"
	else
		log "  [$CUR_KERNEL] $name: FAIL, exit $rc ($secs s)"
		# Why, where CI shows it: the step's log stays in the guest's
		# directory, which CI does not keep.
		local f
		f=$(dirname "$VMTEST_PROGRESS")/${name//:/-}.log
		if [ -s "$f" ]; then
			tail -n "${VMTEST_FAIL_LINES:-40}" "$f" | tr -cd '[:print:]\t\n' |
				sed "s/^/vmtest:     [$CUR_KERNEL] $name| /" >&2
		else
			log "    [$CUR_KERNEL] $name: its log is empty"
		fi
	fi
}

# KVM is there but may not work (a nested host whose KVM cannot run these
# guests: "emulation failure", MSR assertions): a trial boot with KVM that
# must print a word and exit 0 in time decides.
ACCEL=
choose_accel() {
	case $VMTEST_ACCEL in
	kvm | tcg)
		ACCEL=$VMTEST_ACCEL
		return
		;;
	esac
	ACCEL=tcg
	if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
		log "trying KVM with $K_REL"
		# The word is computed in the guest: the log also holds the
		# command line, which must not count.
		# shellcheck disable=SC2016 # expanded by the guest's bash
		boot_guest "$OUT/kvm-trial.log" 60 kvm "" bash -c 'echo "vmtest-kvm-$((6 * 7))"'
		if [ "$GUEST_RC" -eq 0 ] && grep -aq 'vmtest-kvm-42' "$OUT/kvm-trial.log"; then
			ACCEL=kvm
		else
			log "KVM does not work here (exit $GUEST_RC; $(grep -a -m1 -iE 'emulation failure|error|assert' "$OUT/kvm-trial.log" | tr -cd '[:print:]' | sed 's/^ *//' | cut -c1-120)): using TCG"
		fi
	fi
	log "accelerator: $ACCEL"
}

# write_result KERNEL: $OUT/KERNEL.json from the guest's files.
write_result() {
	local k=$1 dir=$OUT/$1 probe=null guest='{}' steps='[]'
	if [ -s "$dir/probe.json" ] && jq -e . "$dir/probe.json" >/dev/null 2>&1; then
		probe=$(cat "$dir/probe.json")
	fi
	[ -e "$dir/guest.tsv" ] && guest=$(jq -R -n '[inputs | split("\t") | {(.[0]): (.[1:] | join("\t"))}] | add // {}' "$dir/guest.tsv")
	# Every step asked for: those the guest did not reach are null.
	# Each step's result: the last line its log printed ("run_accuracy: ok
	# (...)"), printable characters only, for docs/kernels.md's table.
	local name results=""
	for name in "${STEPS[@]}"; do
		# (A step may have printed nothing: grep then fails, which must not end us.)
		results+="$name"$'\t'"$({ grep -a . "$dir/${name//:/-}.log" 2>/dev/null || true; } | tail -n1 | tr -cd '[:print:]' | cut -c1-300)"$'\n'
	done
	steps=$(printf '%s\n' "${STEPS[@]}" | jq -R -n --rawfile ran <(cat "$dir/steps.tsv" 2>/dev/null || true) --arg results "$results" '
		($ran | split("\n") | map(select(. != "") | split("\t") | {key: .[0], value: {exit_code: (.[1] | tonumber), seconds: (.[2] | tonumber)}}) | from_entries) as $d
		| ($results | split("\n") | map(select(. != "") | split("\t") | {key: .[0], value: (.[1:] | join("\t"))}) | from_entries) as $res
		| [inputs | {name: ., exit_code: ($d[.].exit_code // null), seconds: ($d[.].seconds // null), result: ($res[.] // "")}]')
	jq -n \
		--arg kernel "$k" --arg suite "$K_SUITE" --arg package "$K_PKG" --arg version "$K_VERSION" \
		--arg release "$K_REL" --arg accel "$ACCEL" --argjson vng_exit "$GUEST_RC" \
		--argjson timed_out "$([ "$GUEST_RC" -eq 124 ] && echo true || echo false)" \
		--argjson guest_seconds "$GUEST_SECONDS" --argjson timeout "$VMTEST_TIMEOUT" \
		--arg memory "$VMTEST_MEMORY" --argjson cpus "$VMTEST_CPUS" --arg virtme_ng "$VNG_VERSION" \
		--arg khbpf "$KHBPF_VERSION" --arg commit "$COMMIT" --argjson guest "$guest" --argjson steps "$steps" --argjson probe "$probe" '
		{kernel: $kernel, suite: $suite, package: $package, package_version: $version,
		 release: ($guest.release // $release), accelerator: $accel,
		 boot_seconds: (($guest.boot_seconds // null) | if . then tonumber else null end),
		 guest_seconds: $guest_seconds, timeout_seconds: $timeout, timed_out: $timed_out,
		 vng_exit: $vng_exit, memory: $memory, cpus: $cpus, virtme_ng: $virtme_ng, khbpf: $khbpf,
		 commit: $commit, steps: $steps, guest: $guest, probe: $probe}' >"$OUT/$k.json"
}

# write_table KERNEL...: table.md over these kernels' results.
write_table() {
	local files=() k
	for k in "$@"; do files+=("$OUT/$k.json"); done
	jq -r -s '
		def cell: if .exit_code == null then "not run"
			elif .exit_code == 0 then "pass (\(.seconds) s)"
			else "**fail** (exit \(.exit_code), \(.seconds) s)" end;
		def uniq_keep_order: reduce .[] as $x ([]; if any(.[]; . == $x) then . else . + [$x] end);
		([.[].probe // {} | .collectors // [] | .[].collector] | uniq_keep_order) as $cols
		| ([.[].steps[].name] | uniq_keep_order) as $steps
		| "| kernel | release | accel | boot s | " + ($cols + $steps | join(" | ")) + " |",
		  "|" + ([range(4 + ($cols | length) + ($steps | length))] | map(" --- ") | join("|")) + "|",
		  (.[] | . as $r
		   | "| \(.kernel) | \(.release) | \(.accelerator)\(if .timed_out then " (timed out)" else "" end) | \(.boot_seconds // "-") | "
		     + ([$cols[] as $c | ($r.probe // {} | .collectors // [] | map(select(.collector == $c)) | .[0].availability // "-")]
		        + [$steps[] as $s | ($r.steps | map(select(.name == $s)) | .[0] | cell)] | join(" | ")) + " |")
	' "${files[@]}" >"$OUT/table.md"
}

# validate_later DIR: the documents the guest's steps left to validate
# (tests/integration/common.bash's validate() with KHBPF_VALIDATE_LATER:
# DIR/validate/STEP/{khbpf,keyhog}/), checked here against the two schemas,
# where Python is some 20 times faster than under TCG. A step whose
# documents fail is failed in steps.tsv (exit 65), the validator's words at
# the end of its log.
validate_later() {
	local dir=$1 sd name out rc line kind schema
	for sd in "$dir"/validate/*/; do
		[ -d "$sd" ] || continue
		name=$(basename "$sd")
		rc=0
		out=$(
			rc=0
			for kind in khbpf keyhog; do
				set -- "$sd$kind"/*.json
				[ -e "$1" ] || continue
				if [ $kind = khbpf ]; then schema=$ROOT/docs/khbpf-evidence.schema.json; else schema=$ROOT/docs/keyhog-profile.schema.json; fi
				/usr/bin/python3 "$ROOT/tests/validate_schema.py" "$schema" "$@" >/dev/null 2>"$sd/$kind.err" || rc=1
				cat "$sd/$kind.err"
			done
			exit $rc
		) || rc=$?
		[ "$rc" -eq 0 ] && continue
		# The step's line in steps.tsv names it with its colon.
		while IFS=$'\t' read -r line _; do
			[ "${line//:/-}" = "$name" ] && break
		done <"$dir/steps.tsv"
		printf 'vmtest: schema: the documents of this step do not validate (checked on the host)\n%s\n' "$out" >>"$dir/$name.log"
		awk -v n="$line" 'BEGIN { FS = OFS = "\t" } $1 == n && $2 == 0 { $2 = 65 } { print }' \
			"$dir/steps.tsv" >"$dir/steps.tsv.new" && mv "$dir/steps.tsv.new" "$dir/steps.tsv"
		log "  [$CUR_KERNEL] $line: FAIL, its documents do not validate: $(printf '%s' "$out" | head -n 3 | tr -cd '[:print:]\n' | tr '\n' ' ')"
	done
}

# run_kernel KERNEL: fetch (from the cache when it is there), boot, run the
# steps, write $OUT/K.json and say how it went.
run_kernel() {
	local kernel=$1 k dir start rc
	# The name as a file name (SUITE:PACKAGE has a colon).
	k=${kernel//[^A-Za-z0-9._+-]/_}
	CUR_KERNEL=$k
	fetch_kernel "$kernel"
	[ -n "$ACCEL" ] || choose_accel
	dir=$OUT/$k
	rm -rf "$dir" "$OUT/$k.json"
	mkdir -p "$dir"
	cp "$OUT/khbpf" "$dir/khbpf"
	log "[$k] booting $K_REL ($K_PKG $K_VERSION) with $ACCEL, timeout ${VMTEST_TIMEOUT} s"
	start=$SECONDS
	VMTEST_PROGRESS=$dir/steps.tsv \
		boot_guest "$dir/console.log" "$VMTEST_TIMEOUT" "$ACCEL" "$dir" \
		env VMTEST_STEP_TIMEOUT="$VMTEST_STEP_TIMEOUT" \
		KHBPF_TEST_EMULATED="$([ "$ACCEL" = tcg ] && echo 1 || true)" \
		bash "$SELF" --guest "$dir" "${STEPS[@]}"
	GUEST_SECONDS=$((SECONDS - start))
	validate_later "$dir"
	write_result "$k"
	if [ "$GUEST_RC" -ne 0 ] || [ ! -e "$dir/guest.tsv" ]; then
		log "[$k] guest FAILED (exit $GUEST_RC$([ "$GUEST_RC" -eq 124 ] && echo ", timed out after $VMTEST_TIMEOUT s")); see $dir/console.log"
	fi
	rc=$(jq '[.steps[] | select(.exit_code == 0)] | length' "$OUT/$k.json")
	log "[$k] done in ${GUEST_SECONDS} s (boot $(jq -r '.boot_seconds // "?"' "$OUT/$k.json") s): $rc of ${#STEPS[@]} steps passed"
}

main() {
	mkdir -p "$CACHE" "$OUT"
	# One run at a time: the cache and build/vmtest are shared.
	exec 9>"$CACHE/vmtest.lock"
	flock -n 9 || die "another vmtest.sh is running (lock $CACHE/vmtest.lock)"
	ensure_host_packages
	setup_apt
	setup_virtme_ng
	# The binary under test, copied (then into each guest's directory) so
	# that a rebuild of the tree during the run changes no guest's binary
	# half way through the matrix.
	cp "$KHBPF_SRC" "$OUT/khbpf"
	KHBPF_VERSION=$("$OUT/khbpf" --version 2>/dev/null | head -n1 || echo unknown)
	COMMIT=$(git -C "$ROOT" describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)
	log "virtme-ng $VNG_VERSION; $KHBPF_VERSION; kernels: $KERNELS; steps: ${STEPS[*]}"

	local kernel k passed=0 failed=0 guest_failed=0 ran=() rc running=0
	if [ "$VMTEST_JOBS" -gt 1 ]; then
		# Every kernel fetched first, one at a time (the cache and the
		# private apt lists are shared), then the guests booted side by
		# side: under TCG each is one host thread.
		for kernel in $KERNELS; do
			fetch_kernel "$kernel"
		done
		[ -n "$ACCEL" ] || choose_accel
		for kernel in $KERNELS; do
			if [ "$running" -ge "$VMTEST_JOBS" ]; then
				wait -n || true
				running=$((running - 1))
			fi
			(
				# A background job does not keep our traps: its own
				# guest and temporary directories go with it.
				GUEST_PID= TMP_DIRS=() BG_PIDS=()
				trap cleanup EXIT
				trap 'exit 143' TERM
				run_kernel "$kernel"
			) &
			BG_PIDS+=($!)
			running=$((running + 1))
		done
		wait || true
		BG_PIDS=()
	else
		for kernel in $KERNELS; do
			run_kernel "$kernel"
		done
	fi
	for kernel in $KERNELS; do
		k=${kernel//[^A-Za-z0-9._+-]/_}
		ran+=("$k")
		if [ ! -e "$OUT/$k.json" ]; then
			guest_failed=$((guest_failed + 1))
			failed=$((failed + ${#STEPS[@]}))
			continue
		fi
		if [ "$(jq '.vng_exit' "$OUT/$k.json")" -ne 0 ] || [ ! -e "$OUT/$k/guest.tsv" ]; then
			guest_failed=$((guest_failed + 1))
		fi
		rc=$(jq '[.steps[] | select(.exit_code == 0)] | length' "$OUT/$k.json")
		passed=$((passed + rc))
		failed=$((failed + ${#STEPS[@]} - rc))
	done
	write_table "${ran[@]}"
	cat "$OUT/table.md"
	# docs/kernels.md's matrix is the full default run's: a subset (KERNELS=,
	# VMTEST_TESTS=, as CI runs) leaves it as it is.
	/usr/bin/python3 "$ROOT/tools/vmtest_readme.py" "$OUT" "${ran[@]}" >"$OUT/README-kernels.md" ||
		log "could not write $OUT/README-kernels.md"
	if [ "$KERNELS" = "$DEFAULT_KERNELS" ] && [ "${TESTS[*]}" = "$DEFAULT_TESTS" ] && [ "${VMTEST_README:-1}" = 1 ]; then
		/usr/bin/python3 "$ROOT/tools/vmtest_readme.py" "$OUT" "${ran[@]}" --update "$ROOT/docs/kernels.md" &&
			log "docs/kernels.md: the Kernels table is this run's (VMTEST_README=0 leaves it)"
	fi
	echo "vmtest: $passed passed, $failed failed"
	if [ "$failed" -ne 0 ] || [ "$guest_failed" -ne 0 ]; then
		return 1
	fi
}

main

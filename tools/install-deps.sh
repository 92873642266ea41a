#!/bin/sh
# Install the Debian 12 packages khbpf needs, only those missing.
# Usage: tools/install-deps.sh [--check] [--with-tests] [--with-bench] [--with-fresh] [--with-package]
#   (no option)        what `make` needs: compilers, BPF tools, libraries, cmocka
#   --with-tests       also every program `make check`'s tests run (promtool,
#                      Chromium, valgrind, rustc, bpftrace, curl, capsh, ss...)
#   --with-bench       also the peers `make bench` compares with (perf, libbpf-tools, bpftrace)
#   --with-fresh       also debootstrap (`make fresh-check`)
#   --with-package     also debhelper and lintian (`make deb`), debootstrap and
#                      systemd-nspawn (`make package-check`)
#   --with-vmtest      also qemu and what virtme-ng needs on the host (`make vmtest`)
#   --check            print what is missing (one line) and exit 1 if anything is; install nothing
# --with-prometheus, --with-browser and --with-valgrind are kept as parts of --with-tests.
set -eu

# The build: gcc is cc (the Makefile's default CC), clang builds the BPF
# objects; --no-install-recommends leaves libc6-dev out unless named.
# systemtap-sdt-dev: <sys/sdt.h>, the USDT probes of a workload
# (tests/workloads/usdtbench.c), which every build of the workloads compiles.
# python3-docutils: rst2man, the man pages (docs/man/*.rst).
pkgs="make pkg-config gcc g++ libc6-dev clang llvm bpftool libbpf-dev libelf-dev libdw-dev zlib1g-dev libjson-c-dev libmicrohttpd-dev libcap-dev libcmocka-dev systemtap-sdt-dev python3-docutils"
# What the tests run, by command: python3 + jsonschema (schema checks and
# comparisons), libclang-rt-dev (libFuzzer), binutils (readelf, nm, objdump,
# objcopy, strip), procps (ps, pgrep), iproute2 (ss), curl, libcap2-bin
# (capsh), prometheus (promtool and the scrape test), valgrind, chromium and a
# font (the HTML report), rustc-web (a current rustc, for the Rust span example), util-linux (unshare,
# setpriv, mountpoint, su), findutils (xargs), bpftrace and libsqlite3-0 (--span on
# sqlite3_step counted against bpftrace's count; bpftrace -l against khbpf list),
# postgresql-15 (a server of the target-set tests, and USDT probes to list),
# bash-completion and man-db (the completion and the man pages, installed).
prometheus="prometheus libcap2-bin curl"
browser="chromium fonts-dejavu-core"
valgrind="valgrind"
tests="python3 python3-jsonschema bash-completion man-db postgresql-15 libclang-rt-dev binutils procps iproute2 util-linux findutils rustc-web bpftrace libsqlite3-0 $prometheus $browser $valgrind"
check_only=0
for arg in "$@"; do
	case "$arg" in
	--check) check_only=1 ;;
	--with-tests) pkgs="$pkgs $tests" ;;
	--with-prometheus) pkgs="$pkgs $prometheus" ;;
	--with-bench) pkgs="$pkgs linux-perf libbpf-tools bpftrace util-linux python3" ;;
	--with-browser) pkgs="$pkgs $browser" ;;
	--with-valgrind) pkgs="$pkgs $valgrind" ;;
	--with-fresh) pkgs="$pkgs debootstrap git tar gzip" ;;
	--with-package) pkgs="$pkgs dpkg-dev debhelper lintian debootstrap systemd-container" ;;
	--with-vmtest) pkgs="$pkgs qemu-system-x86 busybox-static udev kmod file jq python3 python3-argcomplete python3-requests python3-pkg-resources" ;;
	-h | --help)
		sed -n '2,13s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	*)
		echo "install-deps.sh: unknown option '$arg'; see --help" >&2
		exit 2
		;;
	esac
done

missing=""
for p in $(printf '%s\n' $pkgs | sort -u); do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = "installed" ] || missing="$missing $p"
done
missing=${missing# }

[ -z "$missing" ] && exit 0
if [ "$check_only" = 1 ]; then
	echo "$missing"
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "khbpf needs these Debian packages; run: sudo apt-get update && sudo apt-get install -y --no-install-recommends $missing" >&2
	exit 1
fi
echo "install-deps.sh: installing $missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086 # word splitting of the package list is intended
apt-get install -y -qq --no-install-recommends $missing >/dev/null

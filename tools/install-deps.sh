#!/bin/sh
# Install the Debian 12 packages khbpf needs, only those missing.
# Usage: tools/install-deps.sh [--check] [--with-prometheus] [--with-bench] [--with-browser] [--with-valgrind]
#   --check            list what is missing and exit 1 if anything is; install nothing
#   --with-prometheus  also require prometheus and capsh (the serve integration tests)
#   --with-bench       also require the peers `make bench` compares with (perf, libbpf-tools, bpftrace)
#   --with-browser     also require headless Chromium and a font (`make check` renders the HTML report)
#   --with-valgrind    also require valgrind (`make check` runs the demo under memcheck)
set -eu

pkgs="libbpf-dev clang libclang-rt-dev llvm bpftool libelf-dev zlib1g-dev libcmocka-dev libjson-c-dev libmicrohttpd-dev libcap-dev python3-jsonschema pkg-config make"
check_only=0
for arg in "$@"; do
	case "$arg" in
	--check) check_only=1 ;;
	--with-prometheus) pkgs="$pkgs prometheus libcap2-bin" ;;
	--with-bench) pkgs="$pkgs linux-perf libbpf-tools bpftrace util-linux" ;;
	--with-browser) pkgs="$pkgs chromium fonts-dejavu-core" ;;
	--with-valgrind) pkgs="$pkgs valgrind" ;;
	-h | --help)
		sed -n '2,8s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	*)
		echo "install-deps.sh: unknown option '$arg'; see --help" >&2
		exit 2
		;;
	esac
done

missing=""
for p in $pkgs; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = "installed" ] || missing="$missing $p"
done
missing=${missing# }

[ -z "$missing" ] && exit 0
if [ "$check_only" = 1 ]; then
	echo "missing packages: $missing" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "khbpf needs these Debian packages: $missing; run 'sudo apt-get install $missing' (or 'sudo tools/install-deps.sh')" >&2
	exit 1
fi
echo "install-deps.sh: installing $missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086 # word splitting of the package list is intended
apt-get install -y -qq --no-install-recommends $missing >/dev/null

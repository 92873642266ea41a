#!/bin/bash
# `make install DESTDIR=... PREFIX=...` lays out exactly the expected files
# (binary, one man page per command and khbpf(8), the unit with ExecStart
# pointing at the installed binary, the rules, the schemas, the docs, the
# bash completion), with their modes; `make uninstall` with the same
# variables removes every one of them and leaves no khbpf directory. Twice:
# the default /usr/local and the package's /usr with UNITDIR=/lib/systemd/system.
# Run by `make check`.
set -u
cd "$(dirname "$0")/../.." || exit 1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() {
	echo "install: $*" >&2
	fails=$((fails + 1))
}

commands=$(build/khbpf --help | awk '/^Commands:/{f=1;next} f&&/^$/{exit} f{print $1}')
[ -n "$commands" ] || fail "no commands in 'khbpf --help'"

check_layout() { # PREFIX UNITDIR (relative to DESTDIR)
	local prefix=$1 unitdir=$2 dest="$TMP/root" want got f left
	rm -rf "$dest"
	make --no-print-directory -s install DESTDIR="$dest" PREFIX="$prefix" ${unitdir:+UNITDIR="$unitdir"} \
		>"$TMP/log" 2>&1 || { fail "make install PREFIX=$prefix: $(tail -3 "$TMP/log")"; return; }
	[ -n "$unitdir" ] || unitdir=$prefix/lib/systemd/system
	want=$(
		{
			echo "755 $prefix/bin/khbpf"
			echo "644 $prefix/share/man/man8/khbpf.8"
			for c in $commands; do echo "644 $prefix/share/man/man8/khbpf-$c.8"; done
			echo "644 $unitdir/khbpf.service"
			echo "644 $prefix/share/bash-completion/completions/khbpf"
			for f in khbpf.rules.yml khbpf-evidence.schema.json keyhog-profile.schema.json; do
				echo "644 $prefix/share/khbpf/$f"
			done
			for f in README.md BENCHMARKS.md docs/*.md; do echo "644 $prefix/share/doc/khbpf/$(basename "$f")"; done
		} | sort
	)
	got=$(cd "$dest" && find . -type f -printf '%m /%P\n' | sort)
	[ "$got" = "$want" ] || fail "PREFIX=$prefix: the installed files differ from the expected:
$(diff <(echo "$want") <(echo "$got"))"
	grep -qx "ExecStart=$prefix/bin/khbpf serve .*" "$dest$unitdir/khbpf.service" ||
		fail "PREFIX=$prefix: the unit's ExecStart does not run $prefix/bin/khbpf: $(grep ExecStart= "$dest$unitdir/khbpf.service")"
	grep -q "/usr/local" "$dest$unitdir/khbpf.service" && [ "$prefix" != /usr/local ] &&
		fail "PREFIX=$prefix: the unit still names /usr/local: $(grep -n /usr/local "$dest$unitdir/khbpf.service")"
	"$dest$prefix/bin/khbpf" --version | grep -q . || fail "PREFIX=$prefix: the installed khbpf does not run"
	man -l "$dest$prefix/share/man/man8/khbpf-run.8" 2>&1 | grep -q -- "--no-children" ||
		fail "PREFIX=$prefix: khbpf-run(8) does not render with its options"
	make --no-print-directory -s uninstall DESTDIR="$dest" PREFIX="$prefix" ${2:+UNITDIR="$2"} >"$TMP/log" 2>&1 ||
		fail "make uninstall PREFIX=$prefix: $(tail -3 "$TMP/log")"
	left=$(cd "$dest" && find . \( -type f -o -name '*khbpf*' \) -printf '/%P\n')
	[ -z "$left" ] || fail "PREFIX=$prefix: make uninstall left: $left"
	rm -rf "$dest"
}

check_layout /usr/local ""
check_layout /usr /lib/systemd/system
[ "$fails" -eq 0 ] || exit 1
echo "install: the layout of /usr/local and /usr, and uninstall, as expected"

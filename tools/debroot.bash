# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# What tools/fresh-check.sh and tools/package-check.sh do to a root made by
# debootstrap, sourced by both.

# debroot_unpack TARBALL ROOT SUITE: a fresh copy of the cached root in ROOT,
# with the host's resolver and apt sources as a Debian machine as installed
# has them: debootstrap lists the release alone, an installed machine also
# its updates and security suites (where current packages such as rustc-web
# are), at the mirror's usual -security sibling.
debroot_unpack() {
	local tarball=$1 root=$2 suite=$3 uri
	mkdir -p "$root"
	tar -C "$root" -xzf "$tarball"
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	uri=$(awk '$1 == "deb" {print $2; exit}' "$root/etc/apt/sources.list")
	printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s-security %s-security main\n' \
		"$uri" "$suite" "$uri" "$suite" "${uri%/}" "$suite" >"$root/etc/apt/sources.list"
}

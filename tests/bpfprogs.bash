# Sourced by tests/run.sh and tests/integration/common.bash.

# Programs of ours (probe_*/khbpf_*) still loaded with no live process
# holding them: after our khbpf exited, those were leaked by it. Programs a
# running process holds (another khbpf session on this host) are not ours.
orphan_progs() {
	local ids held id
	ids=$(bpftool prog show 2>/dev/null | sed -nE 's/^([0-9]+): .* name (probe_|khbpf_).*/\1/p')
	[ -n "$ids" ] || return 0
	held=$(grep -hs '^prog_id:' /proc/[0-9]*/fdinfo/* | awk '{print $2}' | sort -u)
	for id in $ids; do
		grep -qx "$id" <<<"$held" || echo "$id"
	done
}

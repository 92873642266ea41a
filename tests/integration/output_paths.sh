#!/bin/bash
# Output paths that cannot or must not be written, for `run`/`attach -o` and
# `serve --ndjson`: a missing directory, a read-only one (by mode and by
# mount), a full file system (a small tmpfs), a symbolic link, a FIFO. Each:
# one stderr line naming the path and what to do, exit 1, no partial output
# and no temp file, nothing started, no BPF program left. Also: file modes
# (0644 whatever the umask, 0600 with --private), and SIGINT/SIGTERM
# floods through the write phase leave a complete document, never a part;
# the line -o prints when its file is written (none with --quiet).
#
# Every case runs in a subshell, so one failed expectation does not hide the
# others; the script fails if any case failed.
. "$(dirname "$0")/common.bash"
require_root "attach/run load BPF; mounts tmpfs"
exec </dev/null
MNT="$TMP/mnt"
mkdir "$MNT"

sleep 600 &
LIVE=$!
trap 'rc=$?; kill "$LIVE" 2>/dev/null; wait "$LIVE" 2>/dev/null; unmount_all "$MNT"; keep_failed $rc' EXIT

# no_temp DIR: no .khbpf-out.* left in DIR.
no_temp() {
	! compgen -G "$1/.khbpf-out.*" >/dev/null || fail "temporary file left in $1: $(ls -A "$1")"
}

# refused PATTERN CMD ARGS...: khbpf exits 1 with one line matching PATTERN,
# nothing on stdout, no BPF left.
refused() {
	local pat=$1
	shift
	expect_exit 1 timeout -k 5 20 "$KHBPF" "$@"
	expect_one_line_error
	grep -q -- "$pat" "$TMP/err" || fail "error does not say '$pat': $(cat "$TMP/err")"
	[ ! -s "$TMP/out" ] || fail "unexpected stdout: $(head -c 300 "$TMP/out")"
	no_bpf_left
}

# late_refused PATTERN CMD ARGS...: as refused, for a failure after the
# window (its progress lines come first): one error line, the last.
late_refused() {
	local pat=$1 cmd=$2
	shift 2
	expect_exit 1 timeout -k 5 20 "$KHBPF" "$cmd" "$@"
	[ "$(grep -c "^khbpf $cmd: " "$TMP/err")" -eq 1 ] || fail "expected one error line: $(cat "$TMP/err")"
	tail -n 1 "$TMP/err" | grep -q -- "^khbpf $cmd: .*$pat" ||
		fail "last stderr line does not say '$pat': $(cat "$TMP/err")"
	[ ! -s "$TMP/out" ] || fail "unexpected stdout: $(head -c 300 "$TMP/out")"
	no_bpf_left
}

# bad_path PATTERN PATH: run and attach both refuse -o PATH before starting
# anything (the command does not run; attach does not wait its window).
bad_path() {
	local pat=$1 path=$2 t0
	rm -f "$TMP/ran"
	refused "$pat" run -o "$path" -- touch "$TMP/ran"
	[ ! -e "$TMP/ran" ] || fail "run -o '$path' started the command"
	t0=$SECONDS
	refused "$pat" attach --pid "$LIVE" --duration 15 -o "$path"
	# Well under the window (the 7.2 TCG guest's refusal took 4 s).
	[ $((SECONDS - t0)) -lt 10 ] || fail "attach -o '$path' ran its window before failing"
}

missing_dir_case() {
	bad_path "does not exist" "$TMP/no/such/dir/x.json"
}

readonly_mode_case() {
	# Root-owned 0555: root may not write there once it holds no capability.
	mkdir -m 0555 "$TMP/ro"
	bad_path "cannot create files in '$TMP/ro' (Permission denied" "$TMP/ro/x.json"
	[ -z "$(ls -A "$TMP/ro")" ] || fail "files left in $TMP/ro"
}

readonly_mount_case() {
	mount -t tmpfs -o ro,size=64k tmpfs "$MNT" || fail "mount"
	trap 'unmount_all "$MNT"' EXIT
	bad_path "Read-only file system" "$MNT/x.json"
}

symlink_case() {
	echo keep >"$TMP/victim"
	ln -s "$TMP/victim" "$TMP/link.json"
	ln -s "$TMP/nowhere" "$TMP/dangling.json"
	bad_path "is a symbolic link" "$TMP/link.json"
	bad_path "is a symbolic link" "$TMP/dangling.json"
	[ "$(cat "$TMP/victim")" = keep ] || fail "the link's target was written"
	[ -L "$TMP/link.json" ] && [ -L "$TMP/dangling.json" ] || fail "a link was replaced"
	[ ! -e "$TMP/nowhere" ] || fail "the dangling link's target was created"
	no_temp "$TMP"
}

fifo_case() {
	mkfifo "$TMP/fifo.json"
	bad_path "is not a regular file" "$TMP/fifo.json"
	[ -p "$TMP/fifo.json" ] || fail "the FIFO was replaced"
	no_temp "$TMP"
}

# Under sudo the file is written as the invoking user, who may not replace
# root's file in a sticky directory: said before anything runs.
sticky_case() {
	chmod 0711 "$TMP"
	mkdir -m 1777 "$TMP/sticky"
	echo old >"$TMP/sticky/doc.json"
	export SUDO_UID=65534 SUDO_GID=65534 # this case's subshell only
	refused "may not replace it" run -o "$TMP/sticky/doc.json" -- touch "$TMP/sticky/ran"
	[ ! -e "$TMP/sticky/ran" ] || fail "run started the command"
	[ "$(cat "$TMP/sticky/doc.json")" = old ] || fail "root's file was changed"
	[ "$(ls -A "$TMP/sticky")" = doc.json ] || fail "files left in $TMP/sticky"
}

# A tmpfs of 64 KiB holding an old document and a filler that leaves 4 KiB:
# a document of 15 KB cannot fit.
full_disk_case() {
	local cmd
	expect_exit 0 "$KHBPF" run -o "$TMP/size.json" -- true
	[ "$(stat -c %s "$TMP/size.json")" -gt 8192 ] || fail "the document is too small for this test"
	mount -t tmpfs -o size=64k tmpfs "$MNT" || fail "mount"
	trap 'unmount_all "$MNT"' EXIT
	echo old >"$MNT/doc.json"
	checkpoint tmpfs-mounted
	dd if=/dev/zero of="$MNT/filler" bs=4k count=14 status=none || fail "filler"
	for cmd in run attach; do
		if [ "$cmd" = run ]; then
			late_refused "No space left on device" run -o "$MNT/doc.json" -- true
			late_refused "No space left on device" run -o "$MNT/new.json" -- true
		else
			late_refused "No space left on device" attach --pid "$LIVE" --duration 0.3 -o "$MNT/doc.json"
			late_refused "No space left on device" attach --pid "$LIVE" --duration 0.3 -o "$MNT/new.json"
		fi
		[ "$(cat "$MNT/doc.json")" = old ] || fail "$cmd: the old document was changed"
		[ ! -e "$MNT/new.json" ] || fail "$cmd: a partial new document was left"
		no_temp "$MNT"
	done
}

modes_case() {
	(umask 077 && expect_exit 0 "$KHBPF" run -o "$TMP/m.json" -- true) || exit 1
	[ "$(stat -c %a "$TMP/m.json")" = 644 ] || fail "mode $(stat -c %a "$TMP/m.json") under umask 077, expected 644"
	(umask 0 && expect_exit 0 "$KHBPF" run --private -o "$TMP/m.json" -- true) || exit 1
	[ "$(stat -c %a "$TMP/m.json")" = 600 ] || fail "--private gave mode $(stat -c %a "$TMP/m.json")"
	expect_exit 0 "$KHBPF" attach --private --pid "$LIVE" --duration 0.2 -o "$TMP/a.json"
	[ "$(stat -c %a "$TMP/a.json")" = 600 ] || fail "attach --private gave mode $(stat -c %a "$TMP/a.json")"
	json_check "$TMP/m.json" "d['target']['mode'] == 'run'"
}

# -o says what it wrote, in one line counted from the document (its size
# from the file); --quiet says nothing; -o - (stdout) says nothing either.
written_case() {
	local line
	expect_exit 0 "$KHBPF" run -o "$TMP/w.json" -- build/workloads/spanned --iterations 2
	line=$(grep '^khbpf run: wrote ' "$TMP/err")
	[ "$(grep -c '^khbpf run: wrote ' "$TMP/err")" -eq 1 ] || fail "no wrote line: $(cat "$TMP/err")"
	"$PYTHON" - "$TMP/w.json" "$line" <<'PY' || fail "the wrote line disagrees with the document: $line"
import json, os, re, sys
path, line = sys.argv[1], sys.argv[2]
d = json.load(open(path))
m = re.fullmatch(r"khbpf run: wrote (\S+) \((\d+)\.(\d) (KiB|MiB)\): (\d+) process(?:es)?, (\d+) threads?, (\d+) span records?", line)
assert m, line
assert m.group(1) == path, m.group(1)
size = os.path.getsize(path)
tenths = int(m.group(2)) * 10 + int(m.group(3))
unit = 2**10 if m.group(4) == "KiB" else 2**20
assert abs(tenths - size * 10 / unit) <= 0.5, (tenths, size)
assert int(m.group(5)) == len(d["processes"]), (m.group(5), len(d["processes"]))
assert int(m.group(6)) == len(d["threads"]), (m.group(6), len(d["threads"]))
assert int(m.group(7)) == len(d["events"]["spans"]) > 0, (m.group(7), len(d["events"]["spans"]))
PY
	# Without spans: no span count; with --quiet: no line at all.
	expect_exit 0 "$KHBPF" attach --pid "$LIVE" --duration 0.2 -o "$TMP/a.json"
	grep -qx "khbpf attach: wrote $TMP/a.json ([0-9.]* KiB): 1 process, 1 thread" "$TMP/err" ||
		fail "attach's wrote line: $(cat "$TMP/err")"
	expect_exit 0 "$KHBPF" attach -q --pid "$LIVE" --duration 0.2 -o "$TMP/a.json"
	! grep -q 'wrote' "$TMP/err" || fail "--quiet still said: $(cat "$TMP/err")"
	expect_exit 0 "$KHBPF" run -o - -- true
	! grep -q 'wrote' "$TMP/err" || fail "-o - said: $(cat "$TMP/err")"
}

# serve --ndjson: refused at start (never waiting on a FIFO), or written in
# whole lines only.
serve_refused_case() {
	mkfifo "$TMP/nd.fifo"
	ln -s "$TMP/nd.target" "$TMP/nd.link"
	refused "not a regular file" serve --listen 127.0.0.1:0 --pid "$LIVE" --ndjson "$TMP/nd.fifo"
	refused "symbolic link" serve --listen 127.0.0.1:0 --pid "$LIVE" --ndjson "$TMP/nd.link"
	refused "No such file or directory" serve --listen 127.0.0.1:0 --pid "$LIVE" --ndjson "$TMP/no/nd.json"
	[ ! -e "$TMP/nd.target" ] || fail "serve wrote through the link"
}

# serve_for SECONDS ARGS...: serve, then SIGINT; its exit code is returned.
serve_for() {
	local secs=$1 k rc
	shift
	: >"$TMP/serve.err" # fresh: wait_for must not read a line of an earlier start
	"$KHBPF" serve --listen 127.0.0.1:0 --interval 1 "$@" 2>"$TMP/serve.err" &
	k=$!
	sleep "$secs"
	kill -INT "$k"
	wait "$k"
	rc=$?
	no_bpf_left
	return $rc
}

serve_modes_case() {
	(umask 077 && serve_for 1.5 --pid "$LIVE" --ndjson "$TMP/nd.json") || fail "serve exited $?: $(cat "$TMP/serve.err")"
	[ "$(stat -c %a "$TMP/nd.json")" = 644 ] || fail "ndjson mode $(stat -c %a "$TMP/nd.json")"
	serve_for 1.5 --private --pid "$LIVE" --ndjson "$TMP/ndp.json" || fail "serve --private exited $?"
	[ "$(stat -c %a "$TMP/ndp.json")" = 600 ] || fail "--private ndjson mode $(stat -c %a "$TMP/ndp.json")"
}

# 24 KiB free, about 9 KB a line: the first windows fit, then the disk is
# full; whole lines only, and the failed last window makes the exit 1.
serve_full_case() {
	local rc
	mount -t tmpfs -o size=64k tmpfs "$MNT" || fail "mount"
	trap 'unmount_all "$MNT"' EXIT
	dd if=/dev/zero of="$MNT/filler" bs=4k count=10 status=none || fail "filler"
	serve_for 5.5 --pid "$LIVE" --ndjson "$MNT/nd.json"
	rc=$?
	[ "$rc" -eq 1 ] || fail "serve on a full disk exited $rc, expected 1: $(cat "$TMP/serve.err")"
	grep -q "No space left on device" "$TMP/serve.err" || fail "no ENOSPC reported: $(cat "$TMP/serve.err")"
	"$PYTHON" - "$MNT/nd.json" <<'PY' || fail "ndjson holds a partial line"
import json, sys
data = open(sys.argv[1], "rb").read()
assert data == b"" or data.endswith(b"\n"), "no final newline"
lines = data.splitlines()
assert len(lines) >= 1, "no window fitted"
for l in lines:
    assert json.loads(l)["target"]["mode"] == "serve"
PY
}

# SIGTERM/SIGINT every millisecond from the window's end until khbpf exits:
# the document is whole (signals are held while it is built and written).
signal_flood_case() {
	local sig round k rc
	for round in 1 2 3; do
		for sig in TERM INT; do
			rm -f "$TMP/f.json" "$TMP/k.err"
			"$KHBPF" attach --pid "$LIVE" -o "$TMP/f.json" 2>"$TMP/k.err" &
			k=$!
			for _ in $(seq 400); do grep -q "watching pid" "$TMP/k.err" && break; sleep 0.05; done
			while kill -"$sig" "$k" 2>/dev/null; do sleep 0.001; done
			wait "$k"
			rc=$?
			[ "$rc" -eq 0 ] || fail "attach flooded with SIG$sig exited $rc: $(cat "$TMP/k.err")"
			json_check "$TMP/f.json" "d['window']['end_reason'] == 'signal'" "len(d['threads']) == 1"
			no_temp "$TMP"
		done
		rm -f "$TMP/f.json" "$TMP/k.err"
		"$KHBPF" run -o "$TMP/f.json" -- sleep 30 2>"$TMP/k.err" &
		k=$!
		for _ in $(seq 400); do grep -q "watching pid" "$TMP/k.err" && break; sleep 0.05; done
		while kill -TERM "$k" 2>/dev/null; do sleep 0.001; done
		wait "$k"
		rc=$?
		[ "$rc" -eq 143 ] || fail "run flooded with SIGTERM exited $rc: $(cat "$TMP/k.err")"
		json_check "$TMP/f.json" "d['target']['exit']['value'] == {'signal': 15}"
		no_temp "$TMP"
	done
	no_bpf_left
}

case_ "-o in a missing directory" missing_dir_case
case_ "-o in a read-only directory (mode)" readonly_mode_case
case_ "-o on a read-only mount" readonly_mount_case
case_ "-o is a symlink" symlink_case
case_ "-o is a FIFO" fifo_case
case_ "-o is root's file in a sticky directory, under sudo" sticky_case
case_ "-o on a full file system" full_disk_case
case_ "file modes and --private" modes_case
case_ "-o says what it wrote; --quiet does not" written_case
case_ "serve --ndjson refused paths" serve_refused_case
case_ "serve --ndjson modes" serve_modes_case
case_ "serve --ndjson on a full file system" serve_full_case
case_ "signals during the write phase" signal_flood_case

cases_done output_paths

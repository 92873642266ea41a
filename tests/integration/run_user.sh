#!/bin/bash
# Under sudo, `khbpf run` starts CMD as the invoking user (SUDO_UID/SUDO_GID
# and that user's groups), and as root only with --as-root.
. "$(dirname "$0")/common.bash"
require_root "run loads BPF and changes user"
chmod 0777 "$TMP"
probe_ids='id -u > "$0/uid"; id -g > "$0/gid"; id -G > "$0/groups"'

expect_exit 0 env SUDO_UID=65534 SUDO_GID=65534 SUDO_USER=nobody \
	"$KHBPF" run -o "$TMP/doc.json" -- sh -c "$probe_ids" "$TMP"
[ "$(cat "$TMP/uid")" = 65534 ] || fail "CMD ran as uid $(cat "$TMP/uid"), expected 65534"
[ "$(cat "$TMP/gid")" = 65534 ] || fail "CMD ran as gid $(cat "$TMP/gid"), expected 65534"
[ "$(cat "$TMP/groups")" = "$(id -G nobody)" ] ||
	fail "CMD's groups '$(cat "$TMP/groups")' are not nobody's '$(id -G nobody)'"
# The document is still khbpf's (root-owned collector, user's command).
json_check "$TMP/doc.json" \
	"[c['availability'] for c in d['collectors'] if c['collector'] == 'scheduler-activity'] == ['available']" \
	"d['target']['exit']['value'] == {'code': 0}"

expect_exit 0 env SUDO_UID=65534 SUDO_GID=65534 "$KHBPF" run --as-root -- sh -c "$probe_ids" "$TMP"
[ "$(cat "$TMP/uid")" = 0 ] || fail "--as-root: CMD ran as uid $(cat "$TMP/uid")"

# A malformed SUDO_UID is refused, not guessed at: CMD does not run.
rm -f "$TMP/uid"
expect_exit 126 env SUDO_UID=abc SUDO_GID=0 "$KHBPF" run -- sh -c "$probe_ids" "$TMP"
expect_one_line_error
grep -q "SUDO_UID=abc" "$TMP/err" || fail "the error does not name SUDO_UID: $(cat "$TMP/err")"
[ ! -e "$TMP/uid" ] || fail "CMD ran despite a malformed SUDO_UID"
echo "run_user: ok"

#!/bin/bash
# The repository is self-contained: nothing in it reads a path outside the
# clone (no sibling directories, no spec copy elsewhere), the tests validate
# against the repository's own schema, and that validation can fail: a
# document is refused by a schema broken on purpose, and a broken document
# by the real one.
. "$(dirname "$0")/common.bash"

# Every tracked file but binary fixtures. The pattern is put together here
# so that this file does not match itself.
up='\.\./' work=/work
outside=$(git grep -nIE "${up}shared|${work}/shared|${up}\.library" -- . || true)
[ -z "$outside" ] || fail "files read a path outside the repository: $outside"

repo=$(realpath .)
case "$(realpath "$SCHEMA")" in
"$repo"/*) ;;
*) fail "the schema the tests use, $SCHEMA, is outside the repository" ;;
esac
[ "$SCHEMA" = docs/khbpf-evidence.schema.json ] ||
	fail "tests validate against $SCHEMA, not docs/khbpf-evidence.schema.json"
grep -q 'docs/khbpf-evidence.schema.json' README.md || fail "README does not link the schema"
grep -q 'docs/evidence.md' README.md || fail "README does not link the document's description"
[ -s docs/evidence.md ] || fail "docs/evidence.md is missing"

# A real document, then the schema's verdicts on it.
expect_exit 0 "$KHBPF" run --no-bpf -o "$TMP/doc.json" -- /bin/true
expect_exit 0 "$PYTHON" tests/validate_schema.py "$SCHEMA" "$TMP/doc.json"

# Broken schema: every document must now carry a key no document has.
"$PYTHON" - "$SCHEMA" "$TMP/broken.schema.json" <<'PY' || fail "cannot break the schema"
import json, sys
s = json.load(open(sys.argv[1]))
s["required"] = list(s.get("required", [])) + ["no-such-key-in-any-document"]
json.dump(s, open(sys.argv[2], "w"))
PY
expect_exit 1 "$PYTHON" tests/validate_schema.py "$TMP/broken.schema.json" "$TMP/doc.json"
grep -q 'no-such-key-in-any-document' "$TMP/out" "$TMP/err" ||
	fail "the broken schema's refusal does not name the missing key"

# Broken document: a float where the schema wants an exact integer.
"$PYTHON" - "$TMP/doc.json" "$TMP/float.json" <<'PY' || fail "cannot break the document"
import json, sys
d = json.load(open(sys.argv[1]))
d["window"]["wall_ns"] = 1.5
json.dump(d, open(sys.argv[2], "w"))
PY
expect_exit 1 "$PYTHON" tests/validate_schema.py "$SCHEMA" "$TMP/float.json"
echo "self_contained: no outside paths; schema $SCHEMA accepts the document and refuses both breakages"

#!/usr/bin/python3
"""Validate khbpf evidence documents against the shared JSON Schema.

Usage: validate_schema.py SCHEMA FILE...

Beyond the schema, checks what JSON Schema cannot express: the text is
strict UTF-8, no number is a float (integers must stay exact), and no key
repeats within an object.
"""
import json
import sys

import jsonschema


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise ValueError(f"duplicate keys: {sorted(dup)}")
    return dict(pairs)


def reject_float(text):
    raise ValueError(f"float in document: {text}")


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)
    failed = 0
    for path in argv[2:]:
        try:
            with open(path, "rb") as f:
                raw = f.read()
            doc = json.loads(raw.decode("utf-8", errors="strict"),
                             object_pairs_hook=no_duplicates,
                             parse_float=reject_float)
            errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
            if errors:
                failed += 1
                for e in errors[:5]:
                    loc = "/".join(str(p) for p in e.path)
                    print(f"{path}: /{loc}: {e.message[:300]}", file=sys.stderr)
            else:
                print(f"schema ok: {path}")
        except (OSError, ValueError, UnicodeDecodeError) as e:
            failed += 1
            print(f"{path}: {e}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

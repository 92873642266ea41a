#!/bin/sh
# Rebuilds the ELF seeds of tests/fuzz/corpus/spannote from the span
# fixtures and workloads (they are committed; run this after changing those).
# The *-small ones are packed (no page alignment) so that mutations hit
# headers and notes rather than padding.
# Usage: tests/fuzz/make-elf-seeds.sh   (from the repository root, after make workloads)
set -eu
out=tests/fuzz/corpus/spannote
fx=tests/fixtures/spanfind
small="-nostdlib -Wl,-z,noseparate-code -Wl,-z,max-page-size=16"
mkdir -p "$out"
# shellcheck disable=SC2086 # $small is a list of flags
clang -O2 -g0 -Iinclude -shared -fPIC $small "$fx/libspanlib.c" -o "$out/libspanlib-small.so"
strip --strip-all "$out/libspanlib-small.so" -o "$out/libspanlib-small.stripped.so"
# shellcheck disable=SC2086
gcc -O2 -g0 -Iinclude -shared -fPIC $small "$fx/badmain.c" "$fx/badnotes.s" -o "$out/badnotes-small.so"
gcc -O2 -g0 -Iinclude "$fx/badmain.c" "$fx/badnotes.s" -o "$out/badnotes"
strip --strip-all build/workloads/spanned -o "$out/spanned.stripped"

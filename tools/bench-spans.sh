#!/bin/sh
# Cost per span: khbpf, an empty uprobe+uretprobe pair and bpftrace, side by
# side in one run (see BENCHMARKS.md). Needs root, build/khbpf,
# build/tools/bench-span-floor, build/workloads/spanbench (clang), bpftrace,
# bpftool and binutils. Writes build/bench/spans.md and build/bench/spans.json.
set -eu
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "bench-spans: needs root (loads BPF); run 'sudo make bench'" >&2; exit 1; }
exec /usr/bin/python3 tools/bench_spans.py "$@"

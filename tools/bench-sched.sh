#!/bin/sh
# Scheduler-collector overhead, side by side in one run (see BENCHMARKS.md).
# Needs root, build/khbpf, build/tools/bench-empty, perf and libbpf-tools.
# Writes build/bench/sched.md and build/bench/sched.json.
set -eu
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "bench-sched: needs root (loads BPF); run 'sudo make bench'" >&2; exit 1; }
exec /usr/bin/python3 tools/bench_sched.py "$@"

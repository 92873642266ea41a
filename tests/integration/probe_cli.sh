#!/bin/bash
# `khbpf probe` on this machine tells the truth, as root and as nobody, and
# its command line rejects bad input with one line and the right exit code.
. "$(dirname "$0")/common.bash"
require_root "probe loads BPF"

expect_exit 0 "$KHBPF" probe --json
cp "$TMP/out" "$TMP/probe.json"
cap() { echo "[c['availability'] for c in d['collectors'] if c['collector']=='$1'][0]"; }
json_check "$TMP/probe.json" \
	"$(cap scheduler-activity) == 'available'" \
	"$(cap span-probes) == 'available'" \
	"$(cap cpu-topology) == 'available'" \
	"$(cap thread-utilization) == 'available'" \
	"d['host']['logical_cpus'] == $(nproc --all)" \
	"all(c['result'] == 'ok' for c in d['checks'] if c['name'].startswith('tp-btf-'))" \
	"[c['observed'] for c in d['checks'] if c['name'] == 'uprobe'] == [3]" \
	"all('detail' in c for c in d['collectors'] if c['availability'] != 'available')"

# Kernel features: each one khbpf depends on, decided by a probe (root: none
# unknown), with a fallback named wherever one stands in; the release where
# each appeared is information only.
feat() { echo "[f for f in d['kernel_features'] if f['name']=='$1'][0]"; }
json_check "$TMP/probe.json" \
	"[f['name'] for f in d['kernel_features']] == ['tp-btf', 'task-storage', 'sched-switch-prev-state', 'ringbuf', 'task-iterator', 'get-current-task-btf', 'attach-cookie', 'optimized-uprobes', 'uretprobe-syscall', 'bpf-run-stats', 'atomic-fetch', 'uprobe-multi', 'preempt-kfuncs', 'bpf-mem-alloc']" \
	"all(f['use'] in ('used', 'fallback', 'not-needed', 'missing') for f in d['kernel_features'])" \
	"all(f['detected_by'] in ('btf', 'libbpf-probe', 'probe-program') for f in d['kernel_features'])" \
	"all((f['use'] == 'used') == f['present']['value'] for f in d['kernel_features'])" \
	"all(f['detail'] for f in d['kernel_features'] if f['use'] == 'fallback')" \
	"$(feat tp-btf)['use'] == 'used' and $(feat ringbuf)['use'] == 'used' and $(feat task-iterator)['use'] == 'used'" \
	"$(feat uprobe-multi)['detected_by'] == 'probe-program'"
expect_exit 0 "$KHBPF" probe
grep -q "^Kernel features" "$TMP/out" || fail "probe text has no kernel features"
grep -Eq "^  task-storage +(used|fallback) " "$TMP/out" || fail "probe text does not say how task storage is used"

# Hardware counters: this VM has no core PMU in /sys/bus/event_source, so
# perf_event_open(PERF_TYPE_HARDWARE) fails with ENOENT → unsupported.
if [ -d /sys/bus/event_source/devices/cpu ] || [ -d /sys/bus/event_source/devices/cpu_core ]; then
	json_check "$TMP/probe.json" "$(cap hardware-counters) in ('available', 'permission-denied')"
else
	json_check "$TMP/probe.json" "$(cap hardware-counters) == 'unsupported'" \
		"'PMU' in [c for c in d['collectors'] if c['collector']=='hardware-counters'][0]['detail']"
fi

# The collectors list is schema-valid on its own (wrapped in a minimal document).
"$PYTHON" - "$TMP/probe.json" "$TMP/wrapped.json" <<'PY' || fail "cannot wrap probe output"
import json, sys
p = json.load(open(sys.argv[1]))
doc = {"collectors": p["collectors"], "hardware": {"status": "unavailable", "reason": "collector-disabled"},
       "events": {"version": 1, "availability": {"status": "unavailable", "reason": "collector-disabled"},
                  "dropped_events": 0, "dropped_span_events": 0, "dropped_point_events": 0,
                  "dropped_annotations": 0, "sampled_out_events": 0, "spans": [], "point_events": [],
                  "annotations": []}}
json.dump(doc, open(sys.argv[2], "w"))
PY
"$PYTHON" tests/validate_schema.py "$SCHEMA" "$TMP/wrapped.json" >/dev/null || fail "probe collectors do not validate"

# Text output names every collector.
expect_exit 0 "$KHBPF" probe
for c in scheduler-activity span-probes hardware-counters thread-utilization cpu-topology; do
	grep -q "^  $c " "$TMP/out" || fail "text output lacks $c"
done

# -o writes the JSON atomically; a missing directory fails cleanly.
expect_exit 0 "$KHBPF" probe -o "$TMP/p2.json"
[ ! -s "$TMP/out" ] || fail "-o also wrote to stdout"
json_check "$TMP/p2.json" "len(d['collectors']) == 5"
expect_exit 1 "$KHBPF" probe -o "$TMP/no/such/dir/p.json"
expect_one_line_error
[ ! -e "$TMP/no" ] || fail "a failed -o created something"
mkfifo "$TMP/fifo"
expect_exit 1 "$KHBPF" probe -o "$TMP/fifo"
expect_one_line_error

# Bad usage: exit 2 with one line.
expect_exit 2 "$KHBPF" probe --bogus
grep -q "khbpf probe" "$TMP/err" || fail "usage error does not name the command"
expect_exit 2 "$KHBPF" probe extra-arg
expect_one_line_error
expect_exit 2 "$KHBPF" no-such-command
expect_one_line_error
expect_exit 0 "$KHBPF" probe --help
grep -q "Examples:" "$TMP/out" || fail "probe --help has no examples"

# As an unprivileged user: BPF collectors are permission-denied, with the fix.
if command -v setpriv >/dev/null; then
	expect_exit 0 setpriv --reuid=65534 --regid=65534 --clear-groups "$KHBPF" probe --json
	cp "$TMP/out" "$TMP/nobody.json"
	json_check "$TMP/nobody.json" \
		"$(cap scheduler-activity) == 'permission-denied'" \
		"'CAP_BPF' in [c for c in d['collectors'] if c['collector']=='scheduler-activity'][0]['detail']" \
		"$(cap span-probes) == 'permission-denied'" \
		"$(feat tp-btf)['detected_by'] == 'btf'" \
		"$(feat atomic-fetch)['use'] == 'unknown'" \
		"$(feat uprobe-multi)['detected_by'] == 'btf'"
fi
echo "probe_cli: ok"

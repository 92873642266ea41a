#!/bin/bash
# The Prometheus text that promtext writes passes `promtool check metrics`
# (Debian's prometheus package) with no complaint at all: parse errors and
# lint warnings both fail. The sample is a realistic exposition (info,
# counters with and without a unit, a gauge, log2 histograms, hostile label
# values) written by build/tests/serve/test_promtext. The OpenMetrics variant is
# checked with the prometheus_client OpenMetrics parser when python3 has it
# (promtool knows only the text format).
. "$(dirname "$0")/common.bash"

TEST_PROMTEXT=${BUILD:-build}/tests/serve/test_promtext
PROMTOOL=${PROMTOOL:-$(command -v promtool)}

if [ -z "$PROMTOOL" ]; then
	[ "${CI:-}" = true ] && fail "promtool not found; install Debian's prometheus package (tools/install-deps.sh --with-prometheus)"
	echo "SKIP $(basename "$0"): promtool not found (apt-get install prometheus)"
	exit 0
fi
[ -x "$TEST_PROMTEXT" ] || fail "$TEST_PROMTEXT not built; run 'make unit-tests'"

KHBPF_TEST_OUT="$TMP" "$TEST_PROMTEXT" >"$TMP/unit.log" 2>&1 ||
	fail "$TEST_PROMTEXT failed: $(tail -n 20 "$TMP/unit.log")"
[ -s "$TMP/promtext-sample.prom" ] || fail "no sample written to $TMP/promtext-sample.prom"
[ -s "$TMP/promtext-sample.om" ] || fail "no sample written to $TMP/promtext-sample.om"

# promtool_check FILE: promtool's exit code and its whole output (lint
# problems are printed, parse errors too).
promtool_check() {
	"$PROMTOOL" check metrics <"$1" >"$TMP/promtool.out" 2>&1
}

# The check can fail: a counter without _total is a lint problem and a
# broken line a parse error.
printf '# HELP x_count A counter.\n# TYPE x_count counter\nx_count 1\n' >"$TMP/lint.prom"
promtool_check "$TMP/lint.prom" && [ ! -s "$TMP/promtool.out" ] &&
	fail "promtool did not complain about a counter without _total"
printf '# TYPE y gauge\ny{a="b} 1\n' >"$TMP/broken.prom"
promtool_check "$TMP/broken.prom" && fail "promtool accepted a broken label value"

promtool_check "$TMP/promtext-sample.prom" || fail "promtool check metrics failed: $(cat "$TMP/promtool.out")"
[ -s "$TMP/promtool.out" ] && fail "promtool check metrics complained: $(cat "$TMP/promtool.out")"
echo "promtool check metrics: clean"
grep -q '^khbpf_runq_latency_seconds_bucket{cgroup="/system.slice/nginx.service",le="+Inf"} 66$' \
	"$TMP/promtext-sample.prom" || fail "sample lacks the expected +Inf bucket"

if "$PYTHON" -c 'import prometheus_client.openmetrics.parser' 2>/dev/null; then
	"$PYTHON" - "$TMP/promtext-sample.om" <<'PY' || fail "OpenMetrics parser rejected the sample"
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1], encoding="utf-8").read())}
assert fams["khbpf_build"].type == "info", fams["khbpf_build"].type
assert fams["khbpf_oncpu_seconds"].unit == "seconds"
odd = [s for s in fams["khbpf_migrations"].samples if s.labels["cgroup"].startswith("/user.slice/")]
assert odd[0].labels["cgroup"] == '/user.slice/"odd\\name\n\ufffd', odd
print("OpenMetrics parser: %d families" % len(fams))
PY
else
	echo "note: python3 prometheus_client not installed; OpenMetrics sample not parsed"
fi

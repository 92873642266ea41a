#!/bin/bash
# Span sites at scale: `--span 'many_1*'` on tests/workloads/manyfuncs, 1000
# functions each called a known number of times by two threads. Where the
# kernel has uprobe_multi (khbpf probe says so) they go in two links, one
# each way, for the target process only; with --span-links per-site (the way
# of older kernels) in two perf-event links per site, as bpftool sees them.
# Either way every count is exact, on both threads, and nothing stays
# loaded. A kernel without uprobe_multi takes per-site links down one grace
# period at a time (minutes for 1000 sites), so there the scale cases use
# 10 sites, through the same path auto takes there. Times are not checked
# here: tools/bench_span_attach.py measures them.
. "$(dirname "$0")/common.bash"
require_root "uprobes need root"
W=build/workloads/manyfuncs
[ -x "$W" ] || fail "$W is missing; run 'make workloads'"

"$KHBPF" probe --json >"$TMP/probe.json" 2>/dev/null || fail "khbpf probe failed"
multi=$("$PYTHON" -c 'import json, sys
f = [f for f in json.load(open(sys.argv[1]))["kernel_features"] if f["name"] == "uprobe-multi"][0]
print("yes" if f["present"]["value"] else "no")' "$TMP/probe.json")
if [ "$multi" = yes ]; then
	GLOB='many_1*' LAST=1999 N=1000
else
	GLOB='many_100*' LAST=1009 N=10
fi

# check_counts DOC CALLS THREADS GLOB-FIRST GLOB-LAST: every site attached
# and each many_1NNN counted (NNN % 7 + 1) * CALLS times on each thread.
check_counts() {
	"$PYTHON" - "$@" <<'PY' || fail "span counts differ from the workload's"
import json, sys
d = json.load(open(sys.argv[1]))
calls, threads, first, last = (int(x) for x in sys.argv[2:6])
want = {f"many-{n}": threads * ((n - 1000) % 7 + 1) * calls for n in range(first, last + 1)}
ok = True
probes = d["span_probes"]
if len(probes) != len(want) or any(p["status"] != "attached" for p in probes):
    print(f"{len(probes)} probes, not all attached: {[p for p in probes if p['status'] != 'attached'][:3]}", file=sys.stderr)
    ok = False
got = {m["metric_id"]: m["calls"] for m in d["span_metrics"]}
if got != want:
    bad = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    print(f"{len(bad)} metrics differ, e.g. {[(k, got.get(k), want.get(k)) for k in bad[:5]]}", file=sys.stderr)
    ok = False
spans = d["events"]["spans"]
per_thread = {}
for s in spans:
    per_thread[s["thread_id"]] = per_thread.get(s["thread_id"], 0) + 1
total = sum(want.values())
if len(spans) != total or sorted(per_thread.values()) != [total // threads] * threads:
    print(f"records per thread {per_thread}, expected {total // threads} on each of {threads}", file=sys.stderr)
    ok = False
# Losses of spans or of their counts (a missed switch-in only gaps a ledger).
for k in ("span_records_dropped_ringbuf", "span_records_sampled_out", "span_depth_overflow",
          "span_frames_unwound", "span_returns_unmatched", "span_aggregates_overflow",
          "span_state_failures", "span_site_unresolved", "span_records_malformed",
          "span_open_at_exit_dropped"):
    if d["loss"][k].get("value") != 0:
        print(f"loss.{k} = {d['loss'][k]}", file=sys.stderr)
        ok = False
sys.exit(0 if ok else 1)
PY
}

# link_types PID: the BPF link types PID holds, one per line ("perf",
# "uprobe_multi", "uretprobe_multi", ...).
link_types() {
	grep -hs '^link_type:' /proc/"$1"/fdinfo/* | awk '{print $2}' | sort
}

# perf_probes PID: its uprobe-family perf events, "TYPE OFFSET" per line.
perf_probes() {
	bpftool -j perf show 2>/dev/null | "$PYTHON" -c '
import json, sys
for p in json.load(sys.stdin):
    if p.get("pid") == int(sys.argv[1]) and p.get("fd_type") in ("uprobe", "uretprobe"):
        print(p["fd_type"], p["offset"])' "$1"
}

# perf_kinds PID WANT: "N uprobe N uretprobe " is what
# bpftool lists for PID, asked up to 5 s: a listing that meets a process
# exiting elsewhere on the host can come back short.
perf_kinds() {
	local got
	for _ in $(seq 50); do
		got=$(perf_probes "$1" | cut -d' ' -f1 | sort | uniq -c | awk '{print $1, $2}' | tr '\n' ' ')
		[ "$got" = "$2" ] && return 0
		sleep 0.1
	done
	fail "bpftool lists '$got' for khbpf, expected '$2'"
}

# stop_held: whatever a failed case left running is stopped and reaped.
stop_held() {
	exec 9>&-
	[ -n "${kpid:-}" ] && kill -INT "$kpid" 2>/dev/null
	[ -n "${wpid:-}" ] && kill "$wpid" 2>/dev/null
	wait 2>/dev/null
}

# attach_held GLOB KHBPF-ARGS...: manyfuncs --wait (two threads, --calls 1)
# with khbpf attached to it; sets wpid, kpid, and fd 9 (a byte releases it).
# The case (a subshell) stops both on its way out.
attach_held() {
	local glob=$1
	shift
	trap stop_held EXIT
	rm -f "$TMP/ctl"
	mkfifo "$TMP/ctl"
	"$W" --wait --calls 1 <"$TMP/ctl" >"$TMP/w.out" 2>"$TMP/w.err" &
	wpid=$!
	exec 9>"$TMP/ctl"
	wait_for '^ready' "$TMP/w.out" || fail "manyfuncs did not start: $(cat "$TMP/w.err")"
	"$KHBPF" attach --pid "$wpid" --span "$glob" "$@" -o "$TMP/doc.json" 2>"$TMP/k.err" &
	kpid=$!
	wait_for 'watching' "$TMP/k.err" || fail "khbpf did not start: $(cat "$TMP/k.err")"
}

# release: the calls, then the target's exit ends the window.
release() {
	printf g >&9
	exec 9>&-
	wait "$wpid" || fail "manyfuncs failed: $(cat "$TMP/w.err")"
	wait "$kpid" || fail "khbpf attach failed: $(cat "$TMP/k.err")"
	wpid="" kpid=""
	no_bpf_left
}

case_setup() {
	rm -f "$TMP/ctl" "$TMP/doc.json"
}

# expect_links KHBPF-PID TARGET-PID: the $N sites in two uprobe_multi
# links for the target only, or (no uprobe_multi) two perf events per site.
expect_links() {
	if [ "$multi" = yes ]; then
		[ "$(link_types "$1" | grep -c 'probe_multi$')" -eq 2 ] ||
			fail "khbpf holds $(link_types "$1" | tr '\n' ' '), expected 2 uprobe_multi links"
		[ "$(link_types "$1" | grep -c '^perf$')" -eq 0 ] || fail "khbpf also holds per-site links"
		# Kernels that show the link's offsets (6.13) show $N and the pid.
		if grep -qs '^uprobe_cnt:' /proc/"$1"/fdinfo/*; then
			[ "$(grep -hs '^uprobe_cnt:' /proc/"$1"/fdinfo/* | awk '{print $2}' | tr '\n' ' ')" = "$N $N " ] ||
				fail "uprobe_multi links of $(grep -hs '^uprobe_cnt:' /proc/"$1"/fdinfo/* | tr '\n' ' ')offsets"
			[ "$(grep -hs -A1 '^uprobe_cnt:' /proc/"$1"/fdinfo/* | awk '/^pid:/ {print $2}' | sort -u)" = "$2" ] ||
				fail "the uprobe_multi links are not for pid $2"
		fi
	else
		perf_kinds "$1" "$N uprobe $N uretprobe "
	fi
}

thousand_in_two_links() {
	attach_held "$GLOB"
	expect_links "$kpid" "$wpid"
	release
	check_counts "$TMP/doc.json" 1 2 1000 "$LAST"
}

per_site_links() {
	# Ten sites: twenty links, which the kernel takes down one at a time.
	attach_held 'many_100*' --span-links per-site
	[ "$(link_types "$kpid" | grep -c 'probe_multi$')" -eq 0 ] ||
		fail "--span-links per-site, but khbpf holds uprobe_multi links"
	perf_kinds "$kpid" "10 uprobe 10 uretprobe "
	release
	check_counts "$TMP/doc.json" 1 2 1000 1009
}

few_sites_per_site_unless_multi() {
	# Fewer than 4 sites: per-site links (bpftool perf show lists them)...
	attach_held 'many_1000'
	perf_kinds "$kpid" "1 uprobe 1 uretprobe "
	release
	check_counts "$TMP/doc.json" 1 2 1000 1000
	# ... unless asked for uprobe_multi, which needs the kernel's.
	[ "$multi" = yes ] || return 0
	attach_held 'many_1000' --span-links multi
	[ "$(link_types "$kpid" | grep -c 'probe_multi$')" -eq 2 ] ||
		fail "--span-links multi: khbpf holds $(link_types "$kpid" | tr '\n' ' ')"
	[ "$(link_types "$kpid" | grep -c '^perf$')" -eq 0 ] || fail "khbpf also holds per-site links"
	release
	check_counts "$TMP/doc.json" 1 2 1000 1000
}

run_mode() {
	# Attached by inode before the command starts, for the command only
	# (--no-children: run's tree attaches for every process, set_spans.sh).
	trap stop_held EXIT
	mkfifo "$TMP/ctl"
	"$KHBPF" run --no-children -o "$TMP/doc.json" --span "$GLOB" -- "$W" --wait --calls 3 --threads 3 \
		<"$TMP/ctl" >"$TMP/w.out" 2>"$TMP/k.err" &
	kpid=$!
	exec 9>"$TMP/ctl"
	wait_for '^ready' "$TMP/w.out" || fail "khbpf run did not start manyfuncs: $(cat "$TMP/k.err")"
	expect_links "$kpid" "$(pgrep -P "$kpid" -x manyfuncs)"
	printf g >&9
	exec 9>&-
	wait "$kpid" || fail "khbpf run failed: $(cat "$TMP/k.err")"
	kpid=""
	check_counts "$TMP/doc.json" 3 3 1000 "$LAST"
	no_bpf_left
}

bad_option() {
	expect_exit 2 "$KHBPF" run --span-links some -- true
	expect_one_line_error
	grep -q "expected auto, multi or per-site" "$TMP/err" || fail "$(cat "$TMP/err")"
}

case_ "$N sites: two uprobe_multi links (or per-site where the kernel has none)" thousand_in_two_links
case_ "--span-links per-site: a uprobe and a uretprobe per site" per_site_links
case_ "fewer than 4 sites: per-site, unless --span-links multi" few_sites_per_site_unless_multi
case_ "run: $N sites on three threads" run_mode
case_ "--span-links: bad value" bad_option
cases_done spans_many

#!/usr/bin/python3
"""`khbpf serve` with spans (issue 28): what a span call and a switch cost.

1. Switches, rounds interleaved, `perf bench sched pipe -T` pinned to CPU 0:
     A  alone
     C  libbpf-tools `runqlat -L`
     G  `khbpf serve` (every task, by cgroup), no spans
     GS the same with a span site configured that nothing calls during the
        run (CPython's PyGC_Collect): every switch of every task pays what
        spans add to a switch with no span open
   added ns per op over A, and each sched_switch program's ns per run
   (run-time stats: serve --bpf-stats, runqlat's through bpftool).
2. A span call, rounds interleaved, build/workloads/spanbench pinned to
   CPU 0 calling one plain function N times:
     A  no probe
     K  `khbpf attach --pid`, every call a record (as `run` does)
     KA `khbpf attach --max-spans 1`: aggregates only past the first
     V  `khbpf serve --by process --span WORKLOAD:bench_plain`: the call in
        its process's series in the kernel
   ns per span = (probed loop - unprobed loop) / N; every probed run is
   checked to count exactly N (the document, or /metrics).
Writes build/bench/serve_spans.md and .json.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_sched  # noqa: E402
import bench_spans  # noqa: E402
from bench_serve import free_port  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "9"))
CALLS = int(os.environ.get("BENCH_SPAN_CALLS", "20000"))
OUT = "build/bench"
KHBPF = "build/khbpf"
IDLE_SITE = "/usr/bin/python3.11:PyGC_Collect=idle-gc"


def start_serve(args):
    port = free_port()
    s = subprocess.Popen([KHBPF, "serve", "--listen", f"127.0.0.1:{port}", "--interval", "3600",
                          *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = s.stderr.readline()
    if "listening" not in line:
        s.kill()
        s.wait()
        raise RuntimeError("khbpf serve did not start: " + line + s.stderr.read()[-500:])
    return s, port


def stop_serve(s):
    s.send_signal(signal.SIGINT)
    s.wait(timeout=30)


def scrape(port):
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()


def bpf_runs(text, prog):
    cnt = re.search(r'^khbpf_bpf_runs_total\{program="%s"\} (\d+)$' % prog, text, re.M)
    ns = re.search(r'^khbpf_bpf_run_seconds_total\{program="%s"\} ([0-9.]+)$' % prog, text, re.M)
    return int(cnt.group(1)), round(float(ns.group(1)) * 1e9)


def round_serve(spans):
    s, port = start_serve(["--bpf-stats"] + (["--span", IDLE_SITE] if spans else []))
    try:
        c0, t0 = bpf_runs(scrape(port), "khbpf_sched_switch")
        usecs = bench_sched.usecs_per_op(bench_sched.run(bench_sched.PIPE).stdout)
        c1, t1 = bpf_runs(scrape(port), "khbpf_sched_switch")
    finally:
        stop_serve(s)
    return {"usecs_op": usecs, "switch_cnt": c1 - c0, "switch_ns": t1 - t0}


def span_serve(calls):
    site = "plain"
    metric = bench_spans.METRIC[site]
    s, port = start_serve(["--by", "process", "--no-annotations", "--span",
                           f"{bench_spans.WORKLOAD}:{bench_spans.SITES[site]}={metric}"])
    try:
        # Sites are attached before serve listens: the workload is covered.
        w = bench_spans.Workload(site, calls)
        try:
            elapsed = w.go()
        finally:
            w.close()
        text = scrape(port)
    finally:
        stop_serve(s)
    got = sum(int(m.group(1)) for m in re.finditer(
        r'^khbpf_span_duration_seconds_count\{[^}]*metric="%s"[^}]*\} (\d+)$' % metric, text,
        re.M))
    if got != calls:
        raise RuntimeError(f"serve counted {got} calls, expected {calls}")
    return {"elapsed_ns": elapsed}


def med_iqr(xs):
    return bench_sched.med_iqr(xs)


def main():
    os.makedirs(OUT, exist_ok=True)
    bench_spans.TMP = tempfile.mkdtemp(prefix="khbpf-bench-", dir="/dev/shm")
    for site, fn in bench_spans.SITES.items():
        bench_spans.OFFSET[site] = bench_spans.file_offset(fn)
    sched = {k: [] for k in ("A", "C", "G", "GS")}
    span = {k: [] for k in ("A", "K", "KA", "V")}
    t0 = time.time()
    for i in range(ROUNDS):
        sched["A"].append(bench_sched.round_a())
        sched["C"].append(bench_sched.round_c())
        sched["G"].append(round_serve(False))
        sched["GS"].append(round_serve(True))
        span["A"].append(bench_spans.run_none("plain", CALLS))
        span["K"].append(bench_spans.run_khbpf("plain", CALLS, CALLS))
        span["KA"].append(bench_spans.run_khbpf("plain", CALLS, 1))
        span["V"].append(span_serve(CALLS))
        print(f"round {i + 1}/{ROUNDS} done ({time.time() - t0:.0f} s)", file=sys.stderr)

    base = [r["usecs_op"] * 1000 for r in sched["A"]]
    added = {k: [r["usecs_op"] * 1000 - a for r, a in zip(sched[k], base)]
             for k in ("C", "G", "GS")}
    per_run = {k: [r["switch_ns"] / r["switch_cnt"] for r in sched[k]] for k in ("C", "G", "GS")}
    ns_span = {k: [(r["elapsed_ns"] - a["elapsed_ns"]) / CALLS
                   for r, a in zip(span[k], span["A"])] for k in ("K", "KA", "V")}

    def ratio(xs, ys):
        return med_iqr([x / y if y > 0 else float("inf") for x, y in zip(xs, ys)])

    summary = {
        "rounds": ROUNDS, "calls": CALLS,
        "sched_added_ns_per_op": {k: med_iqr(v) for k, v in added.items()},
        "sched_switch_ns_per_run": {k: med_iqr(v) for k, v in per_run.items()},
        "serve_added_over_runqlat": {k: ratio(added[k], added["C"]) for k in ("G", "GS")},
        "serve_prog_over_runqlat": {k: ratio(per_run[k], per_run["C"]) for k in ("G", "GS")},
        "spans_configured_over_none": {"added": ratio(added["GS"], added["G"]),
                                       "prog": ratio(per_run["GS"], per_run["G"])},
        "ns_per_span": {k: med_iqr(v) for k, v in ns_span.items()},
        "serve_span_over_attach": {k: ratio(ns_span["V"], ns_span[k]) for k in ("K", "KA")},
        "raw": {"sched": sched, "span": span},
    }
    json.dump(summary, open(f"{OUT}/serve_spans.json", "w"), indent=1)

    def f(v, d=2):
        return f"{v[0]:.{d}f} ({v[1]:.{d}f})"

    names = {"C": "runqlat -L", "G": "khbpf serve, no spans",
             "GS": "khbpf serve, a span site configured (not called)"}
    lines = [
        f"`perf bench sched pipe -T -l {bench_sched.LOOPS}` pinned to CPU 0; median (IQR) of "
        f"{ROUNDS} interleaved rounds.",
        "",
        "| configuration | added ns/op | sched_switch prog ns/run | added / runqlat's | "
        "prog / runqlat's |",
        "| --- | --- | --- | --- | --- |",
    ]
    for k in ("C", "G", "GS"):
        ra = ratio(added[k], added["C"])
        rp = ratio(per_run[k], per_run["C"])
        lines.append(f"| {names[k]} | {f(summary['sched_added_ns_per_op'][k], 0)} | "
                     f"{f(summary['sched_switch_ns_per_run'][k], 0)} | {f(ra)} | {f(rp)} |")
    sc = summary["spans_configured_over_none"]
    lines += [
        "",
        f"serve with a span site configured / without, same round: added {f(sc['added'])}, "
        f"sched_switch program {f(sc['prog'])}.",
        "",
        f"`spanbench --site plain`, {CALLS} calls per run, pinned to CPU 0; ns per span = "
        "(probed loop - unprobed loop) / N; median (IQR).",
        "",
        "| configuration | ns per span | serve / this |",
        "| --- | --- | --- |",
    ]
    span_names = {"K": "khbpf attach (records, as run)", "KA": "khbpf attach --max-spans 1",
                  "V": "khbpf serve --by process"}
    for k in ("K", "KA", "V"):
        r = summary["serve_span_over_attach"].get(k)
        lines.append(f"| {span_names[k]} | {f(summary['ns_per_span'][k], 0)} | "
                     f"{f(r) if r else ''} |")
    text = "\n".join(lines) + "\n"
    open(f"{OUT}/serve_spans.md", "w").write(text)
    print(text)


if __name__ == "__main__":
    main()

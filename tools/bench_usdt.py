#!/usr/bin/python3
"""Cost per USDT span: khbpf --usdt-span against bpftrace and an empty pair.

The workload (build/workloads/usdtbench, pinned to CPU 0) runs a loop of N
iterations, each a trivial body between two USDT probes, START(text, kind)
and DONE(kind), without semaphores, and prints the loop's time. Two sites:

  nop    usdtbench:op__start, op__done: sdt.h's own 1-byte nop, probed
         through a trap (int3), as every USDT probe compiled from sdt.h is
  nop5   usdtbench:op5__start, op5__done: one 5-byte NOP each, which kernels
         from 6.18 probe the optimized way (after the first hit, a call into
         a trampoline and a syscall instead of the trap): what a USDT probe
         would cost if sdt.h emitted that NOP

and, for each site, these configurations, interleaved round by round:

  A      no probe
  F      the floor: an empty uprobe program at each of the two sites
         (bench-span-floor --sites, at the file offsets `khbpf list --usdt
         --json` gives)
  C      the clock floor: the same two uprobes only read the time, once at
         each end (bench-span-floor --sites --clock), what any span timer pays
  K      `khbpf attach --pid --usdt-span usdtbench:START,DONE`, every call
         a span record (--max-spans N)
  KA     the same with --max-spans 1: past the record cap, aggregates only
  KSTR   KA with --key METRIC=arg0:str (one key, the text)
  KINT   KA with --key METRIC=arg1:int (four keys, kind)
  B      `bpftrace -p PID` counting both probes (count() into @s and @d):
         the reference of the goal
  BT     `bpftrace -p PID` timing the pair as khbpf does, the way
         bench_spans.py's bpftrace does (START stores a per-tid timestamp,
         DONE adds the difference to a histogram and deletes it): a peer
         doing the same job, not a goal
  FS, CS, KS, KAS, KSTRS, KINTS, BS, BTS   the same again with BPF run-time
         stats on (the nop site only: the programs are the same at both)

ns per call = (probed loop time - round's unprobed loop time) / N. Every
probed run is checked: khbpf's span_metrics (and its keys), bpftrace's two
counts and the floor's run counts (stats runs) must each be exactly N. The
cost ratios compare runs without run-time stats, as in tools/bench_spans.py;
BPF program time per call (START's program + DONE's) comes from the stats
runs: khbpf --bpf-stats puts it in the document's `overhead`,
bench-span-floor --stats prints it, and bpftrace's programs are read from
the kernel (bpftool) while this script holds BPF_ENABLE_STATS.
"""
import ctypes
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# The helpers bench_spans.py has (same directory: sys.path[0] when run).
from bench_spans import BenchError, file_has, held_progs, interrupted  # noqa: E402
from bench_spans import loaded_progs, med_iqr, orphan_progs, run, stop  # noqa: E402
from bench_spans import verdict, wait_for, wait_gone  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_USDT_ROUNDS", "12"))
# N: the floor's loop should take about this long (calibrated).
TARGET_S = float(os.environ.get("BENCH_USDT_SECONDS", "0.3"))
MAX_CALLS = 100000  # at most khbpf's default --max-spans, as in bench_spans.py
MIN_CALLS = 2000
FIXED_CALLS = int(os.environ.get("BENCH_USDT_CALLS", "0"))
OUT = "build/bench"
KHBPF = "build/khbpf"
FLOOR = "build/tools/bench-span-floor"
WORKLOAD = os.path.realpath("build/workloads/usdtbench")
PROVIDER = "usdtbench"
# site -> (START, DONE, khbpf's name for the pair: provider and the names' prefix)
SITES = {"nop": ("op__start", "op__done", "usdtbench-op"),
         "nop5": ("op5__start", "op5__done", "usdtbench-op5")}
# What each site's probes must be, byte for byte (x86-64).
INSN = {"nop": b"\x90", "nop5": b"\x0f\x1f\x44\x00\x00"}
TEXT = "SELECT 1"  # op__start's string, the str key
KINDS = 4  # op__start's int is i % 4: four int keys
COST = ["F", "C", "K", "KA", "KSTR", "KINT", "B", "BT"]  # without run-time stats
STATS = {"F": "FS", "C": "CS", "K": "KS", "KA": "KAS", "KSTR": "KSTRS", "KINT": "KINTS",
         "B": "BS", "BT": "BTS"}
CONFIGS = {"nop": ["A"] + COST + list(STATS.values()), "nop5": ["A"] + COST}
KHBPF_CFGS = ["K", "KA", "KSTR", "KINT"]
KEYS = {"KSTR": "arg0:str", "KINT": "arg1:int"}
NAMES = {"F": "empty uprobe pair", "C": "clock-only pair", "K": "khbpf (records)",
         "KA": "khbpf --max-spans 1", "KSTR": "khbpf --max-spans 1, str key",
         "KINT": "khbpf --max-spans 1, int key", "B": "bpftrace count()",
         "BT": "bpftrace timing (hist)"}
TMP = None  # a scratch directory for documents and tool output (in /dev/shm)
OFFSET = {}  # site -> (START's file offset, DONE's), where the uprobes go

# bpf(2)'s number and BPF_ENABLE_STATS (include/uapi/linux/bpf.h).
SYS_BPF = {"x86_64": 321, "aarch64": 280}
BPF_ENABLE_STATS = 32


class Workload:
    """usdtbench --wait, pinned to CPU 0: started, released with go() (which
    returns the loop's time), and left to exit with end()."""

    def __init__(self, site, calls):
        self.calls = calls
        self.p = subprocess.Popen(["taskset", "-c", "0", WORKLOAD, "--site", site,
                                   "--calls", str(calls), "--text", TEXT, "--wait"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self.p.stdout.readline().strip() != "ready":
            self.close()
            raise BenchError("usdtbench did not start")
        self.pid = self.p.pid

    def go(self):
        self.p.stdin.write("g")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        try:
            r = json.loads(line)
        except ValueError:
            raise BenchError(f"usdtbench printed {line!r}") from None
        if r["calls"] != self.calls:
            raise BenchError(f"usdtbench counted {r['calls']} calls, expected {self.calls}")
        return r["elapsed_ns"]

    def end(self):
        self.p.stdin.close()
        if self.p.wait(timeout=120) != 0:
            raise BenchError(f"usdtbench exited with {self.p.returncode}")

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


def usdt_offsets():
    """Each probe's file offset, as khbpf itself lists them; no semaphores."""
    doc = json.loads(run([KHBPF, "list", "--usdt", "--json", WORKLOAD]).stdout)
    found = {}
    for obj in doc["objects"]:
        for p in obj.get("usdt", []):
            if p["provider"] != PROVIDER:
                continue
            if len(p["sites"]) != 1:
                raise BenchError(f"{PROVIDER}:{p['name']} has {len(p['sites'])} sites, not 1")
            s = p["sites"][0]
            # The floor sets no ref_ctr_offset: a probe with a semaphore would be skipped.
            if int(s.get("semaphore_offset", "0"), 16):
                raise BenchError(f"{PROVIDER}:{p['name']} has a semaphore")
            found[p["name"]] = int(s["offset"], 16)
    want = {n for start, done, _ in SITES.values() for n in (start, done)}
    if set(found) != want:
        raise BenchError(f"khbpf list finds {sorted(found)} in {WORKLOAD}, not {sorted(want)}")
    offsets = {site: (found[start], found[done]) for site, (start, done, _) in SITES.items()}
    with open(WORKLOAD, "rb") as f:
        for site, offs in offsets.items():
            for o in offs:
                f.seek(o)
                if f.read(len(INSN[site])) != INSN[site]:
                    raise BenchError(f"the {site} site at {o:#x} is not {INSN[site].hex(' ')}")
    return offsets


def probes_attached(tool_pid, site):
    """A uprobe of tool_pid sits on the workload at each of the site's two probes."""
    at = set()
    for p in json.loads(run(["bpftool", "-j", "perf", "show"]).stdout):
        if (p.get("pid") == tool_pid and p.get("fd_type") == "uprobe"
                and p.get("filename", "").endswith(WORKLOAD)):
            at.add(p.get("offset"))
    return set(OFFSET[site]) <= at


def enable_bpf_stats():
    """BPF run-time stats stay on while the returned fd is open (BPF_ENABLE_STATS)."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(8)  # enable_stats.type = BPF_STATS_RUN_TIME (0)
    fd = libc.syscall(SYS_BPF[platform.machine()], BPF_ENABLE_STATS, attr, len(attr))
    if fd < 0:
        raise BenchError(f"BPF_ENABLE_STATS: {os.strerror(ctypes.get_errno())}")
    return fd


def run_none(site, calls):
    r = json.loads(run(["taskset", "-c", "0", WORKLOAD, "--site", site,
                        "--calls", str(calls)]).stdout)
    return {"elapsed_ns": r["elapsed_ns"]}


def run_floor(site, calls, stats=False, clock=False):
    w = Workload(site, calls)
    f = None
    try:
        f = subprocess.Popen([FLOOR] + (["--stats"] if stats else []) +
                             (["--clock"] if clock else []) +
                             ["--pid", str(w.pid), "--sites", WORKLOAD] +
                             [hex(o) for o in OFFSET[site]],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if f.stdout.readline().strip() != "ready":
            raise BenchError("bench-span-floor did not start")
        wait_for(lambda: probes_attached(f.pid, site), "floor probes", f)
        ids = held_progs(f.pid)
        elapsed = w.go()
        w.end()
        f.stdin.close()
        st = json.loads(f.stdout.readline()) if stats else None
        if f.wait(timeout=10) != 0:
            raise BenchError(f"bench-span-floor exited with {f.returncode}")
    finally:
        w.close()
        if f:
            stop(f)
    wait_gone(ids, "bench-span-floor")
    if not stats:
        return {"elapsed_ns": elapsed}
    if st["enter_run_cnt"] != calls or st["exit_run_cnt"] != calls:
        raise BenchError(f"floor programs ran {st['enter_run_cnt']}/{st['exit_run_cnt']} "
                         f"times, expected {calls}")
    return {"elapsed_ns": elapsed, "prog_ns": st["enter_run_time_ns"] + st["exit_run_time_ns"],
            "start_ns": st["enter_run_time_ns"], "done_ns": st["exit_run_time_ns"]}


def check_keys(cfg, metric, calls):
    """A str key: one key, the text, every call; an int key: each kind a quarter."""
    keys = sorted((k["key"]["kind"], k["key"]["text"], k["calls"]) for k in metric.get("keys", []))
    if cfg == "KSTR":
        want = [("str", TEXT, calls)]
    elif cfg == "KINT":
        want = [("int", str(k), calls // KINDS) for k in range(KINDS)]
    else:
        want = []
    if keys != want:
        raise BenchError(f"khbpf's keys are {keys}, expected {want}")


def run_khbpf(site, cfg, calls, stats=False):
    start, done, metric = SITES[site]
    w = Workload(site, calls)
    doc_path, err_path = f"{TMP}/khbpf.json", f"{TMP}/khbpf.err"
    max_spans = calls if cfg == "K" else 1
    cmd = [KHBPF, "attach"] + (["--bpf-stats"] if stats else []) + [
        "--pid", str(w.pid), "--max-spans", str(max_spans), "-o", doc_path,
        "--usdt-span", f"{PROVIDER}:{start},{done}"]
    if cfg in KEYS:
        cmd += ["--key", f"{metric}={KEYS[cfg]}"]
    k = None
    try:
        with open(err_path, "w") as err:
            k = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        wait_for(file_has(err_path, "watching"), "khbpf attach", k)
        wait_for(lambda: probes_attached(k.pid, site), "khbpf's USDT probes", k)
        ids = held_progs(k.pid)
        elapsed = w.go()
        w.end()
        # The target's exit ends the window.
        if k.wait(timeout=120) != 0:
            raise BenchError(f"khbpf exited with {k.returncode}: "
                             + open(err_path).read()[-500:])
    finally:
        w.close()
        if k:
            stop(k)
    wait_gone(ids, "khbpf")
    d = json.load(open(doc_path))
    os.unlink(doc_path)
    got = [(m["metric_id"], m["calls"], m["unfinished"]) for m in d["span_metrics"]]
    if got != [(metric, calls, 0)]:
        raise BenchError(f"khbpf counted {got}, expected [({metric!r}, {calls}, 0)]")
    check_keys(cfg, d["span_metrics"][0], calls)
    ev = d["events"]
    kept = len(ev["spans"])
    if kept + ev["dropped_span_events"] + ev["sampled_out_events"] != calls:
        raise BenchError("khbpf: records + dropped + sampled out != calls")
    if kept != min(calls, max_spans):
        raise BenchError(f"khbpf kept {kept} span records, expected {min(calls, max_spans)} "
                         f"({ev['dropped_span_events']} dropped by a full ring buffer)")
    if not stats:
        return {"elapsed_ns": elapsed}
    ov = d["overhead"]
    # START runs the span entry program, DONE the span end program at the site.
    cnt = [ov[f"khbpf_span_{p}_run_cnt"]["value"] for p in ("enter", "close")]
    if cnt != [calls, calls]:
        raise BenchError(f"khbpf's USDT span programs ran {cnt} times, expected {calls}")
    start = ov["khbpf_span_enter_run_time_ns"]["value"]
    done = ov["khbpf_span_close_run_time_ns"]["value"]
    return {"elapsed_ns": elapsed, "prog_ns": start + done, "start_ns": start, "done_ns": done}


def prog_stats(ids):
    """(run_cnt, run_time_ns) of each program id, in id order."""
    progs = loaded_progs()
    return [(progs[i].get("run_cnt", 0), progs[i].get("run_time_ns", 0)) for i in sorted(ids)]


def run_bpftrace(site, calls, stats=False, timing=False):
    start, done, _ = SITES[site]
    w = Workload(site, calls)
    probe = f"usdt:{WORKLOAD}:{PROVIDER}"
    if timing:
        script = (f"{probe}:{start} {{ @ts[tid] = nsecs; }} "
                  f"{probe}:{done} {{ @h = hist(nsecs - @ts[tid]); delete(@ts[tid]); }}")
    else:
        script = f"{probe}:{start} {{ @s = count(); }} {probe}:{done} {{ @d = count(); }}"
    out_path = f"{TMP}/bpftrace.out"
    b = None
    stats_fd = enable_bpf_stats() if stats else -1
    try:
        with open(out_path, "w") as out:
            b = subprocess.Popen(["bpftrace", "-p", str(w.pid), "-e", script], stdout=out,
                                 stderr=subprocess.STDOUT)
        # "Attaching" comes before the probes are: wait for both in the kernel.
        wait_for(file_has(out_path, "Attaching 2 probes"), "bpftrace", b)
        wait_for(lambda: probes_attached(b.pid, site), "bpftrace's probes", b)
        ids = held_progs(b.pid)
        elapsed = w.go()
        # Read while the target, and so bpftrace, is still there.
        st = prog_stats(ids) if stats else None
        w.end()
        # With -p, bpftrace ends when its process does, printing the counts.
        try:
            b.wait(timeout=30)
        except subprocess.TimeoutExpired:
            stop(b)
    finally:
        w.close()
        if b:
            stop(b)
        if stats_fd >= 0:
            os.close(stats_fd)
    wait_gone(ids, "bpftrace")
    text = open(out_path, errors="replace").read()
    if timing:
        # Every span is one histogram count: the buckets' counts add up to N.
        counts = {"s": 0}
        for m in re.finditer(r"^[\[(][^\n]*?[\])]\s+(\d+) \|", text, re.M):
            counts["s"] += int(m.group(1))
        counts["d"] = counts["s"]
    else:
        counts = {m.group(1): int(m.group(2))
                  for m in re.finditer(r"^@([sd]): (\d+)$", text, re.M)}
    if counts != {"s": calls, "d": calls}:
        raise BenchError(f"bpftrace counted {counts}, expected {calls} each (exit {b.returncode}, "
                         f"loop {elapsed / calls:.0f} ns per call):\n" + text[-1500:])
    if not stats:
        return {"elapsed_ns": elapsed}
    if [c for c, _ in st] != [calls, calls]:
        raise BenchError(f"bpftrace's programs ran {[c for c, _ in st]} times, expected {calls}")
    return {"elapsed_ns": elapsed, "prog_ns": sum(t for _, t in st)}


def run_config(site, cfg, calls):
    if cfg == "A":
        return run_none(site, calls)
    stats = cfg in STATS.values()
    base = cfg[:-1] if stats else cfg
    if base in ("F", "C"):
        return run_floor(site, calls, stats, clock=base == "C")
    if base in ("B", "BT"):
        return run_bpftrace(site, calls, stats, timing=base == "BT")
    return run_khbpf(site, base, calls, stats)


def main():
    global TMP
    os.makedirs(OUT, exist_ok=True)
    for tool in ("bpftrace", "bpftool", "taskset"):
        if not shutil.which(tool):
            raise BenchError(f"{tool} not found; run tools/install-deps.sh --with-bench")
    if platform.machine() not in SYS_BPF:
        raise BenchError(f"no bpf(2) number here for {platform.machine()}")
    OFFSET.update(usdt_offsets())
    TMP = tempfile.mkdtemp(prefix="khbpf-bench-",
                           dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    before = set(loaded_progs())
    t0 = time.time()
    try:
        # Calibration (and warm-up): the floor's cost sets each site's N, a
        # multiple of 1000 (so of KINDS: each int key gets the same calls).
        calls = {}
        for s in SITES:
            n = 2000
            per = (run_floor(s, n)["elapsed_ns"] - run_none(s, n)["elapsed_ns"]) / n
            calls[s] = FIXED_CALLS or max(MIN_CALLS, min(MAX_CALLS, int(
                TARGET_S * 1e9 / max(per, 1) / 1000) * 1000))
            if calls[s] % KINDS:
                raise BenchError(f"BENCH_USDT_CALLS must be a multiple of {KINDS}")
        print(f"calls per run: {calls} ({time.time() - t0:.0f} s)", file=sys.stderr)
        rounds = {s: {c: [] for c in CONFIGS[s]} for s in SITES}
        for i in range(ROUNDS):
            for s in SITES:
                for c in CONFIGS[s]:
                    rounds[s][c].append(run_config(s, c, calls[s]))
            print(f"round {i + 1}/{ROUNDS} done ({time.time() - t0:.0f} s)", file=sys.stderr)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    left = orphan_progs(before)
    if left:
        raise BenchError(f"khbpf_* programs left loaded with no holder: {left}")

    # Per round: ns per call over the round's unprobed loop.
    cost = {s: {c: [(r["elapsed_ns"] - a["elapsed_ns"]) / calls[s]
                    for r, a in zip(rounds[s][c], rounds[s]["A"])]
                for c in CONFIGS[s][1:]} for s in SITES}
    # Program times: the nop site's stats runs (the same programs run at nop5).
    rn, n = rounds["nop"], calls["nop"]
    prog = {c: [r["prog_ns"] / n for r in rn[STATS[c]]] for c in STATS}
    part = {c: {p: [r[f"{p}_ns"] / n for r in rn[STATS[c]]] for p in ("start", "done")}
            for c in STATS if not c.startswith("B")}

    def ratio(xs, ys):
        return med_iqr([x / y if y > 0 else float("inf") for x, y in zip(xs, ys)])

    def diff(xs, ys):
        return med_iqr([x - y for x, y in zip(xs, ys)])

    goals = []  # (goal, site, {config: (median, iqr)}, target)
    for s in SITES:
        goals.append(("khbpf / bpftrace", s, {k: ratio(cost[s][k], cost[s]["B"])
                                              for k in KHBPF_CFGS}, 0.8))
    for s in SITES:
        goals.append(("khbpf / empty pair", s, {k: ratio(cost[s][k], cost[s]["F"])
                                                for k in KHBPF_CFGS}, 1.2))
    # Where the time goes: a probe's own cost (the empty pair less its
    # programs, halved; nop5's less the nop site's programs of the same
    # round), and each tool's programs against its whole cost.
    probe = {"nop": med_iqr([(c - p) / 2 for c, p in zip(cost["nop"]["FS"], prog["F"])]),
             "nop5": med_iqr([(c - p) / 2 for c, p in zip(cost["nop5"]["F"], prog["F"])])}
    summary = {
        "rounds": ROUNDS, "calls": calls,
        "sites": {s: {"start": SITES[s][0], "done": SITES[s][1], "metric": SITES[s][2],
                      "offsets": OFFSET[s]} for s in SITES},
        "unprobed_ns_per_call": {s: med_iqr([r["elapsed_ns"] / calls[s] for r in rounds[s]["A"]])
                                 for s in SITES},
        "ns_per_call": {s: {c: med_iqr(cost[s][c]) for c in COST} for s in SITES},
        "ns_per_call_stats_on": {c: med_iqr(cost["nop"][STATS[c]]) for c in STATS},
        "bpf_prog_ns_per_call": {c: med_iqr(v) for c, v in prog.items()},
        "bpf_prog_ns_per_call_by_site": {c: {p: med_iqr(v) for p, v in ps.items()}
                                         for c, ps in part.items()},
        "bpf_prog_share": {c: ratio(prog[c], cost["nop"][STATS[c]]) for c in STATS},
        "probe_ns_without_programs": probe,
        "key_adds_prog_ns": {k: diff(prog[k], prog["KA"]) for k in KEYS},
        "key_adds_ns_per_call": {s: {k: diff(cost[s][k], cost[s]["KA"]) for k in KEYS}
                                 for s in SITES},
        "clock_only_over_empty_pair": {s: ratio(cost[s]["C"], cost[s]["F"]) for s in SITES},
        "khbpf_prog_over_bpftrace_prog": {k: ratio(prog[k], prog["B"]) for k in KHBPF_CFGS},
        "khbpf_prog_over_bpftrace_timing_prog": {k: ratio(prog[k], prog["BT"])
                                                 for k in KHBPF_CFGS},
        # No tool on these two uprobes costs less than the empty pair.
        "empty_pair_over_bpftrace": {s: ratio(cost[s]["F"], cost[s]["B"]) for s in SITES},
        "khbpf_over_bpftrace_timing": {s: {k: ratio(cost[s][k], cost[s]["BT"])
                                           for k in KHBPF_CFGS} for s in SITES},
        "goals": [{"goal": g, "site": s, "target": t,
                   "value": {NAMES[k]: v for k, v in vals.items()},
                   "verdict": {NAMES[k]: verdict(v[0], t) for k, v in vals.items()}}
                  for g, s, vals, t in goals],
        "raw": rounds,
    }
    json.dump(summary, open(f"{OUT}/usdt.json", "w"), indent=1)

    def fmt(v, unit=""):
        if unit == "%":
            return f"{v[0] * 100:.1f}% ({v[1] * 100:.1f})"
        if unit == "x":
            return f"{v[0]:.2f} ({v[1]:.2f})"
        return f"{v[0]:.0f} ({v[1]:.0f})"

    lines = [
        f"`usdtbench` pinned to CPU 0, N START/DONE pairs per run (nop {calls['nop']}, nop5 "
        f"{calls['nop5']}); median (IQR) of {ROUNDS} interleaved rounds; ns per call = (probed "
        "loop - unprobed loop) / N.",
        "",
        "| site (each probe's instruction) | unprobed ns/call | " +
        " | ".join(NAMES[c] for c in COST) + " |",
        "| --- | --- |" + " --- |" * len(COST),
    ]
    insn = {"nop": "`nop`", "nop5": "`nopl 0x0(%rax,%rax,1)`"}
    for s in SITES:
        u = summary["unprobed_ns_per_call"][s]
        lines.append(f"| {s} ({insn[s]}) | {u[0]:.1f} | " +
                     " | ".join(fmt(summary["ns_per_call"][s][c]) for c in COST) + " |")
    lines += [
        "",
        "At the nop site with BPF run-time stats on (`--bpf-stats`, `bench-span-floor "
        "--stats`, bpftrace's programs read from the kernel): ns per call, BPF program time "
        "per call (START + DONE) and its share of the call's cost, same round:",
        "",
        "| | ns per call | programs, ns | START / DONE program, ns | programs / cost |",
        "| --- | --- | --- | --- | --- |",
    ]
    for c in STATS:
        split = (f"{fmt(summary['bpf_prog_ns_per_call_by_site'][c]['start'])} / "
                 f"{fmt(summary['bpf_prog_ns_per_call_by_site'][c]['done'])}" if c in part else "")
        lines.append(f"| {NAMES[c]} | {fmt(summary['ns_per_call_stats_on'][c])} | "
                     f"{fmt(summary['bpf_prog_ns_per_call'][c])} | {split} | "
                     f"{fmt(summary['bpf_prog_share'][c], '%')} |")
    lines += [
        "",
        "| goal (ratio in the same round) | site | " +
        " | ".join(NAMES[k] for k in KHBPF_CFGS) + " | target |",
        "| --- | --- |" + " --- |" * (len(KHBPF_CFGS) + 1),
    ]
    for g, s, vals, t in goals:
        lines.append(f"| {g} | {s} | " + " | ".join(
            f"{fmt(vals[k], 'x')} {verdict(vals[k][0], t)}" for k in KHBPF_CFGS) + f" | <= {t} |")
    kp, kc = summary["key_adds_prog_ns"], summary["key_adds_ns_per_call"]
    bt = summary["khbpf_over_bpftrace_timing"]
    lines += [
        "",
        "One probe without its program (the empty pair's cost less its programs, halved): "
        + ", ".join(f"{s} {fmt(probe[s])} ns" for s in SITES) + ". Clock-only pair / empty "
        "pair: " + ", ".join(f"{s} {fmt(summary['clock_only_over_empty_pair'][s], 'x')}"
                             for s in SITES) + ".",
        "",
        "What a key adds over `--max-spans 1`, same round: program time per call, str "
        f"{fmt(kp['KSTR'])} ns, int {fmt(kp['KINT'])} ns; cost per call, str " +
        ", ".join(f"{s} {fmt(kc[s]['KSTR'])}" for s in SITES) + " ns, int " +
        ", ".join(f"{s} {fmt(kc[s]['KINT'])}" for s in SITES) + " ns.",
        "",
        "Empty pair / bpftrace count(), same round (no tool on these two uprobes goes "
        "under it): " + ", ".join(f"{s} {fmt(summary['empty_pair_over_bpftrace'][s], 'x')}"
                                  for s in SITES) + ".",
        "",
        "khbpf / bpftrace timing (hist), same round: " + "; ".join(
            f"{s}: " + ", ".join(f"{NAMES[k]} {fmt(bt[s][k], 'x')}" for k in KHBPF_CFGS)
            for s in SITES) + ".",
        "",
        "khbpf's programs / bpftrace count()'s, same round: " + ", ".join(
            f"{NAMES[k]} {fmt(summary['khbpf_prog_over_bpftrace_prog'][k], 'x')}"
            for k in KHBPF_CFGS) + "; / bpftrace timing's: " + ", ".join(
            f"{NAMES[k]} {fmt(summary['khbpf_prog_over_bpftrace_timing_prog'][k], 'x')}"
            for k in KHBPF_CFGS) + ".",
    ]
    text = "\n".join(lines) + "\n"
    open(f"{OUT}/usdt.md", "w").write(text)
    print(text)


if __name__ == "__main__":
    # The per-run `finally` blocks end the workload and the tool on any exit.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupted)
    if os.geteuid() != 0:
        print("bench-usdt: needs root (loads BPF); run 'sudo make bench-usdt'", file=sys.stderr)
        sys.exit(1)
    try:
        main()
    except (BenchError, subprocess.CalledProcessError) as e:
        msg = e.stderr if isinstance(e, subprocess.CalledProcessError) else str(e)
        print(f"bench-usdt: {msg}", file=sys.stderr)
        sys.exit(1)

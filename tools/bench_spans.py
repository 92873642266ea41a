#!/usr/bin/python3
"""Cost per span of khbpf against bpftrace and an empty uprobe+uretprobe pair.

The workload (build/workloads/spanbench, pinned to CPU 0) calls one function
N times in a tight loop and prints the loop's time. Two sites:

  annotated  KHBPF_SPAN: starts with one 5-byte NOP (checked with objdump)
  plain      the same body, an ordinary first instruction (--span SYMBOL)

and, for each site, nine configurations, interleaved round by round:

  A   no probe
  F   the floor: an empty uprobe and an empty uretprobe (bench-span-floor)
  C   the clock floor: the pair reads the time once at each end and keeps
      the difference (bench-span-floor --clock), what any span timer pays
  K   `khbpf attach --pid`, every call a span record (--max-spans N)
  KA  `khbpf attach --pid --max-spans 1`: past the record cap, aggregates only
  B   bpftrace: uprobe stores a per-tid timestamp, uretprobe adds the
      duration to a histogram and deletes the timestamp
  FS, KS, KAS  F, K and KA again with BPF run-time stats on

ns per span = (probed loop time - round's unprobed loop time) / N. Every
probed run is checked: khbpf's span_metrics, bpftrace's histogram and the
floor's run counts must each count exactly N. The cost ratios compare runs
without run-time stats, as bpftrace runs: the stats are a tax on every BPF
program (two clock reads per run). BPF program time comes from the stats
runs (khbpf --bpf-stats reports it in the document's `overhead`,
bench-span-floor --stats prints it) and is set against those runs' own cost.
"""
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = int(os.environ.get("BENCH_SPAN_ROUNDS", "9"))
# Each site's N: the floor's loop should take about this long (calibrated).
TARGET_S = float(os.environ.get("BENCH_SPAN_SECONDS", "0.3"))
# At most khbpf's default --max-spans: a document of N records stays small
# enough to write and parse in a few seconds.
MAX_CALLS = 100000
MIN_CALLS = 2000
FIXED_CALLS = int(os.environ.get("BENCH_SPAN_CALLS", "0"))
OUT = "build/bench"
KHBPF = "build/khbpf"
FLOOR = "build/tools/bench-span-floor"
WORKLOAD = os.path.realpath("build/workloads/spanbench")
SITES = {"annotated": "bench_annotated", "plain": "bench_plain"}
METRIC = {"annotated": "bench-annotated", "plain": "bench-plain"}
CONFIGS = ["A", "F", "C", "K", "KA", "B", "FS", "KS", "KAS"]
COST = ["F", "C", "K", "KA", "B"]  # the cost table, without run-time stats
STATS = {"F": "FS", "K": "KS", "KA": "KAS"}  # the same with them
NAMES = {"F": "empty uprobe+uretprobe", "C": "clock-only pair", "K": "khbpf (records)",
         "KA": "khbpf --max-spans 1", "B": "bpftrace"}
TMP = None  # a scratch directory for documents and tool output (in /dev/shm)
OFFSET = {}  # site -> the function's file offset, where the uprobes go


class BenchError(Exception):
    pass


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True)


def first_insn(symbol):
    """(hex bytes, assembly) of the symbol's first instruction."""
    out = run(["objdump", "-d", f"--disassemble={symbol}", WORKLOAD]).stdout
    m = re.search(r"<%s>:\n\s*[0-9a-f]+:\t([0-9a-f ]+?)\s*\t(.*)" % symbol, out)
    if not m:
        raise BenchError(f"objdump shows no instructions for {symbol}")
    return m.group(1).strip(), " ".join(m.group(2).split())


def file_offset(symbol):
    """The symbol's offset in the file: where a uprobe on it is placed."""
    addr = None
    for line in run(["nm", WORKLOAD]).stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] == symbol:
            addr = int(f[0], 16)
    if addr is None:
        raise BenchError(f"{symbol} not in {WORKLOAD}'s symbol table")
    for line in run(["readelf", "-lW", WORKLOAD]).stdout.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            off, vaddr, filesz = int(f[1], 16), int(f[2], 16), int(f[4], 16)
            if vaddr <= addr < vaddr + filesz:
                return addr - vaddr + off
    raise BenchError(f"{symbol} is in no LOAD segment")


def held_progs(pid):
    """Ids of the BPF programs process pid holds (its fds' fdinfo)."""
    ids = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return ids
    for fd in fds:
        try:
            for line in open(f"/proc/{pid}/fdinfo/{fd}"):
                if line.startswith("prog_id:"):
                    ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def loaded_progs():
    return {p["id"]: p for p in json.loads(run(["bpftool", "-j", "prog", "show"]).stdout)}


def wait_gone(ids, who, timeout=5.0):
    """After a tool exits, none of its programs may stay loaded (release is RCU-deferred)."""
    end = time.time() + timeout
    while ids & set(loaded_progs()):
        if time.time() > end:
            raise BenchError(f"{who} left BPF programs loaded: {sorted(ids & set(loaded_progs()))}")
        time.sleep(0.1)


def probes_attached(tool_pid, offset):
    """Both a uprobe and a uretprobe of tool_pid sit on the workload at offset."""
    kinds = set()
    for p in json.loads(run(["bpftool", "-j", "perf", "show"]).stdout):
        if (p.get("pid") == tool_pid and p.get("offset") == offset
                and p.get("filename", "").endswith(WORKLOAD)):
            kinds.add(p.get("fd_type"))
    return {"uprobe", "uretprobe"} <= kinds


def wait_for(cond, what, proc, timeout=30.0):
    end = time.time() + timeout
    while not cond():
        if proc.poll() is not None:
            raise BenchError(f"{what}: the tool exited with {proc.returncode}")
        if time.time() > end:
            raise BenchError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.02)


def file_has(path, text):
    def check():
        try:
            return text in open(path, errors="replace").read()
        except OSError:
            return False
    return check


def stop(proc, sig=signal.SIGINT, timeout=10):
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Workload:
    """spanbench --wait, pinned to CPU 0: started, then released with go()."""

    def __init__(self, site, calls):
        self.calls = calls
        self.p = subprocess.Popen(["taskset", "-c", "0", WORKLOAD, "--site", site,
                                   "--calls", str(calls), "--wait"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self.p.stdout.readline().strip() != "ready":
            self.close()
            raise BenchError("spanbench did not start")
        self.pid = self.p.pid

    def go(self):
        self.p.stdin.write("g")
        self.p.stdin.close()
        line = self.p.stdout.readline()
        if self.p.wait(timeout=120) != 0:
            raise BenchError(f"spanbench exited with {self.p.returncode}")
        r = json.loads(line)
        if r["calls"] != self.calls:
            raise BenchError(f"spanbench counted {r['calls']} calls, expected {self.calls}")
        return r["elapsed_ns"]

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


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
                             ["--pid", str(w.pid), WORKLOAD, SITES[site]],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if f.stdout.readline().strip() != "ready":
            raise BenchError("bench-span-floor did not start")
        wait_for(lambda: probes_attached(f.pid, OFFSET[site]), "floor probes", f)
        ids = held_progs(f.pid)
        elapsed = w.go()
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
    return {"elapsed_ns": elapsed, "prog_ns": st["enter_run_time_ns"] + st["exit_run_time_ns"]}


def run_khbpf(site, calls, max_spans, stats=False):
    w = Workload(site, calls)
    doc_path, err_path = f"{TMP}/khbpf.json", f"{TMP}/khbpf.err"
    cmd = [KHBPF, "attach"] + (["--bpf-stats"] if stats else []) + [
        "--pid", str(w.pid), "--max-spans", str(max_spans), "-o", doc_path]
    if site == "plain":
        cmd += ["--no-annotations", "--span", f"{SITES[site]}={METRIC[site]}"]
    k = None
    try:
        with open(err_path, "w") as err:
            k = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        wait_for(file_has(err_path, "watching"), "khbpf attach", k)
        wait_for(lambda: probes_attached(k.pid, OFFSET[site]), "khbpf's span probes", k)
        ids = held_progs(k.pid)
        elapsed = w.go()
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
    if got != [(METRIC[site], calls, 0)]:
        raise BenchError(f"khbpf counted {got}, expected [({METRIC[site]!r}, {calls}, 0)]")
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
    cnt = [ov[f"khbpf_span_{p}_run_cnt"]["value"] for p in ("enter", "exit")]
    if cnt != [calls, calls]:
        raise BenchError(f"khbpf's span programs ran {cnt} times, expected {calls}")
    return {"elapsed_ns": elapsed,
            "prog_ns": sum(ov[f"khbpf_span_{p}_run_time_ns"]["value"] for p in ("enter", "exit")),
            "enter_ns": ov["khbpf_span_enter_run_time_ns"]["value"],
            "exit_ns": ov["khbpf_span_exit_run_time_ns"]["value"]}


def run_bpftrace(site, calls):
    w = Workload(site, calls)
    probe = f"{WORKLOAD}:{SITES[site]}"
    script = (f"uprobe:{probe} {{ @ts[tid] = nsecs; }} "
              f"uretprobe:{probe} {{ @h = hist(nsecs - @ts[tid]); delete(@ts[tid]); }}")
    out_path = f"{TMP}/bpftrace.out"
    b = None
    try:
        with open(out_path, "w") as out:
            b = subprocess.Popen(["bpftrace", "-p", str(w.pid), "-e", script], stdout=out,
                                 stderr=subprocess.STDOUT)
        # "Attaching" comes before the probes are: wait for both in the kernel.
        wait_for(file_has(out_path, "Attaching 2 probes"), "bpftrace", b)
        wait_for(lambda: probes_attached(b.pid, OFFSET[site]), "bpftrace's probes", b)
        ids = held_progs(b.pid)
        elapsed = w.go()
        # With -p, bpftrace ends when its process does, printing @h.
        try:
            b.wait(timeout=30)
        except subprocess.TimeoutExpired:
            stop(b)
    finally:
        w.close()
        if b:
            stop(b)
    wait_gone(ids, "bpftrace")
    text = open(out_path, errors="replace").read()
    counted = sum(int(m.group(1)) for m in
                  re.finditer(r"^[\[(][^\n]*?[\])]\s+(\d+) \|", text, re.M))
    if counted != calls:
        raise BenchError(f"bpftrace's histogram counts {counted} spans, expected {calls}:\n"
                         + text[-1500:])
    return {"elapsed_ns": elapsed}


def run_config(cfg, site, calls):
    if cfg == "A":
        return run_none(site, calls)
    stats = cfg.endswith("S")
    if cfg.startswith("F"):
        return run_floor(site, calls, stats)
    if cfg == "C":
        return run_floor(site, calls, clock=True)
    if cfg.startswith("KA"):
        return run_khbpf(site, calls, 1, stats)
    if cfg.startswith("K"):
        return run_khbpf(site, calls, calls, stats)
    return run_bpftrace(site, calls)


def orphan_progs(before):
    """Programs called khbpf_*, loaded since `before`, that no process holds."""
    held = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            held |= held_progs(pid)
    return [i for i, p in loaded_progs().items() if i not in before and i not in held
            and p.get("name", "").startswith("khbpf_")]


def empty_syscall_ns():
    """`perf bench syscall basic` on CPU 0: the unit that makes costs comparable across hosts."""
    out = run(["taskset", "-c", "0", "perf", "bench", "syscall", "basic", "-l", "2000000"]).stdout
    m = re.search(r"([0-9.]+) usecs/op", out)
    if not m:
        raise BenchError("no usecs/op in perf bench syscall output:\n" + out)
    return float(m.group(1)) * 1000


def med_iqr(xs):
    xs = sorted(xs)
    if len(xs) < 4:
        return statistics.median(xs), 0.0
    q = statistics.quantiles(xs, n=4)
    return statistics.median(xs), q[2] - q[0]


def verdict(value, goal):
    return "PASS" if value <= goal else "FAIL"


def main():
    global TMP
    os.makedirs(OUT, exist_ok=True)
    for tool in ("bpftrace", "bpftool", "objdump", "nm", "readelf", "taskset"):
        if not shutil.which(tool):
            raise BenchError(f"{tool} not found; run tools/install-deps.sh --with-bench")
    insn = {s: first_insn(f) for s, f in SITES.items()}
    if insn["annotated"][0] != "0f 1f 44 00 08":
        raise BenchError(f"bench_annotated starts with {insn['annotated']}, not the 5-byte "
                         "NOP (0f 1f 44 00 08); build/workloads/spanbench must be built by clang")
    if insn["plain"][1].startswith("nop"):
        raise BenchError(f"bench_plain starts with a NOP: {insn['plain']}")
    for s, f in SITES.items():
        OFFSET[s] = file_offset(f)
    TMP = tempfile.mkdtemp(prefix="khbpf-bench-",
                           dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    before = set(loaded_progs())
    t0 = time.time()
    try:
        # Calibration (and warm-up): the floor's cost sets each site's N.
        calls = {}
        for s in SITES:
            n = 2000
            per = (run_floor(s, n)["elapsed_ns"] - run_none(s, n)["elapsed_ns"]) / n
            calls[s] = FIXED_CALLS or max(MIN_CALLS, min(MAX_CALLS, int(
                TARGET_S * 1e9 / max(per, 1) / 1000) * 1000))
        print(f"calls per run: {calls} ({time.time() - t0:.0f} s)", file=sys.stderr)
        rounds = {s: {c: [] for c in CONFIGS} for s in SITES}
        syscall_ns = []  # one empty syscall, pinned the same way, once per round
        for i in range(ROUNDS):
            syscall_ns.append(empty_syscall_ns())
            for s in SITES:
                for c in CONFIGS:
                    rounds[s][c].append(run_config(c, s, calls[s]))
            print(f"round {i + 1}/{ROUNDS} done ({time.time() - t0:.0f} s)", file=sys.stderr)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    left = orphan_progs(before)
    if left:
        raise BenchError(f"khbpf_* programs left loaded with no holder: {left}")

    # Per round: ns per span over the round's unprobed loop.
    span = {s: {c: [(r["elapsed_ns"] - a["elapsed_ns"]) / calls[s]
                    for r, a in zip(rounds[s][c], rounds[s]["A"])]
                for c in CONFIGS[1:]} for s in SITES}
    prog = {s: {c: [r["prog_ns"] / calls[s] for r in rounds[s][STATS[c]]] for c in STATS}
            for s in SITES}

    def ratio(xs, ys):
        return med_iqr([x / y if y > 0 else float("inf") for x, y in zip(xs, ys)])

    # What the clock reads alone cost over the empty pair: a bound under any
    # span timer's ratio to the floor (not a goal).
    clock_floor = {s: ratio(span[s]["C"], span[s]["F"]) for s in SITES}
    goals = []  # (text, {config: (median, iqr)}, goal, unit)
    for s in SITES:
        goals.append((f"khbpf / bpftrace, {s}",
                      {k: ratio(span[s][k], span[s]["B"]) for k in ("K", "KA")}, 1.0, "x"))
    for s in SITES:
        goals.append((f"khbpf / empty pair, {s}",
                      {k: ratio(span[s][k], span[s]["F"]) for k in ("K", "KA")}, 1.15, "x"))
    goals.append(("khbpf annotated / khbpf plain",
                  {k: ratio(span["annotated"][k], span["plain"][k]) for k in ("K", "KA")},
                  0.45, "x"))
    for s in SITES:
        goals.append((f"BPF program time / span cost, {s}",
                      {k: ratio(prog[s][k], span[s][STATS[k]]) for k in ("K", "KA")}, 0.15,
                      "%"))

    summary = {
        "rounds": ROUNDS, "calls": calls, "first_instruction": insn,
        "unprobed_ns_per_call": {s: med_iqr([r["elapsed_ns"] / calls[s] for r in rounds[s]["A"]])
                                 for s in SITES},
        "ns_per_span": {s: {c: med_iqr(v) for c, v in span[s].items()} for s in SITES},
        "clock_only_over_empty_pair": clock_floor,
        "empty_syscall_ns": med_iqr(syscall_ns),
        "in_empty_syscalls": {s: {c: ratio(span[s][c], syscall_ns) for c in COST}
                              for s in SITES},
        # Every K run is checked to have dropped no record: its rate is a rate with no drop.
        "records_per_s_no_drop": max(calls["annotated"] * 1e9 / r["elapsed_ns"]
                                     for r in rounds["annotated"]["K"]),
        "bpf_prog_ns_per_span": {s: {c: med_iqr(v) for c, v in prog[s].items()} for s in SITES},
        "goals": [{"goal": g, "target": t, "unit": u,
                   "value": {NAMES[k]: v for k, v in vals.items()},
                   "verdict": {NAMES[k]: verdict(v[0], t) for k, v in vals.items()}}
                  for g, vals, t, u in goals],
        "raw": rounds,
    }
    json.dump(summary, open(f"{OUT}/spans.json", "w"), indent=1)

    def fmt(v, unit=""):
        if unit == "%":
            return f"{v[0] * 100:.1f}% ({v[1] * 100:.1f})"
        if unit == "x":
            return f"{v[0]:.2f} ({v[1]:.2f})"
        return f"{v[0]:.0f} ({v[1]:.0f})"

    lines = [
        f"`spanbench` pinned to CPU 0, N calls per run (annotated {calls['annotated']}, "
        f"plain {calls['plain']}); median (IQR) of {ROUNDS} interleaved rounds; ns per span = "
        "(probed loop - unprobed loop) / N.",
        "",
        "| site (first instruction) | unprobed ns/call | " +
        " | ".join(NAMES[c] for c in COST) + " |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in SITES:
        u = summary["unprobed_ns_per_call"][s]
        lines.append(f"| {s} (`{insn[s][1]}`) | {u[0]:.1f} | " +
                     " | ".join(fmt(summary["ns_per_span"][s][c]) for c in COST) + " |")
    lines += [
        "",
        "With BPF run-time stats on (`--bpf-stats`, `bench-span-floor --stats`): ns per span, "
        "and BPF program time per span (enter + exit), ns:",
        "",
        "| site | " + " | ".join(f"{NAMES[c]}: span / programs" for c in STATS) + " |",
        "| --- | --- | --- | --- |",
    ]
    for s in SITES:
        lines.append(f"| {s} | " + " | ".join(
            f"{fmt(summary['ns_per_span'][s][STATS[c]])} / "
            f"{fmt(summary['bpf_prog_ns_per_span'][s][c])}" for c in STATS) + " |")
    lines += [
        "",
        f"| goal (ratio in the same round) | {NAMES['K']} | {NAMES['KA']} | target |",
        "| --- | --- | --- | --- |",
    ]
    for g, vals, t, u in goals:
        cells = [f"{fmt(vals[k], u)} {verdict(vals[k][0], t)}" for k in ("K", "KA")]
        target = f"<= {t * 100:.0f}%" if u == "%" else f"<= {t}"
        lines.append(f"| {g} | {cells[0]} | {cells[1]} | {target} |")
    lines += ["", f"In empty syscalls (`perf bench syscall basic` on CPU 0 in each round, "
              f"median {summary['empty_syscall_ns'][0]:.0f} ns; per span over the same "
              "round's syscall):", "",
              "| site | " + " | ".join(NAMES[c] for c in COST) + " |",
              "| --- | --- | --- | --- | --- | --- |"]
    for s in SITES:
        lines.append(f"| {s} | " + " | ".join(fmt(summary["in_empty_syscalls"][s][c], "x")
                                              for c in COST) + " |")
    lines += ["", "Clock-only pair / empty pair (same round; a bound under any span timer's "
              "ratio to the empty pair): " +
              ", ".join(f"{s} {fmt(clock_floor[s], 'x')}" for s in SITES),
              "", f"Span records with no drop: up to {summary['records_per_s_no_drop']:.0f} per "
              "second from one thread (the fastest khbpf (records) run; every run is checked "
              "to have dropped none). One thread on a 2-CPU VM cannot overrun the reader, so "
              "the first drop was not reached."]
    text = "\n".join(lines) + "\n"
    open(f"{OUT}/spans.md", "w").write(text)
    print(text)


def interrupted(signum, frame):
    raise BenchError(f"stopped by {signal.Signals(signum).name}")


if __name__ == "__main__":
    # The per-run `finally` blocks end the workload and the tool on any exit.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupted)
    try:
        main()
    except (BenchError, subprocess.CalledProcessError) as e:
        msg = e.stderr if isinstance(e, subprocess.CalledProcessError) else str(e)
        print(f"bench-spans: {msg}", file=sys.stderr)
        sys.exit(1)

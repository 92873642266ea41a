#!/usr/bin/python3
"""Context-switch overhead of khbpf against its peers and an empty program.

Rounds are interleaved (A B C ... I, nine times), the workload is
`perf bench sched pipe -T` pinned to CPU 0, and every comparison is a ratio
of figures measured in this run:

  A  the workload alone
  B  under `khbpf run` (the workload is the target)
  C  with libbpf-tools `runqlat -L` running
  D  with `khbpf attach` on another (sleeping) process: non-target cost
  E  with an empty tp_btf/sched_switch program attached
  F  `perf bench syscall basic`: an empty syscall, the unit for comparisons
  G  with `khbpf serve` (every task of the host, by cgroup)
  H  with libbpf-tools `runqslower` (threshold 1 s: it traces every switch)
  I  with a bpftrace script keeping per-thread counters (switches, on-CPU
     time, runqueue-wait histogram)
  J  under `khbpf run --wakers` (blocked time, and who woke each thread)
  K  under `khbpf run --blocked` (blocked time by cause)

Every traced configuration runs twice a round. With run-time stats off, as
the tools run in use, it gives the added time, each run between two runs of
the workload alone (A), whose mean is its baseline: the baseline drifts
within a round by more than khbpf adds. With BPF_ENABLE_STATS held for the
run it gives the programs' ns per run (khbpf reports its own; the peers' and
the empty program's are read with bpftool / bench-empty). Stats cost every
program run two sched_clock() reads (bpf_prog_run()'s stats branch), so the
added time with them on is kept apart, for comparison with earlier runs.
After each peer stops, none of its programs may stay loaded.
"""
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "9"))
WARMUP = int(os.environ.get("BENCH_WARMUP", "1"))
LOOPS = int(os.environ.get("BENCH_LOOPS", "200000"))
OUT = "build/bench"
KHBPF = "build/khbpf"
EMPTY = "build/tools/bench-empty"
CONFIGS = "ABCDEFGHIJK"
TRACED = "BCDEGHIKJ"  # the configurations with a sched_switch program
PIPE = ["taskset", "-c", "0", "perf", "bench", "sched", "pipe", "-T", "-l", str(LOOPS)]
SYSCALL = ["taskset", "-c", "0", "perf", "bench", "syscall", "basic", "-l", "2000000"]


def usecs_per_op(text):
    m = re.search(r"([0-9.]+) usecs/op", text)
    if not m:
        raise RuntimeError("no usecs/op in perf output:\n" + text)
    return float(m.group(1))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def progs():
    return {p["id"]: p for p in json.loads(run(["bpftool", "-j", "prog", "show"]).stdout)}


def new_prog(before, name):
    """The program called `name` loaded since `before` (bpftool here shows no pids)."""
    for pid_, p in progs().items():
        if pid_ not in before and p.get("name") == name:
            return pid_
    return None


def prog_stats(prog_id):
    p = progs().get(prog_id, {})
    return p.get("run_cnt", 0), p.get("run_time_ns", 0)


def wait_gone(ids, timeout=5.0):
    """After a peer stops, none of its programs may stay loaded."""
    end = time.time() + timeout
    while time.time() < end:
        if not set(ids) & set(progs()):
            return True
        time.sleep(0.1)
    return False


def round_a():
    return {"usecs_op": usecs_per_op(run(PIPE).stdout)}


def round_b(extra=(), stats=True):
    doc_path = f"{OUT}/b.json"
    r = run([KHBPF, "run", *(["--bpf-stats"] if stats else []), *extra, "-o", doc_path, "--"] +
            PIPE)
    if not stats:
        return {"usecs_op": usecs_per_op(r.stdout)}
    doc = json.load(open(doc_path))
    ov = doc["overhead"]
    out = {"usecs_op": usecs_per_op(r.stdout),
           "switch_cnt": ov["khbpf_sched_switch_run_cnt"]["value"],
           "switch_ns": ov["khbpf_sched_switch_run_time_ns"]["value"]}
    if "khbpf_sched_waking_run_cnt" in ov:
        out["waking_cnt"] = ov["khbpf_sched_waking_run_cnt"]["value"]
        out["waking_ns"] = ov["khbpf_sched_waking_run_time_ns"]["value"]
    return out


def round_j(stats=True):
    return round_b(("--wakers",), stats)


def round_k(stats=True):
    return round_b(("--blocked",), stats)


# bpftrace keeping per-thread counters like khbpf's: switches in and out,
# on-CPU time, and each runqueue wait from wakeup to switch-in.
BPFTRACE_SCRIPT = (
    "tracepoint:sched:sched_wakeup { @q[args->pid] = nsecs; } "
    "tracepoint:sched:sched_switch { @out[args->prev_pid] = count(); "
    "if (@in[args->prev_pid]) { @cpu[args->prev_pid] = sum(nsecs - @in[args->prev_pid]); } "
    "@in[args->next_pid] = nsecs; "
    "if (@q[args->next_pid]) { @wait[args->next_pid] = hist(nsecs - @q[args->next_pid]); "
    "delete(@q[args->next_pid]); } }")


def peer_round(cmd, ready, stats):
    """Workload under a peer tracer: its sched_switch program's stats, then proof
    that every program it loaded is gone after it stops."""
    holder = None
    if stats:
        holder = subprocess.Popen([EMPTY, "--no-attach"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        holder.stdout.readline()
    before = set(progs())
    peer = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    ids = []
    try:
        sw = None
        for _ in range(400):
            sw = next((i for i, p in progs().items() if i not in before and ready(p)), None)
            if sw or peer.poll() is not None:
                break
            time.sleep(0.05)
        if not sw:
            raise RuntimeError(f"{cmd[0]}'s sched_switch program never appeared")
        time.sleep(0.3)  # the rest of its programs
        ids = [i for i in progs() if i not in before]
        c0, t0 = prog_stats(sw)
        usecs = usecs_per_op(run(PIPE).stdout)
        c1, t1 = prog_stats(sw)
    finally:
        peer.send_signal(signal.SIGINT)
        try:
            peer.wait(timeout=5)
        except subprocess.TimeoutExpired:
            # bpftrace 0.17 was seen ignoring SIGINT here.
            peer.kill()
            peer.wait()
        if holder:
            holder.stdin.close()
            holder.wait()
    if not wait_gone(ids):
        raise RuntimeError(f"{cmd[0]} left programs loaded after it stopped")
    return {"usecs_op": usecs, "switch_cnt": c1 - c0, "switch_ns": t1 - t0}


def round_c(stats=True):
    return peer_round(["runqlat", "-L"], lambda p: p.get("name") == "sched_switch", stats)


def round_h(stats=True):
    # Threshold 1 s: it traces every switch and prints (almost) nothing.
    return peer_round(["runqslower", "1000000"], lambda p: p.get("name") == "sched_switch",
                      stats)


def round_i(stats=True):
    return peer_round(["bpftrace", "-e", BPFTRACE_SCRIPT],
                      lambda p: "sched_switch" in p.get("name", "") or
                      p.get("name", "").startswith("tracepoint_sch"), stats)


def round_g(stats=True):
    """khbpf serve, every task of the host, by cgroup."""
    s = subprocess.Popen([KHBPF, "serve", "--listen", "127.0.0.1:0",
                          *(["--bpf-stats"] if stats else []),
                          "--ndjson", f"{OUT}/g.ndjson", "--interval", "3600"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        if "listening" not in s.stderr.readline():
            raise RuntimeError("khbpf serve did not start")
        usecs = usecs_per_op(run(PIPE).stdout)
    finally:
        s.send_signal(signal.SIGINT)
        s.wait(timeout=30)
    # The last NDJSON line is the window that ends at SIGINT: the whole run.
    ov = json.loads(open(f"{OUT}/g.ndjson").read().splitlines()[-1])["overhead"]
    os.unlink(f"{OUT}/g.ndjson")
    if not stats:
        return {"usecs_op": usecs}
    return {"usecs_op": usecs, "switch_cnt": ov["khbpf_sched_switch_run_cnt"]["value"],
            "switch_ns": ov["khbpf_sched_switch_run_time_ns"]["value"]}


def round_d(stats=True):
    sleeper = subprocess.Popen(["sleep", "600"])
    doc_path = f"{OUT}/d.json"
    kh = subprocess.Popen([KHBPF, "attach", *(["--bpf-stats"] if stats else []), "--pid",
                           str(sleeper.pid), "-o", doc_path], stderr=subprocess.PIPE, text=True)
    try:
        line = kh.stderr.readline()
        if "watching" not in line:
            raise RuntimeError("khbpf attach did not start: " + line)
        usecs = usecs_per_op(run(PIPE).stdout)
    finally:
        kh.send_signal(signal.SIGINT)
        kh.wait(timeout=10)
        sleeper.kill()
        sleeper.wait()
    if not stats:
        return {"usecs_op": usecs}
    ov = json.load(open(doc_path))["overhead"]
    return {"usecs_op": usecs, "switch_cnt": ov["khbpf_sched_switch_run_cnt"]["value"],
            "switch_ns": ov["khbpf_sched_switch_run_time_ns"]["value"]}


def round_e(stats=True):
    e = subprocess.Popen([EMPTY, *([] if stats else ["--no-stats"])], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    if e.stdout.readline().strip() != "ready":
        raise RuntimeError("bench-empty did not start")
    usecs = usecs_per_op(run(PIPE).stdout)
    e.stdin.close()
    st = json.loads(e.stdout.readline()) if stats else None
    e.wait()
    if not stats:
        return {"usecs_op": usecs}
    return {"usecs_op": usecs, "switch_cnt": st["run_cnt"], "switch_ns": st["run_time_ns"]}


def round_f():
    return {"usecs_op": usecs_per_op(run(SYSCALL).stdout)}


LOADER_S = float(os.environ.get("BENCH_LOADER_S", "60"))
# 1000 threads, each waking every 100 ms: 10000 switches a second to account.
THREADS_1000 = ("import threading, time\n"
                "def nap():\n"
                "    while True: time.sleep(0.1)\n"
                "for _ in range(1000): threading.Thread(target=nap, daemon=True).start()\n"
                "print('up', flush=True)\n"
                "time.sleep(3600)\n")


def loader_cost(seconds=LOADER_S):
    """khbpf attach's own CPU over a window on a 1000-thread target, and its peak RSS."""
    sleeper = subprocess.Popen(["/usr/bin/python3", "-c", THREADS_1000], stdout=subprocess.PIPE,
                               text=True)
    if sleeper.stdout.readline().strip() != "up":
        raise RuntimeError("the 1000-thread target did not start")
    doc_path = f"{OUT}/g.json"
    kh = subprocess.Popen([KHBPF, "attach", "--bpf-stats", "--pid", str(sleeper.pid), "-o", doc_path],
                          stderr=subprocess.PIPE, text=True)
    tick = os.sysconf("SC_CLK_TCK")

    def cpu_ticks():
        f = open(f"/proc/{kh.pid}/stat").read().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])
    try:
        if "watching" not in kh.stderr.readline():
            raise RuntimeError("khbpf attach did not start")
        time.sleep(1)
        c0, t0 = cpu_ticks(), time.time()
        time.sleep(seconds)
        c1, t1 = cpu_ticks(), time.time()
    finally:
        kh.send_signal(signal.SIGINT)
        kh.wait(timeout=10)
        sleeper.kill()
        sleeper.wait()
    doc = json.load(open(doc_path))
    ov = doc["overhead"]
    if len(doc["threads"]) < 1001:
        raise RuntimeError(f"the document lists {len(doc['threads'])} threads, not 1001")
    return {"waiting_cpu_percent": (c1 - c0) / tick / (t1 - t0) * 100,
            "window_s": t1 - t0, "max_rss_kib": ov["loader_max_rss_kib"]["value"],
            "threads": len(doc["threads"]),
            "loader_cpu_ns": ov["loader_cpu_ns"]["value"]}


def med_iqr(xs):
    xs = sorted(xs)
    if len(xs) < 4:
        return statistics.median(xs), 0.0
    q = statistics.quantiles(xs, n=4)
    return statistics.median(xs), q[2] - q[0]


def main():
    os.makedirs(OUT, exist_ok=True)
    # bpftrace's tracepoint probes need tracefs (the kernel's own, not a sysctl).
    if not os.path.exists("/sys/kernel/tracing/events"):
        print("bench-sched: mounting tracefs on /sys/kernel/tracing for bpftrace", file=sys.stderr)
        run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"])
    rounds = {k: [] for k in CONFIGS}
    # Stats off: the added time, each configuration between two baselines.
    quiet = {k: [] for k in TRACED}
    quiet_base = {k: [] for k in TRACED}
    fns = {"B": round_b, "C": round_c, "D": round_d, "E": round_e,
           "G": round_g, "H": round_h, "I": round_i, "J": round_j,
           "K": round_k}
    t0 = time.time()
    # One round first, not kept: the first runs of each binary pay for cold caches.
    for i in range(-WARMUP, ROUNDS):
        keep = i >= 0
        before = round_a()
        if keep:
            rounds["A"].append(before)
        for k in TRACED:
            x = fns[k](stats=False)
            after = round_a()
            if keep:
                quiet[k].append(x)
                quiet_base[k].append((before["usecs_op"] + after["usecs_op"]) / 2)
            before = after
        for k in TRACED:
            x = fns[k](stats=True)
            if keep:
                rounds[k].append(x)
        x = round_f()
        if keep:
            rounds["F"].append(x)
        print(f"round {i + 1}/{ROUNDS} {'done' if keep else '(warm-up) done'} "
              f"({time.time() - t0:.0f} s)", file=sys.stderr)

    def col(k, f):
        return [f(r) for r in rounds[k]]

    loader = loader_cost()
    base = col("A", lambda r: r["usecs_op"] * 1000)
    # Each op of `sched pipe` is two context switches plus two pipe syscalls.
    added = {k: [(x["usecs_op"] - a) * 1000 for x, a in zip(quiet[k], quiet_base[k])]
             for k in TRACED}
    # With stats on, against the round's first baseline (how earlier runs measured).
    added_stats = {k: [x["usecs_op"] * 1000 - a for x, a in zip(rounds[k], base)]
                   for k in TRACED}
    per_run = {k: col(k, lambda r: r["switch_ns"] / r["switch_cnt"] if r["switch_cnt"] else 0)
               for k in TRACED}
    syscall_ns = col("F", lambda r: r["usecs_op"] * 1000)
    ratio_added = [b / c if c > 0 else float("inf") for b, c in zip(added["B"], added["C"])]
    ratio_added_stats = [b / c if c > 0 else float("inf")
                         for b, c in zip(added_stats["B"], added_stats["C"])]
    ratio_prog = [b / c for b, c in zip(per_run["B"], per_run["C"])]
    ratio_nontarget = [d / e for d, e in zip(per_run["D"], per_run["E"])]
    summary = {
        "rounds": ROUNDS, "loops": LOOPS,
        "baseline_ns_per_op": med_iqr(base),
        "added_ns_per_op": {k: med_iqr(v) for k, v in added.items()},
        "added_ns_per_op_stats_on": {k: med_iqr(v) for k, v in added_stats.items()},
        "sched_switch_ns_per_run": {k: med_iqr(v) for k, v in per_run.items()},
        "empty_syscall_ns": med_iqr(syscall_ns),
        "ratio_added_khbpf_over_runqlat": med_iqr(ratio_added),
        "ratio_added_khbpf_over_runqlat_stats_on": med_iqr(ratio_added_stats),
        "ratio_switch_prog_khbpf_over_runqlat": med_iqr(ratio_prog),
        "ratio_nontarget_over_empty": med_iqr(ratio_nontarget),
        "vs_runqlat": {k: (med_iqr([x / c if c > 0 else float("inf")
                                    for x, c in zip(added[k], added["C"])]),
                           med_iqr([x / c for x, c in zip(per_run[k], per_run["C"])]))
                       for k in TRACED},
        "loader": loader,
        "raw": rounds, "raw_stats_off": quiet, "raw_stats_off_baseline_us": quiet_base,
    }
    json.dump(summary, open(f"{OUT}/sched.json", "w"), indent=1)

    sc = summary["empty_syscall_ns"][0]
    names = {"B": "khbpf run (target)", "C": "runqlat -L", "D": "khbpf attach (non-target)",
             "E": "empty tp_btf program", "G": "khbpf serve (every task, by cgroup)",
             "H": "runqslower", "I": "bpftrace, per-thread counters",
             "J": "khbpf run --wakers (target)", "K": "khbpf run --blocked (target)"}
    lines = [
        f"`perf bench sched pipe -T -l {LOOPS}` pinned to CPU 0; median (IQR) of {ROUNDS} "
        f"interleaved rounds after {WARMUP} warm-up round(s); one empty syscall "
        f"(`perf bench syscall basic`) = {sc:.0f} ns in this run. Added time with run-time "
        "stats off (each run between two of the workload alone); program ns per run, and "
        "the last column, with them on.",
        "",
        "| configuration | added ns/op | added ns per switch | in empty syscalls | "
        "sched_switch prog ns/run | added / runqlat's | prog / runqlat's | "
        "stats on: added / runqlat's |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        f"| workload alone | {summary['baseline_ns_per_op'][0]:.0f} ns/op "
        f"({summary['baseline_ns_per_op'][1]:.0f}) | | | | | | |",
    ]
    for k in TRACED:
        a, ai = summary["added_ns_per_op"][k]
        p, pi = summary["sched_switch_ns_per_run"][k]
        ra, rp = summary["vs_runqlat"][k]
        rs = med_iqr([x / c if c > 0 else float("inf")
                      for x, c in zip(added_stats[k], added_stats["C"])])
        # One op of `sched pipe -T` is two context switches.
        lines.append(f"| {names[k]} | {a:.0f} ({ai:.0f}) | {a / 2:.0f} | {a / sc:.2f} | "
                     f"{p:.0f} ({pi:.0f}) | {ra[0]:.2f} ({ra[1]:.2f}) | "
                     f"{rp[0]:.2f} ({rp[1]:.2f}) | {rs[0]:.2f} ({rs[1]:.2f}) |")
    r1, r2, r3, r4 = (summary[k] for k in ("ratio_added_khbpf_over_runqlat",
                                           "ratio_switch_prog_khbpf_over_runqlat",
                                           "ratio_nontarget_over_empty",
                                           "ratio_added_khbpf_over_runqlat_stats_on"))
    lines += [
        "",
        "| ratio (same round) | median (IQR) | goal |",
        "| --- | --- | --- |",
        f"| khbpf added time / runqlat added time | {r1[0]:.2f} ({r1[1]:.2f}) | <= 0.15 |",
        f"| the same with run-time stats on | {r4[0]:.2f} ({r4[1]:.2f}) | (for comparison) |",
        f"| khbpf sched_switch ns/run / runqlat's | {r2[0]:.2f} ({r2[1]:.2f}) | <= 0.35 |",
        f"| non-target switch / empty program | {r3[0]:.2f} ({r3[1]:.2f}) | <= 1.1 |",
    ]
    waking = [r["waking_ns"] / r["waking_cnt"] for r in rounds["J"] if r.get("waking_cnt")]
    if waking:
        w, wi = med_iqr(waking)
        lines += ["", f"With `--wakers`, khbpf_sched_waking: {w:.0f} ({wi:.0f}) ns per run "
                  "(one per wakeup of a target thread), beside its sched_switch program above."]
    lines += [
        "",
        f"Loader (`khbpf attach` on a process of 1000 threads each waking every 100 ms, "
        f"{loader['window_s']:.0f} s, {loader['threads']} threads in the document): "
        f"{loader['waiting_cpu_percent']:.2f}% of one CPU while waiting (goal < 1%), "
        f"{loader['loader_cpu_ns'] / 1e6:.0f} ms of CPU in all, including the end of the window, "
        f"peak RSS {loader['max_rss_kib'] / 1024:.1f} MiB (goal < 32 MiB).",
    ]
    text = "\n".join(lines) + "\n"
    open(f"{OUT}/sched.md", "w").write(text)
    print(text)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Accuracy against the kernel, khbpf beside its peers (issue 6).

A workload (build/workloads/cgroupload --wait 1: 1 thread, then 6 threads
created after go, sleeping and spinning for 1.5 s, then all blocked) is
watched from before go to after it is quiet by three tools at once:

  khbpf attach --pid PID       per-thread scheduler evidence
  perf stat -p PID -e context-switches,cpu-migrations
  runqlat -p PID               runqueue-wait histogram of the process

and the kernel's own counters are read from /proc/PID/task/*/{status,sched,
schedstat} before go (the main thread) and at the end (every thread, all
blocked). Each tool's totals are set against the /proc deltas, over
BENCH_ACC_ROUNDS rounds (default 5). Writes build/bench/accuracy.{md,json}.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

ROUNDS = int(os.environ.get("BENCH_ACC_ROUNDS", "5"))
OUT = "build/bench"
KHBPF = "build/khbpf"
LOAD = "build/workloads/cgroupload"


def cgroup2_root():
    for line in open("/proc/self/mountinfo"):
        f = line.split()
        sep = f.index("-")
        if f[sep + 1] == "cgroup2" and f[3] == "/":
            return f[4]
    raise RuntimeError("no cgroup2 mount")


def proc_counts(pid):
    """The kernel's per-thread counters, summed over the process's threads."""
    t = {"switches": 0, "migrations": 0, "waits": 0}
    for tid in os.listdir(f"/proc/{pid}/task"):
        st = dict(l.split(":", 1) for l in open(f"/proc/{pid}/task/{tid}/status") if ":" in l)
        t["switches"] += int(st["voluntary_ctxt_switches"]) + int(st["nonvoluntary_ctxt_switches"])
        m = re.search(r"^se\.nr_migrations\s*:\s*(\d+)", open(f"/proc/{pid}/task/{tid}/sched").read(),
                      re.M)
        t["migrations"] += int(m.group(1))
        t["waits"] += int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[2])
    return t


def one_round(cg):
    w = subprocess.Popen([LOAD, cg, "--threads", "6", "--ms", "1500", "--wait", "1"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    tools = []
    try:
        line = w.stdout.readline().split()
        if line[:1] != ["ready"]:
            raise RuntimeError(f"workload said {line}")
        pid = int(line[1])
        # Its main thread goes to sleep on stdin right after "ready": let it, so the
        # baseline is not read in the middle of that last switch.
        time.sleep(0.3)
        before = proc_counts(pid)
        doc = f"{OUT}/acc.json"
        kh = subprocess.Popen([KHBPF, "attach", "--pid", str(pid), "-o", doc],
                              stderr=subprocess.PIPE, text=True)
        perf = subprocess.Popen(["perf", "stat", "-x", ",", "-e",
                                 "context-switches,cpu-migrations", "-p", str(pid)],
                                stderr=subprocess.PIPE, text=True)
        rq = subprocess.Popen(["runqlat", "-p", str(pid)], stdout=subprocess.PIPE, text=True)
        tools = [kh, perf, rq]
        if "watching" not in kh.stderr.readline():
            raise RuntimeError("khbpf attach did not start")
        time.sleep(2)  # perf and runqlat attach (no ready line from either)
        w.stdin.write("go\n")
        w.stdin.flush()
        if w.stdout.readline().strip() != "idle":
            raise RuntimeError("workload did not go quiet")
        time.sleep(0.5)
        after = proc_counts(pid)
        for t in tools:
            t.send_signal(signal.SIGINT)
        kh.wait(timeout=30)
        perf_err = perf.communicate(timeout=30)[1]
        rq_out = rq.communicate(timeout=30)[0]
    finally:
        for t in tools:
            if t.poll() is None:
                t.kill()
                t.wait()
        w.stdin.close()
        w.wait()
    d = json.load(open(doc))
    os.unlink(doc)
    sch = d["hardware"]["value"]["scheduler"]
    kh_counts = {"switches": sch["total_context_switches"]["value"]["value"],
                 "migrations": sch["cpu_migrations"]["value"]["value"],
                 "waits": sch["timeslices"]["value"]["value"]}
    perf_counts = {}
    for line in perf_err.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2] in ("context-switches", "cpu-migrations") and f[0].isdigit():
            perf_counts["switches" if f[2] == "context-switches" else "migrations"] = int(f[0])
    rq_waits = sum(int(m.group(1)) for m in
                   re.finditer(r"^\s*\d+ -> \d+\s*:\s*(\d+)", rq_out, re.M))
    want = {k: after[k] - before[k] for k in after}
    return {"proc": want, "khbpf": kh_counts, "perf": perf_counts, "runqlat": {"waits": rq_waits}}


def main():
    os.makedirs(OUT, exist_ok=True)
    cg = cgroup2_root()
    rounds = [one_round(cg) for _ in range(ROUNDS)]
    json.dump(rounds, open(f"{OUT}/accuracy.json", "w"), indent=1)
    rows = []
    for tool, fields in (("khbpf", ("switches", "migrations", "waits")),
                         ("perf stat", ("switches", "migrations")),
                         ("runqlat", ("waits",))):
        key = tool.split()[0]
        for f in fields:
            exact = sum(r[key].get(f) == r["proc"][f] for r in rounds)
            diffs = [r[key].get(f, 0) - r["proc"][f] for r in rounds]
            rows.append(f"| {tool} | {f} | {exact}/{ROUNDS} | "
                        f"{min(diffs)} .. {max(diffs)} |")
    p0 = rounds[0]["proc"]
    text = "\n".join([
        f"`cgroupload --threads 6 --ms 1500` (1 thread at attach, 6 created after), watched by "
        f"all three at once, {ROUNDS} rounds; /proc deltas of the first round: "
        f"{p0['switches']} switches, {p0['migrations']} migrations, {p0['waits']} runqueue "
        "waits (timeslices).",
        "",
        "| tool | quantity | rounds equal to /proc | tool − /proc (min .. max) |",
        "| --- | --- | --- | --- |",
        *rows,
    ]) + "\n"
    open(f"{OUT}/accuracy.md", "w").write(text)
    print(text)


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("bench_accuracy: needs root (loads BPF); run 'sudo make bench'")
    main()

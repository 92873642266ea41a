#!/usr/bin/python3
"""`khbpf serve` system-wide: overhead, scrape time and steady CPU (issue 5).

1. Overhead per context switch, rounds interleaved: `perf bench sched
   messaging` (hackbench) alone, under `khbpf serve` (every task, by cgroup),
   and under libbpf-tools `runqlat` (system-wide, its default). Switches per
   run come from /proc/stat's ctxt, so the added time is divided by the
   switches that happened. Wall time is too noisy on this workload to show a
   BPF program's cost, so each tool also runs once more with run-time stats
   on (serve --bpf-stats; runqlat beside bench-empty --no-attach): the time
   in all of the tool's programs over the host's switches.
2. Scrape time with 1000 tracked processes: `serve --by process --top 1000`
   while 1000 sleeping processes exist; GET /metrics timed N times.
3. Steady CPU: serve (by cgroup, 15 s windows) scraped every 15 s for
   BENCH_SERVE_STEADY_S seconds (default 45) on an idle host; its CPU time
   from /proc/PID/stat over the wall time.
Writes build/bench/serve.md and build/bench/serve.json.
"""
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_sched import EMPTY, progs  # noqa: E402  the bpftool readers, shared

ROUNDS = int(os.environ.get("BENCH_SERVE_ROUNDS", "9"))
STEADY_S = float(os.environ.get("BENCH_SERVE_STEADY_S", "45"))
OUT = "build/bench"
KHBPF = "build/khbpf"
HACKBENCH = ["perf", "bench", "sched", "messaging", "-g", "10", "-l", "500"]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def ctxt():
    for line in open("/proc/stat"):
        if line.startswith("ctxt "):
            return int(line.split()[1])
    raise RuntimeError("no ctxt in /proc/stat")


def hackbench():
    """perf's own time for the messaging phase, and the host's switches meanwhile."""
    c0 = ctxt()
    out = subprocess.run(HACKBENCH, capture_output=True, text=True, check=True).stdout
    c1 = ctxt()
    m = re.search(r"Total time: ([0-9]+)\.([0-9]{3})", out)
    if not m:
        raise RuntimeError("no 'Total time' in perf output:\n" + out)
    return {"ns": (int(m.group(1)) * 1000 + int(m.group(2))) * 1000000, "switches": c1 - c0}


class Serve:
    def __init__(self, *args):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.p = subprocess.Popen([KHBPF, "serve", "--listen", f"127.0.0.1:{self.port}", *args],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                urllib.request.urlopen(self.url + "/healthz", timeout=1).read()
                return
            except OSError:
                if self.p.poll() is not None:
                    raise RuntimeError("serve exited: " + self.p.stderr.read())
                time.sleep(0.1)
        raise RuntimeError("serve did not come up")

    def get(self, path):
        return urllib.request.urlopen(self.url + path, timeout=30).read()

    def cpu_ns(self):
        f = open(f"/proc/{self.p.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) * 1000000000 // CLK_TCK

    def stop(self):
        self.p.send_signal(signal.SIGINT)
        if self.p.wait(timeout=30) != 0:
            raise RuntimeError(f"serve exited {self.p.returncode}: {self.p.stderr.read()}")


class Runqlat:
    def __init__(self):
        self.p = subprocess.Popen(["runqlat", "5"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline:
            progs = subprocess.run(["bpftool", "prog", "show"], capture_output=True,
                                   text=True).stdout
            if "sched_switch" in progs or "handle_sched_switch" in progs:
                return
            time.sleep(0.2)
        raise RuntimeError("runqlat's programs never appeared")

    def stop(self):
        self.p.send_signal(signal.SIGINT)
        self.p.wait(timeout=30)


def seconds_ns(text):
    """A decimal seconds value from khbpf's /metrics, exactly, in ns."""
    whole, _, frac = text.partition(".")
    return int(whole) * 1000000000 + int((frac + "000000000")[:9])


def serve_prog_ns(s):
    total = 0
    for line in s.get("/metrics").decode().splitlines():
        if line.startswith("khbpf_bpf_run_seconds_total{"):
            total += seconds_ns(line.rsplit(" ", 1)[1])
    return total


def prog_time_round():
    """BPF ns per host context switch for serve and for runqlat, stats on."""
    s = Serve("--interval", "15", "--bpf-stats")
    try:
        t0, c0 = serve_prog_ns(s), ctxt()
        hackbench()
        t1, c1 = serve_prog_ns(s), ctxt()
    finally:
        s.stop()
    serve = (t1 - t0) / (c1 - c0)
    holder = subprocess.Popen([EMPTY, "--no-attach"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    holder.stdout.readline()
    before = set(progs())
    r = None
    try:
        r = Runqlat()
        time.sleep(0.5)
        ids = [i for i in progs() if i not in before]

        def rq_ns():
            p = progs()
            return sum(p.get(i, {}).get("run_time_ns", 0) for i in ids)
        t0, c0 = rq_ns(), ctxt()
        hackbench()
        t1, c1 = rq_ns(), ctxt()
    finally:
        if r:
            r.stop()
        holder.stdin.close()
        holder.wait()
    return {"serve": serve, "runqlat": (t1 - t0) / (c1 - c0)}


def med_iqr(xs):
    xs = sorted(xs)
    if len(xs) < 4:
        return statistics.median(xs), 0.0
    q = statistics.quantiles(xs, n=4)
    return statistics.median(xs), q[2] - q[0]


def overhead():
    runs = {"none": [], "serve": [], "runqlat": []}
    hackbench()  # warm-up
    for _ in range(ROUNDS):
        runs["none"].append(hackbench())
        s = Serve("--interval", "15")
        runs["serve"].append(hackbench())
        s.stop()
        r = Runqlat()
        runs["runqlat"].append(hackbench())
        r.stop()
    per = {k: [r["ns"] / r["switches"] for r in v] for k, v in runs.items()}
    added = {k: [x - b for x, b in zip(per[k], per["none"])] for k in ("serve", "runqlat")}
    med = {k: med_iqr(v) for k, v in added.items()}
    # Per-round added times can be negative in the noise: the ratio is of the medians.
    ratio = med["serve"][0] / med["runqlat"][0] if med["runqlat"][0] > 0 else float("inf")
    pt = [prog_time_round() for _ in range(3)]
    prog = {k: med_iqr([r[k] for r in pt]) for k in ("serve", "runqlat")}
    # The unit for comparing across hosts: one empty syscall, measured in this run.
    out = subprocess.run(["perf", "bench", "syscall", "basic", "-l", "2000000"], check=True,
                         capture_output=True, text=True).stdout
    syscall_ns = float(re.search(r"([0-9.]+) usecs/op", out).group(1)) * 1000
    return {"raw": runs, "ns_per_switch": {k: med_iqr(v) for k, v in per.items()},
            "added_ns_per_switch": med, "serve_over_runqlat": ratio,
            "bpf_ns_per_switch": prog, "empty_syscall_ns": syscall_ns,
            "bpf_serve_over_runqlat": med_iqr([r["serve"] / r["runqlat"] for r in pt])}


def scrape_1000():
    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(1000)]
    s = None
    try:
        time.sleep(1)
        s = Serve("--by", "process", "--top", "1000", "--max-groups", "4096", "--interval", "1")
        # Every sleeper switched out once since serve started? No: they sleep. Wake each
        # once (SIGCONT is a no-op wake) so each becomes a group.
        for p in sleepers:
            os.kill(p.pid, signal.SIGSTOP)
            os.kill(p.pid, signal.SIGCONT)
        time.sleep(3)
        text = s.get("/metrics").decode()
        series = len([l for l in text.splitlines()
                      if l.startswith("khbpf_voluntary_switches_total{")])
        times = []
        for _ in range(20):
            t0 = time.monotonic_ns()
            body = s.get("/metrics")
            times.append((time.monotonic_ns() - t0) / 1e6)
        s.stop()
        s = None
        return {"series": series, "bytes": len(body), "ms": med_iqr(times), "max_ms": max(times)}
    finally:
        if s:
            s.stop()
        for p in sleepers:
            p.kill()
        for p in sleepers:
            p.wait()


def steady():
    s = Serve("--interval", "15")
    try:
        time.sleep(2)
        c0, t0 = s.cpu_ns(), time.monotonic_ns()
        end = time.monotonic() + STEADY_S
        scrapes = 0
        while time.monotonic() < end:
            s.get("/metrics")
            scrapes += 1
            time.sleep(min(15, max(0, end - time.monotonic())))
        c1, t1 = s.cpu_ns(), time.monotonic_ns()
    finally:
        s.stop()
    return {"seconds": (t1 - t0) / 1e9, "scrapes": scrapes, "cpu_ns": c1 - c0,
            "cpu_share": (c1 - c0) / (t1 - t0)}


def main():
    os.makedirs(OUT, exist_ok=True)
    res = {"overhead": overhead(), "scrape_1000": scrape_1000(), "steady": steady()}
    json.dump(res, open(f"{OUT}/serve.json", "w"), indent=1)
    o, sc, st = res["overhead"], res["scrape_1000"], res["steady"]

    def f(v, d=0):
        return f"{v[0]:.{d}f} ({v[1]:.{d}f})"

    text = "\n".join([
        f"`{' '.join(HACKBENCH)}`, {ROUNDS} interleaved rounds, median (IQR); perf's Total "
        "time over the host's context switches meanwhile (/proc/stat ctxt).",
        "",
        "| | ns per context switch | added over none |",
        "| --- | --- | --- |",
        f"| none | {f(o['ns_per_switch']['none'])} | |",
        f"| khbpf serve (every task, by cgroup) | {f(o['ns_per_switch']['serve'])} | "
        f"{f(o['added_ns_per_switch']['serve'])} |",
        f"| runqlat (system-wide) | {f(o['ns_per_switch']['runqlat'])} | "
        f"{f(o['added_ns_per_switch']['runqlat'])} |",
        "",
        f"serve added / runqlat added (medians): {o['serve_over_runqlat']:.2f}",
        "",
        "BPF program time per host context switch (run-time stats, all of the tool's "
        f"programs, 3 runs): serve {f(o['bpf_ns_per_switch']['serve'])} ns, runqlat "
        f"{f(o['bpf_ns_per_switch']['runqlat'])} ns; serve / runqlat "
        f"{f(o['bpf_serve_over_runqlat'], 2)}. In empty syscalls (`perf bench syscall basic`, "
        f"{o['empty_syscall_ns']:.0f} ns in this run): serve "
        f"{o['bpf_ns_per_switch']['serve'][0] / o['empty_syscall_ns']:.2f}, runqlat "
        f"{o['bpf_ns_per_switch']['runqlat'][0] / o['empty_syscall_ns']:.2f}.",
        "",
        f"Scrape with {sc['series']} process series (`--by process --top 1000`, 1000 sleeping "
        f"processes): {f(sc['ms'], 1)} ms median of 20, max {sc['max_ms']:.1f} ms, "
        f"{sc['bytes']} bytes (goal < 50 ms).",
        "",
        f"Steady CPU: {st['cpu_ns'] / 1e6:.0f} ms over {st['seconds']:.0f} s with "
        f"{st['scrapes']} scrapes = {st['cpu_share'] * 100:.2f}% of a core (goal < 1%).",
    ]) + "\n"
    open(f"{OUT}/serve.md", "w").write(text)
    print(text)


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("bench_serve: needs root (loads BPF); run 'sudo make bench'")
    main()

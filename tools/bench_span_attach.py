#!/usr/bin/python3
"""Span sites at scale: how long khbpf takes to attach and to detach them.

The workload (build/workloads/manyfuncs --wait, two threads) has 1000 small
functions; `khbpf attach --pid PID --span 'many_1*'` probes them all. Side by
side, round after round:

  multi     the default: the sites of the file in one uprobe_multi link each
            way (where the kernel has them: `khbpf probe`, uprobe-multi)
  per-site  --span-links per-site: a uprobe and a uretprobe link per site, the
            way of kernels before 6.6; BENCH_ATTACH_PER_SITE sites of them
            (default 100: the kernel takes these links down one grace period
            at a time, 2000 of them take minutes)
  before    with BENCH_ATTACH_BEFORE=/path/to/an/older/khbpf, that binary on
            the 1000 sites (its only way: per-site links)

Each run measures, from khbpf's start:
  attach    until it prints "watching": BPF loaded, sites found, all attached,
            the window started
and from the window's end (the target's exit, seen by waitpid here):
  document  until the -o file exists (written atomically by rename)
  exit      until khbpf has exited: every link detached, the process gone
and checks that every site attached, that every function counted exactly its
calls, and that no khbpf program stays loaded afterwards.
Writes build/bench/span_attach.json and build/bench/span_attach.md.
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = int(os.environ.get("BENCH_ATTACH_ROUNDS", "3"))
PER_SITE = int(os.environ.get("BENCH_ATTACH_PER_SITE", "100"))
BEFORE = os.environ.get("BENCH_ATTACH_BEFORE", "")
OUT = "build/bench"
KHBPF = os.path.realpath("build/khbpf")
WORKLOAD = os.path.realpath("build/workloads/manyfuncs")
GLOBS = {1000: "many_1*", 100: "many_10*", 10: "many_100*", 1: "many_1000"}


# The helpers bench_spans.py has (same directory: sys.path[0] when run).
from bench_spans import BenchError, held_progs, loaded_progs  # noqa: E402
from bench_spans import wait_gone as _wait_gone  # noqa: E402


def wait_gone(ids):
    _wait_gone(ids, "khbpf")


def link_kinds(pid):
    kinds = {}
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            for line in open(f"/proc/{pid}/fdinfo/{fd}"):
                if line.startswith("link_type:"):
                    k = line.split()[1]
                    kinds[k] = kinds.get(k, 0) + 1
        except OSError:
            pass
    return kinds


def check(doc, sites):
    d = json.load(open(doc))
    want = {f"many-{n}": 2 * ((n - 1000) % 7 + 1) for n in range(1000, 1000 + sites)}
    probes = d["span_probes"]
    if len(probes) != sites or any(p["status"] != "attached" for p in probes):
        raise BenchError(f"{sum(p['status'] == 'attached' for p in probes)} of {len(probes)} "
                         f"sites attached, expected {sites}")
    got = {m["metric_id"]: m["calls"] for m in d["span_metrics"]}
    if got != want:
        bad = [k for k in want if got.get(k) != want[k]]
        raise BenchError(f"{len(bad)} metrics miscounted, e.g. {bad[:3]}")


def run(khbpf, sites, extra, tmp):
    """One khbpf attach on a held manyfuncs: the times and the links it held."""
    doc, err_path = f"{tmp}/doc.json", f"{tmp}/k.err"
    for p in (doc, err_path):
        if os.path.exists(p):
            os.unlink(p)
    w = subprocess.Popen([WORKLOAD, "--wait", "--calls", "1"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    k = None
    try:
        if w.stdout.readline().strip() != "ready":
            raise BenchError("manyfuncs did not start")
        t0 = time.monotonic()
        with open(err_path, "w") as err:
            k = subprocess.Popen([khbpf, "attach", "--pid", str(w.pid), "--span", GLOBS[sites],
                                  "-o", doc] + extra, stdout=subprocess.DEVNULL, stderr=err)
        while "watching" not in open(err_path).read():
            if k.poll() is not None:
                raise BenchError(f"khbpf exited with {k.returncode}: {open(err_path).read()}")
            time.sleep(0.002)
        attach = time.monotonic() - t0
        links = link_kinds(k.pid)
        ids = held_progs(k.pid)
        w.stdin.write("g")
        w.stdin.close()
        if w.wait(timeout=60) != 0:
            raise BenchError(f"manyfuncs exited with {w.returncode}")
        end = time.monotonic()
        while not os.path.exists(doc):
            if k.poll() is not None:
                break
            time.sleep(0.002)
        document = time.monotonic() - end
        if k.wait(timeout=3600) != 0:
            raise BenchError(f"khbpf exited with {k.returncode}: {open(err_path).read()[-500:]}")
        exited = time.monotonic() - end
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
        if k and k.poll() is None:
            k.send_signal(signal.SIGINT)
            k.wait()
    wait_gone(ids)
    check(doc, sites)
    return {"attach_s": attach, "document_s": document, "exit_s": exited, "links": links}


def med(xs):
    return statistics.median(xs)


def main():
    os.makedirs(OUT, exist_ok=True)
    if PER_SITE not in GLOBS:
        raise BenchError(f"BENCH_ATTACH_PER_SITE must be one of {sorted(GLOBS)}")
    for tool in ("bpftool",):
        if not shutil.which(tool):
            raise BenchError(f"{tool} not found; run tools/install-deps.sh --with-bench")
    probe = json.loads(subprocess.run([KHBPF, "probe", "--json"], capture_output=True,
                                      text=True).stdout)
    feat = {f["name"]: f for f in probe["kernel_features"]}["uprobe-multi"]
    configs = {"multi": (KHBPF, 1000, []),
               "per-site": (KHBPF, PER_SITE, ["--span-links", "per-site"])}
    if BEFORE:
        configs["before"] = (os.path.realpath(BEFORE), 1000, [])
    tmp = tempfile.mkdtemp(prefix="khbpf-bench-attach-",
                           dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    runs = {c: [] for c in configs}
    t0 = time.time()
    try:
        for i in range(ROUNDS):
            for c, (khbpf, sites, extra) in configs.items():
                runs[c].append(run(khbpf, sites, extra, tmp))
            print(f"round {i + 1}/{ROUNDS} done ({time.time() - t0:.0f} s)", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = {"rounds": ROUNDS, "kernel": os.uname().release,
               "uprobe_multi": feat["use"], "configs": {}}
    lines = [f"`khbpf attach --pid PID --span GLOB` on manyfuncs (two threads, each site's calls "
             f"checked); kernel {os.uname().release}, uprobe-multi {feat['use']}; median of "
             f"{ROUNDS} interleaved rounds, seconds.", "",
             "| links | sites | links held | attach | document after the window | "
             "exit after the window (all detached) | exit per link |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for c, (khbpf, sites, extra) in configs.items():
        r = runs[c]
        nlinks = sum(v for k, v in r[0]["links"].items() if k != "raw_tracepoint")
        s = {"sites": sites, "khbpf": khbpf, "args": extra, "links": r[0]["links"],
             "attach_s": med([x["attach_s"] for x in r]),
             "document_s": med([x["document_s"] for x in r]),
             "exit_s": med([x["exit_s"] for x in r]), "raw": r}
        summary["configs"][c] = s
        kinds = ", ".join(f"{v} {k}" for k, v in sorted(r[0]["links"].items())
                          if k != "raw_tracepoint")
        lines.append(f"| {c} | {sites} | {kinds} | {s['attach_s']:.2f} | "
                     f"{s['document_s']:.2f} | {s['exit_s']:.2f} | "
                     f"{s['exit_s'] / max(nlinks, 1):.3f} |")
    json.dump(summary, open(f"{OUT}/span_attach.json", "w"), indent=1)
    text = "\n".join(lines) + "\n"
    open(f"{OUT}/span_attach.md", "w").write(text)
    print(text)


if __name__ == "__main__":
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: (_ for _ in ()).throw(BenchError(f"signal {s}")))
    if os.geteuid() != 0:
        print("bench_span_attach: needs root (loads BPF)", file=sys.stderr)
        sys.exit(1)
    try:
        main()
    except BenchError as e:
        print(f"bench_span_attach: {e}", file=sys.stderr)
        sys.exit(1)

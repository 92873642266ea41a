#!/usr/bin/python3
"""Span sites at scale: how long khbpf and bpftrace take to attach and detach them.

The workload (build/workloads/manyfuncs --wait, two threads) has 1000 small
functions; `khbpf attach --pid PID --span 'many_1*'` probes them all, 'many_10*'
100 of them, 'many_100*' 10. Side by side, round after round (every row once a
round, so the host's load falls on all of them alike):

  khbpf multi      the default: the sites of the file in one uprobe_multi link
                   each way (where the kernel has them: `khbpf probe`,
                   uprobe-multi), at 10, 100 and 1000 sites
  khbpf per-site   --span-links per-site: a uprobe and a uretprobe link per
                   site, the way of kernels before 6.6; at 10 and 100 sites and
                   any BENCH_ATTACH_PER_SITE sites (default 100; 1000 takes about
                   4 min a round: the kernel takes these links down one grace
                   period at a time)
  bpftrace         `bpftrace -p PID` with a uprobe and a uretprobe on the same
                   sites, each counting its calls per probe into a map, at 10 and
                   100 sites and any BENCH_ATTACH_BPFTRACE sites (default 100; 0
                   leaves bpftrace out). bpftrace 0.17 (Debian 12) attaches a
                   perf event per site and direction, so 1000 sites cost minutes
                   to take down, like per-site
  khbpf before     with BENCH_ATTACH_BEFORE=/path/to/an/older/khbpf, that binary
                   on the 1000 sites (its only way: per-site links)

Each run measures, from the tool's start:
  attach    khbpf: until it prints "watching": BPF loaded, sites found, all
            attached, the window started. bpftrace: until its BEGIN probe's
            "ready" is on its stdout (see run_bpftrace: that is after every
            probe is attached)
and from the window's end (the target's exit, seen by waitpid here):
  document  khbpf: until the -o file exists (written atomically by rename).
            bpftrace: until its map is printed whole (it prints its maps only
            after it has detached every probe)
  exit      until the tool has exited: every link detached, the process gone
and checks that every site attached, that every function counted exactly its
calls (khbpf: the document's span_metrics; bpftrace: each uprobe's and
uretprobe's count in its printed map), and that none of the tool's programs
stays loaded afterwards. A run that fails a check stops the benchmark.
Writes build/bench/span_attach.json and build/bench/span_attach.md.
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

ROUNDS = int(os.environ.get("BENCH_ATTACH_ROUNDS", "3"))
PER_SITE = int(os.environ.get("BENCH_ATTACH_PER_SITE", "100"))
BPFTRACE = int(os.environ.get("BENCH_ATTACH_BPFTRACE", "100"))
BEFORE = os.environ.get("BENCH_ATTACH_BEFORE", "")
OUT = "build/bench"
KHBPF = os.path.realpath("build/khbpf")
WORKLOAD = os.path.realpath("build/workloads/manyfuncs")
GLOBS = {1000: "many_1*", 100: "many_10*", 10: "many_100*", 1: "many_1000"}
SCALE = (10, 100, 1000)
PERF_FDS = "perf_event fds (no bpf_link)"  # bpftrace 0.17's uprobes, ioctl-attached


# The helpers bench_spans.py has (same directory: sys.path[0] when run).
from bench_spans import BenchError, held_progs  # noqa: E402
from bench_spans import wait_gone  # noqa: E402


def link_kinds(pid):
    """The bpf_link fds pid holds, by link_type."""
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


def perf_probes(pid):
    """The uprobe and uretprobe perf events with a BPF program that pid holds
    by their own fd (no bpf_link): bpftool's BPF_TASK_FD_QUERY over its fds."""
    out = subprocess.run(["bpftool", "-j", "perf", "show"], check=True,
                         capture_output=True, text=True).stdout
    kinds = {}
    for p in json.loads(out or "[]"):
        if p.get("pid") == pid and p.get("filename", "").endswith(WORKLOAD):
            kinds[p["fd_type"]] = kinds.get(p["fd_type"], 0) + 1
    return kinds


def want_calls(sites):
    """Calls of each probed function: --calls 1 on two threads, many_1NNN NNN % 7 + 1 times."""
    return {n: 2 * ((n - 1000) % 7 + 1) for n in range(1000, 1000 + sites)}


def check(doc, sites):
    d = json.load(open(doc))
    want = {f"many-{n}": c for n, c in want_calls(sites).items()}
    probes = d["span_probes"]
    if len(probes) != sites or any(p["status"] != "attached" for p in probes):
        raise BenchError(f"{sum(p['status'] == 'attached' for p in probes)} of {len(probes)} "
                         f"sites attached, expected {sites}")
    got = {m["metric_id"]: m["calls"] for m in d["span_metrics"]}
    if got != want:
        bad = [k for k in want if got.get(k) != want[k]]
        raise BenchError(f"{len(bad)} metrics miscounted, e.g. {bad[:3]}")


MAP_LINE = re.compile(r"^@c\[(uprobe|uretprobe):[^\]\n]*:many_(\d+)\]: (\d+)$", re.M)


def check_bpftrace(text, sites):
    """Each site's uprobe and uretprobe counted exactly its calls in @c."""
    want = {(k, n): c for n, c in want_calls(sites).items() for k in ("uprobe", "uretprobe")}
    got = {(m.group(1), int(m.group(2))): int(m.group(3)) for m in MAP_LINE.finditer(text)}
    if got != want:
        bad = sorted(set(want) ^ set(got)) + [k for k in want if k in got and got[k] != want[k]]
        raise BenchError(f"bpftrace at {sites} sites: {len(bad)} of {len(want)} probes "
                         f"miscounted or missing, e.g. {bad[:3]}:\n{text[-800:]}")


def start_workload():
    w = subprocess.Popen([WORKLOAD, "--wait", "--calls", "1"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    if w.stdout.readline().strip() != "ready":
        w.kill()
        w.wait()
        raise BenchError("manyfuncs did not start")
    return w


def release(w):
    """Let the workload make its calls; the time of its exit (the window's end)."""
    w.stdin.write("g")
    w.stdin.close()
    if w.wait(timeout=60) != 0:
        raise BenchError(f"manyfuncs exited with {w.returncode}")
    return time.monotonic()


def stop(p, who):
    if p and p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=900)  # per-site links: up to ~0.13 s each to take down
        except subprocess.TimeoutExpired:
            print(f"bench_span_attach: {who} ignored SIGINT for 900 s, killing it",
                  file=sys.stderr)
            p.kill()
            p.wait()


def run_khbpf(khbpf, sites, extra, tmp):
    """One khbpf attach on a held manyfuncs: the times and the links it held."""
    doc, err_path = f"{tmp}/doc.json", f"{tmp}/k.err"
    for p in (doc, err_path):
        if os.path.exists(p):
            os.unlink(p)
    w = start_workload()
    k = None
    try:
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
        end = release(w)
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
        stop(k, "khbpf")
    wait_gone(ids, "khbpf")
    check(doc, sites)
    return {"attach_s": attach, "document_s": document, "exit_s": exited, "links": links}


def run_bpftrace(sites, tmp):
    """One bpftrace on the same held manyfuncs, the same sites and directions as khbpf's.

    Ready: bpftrace 0.17 prints "Attaching N probes..." in BPFtrace::prerun(),
    before it has even made its maps, so that line says nothing. Its BEGIN
    probe runs before the uprobes are attached too (run_special_probe(
    "BEGIN_trigger") comes first in BPFtrace::run()), but a printf() in it only
    reaches stdout when bpftrace reads its perf buffers, which it starts doing
    in poll_perf_events() after both attach loops have returned: "ready" on
    stdout means every probe is attached (checked here against the kernel:
    2 x sites uprobe perf events of bpftrace's on the workload).

    End: -p PID makes bpftrace end when the target does (its poll loop checks
    the pid every 100 ms at most), like `khbpf attach --pid`, so both are
    timed from the target's exit with nothing sent to either. On its way out,
    BPFtrace::run() detaches every probe (attached_probes_.clear()) and runs
    END; main() then prints the maps. So its output is complete only after the
    detach: "document" for bpftrace is when its map is printed whole.
    """
    out_path, err_path = f"{tmp}/b.out", f"{tmp}/b.err"
    probe = f"{WORKLOAD}:{GLOBS[sites]}"
    script = ('BEGIN { printf("ready\\n"); } '
              f'uprobe:{probe} {{ @c[probe] = count(); }} '
              f'uretprobe:{probe} {{ @c[probe] = count(); }}')
    # 0.17 refuses more than 512 probes and 512 programs (one per site and direction).
    env = dict(os.environ, BPFTRACE_MAX_PROBES=str(2 * sites + 1),
               BPFTRACE_MAX_BPF_PROGS=str(2 * sites + 1))
    w = start_workload()
    b = None
    try:
        t0 = time.monotonic()
        with open(out_path, "w") as out, open(err_path, "w") as err:
            b = subprocess.Popen(["bpftrace", "-p", str(w.pid), "-e", script], stdout=out,
                                 stderr=err, env=env)
        while "ready\n" not in open(out_path).read():
            if b.poll() is not None:
                raise BenchError(f"bpftrace exited with {b.returncode}: "
                                 f"{open(err_path).read()[-800:]}")
            time.sleep(0.002)
        attach = time.monotonic() - t0
        links = link_kinds(b.pid)
        perf = perf_probes(b.pid)
        ids = held_progs(b.pid)
        if perf != {"uprobe": sites, "uretprobe": sites} and not links:
            raise BenchError(f"bpftrace ready with {perf} perf events and no link, "
                             f"expected {sites} uprobes and {sites} uretprobes")
        end = release(w)
        output, size, text = None, -1, ""
        while True:
            gone = b.poll() is not None  # before reading: the output is whole once it has exited
            if output is None and os.path.getsize(out_path) != size:
                text = open(out_path, errors="replace").read()
                size = len(text)
                if len(MAP_LINE.findall(text)) >= 2 * sites:
                    output = time.monotonic() - end
            if gone:
                break
            time.sleep(0.002)
        exited = time.monotonic() - end
        if b.returncode != 0:
            raise BenchError(f"bpftrace exited with {b.returncode}: "
                             f"{open(err_path).read()[-800:]}")
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
        stop(b, "bpftrace")
    wait_gone(ids, "bpftrace")
    check_bpftrace(open(out_path, errors="replace").read(), sites)
    if output is None:
        output = exited
    if not links:
        links = {PERF_FDS: sum(perf.values())}
    return {"attach_s": attach, "document_s": output, "exit_s": exited, "links": links,
            "perf_events": perf}


def upto(n):
    """10, 100, 1000 up to n, and n itself (1 for a single site)."""
    return [s for s in SCALE if s < n] + [n]


def med(xs):
    return statistics.median(xs)


def main():
    os.makedirs(OUT, exist_ok=True)
    if PER_SITE not in GLOBS:
        raise BenchError(f"BENCH_ATTACH_PER_SITE must be one of {sorted(GLOBS)}")
    if BPFTRACE and BPFTRACE not in GLOBS:
        raise BenchError(f"BENCH_ATTACH_BPFTRACE must be 0 or one of {sorted(GLOBS)}")
    for tool in ("bpftool",) + (("bpftrace",) if BPFTRACE else ()):
        if not shutil.which(tool):
            raise BenchError(f"{tool} not found; run tools/install-deps.sh --with-bench")
    probe = json.loads(subprocess.run([KHBPF, "probe", "--json"], capture_output=True,
                                      text=True).stdout)
    feat = {f["name"]: f for f in probe["kernel_features"]}["uprobe-multi"]
    bt_version = ""
    if BPFTRACE:
        bt_version = subprocess.run(["bpftrace", "--version"], capture_output=True,
                                    text=True).stdout.strip()
    # (tool, links, sites) -> how to run it
    configs = {}
    for n in SCALE:
        configs[("khbpf", "multi", n)] = (run_khbpf, (KHBPF, n, []))
    for n in upto(PER_SITE):
        configs[("khbpf", "per-site", n)] = (run_khbpf, (KHBPF, n, ["--span-links", "per-site"]))
    if BEFORE:
        configs[("khbpf", "before", 1000)] = (run_khbpf, (os.path.realpath(BEFORE), 1000, []))
    for n in upto(BPFTRACE) if BPFTRACE else ():
        configs[("bpftrace", "", n)] = (run_bpftrace, (n,))
    tmp = tempfile.mkdtemp(prefix="khbpf-bench-attach-",
                           dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    runs = {c: [] for c in configs}
    load = [os.getloadavg()]
    t0 = time.time()
    try:
        for i in range(ROUNDS):
            for c, (fn, args) in configs.items():
                runs[c].append(fn(*args, tmp))
                load.append(os.getloadavg())  # after every run: a busy host shows
                runs[c][-1]["loadavg_1min"] = load[-1][0]
            print(f"round {i + 1}/{ROUNDS} done ({time.time() - t0:.0f} s, load average "
                  f"{load[-1][0]:.2f})", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ones = [x[0] for x in load]
    summary = {"rounds": ROUNDS, "kernel": os.uname().release, "uprobe_multi": feat["use"],
               "bpftrace": bt_version, "seconds": round(time.time() - t0, 1),
               "loadavg_1min": {"start": ones[0], "min": min(ones), "max": max(ones)},
               "configs": {}}
    lines = [f"khbpf: `khbpf attach --pid PID --span GLOB -o DOC`; bpftrace"
             f"{' (' + bt_version + ')' if bt_version else ''}: `bpftrace -p PID` with "
             f"`uprobe:` and `uretprobe:` on GLOB counting `@c[probe]`; on manyfuncs (two "
             f"threads, each site's calls checked). Kernel {os.uname().release}, uprobe-multi "
             f"{feat['use']}; median of {ROUNDS} interleaved rounds, seconds; load average "
             f"(1 min, after each run) {min(ones):.1f}-{max(ones):.1f}.", "",
             "| tool | links | sites | links held | attach | document after the window "
             "(bpftrace: map printed) | exit after the window (all detached) | exit per link |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c, (fn, args) in configs.items():
        tool, how, sites = c
        r = runs[c]
        held = {k: v for k, v in r[0]["links"].items() if k != "raw_tracepoint"}
        nlinks = sum(held.values())
        if tool == "bpftrace":  # which kind it used, as seen
            how = "per-site" if PERF_FDS in held else "multi" if any(
                k.startswith("uprobe_multi") for k in held) else "other"
        s = {"tool": tool, "links_mode": how, "sites": sites,
             "command": args[0] if tool == "khbpf" else "bpftrace",
             "args": args[2] if tool == "khbpf" else ["-p", "PID"],
             "links": r[0]["links"], "attach_s": med([x["attach_s"] for x in r]),
             "document_s": med([x["document_s"] for x in r]),
             "exit_s": med([x["exit_s"] for x in r]), "raw": r}
        summary["configs"][f"{tool} {how} {sites}"] = s
        # raw_tracepoint: khbpf's own (sched, exit), not the sites'
        kinds = ", ".join(f"{v} {k}" for k, v in sorted(held.items()))
        lines.append(f"| {tool} | {how} | {sites} | {kinds} | {s['attach_s']:.2f} | "
                     f"{s['document_s']:.2f} | {s['exit_s']:.2f} | "
                     f"{s['exit_s'] / max(nlinks, 1):.3f} |")
    if BPFTRACE and BPFTRACE < 1000:
        lines += ["", "bpftrace at 1000 sites: BENCH_ATTACH_BPFTRACE=1000 (minutes a round: "
                  "a perf event per site and direction, like per-site)."]
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

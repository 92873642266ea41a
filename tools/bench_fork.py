#!/usr/bin/python3
"""Fork- and exec-heavy work under khbpf run, beside perf stat (BENCHMARKS.md).

A shell loop that runs /bin/true N times (a fork, an exec and an exit each)
reports its own CPU time at the end (the shell's `times`: the shell and
every /bin/true it reaped, user + system, where the kernel runs the tools'
fork, exec and exit work for it; the tools' own processes are not in it),
and its wall time around the loop. Interleaved rounds of:

  A  the loop alone
  K  under `khbpf run` (its set is the loop's tree: every /bin/true joins at
     its fork, is accounted, and leaves an exit record and a process record)
  P  under `perf stat -e task-clock,context-switches` (counters inherited
     into every child: perf's own per-fork cost)

The comparison is added time over A, khbpf's against perf's, in the same
rounds; khbpf's document must list every process (N + 1).
"""
import json
import os
import statistics
import subprocess
import sys

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "7"))
N = int(os.environ.get("BENCH_FORKS", "3000"))
OUT = "build/bench"
KHBPF = "build/khbpf"
LOOP = ("s=$(date +%s%N); i=0; while [ $i -lt " + str(N) + " ]; do /bin/true; i=$((i+1)); done; "
        "e=$(date +%s%N); echo $(( (e - s) / 1000 )); times")


def seconds_ns(t):
    """'1m2.340000s' (the shell's times) in ns."""
    m, s = t.rstrip("s").split("m")
    whole, frac = s.split(".")
    return (int(m) * 60 + int(whole)) * 10**9 + int(frac.ljust(9, "0")[:9])


def timed(cmd):
    """The loop's wall time and its CPU time (its own and its children's), ns."""
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split("\n")
    out = [l for l in out if l.strip()]
    wall = int(out[-3]) * 1000
    cpu = sum(seconds_ns(x) for x in (out[-2] + " " + out[-1]).split())
    return wall, cpu


def med_iqr(xs):
    xs = sorted(xs)
    q = statistics.quantiles(xs, n=4) if len(xs) >= 4 else [xs[0], 0, xs[-1]]
    return statistics.median(xs), q[2] - q[0]


def main():
    os.makedirs(OUT, exist_ok=True)
    doc = f"{OUT}/fork.json"
    rows = {"A": [], "K": [], "P": []}
    for i in range(ROUNDS):
        rows["A"].append(timed(["sh", "-c", LOOP]))
        rows["K"].append(timed([KHBPF, "run", "-o", doc, "--", "sh", "-c", LOOP]))
        d = json.load(open(doc))
        # The shell, each /bin/true, and the two `date`s that time the loop.
        if len(d["processes"]) != N + 3:
            raise RuntimeError(f"khbpf listed {len(d['processes'])} processes, not {N + 3}")
        rows["P"].append(timed(["perf", "stat", "-e", "task-clock,context-switches",
                                "-o", f"{OUT}/fork.perf", "sh", "-c", LOOP]))
        print(f"round {i + 1}/{ROUNDS}", file=sys.stderr)
    lines = [f"`sh -c` loop of {N} `/bin/true` (fork, exec, exit), measured inside the loop; "
             f"median (IQR) of {ROUNDS} interleaved rounds.", "",
             "| configuration | loop wall | added wall | loop CPU | added CPU | added CPU per process |",
             "| --- | --- | --- | --- | --- | --- |"]
    names = {"A": "alone", "K": "khbpf run", "P": "perf stat -e task-clock,context-switches"}
    for k in "AKP":
        w, wi = med_iqr([r[0] for r in rows[k]])
        c, ci = med_iqr([r[1] for r in rows[k]])
        if k == "A":
            lines.append(f"| {names[k]} | {w / 1e6:.0f} ms ({wi / 1e6:.0f}) | | "
                         f"{c / 1e6:.0f} ms ({ci / 1e6:.0f}) | | |")
            continue
        aw, awi = med_iqr([r[0] - a[0] for r, a in zip(rows[k], rows["A"])])
        ac, aci = med_iqr([r[1] - a[1] for r, a in zip(rows[k], rows["A"])])
        lines.append(f"| {names[k]} | {w / 1e6:.0f} ms ({wi / 1e6:.0f}) | {aw / 1e6:.0f} ms "
                     f"({awi / 1e6:.0f}) | {c / 1e6:.0f} ms ({ci / 1e6:.0f}) | {ac / 1e6:.0f} ms "
                     f"({aci / 1e6:.0f}) | {ac / N / 1e3:.1f} us |")
    diff = med_iqr([(k[1] - p[1]) / N for k, p in zip(rows["K"], rows["P"])])
    lines += ["", f"khbpf's loop CPU less perf's, per process, same round: {diff[0] / 1e3:.1f} us "
              f"({diff[1] / 1e3:.1f}) (goal: <= 0)."]
    text = "\n".join(lines) + "\n"
    open(f"{OUT}/fork.md", "w").write(text)
    json.dump({"rows": rows, "forks": N}, open(f"{OUT}/fork-raw.json", "w"))
    print(text)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Memory khbpf attach costs as the target grows: 1, 10, 100 and 10000 threads.

For each size, a Python target starts that many threads (each runs once,
then blocks), and `khbpf attach` watches it from its own memory cgroup (v1
memory controller, or v2 where the memory controller is enabled), so the
kernel memory charged to it is khbpf's alone: the BPF maps, the per-thread
task-storage elements (charged to the map's owner, not reported by
bpftool's memlock), its own page tables and files. Reported per size:

  bpftool    the sum of `memlock` over the maps khbpf holds (bpftool's view)
  kmem       the cgroup's kernel memory after the attach settled, and its
             peak while every thread of the target exits at once (v1 only)
  rss        khbpf's VmRSS at the same moment, and its peak with the write
and per thread: the slope of each between the sizes.

Writes build/bench/memory.json and build/bench/memory.md. KHBPF=PATH measures
another build (e.g. an older commit's, for a before/after table),
BENCH_MEMORY_THREADS=1,100 other sizes, and BENCH_MEMORY_SPAN=SPEC attaches
with `--span SPEC` too (e.g. libc.so.6:read: the span maps and ring buffer;
the main thread is in read() until the end). BENCH_MEMORY_OUT=NAME writes
build/bench/NAME.json and .md instead.
"""
import json
import os
import signal
import subprocess
import sys
import time

OUT = "build/bench"
KHBPF = os.environ.get("KHBPF", "build/khbpf")
SIZES = [int(x) for x in os.environ.get("BENCH_MEMORY_THREADS", "1,10,100,10000").split(",")]
SETTLE_S = 2.0
SPAN = os.environ.get("BENCH_MEMORY_SPAN")
NAME = os.environ.get("BENCH_MEMORY_OUT", "memory")

TARGET = ("import sys, threading\n"
          "n = int(sys.argv[1]); hold = threading.Event(); up = threading.Semaphore(0)\n"
          "def body():\n"
          "    up.release(); hold.wait()\n"
          "threading.stack_size(65536)\n"
          "for _ in range(n - 1): threading.Thread(target=body, daemon=True).start()\n"
          "for _ in range(n - 1): up.acquire()\n"
          "print('up', flush=True)\n"
          "sys.stdin.readline()\n")


def memcg_dir(name):
    """A fresh memory cgroup (v1 if mounted, else v2 with +memory) and its usage files."""
    v1 = "/sys/fs/cgroup/memory"
    if os.path.isfile(f"{v1}/memory.kmem.usage_in_bytes"):
        path = f"{v1}/{name}"
        os.mkdir(path)
        return path, "memory.kmem.usage_in_bytes", "memory.usage_in_bytes", "tasks"
    for root in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        try:
            ctl = open(f"{root}/cgroup.subtree_control").read().split()
        except OSError:
            continue
        if "memory" in ctl:
            path = f"{root}/{name}"
            os.mkdir(path)
            return path, None, "memory.current", "cgroup.procs"
    raise RuntimeError("no memory cgroup controller: cannot attribute kernel memory to khbpf")


def kmem_bytes(path, kfile):
    if kfile:
        return int(open(f"{path}/{kfile}").read())
    stat = dict(line.split() for line in open(f"{path}/memory.stat"))
    # `kernel`, where there is one, already has percpu, slab, stacks, page tables in it.
    if "kernel" in stat:
        return int(stat["kernel"])
    return sum(int(stat[k]) for k in ("slab", "kernel_stack", "pagetables", "percpu", "sock")
               if k in stat)


def held_maps(pid):
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            for line in open(f"/proc/{pid}/fdinfo/{fd}"):
                if line.startswith("map_id:"):
                    ids.add(int(line.split()[1]))
        except OSError:
            pass
    maps = json.loads(subprocess.run(["bpftool", "-j", "map", "show"], check=True,
                                     capture_output=True, text=True).stdout)
    return [m for m in maps if m["id"] in ids]


def status_kib(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {key} in /proc/{pid}/status")


def measure(n):
    target = subprocess.Popen(["/usr/bin/python3", "-c", TARGET, str(n)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    cg = kh = None
    try:
        if target.stdout.readline().strip() != "up":
            raise RuntimeError(f"the {n}-thread target did not start")
        cg, kfile, ufile, procs = memcg_dir(f"khbpf-bench-mem.{os.getpid()}.{n}")
        doc = f"{OUT}/memory-{n}.json"

        def enter():
            with open(f"{cg}/{procs}", "w") as f:
                f.write("0")
        kh = subprocess.Popen([KHBPF, "attach", "--pid", str(target.pid),
                               "--max-threads", str(n + 16), "-o", doc] +
                              (["--span", SPAN] if SPAN else []),
                              stderr=subprocess.PIPE, text=True, preexec_fn=enter)
        if "watching" not in kh.stderr.readline():
            raise RuntimeError("khbpf attach did not start: " + kh.stderr.read())
        time.sleep(SETTLE_S)
        maps = held_maps(kh.pid)
        row = {"threads": n,
               "bpftool_memlock_bytes": sum(int(m.get("bytes_memlock", 0)) for m in maps),
               "maps": {m.get("name", str(m["id"])): {"type": m["type"],
                                                      "memlock": int(m.get("bytes_memlock", 0))}
                        for m in maps},
               "kmem_bytes": kmem_bytes(cg, kfile),
               "cgroup_bytes": int(open(f"{cg}/{ufile}").read()),
               "rss_kib": status_kib(kh.pid, "VmRSS")}
        # Then every thread exits at once (the target's exit_group): the cgroup's
        # peak kernel memory over that burst (v1 resets max_usage on a write).
        peak = f"{cg}/memory.kmem.max_usage_in_bytes" if kfile else None
        if peak:
            open(peak, "w").write("0")
        target.stdin.write("\n")
        target.stdin.flush()
        _, status, usage = os.wait4(kh.pid, 0)
        row["exit_burst_peak_kmem_bytes"] = int(open(peak).read()) if peak else None
        kh.returncode = os.waitstatus_to_exitcode(status)
        if kh.returncode != 0:
            raise RuntimeError(f"khbpf attach exited {kh.returncode}: {kh.stderr.read()}")
        d = json.load(open(doc))
        row["threads_in_document"] = len(d["threads"])
        row["threads_dropped"] = d["loss"]["threads_dropped"]["value"]
        row["peak_rss_kib"] = usage.ru_maxrss  # with the document's write
        lost = {k: d["loss"][k]["value"] for k in ("threads_vanished", "exited_records_overflow")
                if d["loss"][k]["value"]}
        if row["threads_in_document"] != n or row["threads_dropped"] or lost:
            raise RuntimeError(f"{n} threads: the document lists {row['threads_in_document']}, "
                               f"dropped {row['threads_dropped']}, lost {lost}")
        os.unlink(doc)
        return row
    finally:
        if kh and kh.poll() is None:
            kh.send_signal(signal.SIGINT)
            kh.wait(timeout=30)
        if not target.stdin.closed:
            target.stdin.close()
        target.wait(timeout=30)
        if cg:
            os.rmdir(cg)


def slope(rows, key, scale=1):
    a, b = rows[0], rows[-1]
    return (b[key] - a[key]) * scale / (b["threads"] - a["threads"])


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = [measure(n) for n in SIZES]
    per_thread = {"bpftool_memlock_bytes": slope(rows, "bpftool_memlock_bytes"),
                  "kmem_bytes": slope(rows, "kmem_bytes"),
                  "rss_bytes": slope(rows, "rss_kib", 1024)}
    out = {"rows": rows, "per_thread": per_thread, "khbpf": KHBPF,
           "kernel": os.uname().release, "date": time.strftime("%Y-%m-%d")}
    out["span"] = SPAN
    json.dump(out, open(f"{OUT}/{NAME}.json", "w"), indent=1)
    span = f" --span '{SPAN}'" if SPAN else ""
    lines = [f"`{KHBPF} attach{span}` on a target of N threads (each ran once, then blocks); "
             f"measured {SETTLE_S:.0f} s after attach, khbpf alone in its memory cgroup.", "",
             "| threads | bpftool memlock, all maps | kernel memory charged (cgroup kmem) "
             "| peak kmem while they all exit | khbpf RSS | khbpf peak RSS |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        burst = r["exit_burst_peak_kmem_bytes"]
        lines.append(f"| {r['threads']} | {r['bpftool_memlock_bytes'] / 1024:.0f} KiB "
                     f"| {r['kmem_bytes'] / 1024:.0f} KiB "
                     f"| {'-' if burst is None else f'{burst / 1024:.0f} KiB'} "
                     f"| {r['rss_kib']} KiB | {r['peak_rss_kib']} KiB |")
    lines += ["", f"Per added thread ({rows[0]['threads']} to {rows[-1]['threads']}): "
              f"bpftool memlock {per_thread['bpftool_memlock_bytes']:.0f} B, "
              f"kernel memory {per_thread['kmem_bytes']:.0f} B, "
              f"khbpf RSS {per_thread['rss_bytes']:.0f} B.", "",
              "Maps (memlock at the largest size): " + ", ".join(
                  f"{k} ({v['type']}) {v['memlock'] / 1024:.0f} KiB"
                  for k, v in sorted(rows[-1]["maps"].items()))]
    open(f"{OUT}/{NAME}.md", "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

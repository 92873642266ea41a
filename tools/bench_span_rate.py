#!/usr/bin/python3
"""Span records per second until the first ring-buffer drop.

`spanbench --threads T` calls the annotated function in T threads at once
(no pinning: the reader competes with them for the 2 CPUs), with
`khbpf attach --max-spans` above the call count so that every call is meant
to become a record through the span ring buffer (khbpf's default size, or
BENCH_RATE_SPAN_BUFFER, e.g. 4M, passed as --span-buffer). T doubles until a run
drops records (`loss.span_records_dropped_ringbuf` > 0) or MAX_THREADS is
reached; each run must account for every call: records + dropped = calls,
aggregates exact.

Writes build/bench/span_rate.json and build/bench/span_rate.md.
"""
import json
import os
import signal
import subprocess
import sys
import time

OUT = "build/bench"
KHBPF = os.environ.get("KHBPF", "build/khbpf")
WORKLOAD = "build/workloads/spanbench"
CALLS = int(os.environ.get("BENCH_RATE_CALLS", "100000"))  # per thread
MAX_THREADS = int(os.environ.get("BENCH_RATE_MAX_THREADS", "4"))
MAX_RECORDS = 1 << 24
SPAN_BUFFER = os.environ.get("BENCH_RATE_SPAN_BUFFER")  # --span-buffer; None: the default


def one_run(threads):
    w = subprocess.Popen([WORKLOAD, "--site", "annotated", "--threads", str(threads),
                          "--calls", str(CALLS), "--wait"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    doc = f"{OUT}/span_rate-{threads}.json"
    err = f"{OUT}/span_rate-{threads}.err"
    kh = None
    try:
        if w.stdout.readline().strip() != "ready":
            raise RuntimeError("spanbench did not start")
        with open(err, "w") as ef:
            kh = subprocess.Popen([KHBPF, "attach", "--pid", str(w.pid), "--max-spans",
                                   str(MAX_RECORDS), "-o", doc] +
                                  (["--span-buffer", SPAN_BUFFER] if SPAN_BUFFER else []),
                                  stderr=ef)
        deadline = time.time() + 20
        while "watching" not in open(err).read():
            if time.time() > deadline or kh.poll() is not None:
                raise RuntimeError("khbpf attach did not start: " + open(err).read())
            time.sleep(0.05)
        w.stdin.write("x")
        w.stdin.close()
        result = json.loads(w.stdout.readline())
        if w.wait(timeout=120) != 0:
            raise RuntimeError("spanbench failed")
        # The loader drains the ring after the loop: give it the window's end.
        kh.send_signal(signal.SIGINT)
        # wait4: the peak RSS includes writing the document, which the
        # document's own loader_max_rss_kib (read before the write) cannot.
        _, status, usage = os.wait4(kh.pid, 0)
        kh.returncode = os.waitstatus_to_exitcode(status)
        if kh.returncode != 0:
            raise RuntimeError(f"khbpf attach exited {kh.returncode}: {open(err).read()}")
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
        if kh and kh.poll() is None:
            kh.send_signal(signal.SIGINT)
            kh.wait(timeout=30)
    d = json.load(open(doc))
    loss = {k: v["value"] for k, v in d["loss"].items() if isinstance(v, dict)}
    records = len(d["events"]["spans"])
    ring = loss.get("span_ringbuf_bytes_max")  # None: a build before --span-buffer
    calls = sum(m["calls"] for m in d["span_metrics"])
    dropped = d["events"]["dropped_span_events"]
    sampled = d["events"]["sampled_out_events"]
    if (dropped, sampled) != (loss["span_records_dropped_ringbuf"],
                              loss["span_records_sampled_out"]):
        raise RuntimeError(f"events and loss disagree: {d['events']} {loss}")
    if calls != result["calls"] or records + dropped + sampled != calls:
        raise RuntimeError(f"{threads} threads: {result['calls']} calls made, aggregates "
                           f"{calls}, records {records} + dropped {dropped} + sampled {sampled}")
    secs = result["elapsed_ns"] / 1e9
    size = os.path.getsize(doc)
    os.unlink(doc)
    os.unlink(err)
    return {"threads": threads, "calls": result["calls"], "elapsed_s": secs,
            "calls_per_s": result["calls"] / secs, "records": records, "dropped": dropped,
            "records_per_s": records / secs, "peak_rss_kib": usage.ru_maxrss,
            "document_bytes": size, "ringbuf_bytes": ring}


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = []
    threads = 1
    while threads <= MAX_THREADS:
        rows.append(one_run(threads))
        if rows[-1]["dropped"]:
            break
        threads *= 2
    first = next((r for r in rows if r["dropped"]), None)
    json.dump({"rows": rows, "calls_per_thread": CALLS, "kernel": os.uname().release,
               "date": time.strftime("%Y-%m-%d")}, open(f"{OUT}/span_rate.json", "w"), indent=1)
    lines = [f"`spanbench --threads T --calls {CALLS}` (annotated site, unpinned) under "
             f"`khbpf attach --max-spans {MAX_RECORDS}"
             + (f" --span-buffer {SPAN_BUFFER}" if SPAN_BUFFER else "")
             + (f"`; {rows[0]['ringbuf_bytes'] >> 10} KiB ring buffer." if rows[0]["ringbuf_bytes"]
                else "`; that build's ring buffer (4 MiB before --span-buffer)."), "",
             "| threads | span calls per second | records | dropped (ring full) | "
             "khbpf peak RSS (with the write) | document |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['threads']} | {r['calls_per_s']:.0f} | {r['records']} "
                     f"| {r['dropped']} | {r['peak_rss_kib'] / 1024:.0f} MiB "
                     f"| {r['document_bytes'] / 1e6:.0f} MB |")
    lines.append("")
    if first:
        prev = rows[rows.index(first) - 1] if rows.index(first) else None
        lines.append(f"First drop at {first['calls_per_s']:.0f} spans/s ({first['threads']} "
                     "threads)" + (f"; none at {prev['calls_per_s']:.0f} spans/s "
                                   f"({prev['threads']} threads)." if prev else "."))
    else:
        best = max(rows, key=lambda r: r["calls_per_s"])
        lines.append(f"No drop up to {best['calls_per_s']:.0f} spans/s ({best['threads']} "
                     f"threads, the fastest run; up to {rows[-1]['threads']} threads tried).")
    open(f"{OUT}/span_rate.md", "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

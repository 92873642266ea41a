#!/usr/bin/python3
"""Peak RSS of `khbpf run` as the span records it keeps grow: 10^4, 10^5, 10^6.

For each size N, `khbpf run --max-spans N -o FILE -- spanbench --site
annotated --calls N` (one thread calling one annotated function N times in a
tight loop) writes its document, and the peak RSS is the kernel's for that
process (wait4's ru_maxrss), so it covers the whole command: collection,
sorting the records and writing the document. Every call must be in the
document as a record (none dropped or sampled out), else the row says so.

Reported per size: the peak, the document's size and the time; then the
growth per record between the sizes. Issue 15 (item 4) asks for at most 300
bytes per record and the 10^6 run under 400 MiB: exit status 1 if not.

BENCH_SPAN_MEMORY_TEXT=1 adds rows for the same runs without -o, which print
the terminal report rendered from the document (as `khbpf report` does),
held to the same limits. BENCH_SPAN_MEMORY_REPORT=1 adds rows for `khbpf
report FILE` of each -o document: the terminal report (held to the limits),
--html and --perfetto (measured, not held). Writes build/bench/span_memory.json
and .md. KHBPF=PATH measures another build; BENCH_SPAN_MEMORY_SIZES=10000,100000
other sizes.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

OUT = "build/bench"
KHBPF = os.environ.get("KHBPF", "build/khbpf")
WORKLOAD = "build/workloads/spanbench"
SIZES = [int(x) for x in
         os.environ.get("BENCH_SPAN_MEMORY_SIZES", "10000,100000,1000000").split(",")]
TEXT = os.environ.get("BENCH_SPAN_MEMORY_TEXT") == "1"
REPORT = os.environ.get("BENCH_SPAN_MEMORY_REPORT") == "1"
MAX_SLOPE_B = 300
MAX_PEAK_MIB_AT_1M = 400
# What each kind of row runs, and whether the limits hold it.
KINDS = {"-o FILE": True, "text report": True, "report FILE": True,
         "report --html": False, "report --perfetto": False}


def count_records(path):
    """Span records in the document (each has one work_origin), and its loss counts."""
    n = 0
    head = b""
    tail = b""
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 22)
            if not chunk:
                break
            if len(head) < (1 << 22):
                head += chunk[: (1 << 22) - len(head)]
            # A key cut across chunks is found in the joined tail.
            n += (tail + chunk).count(b'"work_origin"') - tail.count(b'"work_origin"')
            tail = chunk[-32:]
    loss = {k: int(v) for k, v in
            re.findall(rb'"(dropped_span_events|sampled_out_events)": (\d+)', head)[:2]}
    return n, {k.decode(): v for k, v in loss.items()}


def measure(cmd):
    """(peak RSS bytes, seconds) of cmd, which must succeed."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    secs = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {err.strip()[-400:]}")
    return ru.ru_maxrss * 1024, secs


def run_once(n, text, keep):
    """(peak RSS bytes, seconds, document bytes, records, loss, document path) of one run."""
    fd, path = tempfile.mkstemp(prefix="khbpf-span-memory-", suffix=".json",
                                dir=os.environ.get("TMPDIR", "/tmp"))
    os.close(fd)
    cmd = [KHBPF, "run", "--max-spans", str(n)]
    cmd += [] if text else ["-o", path]
    cmd += ["--", WORKLOAD, "--site", "annotated", "--calls", str(n)]
    try:
        peak, secs = measure(cmd)
    except RuntimeError:
        os.unlink(path)
        raise
    size, records, loss = 0, None, {}
    if not text:
        size = os.path.getsize(path)
        records, loss = count_records(path)
    if not keep or text:
        os.unlink(path)
        path = None
    return peak, secs, size, records, loss, path


def report_rows(n, path):
    """`khbpf report` of the document at path: the terminal report, --html, --perfetto."""
    rows = []
    outdir = tempfile.mkdtemp(prefix="khbpf-span-memory-", dir=os.environ.get("TMPDIR", "/tmp"))
    try:
        for kind, args in (("report FILE", []),
                           ("report --html", ["--html", f"{outdir}/r.html"]),
                           ("report --perfetto", ["--perfetto", f"{outdir}/r.trace.json"])):
            peak, secs = measure([KHBPF, "report", path] + args)
            rows.append({"records": n, "output": kind, "peak_rss_bytes": peak,
                         "seconds": round(secs, 2), "document_bytes": os.path.getsize(path),
                         "records_in_document": None})
            print(f"  span memory: {n} records ({kind}): peak RSS {peak / 2**20:.1f} MiB "
                  f"in {secs:.1f} s", flush=True)
            for f in os.listdir(outdir):
                os.unlink(os.path.join(outdir, f))
    finally:
        os.rmdir(outdir)
    return rows


def main():
    for f in (KHBPF, WORKLOAD):
        if not os.access(f, os.X_OK):
            sys.exit(f"bench_span_memory: {f} is missing: run `make` and `make workloads` first")
    os.makedirs(OUT, exist_ok=True)
    rows = []
    for text in ([False, True] if TEXT else [False]):
        for n in SIZES:
            peak, secs, size, records, loss, path = run_once(n, text, REPORT)
            kind = "text report" if text else "-o FILE"
            rows.append({"records": n, "output": kind, "peak_rss_bytes": peak,
                         "seconds": round(secs, 2), "document_bytes": size,
                         "records_in_document": records, **loss})
            print(f"  span memory: {n} records ({kind}): "
                  f"peak RSS {peak / 2**20:.1f} MiB in {secs:.1f} s", flush=True)
            if path:
                try:
                    rows += report_rows(n, path)
                finally:
                    os.unlink(path)
    failures = []
    lines = ["| records | output | peak RSS | document | records in it | time |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        doc = f"{r['document_bytes'] / 2**20:.0f} MiB" if r["document_bytes"] else "-"
        kept = r["records_in_document"]
        if r["output"] == "-o FILE":
            lost = r.get("dropped_span_events", 0) + r.get("sampled_out_events", 0)
            kept = f"{kept}" + (f" ({lost} dropped or sampled out)" if lost else "")
            if r["records_in_document"] != r["records"]:
                failures.append(f"{r['records']}: {r['records_in_document']} records in the document")
        lines.append(f"| {r['records']} | {r['output']} | "
                     f"{r['peak_rss_bytes'] / 2**20:.1f} MiB | {doc} | {kept if kept is not None else '-'} | "
                     f"{r['seconds']:.1f} s |")
    slopes = []
    for kind, held in KINDS.items():
        rs = [r for r in rows if r["output"] == kind]
        for a, b in zip(rs, rs[1:]):
            slope = (b["peak_rss_bytes"] - a["peak_rss_bytes"]) / (b["records"] - a["records"])
            slopes.append({"from": a["records"], "to": b["records"], "output": kind,
                           "bytes_per_record": round(slope, 1)})
            lines.append("")
            lines.append(f"Growth {a['records']} to {b['records']} ({kind}): "
                         f"{slope:.0f} bytes per record{'' if held else ' (not held to the limit)'}")
            if held and slope > MAX_SLOPE_B:
                failures.append(f"{kind}: {slope:.0f} bytes per record from {a['records']} to "
                                f"{b['records']} (at most {MAX_SLOPE_B})")
        for r in rs:
            if held and r["records"] == 1000000 and \
                    r["peak_rss_bytes"] > MAX_PEAK_MIB_AT_1M * 2**20:
                failures.append(f"{kind}: 10^6 records peak at {r['peak_rss_bytes'] / 2**20:.0f} "
                                f"MiB (under {MAX_PEAK_MIB_AT_1M} MiB)")
    with open(f"{OUT}/span_memory.json", "w") as f:
        json.dump({"khbpf": KHBPF, "rows": rows, "slopes": slopes, "failures": failures}, f,
                  indent=1)
    with open(f"{OUT}/span_memory.md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    if failures:
        print("bench_span_memory: over the limits: " + "; ".join(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

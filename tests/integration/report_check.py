#!/usr/bin/python3
"""Check `khbpf report`'s outputs against the evidence document they came
from, computed here independently of khbpf's C code.

  report_check.py text DOC.json REPORT.txt
      Every thread's counts, the span metrics in exclusive order, every
      collector that is not available and every gap (field, reason, fix).
  report_check.py trace DOC.json TRACE.json
      Trace-event format: ph/ts/dur/pid/tid, X events nest per thread, one
      X per span (ts and dur exactly start_ns/1000 and inclusive_ns/1000),
      thread names, counters numeric.
  report_check.py png SHOT.png
      The screenshot shows the timeline (lanes with span colors in them),
      the runqueue histogram below it, and the per-thread bars. PNG decoded
      here with zlib.
  report_check.py dom DOM.html NAME...
      Every NAME is text of the rendered page, and the page has no script.
"""
import html
import json
import struct
import sys
import zlib
from decimal import Decimal

failures = []

LANE_BG = (0xEE, 0xF2, 0xF7)
HIST_BG = (0xF6, 0xF3, 0xEC)
HIST_BAR = (0x15, 0x65, 0xC0)
ON_CPU = (0x2E, 0x7D, 0x32)
RUNQUEUE = (0xC6, 0x28, 0x28)
PALETTE = {
    (0x4E, 0x79, 0xA7), (0xF2, 0x8E, 0x2B), (0xE1, 0x57, 0x59), (0x76, 0xB7, 0xB2),
    (0x59, 0xA1, 0x4F), (0xED, 0xC9, 0x48), (0xB0, 0x7A, 0xA1), (0xFF, 0x9D, 0xA7),
    (0x9C, 0x75, 0x5F), (0x6B, 0x6E, 0xCF), (0xBC, 0xBD, 0x22), (0x17, 0xBE, 0xCF),
}


def fail(msg):
    failures.append(msg)
    print("  " + msg, file=sys.stderr)


def ev(e):
    """Evidence or sourced evidence -> value, or None for a gap."""
    if "source" in e and isinstance(e.get("value"), dict):
        e = e["value"]
    return e["value"] if e["status"] == "recorded" else None


def gaps(doc):
    """(display path, reason, count) per field and reason, in document order."""
    groups = {}

    def walk(o, gen, con):
        if isinstance(o, dict):
            inner = o.get("value")
            if o.get("status") == "unavailable":
                key = (gen, o["reason"])
                g = groups.setdefault(key, [con, 0])
                g[1] += 1
                return
            if "source" in o and isinstance(inner, dict) and inner.get("status") == "unavailable":
                walk(inner, gen, con)
                return
            for k, v in o.items():
                walk(v, f"{gen}.{k}" if gen else k, f"{con}.{k}" if con else k)
        elif isinstance(o, list):
            for i, v in enumerate(o):
                walk(v, gen + "[*]", f"{con}[{i}]")

    walk(doc, "", "")
    return [(con if n == 1 else gen, reason, n) for (gen, reason), (con, n) in groups.items()]


def check_text(doc_path, text_path):
    doc = json.load(open(doc_path))
    text = open(text_path, encoding="utf-8").read()
    lines = text.splitlines()
    # The thread rows: the Threads section (a process row starts with its pid too).
    first = next(i for i, ln in enumerate(lines) if ln.startswith("Threads ("))
    end = next((i for i in range(first, len(lines)) if not lines[i].strip()), len(lines))
    thread_lines = lines[first:end]
    for t in doc["threads"]:
        s = t["scheduler"]
        want = [str(t["thread_id"])]
        cols = [ev(s[k]) for k in ("voluntary_context_switches", "involuntary_context_switches",
                                   "cpu_migrations", "timeslices")]
        row = [ln for ln in thread_lines if ln.split()[:1] == want]
        if len(row) != 1:
            fail(f"thread {t['thread_id']}: {len(row)} rows")
            continue
        got = row[0].split()
        tail = [c for c in got if c in ("born", "born,", "exited")]
        nums = got[len(got) - len(tail) - 4:len(got) - len(tail)]
        if nums != ["-" if c is None else str(c) for c in cols]:
            fail(f"thread {t['thread_id']}: counts {nums}, document {cols}")
        if t["comm"] not in row[0]:
            fail(f"thread {t['thread_id']}: comm {t['comm']!r} missing")
    metrics = sorted(doc.get("span_metrics", []), key=lambda m: (-m["exclusive_ns"], m["metric_id"]))
    pos = text.find("METRIC (by exclusive time)")
    for m in metrics:
        i = text.find("\n  " + m["metric_id"] + " ", pos)
        if i < 0:
            fail(f"metric {m['metric_id']} missing or out of exclusive-time order")
            continue
        pos = i
        if f" {m['calls']} " not in text[i:text.find("\n", i + 1)]:
            fail(f"metric {m['metric_id']}: calls {m['calls']} not on its line")
    gap_text = text[text.find("\nGaps: "):]
    gap_lines = gap_text.splitlines()[1:]
    for c in doc["collectors"]:
        if c["availability"] != "available":
            want = f"  {c['collector']}: {c['availability']} — "
            if not any(ln.startswith(want) for ln in gap_lines):
                fail(f"collector {c['collector']} not listed")
    found = gaps(doc)
    if f"Gaps: {len(found)} field groups ({sum(n for _, _, n in found)} values over all records)" not in text:
        fail(f"gap totals wrong; expected {sum(n for _, _, n in found)} in {len(found)}")
    for path, reason, n in found:
        parent, _, leaf = path.rpartition(".")
        hit = [ln for ln in gap_lines
               if ln.startswith("  " + parent) and leaf in ln and f": {reason} — " in ln]
        if not hit:
            fail(f"gap {path} ({reason}) not listed")
        elif not all(ln.split(f": {reason} — ", 1)[1].strip() for ln in hit):
            fail(f"gap {path} has no fix")
        if n > 1 and not any(f"{leaf} ({n})" in ln for ln in hit):
            fail(f"gap {path}: count {n} not shown")


def check_trace(doc_path, trace_path):
    doc = json.load(open(doc_path))
    tr = json.load(open(trace_path), parse_float=Decimal)
    evs = tr["traceEvents"]
    spans = doc["events"]["spans"]
    opened = doc.get("open_spans", [])
    names = {}
    by_tid = {}
    for e in evs:
        ph = e.get("ph")
        for k in ("name", "pid", "tid"):
            if k not in e:
                fail(f"event without {k}: {e}")
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            fail(f"pid/tid not integers: {e}")
        if ph == "X":
            for k in ("ts", "dur"):
                if not isinstance(e.get(k), (int, Decimal)) or e[k] < 0:
                    fail(f"X event {k} not a number >= 0: {e}")
            by_tid.setdefault(e["tid"], []).append(e)
        elif ph == "C":
            if not isinstance(e.get("ts"), (int, Decimal)) or not e.get("args"):
                fail(f"C event without ts or args: {e}")
            elif not all(isinstance(v, int) for v in e["args"].values()):
                fail(f"C event args not numbers: {e}")
        elif ph == "M":
            if e["name"] == "thread_name":
                names[e["tid"]] = e["args"]["name"]
        else:
            fail(f"unexpected ph {ph!r}")
    xs = [e for v in by_tid.values() for e in v]
    if len(xs) != len(spans) + len(opened):
        fail(f"{len(xs)} X events for {len(spans)} spans and {len(opened)} open ones")
    want = {(s["span_id"], Decimal(s["start_ns"]) / 1000, Decimal(s["inclusive_ns"]) / 1000)
            for s in spans}
    got = {(e["args"]["span_id"], e["ts"], e["dur"]) for e in xs if "open_at_window_end" not in e["args"]}
    if got != want:
        fail(f"X events differ from spans: {sorted(got ^ want)[:4]}")
    for tid, v in by_tid.items():
        if tid not in names:
            fail(f"tid {tid} has spans but no thread_name")
        v.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in v:
            end = e["ts"] + e["dur"]
            while stack and stack[-1] <= e["ts"]:
                stack.pop()
            if stack and end > stack[-1]:
                fail(f"tid {tid}: span {e['args']['span_id']} crosses its enclosing span")
            stack.append(end)
    for t in doc["threads"]:
        if names.get(t["thread_id"]) != t["comm"]:
            fail(f"thread {t['thread_id']} named {names.get(t['thread_id'])!r}")


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if typ == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif typ == b"IDAT":
            idat += body
        elif typ == b"IEND":
            break
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth} color type {ctype}")
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    i = 0
    for _ in range(h):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pred) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def check_png(path):
    w, h, bpp, rows = read_png(path)
    where = {}
    for y, line in enumerate(rows):
        for x in range(w):
            px = tuple(line[x * bpp:x * bpp + 3])
            where.setdefault(px, []).append((x, y))

    def box(color):
        pts = where.get(color, [])
        if not pts:
            return None
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        return min(xs), min(ys), max(xs), max(ys)

    def inside(color, b):
        return sum(1 for x, y in where.get(color, []) if b[0] <= x <= b[2] and b[1] <= y <= b[3])

    lanes, hist = box(LANE_BG), box(HIST_BG)
    if not lanes:
        fail("no timeline lanes in the screenshot")
        return
    span_px = {c: inside(c, lanes) for c in PALETTE}
    shown = [c for c, n in span_px.items() if n >= 20]
    print(f"  timeline {lanes}: {sum(span_px.values())} span pixels in {len(shown)} colors")
    if sum(span_px.values()) < 1500 or len(shown) < 3:
        fail(f"timeline has too few span pixels: {span_px}")
    if not hist:
        fail("no histogram in the screenshot")
        return
    bars = inside(HIST_BAR, hist)
    print(f"  histogram {hist}: {bars} bar pixels")
    if bars < 500:
        fail(f"histogram has {bars} bar pixels")
    if hist[1] <= lanes[3]:
        fail("histogram is not below the timeline")
    on, rq = len(where.get(ON_CPU, [])), len(where.get(RUNQUEUE, []))
    print(f"  thread bars: {on} on-CPU, {rq} runqueue pixels")
    if on < 200 or rq < 100:
        fail("per-thread bars missing")


def check_dom(path, names):
    dom = open(path, encoding="utf-8").read()
    if "<script" in dom.lower():
        fail("the rendered page has a script element")
    for n in names:
        if html.escape(n, quote=False) not in dom:
            fail(f"{n!r} is not in the page")


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = argv[1]
    if cmd == "text":
        check_text(argv[2], argv[3])
    elif cmd == "trace":
        check_trace(argv[2], argv[3])
    elif cmd == "png":
        check_png(argv[2])
    elif cmd == "dom":
        check_dom(argv[2], argv[3:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

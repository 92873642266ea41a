#!/usr/bin/python3
"""Compare a khbpf evidence document with the kernel's /proc numbers.

  sched_compare.py snap PID OUT.json
      Record /proc/PID/task/*/{sched,schedstat} for every thread.
  sched_compare.py window DOC.json BEFORE.json AFTER.json
      For threads alive in both snapshots: khbpf's deltas must equal
      AFTER - BEFORE exactly (the workload is idle at both reads).
  sched_compare.py final DOC.json DIR [TRUTH.jsonl]
      For each thread whose final counters tests/helpers/finalcount read
      into DIR/TID/: khbpf's numbers must equal them exactly; TRUTH.jsonl
      (schedmix --out, each thread's own last reading) must not exceed them.
  sched_compare.py totals DOC.json
      Run totals equal the sums over threads; every field has a source.
"""
import glob
import json
import os
import sys

FIELDS = {
    "voluntary_context_switches": "nr_voluntary_switches",
    "involuntary_context_switches": "nr_involuntary_switches",
    "cpu_migrations": "nr_migrations",
    "scheduler_delay_ns": "run_delay_ns",
    "timeslices": "pcount",
}
failures = []


def fail(msg):
    failures.append(msg)
    print("MISMATCH " + msg, file=sys.stderr)


def read_thread(task_dir):
    out = {}
    with open(os.path.join(task_dir, "sched")) as f:
        for line in f:
            if ":" not in line:
                continue
            k, v = (x.strip() for x in line.split(":", 1))
            if k in ("nr_voluntary_switches", "nr_involuntary_switches"):
                out[k] = int(v)
            elif k == "se.nr_migrations":
                out["nr_migrations"] = int(v)
    with open(os.path.join(task_dir, "schedstat")) as f:
        rt, delay, pcount = (int(x) for x in f.read().split())
    out.update(sum_exec_runtime_ns=rt, run_delay_ns=delay, pcount=pcount)
    with open(os.path.join(task_dir, "comm")) as f:
        out["comm"] = f.read().strip()
    return out


def snap(pid, path):
    threads = {}
    for d in glob.glob(f"/proc/{pid}/task/*"):
        threads[int(os.path.basename(d))] = read_thread(d)
    json.dump(threads, open(path, "w"))


def value(doc_thread, field):
    v = doc_thread["scheduler"][field]["value"]
    if v["status"] != "recorded":
        fail(f"tid {doc_thread['thread_id']}: {field} is a gap: {v}")
        return None
    return v["value"]


def on_cpu(doc_thread):
    v = doc_thread["on_cpu_ns"]["value"]
    return v["value"] if v["status"] == "recorded" else None


def window(doc_path, before_path, after_path):
    doc = json.load(open(doc_path))
    before = {int(k): v for k, v in json.load(open(before_path)).items()}
    after = {int(k): v for k, v in json.load(open(after_path)).items()}
    by_tid = {t["thread_id"]: t for t in doc["threads"]}
    common = sorted(set(before) & set(after))
    if not common:
        fail("no thread alive at both reads")
    for tid in common:
        t = by_tid.get(tid)
        if t is None:
            fail(f"tid {tid} alive through the window is missing from the document")
            continue
        for field, key in FIELDS.items():
            want = after[tid][key] - before[tid][key]
            got = value(t, field)
            if got is not None and got != want:
                fail(f"tid {tid} {field}: khbpf {got}, kernel {want}")
        want = after[tid]["sum_exec_runtime_ns"] - before[tid]["sum_exec_runtime_ns"]
        if on_cpu(t) != want:
            fail(f"tid {tid} on_cpu_ns: khbpf {on_cpu(t)}, kernel {want}")
    born = [t for t in doc["threads"] if t["thread_id"] not in before]
    return doc, born


def final(doc_path, final_dir, truth_path=None):
    """Every thread's counters at its final switch, as tests/helpers/finalcount
    read them from the zombie: khbpf's numbers must be these, exactly.

    (No voluntary + involuntary == timeslices here: 7.2's own counters of a
    thread born and exited under watch break it, 2234 switch-outs to 2232
    switch-ins, and khbpf's are the kernel's.)"""
    doc = json.load(open(doc_path))
    by_tid = {t["thread_id"]: t for t in doc["threads"]}
    kernel = {int(os.path.basename(d)): read_thread(d)
              for d in glob.glob(os.path.join(final_dir, "[0-9]*"))}
    if not kernel:
        fail("finalcount read no thread")
    for tid in sorted(set(by_tid) - set(kernel)):
        fail(f"tid {tid} is in the document but finalcount never saw it exit")
    for tid, k in sorted(kernel.items()):
        t = by_tid.get(tid)
        if t is None:
            fail(f"tid {tid} ({k['comm']}) exited under watch but is missing from the document")
            continue
        if not t["exited"]:
            fail(f"tid {tid} exited but is not marked exited")
        for field, key in FIELDS.items():
            got = value(t, field)
            if got is not None and got != k[key]:
                fail(f"tid {tid} ({k['comm']}) {field}: khbpf {got}, kernel {k[key]}")
        if on_cpu(t) != k["sum_exec_runtime_ns"]:
            fail(f"tid {tid} ({k['comm']}) on_cpu_ns: khbpf {on_cpu(t)}, "
                 f"kernel {k['sum_exec_runtime_ns']}")
        # The classified CPU changes (sched_migrate_task) and the unseen ones
        # add up to the kernel's se.nr_migrations exactly; an unseen one (the
        # main thread of `run` moved while held before attach; a program run
        # that did not happen) is counted in loss.migrations_unseen.
        by = t["bpf_detail"]["value"]["migrations_by_distance"]
        mig, unseen = by["total"], by["unseen"]
        if mig + unseen != k["nr_migrations"] or unseen > doc["loss"]["migrations_unseen"]["value"]:
            fail(f"tid {tid} ({k['comm']}): sched_migrate_task saw {mig} CPU changes and "
                 f"{unseen} unseen, se.nr_migrations {k['nr_migrations']}, "
                 f"loss.migrations_unseen {doc['loss']['migrations_unseen']['value']}")
    # The workload's own last readings (schedmix --out) came before the final
    # ones: the kernel's counters only grow, or finalcount read another thread.
    if truth_path:
        for line in open(truth_path):
            if not line.strip():
                continue
            r = json.loads(line)
            k = kernel.get(r["tid"])
            if k is None:
                fail(f"tid {r['tid']} ({r['comm']}) read itself but finalcount never saw it exit")
                continue
            for key in list(FIELDS.values()) + ["sum_exec_runtime_ns"]:
                if k[key] < r[key]:
                    fail(f"tid {r['tid']} {key}: final {k[key]} < its own last reading {r[key]}")
    return doc


def totals(doc_path):
    doc = json.load(open(doc_path))
    sched = doc["hardware"]["value"]["scheduler"]
    for field in list(FIELDS) + ["total_context_switches"]:
        want = sum(t["scheduler"][field]["value"]["value"] for t in doc["threads"])
        got = sched[field]["value"].get("value")
        if got != want:
            fail(f"total {field}: {got} != sum over threads {want}")
        if sched[field]["source"] != "bpf-tracepoint":
            fail(f"total {field} source {sched[field]['source']}")
    for t in doc["threads"]:
        # Each wait on its own, plus any seen only as a sum, is the kernel's run_delay.
        detail = t["bpf_detail"].get("value")
        delay = t["scheduler"]["scheduler_delay_ns"]["value"].get("value")
        if detail and detail["runqueue_wait_ns"] != delay:
            fail(f"tid {t['thread_id']}: waits sum to {detail['runqueue_wait_ns']}, run_delay {delay}")
        if detail and detail["runqueue_waits"] - detail["unbinned_waits"] != sum(
                b["count"] for b in detail["runqueue_histogram"]):
            fail(f"tid {t['thread_id']}: histogram counts != binned waits")
        s = t["scheduler"]
        if s["total_context_switches"]["value"]["value"] != (
                s["voluntary_context_switches"]["value"]["value"]
                + s["involuntary_context_switches"]["value"]["value"]):
            fail(f"tid {t['thread_id']}: total switches != voluntary + involuntary")
    loss = doc["loss"]
    for k in ("threads_dropped", "threads_vanished", "exited_records_overflow",
              "final_switch_unmatched", "iterator_write_errors"):
        if loss[k]["value"] != 0:
            fail(f"loss {k} = {loss[k]['value']}")


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "snap" and len(argv) == 4:
        snap(argv[2], argv[3])
    elif cmd == "window" and len(argv) == 5:
        window(argv[2], argv[3], argv[4])
    elif cmd == "final" and len(argv) in (4, 5):
        final(*argv[2:])
    elif cmd == "totals" and len(argv) == 3:
        totals(argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

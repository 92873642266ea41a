#!/usr/bin/python3
"""Checks a khbpf document of tests/workloads/tree against the tree's own truth.

tree_check.py DOC TRUTH [--no-children]

TRUTH is the JSON lines tree.c and treeleaf.c wrote: a line per process
(who forked it), a line per thread with its own kernel counters read as the
last thing it did, and the root's getrusage(RUSAGE_SELF) + (RUSAGE_CHILDREN)
between two readings of its own main thread's counters.

What is checked, each thing exactly or between bounds the kernel's own
bookkeeping sets (no tolerance picked to pass):
- every process and every thread is listed, each thread under its process,
  each process with its parent, executable and exit status;
- each thread's counters are its own reading plus what it did after it:
  every switch-out after the reading but the last (its final, voluntary
  one) was followed by a switch-in, so the switches khbpf has beyond the
  reading are exactly one more than the timeslices it has beyond it;
- each process's totals are its threads' sums, the set's the processes';
- the set's totals against rusage: rusage folds a thread's counts into its
  process when the thread is released, which for a thread other than the
  leader is before its final switch, and for a leader when its parent
  reaps it (before or after its final switch), and it has the root's main
  thread as of the getrusage call. Every thread is folded after its own
  reading, so what khbpf has beyond rusage was done after the readings:
  at least the non-leader threads' final switches and the root main
  thread's after the call, at most all switches after the readings (a
  leader's final switch before its reaping, a preemption between a
  release and the final switch, seen here on several threads a run); on-CPU
  time beyond rusage's is at least 0 (rusage truncates to microseconds)
  and at most every thread's on-CPU time after its own reading.
"""
import json
import sys

EXIT = {"tree": {"code": 0}, "tree-a": {"code": 0}, "leaf": {"code": 0},
        "leaf-gc": {"code": 7}, "tree-c": {"code": 0}, "tree-d": {"code": 5},
        "tree-k": {"signal": 15}, "leaf-quick": {"code": 0}, "tree-clone": {"code": 0}}
EXE = {"leaf": "treeleaf", "leaf-gc": "treeleaf", "leaf-quick": "treeleaf"}


def val(sev):
    v = sev["value"]
    assert v["status"] == "recorded", f"a gap where a value was expected: {sev}"
    return v["value"]


def counters(sched, on_cpu):
    return {"nvcsw": val(sched["voluntary_context_switches"]),
            "nivcsw": val(sched["involuntary_context_switches"]),
            "migrations": val(sched["cpu_migrations"]),
            "run_delay": val(sched["scheduler_delay_ns"]),
            "pcount": val(sched["timeslices"]),
            "runtime": val(on_cpu)}


def main():
    doc = json.load(open(sys.argv[1]))
    lines = [json.loads(l) for l in open(sys.argv[2])]
    no_children = "--no-children" in sys.argv[3:]
    errors = []

    def check(cond, what):
        if not cond:
            errors.append(what)

    procs = {l["pid"]: l for l in lines if l["kind"] == "process"}
    threads = {l["tid"]: l for l in lines if l["kind"] == "thread" and l["role"] != "tree-before-rusage"}
    before = next(l for l in lines if l["role"] == "tree-before-rusage")
    ru = next(l for l in lines if l["kind"] == "rusage")
    root = ru["pid"]
    if no_children:
        procs = {p: l for p, l in procs.items() if p == root}
        threads = {t: l for t, l in threads.items() if l["pid"] == root}

    dprocs = {p["pid"]: p for p in doc["processes"]}
    dthreads = {t["thread_id"]: t for t in doc["threads"]}
    check(set(dprocs) == set(procs), f"processes: document {sorted(dprocs)}, tree {sorted(procs)}")
    check(set(dthreads) == set(threads), f"threads: document {sorted(dthreads)}, tree {sorted(threads)}")
    check(len(doc["processes"]) == len(dprocs), "a process listed twice")

    s = doc["target"]["set"]
    check(s["kind"] == ("command" if no_children else "command-tree"), f"set kind {s['kind']}")
    check(s["processes"] == len(procs) and s["pids"] == [root], f"set {s}")
    check(s["joined_at_start"] == 1 and s["joined_at_fork"] == len(procs) - 1, f"set joins {s}")
    check(s["exited"] == len(procs), f"set exited {s}")

    for pid, p in procs.items():
        d = dprocs.get(pid)
        if not d:
            continue
        role = p["role"]
        check(d["exit"] == {"status": "recorded", "value": EXIT[role]},
              f"{role} ({pid}): exit {d['exit']}, the tree says {EXIT[role]}")
        if pid != root:
            check(d["parent_pid"] == {"status": "recorded", "value": p["parent"]},
                  f"{role}: parent {d['parent_pid']}, the tree says {p['parent']}")
            check(d["born"] and d["joined"] == "fork", f"{role}: born {d['born']}, joined {d['joined']}")
        else:
            check(d["joined"] == "root" and not d["born"], f"root: joined {d['joined']}, born {d['born']}")
        exe = d["exe"]["value"]
        check(exe["status"] == "recorded" and exe["value"].endswith("/" + EXE.get(role, "tree")),
              f"{role}: exe {d['exe']}")
        check(d["exited"], f"{role}: not exited")
        mine = [t for t in threads.values() if t["pid"] == pid]
        check(d["threads"] == len(mine), f"{role}: {d['threads']} threads, the tree had {len(mine)}")

    post_cpu = post_v_threads = post_i_threads = 0
    for tid, t in threads.items():
        d = dthreads.get(tid)
        if not d:
            continue
        check(d["pid"] == t["pid"], f"thread {tid} ({t['role']}) under pid {d['pid']}, not {t['pid']}")
        check(d["exited"] and d["born"], f"thread {tid} ({t['role']}): exited {d['exited']}, born {d['born']}")
        k = counters(d["scheduler"], d["on_cpu_ns"])
        delta = {f: k[f] - t[f] for f in k}
        neg = [f for f, v in delta.items() if v < 0]
        check(not neg, f"thread {tid} ({t['role']}): below its own final reading in {neg}: khbpf {k}, own {t}")
        check(delta["nvcsw"] >= 1, f"thread {tid} ({t['role']}): no final switch after its reading: {delta}")
        check(delta["nvcsw"] + delta["nivcsw"] == 1 + delta["pcount"],
              f"thread {tid} ({t['role']}): {delta['nvcsw'] + delta['nivcsw']} switches after its "
              f"reading, {delta['pcount']} timeslices: not the final one plus one per timeslice")
        post_cpu += max(delta["runtime"], 0)
        if tid != t["pid"] or t["pid"] != root:
            post_v_threads += max(delta["nvcsw"], 0)
            post_i_threads += max(delta["nivcsw"], 0)

    # Each process is its threads' sum, the set the processes'.
    fields = ["nvcsw", "nivcsw", "migrations", "run_delay", "pcount", "runtime"]
    total = dict.fromkeys(fields, 0)
    for pid, d in dprocs.items():
        pk = counters(d["scheduler"], d["on_cpu_ns"])
        sums = dict.fromkeys(fields, 0)
        for t in doc["threads"]:
            if t["pid"] == pid:
                tk = counters(t["scheduler"], t["on_cpu_ns"])
                for f in fields:
                    sums[f] += tk[f]
        check(pk == sums, f"process {pid}: {pk}, its threads sum to {sums}")
        for f in fields:
            total[f] += pk[f]
    hw = doc["hardware"]["value"]
    check(counters(hw["scheduler"], {"value": hw["utilization"]["all_threads_cpu_ns"]}) == total,
          f"set totals {counters(hw['scheduler'], {'value': hw['utilization']['all_threads_cpu_ns']})}, processes sum to {total}")

    if not no_children:
        root_main = counters(dthreads[root]["scheduler"], dthreads[root]["on_cpu_ns"])
        me = threads[root]
        nonleader = sum(1 for t in threads.values() if t["tid"] != t["pid"])
        ru_v = ru["self_nvcsw"] + ru["children_nvcsw"]
        ru_i = ru["self_nivcsw"] + ru["children_nivcsw"]
        # rusage has the root's main thread somewhere between its two readings.
        post_v = (root_main["nvcsw"] - me["nvcsw"], root_main["nvcsw"] - before["nvcsw"])
        post_i = (root_main["nivcsw"] - me["nivcsw"], root_main["nivcsw"] - before["nivcsw"])
        extra_v = total["nvcsw"] - ru_v
        extra_i = total["nivcsw"] - ru_i
        # Switches rusage lacks were made after the thread's own reading: the
        # non-leaders' final ones always, the rest (a leader's final switch
        # before its reaping, a preemption between a release and the final
        # switch) at most all those khbpf saw after the readings.
        check(nonleader + post_v[0] <= extra_v <= post_v_threads + post_v[1],
              f"voluntary: khbpf {total['nvcsw']}, rusage {ru_v}: {extra_v} more, expected at least "
              f"{nonleader} final switches of threads + the root's {post_v[0]} after the call, "
              f"at most the {post_v_threads} after the threads' readings + {post_v[1]}")
        check(post_i[0] <= extra_i <= post_i_threads + post_i[1],
              f"involuntary: khbpf {total['nivcsw']}, rusage {ru_i}: {extra_i} more, expected "
              f"the root's {post_i} after the call and at most {post_i_threads} after the threads' readings")
        ru_cpu = (ru["self_cpu_us"] + ru["children_cpu_us"]) * 1000
        check(0 <= total["runtime"] - ru_cpu <= post_cpu + 4000,
              f"on-CPU: khbpf {total['runtime']} ns, rusage {ru_cpu} ns; at most {post_cpu} ns "
              f"ran after the threads' readings")
        print(f"rusage: voluntary +{extra_v} ({nonleader} thread final switches), "
              f"involuntary +{extra_i}, on-CPU +{total['runtime'] - ru_cpu} ns of at most {post_cpu}")

    for k in ("processes_not_joined", "threads_not_joined", "threads_vanished",
              "exited_records_overflow", "threads_without_baseline"):
        check(doc["loss"][k] == {"status": "recorded", "value": 0}, f"loss.{k} {doc['loss'][k]}")

    if errors:
        for e in errors:
            print("tree_check:", e, file=sys.stderr)
        return 1
    print(f"tree_check: {len(procs)} processes, {len(threads)} threads as the tree read them")
    return 0


if __name__ == "__main__":
    sys.exit(main())

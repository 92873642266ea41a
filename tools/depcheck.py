#!/usr/bin/python3
"""Dependencies in user/ run one way (run by `make check`; user/README.md).

  depcheck.py [--objects DIR]

A module is a stem in a folder of user/: user/collect/sched_read.c and
user/collect/sched_read.h are the module collect/sched_read; a header
without a source of its name (user/session/session_opts.h) is a module of
its own. Two graphs of modules are checked:

  includes  each `#include "folder/name.h"` of a module's files (a user/
            header included without its folder fails: the check could not
            see that dependency);
  calls     with --objects DIR (the build's objects, DIR/<folder>/<name>.o):
            each symbol a module's object leaves undefined that another
            module's object defines (nm).

Either graph fails the check when an edge goes from a folder to one it may
not use (LAYERS below: a folder uses only those listed for it, and itself)
or when modules form a cycle. Each failure is one line naming the modules
and what to do; the exit status is 1 if there is any.
"""
import argparse
import os
import re
import subprocess
import sys

# Each folder, lowest first, and the folders it may use.
LAYERS = {
    "lib": [],
    "host": ["lib"],
    "document": ["lib", "host"],
    "collect": ["lib", "host", "document"],
    "spans": ["lib", "host", "document", "collect"],
    "session": ["lib", "host", "document", "collect", "spans"],
    "report": ["lib", "document"],
    "serve": ["lib", "host", "document", "collect", "spans", "session"],
    "cmd": ["lib", "host", "document", "collect", "spans", "session", "report", "serve"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def modules(root):
    """{module: [files]} for every source and header under root's folders."""
    mods = {}
    for folder in sorted(os.listdir(root)):
        path = os.path.join(root, folder)
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            stem, ext = os.path.splitext(name)
            if ext in (".c", ".h"):
                mods.setdefault(f"{folder}/{stem}", []).append(os.path.join(path, name))
    return mods


def include_graph(root, mods, bad):
    graph = {m: set() for m in mods}
    stems = {m.split("/", 1)[1]: m for m in mods}
    for m, files in mods.items():
        for f in files:
            with open(f, encoding="utf-8") as fh:
                text = fh.read()
            for inc in INCLUDE.findall(text):
                if not inc.endswith(".h"):
                    continue
                if "/" not in inc:
                    # A user/ header named without its folder is a dependency
                    # this check could not see; skeletons (build/) are not ours.
                    if inc[:-2] in stems:
                        bad.append(f"{f}: includes \"{inc}\" without its folder: write \"{stems[inc[:-2]]}.h\"")
                    continue
                target = inc[:-2]
                if target.split("/")[0] in ("khbpf",):
                    continue  # include/khbpf: the BPF boundary, shared by all
                if target not in mods:
                    if target.split("/")[0] in LAYERS:
                        bad.append(f"{f}: includes {inc}, which does not exist: name it by its folder")
                    continue
                if target != m:
                    graph[m].add(target)
    return graph


def call_graph(objdir, mods):
    defined, undefined = {}, {}
    for m in mods:
        obj = os.path.join(objdir, m + ".o")
        if not os.path.exists(obj):
            continue
        out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) < 2:
                continue
            if parts[1] in "TDBRCV":
                defined[parts[0]] = m
            elif parts[1] == "U":
                undefined.setdefault(m, set()).add(parts[0])
    graph = {m: set() for m in mods}
    for m, syms in undefined.items():
        for s in syms:
            d = defined.get(s)
            if d and d != m:
                graph[m].add(d)
    return graph


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan's)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check(graph, what, bad):
    for m in sorted(graph):
        folder = m.split("/")[0]
        allowed = LAYERS.get(folder)
        if allowed is None:
            bad.append(f"user/{folder}/: a folder depcheck.py does not know: add it to LAYERS")
            continue
        for t in sorted(graph[m]):
            tf = t.split("/")[0]
            if tf != folder and tf not in allowed:
                bad.append(f"{m} {what} {t}: {folder}/ may use only {', '.join(allowed) or 'nothing'}; "
                           f"move the shared part down")
    for comp in cycles(graph):
        bad.append(f"{what} form a cycle: {' '.join(comp)}; move what they share into one of them or a lower module")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default="user")
    ap.add_argument("--objects", help="the build's object folder (build/obj) for the call graph")
    args = ap.parse_args()
    mods = modules(args.root)
    bad = []
    check(include_graph(args.root, mods, bad), "includes", bad)
    if args.objects:
        if not os.path.isdir(args.objects):
            sys.exit(f"depcheck: no objects in {args.objects}: build first (make)")
        check(call_graph(args.objects, mods), "calls", bad)
    for b in bad:
        print(f"depcheck: {b}", file=sys.stderr)
    if bad:
        return 1
    print(f"depcheck: {len(mods)} modules in {len(LAYERS)} folders, dependencies one way"
          f"{' (includes and calls)' if args.objects else ' (includes)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

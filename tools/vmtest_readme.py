#!/usr/bin/python3
"""The kernel matrix of docs/kernels.md, from tools/vmtest.sh's results.

  vmtest_readme.py DIR KERNEL... [--update docs/kernels.md]

Reads DIR/KERNEL.json for each kernel (in that order) and prints the
markdown block: which commit and steps were measured, and per kernel the
Debian package, boot time, the BPF collectors, the fallbacks khbpf's probe
chose (kernel features in use "fallback" or "missing"), the steps passed and
what the steps measured (the last line of each step's log, when it says more
than "ok"). With --update, the block replaces what that file holds between
the markers below (temp file, then rename), and nothing else changes.
"""
import json
import os
import sys

BEGIN = "<!-- vmtest:begin (tools/vmtest_readme.py writes this block; edit it there) -->"
END = "<!-- vmtest:end -->"


def collectors(r):
    c = {x["collector"]: x["availability"] for x in (r.get("probe") or {}).get("collectors", [])}
    return c.get("scheduler-activity", "-"), c.get("span-probes", "-")


def fallbacks(r):
    out = []
    for f in (r.get("probe") or {}).get("kernel_features", []):
        if f["use"] in ("fallback", "missing"):
            out.append(f"{f['name']} ({f['use']}{': ' + f['detail'] if f.get('detail') else ''})")
    return "; ".join(out) or "none"


def measured(r):
    notes = []
    for s in r["steps"]:
        line = s.get("result") or ""
        if s.get("exit_code") == 0 and "(" in line:
            notes.append(line)
        elif s.get("exit_code") not in (0, None):
            notes.append(f"**{s['name']} failed** (exit {s['exit_code']})")
    return "; ".join(notes) or "-"


def block(results):
    first = results[0]
    steps = [s["name"] for s in first["steps"]]
    passed = sum(1 for r in results for s in r["steps"] if s.get("exit_code") == 0)
    total = sum(len(r["steps"]) for r in results)
    seconds = sum(r.get("guest_seconds") or 0 for r in results)
    commits = sorted({r.get("commit", "unknown") for r in results})
    at = (f"at commit {commits[0]}" if len(commits) == 1 else
          "at commits " + ", ".join(f"{c} ({', '.join(r['kernel'] for r in results if r.get('commit', 'unknown') == c)})"
                                   for c in commits))
    lines = [
        BEGIN,
        f"Measured by `make vmtest` {at} "
        f"({first['accelerator'].upper()}, {first['cpus']} guest CPUs, {first['memory']}; "
        f"virtme-ng {first['virtme_ng']}): **{passed} of {total} steps passed**, "
        f"{seconds // 60} min {seconds % 60} s for the {len(results)} guests. "
        f"Steps in each guest: {', '.join('`' + s + '`' for s in steps)}.",
        "",
        "| kernel (Debian package) | boot | scheduler-activity | span-probes "
        "| fallbacks (`khbpf probe`, *Kernel features*) | steps passed | measured |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        sched, spans = collectors(r)
        ok = sum(1 for s in r["steps"] if s.get("exit_code") == 0)
        boot = f"{round(r['boot_seconds'])} s" if r.get("boot_seconds") is not None else "-"
        lines.append(
            f"| {r['release']} ({r['suite']} {r['package_version']}) | {boot} | {sched} | {spans} "
            f"| {fallbacks(r)} | {ok} of {len(r['steps'])} | {measured(r)} |")
    lines.append(END)
    return "\n".join(lines) + "\n"


def update(readme, text):
    old = open(readme).read()
    if BEGIN not in old or END not in old:
        sys.exit(f"vmtest_readme.py: {readme} has no '{BEGIN}' ... '{END}' markers; add them "
                 "where the table belongs")
    head, rest = old.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    tail = tail[1:] if tail.startswith("\n") else tail
    tmp = readme + ".tmp"
    with open(tmp, "w") as f:
        f.write(head + text + tail)
    os.replace(tmp, readme)


def main(argv):
    args = argv[1:]
    readme = None
    if "--update" in args:
        i = args.index("--update")
        if i + 1 >= len(args):
            sys.exit("vmtest_readme.py: --update needs the file (docs/kernels.md)")
        readme = args[i + 1]
        del args[i:i + 2]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir, kernels = args[0], args[1:]
    results = []
    for k in kernels:
        path = os.path.join(out_dir, k + ".json")
        try:
            results.append(json.load(open(path)))
        except (OSError, ValueError) as e:
            sys.exit(f"vmtest_readme.py: {path}: {e}; run tools/vmtest.sh first")
    text = block(results)
    if readme:
        update(readme, text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

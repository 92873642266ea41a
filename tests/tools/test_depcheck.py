#!/usr/bin/python3
"""tools/depcheck.py against trees made to break it, then against user/.

Each case writes a small user/ tree in a temporary folder and runs the
check on it: a clean tree passes; a lower folder including a higher one, a
cycle of includes, a header that names no existing module and one named
without its folder each fail
with a line naming the modules. Calls are checked on objects compiled from
a tree whose modules call each other in a cycle. Run by `make check`.
"""
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "depcheck.py")


def tree(root, files):
    for path, text in files.items():
        full = os.path.join(root, "user", path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)


def depcheck(root, *extra):
    return subprocess.run([sys.executable, CHECK, "--root", os.path.join(root, "user"), *extra],
                          capture_output=True, text=True)


def case(name, files, want_rc, want_lines=(), compile_objs=False):
    with tempfile.TemporaryDirectory() as root:
        tree(root, files)
        extra = []
        if compile_objs:
            objs = os.path.join(root, "obj")
            for path in files:
                if path.endswith(".c"):
                    out = os.path.join(objs, path[:-2] + ".o")
                    os.makedirs(os.path.dirname(out), exist_ok=True)
                    subprocess.run(["cc", "-c", "-I", os.path.join(root, "user"),
                                    os.path.join(root, "user", path), "-o", out], check=True)
            extra = ["--objects", objs]
        r = depcheck(root, *extra)
        err = r.stderr
        if r.returncode != want_rc:
            sys.exit(f"test_depcheck: {name}: exit {r.returncode}, expected {want_rc}: {err}{r.stdout}")
        for line in want_lines:
            if line not in err:
                sys.exit(f"test_depcheck: {name}: no '{line}' in: {err}")
        print(f"test_depcheck: {name}: ok")


case("clean", {
    "lib/a.h": "int a(void);\n",
    "lib/a.c": '#include "lib/a.h"\nint a(void) { return 1; }\n',
    "host/b.h": '#include "lib/a.h"\nint b(void);\n',
    "host/b.c": '#include "host/b.h"\nint b(void) { return a(); }\n',
}, 0, compile_objs=True)

case("lower includes higher", {
    "lib/a.c": '#include "host/b.h"\n',
    "host/b.h": "int b(void);\n",
}, 1, ["lib/a includes host/b: lib/ may use only nothing"])

case("report uses collect", {
    "report/r.c": '#include "collect/c.h"\n',
    "collect/c.h": "int c(void);\n",
}, 1, ["report/r includes collect/c"])

case("include cycle", {
    "host/x.h": '#include "host/y.h"\n',
    "host/x.c": '#include "host/x.h"\n',
    "host/y.h": "struct y { int v; };\n",
    "host/y.c": '#include "host/y.h"\n#include "host/x.h"\n',
}, 1, ["includes form a cycle: host/x host/y"])

case("missing header", {
    "lib/a.c": '#include "lib/gone.h"\n',
}, 1, ["includes lib/gone.h, which does not exist"])

case("header without its folder", {
    "host/b.h": "int b(void);\n",
    "host/b.c": '#include "b.h"\n',
    "lib/a.c": '#include "b.h"\n',
}, 1, ['lib/a.c: includes "b.h" without its folder: write "host/b.h"'])

case("unknown folder", {
    "misc/m.c": "int m;\n",
}, 1, ["user/misc/: a folder depcheck.py does not know"])

case("call cycle", {
    "host/p.h": "int p(int);\n",
    "host/q.h": "int q(int);\n",
    "host/p.c": "int q(int);\nint p(int n) { return n ? q(n - 1) : 0; }\n",
    "host/q.c": "int p(int);\nint q(int n) { return n ? p(n - 1) : 1; }\n",
}, 1, ["calls form a cycle: host/p host/q"], compile_objs=True)

case("call up a layer", {
    "lib/l.c": "int h(void);\nint l(void) { return h(); }\n",
    "host/h.c": "int h(void) { return 2; }\n",
}, 1, ["lib/l calls host/h"], compile_objs=True)

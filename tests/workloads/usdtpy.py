# SPDX-License-Identifier: MIT
"""CPython's own count of its garbage collections, for a tracer of its USDT
probes (python:gc__start, python:gc__done) to be held to:
tests/integration/usdt_spans.sh.

Run it as /usr/bin/python3.11 -I -S -B -X importtime usdtpy.py. It makes
reference cycles (the collector runs on its own, all three generations), asks
for four collections, imports a few standard modules (and one that does not
exist) so that python:import__find__load__start/done fire, then prints
"gc_collections N" (N: the sum of gc.get_stats()[i]["collections"], every
collection since the interpreter started) and ends with os._exit(0): no
collection or import after that reading (finalization collects).
gc.disable() first: get_stats() takes its snapshot and then allocates its
result, and an automatic collection there would be one the snapshot missed.
-X importtime prints one "import time:" line on stderr per probed import
(the same C function, import_find_and_load(), fires the probes and prints
the line), after one header line.
"""
import gc
import os
import sys


class Node:
    pass


keep = []
for i in range(200000):
    a, b = Node(), Node()
    a.other, b.other = b, a
    if i % 1000 == 0:
        keep.append(a)
for generation in (0, 1, 2, 2):
    gc.collect(generation)

import json  # noqa: E402,F401
import email.parser  # noqa: E402,F401
import decimal  # noqa: E402,F401
import xml.dom.minidom  # noqa: E402,F401

try:
    import khbpf_no_such_module  # noqa: F401
except ImportError:
    pass

gc.disable()
stats = gc.get_stats()
sys.stdout.write("gc_collections %d\n" % sum(s["collections"] for s in stats))
sys.stdout.flush()
os._exit(0)

#!/bin/bash
# khbpf serve under a slow-client flood: 64 connections from 8 addresses
# (127.0.0.1-8, the total limit), each trickling one byte a second of a
# request head that never ends, and opened again as soon as the server
# closes it, for 14 s. Meanwhile a scraper from another address
# (127.0.0.9) and one from a flooding address (127.0.0.1) each GET /metrics
# on a new connection every few tenths of a second: every answer within
# 1 s. No trickling connection lives past the head deadline (5 s) and a
# second for the loop, and serve's counters account for every close.
# Before the deadline and the shedding total limit, the scrapers waited in
# the listen backlog for the whole flood, and the trickling connections
# lived as long as it (each byte reset the 10 s idle timeout).
. "$(dirname "$0")/common.bash"
require_root "loads BPF"
SERVE_PID=
trap 'rc=$?; [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null; wait 2>/dev/null; keep_failed $rc' EXIT
start_serve --interval 1
curl -sf "http://127.0.0.1:$PORT/healthz" | grep -q '^ok' || fail "no /healthz"
checkpoint serve-running

# The sockets are the script's own: they close with it, on every path. The
# flood is a process of its own, as an attacker is: a scraper that shared
# its interpreter would send its request only when the flood let it.
"$PYTHON" - "$PORT" "$TMP/closed" <<'PY' || fail "a scraper waited, or a slow client was kept, during the flood"
import multiprocessing, select, socket, sys, time

PORT = int(sys.argv[1])
CLOSED = sys.argv[2]  # gets how many slow connections the server closed
ADDRS = [f"127.0.0.{i}" for i in range(1, 9)]
PER_ADDR = 8  # 8 x 8: the total limit (64)
TRICKLE = 14.0  # seconds: past two head deadlines; before, a scraper waited it all out and a trickler lived it all
HEAD_DEADLINE = 5.0
MARGIN = 1.0  # the server's loop wakes at least once a second
WITHIN = 1.0  # every scrape answered within
SCRAPE_TIMEOUT = 5.0
HEAD = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096  # never ends here


class Slow:
    def __init__(self, src, first_byte):
        self.src = src
        self.sock = None
        self.opened = None
        self.sent = 0
        self.next_byte = first_byte

    def open(self, now):
        s = socket.socket()
        s.settimeout(2)
        s.bind((self.src, 0))
        try:
            s.connect(("127.0.0.1", PORT))
        except OSError:
            s.close()
            return
        s.setblocking(False)
        # Opened again: its first byte at once, as an attacker would.
        self.sock, self.opened, self.sent = s, time.monotonic(), 0
        self.next_byte = max(self.next_byte, now)

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock = None


def flood(stop, results):
    """Until stop (or TRICKLE + 10 s, should the parent be gone): lifetimes, open ages."""
    now = time.monotonic()
    end = now + TRICKLE + 10
    lifetimes = []  # seconds each slow connection lived until the server closed it
    # The first bytes spread over a second: they come at an even rate.
    slow = [Slow(a, now + (i * len(ADDRS) + j) / 64) for j, a in enumerate(ADDRS) for i in range(PER_ADDR)]
    while not stop.is_set() and time.monotonic() < end:
        now = time.monotonic()
        for c in slow:
            if not c.sock:
                c.open(now)
            elif now >= c.next_byte:
                try:
                    c.sock.send(HEAD[c.sent : c.sent + 1])
                    c.sent += 1
                except BlockingIOError:
                    pass
                except OSError:
                    lifetimes.append(time.monotonic() - c.opened)
                    c.close()
                    continue
                c.next_byte += 1.0
        socks = [c.sock for c in slow if c.sock]
        ready = select.select(socks, [], [], 0.02)[0]
        for c in slow:
            if c.sock not in ready:
                continue
            try:
                if c.sock.recv(4096):
                    continue  # an answer (an error status): the close follows
            except BlockingIOError:
                continue
            except OSError:
                pass
            lifetimes.append(time.monotonic() - c.opened)
            c.close()
    now = time.monotonic()
    results.put((lifetimes, [now - c.opened for c in slow if c.sock]))
    for c in slow:
        c.close()


def scrape(src):
    """Seconds until a whole answer to GET /metrics on a new connection, or None."""
    t0 = time.monotonic()
    try:
        with socket.socket() as s:
            s.settimeout(SCRAPE_TIMEOUT)
            s.bind((src, 0))
            s.connect(("127.0.0.1", PORT))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
    except OSError as e:
        print(f"scrape from {src}: {e!r} after {time.monotonic() - t0:.3f} s", file=sys.stderr)
        return None
    took = time.monotonic() - t0
    if not data.startswith(b"HTTP/1.1 200 ") or b"\nkhbpf_windows_total " not in data:
        print(f"scrape from {src}: no metrics: {data[:200]!r}", file=sys.stderr)
        return None
    return took


stop, results = multiprocessing.Event(), multiprocessing.Queue()
start = time.monotonic()
attacker = multiprocessing.Process(target=flood, args=(stop, results), daemon=True)
attacker.start()
time.sleep(1.5)  # the flood at full strength first
bad = []
took = {"127.0.0.9": [], "127.0.0.1": []}
while time.monotonic() < start + TRICKLE:
    for src in took:
        at = time.monotonic() - start
        s = scrape(src)
        took[src].append(s if s is not None else float("inf"))
        if s is None or s > WITHIN:
            bad.append(f"GET /metrics from {src} at {at:.1f} s: "
                       + ("no answer" if s is None else f"{s:.3f} s"))
    time.sleep(0.3)
stop.set()
lifetimes, open_ages = results.get(timeout=10)
attacker.join(10)
for src, v in took.items():
    print(f"scrapes from {src}: {len(v)}, slowest {max(v):.3f} s")
longest = max(lifetimes + open_ages)
print(f"slow connections closed by the server: {len(lifetimes)}, "
      f"longest lived {max(lifetimes, default=0):.2f} s; still open at the end: {len(open_ages)}, "
      f"oldest {max(open_ages, default=0):.2f} s")
if longest > HEAD_DEADLINE + MARGIN:
    bad.append(f"a slow connection lived {longest:.2f} s (> {HEAD_DEADLINE + MARGIN} s)")
# Each slow connection is closed every 5 s or so (sooner when displaced): the
# flood went on, each of the 64 at least once a deadline and its margin.
if len(lifetimes) < 64 * int(TRICKLE // (HEAD_DEADLINE + MARGIN)):
    bad.append(f"only {len(lifetimes)} slow connections closed in {TRICKLE} s")
with open(CLOSED, "w") as f:
    print(len(lifetimes), file=f)
for b in bad[:20]:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# Every close is counted, by its bound: the slow connections timed out, and
# the scrapers displaced them (at the total limit from 127.0.0.9, at the
# address's from 127.0.0.1). All the closes the flood saw, and at most the
# 64 it closed itself at the end besides (one may have timed out first).
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/after.txt" || fail "no /metrics after the flood"
grep -q '^khbpf_windows_total ' "$TMP/after.txt" || fail "no khbpf_windows_total after the flood"
grep '^khbpf_http_connections' "$TMP/after.txt"
"$PYTHON" - "$TMP/after.txt" "$(cat "$TMP/closed")" <<'PY' || fail "serve's connection counters"
import re, sys

v = {}
for line in open(sys.argv[1]):
    m = re.match(r'khbpf_http_connections(_closed_total\{reason="(\w+)"\}|_refused_total|) (\d+)$', line)
    if m:
        v[m.group(2) or m.group(1)] = int(m.group(3))
seen = int(sys.argv[2])
closed = sum(v.get(r, 0) for r in ("address_limit", "total_limit", "head_deadline", "answer_deadline"))
bad = [f"{r}: none closed" for r in ("address_limit", "total_limit", "head_deadline") if not v.get(r)]
if not seen <= closed <= seen + 64:
    bad.append(f"{closed} closes counted, the flood saw {seen}")
if v.get("answer_deadline") or v.get("_refused_total"):
    bad.append("answers cut off or connections refused, with no request ever in progress for long")
if v.get("", 65) > 64:
    bad.append(f"khbpf_http_connections {v.get('')}")
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
kill -INT "$SERVE_PID"
wait "$SERVE_PID" || fail "serve exited $? after SIGINT: $(cat "$TMP/serve.err")"
SERVE_PID=
no_bpf_left
echo "serve_slowloris: ok"

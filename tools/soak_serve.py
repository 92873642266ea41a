#!/usr/bin/python3
"""Soak: `khbpf serve` for SOAK_SECONDS (default 1800) under churn.

The churn: short-lived processes started in bursts (about 100 a second, each
a new group for `--by process`, past the 64-entry table so groups are evicted
and aged out all the time), plus a process whose threads come and go. serve
runs with a 5 s window, 64 groups and a 30 s idle age; /metrics and
/evidence are scraped every 5 s. Every 10 s the script samples serve's
VmRSS and its open file descriptors.

Verdict: after a warm-up (the first 5 minutes, or a sixth of a shorter run),
the median RSS of the last sixth of the run must stay within
SOAK_RSS_SLACK_KIB (default 4096) of the warm-up's median, and the fd count
must not rise; every scrape must succeed; serve must exit 0 on SIGINT. Peaks
are reported but not judged: serve's window holds every thread of the host,
so a burst of threads anywhere (another test's 10000) lifts RSS for a window,
and a leak shows as a level that does not come back down.
Not part of `make check`: `sudo make soak`.

Writes build/bench/soak.json and build/bench/soak.md.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

from bench_serve import free_port  # tools/ is sys.path[0]

OUT = "build/bench"
KHBPF = "build/khbpf"
SECONDS = float(os.environ.get("SOAK_SECONDS", "1800"))
SLACK_KIB = int(os.environ.get("SOAK_RSS_SLACK_KIB", "4096"))
CHURN = ("while :; do i=0; while [ $i -lt 20 ]; do /bin/true & i=$((i+1)); done; wait; "
         "sleep 0.2; done")
THREADS = ("import threading, time\n"
           "while True:\n"
           "    ts = [threading.Thread(target=time.sleep, args=(0.05,)) for _ in range(50)]\n"
           "    [t.start() for t in ts]; [t.join() for t in ts]\n")


def sample(pid):
    rss = next(int(line.split()[1]) for line in open(f"/proc/{pid}/status")
               if line.startswith("VmRSS:"))
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def main():
    os.makedirs(OUT, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    serve = subprocess.Popen([KHBPF, "serve", "--listen", f"127.0.0.1:{port}", "--by", "process",
                              "--interval", "5", "--max-groups", "64", "--max-age", "30"],
                             stderr=subprocess.PIPE, text=True)
    churn = subprocess.Popen(["sh", "-c", CHURN], start_new_session=True)
    threads = subprocess.Popen(["/usr/bin/python3", "-c", THREADS])
    samples, scrapes, failures = [], 0, []
    t0 = time.time()
    try:
        deadline = t0 + 20
        while True:
            try:
                urllib.request.urlopen(f"{url}/healthz", timeout=2).read()
                break
            except OSError:
                if time.time() > deadline or serve.poll() is not None:
                    raise RuntimeError("serve did not come up: " + serve.stderr.read())
                time.sleep(0.2)
        next_sample = time.time()
        while time.time() - t0 < SECONDS:
            # /evidence answers 503 until the first window has ended.
            for path in ("/metrics", "/evidence") if time.time() - t0 > 7 else ("/metrics",):
                try:
                    body = urllib.request.urlopen(url + path, timeout=10).read()
                    if not body:
                        failures.append(f"{time.time() - t0:.0f} s: {path} empty")
                    scrapes += 1
                except OSError as e:
                    failures.append(f"{time.time() - t0:.0f} s: {path}: {e}")
            if time.time() >= next_sample:
                rss, fds = sample(serve.pid)
                samples.append({"t": round(time.time() - t0, 1), "rss_kib": rss, "fds": fds})
                next_sample += 10
            if serve.poll() is not None:
                raise RuntimeError(f"serve exited {serve.returncode}: {serve.stderr.read()}")
            time.sleep(5)
    finally:
        os.killpg(churn.pid, signal.SIGKILL)
        churn.wait()
        threads.kill()
        threads.wait()
        if serve.poll() is None:
            serve.send_signal(signal.SIGINT)
            serve.wait(timeout=30)
    warm_s = min(300.0, SECONDS / 6)
    warm = [s for s in samples if s["t"] <= warm_s]
    after = [s for s in samples if s["t"] > warm_s]
    if not warm or not after:
        raise RuntimeError("too few samples: run longer")
    warm_rss = int(statistics.median(s["rss_kib"] for s in warm))
    warm_fds = max(s["fds"] for s in warm)
    tail = samples[-max(1, len(samples) // 6):]
    last_rss, peak_rss = int(statistics.median(s["rss_kib"] for s in tail)), \
        max(s["rss_kib"] for s in after)
    peak_fds = max(s["fds"] for s in after)
    if last_rss > warm_rss + SLACK_KIB:
        failures.append(f"RSS rose from {warm_rss} KiB (warm-up median) to {last_rss} KiB "
                        "(median of the last sixth)")
    if peak_fds > warm_fds:
        failures.append(f"open fds rose from {warm_fds} to {peak_fds}")
    if serve.returncode != 0:
        failures.append(f"serve exited {serve.returncode} on SIGINT")
    result = {"seconds": SECONDS, "warm_up_s": warm_s, "scrapes": scrapes, "samples": samples,
              "warm_rss_kib": warm_rss, "peak_rss_kib": peak_rss, "last_rss_kib": last_rss,
              "warm_fds": warm_fds, "peak_fds": peak_fds, "failures": failures,
              "kernel": os.uname().release, "date": time.strftime("%Y-%m-%d")}
    json.dump(result, open(f"{OUT}/soak.json", "w"), indent=1)
    lines = [f"`khbpf serve --by process --interval 5 --max-groups 64 --max-age 30` for "
             f"{SECONDS / 60:.0f} min under churn (about 100 short processes a second, 50 "
             f"threads started every ~50 ms); {scrapes} scrapes of /metrics and /evidence.", "",
             "| | RSS | open fds |", "| --- | --- | --- |",
             f"| warm-up (first {warm_s / 60:.0f} min): median RSS, most fds "
             f"| {warm_rss} KiB | {warm_fds} |",
             f"| after it: peak | {peak_rss} KiB | {peak_fds} |",
             f"| last sixth: median RSS, fds at the end | {last_rss} KiB "
             f"| {after[-1]['fds']} |", "",
             "Verdict: " + ("flat (RSS within " f"{SLACK_KIB} KiB, no fd growth, every scrape "
                            "answered)" if not failures else "; ".join(failures[:5]))]
    open(f"{OUT}/soak.md", "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

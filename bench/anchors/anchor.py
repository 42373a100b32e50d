#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Outside anchor: the bench workloads written in Python.

The real interpreter's GIL (Python/ceval_gil.c, the design the `cpython`
baseline follows) is measured on the same machine in the same run as gvloop.

    python3 bench/anchors/anchor.py [--quick] [--runs N]

Prints INFO/RESULT/DONE lines like gvlbench, under the variant
"python-<version>".  Workloads and metrics match gvlbench's of the same name:
  thread_pass  2 threads x N time.sleep(0) (Python's Thread.pass); handoff_pct
  pipe         N one-byte round trips over two pipes (vm4_pipe)
  mutex_10/100 threads on one threading.Lock (vm3_thread_mutex)
  busy_flag    `while not flag: pass` while another thread wants to set it
  wakeup       a thread sleeping 10 ms while another spins: wake-up latency
  convoy       echo round trips (echo in a forked child, outside the GIL)
               alone and beside 1 and 2 CPU-bound threads
"""
import math
import os
import platform
import socket
import sys
import threading
import time

QUICK = "--quick" in sys.argv
RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else (1 if QUICK else 5)
VARIANT = "python-" + platform.python_version()
if QUICK:
    SIZES = dict(passes=500, trips=200, mutex_ops=2000, wakeup=0.1, solo=0.05, cap=0.3, flag_cap=1.0)
else:
    SIZES = dict(passes=20000, trips=10000, mutex_ops=200000, wakeup=0.6, solo=0.15, cap=0.4, flag_cap=2.0)

now = time.monotonic


def result(bench, metric, value):
    print("RESULT %s %s %s %.6g" % (bench, VARIANT, metric, value), flush=True)


def percentile(sorted_vals, pct):
    if not sorted_vals:
        return 0.0
    rank = min(max(math.ceil(pct / 100.0 * len(sorted_vals)), 1), len(sorted_vals))
    return sorted_vals[rank - 1]


def thread_pass(n):
    state = {"last": None, "switches": 0, "arrived": 0, "t0": None}

    def body():
        state["arrived"] += 1
        while state["arrived"] < 2:
            time.sleep(0)
        if state["t0"] is None:
            state["t0"] = now()
        me = threading.get_ident()
        for _ in range(n):
            time.sleep(0)
            if state["last"] != me:
                state["switches"] += 1
                state["last"] = me

    ts = [threading.Thread(target=body) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    result("thread_pass", "time_s", now() - state["t0"])
    result("thread_pass", "handoff_pct", state["switches"] * 100.0 / (2 * n))


def pipe_case(n):
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()

    def ping():
        for _ in range(n):
            os.write(w1, b"a")
            os.read(r2, 1)

    def pong():
        for _ in range(n):
            os.read(r1, 1)
            os.write(w2, b"a")

    t0 = now()
    ts = [threading.Thread(target=ping), threading.Thread(target=pong)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    result("pipe", "time_s", now() - t0)
    for fd in (r1, w1, r2, w2):
        os.close(fd)


def mutex_case(nthreads, total):
    lock = threading.Lock()
    box = [0]
    per = total // nthreads

    def body():
        for _ in range(per):
            with lock:
                box[0] += 1

    t0 = now()
    ts = [threading.Thread(target=body) for _ in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if box[0] != per * nthreads:
        raise SystemExit("lost increments: %d" % box[0])
    result("mutex_%d" % nthreads, "time_s", now() - t0)


def busy_flag():
    """The setter sleeps 2 ms (the spinner takes the GIL), then needs the GIL
    back to set the flag; measured from the end of its sleep to the spinner
    seeing the flag."""
    state = {"flag": False, "seen": None, "started": False}

    def spin():
        state["started"] = True
        while not state["flag"]:
            pass
        state["seen"] = now()

    t = threading.Thread(target=spin)
    t.start()
    while not state["started"]:
        time.sleep(0)
    wake = now() + 0.002
    time.sleep(0.002)
    state["flag"] = True
    t.join(SIZES["flag_cap"] + 1)
    seen = state["seen"]
    result("busy_flag", "time_ms", (seen - wake) * 1000 if seen else SIZES["flag_cap"] * 1000)
    result("busy_flag", "timeouts", 0 if seen else 1)


def wakeup():
    state = {"stop": False}

    def hog():
        x = 0
        while not state["stop"]:
            x += 1

    h = threading.Thread(target=hog)
    h.start()
    time.sleep(0.001)
    lat = []
    finish = now() + SIZES["wakeup"]
    while now() < finish:
        target = now() + 0.010
        time.sleep(0.010)
        lat.append(max(now() - target, 0.0))
    state["stop"] = True
    h.join()
    lat.sort()
    result("wakeup", "p50_us", percentile(lat, 50) * 1e6)
    result("wakeup", "p99_us", percentile(lat, 99) * 1e6)
    result("wakeup", "max_us", lat[-1] * 1e6 if lat else 0)
    result("wakeup", "samples", len(lat))


def echo_pair():
    a, b = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        a.close()
        fd = b.fileno()
        while True:
            c = os.read(fd, 1)
            if not c:
                os._exit(0)
            os.write(fd, c)
    b.close()
    return a, pid


def io_trips(sock, n, cap):
    fd = sock.fileno()
    t0 = now()
    done = 0
    while done < n:
        os.write(fd, b"x")
        os.read(fd, 1)
        done += 1
        if now() - t0 > cap:
            break
    return done, now() - t0


CHUNKS = 4  # as gvlbench: every phase is cut in chunks that alternate


def convoy_chunk(sock, nhogs, acc):
    """Hogs alone for a while, then the I/O loop for its share of the trips
    and of the time cap; adds to acc = [solo units, solo s, busy units,
    busy s, trips, io s]."""
    state = {"stop": False}
    counts = [0] * nhogs

    def hog(i):
        while not state["stop"]:
            counts[i] += 1

    hogs = [threading.Thread(target=hog, args=(i,)) for i in range(nhogs)]
    for h in hogs:
        h.start()
    time.sleep(0.005)
    t0, c0 = now(), sum(counts)
    time.sleep(SIZES["solo"] / CHUNKS)
    t1, c1 = now(), sum(counts)
    trips, secs = io_trips(sock, SIZES["trips"] // CHUNKS, SIZES["cap"] / CHUNKS)
    t2, c2 = now(), sum(counts)
    state["stop"] = True
    for h in hogs:
        h.join()
    for k, v in enumerate((c1 - c0, t1 - t0, c2 - c1, t2 - t1, trips, secs)):
        acc[k] += v


def convoy():
    sock, pid = echo_pair()
    alone = [0, 0.0]
    one, two = [0] * 6, [0] * 6
    for _ in range(CHUNKS):
        trips, secs = io_trips(sock, SIZES["trips"] // CHUNKS, 60)
        alone[0] += trips
        alone[1] += secs
        convoy_chunk(sock, 1, one)
        convoy_chunk(sock, 2, two)
    a = alone[1] / alone[0]
    for n, acc in ((1, one), (2, two)):
        solo, busy = acc[0] / acc[1], acc[2] / acc[3]
        result("convoy", "io_ratio_%dhog" % n, acc[5] / acc[4] / a)
        result("convoy", "hog_pct_%dhog" % n, busy / solo * 100 if solo > 0 else 0)
    result("convoy", "io_us_alone", a * 1e6)
    result("convoy", "trips_1hog", one[4])
    result("convoy", "trips_2hog", two[4])
    sock.close()
    os.waitpid(pid, 0)


def main():
    print("INFO variant %s outside anchor: Python %s (%s), switch interval %g ms"
          % (VARIANT, platform.python_version(), sys.executable, sys.getswitchinterval() * 1000),
          flush=True)
    cases = [
        ("thread_pass", lambda: thread_pass(SIZES["passes"])),
        ("pipe", lambda: pipe_case(SIZES["trips"])),
        ("mutex_10", lambda: mutex_case(10, SIZES["mutex_ops"])),
        ("mutex_100", lambda: mutex_case(100, SIZES["mutex_ops"])),
        ("busy_flag", busy_flag),
        ("wakeup", wakeup),
        ("convoy", convoy),
    ]
    for name, fn in cases:
        t0 = now()
        for r in range(RUNS):
            fn()
            print("DONE %s %s %d" % (name, VARIANT, r + 1), flush=True)
        print("[python] %-12s %d run(s) done in %.1f s" % (name, RUNS, now() - t0), file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check a gvloop trace file (Trace Event Format JSON).

Always checked:
  - the file parses with Python's json module and has traceEvents;
  - every event has the fields its phase needs;
  - per track (pid, tid): events are in time order; complete spans (X)
    nest or follow each other; B/E pairs match;
  - per thread, the GVL state spans never overlap;
  - across threads, no two holds overlap (one holder at a time);
  - every flow start has its finish and the reverse;
  - no GVL state starts at the trace's origin (ts 0) unless it is a hold
    held before the trace: an event older than the trace would show there.

Several files may be given; each gets the same checks.

Options add checks of a known scenario:
  --holders A,B,A      the thread names of the holds, in time order
  --lost N             otherData.lost_events == N
  --holds N            the number of hold spans == N
  --unmatched N        otherData.unmatched_ends == N
  --has NAME@THREAD    an event named NAME on a track of thread THREAD
                       (repeatable); NAME may contain spaces
  --reason THREAD:K:R  the K-th hold (from 1) of THREAD ended for reason R
  --handoff A:B        at least one handoff flow from thread A to thread B
  --preempt A:B        a preempt request on A's track made by B
  --arg NAME@THREAD:K=V  an event NAME on THREAD whose args[K] is V
                       (compared as strings)
  --from THREAD:K:A    the K-th hold of THREAD says it came from thread A
                       (args.from); A "-": it does not say
  --to THREAD:K:A      the same for args.handoff_to
  --flows N            the number of handoff arrows == N
Exit status 0 when every check passes; otherwise the failures are printed.
"""
import argparse
import json
import sys
from collections import defaultdict

GVL_STATES = {"wait", "wait boosted", "wake-up", "hold", "hold boosted",
              "blocking", "cond wait"}
failures = []


def fail(msg):
    failures.append(msg)


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise SystemExit(f"{path}: no traceEvents list")
    return doc


def thread_names(events):
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
            names[e["tid"]] = e["args"]["name"]
    return names


def check_fields(events):
    for e in events:
        ph = e.get("ph")
        if ph is None or "pid" not in e or "tid" not in e:
            fail(f"event without ph/pid/tid: {e}")
            continue
        if ph != "M" and not isinstance(e.get("ts"), (int, float)):
            fail(f"event without numeric ts: {e}")
        if ph == "X" and not (isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0):
            fail(f"X event without dur >= 0: {e}")
        if ph in ("s", "f") and "id" not in e:
            fail(f"flow event without id: {e}")


def check_tracks(events):
    """Per (pid, tid): B/E in time order (the format needs them in file
    order), matched; complete spans (X, any order in the file) nest."""
    tracks = defaultdict(list)
    for e in events:
        if e.get("ph") in ("X", "B", "E", "i"):
            tracks[(e["pid"], e["tid"])].append(e)
    eps = 1e-6
    for key, evs in tracks.items():
        stack = []      # open X ends
        for e in sorted((e for e in evs if e["ph"] == "X"),
                        key=lambda e: (e["ts"], -e["dur"])):
            ts, end = e["ts"], e["ts"] + e["dur"]
            while stack and stack[-1] <= ts + eps:
                stack.pop()
            if stack and end > stack[-1] + eps:
                fail(f"track {key}: X {e['name']} [{ts},{end}] overlaps "
                     f"an enclosing span ending at {stack[-1]}")
            stack.append(end)
        last_ts = None
        bstack = []     # open B events
        for e in evs:
            ts = e["ts"]
            if e["ph"] in ("B", "E"):
                if last_ts is not None and ts + eps < last_ts:
                    fail(f"track {key}: {e['ph']} {e['name']} at {ts} before {last_ts}")
                last_ts = ts
            if e["ph"] == "B":
                bstack.append(e)
            elif e["ph"] == "E":
                if not bstack:
                    fail(f"track {key}: E at {ts} without B")
                else:
                    b = bstack.pop()
                    if ts + eps < b["ts"]:
                        fail(f"track {key}: E before its B")
        if bstack:
            fail(f"track {key}: {len(bstack)} B without E")
    return tracks


def gvl_spans(events):
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == "gvl"
            and e.get("name") in GVL_STATES]


def check_states(events):
    per = defaultdict(list)
    for e in gvl_spans(events):
        per[(e["pid"], e["tid"])].append(e)
    for key, evs in per.items():
        evs.sort(key=lambda e: e["ts"])
        for a, b in zip(evs, evs[1:]):
            if a["ts"] + a["dur"] > b["ts"] + 1e-6:
                fail(f"thread {key}: {a['name']} overlaps {b['name']} at {b['ts']}")
    holds = sorted((e for e in gvl_spans(events) if e["name"].startswith("hold")),
                   key=lambda e: e["ts"])
    for a, b in zip(holds, holds[1:]):
        if a["ts"] + a["dur"] > b["ts"] + 1e-6:
            fail(f"two holders at once: tid {a['tid']} until {a['ts'] + a['dur']}, "
                 f"tid {b['tid']} from {b['ts']}")
    return holds


def check_origin(events):
    for e in gvl_spans(events):
        if e["ts"] == 0 and not e.get("args", {}).get("held_before_trace"):
            fail(f"{e['name']} of tid {e['tid']} starts at the origin: "
                 f"an event older than the trace was recorded in it")


def check_flows(events):
    starts = {e["id"]: e for e in events if e.get("ph") == "s"}
    ends = {e["id"]: e for e in events if e.get("ph") == "f"}
    for i in starts.keys() - ends.keys():
        fail(f"flow {i} starts but never finishes")
    for i in ends.keys() - starts.keys():
        fail(f"flow {i} finishes but never starts")
    return starts, ends


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--holders")
    ap.add_argument("--lost", type=int)
    ap.add_argument("--holds", type=int)
    ap.add_argument("--unmatched", type=int)
    ap.add_argument("--has", action="append", default=[])
    ap.add_argument("--reason", action="append", default=[])
    ap.add_argument("--handoff", action="append", default=[])
    ap.add_argument("--preempt", action="append", default=[])
    ap.add_argument("--arg", action="append", default=[])
    ap.add_argument("--from", dest="from_", action="append", default=[])
    ap.add_argument("--to", action="append", default=[])
    ap.add_argument("--flows", type=int)
    a = ap.parse_intermixed_args()
    bad = 0
    for path in a.files:
        bad |= check_file(a, path)
    return bad


def check_file(a, path):
    failures.clear()
    doc = load(path)
    events = doc["traceEvents"]
    other = doc.get("otherData", {})
    names = thread_names(events)
    check_fields(events)
    check_tracks(events)
    holds = check_states(events)
    check_origin(events)
    starts, ends = check_flows(events)

    def name_of(tid):
        return names.get(tid, str(tid))

    if a.holders is not None:
        got = [name_of(h["tid"]) for h in holds]
        want = a.holders.split(",") if a.holders else []
        if got != want:
            fail(f"holders {got}, expected {want}")
    if a.holds is not None and len(holds) != a.holds:
        fail(f"{len(holds)} holds, expected {a.holds}")
    if a.lost is not None and other.get("lost_events") != a.lost:
        fail(f"lost_events {other.get('lost_events')}, expected {a.lost}")
    if a.unmatched is not None and other.get("unmatched_ends") != a.unmatched:
        fail(f"unmatched_ends {other.get('unmatched_ends')}, expected {a.unmatched}")
    for spec in a.has:
        name, _, thread = spec.rpartition("@")
        if not any(e.get("name") == name and e.get("ph") != "M"
                   and name_of(e.get("tid")) == thread for e in events):
            fail(f"no event {name!r} on thread {thread}")
    for spec in a.reason:
        thread, k, why = spec.split(":", 2)
        mine = [h for h in holds if name_of(h["tid"]) == thread]
        k = int(k)
        if len(mine) < k:
            fail(f"{thread} has {len(mine)} holds, wanted hold {k}")
        elif mine[k - 1]["args"].get("reason") != why:
            fail(f"{thread} hold {k} reason {mine[k - 1]['args'].get('reason')!r}, "
                 f"expected {why!r}")
    for spec in a.handoff:
        src, dst = spec.split(":")
        if not any(name_of(s["tid"]) == src and i in ends and name_of(ends[i]["tid"]) == dst
                   for i, s in starts.items()):
            fail(f"no handoff flow {src} -> {dst}")
    for spec in a.preempt:
        target, by = spec.split(":")
        if not any(e.get("name") == "preempt request" and name_of(e["tid"]) == target
                   and name_of(e["args"].get("by")) == by for e in events):
            fail(f"no preempt request on {target} by {by}")

    for key, specs in (("from", a.from_), ("handoff_to", a.to)):
        for spec in specs:
            thread, k, want = spec.split(":", 2)
            mine = [h for h in holds if name_of(h["tid"]) == thread]
            k = int(k)
            if len(mine) < k:
                fail(f"{thread} has {len(mine)} holds, wanted hold {k}")
                continue
            got = mine[k - 1]["args"].get(key)
            got = "-" if got is None else name_of(got)
            if got != want:
                fail(f"{thread} hold {k} {key} {got!r}, expected {want!r}")
    if a.flows is not None and len(starts) != a.flows:
        fail(f"{len(starts)} handoff arrows, expected {a.flows}")

    for spec in a.arg:
        what, _, kv = spec.rpartition(":")
        name, _, thread = what.rpartition("@")
        key, _, val = kv.partition("=")
        if not any(e.get("name") == name and name_of(e.get("tid")) == thread
                   and str(e.get("args", {}).get(key)) == val for e in events):
            fail(f"no event {name!r} on {thread} with {key}={val}")

    if failures:
        for f in failures:
            print(f"{path}: {f}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

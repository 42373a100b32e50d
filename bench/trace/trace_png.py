#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Draw gvloop traces (Trace Event Format JSON, from gvl-trace) as a PNG timeline.

    trace_png.py [options] TRACE.json [TRACE.json ...] OUT.png

One panel per trace, stacked; in each panel one row per thread, labelled
with the thread's name and its share of GVL time and median wait over the
window.  Each row shows the thread's GVL states (hold, wait, wake-up,
blocking region, cond wait; the boosted variants only where the lock has a
boost), preempt requests (black marks above the row), handoffs (grey lines
from the releaser's row to the receiver's) and, in a thin strip under the
row, the spans recorded by other layers (evloop, Tk, host callbacks).
Each panel's legend lists only what that panel shows.

Options:
    --title TEXT       title of the next panel (repeat, in input order)
    --window A:B       show only A..B milliseconds from the trace start
    --width PX         image width (default 1400)
    --check            after writing, read the PNG back and verify it

Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json
import struct
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
except ImportError:
    sys.exit("trace_png.py needs matplotlib (Debian: apt-get install python3-matplotlib)")

# State -> (colour, legend text).  The order is the legend's.
STATES = {
    "hold": ("#2ca02c", "hold (runs with the GVL)"),
    "hold boosted": ("#d62728", "hold, boosted"),
    "wait": ("#f0c419", "wait for the GVL"),
    "wait boosted": ("#ff7f0e", "wait, boosted"),
    "wake-up": ("#a0a0a0", "wake-up (handed the GVL, not running yet)"),
    "blocking": ("#4a78d2", "blocking call (GVL released)"),
    "cond wait": ("#9467bd", "cond wait (GVL released)"),
}
# Drawn in this order, so that a one-pixel hold is not hidden by the wait
# and wake-up next to it.
DRAW_ORDER = ["wait", "wait boosted", "wake-up", "blocking", "cond wait",
              "hold", "hold boosted"]
LAYER, HANDOFF, PREEMPT = "#78b4be", "#6a7ba2", "#000000"
DPI = 100


# ---- reading a trace ------------------------------------------------------------

class Trace:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        evs = doc["traceEvents"]
        self.other = doc.get("otherData", {})
        self.names, self.spans, self.ticks, self.flows = {}, [], [], {}
        tids, end = [], 0.0
        for e in evs:
            ph = e.get("ph")
            if ph == "M" and e.get("name") == "thread_name":
                self.names[e["tid"]] = e["args"]["name"]
            if ph == "M" or "ts" not in e:
                continue
            end = max(end, e["ts"] + e.get("dur", 0))
            # GVL states: the tracer's own (pid 1), or spans of category
            # "gvl" recorded by a program that measured them itself.
            gvl = ph == "X" and e.get("cat") == "gvl" and e["name"] in STATES
            if gvl and e["tid"] not in tids:
                tids.append(e["tid"])
            if gvl:
                self.spans.append((e["tid"], e["ts"], e["ts"] + e["dur"], e["name"]))
            elif ph == "i" and e["name"] == "preempt request":
                self.ticks.append((e["tid"], e["ts"]))
            elif ph in ("s", "f"):
                self.flows.setdefault(e["id"], {})[ph] = (e["tid"], e["ts"])
        self.layer = self._layer_spans(evs)
        for tid, _, _ in self.layer:
            if tid not in tids:
                tids.append(tid)
        self.tids = tids
        self.end = end

    @staticmethod
    def _layer_spans(evs):
        out, stacks = [], {}
        for e in evs:
            if e.get("pid") != 2:
                continue
            st = stacks.setdefault(e["tid"], [])
            if e["ph"] == "B":
                st.append(e["ts"])
            elif e["ph"] == "E" and st:
                out.append((e["tid"], st.pop(), e["ts"]))
            elif e["ph"] == "i":
                out.append((e["tid"], e["ts"], e["ts"]))
            elif e["ph"] == "X" and e.get("cat") != "gvl":
                out.append((e["tid"], e["ts"], e["ts"] + e["dur"]))
        return out


# ---- figures over the window ------------------------------------------------------

def fmt_us(us):
    if us < 1000:
        return f"{us:.0f} µs" if us >= 10 else f"{us:.1f} µs"
    return f"{us / 1000:.1f} ms"


def row_stats(tr, tid, a_us, b_us):
    """Share of the window holding the GVL, and the median wait (a wait and
    the wake-up that ends it count as one)."""
    held, waits, last_end = 0.0, [], None
    for t, s, e, name in sorted(tr.spans, key=lambda x: x[1]):
        if t != tid or e < a_us or s > b_us:
            continue
        if name.startswith("hold"):
            held += min(e, b_us) - max(s, a_us)
        elif name == "wake-up" and waits and last_end == s:
            waits[-1] += e - s
        elif name.startswith("wait") or name == "wake-up":
            waits.append(e - s)
        last_end = e
    waits.sort()
    text = f"holds {100 * held / max(b_us - a_us, 1e-9):.0f}%"
    if waits:
        text += f", wait p50 {fmt_us(waits[len(waits) // 2])}"
    return text


# ---- drawing ----------------------------------------------------------------------

ROW_IN, HEAD_IN = 0.62, 0.75      # inches per thread row, per panel heading


def legend_rows(tr):
    return (len({name for _, _, _, name in tr.spans}) + bool(tr.layer) +
            bool(tr.flows) + bool(tr.ticks))


def panel_inches(tr):
    """Room for the rows, and for the legend beside them."""
    return HEAD_IN + max(max(len(tr.tids), 1) * ROW_IN, 0.17 * legend_rows(tr))


def clip(spans, a_us, b_us):
    for s, e in spans:
        if e >= a_us and s <= b_us:
            yield max(s, a_us), min(e, b_us)


def draw_panel(ax, tr, title, win, width_px):
    a, b = win if win else (0.0, tr.end / 1000.0)
    a_us, b_us = a * 1000.0, b * 1000.0
    # A span shorter than a pixel is drawn one pixel wide: a 20 µs hold in
    # a 200 ms window must still show.
    min_ms = (b - a) / max(width_px, 1)
    n = len(tr.tids)
    rows = {tid: n - 1 - i for i, tid in enumerate(tr.tids)}   # first on top
    ms = lambda us: (us - a_us) / 1000.0                          # noqa: E731
    shown = set()
    for name in DRAW_ORDER:
        colour = STATES[name][0]
        for tid in tr.tids:
            bars = [(ms(s), max(ms(e) - ms(s), min_ms))
                    for s, e in clip([(s, e) for t, s, e, nm in tr.spans
                                      if t == tid and nm == name], a_us, b_us)]
            if bars:
                ax.broken_barh(bars, (rows[tid] - 0.3, 0.6), facecolors=colour,
                               linewidth=0)
                shown.add(name)
    extra = []
    for tid in tr.tids:
        bars = [(ms(s), max(ms(e) - ms(s), min_ms))
                for s, e in clip([(s, e) for t, s, e in tr.layer if t == tid], a_us, b_us)]
        if bars:
            ax.broken_barh(bars, (rows[tid] - 0.42, 0.08), facecolors=LAYER, linewidth=0)
            if "layer" not in extra:
                extra.append("layer")
    xs, ys0, ys1 = [], [], []
    for fl in tr.flows.values():
        if "s" in fl and "f" in fl:
            (ta, _), (tb, sb) = fl["s"], fl["f"]
            if a_us <= sb <= b_us and ta in rows and tb in rows:
                lo, hi = sorted((rows[ta], rows[tb]))
                xs.append(ms(sb))
                ys0.append(lo + 0.3)
                ys1.append(hi - 0.3)
    if xs:
        ax.vlines(xs, ys0, ys1, colors=HANDOFF, linewidth=0.5, alpha=0.6)
        extra.append("handoff")
    px = [(ms(ts), rows[tid] + 0.36) for tid, ts in tr.ticks
          if a_us <= ts <= b_us and tid in rows]
    if px:
        ax.plot([p[0] for p in px], [p[1] for p in px], linestyle="none",
                marker="v", markersize=3.5, color=PREEMPT)
        extra.append("preempt")

    ax.set_xlim(0, b - a)
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_yticks([rows[t] for t in tr.tids])
    ax.set_yticklabels([f"{tr.names.get(t, str(t))}\n{row_stats(tr, t, a_us, b_us)}"
                        for t in tr.tids], fontsize=9)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#e4e4e4", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel(f"ms (from {a:g} ms after the trace's start)", fontsize=9)
    lost = tr.other.get("lost_events", 0)
    head = f"{title}  ·  {b - a:.3g} ms shown"
    if lost:
        head += f"  ·  {lost} events lost (buffer full)"
    ax.set_title(head, loc="left", fontsize=11, fontweight="bold")

    handles = [Patch(color=c, label=text) for s, (c, text) in STATES.items() if s in shown]
    if "layer" in extra:
        handles.append(Patch(color=LAYER, label="evloop / Tk / host spans"))
    if "handoff" in extra:
        handles.append(Line2D([], [], color=HANDOFF, linewidth=1, label="handoff"))
    if "preempt" in extra:
        handles.append(Line2D([], [], color=PREEMPT, marker="v", linestyle="none",
                              markersize=4, label="preempt request"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0),
              fontsize=8.5, frameon=False, borderaxespad=0)


def render(traces, titles, out, width, win):
    w_in = width / DPI
    h_in = 0.2 + sum(panel_inches(t) for t in traces)
    fig = plt.figure(figsize=(w_in, h_in), dpi=DPI)
    top = 1.0 - 0.1 / h_in
    left, right = 2.1 / w_in, 1.0 - 3.1 / w_in
    for tr, title in zip(traces, titles):
        ph = panel_inches(tr) / h_in
        axes_h = (panel_inches(tr) - HEAD_IN) / h_in
        ax = fig.add_axes([left, top - ph + 0.45 / h_in, right - left, axes_h])
        draw_panel(ax, tr, title, win, (right - left) * w_in * DPI)
        top -= ph
    fig.savefig(out, dpi=DPI)
    plt.close(fig)
    return round(w_in * DPI), round(h_in * DPI)


def check_png(path, w, h):
    """Read the file back: the PNG signature, the size in its header, and
    the pixels through matplotlib's own reader."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise SystemExit(f"{path}: not a PNG")
    dims = struct.unpack(">II", data[16:24])
    if dims != (w, h):
        raise SystemExit(f"{path}: {dims[0]}x{dims[1]}, expected {w}x{h}")
    px = plt.imread(path)
    if px.shape[:2] != (h, w) or px.min() == px.max():
        raise SystemExit(f"{path}: unreadable or blank")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--title", action="append", default=[])
    ap.add_argument("--window")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if len(a.files) < 2:
        ap.error("need at least one trace and the output file")
    *inputs, out = a.files
    win = None
    if a.window:
        lo, hi = (float(v) for v in a.window.split(":"))
        if hi <= lo:
            ap.error("--window A:B needs A < B")
        win = (lo, hi)
    traces = [Trace(p) for p in inputs]
    titles = a.title + [p.rsplit("/", 1)[-1] for p in inputs[len(a.title):]]
    w, h = render(traces, titles, out, max(a.width, 600), win)
    if a.check:
        check_png(out, w, h)
    return 0


if __name__ == "__main__":
    sys.exit(main())

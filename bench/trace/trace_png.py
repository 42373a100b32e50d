#!/usr/bin/env python3
"""Render gvloop trace files (Trace Event Format JSON) as a PNG strip chart.

    trace_png.py [options] TRACE.json [TRACE.json ...] OUT.png

One panel per trace, stacked; in each panel one row per thread:
    hold (green), hold boosted (red), wait (yellow), wait boosted (orange),
    wake-up (grey: handed the GVL, not running yet), blocking region (blue), cond wait (purple), preempt request (black
    tick above the row), handoff (grey line from the releaser's row to the
    receiver's), and below each row a thin strip with the spans recorded by
    other layers (evloop, Tk, host callbacks).

Options:
    --title TEXT       title of the next panel (repeat, in input order)
    --window A:B       show only A..B milliseconds from the trace start
    --width PX         image width (default 1400)
    --check            after writing, read the PNG back and verify it

Only the Python standard library is used (json, zlib, struct); text is drawn
with a built-in 3x5 pixel font.
"""
import argparse
import json
import struct
import sys
import zlib

# ---- a 3x5 font: rows of 3 bits, top to bottom --------------------------------
FONT = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111",
    "3": "111001111001111", "4": "101101111001001", "5": "111100111001111",
    "6": "111100111101111", "7": "111001001001001", "8": "111101111101111",
    "9": "111101111001111", "A": "010101111101101", "B": "110101110101110",
    "C": "011100100100011", "D": "110101101101110", "E": "111100110100111",
    "F": "111100110100100", "G": "011100101101011", "H": "101101111101101",
    "I": "111010010010111", "J": "001001001101010", "K": "101101110101101",
    "L": "100100100100111", "M": "101111111101101", "N": "110101101101101",
    "O": "010101101101010", "P": "110101110100100", "Q": "010101101110011",
    "R": "110101110101101", "S": "011100010001110", "T": "111010010010010",
    "U": "101101101101111", "V": "101101101101010", "W": "101101111111101",
    "X": "101101010101101", "Y": "101101010010010", "Z": "111001010100111",
    " ": "000000000000000", ".": "000000000000010", ",": "000000000010100",
    ":": "000010000010000", "-": "000000111000000", "_": "000000000000111",
    "%": "101001010100101", "(": "010100100100010", ")": "010001001001010",
    "/": "001001010100100", "=": "000111000111000", "+": "000010111010000",
    "#": "101111101111101", ">": "100010001010100", "<": "001010100010001",
    "?": "111001010000010", "'": "010010000000000", '"': "101101000000000",
}

COLORS = {
    "hold": (46, 160, 67), "hold boosted": (214, 39, 40),
    "wait": (240, 200, 40), "wait boosted": (255, 127, 14),
    "wake-up": (160, 160, 160),
    "blocking": (70, 120, 210), "cond wait": (148, 103, 189),
}
LEGEND = ["hold", "hold boosted", "wait", "wait boosted", "wake-up", "blocking",
          "cond wait"]
BG, FG, GRID = (255, 255, 255), (20, 20, 20), (225, 225, 225)
LAYER, HANDOFF, PREEMPT = (120, 180, 190), (150, 150, 150), (0, 0, 0)


class Image:
    def __init__(self, w, h):
        self.w, self.h = w, h
        self.px = bytearray(bytes(BG) * (w * h))

    def rect(self, x0, y0, x1, y1, c):
        x0, x1 = max(0, int(x0)), min(self.w, int(x1))
        y0, y1 = max(0, int(y0)), min(self.h, int(y1))
        if x1 <= x0 or y1 <= y0:
            return
        row = bytes(c) * (x1 - x0)
        for y in range(y0, y1):
            o = (y * self.w + x0) * 3
            self.px[o:o + len(row)] = row

    def text(self, x, y, s, c=FG, scale=2):
        for ch in s.upper():
            g = FONT.get(ch, FONT["?"])
            for i, bit in enumerate(g):
                if bit == "1":
                    cx, cy = x + (i % 3) * scale, y + (i // 3) * scale
                    self.rect(cx, cy, cx + scale, cy + scale, c)
            x += 4 * scale
        return x

    def png(self):
        raw = b"".join(b"\0" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3])
                       for y in range(self.h))

        def chunk(tag, data):
            return (struct.pack(">I", len(data)) + tag + data +
                    struct.pack(">I", zlib.crc32(tag + data) & 0xffffffff))
        return (b"\x89PNG\r\n\x1a\n" +
                chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def text_width(s, scale=2):
    return 4 * scale * len(s)


# ---- reading a trace ------------------------------------------------------------

class Trace:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        evs = doc["traceEvents"]
        self.other = doc.get("otherData", {})
        self.names, self.spans, self.layer, self.ticks = {}, [], [], []
        self.flows = {}
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
            gvl = ph == "X" and e.get("cat") == "gvl" and e["name"] in COLORS
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


# ---- drawing ----------------------------------------------------------------------

ROW, LAYER_H, GAP, LABEL_W, MARGIN = 22, 5, 10, 190, 12


def panel_height(tr):
    return 30 + len(tr.tids) * (ROW + LAYER_H + GAP) + 34


def nice_step(span_ms, target=10):
    raw = span_ms / target
    for e in range(-4, 7):
        for m in (1, 2, 5):
            if m * 10 ** e >= raw:
                return m * 10 ** e
    return raw


def fmt_us(us):
    return f"{us:.0f} US" if us < 1000 else f"{us / 1000:.1f} MS"


def summary(tr, a_us, b_us):
    """Per thread, over the window: share of time holding, median wait."""
    out = []
    for tid in tr.tids:
        held, waits, last_end = 0.0, [], None
        for t, s, e, name in sorted(tr.spans, key=lambda x: x[1]):
            if t != tid or e < a_us or s > b_us:
                continue
            if name.startswith("hold"):
                held += min(e, b_us) - max(s, a_us)
            elif name == "wake-up" and waits and last_end == s:
                waits[-1] += e - s     # the rest of the same wait
            elif name.startswith("wait") or name == "wake-up":
                waits.append(e - s)
            last_end = e
        waits.sort()
        text = f"{tr.names.get(tid, str(tid))[:16]}: HOLDS {100 * held / max(b_us - a_us, 1e-9):.0f}%"
        if waits:
            text += f" WAIT P50 {fmt_us(waits[len(waits) // 2])}"
        out.append(text)
    return "   ".join(out)


def draw_panel(img, tr, y0, title, win):
    a, b = win if win else (0.0, tr.end / 1000.0)
    a_us, b_us = a * 1000.0, b * 1000.0
    x0, x1 = LABEL_W, img.w - MARGIN

    def X(us):
        return x0 + (us - a_us) * (x1 - x0) / max(b_us - a_us, 1e-9)

    lost = tr.other.get("lost_events", 0)
    head = f"{title}   {b - a:.1f} MS" + (f"   LOST EVENTS {lost}" if lost else "")
    x = img.text(MARGIN, y0 + 6, head, FG, 2)
    img.text(x + 24, y0 + 6, summary(tr, a_us, b_us), (90, 90, 90), 2)
    top = y0 + 30
    rows = {tid: top + i * (ROW + LAYER_H + GAP) for i, tid in enumerate(tr.tids)}
    step = nice_step(b - a)
    t = (int(a / step) + 1) * step if a % step else a
    bottom = top + len(tr.tids) * (ROW + LAYER_H + GAP)
    while t <= b + 1e-9:
        x = X(t * 1000.0)
        img.rect(x, top, x + 1, bottom, GRID)
        label = f"{t - a:g}"
        img.text(x - text_width(label) / 2, bottom + 4, label, FG, 2)
        t += step
    img.text(x1 - text_width("MS"), bottom + 18, "MS", FG, 2)
    for tid, y in rows.items():
        name = tr.names.get(tid, str(tid))[:22]
        img.text(MARGIN, y + 6, name, FG, 2)
    for tid, s, e, name in tr.spans:
        if e < a_us or s > b_us or tid not in rows:
            continue
        xs, xe = X(max(s, a_us)), X(min(e, b_us))
        img.rect(xs, rows[tid], max(xe, xs + 1), rows[tid] + ROW, COLORS[name])
    for tid, s, e in tr.layer:
        if e < a_us or s > b_us or tid not in rows:
            continue
        xs, xe = X(max(s, a_us)), X(min(e, b_us))
        y = rows[tid] + ROW + 1
        img.rect(xs, y, max(xe, xs + 1), y + LAYER_H, LAYER)
    for fl in tr.flows.values():
        if "s" not in fl or "f" not in fl:
            continue
        (ta, sa), (tb, sb) = fl["s"], fl["f"]
        if sb < a_us or sa > b_us or ta not in rows or tb not in rows:
            continue
        x = X(sb)
        ya, yb = sorted((rows[ta] + ROW // 2, rows[tb] + ROW // 2))
        img.rect(x, ya, x + 1, yb, HANDOFF)
    for tid, ts in tr.ticks:
        if a_us <= ts <= b_us and tid in rows:
            x = X(ts)
            img.rect(x - 1, rows[tid] - 4, x + 2, rows[tid], PREEMPT)


def draw_legend(img, y):
    x = MARGIN
    for name in LEGEND:
        img.rect(x, y, x + 14, y + 10, COLORS[name])
        x = img.text(x + 18, y, name, FG, 2) + 14
    img.rect(x, y - 2, x + 3, y + 10, PREEMPT)
    x = img.text(x + 8, y, "preempt request", FG, 2) + 14
    img.rect(x, y + 3, x + 14, y + 7, LAYER)
    x = img.text(x + 18, y, "evloop/tk spans", FG, 2) + 14
    img.rect(x, y - 2, x + 1, y + 12, HANDOFF)
    img.text(x + 6, y, "handoff", FG, 2)


def render(traces, titles, out, width, win):
    height = 30 + sum(panel_height(t) for t in traces) + MARGIN
    img = Image(width, height)
    draw_legend(img, 10)
    y = 30
    for tr, title in zip(traces, titles):
        draw_panel(img, tr, y, title, win)
        y += panel_height(tr)
        img.rect(0, y - 4, width, y - 3, GRID)
    with open(out, "wb") as f:
        f.write(img.png())
    return width, height


def check_png(path, w, h):
    """Read the file back: signature, IHDR, and IDAT that inflates to
    exactly h rows of 1 + 3w bytes."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, dims = 8, b"", None
    while pos < len(data):
        n, = struct.unpack(">I", data[pos:pos + 4])
        tag, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        if zlib.crc32(tag + body) & 0xffffffff != crc:
            raise SystemExit(f"{path}: bad CRC in {tag}")
        if tag == b"IHDR":
            dims = struct.unpack(">II", body[:8])
        elif tag == b"IDAT":
            idat += body
        pos += 12 + n
    if dims != (w, h) or len(zlib.decompress(idat)) != h * (1 + 3 * w):
        raise SystemExit(f"{path}: wrong size")


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
        win = (lo, hi)
    traces = [Trace(p) for p in inputs]
    titles = a.title + [p.rsplit("/", 1)[-1] for p in inputs[len(a.title):]]
    w, h = render(traces, titles, out, max(a.width, 400), win)
    if a.check:
        check_png(out, w, h)
    return 0


if __name__ == "__main__":
    sys.exit(main())

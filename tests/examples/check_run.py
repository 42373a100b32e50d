#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_run.py -- run an example and check what it did.

  check_run.py [--status N] [--expect REGEX]... [--png FILE WxH]
               [--need PROGRAM]... [--unset-display] [--no-stderr] -- CMD [ARG...]

Passes (exit 0) when CMD exits with status N (default 0), its output
(stdout and stderr together; with --no-stderr stdout alone, and stderr
must be empty) matches every REGEX (multi-line mode), and, with --png,
FILE is a PNG of exactly W x H pixels that is not uniform.
Exits 77 (ctest: skipped) when a --need program is not installed.
The PNG is decoded with the standard library only (zlib), so the check
does not depend on the tool that wrote it.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib


def fail(msg, out=""):
    if out:
        sys.stdout.write(out)
    print("FAIL: " + msg)
    sys.exit(1)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path):
    """Return (width, height, bytes per pixel, rows of unfiltered bytes)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + " is not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    if ihdr is None:
        fail(path + ": no IHDR")
    w, h, depth, ctype, _, _, interlace = ihdr
    if interlace:
        fail(path + ": interlaced PNG not supported by this check")
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(ctype)
    if channels is None:
        fail(path + ": unknown colour type %d" % ctype)
    bpp = max(1, channels * depth // 8)
    stride = (w * channels * depth + 7) // 8
    raw = zlib.decompress(idat)
    rows, prev = [], bytearray(stride)
    for y in range(h):
        off = y * (stride + 1)
        ftype, line = raw[off], bytearray(raw[off + 1:off + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                line[i] = (line[i] + paeth(a, b, c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def check_png(path, size):
    if not os.path.isfile(path):
        fail("no screenshot at " + path)
    w, h, bpp, rows = read_png(path)
    ew, eh = (int(v) for v in size.split("x"))
    if (w, h) != (ew, eh):
        fail("screenshot is %dx%d, expected %dx%d" % (w, h, ew, eh))
    colours = set()
    for y in range(0, h, 2):
        r = rows[y]
        for x in range(0, len(r) - bpp + 1, bpp * 2):
            colours.add(r[x:x + bpp])
    # A blank or single-colour window has a handful; the demo has hundreds.
    if len(colours) < 16:
        fail("screenshot looks uniform: %d distinct colours" % len(colours))
    print("screenshot ok: %dx%d, %d distinct colours (sampled)" % (w, h, len(colours)))


def main(argv):
    status, expects, png, needs, unset, no_stderr = 0, [], None, [], False, False
    i = 1
    while i < len(argv) and argv[i] != "--":
        a = argv[i]
        if a == "--status":
            status = int(argv[i + 1]); i += 2
        elif a == "--expect":
            expects.append(argv[i + 1]); i += 2
        elif a == "--png":
            png = (argv[i + 1], argv[i + 2]); i += 3
        elif a == "--need":
            needs.append(argv[i + 1]); i += 2
        elif a == "--unset-display":
            unset = True; i += 1
        elif a == "--no-stderr":
            no_stderr = True; i += 1
        else:
            fail("bad option " + a)
    cmd = argv[i + 1:]
    if not cmd:
        fail("no command")
    for prog in needs:
        if shutil.which(prog) is None:
            print("%s not installed: skipped" % prog)
            return 77
    env = dict(os.environ)
    if unset:
        env.pop("DISPLAY", None)
    p = subprocess.run(cmd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE if no_stderr else subprocess.STDOUT, env=env)
    out = p.stdout.decode("utf-8", "replace")
    if no_stderr and p.stderr:
        fail("wrote to stderr: " + p.stderr.decode("utf-8", "replace"), out)
    if p.returncode != status:
        fail("exit status %d, expected %d" % (p.returncode, status), out)
    for rx in expects:
        if not re.search(rx, out, re.M):
            fail("output does not match: " + rx, out)
    sys.stdout.write(out)
    if png:
        check_png(*png)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

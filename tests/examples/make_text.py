#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_text.py FILE LINES -- write a UTF-8 text file for the viewer tests:
LINES lines of varying length, each with a multi-byte character."""
import sys

path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w", encoding="utf-8") as f:
    for i in range(n):
        f.write("line %06d: caf\u00e9 au lait, %s\n" % (i, "x" * (i % 60)))

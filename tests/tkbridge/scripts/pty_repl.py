#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pty_repl.py SHELL REFERENCE: the interactive loop of SHELL on a terminal
(prompts, results, a continued command, tcl_interactive, exit code) gives
the same bytes as REFERENCE (stock tclsh).  Exit 0 if so, 1 if not, 77
when REFERENCE is missing."""
import os
import pty
import re
import select
import shutil
import sys
import time

INPUT = [b"set x 5\n", b"proc f {} {\n", b"return ok}\n", b"f\n",
         b"set tcl_prompt1 {puts -nonewline {gv> }}\n", b"puts $tcl_interactive\n",
         b"exit 4\n"]
# Before each line, wait until the shell has asked for it: that many prompts
# at the start of a line (a continued command gets none, so "return ok}"
# waits for the echo of the line before).  Typing ahead of the prompt would
# make the terminal's echo and the output interleave by timing.
PROMPTS = [1, 2, None, 3, 4, 5, 6]
PROMPT_RE = re.compile(rb"(?:^|\n)(?:% |gv> )")


def session(shell):
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(shell, [shell])
    out = b""

    def drain(ready, secs=30.0):
        """Read until ready(out) holds (or the shell is gone, or secs pass:
        then the comparison fails and shows what came)."""
        nonlocal out
        end = time.time() + secs
        while not ready(out) and time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    out += os.read(fd, 4096)
                except OSError:
                    return False
        return True
    prev = None
    for line, want in zip(INPUT, PROMPTS):
        if want is None:
            echo = prev.replace(b"\n", b"\r\n")
            drain(lambda o, e=echo: o.endswith(e))
        else:
            drain(lambda o, n=want: len(PROMPT_RE.findall(o)) >= n)
        os.write(fd, line)
        prev = line
    drain(lambda o: False, 2.0)
    _, status = os.waitpid(pid, 0)
    return out, os.waitstatus_to_exitcode(status)


def main():
    shell, ref = sys.argv[1], sys.argv[2]
    if not shutil.which(ref):
        print("pty_repl: %s not installed" % ref)
        return 77
    got, want = session(shell), session(ref)
    print("%s: %r" % (shell, got))
    print("%s: %r" % (ref, want))
    return 0 if got == want and got[1] == 4 else 1


if __name__ == "__main__":
    sys.exit(main())

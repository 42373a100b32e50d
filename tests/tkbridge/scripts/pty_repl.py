#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pty_repl.py SHELL REFERENCE: the interactive loop of SHELL on a terminal
(prompts, results, a continued command, tcl_interactive, exit code) gives
the same bytes as REFERENCE (stock tclsh).  Exit 0 if so, 1 if not, 77
when REFERENCE is missing."""
import os
import pty
import select
import shutil
import sys
import time

INPUT = [b"set x 5\n", b"proc f {} {\n", b"return ok}\n", b"f\n",
         b"set tcl_prompt1 {puts -nonewline {gv> }}\n", b"puts $tcl_interactive\n",
         b"exit 4\n"]


def session(shell):
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(shell, [shell])
    out = b""

    def drain(secs):
        nonlocal out
        end = time.time() + secs
        while time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    out += os.read(fd, 4096)
                except OSError:
                    return
    drain(1.0)
    for line in INPUT:
        os.write(fd, line)
        drain(0.5)
    drain(1.0)
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

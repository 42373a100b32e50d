#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tk's and Tcl's own test suites under gvloop's shells and the stock ones.

    conformance.py --gvwish PATH --gvtclsh PATH [--suites DIR] [--only tk,ttk,tcl]
                   [--files 'a.test b.test'] [--jobs N] [--out DIR]
    conformance.py --package DIR [--package-tick MS] [same options]

Runs every test file of Tk 8.6.13 (tests/*.test and tests/ttk/*.test) under
gvwish and stock wish, and of Tcl 8.6.13 under gvtclsh and stock tclsh8.6,
each file as `SHELL all.tcl -file NAME -verbose bpse` in the tests folder of a
fresh copy of the suite tree made for that run (the suites change their own
trees).  Each file has a timeout and runs in its own process group, so a
hang is reported as such and kills nothing else.  Tk runs get a private
Xvfb each.  The runs go on concurrently (--jobs lanes), so a stock run and
its gvloop run see the same machine; a file never runs in two lanes at once
(some tests use fixed paths in /tmp).  Times compared are the files' own.

The verdict compares the two runs of a suite file by file and test by test:
it fails for every test that passed under the stock shell and, under the
gvloop shell, failed, was never reported because its file hung (timeout)
or aborted, or was not reported at all by a file that ended well (it ended
early, or the test's constraints came out otherwise).  A failed or missing
test gets one second chance: its file runs once more
under the gvloop shell (alone, once the lanes are done, so a failure that
only load brings out may pass there), and a test that passes there is
reported as INTERMITTENT but does not fail the check (the stock shells fail
some of Tk's tests now and then too; flaky.txt lists the ones measured).  A
failure that repeats fails the check, and so does a file that hung or
aborted in either run.  Names in flaky.txt are reported but do not fail.
Names in skip.txt are tests that can hang forever by a race of their own;
both shells are told to skip them (tcltest's -skip), so the two runs stay
comparable.
With --package DIR (the folder of gvloop's pkgIndex.tcl) the gvloop side
is the stock shell itself with the Tcl package loaded into the main
interpreter of every shell process the suites start (all.tcl, each file's
child, every exec of the interpreter), and with --package-tick MS a
repeating gvloop::timer of MS ms kept running in each: the package
promises that a stock script sees no difference.  It is loaded by an
init.tcl of a copy of Tcl's library (TCL_LIBRARY; only init.tcl is
copied, the rest linked); the stock side runs on an identical copy with
init.tcl unchanged, so the two differ only in the package.  (tcltest's
-load would reach only the files that call loadTestedCommands.)
Exit status:
0 no regression, 1 regressions, 77 skipped (no suites), 2 usage.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# suite: (tree, folder of all.tcl inside the tree, kind of shell, timeout s)
SUITES = {
    "tk": ("tk-8.6.13", "tests", "wish", 240),
    "ttk": ("tk-8.6.13", "tests/ttk", "wish", 240),
    "tcl": ("tcl-8.6.13", "tests", "tclsh", 300),
}

RE_FAILED = re.compile(r"^==== (\S+) .*FAILED\s*$")
RE_PASSED = re.compile(r"^\+\+\+\+ (\S+) PASSED\s*$")
RE_SKIPPED = re.compile(r"^\+\+\+\+ (\S+) SKIPPED:")
RE_TOTAL = re.compile(r"^all\.tcl:\s+Total\s+(\d+)\s+Passed\s+(\d+)\s+Skipped\s+(\d+)\s+Failed\s+(\d+)")
RE_FILE_ERR = re.compile(r"^Test files exiting with errors:")


def log(msg):
    print(msg, flush=True)


class FileResult:
    def __init__(self, name):
        self.name = name
        self.status = "ok"      # ok | timeout | aborted
        self.passed = set()
        self.failed = set()
        self.skipped = set()
        self.total = None       # (total, passed, skipped, failed)
        self.secs = 0.0


def parse(res, text):
    file_errors = False
    for line in text.splitlines():
        m = RE_FAILED.match(line)
        if m:
            res.failed.add(m.group(1))
            continue
        m = RE_PASSED.match(line)
        if m:
            res.passed.add(m.group(1))
            continue
        m = RE_SKIPPED.match(line)
        if m:
            res.skipped.add(m.group(1))
            continue
        m = RE_TOTAL.match(line)
        if m:
            res.total = tuple(int(x) for x in m.groups())
            continue
        if RE_FILE_ERR.match(line):
            file_errors = True
    # A test reported passed and then failed (a cleanup error) failed.
    res.passed -= res.failed
    if res.status == "ok" and (res.total is None or file_errors):
        res.status = "aborted"


class Xvfb:
    """A private X server; DISPLAY is read back through -displayfd."""

    def __init__(self):
        r, w = os.pipe()
        self.proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(w), "-screen", "0", "1024x768x24",
             "-nolisten", "tcp"],
            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(w)
        with os.fdopen(r) as f:
            num = f.readline().strip()
        if not num:
            self.proc.kill()
            raise RuntimeError("Xvfb did not start")
        self.display = ":" + num

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Run:
    """One suite under one shell: a lane of files run one after another."""

    def __init__(self, suite, which, shell, files, args):
        self.suite, self.which, self.shell = suite, which, shell
        tree, sub, kind, tmo = SUITES[suite]
        self.kind = kind
        self.timeout = args.timeout or tmo
        self.root = os.path.join(args.out, "%s-%s" % (suite, which))
        self.tree = os.path.join(args.suites, tree)
        self.sub = sub
        self.files = files
        self.skip = args.skip
        self.env_extra = dict(args.env_extra.get(which.split("-")[0], {}))
        self.results = {}
        self.secs = 0.0         # the files' own times, waits excluded
        self.wall = 0.0
        self.logdir = os.path.join(self.root, "logs")

    def label(self):
        return "%s/%s" % (self.suite, self.which)

    def prepare(self):
        if os.path.exists(self.root):
            shutil.rmtree(self.root)
        os.makedirs(self.logdir)
        shutil.copytree(self.tree, os.path.join(self.root, "tree"), symlinks=True)

    def run_file(self, name, env):
        res = FileResult(name)
        cwd = os.path.join(self.root, "tree", self.sub)
        logpath = os.path.join(self.logdir, name + ".log")
        t0 = time.monotonic()
        argv = [self.shell, "all.tcl", "-file", name, "-verbose", "bpse"]
        if self.skip:
            argv += ["-skip", " ".join(self.skip)]
        with open(logpath, "wb") as out:
            p = subprocess.Popen(argv,
                cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)
            try:
                p.wait(self.timeout)
            except subprocess.TimeoutExpired:
                res.status = "timeout"
            # The whole group: Tcl's all.tcl runs each file in a child.
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        res.secs = time.monotonic() - t0
        with open(logpath, "rb") as f:
            parse(res, f.read().decode("utf-8", "replace"))
        return res

    def go(self):
        env = dict(os.environ)
        env.pop("ERROR_ON_FAILURES", None)
        env.update(self.env_extra)
        xvfb = None
        if self.kind == "wish":
            xvfb = Xvfb()
            env["DISPLAY"] = xvfb.display
        try:
            self.prepare()
            t0 = time.monotonic()
            for name in self.files:
                # Never the same file in two lanes at once: some tests use
                # fixed names outside their tree (cmdAH's /tmp/touch.me).
                with file_lock(self.suite, name):
                    res = self.run_file(name, env)
                self.results[name] = res
                if res.status != "ok":
                    log("  %s: %s %s after %.0f s" % (self.label(), name, res.status, res.secs))
            self.wall = time.monotonic() - t0
            self.secs = sum(r.secs for r in self.results.values())
            with open(os.path.join(self.root, "times.tsv"), "w") as f:
                for name, res in self.results.items():
                    f.write("%s\t%.2f\t%s\n" % (name, res.secs, res.status))
        finally:
            if xvfb:
                xvfb.close()

    def totals(self):
        t = [0, 0, 0, 0]
        for r in self.results.values():
            if r.total:
                t = [a + b for a, b in zip(t, r.total)]
        return t


_locks = {}
_locks_mu = threading.Lock()


def file_lock(suite, name):
    with _locks_mu:
        return _locks.setdefault((suite, name), threading.Lock())


def list_files(suites_dir, suite):
    tree, sub, _, _ = SUITES[suite]
    d = os.path.join(suites_dir, tree, sub)
    return sorted(f for f in os.listdir(d) if f.endswith(".test"))


def load_names(path):
    """The first word of each line of a list file, comments dropped."""
    names = set()
    if not os.path.exists(path):
        return names
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.add(line.split()[0])
    return names


def compare(stock, gv, flaky):
    """Regressions of gv against stock: a list of (file, test, what)."""
    bad, noted = [], []
    for name, s in stock.results.items():
        g = gv.results.get(name)
        if g is None:
            continue
        if g.status != "ok" and s.status == "ok":
            lost = sorted(t for t in s.passed if t not in g.passed and t not in g.failed)
            what = "%s (%d tests that pass under stock unreported)" % (g.status, len(lost))
            (noted if name in flaky else bad).append((name, "-", what))
        for t in sorted(s.passed & g.failed):
            (noted if t in flaky else bad).append((name, t, "failed"))
        # A file that ends early, or a test whose constraints come out
        # otherwise, leaves tests unreported without an error.
        if g.status == "ok" and s.status == "ok":
            for t in sorted(s.passed - g.passed - g.failed - g.skipped):
                (noted if t in flaky else bad).append((name, t, "not run"))
        for t in sorted(s.passed & g.skipped):
            noted.append((name, t, "skipped under gvloop"))
    for name, g in gv.results.items():
        s = stock.results.get(name)
        if s is not None and s.status == "ok" and g.status == "ok":
            for t in sorted(g.failed - s.failed - s.passed - s.skipped):
                noted.append((name, t, "failed under gvloop, not reported under stock"))
    return bad, noted


def recheck(gv, bad, args):
    """Run the files of gv's regressions once more under the gvloop shell.
    Returns (the regressions that repeat, the ones that did not)."""
    files = sorted({f for f, t, _ in bad if t != "-"})
    if not files:
        return bad, []
    log("conformance: %s: running %s again" % (gv.label(), " ".join(files)))
    again = Run(gv.suite, "gvloop-again", gv.shell, files, args)
    try:
        again.go()
    except Exception as e:  # no second chance then
        log("conformance: %s: ERROR %s" % (again.label(), e))
        return bad, []
    stays, gone = [], []
    for f, t, what in bad:
        # A hang or an abort counts, in either run.
        r = again.results.get(f)
        repeats = t == "-" or r is None or r.status != "ok" or t not in r.passed
        (stays if repeats else gone).append((f, t, what))
    return stays, gone


PRELOAD = """
# conformance.py --package: the main interpreter of every shell loads gvloop.
if {[info exists ::argv0] && ![interp issafe]} {
    apply {{dir tick} {
        source [file join $dir pkgIndex.tcl]
        package require gvloop
        if {$tick > 0} {
            proc ::gvloop::conformance_tick {ms} {
                ::gvloop::timer $ms [list ::gvloop::conformance_tick $ms]
            }
            ::gvloop::conformance_tick $tick
        }
    }} {%s} %d
}
"""


def tcl_library(out, name, tclsh, snippet):
    """A copy of tclsh's script library under out/name: every entry linked
    but init.tcl, copied with snippet appended.  Returns its path."""
    lib = subprocess.run([tclsh], input="puts [info library]", capture_output=True,
                         text=True, check=True).stdout.strip()
    dst = os.path.join(out, name, os.path.basename(lib))
    if os.path.exists(os.path.dirname(dst)):
        shutil.rmtree(os.path.dirname(dst))
    os.makedirs(dst)
    for entry in os.listdir(lib):
        if entry != "init.tcl":
            os.symlink(os.path.join(lib, entry), os.path.join(dst, entry))
    with open(os.path.join(lib, "init.tcl")) as f:
        text = f.read()
    with open(os.path.join(dst, "init.tcl"), "w") as f:
        f.write(text + snippet)
    return dst


def setup_package(args):
    """--package: both sides run the stock shells, on two library copies."""
    pkg = os.path.abspath(args.package)
    if not os.path.isfile(os.path.join(pkg, "pkgIndex.tcl")):
        log("conformance: no pkgIndex.tcl in %s" % pkg)
        return 2
    stock = tcl_library(args.out, "tcllib-stock", args.tclsh, "")
    gv = tcl_library(args.out, "tcllib-package", args.tclsh,
                     PRELOAD % (pkg, args.package_tick))
    args.env_extra = {"stock": {"TCL_LIBRARY": stock}, "gvloop": {"TCL_LIBRARY": gv}}
    probe = subprocess.run([args.tclsh], input="puts [package present gvloop]",
                           capture_output=True, text=True,
                           env=dict(os.environ, TCL_LIBRARY=gv))
    if probe.returncode != 0 or not probe.stdout.strip():
        log("conformance: the package does not load: %s" % (probe.stdout + probe.stderr))
        return 2
    log("conformance: gvloop %s loaded in every shell (tick %d ms)"
        % (probe.stdout.strip(), args.package_tick))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suites", help="GVLOOP_SUITES in the environment wins")
    ap.add_argument("--gvwish")
    ap.add_argument("--gvtclsh")
    ap.add_argument("--package", help="gvloop's pkgIndex.tcl folder: judge the package")
    ap.add_argument("--package-tick", type=int, default=0,
                    help="with --package: a gvloop::timer every MS ms in each shell")
    ap.add_argument("--wish", default=shutil.which("wish8.6") or "wish")
    ap.add_argument("--tclsh", default=shutil.which("tclsh8.6") or "tclsh")
    ap.add_argument("--only", default="tk,ttk,tcl")
    ap.add_argument("--files", default="", help="space-separated file names")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("CONFORMANCE_JOBS", "4")))
    ap.add_argument("--timeout", type=int, default=0, help="per file, seconds")
    ap.add_argument("--out", default="")
    ap.add_argument("--flaky", default=os.path.join(HERE, "flaky.txt"))
    ap.add_argument("--skiplist", default=os.path.join(HERE, "skip.txt"))
    args = ap.parse_args()
    args.env_extra = {}
    if args.package:
        args.gvtclsh, args.gvwish = args.tclsh, args.wish
    elif not (args.gvwish and args.gvtclsh):
        ap.error("give --gvwish and --gvtclsh, or --package")

    if os.environ.get("GVLOOP_SUITES"):
        args.suites = os.environ["GVLOOP_SUITES"]
    if not args.suites or not os.path.isdir(args.suites):
        log("conformance: SKIPPED: the test trees of Tcl/Tk 8.6.13 are not here "
            "(%s); give --suites DIR (CMake: -DGVLOOP_SUITES_DIR=DIR, or GVLOOP_SUITES "
            "in the environment) for a folder holding tcl-8.6.13/ and tk-8.6.13/"
            % (args.suites or "no folder given"))
        return 77
    need = {"wish": [args.wish, args.gvwish], "tclsh": [args.tclsh, args.gvtclsh]}
    suites = [s for s in args.only.split(",") if s]
    if any(s not in SUITES for s in suites):
        log("conformance: unknown suite in --only %s" % args.only)
        return 2
    if any(SUITES[s][2] == "wish" for s in suites) and not shutil.which("Xvfb"):
        log("conformance: SKIPPED: Xvfb is not installed")
        return 77
    for kind in {SUITES[s][2] for s in suites}:
        for exe in need[kind]:
            if not (os.path.isfile(exe) or shutil.which(exe)):
                log("conformance: SKIPPED: %s not found" % exe)
                return 77
    args.suites = os.path.abspath(args.suites)
    if not args.out:
        args.out = tempfile.mkdtemp(prefix="gvloop-conformance-")
    os.makedirs(args.out, exist_ok=True)
    flaky = load_names(args.flaky)
    args.skip = sorted(load_names(args.skiplist))
    if args.package:
        rc = setup_package(args)
        if rc != 0:
            return rc

    pairs = []
    for s in suites:
        files = list_files(args.suites, s)
        if args.files:
            want = set(args.files.split())
            files = [f for f in files if f in want]
        if not files:
            continue
        stock_sh = args.wish if SUITES[s][2] == "wish" else args.tclsh
        gv_sh = args.gvwish if SUITES[s][2] == "wish" else args.gvtclsh
        pairs.append((Run(s, "stock", stock_sh, files, args),
                      Run(s, "gvloop", gv_sh, files, args)))
    runs = [r for p in pairs for r in p]
    log("conformance: %d runs in %d lanes, logs in %s" % (len(runs), args.jobs, args.out))

    # Lanes: a pool of threads taking runs in order (stock and gvloop of a
    # suite side by side, the long suites first).
    queue = list(runs)
    qlock = threading.Lock()
    errors = []

    def lane():
        while True:
            with qlock:
                if not queue:
                    return
                r = queue.pop(0)
            log("conformance: %s started (%d files)" % (r.label(), len(r.files)))
            try:
                r.go()
            except Exception as e:  # a broken run fails the whole check
                errors.append("%s: %s" % (r.label(), e))
            log("conformance: %s done in %.0f s (%.0f s in its files)" % (r.label(), r.wall, r.secs))

    t0 = time.monotonic()
    threads = [threading.Thread(target=lane) for _ in range(max(1, args.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0

    log("")
    rc = 0
    for stock, gv in pairs:
        for r in (stock, gv):
            t = r.totals()
            bad_files = sorted("%s(%s)" % (n, x.status) for n, x in r.results.items()
                               if x.status != "ok")
            log("%-12s %-7s all.tcl:\tTotal\t%d\tPassed\t%d\tSkipped\t%d\tFailed\t%d\t%.0f s%s"
                % (r.suite, r.which, t[0], t[1], t[2], t[3], r.secs,
                   ("  not finished: " + " ".join(bad_files)) if bad_files else ""))
        ratio = gv.secs / stock.secs if stock.secs > 0 else 0
        log("%-12s wall time gvloop/stock %.2f" % (stock.suite, ratio))
        slower = sorted(((g.secs - stock.results[n].secs, n) for n, g in gv.results.items()
                         if n in stock.results), reverse=True)[:5]
        log("%-12s slowest under gvloop against stock: %s" % (stock.suite, ", ".join(
            "%s +%.1f s" % (n, d) for d, n in slower if d > 0.5) or "none"))
        bad, noted = compare(stock, gv, flaky)
        if bad:
            bad, again = recheck(gv, bad, args)
            for f, t, what in again:
                log("  INTERMITTENT %s %s %s: %s under gvloop, passed when its file ran again"
                    % (stock.suite, f, t, what))
        for f, t, what in noted:
            log("  note %s %s %s: %s%s" % (stock.suite, f, t, what,
                                           " (flaky.txt)" if t in flaky or f in flaky else ""))
        for f, t, what in bad:
            log("  REGRESSION %s %s %s: %s" % (stock.suite, f, t, what))
        if bad:
            rc = 1
    for e in errors:
        log("conformance: ERROR %s" % e)
        rc = 1
    log("conformance: %s in %.0f s (logs: %s)" % ("FAILED" if rc else "passed", wall, args.out))
    return rc


if __name__ == "__main__":
    sys.exit(main())

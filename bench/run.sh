#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/run.sh -- build gvloop in Release and run the benchmark suite.
#
#   bench/run.sh                 full run (5 runs per case, 15-25 min on
#                                2 cores); writes bench/results/
#   bench/run.sh --quick         every case briefly (CI smoke test); writes
#                                bench/build/quick-results/ unless --out, its
#                                table and chart headed "SMOKE TEST"
#
# Options:
#   --runs N        runs per case (default 5; 1 with --quick)
#   --case a,b      only these gvlbench cases (see `gvlbench --list`)
#   --build-dir D   build tree (default bench/build, Release)
#   --no-build      use the binaries already in the build tree
#   --out D         output directory
#   --no-anchors    skip the Ruby/Python anchors even if installed
#   --no-outside    skip the programs of bench/evloop and bench/tkbridge
#   --outside-runs N  runs for those programs (default: --runs, at most 3;
#                   each of their runs already takes 10-30 s)
#   --no-onecpu     skip the one-CPU pass (every gvlbench case, loop_latency
#                   and tk_latency again, pinned to one CPU)
#   --onecpu-runs N runs per case there (default: --runs, at most 3)
#   --no-load       skip the loaded-machine pass (dispatch, loop_latency and
#                   tk_latency, gvloop and nogvl, beside 1 and then 2
#                   CPU-bound processes that this script starts and stops;
#                   --quick: beside 1 only)
#   --load-runs N   runs there (default: --runs, at most 3)
#
# Output in the output directory: results.md (table), results.csv (the
# seed's shape: benchmark, then one column per variant), results.png (chart,
# when gnuplot is installed) and raw.txt (every RESULT line of every run).
# Exit status: 0 when every case ran and every line parsed; no timing is
# ever asserted.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
quick=0 runs="" oruns="" cases="" build="$here/build" nobuild=0 out="" anchors=1 outside=1
onecpu=1 cruns="" load=1 lruns=""
usage() { sed -n '3,34p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --runs) runs=$2; shift ;;
    --outside-runs) oruns=$2; shift ;;
    --case) cases=$2; shift ;;
    --build-dir) build=$2; shift ;;
    --no-build) nobuild=1 ;;
    --out) out=$2; shift ;;
    --no-anchors) anchors=0 ;;
    --no-outside) outside=0 ;;
    --no-onecpu) onecpu=0 ;;
    --onecpu-runs) cruns=$2; shift ;;
    --no-load) load=0 ;;
    --load-runs) lruns=$2; shift ;;
    -h|--help) usage ;;
    *) echo "run.sh: unknown option $1" >&2; usage ;;
  esac
  shift
done
[ -n "$runs" ] || { [ $quick = 1 ] && runs=1 || runs=5; }
if [ -z "$oruns" ]; then
  oruns=$runs
  if [ "$oruns" -gt 3 ]; then oruns=3; fi
fi
at_most3() { if [ "$1" -gt 3 ]; then echo 3; else echo "$1"; fi; }
[ -n "$cruns" ] || cruns=$(at_most3 "$runs")
[ -n "$lruns" ] || lruns=$(at_most3 "$runs")
[ -n "$out" ] || { [ $quick = 1 ] && out="$build/quick-results" || out="$here/results"; }
mode=full; qflag=""
[ $quick = 1 ] && { mode=quick; qflag=--quick; }

if [ $nobuild = 0 ]; then
  echo "== building Release in $build" >&2
  # Warnings are CI's business (it builds with -Werror); a new warning that
  # only -O3 shows must not stop the measurements.
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
        -DGVLOOP_BUILD_EXAMPLES=OFF -DGVLOOP_WERROR=OFF >"$build.cmake.log" 2>&1 ||
    { cat "$build.cmake.log" >&2; exit 1; }
  cmake --build "$build" -j2 >"$build.build.log" 2>&1 ||
    { tail -40 "$build.build.log" >&2; exit 1; }
fi
gvlbench="$build/bench/gvlbench"
report="$build/bench/benchreport"
for b in "$gvlbench" "$report"; do
  [ -x "$b" ] || { echo "run.sh: $b not built" >&2; exit 1; }
done

mkdir -p "$out"
raw="$out/raw.txt"
: >"$raw"
fail=0
# A pass's results go into the same table under their own variant names:
# `RESULT b v m x` and `DONE c v r` become `... v@tag ...`.
tag() { sed -E "s/^(RESULT|DONE) ([^ ]+) ([^ ]+)/\1 \2 \3@$1/"; }
# The same for a `gvlbench --list` line: every variant after the case.
tag_list() { sed -E "s/ ([^ ]+)/ \1@$1/g"; }
# The first CPU this script may run on (the one-CPU pass pins to it).
cpu0=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*\([0-9]*\).*/\1/p' /proc/self/status 2>/dev/null)
[ -n "$cpu0" ] || cpu0=0

# ---- header: the machine and the build ------------------------------------
cache="$build/CMakeCache.txt"
cachevar() { sed -n "s/^$1:[A-Z]*=//p" "$cache" 2>/dev/null | head -1; }
cc=$(cachevar CMAKE_C_COMPILER)
btype=$(cachevar CMAKE_BUILD_TYPE)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
# Only the code measured counts as "modified": the library and the bench.
git -C "$root" diff --quiet HEAD -- gvl_api bench/src 2>/dev/null ||
  commit="$commit (gvl_api or bench/src modified)"
{
  echo "INFO date $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "INFO cpu ${cpu:-unknown}, $(nproc) cores online"
  echo "INFO kernel $(uname -sr)"
  echo "INFO compiler $("${cc:-cc}" --version 2>/dev/null | head -1)"
  echo "INFO build ${btype:-unknown} ($(cachevar CMAKE_C_FLAGS_$(echo "${btype:-none}" | tr a-z A-Z)))"
  echo "INFO commit $commit"
  echo "INFO mode $mode, $runs run(s) per case ($oruns for the bench/evloop and bench/tkbridge programs)"
  [ $onecpu = 1 ] && echo "INFO one-CPU pass: $cruns run(s) per case, variants named <variant>@1cpu"
  [ $load = 1 ] && echo "INFO loaded pass: $lruns run(s), variants named <variant>@load1 and @load2 (1 and 2 CPU-bound processes beside the program)"
  echo "INFO load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$raw"

# ---- gvlbench --------------------------------------------------------------
echo "== gvlbench ($mode, $runs run(s))" >&2
set -- $qflag --runs "$runs"
[ -n "$cases" ] && set -- "$@" --case "$cases"
"$gvlbench" "$@" >>"$raw" || { echo "run.sh: gvlbench failed" >&2; fail=1; }
"$gvlbench" --list >"$out/expect.txt"
if [ -n "$cases" ]; then
  echo "$cases" | tr ',' '\n' >"$out/cases.txt"
  grep -F -w -f "$out/cases.txt" "$out/expect.txt" >"$out/expect.sel" || :
  mv "$out/expect.sel" "$out/expect.txt"
  rm -f "$out/cases.txt"
fi

# ---- programs of bench/evloop and bench/tkbridge ---------------------------
# The Tk programs need a display: without $DISPLAY, start a private Xvfb (it
# picks a free display number and reports it through -displayfd) and stop
# it when this script exits.
xpid=""
xdir=""
stop_xvfb() {
  [ -n "$xpid" ] && { kill "$xpid" 2>/dev/null; wait "$xpid" 2>/dev/null || :; }
  [ -n "$xdir" ] && rm -rf "$xdir"
  xpid="" xdir=""
}
trap stop_xvfb EXIT
start_xvfb() {
  [ -z "${DISPLAY:-}" ] && command -v Xvfb >/dev/null 2>&1 || return 0
  xdir=$(mktemp -d /tmp/gvlbench_xvfb.XXXXXX)
  Xvfb -displayfd 3 -screen 0 1024x768x24 -nolisten tcp 3>"$xdir/display" 2>"$xdir/log" &
  xpid=$!
  i=0
  while [ ! -s "$xdir/display" ] && [ $i -lt 200 ] && kill -0 "$xpid" 2>/dev/null; do
    sleep 0.05; i=$((i + 1))
  done
  if [ -s "$xdir/display" ]; then
    DISPLAY=:$(head -n1 "$xdir/display"); export DISPLAY
    echo "INFO display private Xvfb $DISPLAY for the Tk programs" >>"$raw"
  else
    echo "run.sh: Xvfb did not start" >&2; stop_xvfb
  fi
}
progs="$build/bench/outside_programs.txt"
[ -s "$progs" ] || progs=/dev/null
# outside_prog NAME: the path of that program of bench/evloop or
# bench/tkbridge, if it was built.
outside_prog() { grep "/$1\$" "$progs" | head -n1; }
[ $outside = 1 ] || [ $onecpu = 1 ] || [ $load = 1 ] && start_xvfb
if [ $outside = 1 ]; then
  while IFS= read -r prog; do
    [ -n "$prog" ] || continue
    if [ ! -x "$prog" ]; then
      echo "run.sh: $prog listed but not built" >&2; fail=1; continue
    fi
    echo "== $(basename "$prog")" >&2
    if [ $quick = 1 ]; then set -- --quick; else set -- --runs "$oruns"; fi
    timeout 600 "$prog" "$@" >>"$raw" </dev/null ||
      { echo "run.sh: $prog failed" >&2; fail=1; }
  done <"$progs"
fi

# ---- one CPU: the same cases pinned to one CPU --------------------------------
# gvlbench pins itself (--pin, sched_setaffinity); the latency programs run
# under taskset.  Their figures are named <variant>@1cpu.
if [ $onecpu = 1 ]; then
  # --quick keeps the smoke test short: only the variants that never wait
  # for a 5-100 ms timer, and no latency programs.
  cvars=""
  [ $quick = 1 ] && cvars="gvloop,nogvl,floor"
  echo "== one CPU (CPU $cpu0): gvlbench ($cruns run(s))" >&2
  set -- $qflag --runs "$cruns" --pin "$cpu0"
  [ -n "$cases" ] && set -- "$@" --case "$cases"
  [ -n "$cvars" ] && set -- "$@" --variant "$cvars"
  "$gvlbench" "$@" | tag 1cpu >>"$raw" || { echo "run.sh: gvlbench --pin failed" >&2; fail=1; }
  # The cases of expect.txt (already cut to --case), their variants renamed.
  if [ -n "$cvars" ]; then
    awk -v keep=",$cvars," '{ l = $1; for (i = 2; i <= NF; i++) if (index(keep, "," $i ",")) l = l " " $i; if (l != $1) print l }' \
      "$out/expect.txt" | tag_list 1cpu >"$out/expect.1cpu"
  else
    tag_list 1cpu <"$out/expect.txt" >"$out/expect.1cpu"
  fi
  if command -v taskset >/dev/null 2>&1 && [ $outside = 1 ] && [ $quick = 0 ]; then
    for name in loop_latency tk_latency; do
      prog=$(outside_prog $name)
      [ -n "$prog" ] && [ -x "$prog" ] || continue
      echo "== one CPU: $name" >&2
      timeout 600 taskset -c "$cpu0" "$prog" --runs 1 </dev/null | tag 1cpu >>"$raw" ||
        { echo "run.sh: $name on one CPU failed" >&2; fail=1; }
    done
  fi
fi

# ---- a loaded machine: 1 and 2 CPU-bound processes beside the program ----------
# Each load process is a shell busy loop under `timeout`, so none can
# outlive this script by more than its bound even if the script is killed;
# stop_load ends them as soon as their pass is done.
load_pids=""
: >"$out/expect.load"
stop_load() {
  for p in $load_pids; do kill "$p" 2>/dev/null || :; done
  for p in $load_pids; do wait "$p" 2>/dev/null || :; done
  load_pids=""
}
start_load() {
  i=0
  while [ $i -lt "$1" ]; do
    timeout 900 sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 &
    load_pids="$load_pids $!"
    i=$((i + 1))
  done
  sleep 0.5
}
trap 'stop_load; stop_xvfb' EXIT
# --quick: one CPU-bound process only (the same code path, half the time).
levels="1 2"
[ $quick = 1 ] && levels=1
# The -rt variants (the event or loop thread in SCHED_FIFO, evloop.h's
# "Scheduling") only where this user may use SCHED_FIFO.
rtv=",gvloop-rt,nogvl-rt"
chrt -f 1 true 2>/dev/null || rtv=""
if [ $load = 1 ]; then
  for n in $levels; do
    echo "== loaded machine: $n CPU-bound process(es) beside the latency cases" >&2
    start_load $n
    echo "INFO load$n load average with the load running $(cut -d' ' -f1-3 /proc/loadavg)" >>"$raw"
    if [ -z "$cases" ] || echo ",$cases," | grep -q ",dispatch,"; then
      "$gvlbench" $qflag --runs "$lruns" --case dispatch --variant "gvloop,nogvl$rtv" |
        tag "load$n" >>"$raw" ||
        { echo "run.sh: gvlbench under load failed" >&2; fail=1; }
      "$gvlbench" --list | grep '^dispatch ' | sed 's/ .*//; s/$/ gvloop nogvl'"$(echo "$rtv" | tr , ' ')"'/' |
        tag_list "load$n" >>"$out/expect.load"
    fi
    if [ $outside = 1 ]; then
      for name in loop_latency tk_latency; do
        prog=$(outside_prog $name)
        [ -n "$prog" ] && [ -x "$prog" ] || continue
        if [ $quick = 1 ]; then set -- --quick; else set -- --runs "$lruns"; fi
        timeout 600 "$prog" "$@" --only "gvloop,nogvl$rtv" </dev/null |
          tag "load$n" >>"$raw" ||
          { echo "run.sh: $name under load failed" >&2; fail=1; }
      done
    fi
    stop_load
  done
fi
stop_xvfb

# ---- outside anchors: the same workloads in Ruby and Python -----------------
if [ $anchors = 1 ]; then
  set -- --runs "$runs"
  [ $quick = 1 ] && set -- --quick --runs "$runs"
  if command -v ruby >/dev/null 2>&1; then
    echo "== anchor: $(ruby -e 'print RUBY_DESCRIPTION')" >&2
    timeout 900 ruby "$here/anchors/anchor.rb" "$@" >>"$raw" </dev/null ||
      { echo "run.sh: ruby anchor failed" >&2; fail=1; }
  fi
  # Debian's python3 when present (a python3 earlier on PATH may be another build).
  py=$(command -v /usr/bin/python3 || command -v python3 || :)
  if [ -n "$py" ]; then
    echo "== anchor: $("$py" -c 'import sys; print(sys.version.split()[0])')" >&2
    timeout 900 "$py" "$here/anchors/anchor.py" "$@" >>"$raw" </dev/null ||
      { echo "run.sh: python anchor failed" >&2; fail=1; }
  fi
fi
echo "INFO load average at end $(cut -d' ' -f1-3 /proc/loadavg)" >>"$raw"

# ---- table, CSV, chart -------------------------------------------------------
body="$out/body.md"
# A smoke run's figures are noise (one short run, a machine that may be busy
# with other work, such as ctest's other tests): its table and chart say so.
note=
[ $quick = 1 ] && note="SMOKE TEST, NOT A MEASUREMENT: one short run per case (bench/run.sh --quick) \
on a machine with load average $(cut -d' ' -f1 /proc/loadavg); real figures: BENCHMARKS.md"
"$report" --md "$body" --csv "$out/results.csv" --plot "$out" ${note:+--note "$note"} \
  --expect "$out/expect.txt" --runs "$runs" "$raw" || { echo "run.sh: report check failed" >&2; fail=1; }
# The passes' own runs counts: check that each of their cases ran too.
if [ $onecpu = 1 ]; then
  "$report" --expect "$out/expect.1cpu" --runs "$cruns" "$raw" ||
    { echo "run.sh: one-CPU pass incomplete" >&2; fail=1; }
fi
if [ -s "$out/expect.load" ]; then
  "$report" --expect "$out/expect.load" --runs "$lruns" "$raw" ||
    { echo "run.sh: loaded pass incomplete" >&2; fail=1; }
fi
rm -f "$out/expect.1cpu" "$out/expect.load"
{
  echo "# gvloop benchmark results"
  echo
  echo "Produced by \`bench/run.sh${qflag:+ $qflag} --runs $runs --outside-runs $oruns${cases:+ --case $cases}\`."
  echo "Ratios are against \`gvloop\` in the same run; see BENCHMARKS.md for how to read them."
  echo
  cat "$body"
} >"$out/results.md"
rm -f "$body"
if command -v gnuplot >/dev/null 2>&1; then
  (cd "$out" && gnuplot chart.gp) || { echo "run.sh: gnuplot failed" >&2; fail=1; }
else
  echo "run.sh: gnuplot not installed; no chart (apt-get install gnuplot-nox)" >&2
fi
sed -n '/^## Summary/,/^## All figures/p' "$out/results.md" | sed '$d'
echo "== results in $out" >&2
exit $fail

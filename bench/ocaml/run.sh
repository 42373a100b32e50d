#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/ocaml/run.sh [BUILD_DIR] [--quick]
# The OCaml workloads built with stock OCaml 4.13 threads and with gvloop's
# (hosts/ocaml), run in the same invocation, printed as a table with the
# columns ocaml-4.13 and ocaml-4.13+gvloop.  busy_flag, thread_pass and
# convoy are native code; the labltk cases are bytecode in both columns
# (labltk ships its Tkthread as bytecode only).  Without a display, the
# labltk cases run under a private Xvfb (tests/tkbridge/run_x.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
quick=0; [ "${2:-}" = --quick ] && quick=1
[ "${1:-}" = --quick ] && { quick=1; build=$root/build; }
build=$(cd "$build" && pwd)
OCAMLPATH=$build/hosts/ocaml/findlib; export OCAMLPATH
ocamlfind query gvloop.threads >/dev/null 2>&1 || {
  echo "gvloop.threads not built in $build (needs ocaml, ocaml-findlib, ocaml-source)"; exit 77; }
work=$build/bench-ocaml; rm -rf "$work"; mkdir -p "$work"; cd "$work"
cp "$here"/*.ml .
oc() { ocamlfind "$@" 2>&1 | grep -v 'WARNING' || true; }
have_tk=0
if ocamlfind query gvloop.labltk >/dev/null 2>&1 && [ -f "$(ocamlfind query labltk)/tkthread.cmo" ]; then
  have_tk=1
fi
for p in busy_flag thread_pass convoy; do
  mkdir -p stock gvloop
  oc ocamlopt -thread -package threads.posix,unix -linkpkg $p.ml -o stock/$p
  oc ocamlopt -thread -package gvloop.threads,unix -linkpkg $p.ml -o gvloop/$p
done
if [ $have_tk = 1 ]; then
  tkt=$(ocamlfind query labltk)/tkthread.cmo
  for p in tk_latency tk_idle; do
    oc ocamlc -thread -package threads.posix,unix,labltk -linkpkg "$tkt" $p.ml -o stock/$p
    oc ocamlc -thread -package gvloop.labltk -linkpkg $p.ml -o gvloop/$p
  done
fi
if [ $quick = 1 ]; then A_flag=5 A_pass=5000 A_convoy=40 A_tk=100 A_idle=3
else A_flag=10 A_pass=20000 A_convoy=100 A_tk=200 A_idle=10; fi
run() {  # variant program arg
  if [ "$2" = tk_latency ] || [ "$2" = tk_idle ]; then
    sh "$root/tests/tkbridge/run_x.sh" "./$1/$2" "$3"
  else
    "./$1/$2" "$3"
  fi | grep '^RESULT' | sed "s/^RESULT /$1 /" >> results.txt
}
: > results.txt
for v in stock gvloop; do
  run $v busy_flag $A_flag
  run $v thread_pass $A_pass
  run $v convoy $A_convoy
  if [ $have_tk = 1 ]; then
    run $v tk_latency $A_tk
    run $v tk_idle $A_idle
  fi
done
load=$(cut -d' ' -f1 /proc/loadavg)
echo "OCaml 4.13 workloads (bench/ocaml), $(date -u '+%Y-%m-%d %H:%M UTC'), load average $load, $(nproc) CPUs"
echo
echo "| workload | figure | ocaml-4.13 | ocaml-4.13+gvloop |"
echo "|---|---|---|---|"
desc() {
  case $1 in
    busy_flag_late_median_ms) echo "busy_flag (flag set after Thread.create + Thread.delay 0.02) | seen late, median ms ($A_flag rounds)";;
    busy_flag_late_max_ms) echo "busy_flag | seen late, max ms";;
    thread_pass_s) echo "thread_pass (2 threads x $A_pass Thread.yield) | time s";;
    thread_pass_handoff_share) echo "thread_pass | yields that switched thread";;
    convoy_solo_us) echo "convoy ($A_convoy socketpair round trips, median of 5) | alone, us per round trip";;
    convoy_x_solo) echo "convoy beside a CPU-bound thread | time vs alone (x)";;
    convoy_hog_kept_pct) echo "convoy | CPU-bound thread's rate kept (%)";;
    tk_floor_p50_ms) echo "labltk 2 ms timer callback, no other thread | late p50 ms";;
    tk_hog_p50_ms) echo "labltk timer callback beside a CPU-bound thread | late p50 ms";;
    tk_hog_p99_ms) echo "labltk timer callback beside a CPU-bound thread | late p99 ms";;
    tk_hog_max_ms) echo "labltk timer callback beside a CPU-bound thread | late max ms";;
    tk_hog_kept_pct) echo "labltk timers | CPU-bound thread's rate kept (%)";;
    tk_idle_cpu_ms) echo "idle labltk app over ${A_idle} s | CPU ms";;
    tk_idle_wakeups_per_s) echo "idle labltk app | wake-ups per s (all threads)";;
    *) echo "$1 | ";;
  esac
}
for k in $(cut -d' ' -f2 results.txt | awk '!seen[$0]++'); do
  s=$(awk -v k="$k" '$1=="stock" && $2==k {print $3}' results.txt)
  g=$(awk -v k="$k" '$1=="gvloop" && $2==k {print $3}' results.txt)
  echo "| $(desc "$k") | ${s:--} | ${g:--} |"
done

#!/bin/sh
# SPDX-License-Identifier: MIT
# link_modes.sh WORKDIR -- a program built with -package gvloop.threads runs
# on gvloop's lock however it is linked: native, bytecode, and bytecode with
# the runtime linked in (-custom, -output-complete-exe), which take -lthreads
# from an archive (OCaml's stock libthreads.a if gvloop has none).
# GVLOOP_OCAML_STATS=1 makes gvloop's lock print its counters at exit.  Then
# bad GVLOOP_OCAML_* settings: reported, and the program runs.
set -eu
work=$1/link_modes
rm -rf "$work"; mkdir -p "$work"; cd "$work"
cat >prog.ml <<'ML'
let () =
  let t = Thread.create (fun () -> Thread.yield ()) () in
  Thread.join t;
  print_endline "threads ran"
ML
for how in native byte custom complete; do
  case $how in
    native) comp="ocamlopt" ;;
    byte) comp="ocamlc" ;;
    custom) comp="ocamlc -custom" ;;
    complete) comp="ocamlc -output-complete-exe" ;;
  esac
  rm -f prog.cm* prog.o
  # shellcheck disable=SC2086
  ocamlfind $comp -thread -package gvloop.threads -linkpkg prog.ml -o "prog.$how" \
    >build.log 2>&1 || { cat build.log; echo "FAIL: $how build"; exit 1; }
  out=$(GVLOOP_OCAML_STATS=1 "./prog.$how" 2>&1)
  case $out in
    *"threads ran"*"gvloop threads: acquires"*) echo "ok   $how: gvloop's lock" ;;
    *) printf '%s\n' "$out"; echo "FAIL: $how does not run on gvloop's lock"; exit 1 ;;
  esac
done

# A bad setting in the environment is reported and the default used; the
# program runs (it aborted before main).
for bad in GVLOOP_OCAML_BOOST_CAP=150 GVLOOP_OCAML_SLICE_US=-5 GVLOOP_OCAML_SLICE_US=1e3 \
           GVLOOP_OCAML_SLICE_US=100000000000; do
  out=$(env "$bad" GVLOOP_OCAML_STATS=1 ./prog.native 2>&1) || {
    printf '%s\n' "$out"; echo "FAIL: $bad stops the program"; exit 1; }
  case $out in
    *"is not a number from 1 to"*"threads ran"*"gvloop threads: acquires"*) echo "ok   $bad: reported, default used" ;;
    *) printf '%s\n' "$out"; echo "FAIL: $bad"; exit 1 ;;
  esac
done
# GVLOOP_OCAML_STATS takes 0 or 1: anything else is reported and prints nothing.
for bad in no yes 2 10; do
  out=$(GVLOOP_OCAML_STATS=$bad ./prog.native 2>&1) || {
    printf '%s\n' "$out"; echo "FAIL: STATS=$bad stops the program"; exit 1; }
  case $out in
    *"gvloop threads: acquires"*) printf '%s\n' "$out"; echo "FAIL: STATS=$bad prints counters"; exit 1 ;;
    *"is not 0 or 1"*"threads ran"*) echo "ok   STATS=$bad: reported, nothing printed" ;;
    *) printf '%s\n' "$out"; echo "FAIL: STATS=$bad"; exit 1 ;;
  esac
done
out=$(GVLOOP_OCAML_STATS=0 ./prog.native 2>&1)
case $out in
  *"gvloop threads: acquires"*|*"not 0 or 1"*) printf '%s\n' "$out"; echo "FAIL: STATS=0"; exit 1 ;;
  *) echo "ok   STATS=0: nothing printed" ;;
esac

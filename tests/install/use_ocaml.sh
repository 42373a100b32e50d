#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# use_ocaml.sh SRC_DIR PREFIX|--system [labltk]
#
# Use gvloop's installed findlib package as an OCaml user would:
#  - consumer/threads.ml built with `ocamlfind ocamlopt|ocamlc -thread
#    -package gvloop.threads -linkpkg`, native and bytecode, and run with
#    GVLOOP_OCAML_STATS=1: only gvloop's lock prints the GVL's counters; the
#    bytecode program must load the package's dllthreads.so (LD_DEBUG), not
#    the stock one in stublibs;
#  - with "labltk": consumer/gui.ml on gvloop.labltk, both ways, run on a
#    private Xvfb (tests/tkbridge/run_x.sh) when DISPLAY is unset (built
#    only when there is no Xvfb).
# PREFIX: a tree from `cmake --install --prefix PREFIX`; OCAMLPATH is set to
# the folder that holds gvloop/META there, and nothing else.  --system: the
# .deb is installed; nothing is set, and the package must be in the first
# folder of findlib's search path under /usr/lib (Debian: /usr/lib/ocaml).
set -euo pipefail
src=$1 where=$2 labltk=${3:-}
here=$src/tests/install
run_x=$src/tests/tkbridge/run_x.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*" >&2; exit 1; }
unset CAML_LD_LIBRARY_PATH   # it would come before a program's -dllpath

if [ "$where" = --system ]; then
  unset OCAMLPATH
  # The first folder of findlib's search path under /usr/lib (/usr/lib/ocaml).
  searched=$(ocamlfind printconf path)
  want=$(grep -m1 '^/usr/lib/' <<<"$searched" || true)/gvloop
else
  meta=$(find "$where" -path '*/gvloop/META' -print -quit)
  [ -n "$meta" ] || fail "no gvloop/META under $where: the findlib package is not installed"
  want=$(dirname "$meta")
  OCAMLPATH=$(dirname "$want")
  export OCAMLPATH
fi
pkgdir=$(ocamlfind query gvloop 2>&1) || fail "ocamlfind query gvloop: $pkgdir"
[ "$pkgdir" = "$want" ] || fail "ocamlfind finds gvloop in $pkgdir, not in $want"
if grep -n 'directory *= *"/' "$pkgdir/META"; then
  fail "$pkgdir/META names an absolute directory"
fi
ok "findlib package gvloop $(ocamlfind query -format %v gvloop) in $pkgdir${OCAMLPATH:+ (OCAMLPATH=$OCAMLPATH)}"

# build NAME PACKAGE MODE: consumer/NAME.ml -> $tmp/NAME.MODE/prog
build() {
  local name=$1 pkg=$2 mode=$3 comp d
  case $mode in native) comp=ocamlopt ;; byte) comp=ocamlc ;; esac
  d=$tmp/$name.$mode
  mkdir "$d"
  cp "$here/consumer/$name.ml" "$d/"
  (cd "$d" && ocamlfind "$comp" -thread -package "$pkg" -linkpkg "$name.ml" -o prog) \
    >"$d/build.log" 2>&1 || { cat "$d/build.log"; fail "ocamlfind $comp -package $pkg $name.ml"; }
}

# ---- gvloop.threads ------------------------------------------------------------
threads=$(ocamlfind query gvloop.threads)
for mode in native byte; do
  build threads gvloop.threads "$mode"
  d=$tmp/threads.$mode
  out=$(cd "$d" && GVLOOP_OCAML_STATS=1 LD_DEBUG=files ./prog 2>"$d/err") \
    || { cat "$d/err"; fail "threads.ml ($mode): $out"; }
  [ "$out" = "ocaml threads ok: 2000" ] || fail "threads.ml ($mode): $out"
  stats=$(grep '^gvloop threads: acquires [1-9]' "$d/err") \
    || { grep -v '^ *[0-9]*:' "$d/err" || true; fail "threads.ml ($mode): no GVL counters, not gvloop's lock"; }
  if [ "$mode" = byte ]; then
    loaded=$(sed -n 's/.*file=\([^ ]*dllthreads\.so\) .*/\1/p;T;q' "$d/err")
    [ "$loaded" = "$threads/dllthreads.so" ] \
      || fail "threads.ml (byte) loads ${loaded:-no dllthreads.so}, not $threads/dllthreads.so"
    stats="$stats (dllthreads.so from the package)"
  fi
  ok "gvloop.threads ($mode): $out; $stats"
done

# ---- gvloop.labltk -------------------------------------------------------------
if [ "$labltk" = labltk ]; then
  lt=$(ocamlfind query gvloop.labltk)
  for mode in native byte; do
    build gui gvloop.labltk "$mode"
    d=$tmp/gui.$mode
    rc=0
    out=$(cd "$d" && "$run_x" env LD_DEBUG=files ./prog 2>"$d/err") || rc=$?
    if [ $rc = 77 ]; then
      ok "gvloop.labltk ($mode): built; $out"
      continue
    fi
    [ $rc = 0 ] || { grep -v '^ *[0-9]*:' "$d/err" || true; fail "gui.ml ($mode): $out"; }
    if [ "$mode" = byte ]; then
      grep -q "file=$lt/dllgvltk.so " "$d/err" || fail "gui.ml (byte) does not load $lt/dllgvltk.so"
    fi
    ok "gvloop.labltk ($mode): $out"
  done
fi
echo "ocaml ok"

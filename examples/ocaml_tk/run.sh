#!/bin/sh
# SPDX-License-Identifier: MIT
# examples/ocaml_tk/run.sh [BUILD_DIR] [SECONDS]
# Build ocaml_tk.ml twice, with labltk's Tkthread on stock OCaml threads and
# with gvloop.labltk (hosts/ocaml), run each for SECONDS (default 8) under a
# private Xvfb when there is no display, save a screenshot per build into
# BUILD_DIR/examples/ocaml_tk/ and print each build's latency.  Both builds
# are bytecode (labltk ships its Tkthread as bytecode only).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
secs=${2:-8}
OCAMLPATH=$build/hosts/ocaml/findlib; export OCAMLPATH
ocamlfind query gvloop.labltk >/dev/null 2>&1 || {
  echo "gvloop.labltk not built in $build (needs ocaml, ocaml-source, liblabltk-ocaml-dev)"; exit 77; }
out=$build/examples/ocaml_tk; mkdir -p "$out"; cd "$out"
cp "$here/ocaml_tk.ml" .
q() { ocamlfind "$@" 2>&1 | grep -v WARNING || true; }
q ocamlc -thread -package threads.posix,unix,labltk -linkpkg \
  "$(ocamlfind query labltk)/tkthread.cmo" ocaml_tk.ml -o ocaml_tk.stock
rm -f ocaml_tk.cm*
q ocamlc -thread -package gvloop.labltk -linkpkg ocaml_tk.ml -o ocaml_tk.gvloop
for v in stock gvloop; do
  line=$(sh "$root/tests/tkbridge/run_x.sh" "./ocaml_tk.$v" "$secs" "$out/ocaml_tk.$v.xwd")
  if command -v convert >/dev/null 2>&1 && [ -f "ocaml_tk.$v.xwd" ]; then
    convert "xwd:ocaml_tk.$v.xwd" "ocaml_tk.$v.png" && rm -f "ocaml_tk.$v.xwd"
  fi
  shot=$(ls "$out"/ocaml_tk.$v.png "$out"/ocaml_tk.$v.xwd 2>/dev/null | head -1 || true)
  printf '%-7s %s\n        screenshot: %s\n' "$v" "$line" "${shot:-none (xwd missing)}"
done

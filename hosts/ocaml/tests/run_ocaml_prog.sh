#!/bin/sh
# SPDX-License-Identifier: MIT
# run_ocaml_prog.sh SRC.ml PACKAGES MODE WORKDIR -- build SRC.ml with
# ocamlfind (MODE native or byte) and run it; its exit status is the test's.
set -eu
src=$1 pkgs=$2 mode=$3 work=$4
case $mode in native) comp=ocamlopt ;; byte) comp=ocamlc ;; *) exit 2 ;; esac
name=$(basename "$src" .ml)
dir=$work/$name.$mode
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
cp "$src" .
ocamlfind $comp -thread -package "$pkgs" -linkpkg "$name.ml" -o prog 2>build.log || {
  cat build.log; echo "FAIL: build"; exit 1; }
exec ./prog

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
# SRC_stubs.c beside SRC.ml is compiled in (with OCAML_TEST_CFLAGS); bytecode
# is then linked -custom, so that the stubs reach the static libgvl too.
stubs=${src%.ml}_stubs.c extra=""
if [ -f "$stubs" ]; then
  cp "$stubs" .
  extra="-ccopt ${OCAML_TEST_CFLAGS:--I.} ${name}_stubs.c"
  [ "$mode" = byte ] && extra="-custom $extra"
fi
# shellcheck disable=SC2086 # extra is words
ocamlfind $comp -thread -package "$pkgs" -linkpkg $extra "$name.ml" -o prog 2>build.log || {
  cat build.log; echo "FAIL: build"; exit 1; }
exec ./prog

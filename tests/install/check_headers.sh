#!/bin/sh
# SPDX-License-Identifier: MIT
# check_headers.sh SRC_DIR: each public header compiles alone, as C (C99 and
# C11, -pedantic) and as C++ (C++11; clang++ also with
# -Wold-style-cast -Wzero-as-null-pointer-constant), warnings as errors,
# with every compiler of gcc, g++, clang and clang++ that is installed.
set -eu
src=$1
inc="-I$src/gvl_api/include -I$src/evloop/include -I$src/tkbridge/include -I$src/tkbridge/tclpkg"
tcl=$(pkg-config --cflags tcl8.6 2>/dev/null || echo -I/usr/include/tcl8.6)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for h in gvl.h gvl_trace.h evloop.h tkbridge.h gvloop_tcl.h; do
  pre=; [ "$h" = gvloop_tcl.h ] && pre='#include <tcl.h>'
  printf '%s\n#include <%s>\n#include <%s>\nint gvloop_header_check;\n' "$pre" "$h" "$h" >"$tmp/t.c"
  cp "$tmp/t.c" "$tmp/t.cpp"
  for cc in gcc clang; do
    command -v $cc >/dev/null || continue
    for std in c99 c11; do
      # shellcheck disable=SC2086
      $cc -std=$std -pedantic -Wall -Wextra -Werror -fsyntax-only $inc $tcl "$tmp/t.c" \
        || { echo "FAIL $h: $cc -std=$std"; exit 1; }
      n=$((n + 1))
    done
  done
  for cxx in g++ clang++; do
    command -v $cxx >/dev/null || continue
    extra=-Wold-style-cast
    [ $cxx = clang++ ] && extra="$extra -Wzero-as-null-pointer-constant"
    # shellcheck disable=SC2086
    $cxx -std=c++11 -pedantic -Wall -Wextra -Werror $extra -fsyntax-only $inc $tcl "$tmp/t.cpp" \
      || { echo "FAIL $h: $cxx -std=c++11 $extra"; exit 1; }
    n=$((n + 1))
  done
done
echo "headers ok: $n compilations"

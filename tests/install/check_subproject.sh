#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_subproject.sh SRC_DIR [CC]: build gvloop inside another project
# (tests/install/subproject: add_subdirectory) in a fresh build tree, run
# what the parent built against it, and check that gvloop left the parent's
# build tree (with the parent's testing on) without tests, packaging or
# OCaml host of its own.
set -euo pipefail
src=$(cd "$1" && pwd) cc=${2:-cc}
tmp=$(mktemp -d /tmp/gvloop-subproject.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
CC=$cc cmake -S "$src/tests/install/subproject" -B "$tmp/b" -DGVLOOP_SRC="$src" >"$tmp/cfg.log" 2>&1 || { cat "$tmp/cfg.log" >&2; exit 1; }
targets=(parent_gvl)
[ -f "$tmp/b/gvloop/evloop/Makefile" ] && targets+=(parent_evloop)
built=("${targets[@]}")   # run below; parent_tkbridge needs a display: built only
[ -f "$tmp/b/gvloop/tkbridge/Makefile" ] && built+=(parent_tkbridge)
cmake --build "$tmp/b" -j2 --target "${built[@]}" >"$tmp/build.log" 2>&1 ||
  { tail -30 "$tmp/build.log" >&2; exit 1; }
for t in "${targets[@]}"; do
  out=$("$tmp/b/$t")
  echo "ok   $t: $out"
done
# The parent has testing on (include(CTest)) and no tests of its own.
n=$(ctest --test-dir "$tmp/b" -N | sed -n 's/^Total Tests: //p')
if [ "$n" != 0 ] || [ -e "$tmp/b/gvloop/tests" ] || [ -e "$tmp/b/CPackConfig.cmake" ]; then
  echo "FAIL gvloop added tests ($n) or packaging to the parent's build tree" >&2
  exit 1
fi
echo "subproject ok"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fresh machine to passing tests: install dependencies, build, run ctest.
#   scripts/test.sh [options] [BUILD_DIR [CMAKE_ARGS...]]
# Options:
#   -h, --help   this text
#   --no-deps    do not install packages (scripts/deps.sh test)
#   --werror     build with -Werror (-DGVLOOP_WERROR=ON; CI uses it)
#   --quick      skip the slow labels: bench, valgrind, model, fuzz
# The conformance label (Tk's and Tcl's suites) runs apart: .ci/run.
# BUILD_DIR defaults to build; CMAKE_ARGS go to cmake as they are, e.g.
#   scripts/test.sh build-asan -DGVLOOP_ASAN=ON
# The compiler is $CC (cmake's default when unset).  The fuzz targets need
# clang:  CC=clang scripts/test.sh build-clang
set -euo pipefail
cd "$(dirname "$0")/.."
deps=1 quick=0 cmake_extra=()
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) sed -n '3,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
    --no-deps) deps=0 ;;
    --werror) cmake_extra+=(-DGVLOOP_WERROR=ON) ;;
    --quick) quick=1 ;;
    --) shift; break ;;
    -*) echo "test.sh: unknown option $1 (see scripts/test.sh --help)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
BUILD=${1:-build}; shift || true
((deps)) && scripts/deps.sh test
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_extra[@]}" "$@"
cmake --build "$BUILD" -j"$(nproc)"
ctest_args=(--test-dir "$BUILD" --output-on-failure -j"$(nproc)" --timeout 300 -LE conformance)
((quick)) && ctest_args[-1]="bench|valgrind|model|fuzz|conformance"
ctest "${ctest_args[@]}"

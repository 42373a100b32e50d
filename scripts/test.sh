#!/usr/bin/env bash
# Fresh machine to passing tests: install dependencies, build, run ctest.
#   scripts/test.sh [build-dir] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
BUILD=${1:-build}; shift || true
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)" --timeout 300 -LE conformance

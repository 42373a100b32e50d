#!/usr/bin/env bash
# Fresh machine to the main demo: install dependencies, build, run it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
if [ -x build/examples/responsive/responsive ] && [ -x examples/responsive/run_demo.sh ]; then
  exec examples/responsive/run_demo.sh build
fi
exec build/examples/gvl_demo/gvl_demo "$@"

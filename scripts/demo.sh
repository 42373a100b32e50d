#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fresh machine to the main demo: install what the demo needs, build it, run it.
#   scripts/demo.sh [run_demo.sh options: --headless --out DIR --phase-ms MS --threads N]
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
  -h|--help)
    sed -n '3,4s/^# \{0,1\}//p' "$0"
    echo "The demo itself: examples/responsive/README.md."
    exit 0 ;;
esac
examples/responsive/run_demo.sh build --check-args "$@"
echo "[1/3] packages the demo needs (scripts/deps.sh demo)"
scripts/deps.sh demo
echo "[2/3] configuring build/"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
echo "[3/3] building the demo and the libraries it uses (about 20 s on 2 cores)"
cmake --build build -j"$(nproc)" --target responsive gvl_demo
if [ -x build/examples/responsive/responsive ] && [ -x examples/responsive/run_demo.sh ]; then
  exec examples/responsive/run_demo.sh build "$@"
fi
echo "demo.sh: the Tk demo was not built (Tcl/Tk missing?); running the GVL demo instead"
exec build/examples/gvl_demo/gvl_demo

#!/bin/sh
# SPDX-License-Identifier: MIT
# trace_field_ab.sh -- what the tracing seam costs with tracing off.
#
# Builds a copy of libgvl whose g->trace loads are replaced by constants
# (so the lock has no tracing seam at all), then runs gvl_trace_ab to time
# the uncontended acquire+release pair of the real library against the copy
# in one process.  Usage:
#   bench/trace/trace_field_ab.sh BUILD_DIR [rounds]
# BUILD_DIR: a build tree where the gvl target is built.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$1
rounds=${2:-61}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/gvl_api/src" "$src/gvl_api/include" "$work/"
sed -i 's#void \*tr = atomic_load_explicit(&g->trace, memory_order_acquire);#void *tr = NULL;#
        s#atomic_load_explicit(&g->trace, memory_order_relaxed) ||##' "$work/src/gvl.c"
if grep -q 'g->trace' "$work/src/gvl.c"; then
  echo "trace_field_ab.sh: gvl.c changed; update the sed lines" >&2
  exit 1
fi
futex=src/gvl_wait_futex.c
${CC:-cc} -O2 -g -DNDEBUG -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden \
  -DGVL__PARK_FUTEX=1 -I"$work/include" -I"$work/src" -shared -o "$work/libgvl_noseam.so" \
  "$work/src/gvl.c" "$work/src/gvl_thread.c" "$work/src/gvl_sync.c" \
  "$work/src/gvl_misc.c" "$work/src/gvl_trace.c" "$work/$futex" -lpthread
${CC:-cc} -O2 -std=c11 -D_GNU_SOURCE -o "$work/gvl_trace_ab" "$src/bench/trace/trace_ab.c" -ldl
"$work/gvl_trace_ab" "$build/gvl_api/libgvl.so" "$work/libgvl_noseam.so" "$rounds"

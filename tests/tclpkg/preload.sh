#!/bin/sh
# SPDX-License-Identifier: MIT
# preload.sh CMD [ARG...] -- run CMD with $GVT_PRELOAD (a sanitizer runtime)
# in LD_PRELOAD.  Stock tclsh/wish are not instrumented, so the runtime must
# be preloaded to load an instrumented package; only the Tcl process gets
# it (not Xvfb or the shell around it).
if [ -n "$GVT_PRELOAD" ]; then
  LD_PRELOAD="$GVT_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}"
  export LD_PRELOAD
fi
exec "$@"

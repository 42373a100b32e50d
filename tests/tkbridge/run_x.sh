#!/bin/sh
# SPDX-License-Identifier: MIT
# run_x.sh CMD [ARG...] -- run CMD with an X display.
#
# With $DISPLAY set, CMD just runs there.  Otherwise a private Xvfb is
# started (it picks a free display number itself and reports it through
# -displayfd, so parallel tests never collide), CMD runs on it, and the
# server is killed afterwards.  Exit 77 (ctest: skipped) without Xvfb.
if [ -n "$DISPLAY" ]; then
  exec "$@"
fi
if ! command -v Xvfb >/dev/null 2>&1; then
  echo "Xvfb not installed (apt-get install xvfb): skipped"
  exit 77
fi
dir=$(mktemp -d /tmp/tkb_xvfb.XXXXXX) || exit 1
Xvfb -displayfd 3 -screen 0 1024x768x24 -nolisten tcp 3>"$dir/display" 2>"$dir/log" &
xpid=$!
i=0
while [ ! -s "$dir/display" ] && [ $i -lt 200 ]; do
  if ! kill -0 $xpid 2>/dev/null; then break; fi
  sleep 0.05
  i=$((i + 1))
done
if [ ! -s "$dir/display" ]; then
  echo "Xvfb did not start:"; cat "$dir/log"
  kill $xpid 2>/dev/null; wait $xpid 2>/dev/null
  rm -rf "$dir"
  exit 1
fi
DISPLAY=:$(head -n1 "$dir/display")
export DISPLAY
"$@"
rc=$?
kill $xpid 2>/dev/null
wait $xpid 2>/dev/null
rm -rf "$dir"
exit $rc

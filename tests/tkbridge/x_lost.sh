#!/bin/sh
# SPDX-License-Identifier: MIT
# x_lost.sh kill|fork SHELL... -- a shell with Tk loses its X connection
# (tkbridge.h: that ends the process, as it ends wish).  For each shell, on
# a private Xvfb: the shell shows a window, then
#   kill: idles in its event loop and the server is killed;
#   fork: forks with TclX, and the child exits (Tk closes the display the
#         two share), then the parent draws.
# Prints "NAME: status=S xio=0|1" (xio: stderr has Xlib's "X connection ...
# broken" line).  A shell still running 20 s on is status=hang, and killed.
# Exit 77 without Xvfb (or, for fork, without TclX).
mode=$1; shift
command -v Xvfb >/dev/null 2>&1 || { echo "no Xvfb: skipped"; exit 77; }
if [ "$mode" = fork ] &&
   ! echo 'exit [catch {package require Tclx}]' | tclsh8.6; then
  echo "no TclX: skipped"; exit 77
fi
for sh in "$@"; do
  dir=$(mktemp -d /tmp/tkb_xlost.XXXXXX) || exit 1
  Xvfb -displayfd 3 -screen 0 640x480x24 -nolisten tcp 3>"$dir/display" 2>/dev/null &
  xpid=$!
  i=0
  while [ ! -s "$dir/display" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
  if [ "$mode" = fork ]; then
    cat >"$dir/s.tcl" <<'TCL'
package require Tclx
button .b -text x; pack .b; update
set pid [fork]
if {$pid == 0} { after 10 {set ::done 1}; vwait ::done; exit 3 }
wait $pid
after 200; wm title . drawn; update
puts "parent drew"
TCL
  else
    printf 'button .b -text x; pack .b; update\nputs ready; flush stdout\nvwait forever\n' >"$dir/s.tcl"
  fi
  DISPLAY=:$(head -n1 "$dir/display") "$sh" "$dir/s.tcl" >"$dir/out" 2>"$dir/err" &
  spid=$!
  if [ "$mode" = kill ]; then
    i=0
    while ! grep -qs ready "$dir/out" && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
    kill $xpid; wait $xpid 2>/dev/null
  fi
  i=0
  while kill -0 $spid 2>/dev/null && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
  if kill -0 $spid 2>/dev/null; then
    kill -9 $spid; wait $spid 2>/dev/null; st=hang
  else
    wait $spid; st=$?
  fi
  kill $xpid 2>/dev/null; wait $xpid 2>/dev/null
  grep -q "X connection to .* broken" "$dir/err" && xio=1 || xio=0
  echo "$(basename "$sh"): status=$st xio=$xio"
  rm -rf "$dir"
done

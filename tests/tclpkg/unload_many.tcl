# SPDX-License-Identifier: MIT
# `load` and `unload` of the package, over and over, as a host that loads
# extensions per request might: the libraries it pulls in stay loaded
# (-z nodelete), so no load takes another thread-specific key (glibc has
# 1024, and every copy of libgvl used to take one: the 1020th load
# aborted), and no thread or descriptor is left per cycle.
source [file join [file dirname [info script]] common.tcl]
set lib [file join [lindex $env(TCLLIBPATH) 0] libgvloop_tcl.so]
proc nfds {} { llength [glob -nocomplain -directory /proc/self/fd *] }
settle
load $lib Gvloop
unload $lib
set threads [nthreads]
set fds [nfds]
for {set i 0} {$i < 1100} {incr i} {
  load $lib Gvloop
  set ::v 0
  if {$i % 100 == 0} {
    gvloop::timer 1 {set ::v 1}
    wait_for ::v "a timer of load $i"
  }
  unload $lib
}
check {[nthreads] == $threads} "threads after 1100 cycles: [nthreads] vs $threads"
check {[nfds] == $fds} "descriptors after 1100 cycles: [nfds] vs $fds"
done_ok

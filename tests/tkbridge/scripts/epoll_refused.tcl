# SPDX-License-Identifier: MIT
# fileevents on descriptors the kernel will not watch (epoll_ctl ADD fails
# with ENOSPC while $env(GVLOOP_TEST_EPFAIL) exists: shim/epoll_refuse.c):
# the handler fires when the channel is ready, once per line, as under
# tclsh's select(); it must not fire while nothing is ready (a spin, or a
# blocking read that hangs), and a watch refused after the first event
# must not end the process.  Prints what tclsh8.6 prints.
set flag $env(GVLOOP_TEST_EPFAIL)
file delete $flag $flag.seen
proc refuse {on} {
  if {$on} {close [open $::flag w]} else {file delete $::flag}
}
proc pair {} {
  set s [socket -server [list apply {{c a p} {set ::srv $c}}] 0]
  set c [socket localhost [lindex [fconfigure $s -sockname] 2]]
  fconfigure $c -buffering line
  vwait ::srv
  close $s
  return $c
}

# 1. Non-blocking: one call, for the line that comes 300 ms later.
set c [pair]
fconfigure $::srv -blocking 0
refuse 1
set calls 0
fileevent $::srv readable {
  incr calls
  if {[gets $::srv l] >= 0} {set ::d1 "$l after $calls call(s)"}
}
after 300 [list puts $c hello]
vwait d1
refuse 0
puts "1: $d1"
close $c; close $::srv; unset ::srv

# 2. Blocking channel, the handler reads at once: it must not be called
#    before the data comes (its gets would block the loop for ever).  The
#    fifth heartbeat sends the line, so they go on while the handler waits
#    however late the timers run.
set c [pair]
refuse 1
set hb 0
proc hb {} {
  if {[incr ::hb] == 5} {puts $::c hello}
  set ::hbid [after 20 hb]
}
hb
fileevent $::srv readable {gets $::srv l; set ::d2 "$l, heartbeats go on: [expr {$::hb > 3}]"}
vwait d2
after cancel $hbid
refuse 0
puts "2: $d2"
close $c; close $::srv; unset ::srv

# 3. Refused from the first event on: every line still comes.
set c [pair]
fconfigure $::srv -blocking 0
set n 0
fileevent $::srv readable {
  if {[gets $::srv l] >= 0} {
    incr ::n
    lappend ::got $l
    if {$::n == 1} {refuse 1}
    if {$::n == 3} {set ::d3 done}
  }
}
puts $c one
after 100 [list puts $c two]
after 200 [list puts $c three]
vwait d3
refuse 0
puts "3: $got"
close $c; close $::srv
# 4. Two channels polled, then room for one more watch: both try again at
#    the next wait, one gets it, the other is refused as its poll starts
#    and stays polled (libuv, left to add it, would end the process).
set c1 [pair]; set s1 $::srv; unset ::srv
set c2 [pair]; set s2 $::srv; unset ::srv
fconfigure $s1 -blocking 0; fconfigure $s2 -blocking 0
refuse 1
set got4 {}
fileevent $s1 readable {if {[gets $s1 l] >= 0} {lappend ::got4 1:$l; if {[llength $::got4] == 4} {set ::d4 done}}}
fileevent $s2 readable {if {[gets $s2 l] >= 0} {lappend ::got4 2:$l; if {[llength $::got4] == 4} {set ::d4 done}}}
after 100 [list puts $c1 a]; after 100 [list puts $c2 b]
after 200 {set f [open $::flag w]; puts $f 1; close $f}
after 400 [list puts $c1 c]; after 400 [list puts $c2 d]
vwait d4
refuse 0
puts "4: [lsort $got4]"
close $c1; close $s1; close $c2; close $s2

# The shim was in place: it refused a watch.
puts "refused: [file exists $flag.seen]"
file delete $flag.seen

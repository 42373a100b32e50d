# SPDX-License-Identifier: MIT
# latency.tcl N BOOST HOGS MODE VARIANT -- run by tk_latency_tclpkg in a
# stock tclsh (MODE after) or wish (MODE event) with the gvloop package.
#
# t0: [clock microseconds] just before the trigger (`after 0`, or `event
# generate` of a virtual event bound to the callback); t1: the time
# gvloop::ping's host callback got the GVL: the time the binding called it
# plus the latency ping returns.  Prints RESULT lines for p50/p99/max and
# the sample count.  The hogs come from the test tooling (gvlooptest).
lassign $argv N boost hogs mode variant
package require gvloop
package require gvlooptest
set ping [expr {$boost ? "gvloop::ping" : "gvloop::ping -noboost"}]
set a0 [dict get [gvloop::stats] gvl_acquires]
if {$hogs > 0} {
  gvloop_test::hog start $hogs
  # Wait until a hog holds the GVL.
  while {[dict get [gvloop::stats] gvl_acquires] < $a0 + 1} { after 1 }
}
set ::lat {}
proc hit {} {
  set t [clock microseconds]
  lappend ::lat [expr {$t + [{*}$::ping] - $::t0}]
  after 1 step
}
proc step {} {
  if {[incr ::n] > $::N} { set ::done 1; return }
  if {$::mode eq "event"} {
    set ::t0 [clock microseconds]
    event generate .f <<Lat>> -when tail
  } else {
    set ::t0 [clock microseconds]
    after 0 hit
  }
}
if {$mode eq "event"} {
  frame .f -width 20 -height 20
  pack .f
  update
  bind .f <<Lat>> hit
  set bench tk_latency_event
} else {
  set bench tk_latency
}
set ::n 0
step
vwait ::done
set s [gvloop::stats]
gvloop_test::hog stop
set sorted [lsort -real $::lat]
set k [llength $sorted]
puts [format "RESULT %s %s p50_us %.3f" $bench $variant [lindex $sorted [expr {$k / 2}]]]
puts [format "RESULT %s %s p99_us %.3f" $bench $variant [lindex $sorted [expr {($k * 99) / 100}]]]
puts [format "RESULT %s %s max_us %.3f" $bench $variant [lindex $sorted end]]
puts "RESULT $bench $variant samples $k"
puts "RESULT $bench $variant boosts_refused [dict get $s gvl_boosts_refused]"
puts "RESULT $bench $variant preemptions [dict get $s gvl_preemptions]"
exit 0

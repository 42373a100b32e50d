# SPDX-License-Identifier: MIT
# Two timers due 0.6 ms apart, the first of which adds an idle handler:
# tclsh's select() wakes for the first alone, so the idle handler runs
# before the second timer.  A wait rounded to whole milliseconds wakes
# late, finds both due and runs them in one pass, the idle handler after
# (1 round of 20 did as tclsh does, against 19 or 20).  Passes when half
# the rounds keep tclsh's order: beside two busy loops on two CPUs tclsh
# kept it in 13 to 16 rounds, gvtclsh in 18 to 20, as a loaded machine
# delays a wake-up past 0.6 ms under either shell now and then.
set rounds 20
set kept 0
set n 0
proc round {} {
  global n kept rounds
  if {$n == $rounds} { set ::done 1; return }
  incr n
  set ::idle 0
  after 30 { after idle {set ::idle 1} }
  set t [clock microseconds]
  while {[clock microseconds] - $t < 600} {}
  after 30 { incr ::kept $::idle; after 2 round }
}
round
vwait done
puts "idle handler before the second timer: $kept of $rounds"
puts [expr {$kept >= $rounds / 2 ? "kept" : "merged"}]

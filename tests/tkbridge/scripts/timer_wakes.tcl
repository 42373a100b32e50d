# SPDX-License-Identifier: MIT
# Two `after` loops, every 5 and every 7 ms, for a hundred ticks of the
# first: one blocking wait for each timer (about 171), as tclsh's select()
# makes.  Tcl_SetTimer's timer (set as each `after` is made, with the time
# of Tcl's last wait, often 0), left running through Tcl's own wait,
# ended it early: 245 to 252.  Passes under 205.
set s0 [dict get [::gvloop::stats] ntf_blocking]
set ::n 0
proc tick {} { if {[incr ::n] == 100} { set ::done 1 } else { after 5 tick } }
proc other {} { after 7 other }
after 5 tick
after 7 other
vwait done
set waits [expr {[dict get [::gvloop::stats] ntf_blocking] - $s0}]
puts "blocking waits for 171 timers: $waits"
puts [expr {$waits < 205 ? "once a timer" : "more"}]

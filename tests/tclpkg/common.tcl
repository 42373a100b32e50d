# SPDX-License-Identifier: MIT
# Helpers shared by the tclpkg test scripts (sourced).  A failed check
# prints the reason and exits 1; every script ends with `done_ok`.
proc check {cond msg} {
  if {![uplevel 1 [list expr $cond]]} {
    puts stderr "FAIL: $msg ([uplevel 1 [list subst $cond]])"
    exit 1
  }
}
# vwait with a watchdog: a hang becomes a failure with a message, not a
# ctest timeout.
proc wait_for {var what {ms 20000}} {
  set id [after $ms [list set ::_wd_fired $what]]
  vwait $var
  after cancel $id
  if {[info exists ::_wd_fired]} {
    puts stderr "FAIL: timed out waiting for $::_wd_fired"
    exit 1
  }
}
proc done_ok {} {
  puts "ok"
  exit 0
}
# Start Tcl's notifier thread (8.6/unix starts it on the first wait) so that
# thread counts taken afterwards compare like with like.
proc settle {} {
  after 20 {set ::_settled 1}
  vwait ::_settled
}
proc nthreads {} {
  llength [glob -nocomplain -directory /proc/self/task *]
}
# Service events until cond holds (no timing assumption; a watchdog of
# ~20 s turns a hang into a failure).
proc poll_until {cond what} {
  set k 0
  while {![uplevel 1 [list expr $cond]]} {
    if {[incr k] > 4000} { puts stderr "FAIL: timed out: $what"; exit 1 }
    after 5 {set ::_p 1}
    vwait ::_p
  }
}

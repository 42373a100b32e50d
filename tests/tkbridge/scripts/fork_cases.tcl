# SPDX-License-Identifier: MIT
# The TclX fork cases fork_tclx.tcl runs on the main thread and
# fork_tclx_thread.tcl on a Thread-package thread (sourced; needs Tclx).
# Every wait has a 20 s timer that reports rather than hangs.

# A child that just exits (Tcl's exit closes its copy of the pipe and
# deletes its copy of the fileevent): the parent's fileevent still fires.
# Returns what the parent read.
proc fork_parent_fe {} {
  lassign [chan pipe] r w
  fconfigure $w -buffering line
  fileevent $r readable [list apply {{r} {set ::got [gets $r]}} $r]
  update
  set pid [fork]
  if {$pid == 0} { exit 0 }
  wait $pid
  after 10 [list puts $w hello]
  set t [after 20000 {set ::got TIMEOUT}]
  vwait ::got
  after cancel $t
  return $::got
}

# The child's own fileevent and timer.  Returns how the child ended and
# its status ("EXIT 0" when its fileevent fired).
proc fork_child_events {} {
  set pid [fork]
  if {$pid == 0} {
    lassign [chan pipe] r w
    fconfigure $w -buffering line
    fileevent $r readable [list apply {{r} {set ::y [gets $r]}} $r]
    after 10 [list puts $w hi]
    after 20000 {set ::y TIMEOUT}
    vwait ::y
    exit [expr {$::y eq "hi" ? 0 : 1}]
  }
  return [lrange [wait $pid] 1 2]
}

# A timed wait, which arms the thread's deadline timer (so that a fork
# comes after one).
proc arm_deadline {} {
  after 1 {set ::armed 1}
  vwait ::armed
}

# n timers of ms in turn, counted in ::ticks, waited for (at most 20 s,
# then ::ticks is TIMEOUT).  Returns ::ticks.
proc tick {ms n} {
  if {[incr ::ticks] < $n} { after $ms [list tick $ms $n] }
}
proc run_ticks {ms n} {
  set ::ticks 0
  after $ms [list tick $ms $n]
  set t [after 20000 {set ::ticks TIMEOUT}]
  while {$::ticks ne "TIMEOUT" && $::ticks < $n} { vwait ::ticks }
  after cancel $t
  return $::ticks
}

# Timed waits on both sides of a fork, each ending at its deadline's timer
# (a timerfd the child shares with the parent until it makes its own):
# twenty one-millisecond timers in turn on each side.  Returns the
# parent's count and how the child ended ("EXIT 0": twenty ran).
proc fork_timers {} {
  arm_deadline
  set pid [fork]
  if {$pid == 0} { exit [expr {[run_ticks 1 20] eq 20 ? 0 : 1}] }
  set ticks [run_ticks 1 20]
  return "$ticks [lrange [wait $pid] 1 2]"
}

# A child that only waits for events it never gets, while the parent runs
# fifty 10 ms timers: the timer the child shares with its parent must not
# wake it (nor its waits disarm the parent's).  Returns how many times the
# child's thread slept and woke meanwhile (0 under tclsh; 50 when the
# child's loop still watched the parent's timer).
proc fork_idle_child {} {
  arm_deadline
  set pid [fork]
  if {$pid == 0} { vwait ::forever; exit 0 }
  proc switches {pid} {
    set f [open /proc/$pid/status]
    regexp {\nvoluntary_ctxt_switches:\s+(\d+)} [read $f] -> v
    close $f
    return $v
  }
  after 20 {set ::settled 1}
  vwait ::settled
  set s0 [switches $pid]
  run_ticks 10 50
  set woke [expr {[switches $pid] - $s0}]
  kill $pid
  wait $pid
  return [expr {$woke < 10 ? "quiet" : "woken $woke times"}]
}

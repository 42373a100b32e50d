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

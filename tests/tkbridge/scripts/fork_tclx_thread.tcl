# SPDX-License-Identifier: MIT
# TclX's fork from a Thread-package thread under gvtclsh, as under tclsh:
# the thread's own notifier loop is the child's own from the fork on, so a
# child that exits leaves the parent thread's fileevent alone, and the
# child's own events run.  Skipped (77) without TclX or Thread.  Every wait
# has a 20 s timer that reports rather than hangs.
if {[catch {package require Thread}]} { puts "skipped: no Thread"; exit 77 }
set t [thread::create {
  if {[catch {package require Tclx}]} { set ::notclx 1 }
  proc parent_fe {} {
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
  proc child_events {} {
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
  thread::wait
}]
if {[thread::send $t {info exists ::notclx}]} { puts "skipped: no TclX"; exit 77 }
puts "thread, parent after child exit: [thread::send $t parent_fe]"
puts "thread, child events: [thread::send $t child_events]"

# SPDX-License-Identifier: MIT
# TclX's fork from a Thread-package thread under gvtclsh, as under tclsh:
# the thread's own notifier loop is the child's own from the fork on, so a
# child that exits leaves the parent thread's fileevent alone, and the
# child's own events run (the cases of fork_cases.tcl).  Skipped (77)
# without TclX or Thread.
if {[catch {package require Thread}]} { puts "skipped: no Thread"; exit 77 }
set t [thread::create {
  if {[catch {package require Tclx}]} { set ::notclx 1 }
  thread::wait
}]
thread::send $t [list set ::cases [file join [file dirname [info script]] fork_cases.tcl]]
if {[thread::send $t {info exists ::notclx}]} { puts "skipped: no TclX"; exit 77 }
thread::send $t {source $::cases}
# The thread runs every case in one script while this thread waits in its
# event loop: a synchronous thread::send per case left this thread busy
# with the Thread package's mutex now and then as the other forked, and a
# child's exit (Thread's exit handler takes that mutex) then waited for
# ever on the copy it inherited locked (under load, 1 run in 60).
thread::send -async $t {
  join [list "thread, parent after child exit: [fork_parent_fe]" \
             "thread, child events: [fork_child_events]" \
             "thread, timers: [fork_timers]" \
             "thread, idle child: [fork_idle_child]"] \n
} ::result
vwait ::result
puts $::result

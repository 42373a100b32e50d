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
puts "thread, parent after child exit: [thread::send $t fork_parent_fe]"
puts "thread, child events: [thread::send $t fork_child_events]"
puts "thread, timers: [thread::send $t fork_timers]"
puts "thread, idle child: [thread::send $t fork_idle_child]"

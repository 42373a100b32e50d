# SPDX-License-Identifier: MIT
# TclX's fork under gvtclsh, as under tclsh (man gvtclsh, NOTES): a child
# goes on running Tcl with events of its own, and what it does to its
# copies of the parent's channels and event handlers leaves the parent's
# alone.  Skipped (77) without TclX (Debian: tclx8.4).  Every wait has a
# 20 s timer that reports rather than hangs.  The first two cases are in
# fork_cases.tcl, shared with fork_tclx_thread.tcl.
if {[catch {package require Tclx}]} { puts "skipped: no TclX"; exit 77 }

source [file join [file dirname [info script]] fork_cases.tcl]
puts "parent after child exit: [fork_parent_fe]"
puts "child events: [fork_child_events]"
puts "timers: [fork_timers]"
puts "idle child: [fork_idle_child]"

# A forking server: the parent accepts, a child per client closes the
#    listening socket, answers and exits; three clients in turn.
proc accept {s addr port} {
  set pid [fork]
  if {$pid == 0} {
    close $::listen
    puts $s "served"; flush $s; close $s
    exit 0
  }
  close $s
  lappend ::kids $pid
}
set listen [socket -server accept -myaddr 127.0.0.1 0]
set port [lindex [fconfigure $listen -sockname] 2]
set kids {}
proc client {i} {
  set c [socket -async 127.0.0.1 $::port]
  fileevent $c readable [list answer $i $c]
}
proc answer {i c} {
  if {[gets $c line] < 0 && ![eof $c]} return
  close $c
  lappend ::answers "$i:$line"
  if {$i < 3} { client [incr i] } else { set ::fin 1 }
}
set t [after 20000 {lappend ::answers TIMEOUT; set ::fin 1}]
client 1
vwait ::fin
after cancel $t
foreach k $kids { wait $k }
puts "server: $::answers"

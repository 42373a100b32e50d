# SPDX-License-Identifier: MIT
# TclX's fork under gvtclsh, as under tclsh (man gvtclsh, NOTES): a child
# goes on running Tcl with events of its own, and what it does to its
# copies of the parent's channels and event handlers leaves the parent's
# alone.  Skipped (77) without TclX (Debian: tclx8.4).  Every wait has a
# 20 s timer that reports rather than hangs.
if {[catch {package require Tclx}]} { puts "skipped: no TclX"; exit 77 }

# 1. A child that just exits (Tcl's exit closes its copy of the pipe and
#    deletes its copy of the fileevent): the parent's fileevent still fires.
lassign [chan pipe] r w
fconfigure $w -buffering line
fileevent $r readable {set ::got [gets $r]}
update
set pid [fork]
if {$pid == 0} { exit 0 }
wait $pid
after 10 [list puts $w hello]
set t [after 20000 {set ::got TIMEOUT}]
vwait ::got
after cancel $t
puts "parent after child exit: $::got"

# 2. The child's own fileevent and timer; the parent sees its status.
set pid [fork]
if {$pid == 0} {
  lassign [chan pipe] r2 w2
  fconfigure $w2 -buffering line
  fileevent $r2 readable {set ::y [gets $r2]}
  after 10 [list puts $w2 hi]
  after 20000 {set ::y TIMEOUT}
  vwait ::y
  exit [expr {$::y eq "hi" ? 0 : 1}]
}
lassign [wait $pid] p how code
puts "child events: $how $code"

# 3. A forking server: the parent accepts, a child per client closes the
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

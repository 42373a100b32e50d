# SPDX-License-Identifier: MIT
# TclX's fork in a stock tclsh with the package: the child's loop is its
# own (evloop.h, fork), so its gvloop::timer and readable watch run there,
# and the parent's watch survives the child cancelling its copy and
# exiting.  Skipped (77) without TclX (Debian: tclx8.4).
source [file join [file dirname [info script]] common.tcl]
if {[catch {package require Tclx}]} { puts "skipped: no TclX"; exit 77 }
package require gvloop
lassign [chan pipe] r w
fconfigure $w -buffering line
fconfigure $r -blocking 0
set watch [gvloop::readable $r {set ::got [gets $r]}]
gvloop::timer 1 {set ::tick 1}
wait_for ::tick "a timer before the fork"
set pid [fork]
if {$pid == 0} {
  gvloop::cancel $watch
  lassign [chan pipe] r2 w2
  fconfigure $w2 -buffering line
  fconfigure $r2 -blocking 0
  gvloop::readable $r2 {set ::y [gets $r2]}
  gvloop::timer 5 [list puts $w2 hi]
  set t [after 20000 {set ::y TIMEOUT}]
  vwait ::y
  exit [expr {$::y eq "hi" ? 0 : 1}]
}
lassign [wait $pid] p how code
check {$how eq "EXIT" && $code == 0} "the child's own timer and watch ($how $code)"
gvloop::timer 5 [list puts $w hello]
wait_for ::got "the parent's watch after the child cancelled its copy"
check {$::got eq "hello"} "the parent's watch read hello"
done_ok

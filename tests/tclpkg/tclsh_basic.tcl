# SPDX-License-Identifier: MIT
# The package in a stock tclsh: Tcl's own event sources keep working,
# libuv timers and descriptors registered through gvloop fire, ping works
# under hogs.
source [file join [file dirname [info script]] common.tcl]
check {[package require gvloop] ne ""} "package require"
package require gvlooptest
check {[gvloop::notifier] eq "tcl-notifier"} "notifier name"

# after / vwait ordering with gvloop timers interleaved.  Each timer counts
# from its own call, so the order owed is that of the calls' times plus their
# delays: a stall of 20 ms between two calls changes it, as it would for
# after alone.  Each call is stamped before and after; a round whose stamps
# do not settle both orders (the thread was held off between calls) is run
# again.  Across the two sources the order depends on the machine's load, so
# only "all fired, once" is checked there.
proc stamped {name script} {
  set ::lo($name) [clock microseconds]
  uplevel #0 $script
  set ::hi($name) [clock microseconds]
}
for {set round 1} {1} {incr round} {
  check {$round <= 10} "ten rounds, each held off between its calls"
  set ::order {}
  stamped a30 {after 30 {lappend ::order a30}}
  stamped a10 {after 10 {lappend ::order a10}}
  stamped g20 {gvloop::timer 20 {lappend ::order g20}}
  stamped g0 {gvloop::timer 0 {lappend ::order g0}}
  poll_until {[llength $::order] >= 4} "after and gvloop timers"
  check {[llength $::order] == 4 && [llength [lsort -unique $::order]] == 4} "four events once: $::order"
  # Due a10 <= hi(a10) + 10 ms < lo(a30) + 30 ms <= due a30; the gvloop
  # pair with libuv's millisecond and a millisecond more of margin.
  if {$::hi(a10) + 10000 >= $::lo(a30) + 30000 ||
      $::hi(g0) + 2000 >= $::lo(g20) + 20000} continue
  check {[lsearch $::order g0] < [lsearch $::order g20]} "g0 before g20: $::order"
  check {[lsearch $::order a10] < [lsearch $::order a30]} "a10 before a30: $::order"
  break
}

# fileevent on a pipe (Tcl's file handlers) next to a gvloop watch on
# another pipe.
lassign [chan pipe] r1 w1
lassign [chan pipe] r2 w2
fconfigure $w1 -buffering line
fconfigure $w2 -buffering line
fconfigure $r1 -blocking 0
fconfigure $r2 -blocking 0
set ::got1 {}
set ::got2 {}
fileevent $r1 readable {
  if {[gets $::r1 l] >= 0} { lappend ::got1 $l; if {$l eq "end"} {set ::fe_done 1} }
}
set wid [gvloop::readable $r2 {
  while {[gets $::r2 l] >= 0} { lappend ::got2 $l; if {$l eq "end"} {set ::gv_done 1} }
}]
for {set i 0} {$i < 50} {incr i} { puts $w1 $i; puts $w2 $i }
puts $w1 end; puts $w2 end
wait_for ::fe_done "fileevent lines"
if {![info exists ::gv_done]} { wait_for ::gv_done "gvloop watch lines" }
check {[llength $::got1] == 51} "fileevent got all lines: [llength $::got1]"
check {[llength $::got2] == 51} "gvloop watch got all lines: [llength $::got2]"
gvloop::cancel $wid
check {[catch {gvloop::cancel $wid}]} "second cancel fails"
puts $w2 after-cancel
after 50 {set ::quiet 1}
wait_for ::quiet "quiet period"
check {[lindex $::got2 end] eq "end"} "cancelled watch stays silent"

# A cancelled timer never fires; many timers fire exactly once each.
set ::fired 0
set tid [gvloop::timer 30 {set ::cancelled_fired 1}]
gvloop::cancel $tid
for {set i 0} {$i < 100} {incr i} { gvloop::timer [expr {$i % 7}] {incr ::fired} }
gvloop::timer 40 {set ::many 1}
wait_for ::many "100 timers"
check {$::fired == 100} "100 timers fired once each: $::fired"
check {![info exists ::cancelled_fired]} "cancelled timer did not fire"

# Errors in timer scripts reach bgerror; the loop goes on.
set ::bg {}
proc bgerror {msg} { lappend ::bg $msg }
gvloop::timer 0 {error "deliberate"}
gvloop::timer 10 {set ::after_err 1}
wait_for ::after_err "timer after an erroring one"
update
check {[lindex $::bg 0] eq "deliberate"} "bgerror saw it: $::bg"

# Ping under two hogs (boosted and not): it returns, the hogs keep going.
set a0 [dict get [gvloop::stats] gvl_acquires]
check {[gvloop_test::hog start 2] == 2} "two hogs"
poll_until {[dict get [gvloop::stats] gvl_acquires] >= $a0 + 1} "a hog holds the GVL"
set s0 [gvloop::stats]
for {set i 0} {$i < 200} {incr i} { gvloop::ping }
for {set i 0} {$i < 20} {incr i} { gvloop::ping -noboost }
set s1 [gvloop::stats]
check {[dict get $s1 pings] - [dict get $s0 pings] == 220} "220 pings counted"
check {[dict get $s1 gvl_contended] > [dict get $s0 gvl_contended]} "pings waited for hogs"
# A libuv timer and Tcl's after still fire while hogs run.
gvloop::timer 5 {set ::hog_timer 1}
after 5 {set ::hog_after 1}
wait_for ::hog_timer "timer under hogs"
if {![info exists ::hog_after]} { wait_for ::hog_after "after under hogs" }
check {[gvloop_test::hog stop] == 0} "hogs stopped"
check {[gvloop_test::hog count] == 0} "no hogs"

# Bad input.
check {[catch {gvloop::ping x}]} "ping arg"
check {![catch {gvloop::cancel [gvloop::timer -1 {}]}]} "negative ms: at once, as after"
check {[catch {gvloop::timer abc {}}]} "non-number ms"
check {[catch {gvloop_test::hog start -1}]} "negative hogs"
check {[catch {gvloop_test::hog start 1000}]} "too many hogs"
check {[catch {gvloop_test::hog fly}]} "bad subcommand"
check {[catch {gvloop::readable nosuchchan {}}]} "bad channel"
check {[catch {gvloop::readable $w1 {}}]} "write-only channel"
check {[catch {gvloop::cancel 999999} msg opts]} "unknown id"
check {$msg eq "gvloop::cancel: no timer or watch 999999 in this interpreter"} "unknown id's message"
check {[dict get $opts -errorcode] eq {POSIX ENOENT {no timer or watch 999999 in this interpreter}}} \
  "unknown id's errorcode"
check {[catch {gvloop::stats x}]} "stats arg"

# ping returns a latency (microseconds); stats has the bridge's key set
# (the bridge adds its tkb_* counters).
set lat [gvloop::ping]
check {[string is double -strict $lat] && $lat >= 0} "ping latency: $lat"
set want [lsort {gvl_acquires gvl_contended gvl_handoffs gvl_yields gvl_preempt_reqs gvl_preemptions gvl_boosts gvl_boosts_refused gvl_wait_ns gvl_hold_ns evl_iterations evl_dispatched evl_cancelled evl_acquisitions evl_budget_hits evl_live ntf_waits ntf_blocking ntf_file_events ntf_alerts pings}]
check {[lsort [dict keys [gvloop::stats]]] eq $want} "stats keys: [lsort [dict keys [gvloop::stats]]]"
# evloop's own codes: errorCode {GVLOOP EVL_ENAME code msg}, a list of four.
set f [open [info script]]
check {[catch {gvloop::readable $f {}} m o]} "a regular file cannot be watched"
set ec [dict get $o -errorcode]
check {[llength $ec] == 4 && [lrange $ec 0 2] eq {GVLOOP EVL_ENOTPOLL 10102} &&
       [string match "gvloop::readable: [lindex $ec 3]" $m]} "errorcode: $ec"
close $f
done_ok

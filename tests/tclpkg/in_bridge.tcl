# SPDX-License-Identifier: MIT
# Run by gvtclsh (libtkbridge): loading the package into a bridge interp, or
# into another interp of its thread, is refused with a clear error and the
# bridge's own gvloop:: commands still work (its thread stays the bridge's
# loop thread).
source [file join [file dirname [info script]] common.tcl]
check {[catch {package require gvloop} msg]} "package require refused"
check {[string match "*already runs on a gvloop bridge*" $msg]} "message: $msg"
# So is one into another interp of the same thread, whose loop would have
# taken the thread from the bridge: the bridge's ping and fileevents go on.
interp create c
check {[catch {c eval {package require gvloop}} cmsg]} "refused in a child interp"
check {[string match "*already runs a gvloop event loop*" $cmsg]} "child message: $cmsg"
# ... and ends with the code's own meaning, not evloop's for its calls.
check {[string match "*: file busy" $cmsg]} "child message's reason: $cmsg"
lassign [chan pipe] r w
fileevent $r readable {set ::fe [gets $r]}
puts $w data
flush $w
wait_for ::fe "a fileevent with the child interp there"
check {$::fe eq "data"} "fileevent read: $::fe"
close $r
close $w
set lat [gvloop::ping]
check {[string is double -strict $lat] && $lat >= 0} "ping latency: $lat"
# The same stats keys as the package's, plus the bridge's own tkb_*.
set keys {}
foreach k [dict keys [gvloop::stats]] {
  if {![string match tkb_* $k]} { lappend keys $k }
}
check {[lsort $keys] eq [lsort {gvl_acquires gvl_contended gvl_handoffs gvl_yields gvl_preempt_reqs gvl_preemptions gvl_boosts gvl_boosts_refused gvl_wait_ns gvl_hold_ns evl_iterations evl_dispatched evl_cancelled evl_acquisitions evl_budget_hits evl_live ntf_waits ntf_blocking ntf_file_events ntf_alerts pings}]} "stats keys: [lsort $keys]"
after 10 {set ::x 1}
wait_for ::x "after on the bridge"
done_ok

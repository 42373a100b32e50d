# SPDX-License-Identifier: MIT
# Another C extension gets the interp's evloop and GVL through gvloop's C
# API and its libuv timers, cross-thread posts and fd watch fire on the
# Tcl thread under the GVL; a deleted interp's pending timer is cancelled.
source [file join [file dirname [info script]] common.tcl]
set ext [lindex $argv 0]
proc counts {} { capi::counts }
# The pending timer of a deleted interp gets its last call (ECANCELED).
interp create c
c eval [list set ext $ext]
c eval {load $ext Capi; capi::long_timer}
interp delete c
load $ext Capi
check {[dict get [counts] cancelled] == 1} "cancelled at stop: [counts]"
# Our deletion callback's evl_cancel: 0 (it ran first) or EVL_ENOREG (10101:
# the loop had already ended the timer) -- never a use of freed memory.
check {[dict get [counts] gone_rc] in {0 10101}} "evl_cancel from the deletion callback: [counts]"

capi::timers 100
poll_until {[dict get [counts] ok] == 100} "100 timers"
capi::posts 500
poll_until {[dict get [counts] posts] == 500} "500 posts"
capi::pipe_write hello
capi::pipe_write world
poll_until {[dict get [counts] io_bytes] == 10} "10 bytes"
package require gvlooptest
gvloop_test::hog start 2
capi::timers 50
poll_until {[dict get [counts] ok] == 150} "50 timers under hogs"
gvloop_test::hog stop
check {[capi::wrong_thread] == 1} "EPERM (1) from another thread: [capi::wrong_thread]"
check {[dict get [counts] bad] == 0} "no callback off-thread or without the GVL: [counts]"
done_ok

# SPDX-License-Identifier: MIT
# The package in a stock wish: Tk events, after, update and tkwait keep
# working; bindings reach the GVL (ping) under a hog; libuv timers fire.
source [file join [file dirname [info script]] common.tcl]
package require gvloop
package require gvlooptest
set a0 [dict get [gvloop::stats] gvl_acquires]
gvloop_test::hog start 1
poll_until {[dict get [gvloop::stats] gvl_acquires] >= $a0 + 1} "the hog holds the GVL"
wm geometry . 200x100+0+0
button .b -text hi -command {lappend ::clicks [gvloop::ping]}
entry .e
pack .b .e
update
toplevel .t
after 50 {destroy .t}
tkwait window .t
check {![winfo exists .t]} "tkwait window"
bind .b <<Poke>> {lappend ::pokes [gvloop::ping]}
for {set i 0} {$i < 20} {incr i} { after [expr {$i * 2}] {event generate .b <<Poke>> -when tail} }
poll_until {[info exists ::pokes] && [llength $::pokes] >= 20} "20 virtual events"
after 20 {set ::extra 1}
wait_for ::extra "extra"
check {[llength $::pokes] == 20} "exactly 20 virtual events: [llength $::pokes]"
for {set i 0} {$i < 10} {incr i} { .b invoke }
check {[llength $::clicks] == 10} "10 clicks"
# Key events through the X server.
focus -force .e
update
event generate .e <KeyPress> -keysym a -when tail
event generate .e <KeyPress> -keysym b -when tail
poll_until {[.e get] eq "ab"} "keys reach the entry"
check {[.e get] eq "ab"} "entry got keys: [.e get]"
# A gvloop timer that changes a widget, with an idle redraw after it.
gvloop::timer 5 {.b configure -text changed; set ::tchanged 1}
wait_for ::tchanged "gvloop timer in wish"
update idletasks
check {[.b cget -text] eq "changed"} "widget changed from a libuv timer"
# Exposure after a withdraw/deiconify while the hog runs.
bind .b <Expose> {incr ::exposed}
set ::exposed 0
wm withdraw .
update
wm deiconify .
poll_until {$::exposed > 0} "window exposed again"
set s [gvloop::stats]
check {[dict get $s gvl_contended] > 0} "pings waited for the hog: $s"
gvloop_test::hog stop
destroy .
done_ok

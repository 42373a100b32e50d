# SPDX-License-Identifier: MIT
# The package's timers and watches behave as after and fileevent do where
# gvloop(n) says they do; each check failed before its fix.
source [file join [file dirname [info script]] common.tcl]
package require gvloop

# 1. A timer counts from the call: 60 ms after it, with the thread busy
#    all along, passes that do not wait run it (counted from its arming
#    on the next pass, it waited 40 ms more).
set ::fired 0
gvloop::timer 40 {set ::fired 1}
set end [expr {[clock milliseconds] + 60}]
while {[clock milliseconds] < $end} {}
for {set i 0} {$i < 20 && !$::fired} {incr i} { update }
check {$::fired == 1} "a 40 ms timer run by passes after 60 ms"

# 2. Other codes than ok reach the background error handler with their
#    code, as after's do (they all came as code 1 with an empty message).
set ::codes {}
interp bgerror {} {apply {{msg opts} {lappend ::codes [dict get $opts -code]}}}
gvloop::timer 0 {return -code break}
gvloop::timer 0 {continue}
gvloop::timer 0 {return -code 7 seven}
gvloop::timer 0 {error boom}
poll_until {[llength $::codes] >= 4} "four background errors of part 2"
check {[lsort $::codes] eq {1 3 4 7}} "background codes: $::codes"
interp bgerror {} bgerror

# 3. A one-shot timer has ended when its script starts: cancelling it from
#    there is an unknown id (POSIX ENOENT), as a moment later.
set ::self_id [gvloop::timer 0 {
  set ::self_rc [catch {gvloop::cancel $::self_id} ::self_msg ::self_opts]
  set ::self_done 1
}]
wait_for ::self_done "the self-cancelling timer"
check {$::self_rc == 1} "self-cancel is an error"
check {[lrange [dict get $::self_opts -errorcode] 0 1] eq {POSIX ENOENT}} \
  "self-cancel errorcode: [dict get $::self_opts -errorcode]"

# 4. Closing a watched channel ends its watch, as it removes fileevent
#    handlers: the next channel on the same descriptor can be watched, and
#    the old script never runs for it.
lassign [chan pipe] r w
chan configure $r -blocking 0
set fd1 $r
set ::old_calls 0
gvloop::readable $r {incr ::old_calls}
close $r
close $w
lassign [chan pipe] r w
chan configure $r -blocking 0
set ::got {}
set rc [catch {gvloop::readable $r {append ::got [read $r]; set ::rd 1}} msg]
check {$rc == 0} "watching the new channel ($fd1 closed, now $r): $msg"
puts -nonewline $w hello
flush $w
wait_for ::rd "data on the new channel"
check {$::got eq "hello" && $::old_calls == 0} "got '$::got', old script ran $::old_calls times"
close $r
close $w
poll_until {[dict get [gvloop::stats] evl_live] == 0} "the closed channels' watches ended"

# 7. A watch's script that fails (here before it reads) ends the watch and
#    reaches the background error handler once, as a fileevent handler's
#    does (it ran again at once for ever, and the handler never ran).
set ::calls 0
set ::bg {}
interp bgerror {} {apply {{msg opts} {lappend ::bg $msg}}}
lassign [chan pipe] r w
chan configure $r -blocking 0
gvloop::readable $r {incr ::calls; error "boom $::calls"}
puts -nonewline $w data
flush $w
poll_until {[llength $::bg] >= 1} "the failing watch's background error"
after 50 {set ::settled 1}
wait_for ::settled "a pause after the error"
check {$::calls == 1 && $::bg eq {{boom 1}}} "failing watch: $::calls calls, errors $::bg"
interp bgerror {} bgerror
close $r
close $w

# 8. A watched socket reset by its peer: the script runs, as fileevent's
#    does, and its read finds the error (the watch ended without a call).
set s [socket -server {apply {{c a p} {set ::sc $c}}} -myaddr 127.0.0.1 0]
set port [lindex [chan configure $s -sockname] 2]
set c [socket 127.0.0.1 $port]
wait_for ::sc "the server's accept"
puts -nonewline $c "unread"
flush $c
after 50 {set ::sent 1}
wait_for ::sent "the data to reach the server"
close $::sc                   ;# data left unread: the kernel resets
chan configure $c -blocking 0
gvloop::readable $c {set ::reset_rc [catch {read $::c}]; close $::c}
wait_for ::reset_rc "the reset socket's script"
close $s

# 9. A descriptor epoll cannot watch (/dev/null): the script runs once and
#    reads the end of file, as fileevent's does (it never ran).
set dn [open /dev/null r]
gvloop::readable $dn {set ::dn_eof [list [read $::dn] [eof $::dn]]; close $::dn}
wait_for ::dn_eof "the /dev/null watch's script"
check {$::dn_eof eq {{} 1}} "/dev/null: $::dn_eof"

# 10. A timer's script that waits (vwait) or calls update lets the other
#     callbacks already due run meanwhile, as after's does (the second one
#     waited for libuv's next event, for ever here: the watchdog's exit).
set dog [after 10000 {puts stderr "FAIL: a waiting timer script held back the other"; exit 1}]
set ::order {}
gvloop::timer 0 {lappend ::order A; vwait ::y; lappend ::order A2}
gvloop::timer 0 {lappend ::order B; set ::y 1}
poll_until {[llength $::order] == 3} "the waiting timer script"
check {$::order eq {A B A2}} "vwait in a timer script: $::order"
set ::order {}
gvloop::timer 0 {lappend ::order a; update; lappend ::order c}
gvloop::timer 0 {lappend ::order b}
poll_until {[llength $::order] == 3} "the updating timer script"
check {$::order eq {a b c}} "update in a timer script: $::order"
after cancel $dog

# 5. The message of a wrong number of arguments, as Tcl's own commands.
catch {gvloop::stats x} msg
check {$msg eq {wrong # args: should be "gvloop::stats"}} "stats message: $msg"

# 6. unload of the library from a script of its own timer is refused (its
#    code would be unmapped under it: a segfault), and the process goes on;
#    at top level it unloads.
set lib [lindex [lsearch -inline -index 1 [info loaded] Gvloop] 0]
gvloop::timer 0 {set ::un_rc [catch {unload $::lib} ::un_msg]; set ::un_done 1}
wait_for ::un_done "the unloading timer"
check {$::un_rc == 1 && [string match "*cannot unload*" $::un_msg]} "unload in a timer: $::un_msg"
after 20 {set ::after_unload 1}
wait_for ::after_unload "events after the refused unload"
unload $lib
check {[llength [info commands ::gvloop::*]] == 0} "commands gone after unload"
done_ok

# SPDX-License-Identifier: MIT
# The package's commands as Tcl users expect of an extension: their
# arguments follow after, fileevent and Tcl's option parsing; they go with
# the package however they were renamed, and a user's command under an
# old name stays.
source [file join [file dirname [info script]] common.tcl]
set lib [file join [lindex $env(TCLLIBPATH) 0] libgvloop_tcl.so]
load $lib Gvloop

# 1. Arguments.
set ::fired {}
gvloop::timer -5 {lappend ::fired neg}
gvloop::timer 18446744073709551615 {lappend ::fired wrapped}
poll_until {[llength $::fired] == 2} "negative ms fire at once, as after"
set rc [catch {gvloop::ping -x} m o]
check {$rc && $m eq {bad option "-x": must be -noboost}} "ping -x: $m"
check {[dict get $o -errorcode] eq {TCL LOOKUP INDEX option -x}} "ping -x code: [dict get $o -errorcode]"
set rc [catch {gvloop::ping -nob} m]
check {$rc == 0} "ping -nob: $m"
lassign [chan pipe] r w
set rc [catch {gvloop::readable $w {}} m]
check {$rc && $m eq "channel is not readable"} "readable write-only: $m"
set rc [catch {fileevent $w readable {}} m2]
check {$rc && $m2 eq $m} "as fileevent says: $m2"
close $r
close $w

# 2. Renamed commands, and a wrapper under an old name, at unload while
#    another interp keeps the library loaded.
interp create keep
keep eval [list load $lib Gvloop]
rename gvloop::stats ::mystats
namespace eval gvloop {
  rename timer _timer
  proc timer {ms script} { _timer $ms $script }
}
unload $lib
check {[llength [info commands ::mystats]] == 0} "renamed stats gone with the package"
check {[llength [info commands ::gvloop::_timer]] == 0} "renamed timer gone with the package"
check {[info commands ::gvloop::timer] eq "::gvloop::timer"} "the user's wrapper stays"
set rc [catch {mystats} m]
check {$rc && $m eq {invalid command name "mystats"}} "mystats: $m"
set rc [catch {keep eval gvloop::stats} m]
check {$rc == 0} "the other interp keeps its commands: $m"
interp delete keep

# 3. The same with the library unloaded by its only interp (a new one:
#    Tcl 8.6 does not initialise the package again where it was unloaded).
interp create solo
solo eval [list load $lib Gvloop]
solo eval {rename gvloop::ping ::myping}
solo eval [list unload $lib]
check {[llength [solo eval {info commands ::myping}]] == 0} "renamed ping gone with the library"
interp delete solo
done_ok

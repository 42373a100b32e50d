# SPDX-License-Identifier: MIT
# gvloop(n) documents every command the package creates, and nothing more.
# Usage: manpage.tcl PATH-TO-gvloop.n
source [file join [file dirname [info script]] common.tcl]
package require gvloop
set f [open [lindex $argv 0]]
set man [read $f]
close $f
set documented [lsort -unique [regexp -all -inline {\\fBgvloop::[a-z_]+\\fR} $man]]
set documented [lmap d $documented {string range $d 3 end-3}]
set commands [lsort [lmap c [info commands ::gvloop::*] {string range $c 2 end}]]
check {$documented eq $commands} "documented: $documented, commands: $commands"
done_ok

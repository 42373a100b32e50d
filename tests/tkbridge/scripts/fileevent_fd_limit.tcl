# SPDX-License-Identifier: MIT
# A fileevent made when the process is at its open-file limit (no
# descriptor left): as under stock tclsh, an empty
# pipe is not readable, and its handler runs once data comes.  (The
# notifier watches descriptors in an epoll set of its own; where no
# descriptor can be had for the set it polls the channel's, and does not
# call the channel always ready, which would be a busy loop.)
after 1 {set ::warm 1}; vwait ::warm   ;# stock tclsh starts its notifier thread here
lassign [chan pipe] r w
set fs {}
while {![catch {open /dev/null} f]} { lappend fs $f }
fconfigure $r -blocking 0
set ::hits 0
set ::got {}
fileevent $r readable {
  incr ::hits
  append ::got [read $::r]
  if {$::got ne ""} { set ::done 1 }
}
after 200 {set ::quiet $::hits}
after 250 {puts -nonewline $::w hello; flush $::w}
after 5000 {set ::done timeout}
vwait ::done
foreach f $fs { close $f }
puts "quiet=$::quiet got=$::got done=$::done"

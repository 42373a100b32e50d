# SPDX-License-Identifier: MIT
# gvtclsh runs a plain tclsh script: argv, after/vwait, fileevent, exit code.
puts "argv=$argv"
after 5 {set ::done ok}
vwait ::done
puts "after=$::done"
set fd [open "|echo hi" r]
fileevent $fd readable {
    if {[gets $fd l] >= 0} {set ::line $l} elseif {[eof $fd]} {set ::eof 1}
}
vwait ::eof
close $fd
puts "pipe=$::line"
gvloop::ping
puts "ping=ok"

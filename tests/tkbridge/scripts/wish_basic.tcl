# SPDX-License-Identifier: MIT
# gvwish runs a plain wish script and exits when "." is destroyed.
button .b -text hello -command {set ::clicked 1}
pack .b
update
after 0 {.b invoke}
vwait ::clicked
puts "clicked=$::clicked"
set s [gvloop::stats]
if {[dict exists $s gvl_acquires] && [dict exists $s ntf_waits]} {puts "stats=ok"}
after 10 {destroy .}

# SPDX-License-Identifier: MIT
# tk_idle for the package: a stock wish app that loaded gvloop, shows a
# button and does nothing (argv: "plain" skips the package, for the
# stock-wish baseline measured in the same run).
if {[lindex $argv 0] ne "plain"} { package require gvloop }
button .b -text idle -command {puts clicked}
pack .b

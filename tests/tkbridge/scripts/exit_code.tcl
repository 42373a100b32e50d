# SPDX-License-Identifier: MIT
# `exit 3` must end the shell with status 3 (the test expects failure).
after 0 {exit 3}
vwait ::forever
puts "not reached"

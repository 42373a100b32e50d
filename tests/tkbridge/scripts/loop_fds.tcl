# SPDX-License-Identifier: MIT
# The descriptors the event loop keeps: libuv's epoll, two eventfds and two
# signal pipes, all at 64 or above (man gvtclsh).  Counts those kinds of
# descriptor at 64 and above (what the test's own parent left open sits
# lower), prints the count, then the first number a file gets.
set n 0
foreach f [glob -directory /proc/self/fd *] {
  set fd [file tail $f]
  if {$fd < 64 || [catch {file readlink $f} l]} continue
  if {[regexp {^(anon_inode:\[(eventpoll|eventfd)\]|pipe:)} $l]} { incr n }
}
set c [open [info script]]
puts "loop=$n first=$c"
close $c

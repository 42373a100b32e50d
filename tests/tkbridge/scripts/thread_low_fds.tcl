# SPDX-License-Identifier: MIT
# A thread started with only five descriptors free: its notifier's loop
# needs five (libuv's process-wide pipe exists already), so the thread
# starts and answers, after a timed wait without a descriptor for its
# deadline's timer; once descriptors are free, everything goes on.
package require Thread
set fs {}
while {![catch {open /dev/null} f]} { lappend fs $f }
for {set i 0} {$i < 5} {incr i} {
  close [lindex $fs end]
  set fs [lrange $fs 0 end-1]
}
set a ""
set rc [catch {thread::create {thread::wait}} t]
if {!$rc} {
  set rc [catch {thread::send $t {after 20 {set ::x 6}; vwait ::x; expr {$::x * 7}}} a]
}
foreach f $fs { close $f }
if {$rc} { puts "thread failed: $t $a"; exit 1 }
puts "answer=$a"
thread::release $t
exit 0

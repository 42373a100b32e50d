# SPDX-License-Identifier: MIT
# A thread started with only five descriptors free: its notifier's loop
# needs five (libuv's process-wide pipe exists already), so the thread
# starts and answers; once descriptors are free, everything goes on.
package require Thread
set fs {}
while {![catch {open /dev/null} f]} { lappend fs $f }
for {set i 0} {$i < 5} {incr i} {
  close [lindex $fs end]
  set fs [lrange $fs 0 end-1]
}
set rc [catch {thread::create {thread::wait}} t]
foreach f $fs { close $f }
if {$rc} { puts "thread::create failed: $t"; exit 1 }
puts "answer=[thread::send $t {expr {6 * 7}}]"
thread::release $t
exit 0

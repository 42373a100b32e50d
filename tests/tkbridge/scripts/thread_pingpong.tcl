# SPDX-License-Identifier: MIT
# Two Thread-package threads bounce an async message 2000 times while the
# main thread waits: each message wakes a thread's own notifier loop.
if {[catch {package require Thread}]} { puts "no Thread package"; exit 77 }
set me [thread::id]
set a [thread::create {thread::wait}]
set b [thread::create {thread::wait}]
foreach {x y} [list $a $b $b $a] {
  thread::send $x [list proc hit {n} [format {
    if {$n == 0} { thread::send -async %s {set ::done 1}; return }
    thread::send -async %s [list hit [incr n -1]]
  } $me $y]]
}
thread::send -async $a {hit 2000}
vwait ::done
puts "hops=2000"
exit 0

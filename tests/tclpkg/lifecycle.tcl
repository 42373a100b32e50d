# SPDX-License-Identifier: MIT
# Interp deletion and `unload` leave no thread behind; two interpreters in
# one thread share its loop; interpreters on two threads (Thread package,
# when installed) each get their own.
source [file join [file dirname [info script]] common.tcl]
settle
set base [nthreads]
set lib [file join [lindex $env(TCLLIBPATH) 0] libgvloop_tcl.so]

# 1. A child interp loads gvloop, starts hogs, registers a pending timer and
#    watch, and is deleted: hogs joined, the loop stopped, no thread left.
interp create c1
c1 eval {package require gvloop; package require gvlooptest; gvloop_test::hog start 3; gvloop::timer 100000 {puts never}}
lassign [chan pipe] r w
interp share {} $r c1
c1 eval [list gvloop::readable $r {puts never}]
check {[nthreads] == $base + 3} "three hogs running: [nthreads] vs $base"
interp delete c1
poll_until {[nthreads] == $base} "no thread after interp delete: [nthreads] vs $base"

# 2. Two interps in this thread share one loop; deleting one keeps the
#    other's timers working; both see each other's ids as foreign.
interp create a
interp create b
a eval {package require gvloop}
b eval {package require gvloop}
a eval {set ::n 0; set id [gvloop::timer 100000 {}]}
check {[catch {b eval [list gvloop::cancel [a eval {set id}]]}]} "b cannot cancel a's timer"
a eval {gvloop::timer 5 {incr ::n}}
b eval {set ::m 0; gvloop::timer 5 {incr ::m}}
poll_until {[a eval {set ::n}] >= 1 && [b eval {set ::m}] >= 1} "timers of a and b"
check {[a eval {set ::n}] == 1 && [b eval {set ::m}] == 1} "both timers fired once"
check {[a eval {dict get [gvloop::stats] evl_live}] == [b eval {dict get [gvloop::stats] evl_live}]} "one shared loop"
b eval {package require gvlooptest; gvloop_test::hog start 1}
interp delete b
a eval {gvloop::timer 5 {set ::after_b 1}}
poll_until {[a eval {info exists ::after_b}]} "a's timer after b is deleted"
check {[a eval {info exists ::after_b}]} "a's timer fires after b is deleted"
check {[a eval {gvloop::ping}] >= 0} "a pings (a latency in us)"
interp delete a
poll_until {[nthreads] == $base} "no thread after both deleted"

# 3. load + unload in a child (and again: the loop comes back).
foreach round {1 2} {
  interp create u
  u eval [list load $lib Gvloop]
  u eval {package require gvlooptest; gvloop_test::hog start 2; gvloop::timer 100000 {}}
  check {[nthreads] == $base + 2} "round $round: hogs"
  u eval [list unload $lib]
  check {[llength [u eval {info commands ::gvloop::*}]] == 0} "round $round: commands gone"
  # The hogs (test tooling, not the package) outlive the unload.
  check {[u eval {gvloop_test::hog stop}] == 0} "round $round: hogs stopped"
  poll_until {[nthreads] == $base} "round $round: no thread after unload"
  interp delete u
}

# 4. The main interp itself, then two threads with one interp each.
package require gvloop
package require gvlooptest
gvloop_test::hog start 1
gvloop_test::hog stop
poll_until {[nthreads] == $base} "main interp hog joined"
if {![catch {package require Thread}]} {
  set tids {}
  foreach i {1 2} {
    set tid [thread::create -joinable]
    lappend tids $tid
    thread::send $tid [list set ::auto_path $::auto_path]
    thread::send $tid {
      package require gvloop
      package require gvlooptest
      set ::v 0
      gvloop::timer 5 {set ::v "pinged [gvloop::ping]"}
      vwait ::v
      gvloop_test::hog start 1
    }
    check {[string match "pinged *" [thread::send $tid {set ::v}]]} "thread $i: timer and ping"
  }
  foreach tid $tids {
    check {[thread::send $tid {gvloop_test::hog stop}] == 0} "thread hog stopped"
    thread::release $tid
    # Joined, so that their end happens-before what follows (TSan sees the
    # descriptors they closed being reused here).
    thread::join $tid
  }
  # Tcl 8.6 has one notifier thread per process, so the count returns to
  # the base.
  poll_until {[nthreads] == $base} "threads gone: [nthreads] vs $base"

  # 5. Threads that end by thread::exit, their interp never deleted (the
  #    Thread package's way): the loop and its descriptors go with the
  #    thread's Tcl (they used to stay, five descriptors a thread).
  set fds [llength [glob -directory /proc/self/fd *]]
  set ap [list set ::auto_path $::auto_path]
  for {set i 0} {$i < 20} {incr i} {
    thread::join [thread::create -joinable "$ap; package require gvloop; thread::exit"]
    thread::join [thread::create -joinable "$ap; package require gvloop
      gvloop::timer 1 {set ::x 1}; vwait ::x; after 1 thread::exit; thread::wait"]
  }
  check {[llength [glob -directory /proc/self/fd *]] == $fds} \
    "descriptors after 40 threads ended by thread::exit: [llength [glob -directory /proc/self/fd *]] vs $fds"
  poll_until {[nthreads] == $base} "thread::exit threads gone: [nthreads] vs $base"
} else {
  puts "Thread package not installed: two-thread case skipped"
}
done_ok

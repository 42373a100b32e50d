# SPDX-License-Identifier: MIT
# package require gvloop with only $env(FREE) descriptors free (under a
# low `ulimit -n`): a Tcl error naming the reason, never an abort (libuv
# aborts when the first loop of a process cannot make its signal pipe);
# once descriptors are free again, the package loads.
set fs {}
while {![catch {open /dev/null} f]} { lappend fs $f }
for {set i 0} {$i < $::env(FREE)} {incr i} {
  close [lindex $fs end]
  set fs [lrange $fs 0 end-1]
}
set rc [catch {package require gvloop} msg]
foreach f $fs { close $f }
if {$rc != 1 || ![string match "*too many open files*" $msg]} {
  puts "FAIL free=$::env(FREE): rc=$rc msg=$msg"
  exit 1
}
if {[catch {package require gvloop} v]} {
  puts "FAIL free=$::env(FREE): no load once descriptors are free: $v"
  exit 1
}
after 10 {set done 1}
vwait done
puts "free=$::env(FREE) ok: $msg; then $v"

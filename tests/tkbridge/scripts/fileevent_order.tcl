# SPDX-License-Identifier: MIT
# Several channels ready in one wait: their fileevents run in the order of
# Tcl's Unix notifier, whose handler list puts the newest handler first
# (stock tclsh 8.6 prints "1 3 0 4 2"), whatever order the kernel reports
# them in.  Handlers are made in the order 2 4 0 3 1, data is written in
# the order 3 1 4 0 2, all before the wait.
set rs {}
set ws {}
for {set i 0} {$i < 5} {incr i} {
  lassign [chan pipe] r w
  fconfigure $w -buffering none
  fconfigure $r -blocking 0
  lappend rs $r
  lappend ws $w
}
set order {}
foreach i {2 4 0 3 1} {
  fileevent [lindex $rs $i] readable [list apply {{r i} {
    lappend ::order $i
    read $r
    fileevent $r readable {}
    if {[llength $::order] == 5} {set ::done 1}
  }} [lindex $rs $i] $i]
}
foreach i {3 1 4 0 2} {puts [lindex $ws $i] x}
vwait done
puts "order=$order"

# Run by gvtclsh (libtkbridge): loading the package into a bridge interp is
# refused with a clear error and the bridge's own gvloop:: commands still
# work (its thread stays the bridge's loop thread).
source [file join [file dirname [info script]] common.tcl]
check {[catch {package require gvloop} msg]} "package require refused"
check {[string match "*already runs on a gvloop bridge*" $msg]} "message: $msg"
gvloop::ping
after 10 {set ::x 1}
wait_for ::x "after on the bridge"
done_ok

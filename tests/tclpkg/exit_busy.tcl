# SPDX-License-Identifier: MIT
# `exit` with the package loaded, a registration pending whose last call
# needs the GVL, and the GVL held for good by native code with no safe
# point: the process exits at once, its loop ending with it as Tcl's own
# notifier does.  A loop torn down at exit would wait for the GVL to make
# that last call, for ever.  Run under `timeout`.
source [file join [file dirname [info script]] common.tcl]
load [lindex $argv 0] Capi
capi::long_timer
capi::hold_gvl
done_ok

# SPDX-License-Identifier: MIT
# `exit` is Tcl's own: Tk's exit handler destroys the windows, so <Destroy>
# bindings run, and the code is kept.
toplevel .t
bind .t <Destroy> {puts "destroyed %W"; flush stdout}
update
after 10 {exit 5}

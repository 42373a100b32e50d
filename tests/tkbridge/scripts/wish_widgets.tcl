# SPDX-License-Identifier: MIT
# An ordinary Tk program run unchanged by gvwish: classic and ttk widgets,
# geometry, bindings, keyboard events, the clipboard, nested event loops
# (tkwait, vwait, update) and `after`, then exit with a status.
package require Tk
set out {}
proc note {s} {lappend ::out $s}

wm geometry . 300x200+0+0
entry .e
text .t -width 20 -height 3
listbox .lb -height 3
canvas .c -width 80 -height 40
ttk::button .b -text go -command {note button}
scrollbar .sb -command {.lb yview}
.lb configure -yscrollcommand {.sb set}
pack .e .t .lb .sb .c .b -side top -fill x
foreach i {one two three four} {.lb insert end $i}
.c create rectangle 5 5 30 30 -fill red -tags box
.t insert end "hello\nworld"
update

# keyboard input through real X event processing
focus -force .e
update
foreach k {a b c} {event generate .e <KeyPress-$k>}
update
note entry=[.e get]

# widget queries and geometry
note lines=[.t count -lines 1.0 end]
note sel=[.lb get 1]
note box=[.c coords box]

# ttk button invoke via the event loop
after 0 {.b invoke}
vwait ::out
update

# clipboard round trip inside one application
clipboard clear
clipboard append "clip-data"
note clip=[clipboard get]

# a toplevel waited for with tkwait window, closed from an after script
toplevel .w
after 20 {destroy .w}
tkwait window .w
note tkwait=done

# nested vwait inside an after handler
after 0 {
    after 5 {set ::inner ok}
    vwait ::inner
    note inner=$::inner
    set ::outer ok
}
vwait ::outer

puts [join $out \n]
exit 7

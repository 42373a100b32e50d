# SPDX-License-Identifier: MIT
# Tk comes into tclsh with `package require Tk`, and only then: the shell
# maps neither libtk nor Xlib before.  The same output from tclsh8.6.
proc mapped {name} {
    set f [open /proc/self/maps]
    set m [string match *$name* [read $f]]
    close $f
    return $m
}
puts "before: tk=[mapped libtk8.6] x11=[mapped libX11]"
puts "Tk=[package vsatisfies [package require Tk] 8.6]"
puts "after: tk=[mapped libtk8.6] x11=[mapped libX11]"
button .b -text hi
pack .b
update
puts "mapped=[winfo ismapped .b]"
# Tk names the application and its class after the script, as in tclsh.
set n [file tail $argv0]
puts "names=[expr {[tk appname] eq $n && [winfo class .] eq [string totitle $n]}]"
exit

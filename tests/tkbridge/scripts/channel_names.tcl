# SPDX-License-Identifier: MIT
# A script's channels get the names they get under tclsh: the loop's own
# descriptors, and the dups of watched ones, sit above the numbers files
# get first.  Prints the names; the test compares them with stock tclsh's.
set f [open /dev/null]
set p [open |true]
lassign [chan pipe] r w
fileevent $r readable {set ::x 1}
set g [open /dev/null]
puts "open=$f pipe=$p chanpipe=$r,$w after_fileevent=$g"
fileevent $r readable {}
close $f
close $p
close $r
close $w
close $g

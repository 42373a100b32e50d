# SPDX-License-Identifier: MIT
# viewer.tcl -- the viewer's window.  Host commands (viewer::open, chunk,
# progress, finish, say, quit) are in viewer.c; viewer::batch is set first.
namespace eval viewer {
  variable frames 0
  variable gap 0
  variable last 0
  variable loading 0
  variable angle 0
  variable shown_path ""
}

proc viewer::build {} {
  wm title . "gvloop viewer"
  wm geometry . 900x600
  wm protocol . WM_DELETE_WINDOW viewer::quit
  frame .top
  label .top.l -text "File:"
  entry .top.path -width 60
  button .top.open -text "Open" -command {viewer::start [.top.path get]}
  canvas .top.spin -width 22 -height 22 -highlightthickness 0
  .top.spin create arc 3 3 19 19 -start 0 -extent 100 -style arc -width 3 \
      -outline #d08000 -tags arc
  pack .top.l -side left
  pack .top.path -side left -fill x -expand 1 -padx 4
  pack .top.open .top.spin -side left -padx 4
  pack .top -fill x -padx 6 -pady 6
  bind .top.path <Return> {viewer::start [.top.path get]}

  frame .bar
  ttk::progressbar .bar.p -orient horizontal -length 300 -mode determinate
  label .bar.status -text "Open a text file." -anchor w
  pack .bar.p -side left -padx 6
  pack .bar.status -side left -fill x -expand 1
  pack .bar -fill x -pady {0 6}

  frame .body
  text .body.t -wrap none -undo 0 -font TkFixedFont \
      -yscrollcommand {.body.y set} -xscrollcommand {.body.x set}
  scrollbar .body.y -orient vertical -command {.body.t yview}
  scrollbar .body.x -orient horizontal -command {.body.t xview}
  grid .body.t -row 0 -column 0 -sticky nsew
  grid .body.y -row 0 -column 1 -sticky ns
  grid .body.x -row 1 -column 0 -sticky ew
  grid rowconfigure .body 0 -weight 1
  grid columnconfigure .body 0 -weight 1
  pack .body -fill both -expand 1
}

# The spinner runs all the time; while loading it also records the frames
# and the longest gap between them (the window's responsiveness).
proc viewer::spin {} {
  variable angle; variable frames; variable gap; variable last; variable loading
  set now [clock milliseconds]
  if {$loading} {
    incr frames
    if {$last && $now - $last > $gap} { set gap [expr {$now - $last}] }
  }
  set last $now
  set angle [expr {($angle + 15) % 360}]
  .top.spin itemconfigure arc -start $angle
  after 20 viewer::spin
}

proc viewer::status {text {colour black}} {
  .bar.status configure -text $text -foreground $colour
}

proc viewer::start {path} {
  variable loading; variable frames; variable gap
  if {$path eq ""} { return }
  .top.path delete 0 end
  .top.path insert 0 $path
  .body.t delete 1.0 end
  set frames 0; set gap 0; set loading 1
  .bar.p configure -mode indeterminate
  .bar.p start 15
  status "Reading $path ..."
  if {[catch {viewer::open $path} err]} {
    loaded error "cannot read $path: $err" 0 0
  }
}

proc viewer::loaded {kind msg size lines} {
  .bar.p stop
  .bar.p configure -mode determinate -value 0
  if {$kind ne "ok"} {
    variable loading 0
    status $msg red3
    .body.t insert end "\n   $msg\n"
    if {$viewer::batch} {
      viewer::say $msg
      after 100 [list viewer::finish [expr {$kind eq "binary" ? 3 : 4}] 0 0]
    }
    return
  }
  variable shown_path $msg
  status "Showing $msg: $size bytes, $lines lines ..."
  after 0 viewer::next
}

# One chunk per event: the window answers between chunks.
proc viewer::next {} {
  variable loading
  set text [viewer::chunk]
  lassign [viewer::progress] pos shown total lines
  if {$text ne ""} {
    .body.t insert end $text
    .bar.p configure -value [expr {$shown ? 100.0 * $pos / $shown : 100}]
    after 1 viewer::next
    return
  }
  set loading 0
  .bar.p configure -value 100
  set note [expr {$shown < $total ? " (first $shown bytes shown)" : ""}]
  status "$viewer::shown_path: $total bytes, $lines lines$note" darkgreen
  if {$viewer::batch} {
    after 100 [list viewer::finish 0 $viewer::frames $viewer::gap]
  }
}

viewer::build
viewer::spin

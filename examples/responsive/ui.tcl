# SPDX-License-Identifier: MIT
# ui.tcl -- the window of the responsive demo.  Compiled into the program
# (see CMakeLists.txt).  The gvd:: commands are defined in responsive.c:
#   gvd::stamp, gvd::frame, gvd::flush   plain Tcl commands (no GVL)
#   gvd::probe, gvd::run, gvd::policy,   host commands (run under the GVL,
#   gvd::stats, gvd::quit, gvd::snapshot   taken by tkbridge with the boost)
# Before this script runs, main sets ui::script, ui::phase_ms, ui::nthreads,
# ui::policy, ui::tour (the policies of the scripted run) and ui::hold_file.

namespace eval ui {
  variable order {gvloop gvloop-noboost cond-timer cpython}
  variable names
  array set names {
    gvloop         "gvloop, with boost"
    gvloop-noboost "gvloop, no boost"
    cond-timer     "cond-timer (Ruby 1.9.3-3.x)"
    cpython        "cpython (CPython's GIL)"
  }
  variable angle 0
  variable running 0
  variable bg #1e2229
  variable fg #e6e6e6
  variable dim #9aa3ad
  variable accent #f0b030
}

proc ui::fmt {us} {
  if {$us < 1000} { return [format "%.1f µs" $us] }
  if {$us < 1000000} { return [format "%.1f ms" [expr {$us / 1000.0}]] }
  return [format "%.2f s" [expr {$us / 1000000.0}]]
}

proc ui::build {} {
  variable bg; variable fg; variable dim; variable accent; variable order
  variable names
  wm title . "gvloop: a window that stays responsive while threads compute"
  wm geometry . 960x680+0+0
  wm resizable . 0 0
  wm protocol . WM_DELETE_WINDOW gvd::quit
  . configure -background $bg
  option add *Background $bg
  option add *Foreground $fg
  option add *highlightThickness 0
  option add *Font {Helvetica 11}
  font create ui::big -family Helvetica -size 16 -weight bold
  font create ui::mono -family Courier -size 11
  font create ui::small -family Helvetica -size 9

  # The picture the interpreter threads render, row by row.
  image create photo mandel -width 560 -height 420
  mandel put #2a2f38 -to 0 0 560 420
  label .img -image mandel -borderwidth 0
  place .img -x 10 -y 10

  frame .r
  place .r -x 585 -y 6 -width 365 -height 430

  # Spinner and clock: pure Tcl timers, no host code.
  frame .r.top
  canvas .r.top.spin -width 52 -height 52 -background $bg
  .r.top.spin create oval 4 4 48 48 -outline #3a414c -width 6
  .r.top.spin create arc 4 4 48 48 -start 0 -extent 100 -style arc \
      -outline $accent -width 6 -tags arc
  label .r.top.clock -font ui::big -text "--:--:--.---"
  label .r.top.note -font ui::small -foreground $dim -justify left \
      -text "spinner and clock: Tcl 'after' timers on the\nloop thread; they never need the GVL"
  grid .r.top.spin -row 0 -column 0 -rowspan 2 -padx {0 10}
  grid .r.top.clock -row 0 -column 1 -sticky w
  grid .r.top.note -row 1 -column 1 -sticky w
  pack .r.top -anchor w -pady {0 6}

  labelframe .r.pol -text "GVL policy (switch at any time)" -foreground $dim
  foreach p $order {
    radiobutton .r.pol.$p -text $names($p) -variable ui::policy -value $p \
        -command ui::set_policy -selectcolor #30353f -anchor w \
        -activebackground $bg -activeforeground $accent
    pack .r.pol.$p -anchor w -fill x
  }
  pack .r.pol -fill x -pady 2

  frame .r.run
  label .r.run.l -text "interpreter threads:"
  spinbox .r.run.n -from 1 -to 8 -width 3 -textvariable ui::nthreads \
      -buttonbackground #30353f -background #2a2f38 -state readonly \
      -readonlybackground #2a2f38
  button .r.run.start -text "Start rendering" -width 15 -command ui::toggle \
      -background #3a414c -activebackground #4a525f
  pack .r.run.l .r.run.n -side left
  pack .r.run.start -side right
  pack .r.run -fill x -pady 6

  frame .r.ping
  button .r.ping.b -text "Ping" -width 6 -command ui::ping \
      -background #3a414c -activebackground #4a525f
  label .r.ping.res -text "click: the host code answers" -foreground $dim
  pack .r.ping.b -side left
  pack .r.ping.res -side left -padx 8
  pack .r.ping -fill x -pady 2

  label .r.live -font ui::mono -justify left -anchor w \
      -text "Tcl event -> host code running\n"
  pack .r.live -fill x -pady {6 0}
  canvas .r.hist -width 365 -height 118 -background #252a32
  pack .r.hist -fill x

  # All policies so far.
  frame .t -background #252a32
  place .t -x 10 -y 442 -width 940 -height 170
  set cols {policy events "p50" "p99" "max" "longest UI stall" "work (M iter/s)"}
  set c 0
  foreach h $cols {
    label .t.h$c -text $h -foreground $dim -background #252a32 -font {Helvetica 11 bold}
    grid .t.h$c -row 0 -column $c -sticky w -padx 8 -pady {6 2}
    incr c
  }
  set r 1
  foreach p $order {
    for {set c 0} {$c < [llength $cols]} {incr c} {
      label .t.c$r$c -text [expr {$c == 0 ? $names($p) : "-"}] \
          -background #252a32 -font [expr {$c == 0 ? "Helvetica 11" : "ui::mono"}]
      grid .t.c$r$c -row $r -column $c -sticky w -padx 8 -pady 2
    }
    incr r
  }
  grid columnconfigure .t 0 -minsize 250

  label .foot -font ui::small -foreground $dim -justify left -anchor w -text \
"Each policy is the lock the interpreter threads run on.  The probe measures the time from a Tcl event (a 20 ms timer,\
\nor a click on Ping) until host code runs.  gvloop: Tk and Tcl run outside the GVL, and an event takes the GVL with a\
\npriority boost at the next safe point.  cond-timer and cpython make the event wait for the time slice instead."
  place .foot -x 10 -y 620 -width 940 -height 56
}

proc ui::spin {} {
  variable angle
  gvd::frame
  set angle [expr {($angle + 10) % 360}]
  .r.top.spin itemconfigure arc -start $angle
  set ms [clock milliseconds]
  .r.top.clock configure -text \
      "[clock format [expr {$ms / 1000}] -format %H:%M:%S].[format %03d [expr {$ms % 1000}]]"
  after 20 ui::spin
}

proc ui::tick {} {
  gvd::stamp
  gvd::probe tick
  after 20 ui::tick
}

proc ui::ping {} {
  gvd::stamp
  set us [gvd::probe click]
  .r.ping.res configure -text "answered after [ui::fmt $us]" -foreground $ui::accent
}

proc ui::set_policy {} {
  variable policy
  gvd::policy $policy
  ui::refresh_once
}

proc ui::toggle {} {
  variable running
  variable nthreads
  if {$running} {
    gvd::run 0
    set running 0
    .r.run.start configure -text "Start rendering"
  } else {
    gvd::run $nthreads
    set running 1
    .r.run.start configure -text "Stop"
  }
}

proc ui::draw_hist {hist} {
  set c .r.hist
  $c delete all
  set labels {<10µs <100µs <1ms <10ms <100ms ≥100ms}
  set colors {#3cb371 #7cc36a #d6c84a #f0a030 #e06030 #d03030}
  set total 0
  foreach h $hist { incr total $h }
  set w 58
  for {set i 0} {$i < 6} {incr i} {
    set n [lindex $hist $i]
    set frac [expr {$total ? double($n) / $total : 0}]
    set x0 [expr {6 + $i * 60}]
    set y1 96
    set y0 [expr {$y1 - int(80 * $frac)}]
    if {$n > 0 && $y0 > $y1 - 2} { set y0 [expr {$y1 - 2}] }
    $c create rectangle $x0 $y0 [expr {$x0 + $w - 6}] $y1 -fill [lindex $colors $i] -width 0
    $c create text [expr {$x0 + ($w - 6) / 2}] [expr {$y0 - 8}] -text $n \
        -fill $ui::fg -font ui::small
    $c create text [expr {$x0 + ($w - 6) / 2}] 108 -text [lindex $labels $i] \
        -fill $ui::dim -font ui::small
  }
}

proc ui::refresh_once {} {
  variable order
  variable names
  set s [gvd::stats]
  set cur [lindex $s 0]
  set r 1
  foreach item [lrange $s 2 end] {
    lassign $item key n p50 p99 max stall rate hist
    set row [expr {[lsearch $order $key] + 1}]
    set bgc [expr {$key eq $cur ? "#3a414c" : "#252a32"}]
    if {$n > 0} {
      set vals [list $n [fmt $p50] [fmt $p99] [fmt $max] [format "%.0f ms" $stall] $rate]
    } else {
      set vals {- - - - - -}
    }
    .t.c${row}0 configure -background $bgc
    for {set c 1} {$c <= 6} {incr c} {
      .t.c$row$c configure -text [lindex $vals [expr {$c - 1}]] -background $bgc
    }
    if {$key eq $cur} {
      .r.live configure -text [format "%-16s %s events\np50 %-9s p99 %-9s max %s" \
          "$key:" $n [fmt $p50] [fmt $p99] [fmt $max]]
      draw_hist $hist
    }
  }
}

proc ui::refresh {} {
  ui::refresh_once
  after 250 ui::refresh
}

# ---- scripted run (--script) ----------------------------------------------

proc ui::click {w} {
  event generate $w <Enter>
  event generate $w <ButtonPress-1> -x 3 -y 3
  event generate $w <ButtonRelease-1> -x 3 -y 3
  event generate $w <Leave>
}

proc ui::hold {file deadline} {
  if {$file eq "" || [file exists $file] || [clock milliseconds] > $deadline} {
    gvd::quit
  } else {
    after 100 [list ui::hold $file $deadline]
  }
}

# Worst first, gvloop last: the screenshot is taken while gvloop renders.
# The tour's times count from the moment the window is on screen: a click
# generated before the toplevel is mapped (its map is an idle callback, and a
# slow start makes the first timers overdue before any idle pass) is dropped
# by Tk, stock wish alike, and the tour would start without its policy and
# without rendering.
proc ui::script {} {
  if {![winfo viewable .r.run.start]} {
    after 50 ui::script
    return
  }
  variable phase_ms
  variable hold_file
  set t 400
  variable tour
  after $t [list ui::click .r.pol.[lindex $tour 0]]
  after [expr {$t + 100}] {ui::click .r.run.start}
  foreach p $tour {
    after $t [list ui::click .r.pol.$p]
    for {set k 300} {$k < $phase_ms} {incr k 400} {
      after [expr {$t + $k}] {ui::click .r.ping.b}
    }
    incr t $phase_ms
  }
  after $t {ui::refresh_once; update idletasks; gvd::snapshot}
  set wait [expr {$hold_file eq "" ? 300 : 100}]
  after [expr {$t + $wait}] [list ui::hold $hold_file [expr {[clock milliseconds] + $t + 20000}]]
}

ui::build
ui::spin
ui::tick
ui::refresh
if {$ui::script} {
  ui::script
} else {
  after 500 ui::toggle   ;# start rendering at once: something to look at
}

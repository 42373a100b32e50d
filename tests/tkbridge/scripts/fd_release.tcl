# SPDX-License-Identifier: MIT
# Descriptors watched by Tcl file handlers are released when the channel is
# closed, as under tclsh: the notifier keeps no duplicate of its own.
# Usage: fd_release.tcl CASE; prints "CASE=ok" and exits 0, or fails.
# A regression hangs in `close` (the test's timeout catches it) or fails a
# check below.

proc check {what cond} {
    if {![uplevel 1 [list expr $cond]]} {
        puts stderr "FAILED: $what"
        exit 1
    }
}

# Open descriptors of this process (Linux).
proc nfds {} {
    llength [glob -nocomplain -directory /proc/self/fd *]
}

# A pipeline's write end, watched for writability and closed: the child
# sees EOF at once, so close (which waits for the child) returns.
proc pipe_writable {remove} {
    set f [open "|wc -c >/dev/null" w]
    chan event $f writable [list apply {{f} {
        puts -nonewline $f hello
        chan event $f writable {}
        set ::ok 1
    }} $f]
    vwait ::ok
    if {!$remove} {
        # A handler still installed at close time.
        chan event $f writable {set ::other 1}
    }
    close $f
}

# A listening socket stops listening when closed: the port can be bound
# again at once (a descriptor kept by the notifier would keep it listening,
# and the bind would fail with "address already in use").  Connecting to the
# closed port is not a check: another process, or the connect itself (a
# self-connect on Linux), may take the port meanwhile.
proc server_close {} {
    set s [socket -server {apply {{c a p} {close $c}}} -myaddr 127.0.0.1 0]
    set port [lindex [chan configure $s -sockname] 2]
    close $s
    check "the closed server's port can be bound again" \
        {![catch {socket -server {apply {{c a p} {puts $c hi; close $c}}} \
                      -myaddr 127.0.0.1 $port} s2]}
    set c [socket 127.0.0.1 $port]
    chan configure $c -blocking 0
    chan event $c readable [list apply {{c} {
        if {[gets $c l] >= 0} {set ::line $l} elseif {[eof $c]} {set ::line eof}
    }} $c]
    vwait ::line
    close $c
    close $s2
    check "rebound server answers" {$::line eq "hi"}
}

# Closing many servers in a row leaves the descriptor count where it was.
proc server_fds {} {
    close [socket -server {} 0]
    set n0 [nfds]
    for {set i 0} {$i < 50} {incr i} {close [socket -server {} 0]}
    set n1 [nfds]
    check "fds after 50 server closes: $n0 -> $n1" {$n1 <= $n0}
}

# Started with stdin closed: files, pipes and timers still work, and the
# process exits cleanly.
proc stdin_closed {} {
    set f [open /dev/null]
    close $f
    set p [open "|echo hi" r]
    chan event $p readable [list apply {{p} {
        if {[gets $p l] >= 0} {set ::line $l} elseif {[eof $p]} {set ::eof 1}
    }} $p]
    vwait ::eof
    close $p
    check "pipe read" {$::line eq "hi"}
    after 1 {set ::t 1}
    vwait ::t
}

set case [lindex $argv 0]
switch -- $case {
    pipe_close        {pipe_writable 0}
    pipe_close_removed {pipe_writable 1}
    server_close      {server_close}
    server_fds        {server_fds}
    stdin_closed      {stdin_closed}
    default           {puts stderr "unknown case $case"; exit 2}
}
puts "$case=ok"

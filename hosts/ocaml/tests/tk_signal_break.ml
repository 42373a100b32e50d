(* SPDX-License-Identifier: MIT *)
(* Sys.Break raised by the SIGINT handler on the GUI thread (the main thread
   waiting in Thread.join) ends that thread, as under stock labltk, and Tk
   starts again on a new GUI thread.  The handler must not run inside Tcl's
   wait, where its exception unwound Tcl's frames and left the next GUI
   thread to take the lock twice (an abort).  A Tcl-only timer gives Tk
   events; another sends one SIGINT with kill(1), from Tcl, so that no
   OCaml job is running then (a sync's job still ending when a child process
   of the main thread sent it caught the Break itself and the GUI thread
   went on: beside two busy loops, 1 run in 30).  Exit 0 if the second GUI
   thread answers. *)
let () =
  Sys.catch_break true;
  let th = Tkthread.start () in
  (* Only the GUI thread, made before this, takes the signal and runs the
     handler (OCaml runs a handler in a thread that does not block it). *)
  ignore (Thread.sigmask Unix.SIG_BLOCK [Sys.sigint]);
  Tkthread.sync (fun () ->
    ignore (Protocol.tkEval [| Protocol.TkToken "proc"; Protocol.TkToken "tick";
                               Protocol.TkToken ""; Protocol.TkToken "after 50 tick" |]);
    ignore (Protocol.tkEval [| Protocol.TkToken "tick" |]);
    ignore (Protocol.tkEval [| Protocol.TkToken "after"; Protocol.TkToken "20";
                               Protocol.TkToken "exec kill -INT [pid]" |])) ();
  Thread.join th;
  Sys.catch_break false;
  let th2 = Tkthread.start () in
  let v = Tkthread.sync (fun () -> 4) () in
  Tkthread.async (fun () -> Tk.destroy Tkthread.top) ();
  Thread.join th2;
  Printf.printf "second gui sync=%d\n%!" v;
  exit (if v = 4 then 0 else 1)

(* SPDX-License-Identifier: MIT *)
(* An OCaml signal handler that updates the GUI (configures a label, calls
   Tk.update) runs on the GUI thread, the main thread waiting in Thread.join,
   and the program goes on as under stock labltk.  The handler must not run
   inside Tcl's wait, where a Tk.update waited in Tcl from within it and the
   lock was taken twice (an abort).  A Tcl-only timer gives Tk events meanwhile
   (the handler runs between two of them); a child process sends SIGUSR1 every
   0.2 s until the handler has run twice and closed the window.  Exit 0. *)
let () =
  let th = Tkthread.start () in
  (* Only the GUI thread, made before this, takes the signal and runs the
     handler (OCaml runs a handler in a thread that does not block it). *)
  ignore (Thread.sigmask Unix.SIG_BLOCK [Sys.sigusr1]);
  let l = Tkthread.sync (fun () ->
    let l = Label.create ~text:"0" Tkthread.top in Tk.pack [l]; l) () in
  let hits = ref 0 and on_gui = ref true in
  Sys.set_signal Sys.sigusr1 (Sys.Signal_handle (fun _ ->
    incr hits;
    on_gui := !on_gui && Tkthread.gui_safe ();
    Label.configure l ~text:(string_of_int !hits);
    Tk.update ();
    if !hits = 2 then Tk.destroy Tkthread.top));
  Tkthread.sync (fun () ->
    ignore (Protocol.tkEval [| Protocol.TkToken "proc"; Protocol.TkToken "tick";
                               Protocol.TkToken ""; Protocol.TkToken "after 50 tick" |]);
    ignore (Protocol.tkEval [| Protocol.TkToken "tick" |])) ();
  let pid = Unix.create_process "sh"
      [| "sh"; "-c"; "while kill -USR1 $PPID 2>/dev/null; do sleep 0.2; done" |]
      Unix.stdin Unix.stdout Unix.stderr in
  Thread.join th;
  Sys.set_signal Sys.sigusr1 Sys.Signal_ignore;
  Unix.kill pid Sys.sigkill;
  ignore (Unix.waitpid [] pid);
  Printf.printf "hits=%d on_gui=%b\n%!" !hits !on_gui;
  exit (if !hits = 2 && !on_gui then 0 else 1)

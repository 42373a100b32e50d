(* SPDX-License-Identifier: MIT *)
(* Tk cannot open (no DISPLAY): the GUI thread ends, Tkthread.running ()
   turns false and Tkthread.sync raises Failure "Tkthread.sync"
   (tkthread.mli) instead of waiting for ever.  Exit 0 if so. *)
let () =
  let th = Tkthread.start () in
  Thread.join th;                       (* it ends: Tk.openTk raised *)
  let running = Tkthread.running () in
  let raised =
    try ignore (Tkthread.sync (fun () -> 42) ()); false
    with Failure s -> s = "Tkthread.sync"
  in
  Printf.printf "running=%b sync raised=%b\n%!" running raised;
  exit (if not running && raised then 0 else 1)

(* SPDX-License-Identifier: MIT *)
(* Tk cannot open (no DISPLAY): the GUI thread ends, and Tkthread.sync
   raises Failure "Tkthread.sync" (tkthread.mli) instead of waiting for
   ever, whether it was called before the thread failed (its job queued
   meanwhile) or after; Tkthread.running () turns false.  Exit 0 if so. *)
let sync_raises () =
  try ignore (Tkthread.sync (fun () -> 42) ()); false
  with Failure s -> s = "Tkthread.sync"

let () =
  let th = Tkthread.start () in
  let early = sync_raises () in         (* queued while it still runs *)
  Thread.join th;                       (* it ends: Tk.openTk raised *)
  let running = Tkthread.running () in
  let late = sync_raises () in
  Printf.printf "early sync raised=%b running=%b late sync raised=%b\n%!"
    early running late;
  exit (if early && not running && late then 0 else 1)

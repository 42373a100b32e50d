(* SPDX-License-Identifier: MIT *)
(* Built against an installed gvloop.labltk: a job on Tk's thread, a button
   whose OCaml command Tk runs, then the last window closed. *)
let () =
  let gui = Tkthread.start () in
  let clicks = ref 0 in
  let b = Tkthread.sync (fun () ->
    let b = Button.create Tkthread.top ~text:"go" ~command:(fun () -> incr clicks) in
    Tk.pack [b]; b) () in
  Tkthread.sync Button.invoke b;
  let on_gui = Tkthread.sync Tkthread.gui_safe () in
  Tkthread.sync (fun () -> Tk.closeTk ()) ();
  Thread.join gui;
  if !clicks <> 1 || not on_gui then (print_endline "FAIL: Tkthread"; exit 1);
  Printf.printf "ocaml labltk ok: boosted=%b\n" (Tkthread.boosted ())

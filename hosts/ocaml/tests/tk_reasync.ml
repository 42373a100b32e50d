(* SPDX-License-Identifier: MIT *)
(* A job that re-posts itself with Tkthread.async (an animation idiom) must
   not keep Tk from its events: a Tk timer still fires.  Exit 0 if it does
   within 20 s (it takes milliseconds), 1 if not. *)
let () =
  let th = Tkthread.start () in
  let ticks = ref 0 and fired = ref false in
  let rec tick () = incr ticks; if not !fired then Tkthread.async tick () in
  Tkthread.sync
    (fun () -> ignore (Timer.add ~ms:50 ~callback:(fun () -> fired := true))) ();
  Tkthread.async tick ();
  let t0 = Unix.gettimeofday () in
  while not !fired && Unix.gettimeofday () -. t0 < 20. do Thread.delay 0.01 done;
  let ok = !fired && !ticks > 0 in
  Printf.printf "timer fired: %b, ticks > 0: %b\n%!" !fired (!ticks > 0);
  fired := true;
  Tkthread.async Tk.closeTk ();
  Thread.join th;
  exit (if ok then 0 else 1)

(* SPDX-License-Identifier: MIT *)
(* tk_latency: a chain of 2 ms Tk timers whose OCaml callbacks record how
   late they start, with no other thread and then beside a CPU-bound OCaml
   thread.  Reports p50/p99/max lateness beside the hog and the hog's share
   of its solo rate.  Tkthread: labltk's (stock) or gvloop.labltk's. *)
let samples = try int_of_string Sys.argv.(1) with _ -> 200

let pct a p = a.(min (Array.length a - 1) (Array.length a * p / 100))

let measure () =
  let lat = Array.make samples 0. and i = ref 0 in
  let m = Mutex.create () and c = Condition.create () and fin = ref false in
  let rec arm () =
    let due = Unix.gettimeofday () +. 0.002 in
    ignore (Timer.add ~ms:2 ~callback:(fun () ->
      lat.(!i) <- (Unix.gettimeofday () -. due) *. 1000.;
      incr i;
      if !i < samples then arm ()
      else (Mutex.lock m; fin := true; Condition.signal c; Mutex.unlock m)))
  in
  Tkthread.async arm ();
  Mutex.lock m;
  while not !fin do Condition.wait c m done;
  Mutex.unlock m;
  Array.sort compare lat;
  lat

let hog stop count =
  while not !stop do incr count; ignore (Sys.opaque_identity (ref !count)) done

let () =
  let _gui = Tkthread.start () in
  Tkthread.sync (fun () -> Tk.pack [Label.create Tkthread.top ~text:"latency"]) ();
  let floor = measure () in
  let stop = ref false and count = ref 0 in
  let t0 = Unix.gettimeofday () in
  let h = Thread.create (hog stop) count in
  Thread.delay 0.5;
  stop := true; Thread.join h;
  let rate_solo = float !count /. (Unix.gettimeofday () -. t0) in
  let stop = ref false and count = ref 0 in
  let h = Thread.create (hog stop) count in
  let t0 = Unix.gettimeofday () in
  let lat = measure () in
  let rate = float !count /. (Unix.gettimeofday () -. t0) in
  stop := true; Thread.join h;
  Printf.printf "RESULT tk_floor_p50_ms %.2f\n" (pct floor 50);
  Printf.printf "RESULT tk_hog_p50_ms %.2f\n" (pct lat 50);
  Printf.printf "RESULT tk_hog_p99_ms %.2f\n" (pct lat 99);
  Printf.printf "RESULT tk_hog_max_ms %.2f\n" lat.(samples - 1);
  Printf.printf "RESULT tk_hog_kept_pct %.0f\n%!" (100. *. rate /. rate_solo);
  Tkthread.async Tk.closeTk ();
  Thread.delay 0.2;
  exit 0

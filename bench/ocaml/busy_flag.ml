(* SPDX-License-Identifier: MIT *)
(* busy_flag: one thread spins on a flag (allocating, so that OCaml 4.13
   native code polls), another sets it after Thread.delay 0.02.  Reports how
   late the spinner sees it (from Thread.create: the new thread's first
   wait for the lock counts too).  Stock waits for its 50 ms tick; gvloop
   for one slice at thread start, then preempts at once with its interactive
   reacquire (priority 1) after the delay. *)
let rounds = try int_of_string Sys.argv.(1) with _ -> 10

let one () =
  let flag = ref false in
  let t0 = Unix.gettimeofday () in
  let setter = Thread.create (fun () -> Thread.delay 0.02; flag := true) () in
  let n = ref 0 in
  while not !flag do incr n; ignore (Sys.opaque_identity (ref !n)) done;
  let late = Unix.gettimeofday () -. t0 -. 0.02 in
  Thread.join setter;
  late *. 1000.

let () =
  let l = Array.init rounds (fun _ -> one ()) in
  Array.sort compare l;
  Printf.printf "RESULT busy_flag_late_median_ms %.1f\n" l.(rounds / 2);
  Printf.printf "RESULT busy_flag_late_max_ms %.1f\n" l.(rounds - 1)

(* SPDX-License-Identifier: MIT *)
(* thread_pass: 2 threads each calling Thread.yield N times.  Reports the
   time and the share of yields after which the other thread ran (1.0: every
   yield with a waiter was a real handoff). *)
let n = try int_of_string Sys.argv.(1) with _ -> 20000

let () =
  let last = ref (-1) and switches = ref 0 and ready = ref 0 in
  let body i =
    incr ready;
    while !ready < 2 do Thread.yield () done;
    for _ = 1 to n do
      if !last <> i then (incr switches; last := i);
      Thread.yield ()
    done
  in
  let t0 = Unix.gettimeofday () in
  let ts = List.init 2 (Thread.create body) in
  List.iter Thread.join ts;
  let dt = Unix.gettimeofday () -. t0 in
  Printf.printf "RESULT thread_pass_s %.3f\n" dt;
  Printf.printf "RESULT thread_pass_handoff_share %.2f\n"
    (float !switches /. float (2 * n))

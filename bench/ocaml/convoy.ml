(* SPDX-License-Identifier: MIT *)
(* convoy: an I/O thread doing one-byte round trips over a socketpair with
   an echo process, alone and then beside a CPU-bound thread.  Reports the
   slowdown (time beside the hog / time alone) and the hog's work rate
   during the round trips as a share of its rate alone; medians of five
   rounds. *)
let trips = try int_of_string Sys.argv.(1) with _ -> 100

let round_trips fd n =
  let b = Bytes.create 1 in
  let t0 = Unix.gettimeofday () in
  for _ = 1 to n do
    ignore (Unix.write fd b 0 1);
    ignore (Unix.read fd b 0 1)
  done;
  Unix.gettimeofday () -. t0

let hog stop count =
  while not !stop do incr count; ignore (Sys.opaque_identity (ref !count)) done

let () =
  let a, b = Unix.socketpair Unix.PF_UNIX Unix.SOCK_STREAM 0 in
  (* The echo side is a process: only our I/O thread competes for the lock. *)
  (match Unix.fork () with
   | 0 ->
       Unix.close a;
       let buf = Bytes.create 1 in
       (try while Unix.read b buf 0 1 = 1 do ignore (Unix.write b buf 0 1) done
        with _ -> ());
       exit 0
   | _ -> Unix.close b);
  ignore (round_trips a 20);                       (* warm up *)
  (* The hog's rate alone. *)
  let stop = ref false and count = ref 0 in
  let t0 = Unix.gettimeofday () in
  let h = Thread.create (hog stop) count in
  Thread.delay 0.5;
  stop := true; Thread.join h;
  let rate_solo = float !count /. (Unix.gettimeofday () -. t0) in
  (* Five rounds of: round trips alone, then beside the hog; medians. *)
  let one () =
    let solo = round_trips a trips in
    let stop = ref false and count = ref 0 in
    let h = Thread.create (hog stop) count in
    Thread.delay 0.05;
    let c0 = !count and t0 = Unix.gettimeofday () in
    let busy = round_trips a trips in
    let rate = float (!count - c0) /. (Unix.gettimeofday () -. t0) in
    stop := true; Thread.join h;
    (solo, busy /. solo, 100. *. rate /. rate_solo)
  in
  let r = Array.init 5 (fun _ -> one ()) in
  let med f = let a = Array.map f r in Array.sort compare a; a.(2) in
  Unix.close a;
  ignore (Unix.wait ());
  Printf.printf "RESULT convoy_solo_us %.1f\n" (med (fun (s, _, _) -> s) /. float trips *. 1e6);
  Printf.printf "RESULT convoy_x_solo %.1f\n" (med (fun (_, x, _) -> x));
  Printf.printf "RESULT convoy_hog_kept_pct %.0f\n" (med (fun (_, _, k) -> k))

(* SPDX-License-Identifier: MIT *)
(* Built against an installed gvloop.threads: two threads take turns on the
   master lock.  GVLOOP_OCAML_STATS=1 then prints the GVL's counters. *)
let () =
  let n = ref 0 and m = Mutex.create () in
  let work () =
    for _ = 1 to 1000 do
      Mutex.lock m; incr n; Mutex.unlock m; Thread.yield ()
    done in
  let ts = List.init 2 (fun _ -> Thread.create work ()) in
  List.iter Thread.join ts;
  Printf.printf "ocaml threads ok: %d\n" !n

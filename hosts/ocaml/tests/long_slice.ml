(* SPDX-License-Identifier: MIT *)
(* Beside two compute threads, a thread back from Thread.delay runs at
   once whatever the slice (run with GVLOOP_OCAML_SLICE_US at a day).  Once
   the compute thread that waited had reached its level by aging (100 ms,
   hence delays of 100 ms), each delay lasted a whole slice, and this never
   ended.  The delay before the threads start makes the main thread's later
   ones count as interactive (gvl.h: the first blocking call after an
   acquire is not promoted; it would wait a slice here).  Exits 0 when
   done. *)
let () =
  let stop = ref false in
  let work () = while not !stop do ignore (Sys.opaque_identity (ref 0)) done in
  Thread.delay 0.001;
  let a = Thread.create work () and b = Thread.create work () in
  for _ = 1 to 6 do Thread.delay 0.1 done;
  stop := true;
  Thread.join a;
  Thread.join b;
  print_endline "ok long slice"

(* SPDX-License-Identifier: MIT *)
(* A compute thread that never allocates beside a thread making short
   Thread.delay calls: every delay ends, and the program ends.  The
   compute thread hears of each preempt request only through OCaml's
   signal, which OCaml 4.13 forgets when it is recorded while masked (in
   the thread's own Thread.yield): it must be recorded again (st_gvl.h
   does as the handler unmasks it; the lock also tells it again), or the
   compute thread keeps the master lock for ever.  Several rounds, since a
   round loses the race only now and then (mostly on a loaded machine).
   Exits 0 when done. *)
let () =
  for _ = 1 to 10 do
    let stop = ref false in
    let busy = Thread.create (fun () ->
      let r = ref 0 in
      while not !stop do incr r done;
      ignore (Sys.opaque_identity !r)) () in
    let delays = Thread.create (fun () ->
      for _ = 1 to 100 do Thread.delay 0.001 done) () in
    Thread.join delays;
    stop := true;
    Thread.join busy
  done;
  print_endline "ok busy delay"

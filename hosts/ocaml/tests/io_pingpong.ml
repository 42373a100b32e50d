(* SPDX-License-Identifier: MIT *)
(* Two OCaml threads pass a byte back and forth over a socketpair beside a
   compute thread, whatever the slice (run with GVLOOP_OCAML_SLICE_US at a
   day, also pinned to one CPU).  Each round trip needs each I/O thread to
   get the lock back from the compute thread, by a boosted request the
   compute thread must serve at its next poll point.  Three ways that
   request was lost made a round trip wait for the slice's end: a request
   made while the compute thread ran OCaml's preemption handler (OCaml 4.13
   forgets a signal recorded while it is masked); the handler's yield when
   the signal had been
   meant for the thread before (an I/O thread handed the lock to the
   compute thread); and an I/O thread preempted by the other one queued
   behind the compute thread.  With a slice of a day this never ended.
   Exits 0 when done. *)
let () =
  let a, b = Unix.socketpair Unix.PF_UNIX Unix.SOCK_STREAM 0 in
  let echo = Thread.create (fun () ->
    let buf = Bytes.create 1 in
    while Unix.read b buf 0 1 > 0 do ignore (Unix.write b buf 0 1) done) () in
  let buf = Bytes.create 1 in
  let trip () =
    ignore (Unix.write_substring a "x" 0 1);
    ignore (Unix.read a buf 0 1) in
  (* First trips alone: a thread's first blocking call after it took the
     lock is not promoted (gvl.h), and would wait for the slice. *)
  for _ = 1 to 3 do trip () done;
  let stop = ref false in
  let hog = Thread.create (fun () ->
    while not !stop do ignore (Sys.opaque_identity (ref 0)) done) () in
  for _ = 1 to 500 do trip () done;
  Unix.shutdown a Unix.SHUTDOWN_SEND;
  Thread.join echo;
  stop := true;
  Thread.join hog;
  print_endline "ok io pingpong"

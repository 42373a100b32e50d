(* SPDX-License-Identifier: MIT *)
(* The main thread calls exit while the GUI thread runs Tk's loop: labltk's
   at_exit then finalizes Tcl (Tcl_Finalize), and the GUI thread, waiting
   in Tcl outside the lock, must not go on in Tcl after that (it crashed
   there).  A child process does so, many times over; each must end by its
   exit, with its status.  Every other child exits while the GUI thread is
   inside a job, blocked in a read that a later at_exit of the exit lets
   return: the GUI thread must never run OCaml again (nor get back into
   Tcl), so the job's _exit 9 after the read never runs (the exit also no
   longer waits up to 2 s for such a job to return).  Exit 0 if all did. *)
open Tk

(* The pipe of a job that blocks in a read.  The at_exit that ends the read
   is made before Tk starts, so it runs after Tkthread's (and labltk's). *)
let job_pipe () =
  let r, w = Unix.pipe () in
  at_exit (fun () -> ignore (Unix.write_substring w "x" 0 1));
  r

let block_in_job r =
  let m = Mutex.create () and c = Condition.create () and started = ref false in
  Tkthread.async (fun () ->
    Mutex.lock m; started := true; Condition.signal c; Mutex.unlock m;
    ignore (Unix.read r (Bytes.create 1) 0 1);
    Unix._exit 9) ();
  Mutex.lock m;
  while not !started do Condition.wait c m done;
  Mutex.unlock m

let child code job =
  let r = if job then Some (job_pipe ()) else None in
  ignore (Tkthread.start ());
  let l = Tkthread.sync (fun () ->
    let l = Label.create Tkthread.top ~text:"x" in pack [l]; l) () in
  for i = 1 to 20 do
    Tkthread.async (fun () -> Label.configure l ~text:(string_of_int i)) ()
  done;
  ignore (Tkthread.sync (fun () -> Winfo.exists l) ());
  (match r with Some r -> block_in_job r | None -> ());
  exit code

let () =
  match Sys.argv with
  | [| _; "child"; code; job |] -> child (int_of_string code) (job = "job")
  | _ ->
      let runs = 40 and bad = ref 0 in
      for i = 1 to runs do
        let code = i mod 3 in
        let pid = Unix.create_process Sys.executable_name
            [| Sys.executable_name; "child"; string_of_int code;
               if i mod 2 = 0 then "job" else "plain" |]
            Unix.stdin Unix.stdout Unix.stderr in
        match Unix.waitpid [] pid with
        | _, Unix.WEXITED c when c = code -> ()
        | _, Unix.WEXITED c -> incr bad; Printf.printf "run %d: exit %d, not %d\n%!" i c code
        | _, Unix.WSIGNALED s -> incr bad; Printf.printf "run %d: signal %d\n%!" i s
        | _, Unix.WSTOPPED _ -> incr bad
      done;
      Printf.printf "%d of %d runs ended by their exit\n" (runs - !bad) runs;
      exit (if !bad = 0 then 0 else 1)

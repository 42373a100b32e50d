(* SPDX-License-Identifier: MIT *)
(* The main thread calls exit while the GUI thread runs Tk's loop: labltk's
   at_exit then finalizes Tcl (Tcl_Finalize), and the GUI thread, waiting
   in Tcl outside the lock, must not go on in Tcl after that (it crashed
   there).  A child process does so, many times over; each must end by its
   exit, with its status.  A few more exit while the GUI thread is inside a
   job that writes to a full stdout pipe, holding stdout's lock: the exit,
   whose last step flushes stdout, must end all the same once the pipe is
   read (a GUI thread stopped for good inside the job hung it).  Exit 0 if
   all did. *)
open Tk

let child code chan =
  ignore (Tkthread.start ());
  let l = Tkthread.sync (fun () ->
    let l = Label.create Tkthread.top ~text:"x" in pack [l]; l) () in
  for i = 1 to 20 do
    Tkthread.async (fun () -> Label.configure l ~text:(string_of_int i)) ()
  done;
  ignore (Tkthread.sync (fun () -> Winfo.exists l) ());
  if chan then begin
    let m = Mutex.create () and c = Condition.create () and started = ref false in
    Tkthread.async (fun () ->
      Mutex.lock m; started := true; Condition.signal c; Mutex.unlock m;
      print_string (String.make 1_000_000 'x'); flush stdout) ();
    Mutex.lock m;
    while not !started do Condition.wait c m done;
    Mutex.unlock m
  end;
  exit code

(* Run a child; with chan, its stdout is a pipe read only after a while
   (the child's exit comes first), then to its end. *)
let run i code chan =
  let args = [| Sys.executable_name; "child"; string_of_int code;
                if chan then "chan" else "plain" |] in
  let status =
    if not chan then
      snd (Unix.waitpid [] (Unix.create_process Sys.executable_name args
                              Unix.stdin Unix.stdout Unix.stderr))
    else begin
      let r, w = Unix.pipe () in
      Unix.set_close_on_exec r;
      let pid = Unix.create_process Sys.executable_name args Unix.stdin w Unix.stderr in
      Unix.close w;
      Unix.sleepf 0.3;
      let buf = Bytes.create 65536 in
      while Unix.read r buf 0 65536 > 0 do () done;
      Unix.close r;
      snd (Unix.waitpid [] pid)
    end
  in
  match status with
  | Unix.WEXITED c when c = code -> true
  | Unix.WEXITED c -> Printf.printf "run %d: exit %d, not %d\n%!" i c code; false
  | Unix.WSIGNALED s -> Printf.printf "run %d: signal %d\n%!" i s; false
  | Unix.WSTOPPED _ -> false

let () =
  match Sys.argv with
  | [| _; "child"; code; mode |] -> child (int_of_string code) (mode = "chan")
  | _ ->
      let runs = 40 and chans = 4 and bad = ref 0 in
      for i = 1 to runs + chans do
        if not (run i (i mod 3) (i > runs)) then incr bad
      done;
      Printf.printf "%d of %d runs ended by their exit\n" (runs + chans - !bad) (runs + chans);
      exit (if !bad = 0 then 0 else 1)

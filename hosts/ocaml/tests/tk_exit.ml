(* SPDX-License-Identifier: MIT *)
(* The main thread calls exit while the GUI thread runs Tk's loop: labltk's
   at_exit then finalizes Tcl (Tcl_Finalize), and the GUI thread, waiting
   in Tcl outside the lock, must not go on in Tcl after that (it crashed
   there).  A child process does so, many times over; each must end by its
   exit, with its status.  Exit 0 if all did. *)
open Tk

let child code =
  ignore (Tkthread.start ());
  let l = Tkthread.sync (fun () ->
    let l = Label.create Tkthread.top ~text:"x" in pack [l]; l) () in
  for i = 1 to 20 do
    Tkthread.async (fun () -> Label.configure l ~text:(string_of_int i)) ()
  done;
  ignore (Tkthread.sync (fun () -> Winfo.exists l) ());
  exit code

let () =
  match Sys.argv with
  | [| _; "child"; code |] -> child (int_of_string code)
  | _ ->
      let runs = 40 and bad = ref 0 in
      for i = 1 to runs do
        let code = i mod 3 in
        let pid = Unix.create_process Sys.executable_name
            [| Sys.executable_name; "child"; string_of_int code |]
            Unix.stdin Unix.stdout Unix.stderr in
        match Unix.waitpid [] pid with
        | _, Unix.WEXITED c when c = code -> ()
        | _, Unix.WEXITED c -> incr bad; Printf.printf "run %d: exit %d, not %d\n%!" i c code
        | _, Unix.WSIGNALED s -> incr bad; Printf.printf "run %d: signal %d\n%!" i s
        | _, Unix.WSTOPPED _ -> incr bad
      done;
      Printf.printf "%d of %d runs ended by their exit\n" (runs - !bad) runs;
      exit (if !bad = 0 then 0 else 1)

(* SPDX-License-Identifier: MIT *)
(* A C thread registered with caml_c_thread_register, that runs OCaml and
   unregisters, n times over: each time it must have left the GVL too (no
   attachment kept), and be attached again by the next register.  The
   stubs count the rounds in which both held. *)
external run : int -> (unit -> unit) -> int = "ct_run"

let () =
  let calls = ref 0 in
  let n = 50 in
  let ok = run n (fun () -> incr calls) in
  Printf.printf "rounds %d, detached after %d, OCaml calls %d\n" n ok !calls;
  if ok <> n || !calls <> n then exit 1

(* SPDX-License-Identifier: MIT *)
(* Tkthread on gvloop: see tkthread.mli. *)

external install : unit -> unit = "gvltk_install"
external uninstall : unit -> unit = "gvltk_uninstall"
external wake : unit -> unit = "gvltk_wake"
external tk_loop : unit -> unit = "gvltk_mainloop"
external boosted : unit -> bool = "gvltk_boosted"

let top = Widget.default_toplevel

(* Jobs for the GUI thread, guarded by [m]. *)
let jobs : (unit -> unit) Queue.t = Queue.create ()
let m = Mutex.create ()
let gui_id = ref None

let gui_safe () = !gui_id = Some (Thread.id (Thread.self ()))
let running () = !gui_id <> None

(* Runs the jobs queued before it started, as labltk's does at each tick: a
   job that queues another (one that re-posts itself, say) must not keep Tk
   from its events.  What came meanwhile runs at the next pass, once the
   loop has served them. *)
let run_jobs () =
  let take () =
    Mutex.lock m;
    let j = Queue.take_opt jobs in
    Mutex.unlock m;
    j
  in
  Mutex.lock m;
  let n = Queue.length jobs in
  Mutex.unlock m;
  let rec go n =
    if n > 0 then
      match take () with
      | None -> ()
      | Some j ->
          (try j () with e ->
             prerr_endline ("Tkthread: job raised " ^ Printexc.to_string e));
          go (n - 1)
  in
  go n;
  Mutex.lock m;
  let more = not (Queue.is_empty jobs) in
  Mutex.unlock m;
  if more then wake ()

let () = Callback.register "gvltk_run_jobs" run_jobs

let async f x =
  Mutex.lock m;
  Queue.add (fun () -> f x) jobs;
  Mutex.unlock m;
  wake ()

let sync f x =
  if gui_safe () then f x
  else if not (running ()) then failwith "Tkthread.sync"
  else begin
    let rm = Mutex.create () and c = Condition.create () in
    let res = ref None in
    let job () =
      let r = try Ok (f x) with e -> Error e in
      Mutex.lock rm; res := Some r; Condition.signal c; Mutex.unlock rm
    in
    async job ();
    Mutex.lock rm;
    while !res = None do Condition.wait c rm done;
    Mutex.unlock rm;
    match !res with
    | Some (Ok y) -> y
    | Some (Error e) -> raise e
    | None -> assert false
  end

let main_loop () =
  gui_id := Some (Thread.id (Thread.self ()));
  install ();
  run_jobs ();
  Fun.protect ~finally:(fun () -> uninstall (); gui_id := None) tk_loop

(* A GUI thread that cannot open Tk (no display) is no longer running, so
   that sync raises instead of waiting for it.  start names it under [m]
   before this can look. *)
let thread_main () =
  (match Tk.openTk () with
   | _ -> ()
   | exception e ->
       Mutex.lock m;
       if !gui_id = Some (Thread.id (Thread.self ())) then gui_id := None;
       Mutex.unlock m;
       raise e);
  main_loop ()

let start () =
  Mutex.lock m;
  let th = Thread.create thread_main () in
  (* Like labltk's: the GUI thread counts as running from here on. *)
  gui_id := Some (Thread.id th);
  Mutex.unlock m;
  th

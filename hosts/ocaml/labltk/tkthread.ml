(* SPDX-License-Identifier: MIT *)
(* Tkthread on gvloop: see tkthread.mli. *)

external install : unit -> unit = "gvltk_install"
external uninstall : unit -> unit = "gvltk_uninstall"
external wake : unit -> unit = "gvltk_wake"
external tk_loop : unit -> unit = "gvltk_mainloop"
external boosted : unit -> bool = "gvltk_boosted"
external exiting : unit -> unit = "gvltk_exiting"

let top = Widget.default_toplevel

(* Jobs for the GUI thread, guarded by [m], as are [gui_id] (written) and
   [gui_gen], which counts the GUI threads that have ended: a sync waiting
   for a job of one that ended (its loop ended, or Tk did not open) gives
   up, told through [ended]. *)
let jobs : (unit -> unit) Queue.t = Queue.create ()
let m = Mutex.create ()
let ended = Condition.create ()
let gui_id = ref None
let gui_gen = ref 0

(* The GUI thread [id] (None: whichever) is no longer running. *)
let gui_ended id =
  Mutex.lock m;
  if id = None || !gui_id = id then begin
    gui_id := None;
    incr gui_gen;
    Condition.broadcast ended
  end;
  Mutex.unlock m

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

(* The job of a sync runs only on the GUI thread it was queued for: one
   that ended without running it made the sync give up, and a later GUI
   thread that finds it queued does nothing with it. *)
let sync f x =
  if gui_safe () then f x
  else begin
    let res = ref None in
    Mutex.lock m;
    if !gui_id = None then (Mutex.unlock m; failwith "Tkthread.sync");
    let gen = !gui_gen in
    let job () =
      Mutex.lock m;
      let go = !gui_gen = gen in
      Mutex.unlock m;
      if go then begin
        let r = try Ok (f x) with e -> Error e in
        Mutex.lock m; res := Some r; Condition.broadcast ended; Mutex.unlock m
      end
    in
    Queue.add job jobs;
    Mutex.unlock m;
    wake ();
    Mutex.lock m;
    let r =
      Fun.protect ~finally:(fun () -> Mutex.unlock m) (fun () ->
        while !res = None && !gui_gen = gen do Condition.wait ended m done;
        !res)
    in
    match r with
    | Some (Ok y) -> y
    | Some (Error e) -> raise e
    | None -> failwith "Tkthread.sync"
  end

(* An exit on another thread stops this loop before labltk's at_exit, made
   at openTk (so earlier: at_exit runs the latest first), finalizes Tcl. *)
let main_loop () =
  gui_id := Some (Thread.id (Thread.self ()));
  at_exit exiting;
  install ();
  run_jobs ();
  Fun.protect ~finally:(fun () -> uninstall (); gui_ended None) tk_loop

(* A GUI thread that cannot open Tk (no display) is no longer running, so
   that sync raises instead of waiting for it.  start names it under [m]
   before this can look. *)
let thread_main () =
  (match Tk.openTk () with
   | _ -> ()
   | exception e ->
       gui_ended (Some (Thread.id (Thread.self ())));
       raise e);
  main_loop ()

let start () =
  Mutex.lock m;
  Fun.protect ~finally:(fun () -> Mutex.unlock m) (fun () ->
    let th = Thread.create thread_main () in
    (* Like labltk's: the GUI thread counts as running from here on. *)
    gui_id := Some (Thread.id th);
    th)

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

let rec run_jobs () =
  Mutex.lock m;
  match Queue.take_opt jobs with
  | None -> Mutex.unlock m
  | Some j ->
      Mutex.unlock m;
      (try j () with e ->
         prerr_endline ("Tkthread: job raised " ^ Printexc.to_string e));
      run_jobs ()

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

let thread_main () =
  ignore (Tk.openTk ());
  main_loop ()

let start () =
  let th = Thread.create thread_main () in
  (* Like labltk's: the GUI thread counts as running from here on. *)
  gui_id := Some (Thread.id th);
  th

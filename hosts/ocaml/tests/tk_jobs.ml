(* SPDX-License-Identifier: MIT *)
(* gvloop.labltk's Tkthread: jobs, results, exceptions, order, the GUI
   thread's identity, callbacks entering OCaml from Tk, and other threads
   running while Tk waits.  Prints "ok" lines; exits 1 on the first failure. *)

let fail fmt = Printf.ksprintf (fun s -> print_endline ("FAIL: " ^ s); exit 1) fmt
let check name b = if b then Printf.printf "ok %s\n%!" name else fail "%s" name

exception Boom

let () =
  let gui = Tkthread.start () in
  check "running" (Tkthread.running ());
  check "main thread is not the GUI thread" (not (Tkthread.gui_safe ()));
  check "sync returns the job's result" (Tkthread.sync (fun x -> x * 2) 21 = 42);
  check "jobs run on the GUI thread" (Tkthread.sync Tkthread.gui_safe ());
  check "sync re-raises the job's exception"
    (try ignore (Tkthread.sync (fun () -> (raise Boom : int)) ()); false
     with Boom -> true);
  (* async keeps order, across threads *)
  let seen = ref [] in
  for i = 1 to 100 do Tkthread.async (fun i -> seen := i :: !seen) i done;
  Tkthread.sync ignore ();
  check "async jobs run in order" (List.rev !seen = List.init 100 succ);
  (* Tk callbacks: a button invoked through Tk runs its OCaml command *)
  let clicks = ref 0 in
  let b = Tkthread.sync (fun () ->
    let b = Button.create Tkthread.top ~text:"go" ~command:(fun () -> incr clicks) in
    Tk.pack [b]; b) () in
  for _ = 1 to 10 do Tkthread.sync Button.invoke b done;
  check "button commands ran" (!clicks = 10);
  (* A Tk timer calls back into OCaml on the GUI thread *)
  let fired = ref 0 and m = Mutex.create () and c = Condition.create () in
  Tkthread.async (fun () ->
    for _ = 1 to 5 do
      ignore (Timer.add ~ms:1 ~callback:(fun () ->
        Mutex.lock m; incr fired; Condition.signal c; Mutex.unlock m))
    done) ();
  Mutex.lock m;
  while !fired < 5 do Condition.wait c m done;
  Mutex.unlock m;
  check "Tk timers called OCaml" (!fired = 5);
  (* Beside a CPU-bound thread, jobs still get through, and it still runs. *)
  let stop = ref false and work = ref 0 in
  let hog = Thread.create (fun () ->
    while not !stop do incr work; ignore (Sys.opaque_identity (ref !work)) done) () in
  (* Progress, not amounts: each wait ends once the hog has moved on (a
     starved hog shows as the test's timeout), however slow the machine. *)
  while !work = 0 do Thread.delay 0.001 done;
  check "a CPU-bound thread runs beside the GUI thread" (!work > 0);
  for i = 1 to 50 do
    if Tkthread.sync (fun x -> x + 1) i <> i + 1 then fail "sync %d" i
  done;
  check "sync jobs answered beside a CPU-bound thread" true;
  let w1 = !work in
  while !work = w1 do Thread.delay 0.001 done;
  check "the CPU-bound thread goes on" (!work > w1);
  stop := true; Thread.join hog;
  Printf.printf "ok boosted=%b\n%!" (Tkthread.boosted ());
  Tkthread.sync (fun () -> Tk.closeTk ()) ();
  Thread.join gui;
  check "GUI thread ended with the last window" (not (Tkthread.running ()))
  ;
  (* Tk again, on a new GUI thread, after the last window closed: each
     round's jobs reach its own thread (a wake-up for the old one was lost
     and the next sync hung). *)
  for round = 1 to 5 do
    let gui = Tkthread.start () in
    if Tkthread.sync (fun x -> x + round) 40 <> 40 + round then
      fail "restart %d: sync" round;
    if not (Tkthread.sync Tkthread.gui_safe ()) then
      fail "restart %d: job on the new GUI thread" round;
    Tkthread.sync (fun () -> Tk.closeTk ()) ();
    Thread.join gui
  done;
  check "Tk restarted on new GUI threads" (not (Tkthread.running ()))

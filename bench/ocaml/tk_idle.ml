(* SPDX-License-Identifier: MIT *)
(* tk_idle: a Tkthread app with one label and nothing to do.  After 2 s,
   measures over 10 s (argv.(1)) the process's CPU time and the voluntary
   context switches of all its threads (wake-ups), the main thread's one
   Thread.delay excluded. *)
let secs = try float_of_string Sys.argv.(1) with _ -> 10.

let wakeups () =
  let dir = "/proc/self/task" in
  Array.fold_left (fun acc t ->
    let ic = open_in (Filename.concat dir (Filename.concat t "status")) in
    let rec scan acc =
      match input_line ic with
      | l -> (try Scanf.sscanf l "voluntary_ctxt_switches: %d" (fun n -> scan (acc + n))
              with _ -> scan acc)
      | exception End_of_file -> close_in ic; acc
    in
    scan acc) 0 (Sys.readdir dir)

let cpu () = let t = Unix.times () in t.Unix.tms_utime +. t.Unix.tms_stime

let () =
  let _gui = Tkthread.start () in
  Tkthread.sync (fun () -> Tk.pack [Label.create Tkthread.top ~text:"idle"]) ();
  Thread.delay 2.;
  let w0 = wakeups () and c0 = cpu () in
  Thread.delay secs;
  let w = wakeups () - w0 - 1 and c = cpu () -. c0 in
  Printf.printf "RESULT tk_idle_cpu_ms %.1f\n" (c *. 1000.);
  Printf.printf "RESULT tk_idle_wakeups_per_s %.1f\n%!" (float w /. secs);
  Tkthread.async Tk.closeTk ();
  Thread.delay 0.2;
  exit 0

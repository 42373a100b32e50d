(* SPDX-License-Identifier: MIT *)
(* ocaml_tk: a labltk window that stays alive while OCaml threads compute.
   Two worker threads count Mandelbrot points row by row; the window
   animates a spinner on a 16 ms Tk timer, shows a clock and the workers'
   progress, and answers clicks.  Built with labltk's Tkthread (stock) or
   gvloop.labltk's, the program is the same.

   ocaml_tk [SECONDS [SCREENSHOT.xwd]]: with SECONDS, a scripted run: a
   driver thread clicks the button every 50 ms, the window is captured
   (xwd) near the end, and the figures are printed: how late the spinner's
   frames were, how long a click took to reach its OCaml command, and how
   much the workers computed. *)

let now = Unix.gettimeofday

(* ---- the work ---- *)
let rows_done = Atomic.make 0
let inside = Atomic.make 0
let stop = ref false

let mandel_row y size =
  let n = ref 0 in
  for x = 0 to size - 1 do
    let cr = -2.0 +. 2.5 *. float x /. float size
    and ci = -1.25 +. 2.5 *. float y /. float size in
    let zr = ref 0. and zi = ref 0. and i = ref 0 in
    while !i < 200 && !zr *. !zr +. !zi *. !zi < 4. do
      let t = !zr *. !zr -. !zi *. !zi +. cr in
      zi := 2. *. !zr *. !zi +. ci; zr := t; incr i
    done;
    if !i = 200 then incr n
  done;
  !n

let worker id =
  let y = ref id in
  while not !stop do
    ignore (Atomic.fetch_and_add inside (mandel_row (!y mod 400) 400));
    Atomic.incr rows_done;
    y := !y + 2
  done

(* ---- figures ---- *)
let frames = ref [] and clicks = ref []
let pct l p =
  match List.sort compare l with
  | [] -> nan
  | s -> List.nth s (min (List.length s - 1) (List.length s * p / 100))

(* ---- the window (GUI thread) ---- *)
let build_ui () =
  let top = Tkthread.top in
  Wm.title_set top "gvloop: OCaml threads + labltk";
  let c = Canvas.create top ~width:220 ~height:220 ~background:`White in
  let hand = Canvas.create_line c ~xys:[110, 110; 110, 20] ~width:6 ~fill:`Blue in
  let clock = Label.create top ~text:"" ~font:"Helvetica 16" in
  let progress = Label.create top ~text:"" in
  let clicked = ref 0 in
  let lbl = Label.create top ~text:"clicks: 0" in
  let button = Button.create top ~text:"Click me" ~command:(fun () ->
    incr clicked;
    Label.configure lbl ~text:(Printf.sprintf "clicks: %d" !clicked)) in
  Tk.pack [Tk.coe c; Tk.coe clock; Tk.coe progress; Tk.coe button; Tk.coe lbl];
  let angle = ref 0. in
  let rec frame due =
    let late = now () -. due in
    frames := late :: !frames;
    angle := !angle +. 0.1;
    Canvas.coords_set c hand
      ~xys:[110, 110; 110 + truncate (90. *. sin !angle),
                      110 - truncate (90. *. cos !angle)];
    let tm = Unix.localtime (now ()) in
    Label.configure clock ~text:(Printf.sprintf "%02d:%02d:%02d"
      tm.Unix.tm_hour tm.Unix.tm_min tm.Unix.tm_sec);
    Label.configure progress ~text:(Printf.sprintf "rows computed: %d"
      (Atomic.get rows_done));
    let next = now () +. 0.016 in
    ignore (Timer.add ~ms:16 ~callback:(fun () -> frame next))
  in
  frame (now ());
  button

let () =
  let secs = try float_of_string Sys.argv.(1) with _ -> 0. in
  let shot = try Some Sys.argv.(2) with _ -> None in
  let gui = Tkthread.start () in
  let button = Tkthread.sync build_ui () in
  let workers = List.init 2 (Thread.create worker) in
  if secs <= 0. then Thread.join gui   (* interactive: until the window closes *)
  else begin
    let t_end = now () +. secs in
    let shot_taken = ref false in
    while now () < t_end do
      Thread.delay 0.05;
      let t0 = now () in
      Tkthread.async (fun () ->
        clicks := (now () -. t0) :: !clicks;
        Button.invoke button) ();
      match shot with
      | Some f when not !shot_taken && now () > t_end -. 1. ->
          shot_taken := true;
          let id = Tkthread.sync (fun () -> Winfo.id Tkthread.top) () in
          ignore (Sys.command (Printf.sprintf "xwd -silent -id %s -out %s"
                                 (Filename.quote id) (Filename.quote f)))
      | _ -> ()
    done;
    stop := true;
    List.iter Thread.join workers;
    let fr = Tkthread.sync (fun () -> !frames) () and cl = !clicks in
    let ms x = x *. 1000. in
    Printf.printf "frames %d, late p50 %.1f ms p99 %.1f ms | click -> command p50 %.2f ms p99 %.1f ms | rows computed %d\n%!"
      (List.length fr) (ms (pct fr 50)) (ms (pct fr 99))
      (ms (pct cl 50)) (ms (pct cl 99)) (Atomic.get rows_done);
    Tkthread.async Tk.closeTk ();
    Thread.delay 0.2;
    exit 0
  end

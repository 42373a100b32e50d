(* SPDX-License-Identifier: MIT *)
(* Tkthread for gvloop: the interface of labltk's Tkthread, with the GUI
   thread's event loop waiting outside OCaml's master lock and jobs
   delivered by a wake-up of that loop instead of a 10 ms polling timer.
   Use the findlib package gvloop.labltk instead of labltk's tkthread.cmo. *)

(** Open Tk and run its event loop in a new thread (the GUI thread). *)
val start : unit -> Thread.t

(** What the GUI thread runs: opens Tk, then the event loop until the last
    main window is gone. *)
val thread_main : unit -> unit

(** The toplevel widget ([Widget.default_toplevel]). *)
val top : Widget.toplevel Widget.widget

(** Run [f x] in the GUI thread, soon; returns at once. *)
val async : ('a -> unit) -> 'a -> unit

(** Run [f x] in the GUI thread and return its result (or raise its
    exception).  In the GUI thread itself, just [f x].
    Raises [Failure "Tkthread.sync"] when no GUI thread runs. *)
val sync : ('a -> 'b) -> 'a -> 'b

(** Whether the calling thread is the GUI thread. *)
val gui_safe : unit -> bool

(** Whether a GUI thread runs. *)
val running : unit -> bool

(** gvloop only: run Tk's event loop in the calling thread (which opened
    Tk), outside the master lock, serving jobs.  What [thread_main] does
    after opening Tk; for programs that keep Tk on their main thread.
    An [exit] on another thread stops the loop for good where it waits,
    before labltk's [at_exit] finalizes Tcl (also when a later [at_exit]
    function raises and the program goes on); a job or callback running
    then delays the exit until it returns, 2 s at most. *)
val main_loop : unit -> unit

(** gvloop only: whether Tk callbacks enter OCaml with a boosted acquire
    (true when gvloop's threads library is linked). *)
val boosted : unit -> bool

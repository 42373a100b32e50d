/* SPDX-License-Identifier: MIT */
/*
 * gvltk_stubs.c -- labltk's Tk event loop outside OCaml's master lock.
 *
 * labltk runs Tk_MainLoop from OCaml without leaving the runtime, so the Tk
 * thread holds the master lock while Tcl waits for events: other OCaml
 * threads run only when a Tk callback happens to poll, and labltk's
 * Tkthread wakes every 10 ms to look for jobs.  Here:
 *
 *  - gvltk_mainloop runs Tcl's event loop with an event source whose setup
 *    proc (called by Tcl_DoOneEvent just before it waits) leaves the OCaml
 *    runtime (caml_enter_blocking_section) and whose check proc (called as
 *    soon as the wait ends, before any event is serviced) re-enters it.  So
 *    Tcl waits, and reads X events, without the master lock; the lock is
 *    held only while Tcl services events, which is when OCaml callbacks run.
 *  - With gvloop's threads library the re-entry is a boosted acquire
 *    (gvloop_caml_boost_next): a Tk event preempts a CPU-bound OCaml thread
 *    at its next poll point instead of waiting for its slice.  With the
 *    stock library (no such symbol) it is an ordinary acquire.
 *  - gvltk_wake, from any OCaml thread, queues one Tcl event on the Tk
 *    thread and alerts its notifier; the event runs the OCaml job queue
 *    (Tkthread.async/sync).  No polling timer: an idle app sleeps in Tcl's
 *    notifier.
 *
 * Threads: gvltk_install and gvltk_mainloop on the Tk thread (the one that
 * opened Tk), holding the master lock; gvltk_wake on any OCaml thread.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include <tcl.h>
#include <tk.h>

#include <caml/callback.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/signals.h>

#define GVLTK_BOOST 10  /* GVL_PRIO_BOOST */

CAMLprim value gvltk_install(value unit);
CAMLprim value gvltk_mainloop(value unit);
CAMLprim value gvltk_wake(value unit);
CAMLprim value gvltk_boosted(value unit);

/* State of the one Tk thread (labltk has one interpreter per process).
 * Written by the Tk thread under the master lock, except wake_pending. */
static Tcl_ThreadId tk_thread;      /* set by install; read by wakers  */
static atomic_int installed;        /* 1 once tk_thread is valid       */
static int in_loop;                 /* gvltk_mainloop is in DoOneEvent */
static int released;                /* setup proc left the runtime     */
static void (*boost_next)(int);     /* gvloop's threads library, or NULL */
static atomic_int wake_pending;     /* a wake-up event is queued        */

/* Tcl_DoOneEvent calls this before it waits: leave the runtime, so other
 * OCaml threads run while Tcl sleeps.  Only inside gvltk_mainloop, which
 * re-enters if Tcl returns without calling the check proc. */
static void gvltk_setup(ClientData cd, int flags) {
  (void)cd; (void)flags;
  if (!in_loop || released) return;
  released = 1;
  caml_enter_blocking_section();
}

static void gvltk_enter(void) {
  if (!released) return;
  released = 0;
  if (boost_next) boost_next(GVLTK_BOOST);
  caml_leave_blocking_section();
}

/* Called as soon as the wait ends, before events are serviced. */
static void gvltk_check(ClientData cd, int flags) {
  (void)cd; (void)flags;
  gvltk_enter();
}

CAMLprim value gvltk_install(value unit) {
  (void)unit;
  if (atomic_load(&installed)) return Val_unit;
  boost_next = (void (*)(int))dlsym(RTLD_DEFAULT, "gvloop_caml_boost_next");
  tk_thread = Tcl_GetCurrentThread();
  Tcl_CreateEventSource(gvltk_setup, gvltk_check, NULL);
  atomic_store(&installed, 1);
  return Val_unit;
}

/* 1 when Tk callbacks enter OCaml boosted (gvloop's threads are linked). */
CAMLprim value gvltk_boosted(value unit) {
  (void)unit;
  return Val_bool(dlsym(RTLD_DEFAULT, "gvloop_caml_boost_next") != NULL);
}

/* Tk_MainLoop, with the wait outside the master lock.  An exception from a
 * callback leaves through here holding the lock (callbacks run with it). */
CAMLprim value gvltk_mainloop(value unit) {
  (void)unit;
  if (!atomic_load(&installed)) gvltk_install(Val_unit);
  while (Tk_GetNumMainWindows() > 0) {
    in_loop = 1;
    Tcl_DoOneEvent(TCL_ALL_EVENTS);
    in_loop = 0;
    gvltk_enter();  /* Tcl returned without checking (a failed wait) */
  }
  return Val_unit;
}

/* [Tk thread, master lock] The queued wake-up: run the OCaml job queue. */
static int gvltk_wake_proc(Tcl_Event *ev, int flags) {
  (void)ev; (void)flags;
  static const value *run_jobs;
  atomic_store(&wake_pending, 0);
  if (run_jobs == NULL) run_jobs = caml_named_value("gvltk_run_jobs");
  if (run_jobs != NULL) caml_callback(*run_jobs, Val_unit);
  return 1;
}

/* [any OCaml thread] Make the Tk thread run the job queue soon.  Coalesced:
 * one event is queued until it has run. */
CAMLprim value gvltk_wake(value unit) {
  (void)unit;
  if (!atomic_load(&installed)) return Val_unit;  /* run when the loop starts */
  if (atomic_exchange(&wake_pending, 1)) return Val_unit;
  Tcl_Event *ev = (Tcl_Event *)Tcl_Alloc(sizeof *ev);
  ev->proc = gvltk_wake_proc;
  ev->nextPtr = NULL;
  Tcl_ThreadQueueEvent(tk_thread, ev, TCL_QUEUE_TAIL);
  Tcl_ThreadAlert(tk_thread);
  return Val_unit;
}

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
 *    runtime (caml_enter_blocking_section_no_pending: signal handlers run
 *    between events, in gvltk_mainloop) and whose check proc (called as
 *    soon as the wait ends, before any event is serviced) re-enters it.  So
 *    Tcl waits, and reads X events, without the master lock; the lock is
 *    held only while Tcl services events, which is when OCaml callbacks run.
 *  - With gvloop's threads library the re-entry is a boosted acquire
 *    (gvloop_caml_boost_next): a Tk event preempts a CPU-bound OCaml thread
 *    at its next poll point instead of waiting for its slice.  With the
 *    stock library (no such symbol) it is an ordinary acquire.
 *  - gvltk_wake, from any OCaml thread, writes a byte to a pipe that the
 *    Tk thread watches with a Tcl file handler; the handler runs the OCaml
 *    job queue (Tkthread.async/sync).  No polling timer: an idle app sleeps
 *    in Tcl's notifier.  Not Tcl_ThreadQueueEvent: it finds its thread by
 *    id in Tcl's list of notifiers, where a GUI thread that ended without
 *    finalising Tcl stays, and a new one that got its id back lost every
 *    wake-up to it.
 *
 *  - gvltk_exiting, from Tkthread's at_exit (which runs before labltk's,
 *    made earlier at openTk, that finalizes Tcl): an exit on another
 *    thread stops the Tk thread where it waits for Tcl's events or for the
 *    lock after them (one in a callback, once the callback has returned),
 *    for good, so that it does not go on in Tcl once Tcl is finalized.
 *    With the stock lock the Tk thread held the master lock in Tcl, so no
 *    other thread could exit meanwhile.
 *
 * Threads: gvltk_install, gvltk_mainloop and gvltk_uninstall on the Tk
 * thread (the one that opened Tk), holding the master lock; gvltk_wake on
 * any OCaml thread; gvltk_exiting on the thread that exits, holding it.
 * Tcl keeps event sources and file handlers per thread, so a later GUI
 * thread (Tk opened again after the last window closed)
 * installs its own: between two GUI threads nothing watches the pipe, and
 * the next main_loop's first run_jobs serves what came meanwhile.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

#include <tcl.h>
#include <tk.h>

#include <caml/callback.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/signals.h>

#define GVLTK_BOOST 10  /* GVL_PRIO_BOOST */

CAMLprim value gvltk_install(value unit);
CAMLprim value gvltk_uninstall(value unit);
CAMLprim value gvltk_mainloop(value unit);
CAMLprim value gvltk_wake(value unit);
CAMLprim value gvltk_boosted(value unit);
CAMLprim value gvltk_exiting(value unit);

/* State of the one Tk thread (labltk has one interpreter per process).
 * Written by the Tk thread under the master lock, except wake_pending (any
 * thread), exiting (the exiting thread, under the lock) and parked (park_mu). */
static int wake_fd[2] = {-1, -1};   /* made by the first install       */
static atomic_int installed;        /* 1 from install to uninstall     */
static int in_loop;                 /* gvltk_mainloop is in DoOneEvent */
static int released;                /* setup proc left the runtime     */
static void (*boost_next)(int);     /* gvloop's threads library, or NULL */
static atomic_int wake_pending;     /* a byte is in the pipe, unread    */
static pthread_t tk_thread;         /* set by install                   */
static pid_t tk_pid;                /* the process it runs in (install) */
static atomic_int exiting;          /* set by gvltk_exiting, never cleared */
static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cv = PTHREAD_COND_INITIALIZER;
static int parked;                  /* park_mu: the Tk thread has stopped,
                                       or left the loop (uninstall) */

static void gvltk_wake_proc(ClientData cd, int mask);

static void gvltk_park(void);

/* parked = v, told to an exit waiting for it. */
static void set_parked(int v) {
  pthread_mutex_lock(&park_mu);
  parked = v;
  pthread_cond_broadcast(&park_cv);
  pthread_mutex_unlock(&park_mu);
}

/* Tcl_DoOneEvent calls this before it waits: leave the runtime, so other
 * OCaml threads run while Tcl sleeps.  Only inside gvltk_mainloop, which
 * re-enters if Tcl returns without calling the check proc.  Without
 * running OCaml signal handlers here, as caml_enter_blocking_section
 * would: one that raised (Sys.Break) would unwind Tcl's frames with the
 * lock held and `released` set, and one that called Tk.update would wait
 * in Tcl from inside this proc; gvltk_mainloop runs them between events,
 * where a callback would run. */
static void gvltk_setup(ClientData cd, int flags) {
  (void)cd; (void)flags;
  if (!in_loop || released) return;
  released = 1;
  caml_enter_blocking_section_no_pending();
  if (atomic_load(&exiting)) gvltk_park(); /* back from a callback, say */
}

static void gvltk_enter(void) {
  if (!released) return;
  if (atomic_load(&exiting)) gvltk_park();
  released = 0;
  if (boost_next) boost_next(GVLTK_BOOST);
  caml_leave_blocking_section();
  if (atomic_load(&exiting)) {       /* the exit let us have the lock */
    caml_enter_blocking_section_no_pending();
    gvltk_park();
  }
}

/* [Tk thread, outside the lock] Another thread is exiting and Tcl is about
 * to be finalized: say so, and never return (the exit ends the thread). */
static void gvltk_park(void) {
  set_parked(1);
  for (;;) pause();
}

/* [the thread that exits, holding the lock; from Tkthread's at_exit] Wake
 * the Tk thread and wait, without the lock, until it has stopped where it
 * waits for Tcl's events or for the lock after them: also one inside an
 * OCaml callback (a job waiting for a mutex, say), which stops once the
 * callback has returned and Tcl is about to wait again.  Not one in
 * another process (a fork()ed child exits without its parent's Tk
 * thread).  The wait ends after 2 s at most: a callback that does not
 * return, or a thread that holds the lock without reaching a poll point,
 * would keep the exit from ending; the Tk thread may then go on in Tcl
 * after it is finalized, as under the stock lock. */
CAMLprim value gvltk_exiting(value unit) {
  (void)unit;
  if (!atomic_load(&installed) || getpid() != tk_pid ||
      pthread_equal(pthread_self(), tk_thread))
    return Val_unit;
  atomic_store(&exiting, 1);
  gvltk_wake(Val_unit);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 2;
  caml_enter_blocking_section_no_pending();
  pthread_mutex_lock(&park_mu);
  while (!parked && pthread_cond_timedwait(&park_cv, &park_mu, &until) != ETIMEDOUT) {
  }
  pthread_mutex_unlock(&park_mu);
  caml_leave_blocking_section();
  return Val_unit;
}

/* Called as soon as the wait ends, before events are serviced. */
static void gvltk_check(ClientData cd, int flags) {
  (void)cd; (void)flags;
  gvltk_enter();
}

/* Before main_loop's first run_jobs: a job queued before this is run
 * there, one queued after it wakes this thread. */
CAMLprim value gvltk_install(value unit) {
  (void)unit;
  if (atomic_load(&installed)) return Val_unit;
  boost_next = (void (*)(int))dlsym(RTLD_DEFAULT, "gvloop_caml_boost_next");
  if (wake_fd[0] < 0) {
    int p[2];
    if (pipe(p) != 0) caml_failwith("Tkthread: pipe");
    for (int i = 0; i < 2; i++) {
      (void)fcntl(p[i], F_SETFL, fcntl(p[i], F_GETFL) | O_NONBLOCK);
      (void)fcntl(p[i], F_SETFD, FD_CLOEXEC);
    }
    wake_fd[1] = p[1];
    wake_fd[0] = p[0];
  }
  Tcl_CreateEventSource(gvltk_setup, gvltk_check, NULL);
  Tcl_CreateFileHandler(wake_fd[0], TCL_READABLE, gvltk_wake_proc, NULL);
  tk_thread = pthread_self();
  tk_pid = getpid();
  set_parked(0);
  atomic_store(&installed, 1);
  return Val_unit;
}

/* When the loop ends, also by an exception. */
CAMLprim value gvltk_uninstall(value unit) {
  (void)unit;
  if (!atomic_load(&installed)) return Val_unit;
  atomic_store(&installed, 0);
  Tcl_DeleteFileHandler(wake_fd[0]);
  Tcl_DeleteEventSource(gvltk_setup, gvltk_check, NULL);
  set_parked(1);   /* an exit waiting for the loop: it is out of Tcl's now */
  return Val_unit;
}

/* 1 when Tk callbacks enter OCaml boosted (gvloop's threads are linked). */
CAMLprim value gvltk_boosted(value unit) {
  (void)unit;
  return Val_bool(dlsym(RTLD_DEFAULT, "gvloop_caml_boost_next") != NULL);
}

/* Tk_MainLoop, with the wait outside the master lock.  An exception from a
 * callback, or from a signal handler run here, leaves through here holding
 * the lock (callbacks run with it). */
CAMLprim value gvltk_mainloop(value unit) {
  (void)unit;
  if (!atomic_load(&installed)) gvltk_install(Val_unit);
  while (Tk_GetNumMainWindows() > 0) {
    in_loop = 1;
    Tcl_DoOneEvent(TCL_ALL_EVENTS);
    in_loop = 0;
    gvltk_enter();  /* Tcl returned without checking (a failed wait) */
    caml_process_pending_actions();
  }
  return Val_unit;
}

/* [Tk thread, master lock] The pipe is readable: empty it, then run the
 * OCaml job queue (a wake-up after the read writes again). */
static void gvltk_wake_proc(ClientData cd, int mask) {
  (void)cd; (void)mask;
  static const value *run_jobs;
  char buf[64];
  for (;;) {
    ssize_t n = read(wake_fd[0], buf, sizeof buf);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    break;
  }
  atomic_store(&wake_pending, 0);
  if (run_jobs == NULL) run_jobs = caml_named_value("gvltk_run_jobs");
  if (run_jobs != NULL) caml_callback(*run_jobs, Val_unit);
}

/* [any OCaml thread] Make the Tk thread run the job queue soon.  Coalesced:
 * one byte is written until the Tk thread has read it.  Before the first
 * install there is no pipe, and main_loop runs the queue itself. */
CAMLprim value gvltk_wake(value unit) {
  (void)unit;
  if (wake_fd[1] < 0 || atomic_exchange(&wake_pending, 1)) return Val_unit;
  while (write(wake_fd[1], "w", 1) < 0 && errno == EINTR) {
  }
  return Val_unit;
}

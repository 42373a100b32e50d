/* SPDX-License-Identifier: MIT */
/*
 * tkb_notifier_tcl.c -- the notifier seam (tkb_notifier.h) on Tcl's STOCK
 * notifier: Tcl waits, libuv is driven from Tcl's event loop.
 *
 * For hosts where Tcl_SetNotifier cannot be used: a stock tclsh or wish that
 * loads gvloop as a package (its notifier is already running), and Tcl
 * versions without Tcl_SetNotifier.  libuv keeps all its descriptors and
 * timers in one kernel object, the backend descriptor (epoll/kqueue), which
 * is readable whenever libuv has work.  So:
 *   - a Tcl file handler watches uv_backend_fd();
 *   - a Tcl event source caps Tcl's block time at uv_backend_timeout()
 *     (libuv's next timer), computed afresh before every wait;
 *   - when either fires, a Tcl event runs evl_step(l, 0): uv_run(NOWAIT),
 *     then the dispatch of ready host callbacks under the boosted GVL.
 * The step always runs from Tcl's event dispatch (a file event, or an event
 * this source queued), never inside a libuv callback and never while Tcl
 * waits; libuv callbacks themselves only queue work (evloop's rule).
 *
 * Cost against tkb_notifier_uv.c: on Tcl 8.6/unix the stock notifier waits
 * in select() on a separate notifier thread, so every libuv event (and every
 * cross-thread evl_wakeup) reaches the Tcl thread through that thread's
 * wake-up pipe and a condition variable: one extra thread hop and wake-up.
 * Idle costs nothing: both threads sleep in the kernel.
 *
 * Compiled into libtkbridge when TKB_NOTIFIER selects it, and into the
 * gvloop Tcl package (tkbridge/tclpkg, with USE_TCL_STUBS).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <uv.h>

#include <tcl.h>

#include "tkb_notifier.h"

typedef struct {
  evl_t *l;
  uv_loop_t *uv;
  int fd;                   /* uv_backend_fd                              */
  void (*on_stop)(void *);  /* called once when a step sees the stop      */
  void *on_stop_arg;
  int stop_seen;
  int attached;             /* Tcl file handler and event source exist    */
  int step_queued;          /* a step event sits in Tcl's queue           */
  int busy;                 /* the last step found a uv_run on the stack  */
  tkb__ntf_stats_t st;
} ntf_t;

/* One binding per thread: Tcl's notifier state is per thread, and so is
 * evloop's "loop thread" role, so the binding is a property of the thread. */
static _Thread_local ntf_t *ntf_self;

typedef struct {
  Tcl_Event ev;             /* first: Tcl frees the event with ckfree     */
} step_event_t;

static void ntf_detach(ntf_t *n);

/* One non-blocking pass of the evloop.  Dispatch is budgeted: when the
 * budget was hit, callbacks are still waiting and libuv knows nothing about
 * them, so the next wait must be a poll (ntf_due_ms asks evl_backend). */
static void ntf_step(ntf_t *n) {
  int err = evl_step(n->l, 0);
  /* EBUSY: called while a uv_run is on the stack (a libuv callback ran Tcl
   * code); the outer pass carries on, so nothing is lost. */
  n->busy = err == EBUSY;
  if (evl_stopping(n->l) && !n->stop_seen) {
    n->stop_seen = 1;
    ntf_detach(n);
    if (n->on_stop != NULL) n->on_stop(n->on_stop_arg);
  }
}

/* The Tcl file handler on libuv's backend descriptor: it is serviced as a
 * Tcl file event, outside any libuv callback. */
static void ntf_file_proc(ClientData cd, int mask) {
  ntf_t *n = cd;
  (void)mask;
  if (ntf_self != n) return;
  n->st.file_events++;
  ntf_step(n);
}

static int ntf_step_event_proc(Tcl_Event *ev, int flags) {
  ntf_t *n = ntf_self;
  (void)ev;
  if (!(flags & (TCL_FILE_EVENTS | TCL_TIMER_EVENTS))) return 0; /* later */
  if (n == NULL) return 1;  /* unbound meanwhile: drop it */
  n->step_queued = 0;
  ntf_step(n);
  return 1;
}

/* Milliseconds until the loop has something to do (-1: nothing
 * scheduled), against a fresh loop time: the cached one is as old as the
 * last uv_run, and Tcl may have run scripts since.  0 while callbacks wait
 * for dispatch (evl_backend): those a budgeted step left behind, and those
 * taken in with a callback whose script waits in Tcl (vwait, update), which
 * then run from a nested step, as after's scripts do, where libuv alone
 * knows nothing of them.  Not while a step found a uv_run on the stack (a
 * libuv callback ran Tcl), which could not dispatch them: that uv_run's
 * own pass does, once it returns.  (evl_backend fails only where evl_step
 * would too: not on the loop's thread.) */
static int ntf_due_ms(ntf_t *n) {
  int fd, ms;
  if (!n->busy && evl_backend(n->l, &fd, &ms) == 0) return ms;
  if (evl_stopping(n->l)) return 0;
  uv_update_time(n->uv);
  return uv_backend_timeout(n->uv);
}

static void ntf_setup_proc(ClientData cd, int flags) {
  ntf_t *n = cd;
  int ms;
  if (!(flags & (TCL_FILE_EVENTS | TCL_TIMER_EVENTS)) || ntf_self != n) return;
  n->st.waits++;
  ms = ntf_due_ms(n);
  if (ms < 0) {
    n->st.blocking++;
    return;
  }
  if (ms > 0) n->st.blocking++;
  Tcl_Time t = {ms / 1000, (ms % 1000) * 1000};
  Tcl_SetMaxBlockTime(&t);
}

static void ntf_check_proc(ClientData cd, int flags) {
  ntf_t *n = cd;
  if (!(flags & (TCL_FILE_EVENTS | TCL_TIMER_EVENTS)) || ntf_self != n) return;
  if (n->step_queued || ntf_due_ms(n) != 0) return;
  step_event_t *e = (step_event_t *)ckalloc(sizeof *e);
  e->ev.proc = ntf_step_event_proc;
  e->ev.nextPtr = NULL;
  n->step_queued = 1;
  Tcl_QueueEvent(&e->ev, TCL_QUEUE_TAIL);
}

static int ntf_is_step_event(Tcl_Event *ev, ClientData cd) {
  (void)cd;
  return ev->proc == ntf_step_event_proc;
}

/* Detach from Tcl: no more handler calls for this binding, and no step
 * event left in the queue.  Done as soon as a step sees the stop (the
 * driver then finalizes Tcl on this thread, after which no Tcl call is
 * safe), else by tkb__ntf_unbind. */
static void ntf_detach(ntf_t *n) {
  if (!n->attached) return;
  n->attached = 0;
  Tcl_DeleteFileHandler(n->fd);
  Tcl_DeleteEventSource(ntf_setup_proc, ntf_check_proc, n);
  Tcl_DeleteEvents(ntf_is_step_event, NULL);
  n->step_queued = 0;
}

#ifndef USE_TCL_STUBS
static void ntf_tcl_init(void) {
  Tcl_FindExecutable(NULL);
}
#endif

/* ---- the seam ---------------------------------------------------------------- */

/* Tcl's own notifier stays: nothing to install.  But tkb__ntf_bind runs
 * before the thread's first Tcl call and creates Tcl handlers, which needs
 * Tcl's process-wide setup; an embedding library does it here (the bridge
 * repeats it with the executable's path, which is harmless).  An extension
 * (USE_TCL_STUBS) is loaded by an initialised Tcl. */
int tkb__ntf_install(void) {
#ifndef USE_TCL_STUBS
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, ntf_tcl_init);
#endif
  return 0;
}

/* The thread's Tcl ends (Tcl_FinalizeThread runs the thread's exit
 * handlers before it finalizes the notifier): the binding ends with it, so
 * a later Tcl on the thread may bind again. */
static void ntf_thread_exit(ClientData cd) {
  ntf_t *n = cd;
  if (ntf_self != n) return;
  ntf_detach(n);
  ntf_self = NULL;
  free(n);
}

int tkb__ntf_bind(evl_t *l, void (*on_stop)(void *), void *arg) {
  ntf_t *n;
  uv_loop_t *uv;
  if (l == NULL) return EINVAL;
  if ((uv = evl_uv_loop(l)) == NULL) return EINVAL;  /* not its loop thread */
  if (ntf_self != NULL) return EBUSY;
  if (uv_backend_fd(uv) < 0) return ENOTSUP;  /* a platform without one */
  if ((n = calloc(1, sizeof *n)) == NULL) return ENOMEM;
  n->l = l;
  n->uv = uv;
  n->fd = uv_backend_fd(uv);
  n->on_stop = on_stop;
  n->on_stop_arg = arg;
  ntf_self = n;
  Tcl_CreateEventSource(ntf_setup_proc, ntf_check_proc, n);
  Tcl_CreateFileHandler(n->fd, TCL_READABLE, ntf_file_proc, n);
  Tcl_CreateThreadExitHandler(ntf_thread_exit, n);
  n->attached = 1;
  return 0;
}

void tkb__ntf_unbind(void) {
  ntf_t *n = ntf_self;
  if (n == NULL) return;
  Tcl_DeleteThreadExitHandler(ntf_thread_exit, n);
  ntf_detach(n);
  ntf_self = NULL;
  free(n);
}

void tkb__ntf_note_tcl_ran(void) {
  /* Tcl's own Tcl_WaitForEvent decides; vwait re-checks after every event. */
}

void tkb__ntf_stats(tkb__ntf_stats_t *out) {
  tkb__ntf_stats_t zero = {0};
  if (out == NULL) return;
  *out = ntf_self != NULL ? ntf_self->st : zero;
}

const char *tkb__ntf_name(void) {
  return "tcl-notifier";
}

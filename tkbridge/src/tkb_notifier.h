/* SPDX-License-Identifier: MIT */
/*
 * tkb_notifier.h -- the notifier seam: how Tcl's event loop and libuv meet.
 *
 * Exactly one implementation is linked into libtkbridge, chosen at build
 * time by the Tcl it builds against (tkbridge/CMakeLists.txt, TKB_NOTIFIER):
 * tkb_notifier_uv.c, which replaces Tcl's notifier with Tcl_SetNotifier so
 * that Tcl_WaitForEvent waits in evl_step() (Tcl 8.6 and 9.0, the only ones
 * with Tcl_SetNotifier), or tkb_notifier_tcl.c, where Tcl's stock notifier
 * watches uv_backend_fd() with a Tcl file handler and caps Tcl's wait at
 * uv_backend_timeout() with an event source (a later Tcl; tests/tclpkg
 * also builds the bridge with it).  The rest of the bridge is the same with
 * either, because it only ever calls the functions below and runs Tcl's
 * event loop with Tcl_DoOneEvent().
 *
 * Contract for every implementation:
 *  - No Tcl script and no host callback runs inside uv_run(): libuv
 *    callbacks only note what is ready; Tcl events are queued outside it.
 *  - Host callbacks dispatched by evl_step() run under the GVL; everything
 *    else (Tcl, Tk, the wait itself) runs without it.
 *  - Tcl_DoOneEvent() returns soon after evl_stopping() becomes true.
 */
#ifndef TKB_NOTIFIER_H
#define TKB_NOTIFIER_H

#include <stdint.h>

#include "evloop.h"

/* Counters kept by the notifier, per loop thread.  What each counts
 * depends on the implementation: tkb_notifier_uv.c (Tcl's notifier
 * replaced) or tkb_notifier_tcl.c (Tcl's own, with libuv's descriptor as a
 * Tcl file handler). */
typedef struct {
  uint64_t waits;        /* Tcl waits: Tcl_WaitForEvent calls (uv); event-
                            source setups for file or timer events (tcl)  */
  uint64_t blocking;     /* ... of which could block                      */
  uint64_t file_events;  /* file events: Tcl file events queued, also for
                            always-ready files (uv); calls of the handler
                            on libuv's descriptor (tcl)                   */
  uint64_t alerts;       /* Tcl_AlertNotifier calls (uv); 0 (tcl), whose
                            cross-thread wake-ups Tcl's notifier makes    */
} tkb__ntf_stats_t;

/* [any] Install the notifier for the whole process.  Must run before the
 * first Tcl interpreter exists anywhere in the process; idempotent.
 * Returns 0 or an errno code (ENOTSUP when this Tcl cannot take this
 * integration: the libuv one needs Tcl_SetNotifier, Tcl 8.6 or 9.0). */
int tkb__ntf_install(void);

/* [loop thread] Bind the calling thread's Tcl notifier to l.  Must be called
 * before the thread's first Tcl call.  The binding ends with the thread's
 * Tcl (Tcl_FinalizeThread), or at tkb__ntf_unbind.  on_stop(arg) is called
 * once, on this thread, when a wait first sees evl_stopping(l) (the bridge
 * cancels running scripts there, so nested vwaits unwind).  Returns 0,
 * EINVAL, EBUSY, ENOTSUP (the integration cannot run in this process) or
 * ENOMEM. */
int tkb__ntf_bind(evl_t *l, void (*on_stop)(void *), void *arg);

/* [loop thread] Undo tkb__ntf_bind, before or after Tcl_FinalizeThread():
 * runs the loop until the notifier's libuv handles are closed, since
 * evloop wants every handle closed before the driver returns. */
void tkb__ntf_unbind(void);

/* [loop thread] Tell the notifier that Tcl code ran outside Tcl's own event
 * dispatch (a host callback called tkb_eval directly), so that the current
 * Tcl_WaitForEvent reports activity and vwait re-checks its variable. */
void tkb__ntf_note_tcl_ran(void);

/* [loop thread] Copy the calling thread's notifier counters; zeroes if the
 * thread has no notifier. */
void tkb__ntf_stats(tkb__ntf_stats_t *out);

/* [any] Short name of the integration ("libuv-notifier"). */
const char *tkb__ntf_name(void);

#endif /* TKB_NOTIFIER_H */

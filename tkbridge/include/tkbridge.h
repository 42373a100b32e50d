/* SPDX-License-Identifier: MIT */
/*
 * tkbridge.h -- Tcl/Tk on the evloop's loop thread.
 *
 * A Tcl interpreter with Tk lives on the loop thread of an evloop.  Tcl's
 * event loop is the evloop's driver: Tcl waits in libuv (through a Tcl
 * notifier built on libuv) without the GVL, so Tk repaints and runs its own
 * Tcl scripts while other threads hold the GVL.  Host code runs only under
 * the GVL, taken at cfg.prio (TKB_PRIO_BOOST to cut in ahead of CPU-bound
 * threads, as gvwish does):
 *   - host commands (tkb_command_create) called from Tcl;
 *   - completion callbacks of tkb_eval_async;
 *   - the error callback.
 * Other threads reach the interpreter with tkb_eval / tkb_eval_async /
 * tkb_run, which marshal the work to the loop thread and release the GVL
 * while the caller waits.  On the loop thread (inside a host callback)
 * tkb_eval and tkb_run run directly, with the GVL released around the Tcl
 * code; tkb_eval_async is queued as a Tcl event.
 *
 * Every bridge interp has two commands, the same as the gvloop Tcl
 * package's (gvloop(n)): gvloop::ping ?-noboost? (a trivial host callback
 * under the boosted GVL; returns the microseconds it waited for the GVL)
 * and gvloop::stats (a dict of the GVL's, the evloop's and the notifier's
 * counters, plus the bridge's own tkb_* ones).  Tcl's own `exit` still ends the process
 * (Tcl_Exit); a host that wants to survive it replaces the command with
 * tkb_command_create (gvwish and gvtclsh keep it: they are Tk_Main and
 * Tcl_Main on tkb_notifier_bind, not bridges).
 *
 * Setup:
 *     evl_config_t ec = {.prio = EVL_PRIO_BOOST};
 *     tkb_evl_config(&ec);              // Tcl's event loop drives the evloop
 *     evl_t *l = evl_start(gvl, &ec);
 *     tkb_t *tk;
 *     tkb_config_t tc = {.prio = TKB_PRIO_BOOST};
 *     tkb_start(l, &tc, &tk);           // interp + Tk on the loop thread
 *     ... tkb_eval(tk, "button .b -text hi; pack .b", NULL) ...
 *     tkb_destroy(tk);                  // evl_stop(l) tears down too, but
 *     evl_destroy(l);                   // tk's memory goes with tkb_destroy,
 *                                       // which must come before this
 *
 * Return values: 0 or a positive error code: an errno value, TKB_ETCL
 * when a Tcl script raised an error (the message is the result), TKB_ENOCMD,
 * or one of evloop's EVL_E* codes passed on.  tkb_strerror() says what a
 * code means, tkb_err_name() gives its name.
 *   EINVAL     NULL or bad argument
 *   ECANCELED  the bridge stopped before the call ran (pending at stop; a
 *              script running at stop unwinds and gives TKB_ETCL)
 *   EINTR      the waiting thread, which held the GVL, was interrupted
 *              (gvl_thread_interrupt); the call still runs on the loop
 *              thread, and the interrupt stays pending for the thread's
 *              next gvl_check_ints.  A thread that waits without holding
 *              the GVL is not interrupted: it waits for the call's end
 *   ENOMEM     allocation failure
 *   EPERM      the evloop was not set up with tkb_evl_config, or is
 *              attached (evl_attach), or the call was made on a thread the
 *              call's rule excludes
 *   ENOTSUP    Tk could not be initialised (e.g. no display; or on a new
 *              thread after one that ran Tk ended, see tkb_start); Tk's or
 *              the bridge's message is in tkb_errmsg()
 *
 * Thread rules beside each call:
 *   [any]          any thread, GVL held or not (it is released while waiting)
 *   [loop thread]  only on the loop thread of the bridge's evloop
 *   [GVL held]     the callback runs holding the GVL
 * A call that waits for a loop thread (tkb_eval, tkb_run, tkb_stop, ...;
 * evl_stop, evl_destroy) made from the loop thread of another evloop
 * blocks that loop meanwhile: two loop threads that wait for each other
 * this way wait for ever.  Use tkb_eval_async between loops.
 *
 * The notifier is process-wide (Tcl_SetNotifier): the first tkb_start
 * installs it, and it must come before any other use of Tcl in the process.
 *
 * fork(): a child forked by a thread that runs Tcl on tkbridge's notifier
 * (a bridge's Tcl thread, or another Tcl thread such as the Thread
 * package's; by TclX's fork, or a command of yours that forks) goes on
 * running that thread's Tcl, as a child of tclsh or wish does: the loop
 * its notifier waits in is the child's own there (evloop.h), so the
 * child's events are its own and what it does to its copies of channels
 * and handlers (close, fileevent, exit) leaves the parent's alone.  Not
 * Tk's connection to the X server, which parent and child share, as under
 * wish: a child of a thread with Tk that draws or exits (Tk closes the
 * display) breaks the parent's connection, which ends the parent (below);
 * such a child should exec() or _exit().
 * Nothing else of tkbridge or Tcl is the child's: other bridges, other
 * Tcl threads, and tkb_call from threads the child does not have.  A
 * child forked by any other thread must not use tkbridge or Tcl at all;
 * it may exec() or _exit(), as Tcl's own exec and open | do.
 */
#ifndef TKBRIDGE_H
#define TKBRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include "evloop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The API is visible from the static library too, so that a program
 * linking it can export it to the extensions it loads (-rdynamic). */
#if defined(__GNUC__)
#define TKB_EXPORT __attribute__((visibility("default")))
#else
#define TKB_EXPORT
#endif

/* Version of this header (the project's; semantic versioning).
 * tkb_version() and tkb_version_string() give the library's. */
#define TKB_VERSION_MAJOR 0
#define TKB_VERSION_MINOR 2
#define TKB_VERSION_PATCH 0
#define TKB_VERSION_STRING "0.2.0"
#define TKB_VERSION_HEX \
  ((TKB_VERSION_MAJOR << 16) | (TKB_VERSION_MINOR << 8) | TKB_VERSION_PATCH)

/* tkbridge's own error codes: out of errno's range (evloop's are 10100+). */
#define TKB_ETCL   10001  /* a Tcl script raised an error                  */
#define TKB_ENOCMD 10002  /* tkb_command_delete: no such host command       */

/* Values for tkb_config_t.prio (0..GVL_PRIO_MAX). */
#define TKB_PRIO_NORMAL GVL_PRIO_NORMAL   /* 0: the default               */
#define TKB_PRIO_BOOST  GVL_PRIO_BOOST    /* host callbacks cut in        */

typedef struct tkb_s tkb_t;
typedef struct tkb_result_s tkb_result_t;
struct Tcl_Interp;

/* [loop thread, GVL held] A Tcl command implemented by the host.  argv[0]
 * is the command name.  Return 0 for success; anything else makes the Tcl
 * command fail (the message is what tkb_result_set stored, else the
 * code's meaning: Tcl's text for an errno value (Tcl_ErrnoMsg, as Tcl's
 * own commands report one), tkb_strerror for gvloop's codes, and
 * "NAME: host command failed with code N" for a code that is neither;
 * errorCode {POSIX ENAME msg} for an errno value, {GVLOOP NAME code msg}
 * for gvloop's codes, {GVLOOP HOST code msg} for any other), so errors in
 * event bindings reach bgerror.  It may delete or replace its own command,
 * and stop tk. */
typedef int (*tkb_cmd_cb)(tkb_t *tk, void *arg, int argc,
                          const char *const *argv, tkb_result_t *res);

/* [loop thread, GVL held] Completion of tkb_eval_async: status 0, TKB_ETCL
 * (result holds the message), ECANCELED (bridge stopped; result "") or
 * ENOMEM (the result could not be copied; result "").
 * Called exactly once for every tkb_eval_async that returned 0. */
typedef void (*tkb_done_cb)(tkb_t *tk, int status, const char *result,
                            void *arg);

/* [loop thread, GVL held] A background error (Tcl's bgerror) occurred.  Tcl's
 * own handler (a ::bgerror proc, or the default report) runs after it. */
typedef void (*tkb_error_cb)(tkb_t *tk, const char *msg, void *arg);

/* [loop thread, no GVL] Work run by tkb_run. */
typedef void (*tkb_fn)(tkb_t *tk, struct Tcl_Interp *interp, void *arg);

typedef struct {
  int         argc;        /* $argc / $argv of the interp (may be 0).  With
                              Tk, Tk_Init parses them as wish does: the Tk
                              options before a "--" (-display, -name,
                              -geometry, -sync, -use, -visual, -colormap)
                              act and leave $argv, which keeps the rest  */
  char *const *argv;
  const char *argv0;       /* $argv0; NULL: "tkbridge"                      */
  const char *app_name;    /* Tk application name; NULL: from argv0.  A
                              -name in argv overrides it                   */
  const char *display;     /* X display; NULL: $DISPLAY.  Given to Tk as
                              -display (a -display in argv overrides it);
                              either way DISPLAY in the process environment
                              is left as it was (Tk would set it)          */
  int         no_tk;       /* 1: Tcl only (Tk is not loaded)                */
  int         prio;        /* GVL priority of host callbacks, 0..GVL_PRIO_MAX:
                              0 (TKB_PRIO_NORMAL) is the default;
                              TKB_PRIO_BOOST preempts CPU-bound holders     */
  tkb_error_cb on_error;   /* optional, see tkb_error_cb                    */
  void       *on_error_arg;
} tkb_config_t;

/* Counters of one bridge, plus its loop thread's notifier. */
typedef struct {
  uint64_t evals;          /* scripts run for tkb_eval / tkb_eval_async     */
  uint64_t evals_remote;   /* ... of which marshalled from other threads    */
  uint64_t runs;           /* tkb_run calls executed (not the bridge's own,
                              such as tkb_stats')                          */
  uint64_t cmd_calls;      /* host command invocations                      */
  uint64_t cmd_errors;     /* ... that returned an error                    */
  uint64_t gvl_acquires;   /* GVL acquisitions for host callbacks           */
  uint64_t bg_errors;      /* background errors seen                        */
  uint64_t cancelled;      /* calls completed with ECANCELED                */
  uint64_t ntf_waits;      /* Tcl waits the notifier saw                    */
  uint64_t ntf_blocking;   /* ... that could block                          */
  uint64_t ntf_file_events;/* file events queued by the notifier            */
  uint64_t ntf_alerts;     /* cross-thread wake-ups of the notifier         */
} tkb_stats_t;

/* [any] Fill ec->driver and ec->driver_arg so that the evloop's loop thread
 * runs Tcl's event loop (Tcl_DoOneEvent) instead of its default loop, and
 * ec->on_stop and ec->on_stop_arg so that a stop of the evloop (evl_stop,
 * evl_destroy) unwinds every bridge's running script at once, as tkb_stop
 * does, also one that never enters the event loop (`while 1 {}`).  An
 * evloop passed to tkb_start must have been started with such a config;
 * several bridges may share one. */
TKB_EXPORT int tkb_evl_config(evl_config_t *ec);

/* [any] Create an interpreter (with Tk unless cfg->no_tk) on l's loop
 * thread and wait until it is ready; cfg may be NULL.  libtkbridge is not
 * linked to Tk: a Tk the process already has (the host links it) is used,
 * else Tk is loaded into the interpreter here, as `package require Tk`
 * loads it in tclsh (the libtk8.6 the build found; `package require Tk`
 * when that file is gone), and a process whose bridges are all no_tk
 * never maps Tk or Xlib.  Tk is set up by one bridge at a time (Xlib's
 * locale and input-method state is shared and unlocked): a start with Tk,
 * and the stop of a loop that asked for Tk (Tk closes its display then),
 * wait while another bridge's Tk connects to its X server (libX11 1.8 and
 * later make another connect wait too); a start without Tk waits only for
 * another start's Tcl_Init.  A child forked while another thread was
 * setting Tk up or closing it is refused Tk (ENOTSUP).  Tk a script brings
 * in itself (`package require Tk` in a no_tk bridge) is not serialised so,
 * as in stock Tcl's threads: do not start it while another bridge starts
 * Tk.  A lost X connection (the server ends, or the connection breaks)
 * ends the process, as it ends wish: Tk leaves Xlib's I/O error handler,
 * which prints why and exits with status 1, in place.  On success *out is
 * the bridge.  EPERM: l not set up with tkb_evl_config (refused at once),
 * or set up so but attached (evl_attach: no driver runs Tcl there; see
 * tkb_notifier_bind for Tcl in a host's own loop).  A no_thread loop set
 * up so is waited for until evl_run runs it, on another thread (on the
 * thread that is to call evl_run, the wait never ends); ENOTSUP: Tk could not be loaded or Tk_Init failed (no display), or
 * Tk was asked for on a loop thread that has not run it while another loop
 * thread that ran Tk has ended: Tk 8.6 does not set its X display up again
 * safely on a new thread (the third such thread makes Xlib exit the
 * process, as with stock tclsh and Thread-package threads), so a process
 * keeps Tk on the loop threads that have it (many bridges in turn on one
 * evloop are fine, and so are Tk bridges on several evloops at once);
 * TKB_ETCL: Tcl_Init failed; ECANCELED: l is stopping.  On failure tkb_errmsg() tells why in words (Tcl's or Tk's own
 * message when they failed).  An interrupt (gvl_thread_interrupt) does not
 * end the wait: it stays pending, and the call returns the bridge. */
TKB_EXPORT int tkb_start(evl_t *l, const tkb_config_t *cfg, tkb_t **out);

/* [any] The message of the calling thread's last tkb_start: "" after a
 * success, else what went wrong, e.g. Tk's `couldn't connect to display
 * ":4242"` (its first 4095 bytes, cut between characters, when longer).
 * Thread-local (as errno); valid until this thread's next tkb_start. */
TKB_EXPORT const char *tkb_errmsg(void);

/* [any] Tear the interpreter down on the loop thread.  Calls pending at that
 * point complete with ECANCELED; later calls fail with ECANCELED.  From
 * another thread it waits until the teardown is done and every call accepted
 * before has completed (so no tkb_done_cb runs after it returns; a
 * tkb_cmd_cb or on_error callback the teardown happened inside may still
 * be finishing: one that stopped tk itself, or C code of one that runs
 * Tcl's event loop itself, e.g. Tcl_DoOneEvent in a tkb_run, since a stop
 * that waited for it could wait for ever on a callback that waits for the
 * stopping thread); from the
 * loop thread it tears down at once (running scripts unwind first) without
 * waiting for calls still on their way.  Idempotent until tkb_destroy
 * begins; EINVAL from then on (also inside a done callback that another
 * thread's tkb_destroy cancels).  If the caller holds the GVL it is released while it
 * waits, also when an interrupt is pending (which stays pending).  A
 * tkb_destroy by another thread while it waits frees nothing it uses.
 * Errors that the unwinding raises are dropped, but for a background-error
 * handler (bgerror) that is running at the stop: it unwinds like any
 * script, and Tcl says on stderr that it failed ("bgerror failed to handle
 * background error ... eval unwound"), as it says of any bgerror that
 * fails. */
TKB_EXPORT int tkb_stop(tkb_t *tk);

/* [any, not from inside one of tk's own callbacks] tkb_stop, then release
 * the caller's reference; memory goes when the last pending call ends.
 * Before evl_destroy of tk's evloop (also when evl_stop tore tk down): it
 * uses the evloop, which evl_destroy frees.
 * tk must not be used afterwards; a second tkb_destroy (or a tkb_stop) of
 * it returns EINVAL, as does a pointer tkb_start never returned.  (A
 * bridge started later may get the same address: the check cannot tell
 * that one apart.)  So no other thread may be calling into tk when
 * tkb_destroy begins, but for a tkb_stop or tkb_stats already waiting
 * (tkb_destroy frees nothing those use): stop it first (tkb_stop, after
 * which their calls fail with ECANCELED), let them finish, then destroy
 * it. */
TKB_EXPORT int tkb_destroy(tkb_t *tk);

/* [any] Evaluate script at global level and wait for it.  With result
 * non-NULL, *result receives a malloc'd copy of the interp result (the error
 * message on TKB_ETCL; free() it), or NULL if the call did not run or its
 * wait ended first (EINTR), or ENOMEM is returned where no copy could be
 * made. */
TKB_EXPORT int tkb_eval(tkb_t *tk, const char *script, char **result);

/* [any] Queue script; done (may be NULL) is called once with the outcome. */
TKB_EXPORT int tkb_eval_async(tkb_t *tk, const char *script, tkb_done_cb done,
                              void *arg);

/* [any] Run fn(tk, interp, arg) on the loop thread without the GVL and wait;
 * for C code that uses the Tcl/Tk API directly. */
TKB_EXPORT int tkb_run(tkb_t *tk, tkb_fn fn, void *arg);

/* [any] Create (or replace) the Tcl command name (1 to 4095 bytes, else
 * EINVAL; may include a namespace, created if missing) implemented by cb.
 * arg is passed to cb. */
TKB_EXPORT int tkb_command_create(tkb_t *tk, const char *name, tkb_cmd_cb cb,
                                  void *arg);

/* [any] Delete a command created with tkb_command_create.  TKB_ENOCMD if
 * none. */
TKB_EXPORT int tkb_command_delete(tkb_t *tk, const char *name);

/* [loop thread, inside a tkb_cmd_cb] Set the command's result (copied). */
TKB_EXPORT int tkb_result_set(tkb_result_t *res, const char *s);

/* [loop thread] The Tcl interpreter, NULL after stop.  Tcl code run on it
 * directly from an evloop callback, not through tkb_run or tkb_eval, is
 * not seen by a vwait the callback interrupted: a variable it sets wakes
 * that vwait only at the next event. */
TKB_EXPORT struct Tcl_Interp *tkb_interp(tkb_t *tk);

/* [any] The evloop of the bridge. */
TKB_EXPORT evl_t *tkb_evl(tkb_t *tk);

/* [any] Read the counters.  From another thread the notifier fields are
 * fetched with a tkb_run (so the call waits for the loop thread, releasing
 * the GVL); after stop they hold the values at teardown.  EINTR: that wait
 * was interrupted; every field is filled, the notifier's from the last
 * fetch.  EINVAL after tkb_destroy.  A tkb_destroy by another thread
 * meanwhile frees nothing this call still uses. */
TKB_EXPORT int tkb_stats(tkb_t *tk, tkb_stats_t *out);

/* [any] Install the libuv notifier for the whole process now.  tkb_start
 * does it too; a host that also uses Tcl elsewhere (other threads, its own
 * interps) must call this first, before anything else of Tcl runs, because
 * Tcl_SetNotifier cannot replace a notifier that threads already use.
 * Idempotent; returns 0 or an errno code. */
TKB_EXPORT int tkb_notifier_install(void);

/* [the thread that called evl_attach(l), before its first Tcl call] For a
 * host that runs Tcl's own main loop on that thread (Tcl_Main, Tk_Main, its
 * own interps and Tcl_DoOneEvent), as gvwish and gvtclsh do: install the
 * notifier if needed and bind the calling thread's Tcl notifier to l, so
 * that Tcl waits in evl_step (without the GVL) and l's host callbacks are
 * dispatched from those waits.  The binding lasts as long as the thread's
 * Tcl (Tcl_FinalizeThread, Tcl_Exit).  No tkb_t is involved: tkb_start is
 * for a loop thread that evloop drives.  EINVAL (NULL), EPERM (not l's loop
 * thread), EBUSY (this thread's notifier is already bound or initialised),
 * or the error of tkb_notifier_install. */
TKB_EXPORT int tkb_notifier_bind(evl_t *l);

/* [a thread bound to l by tkb_notifier_bind] Create gvloop::ping and
 * gvloop::stats in ip, an interp of the calling thread: the commands every
 * bridge interp has, without the bridge's tkb_* keys.  ping takes the GVL
 * at prio (TKB_PRIO_NORMAL, TKB_PRIO_BOOST, or any GVL_PRIO_MIN..GVL_PRIO_MAX).
 * EINVAL, EPERM (not l's loop thread), ENOMEM. */
TKB_EXPORT int tkb_notifier_commands(struct Tcl_Interp *ip, evl_t *l, int prio);

/* [any] Name of the notifier integration in use ("libuv-notifier"). */
TKB_EXPORT const char *tkb_notifier_name(void);

/* [any] What a code means to the bridge (TKB_ETCL, TKB_ENOCMD, its reading
 * of EPERM/ENOTSUP/ECANCELED), else evl_strerror.  Reentrant. */
TKB_EXPORT const char *tkb_strerror(int err);
/* [any] The code's name ("TKB_ETCL", "ECANCELED"; "UNKNOWN" if none). */
TKB_EXPORT const char *tkb_err_name(int err);
/* [any] The library's version (TKB_VERSION_HEX / _STRING it was built with). */
TKB_EXPORT unsigned tkb_version(void);
TKB_EXPORT const char *tkb_version_string(void);

#ifdef __cplusplus
}
#endif
#endif /* TKBRIDGE_H */

/* SPDX-License-Identifier: MIT */
/*
 * evloop.h -- a libuv event loop outside the GVL that runs host callbacks
 * under the GVL, taken at the priority the host chose (EVL_PRIO_BOOST to
 * cut in ahead of CPU-bound threads).
 *
 * One evl_t owns one uv_loop_t and one loop thread.  The loop thread waits in
 * the kernel (uv_run) holding nothing.  libuv callbacks never run host code:
 * they move ready work onto a dispatch queue.  After uv_run returns, the loop
 * thread takes the GVL once with gvl_acquire_prio(cfg.prio), runs ready host
 * callbacks up to a budget (count and time), and releases it (in a pass
 * nested inside one of the loop thread's blocking regions, once per
 * callback with gvl_call_with: see evl_step).  A host that
 * wants its callbacks to cut in ahead of CPU-bound threads sets
 * cfg.prio = EVL_PRIO_BOOST (the setting gvloop's shells and examples use).
 *
 * Every registration (post, timer, fd watch, signal watch, thread-pool work,
 * file read) gets an id (never 0) and a callback.  The callback's LAST call
 * for an id is the one with status != 0, or the single call of a one-shot
 * registration (post, one-shot timer, work, read): after it the id is gone
 * and arg may be freed.  Repeating registrations (repeating timers, fd and
 * signal watches) get status 0 for each event and end with exactly one call
 * with ECANCELED (evl_cancel, evl_stop) or with an error code.  Nothing is
 * lost and nothing is called twice: once evl_stop returns on a thread that
 * waits for the loop thread (see evl_stop), and once evl_destroy returns,
 * every accepted registration has had its last call.  When a call that takes a callback
 * returns an error, that callback is never called.
 *
 * Return values: every int-returning call returns 0 or a positive code: an
 * errno value or one of evloop's own (EVL_E*, 10100 and above, out of
 * errno's range), where an errno value would mislead:
 *   EINVAL     NULL or out-of-range argument
 *   EPERM      wrong thread for this call (see the thread rules)
 *   EBUSY      evl_step from inside a libuv callback; evl_cancel of work
 *              or a file read that has started; evl_destroy from the loop thread; evl_run
 *              or evl_attach of a loop running or run; evl_attach on a
 *              thread that is another loop's; evl_detach from a callback
 *   EVL_ENOREG    evl_cancel: the id is unknown or has had its last call
 *   EEXIST     evl_fd_watch: the fd is already watched on this loop
 *   EVL_ENOTPOLL  evl_fd_watch: a regular file or directory
 *   EVL_ESTOPPED  evl_stop was requested: new registrations are refused
 *   ENOSPC     a signal watch's last call: 1024 were open in the process
 *   ENOMEM     allocation failure (never a crash in evloop; libuv 1.44
 *              itself abort()s if it cannot grow its fd table inside
 *              uv_loop_init / uv_poll_start, if it cannot
 *              start its thread pool at the process's first evl_work or
 *              evl_read_file, or if the process's first evl_start cannot
 *              open libuv's signal pipe with one or two descriptors left)
 *   anything else: the errno of the failing system call
 * evl_strerror() says what a code means here, evl_err_name() its name.
 *
 * Thread rules, beside each call:
 *   [any]          any thread, attached to the GVL or not, holding it or not
 *   [loop thread]  only the loop thread (including inside its callbacks)
 *   [GVL held]     the caller holds the GVL through the given handle
 *
 * fork(): the child has only the forking thread.  The loops that thread
 * drives (its evl_run or evl_attach, also from inside one of their
 * callbacks) are its loops in the child too, given kernel state of their
 * own as it forks (libuv's uv_loop_fork, and a new wake-up on the same
 * descriptor), so that neither process's polls, cancellations or wake-ups
 * reach the other's loop: what was registered before the fork goes on in
 * both (a watch of an fd they share sees it in both, as two processes
 * polling it would), but for signal watches, which the child's signals do
 * not reach (evl_signal_watch), and work (evl_work) under way, which the
 * child, without the parent's pool threads, never finishes: its
 * evl_detach or evl_destroy would then wait for ever.  evl_backend keeps
 * its number but names a new epoll instance: a host that polls it by
 * number (poll, select) goes on; one that added it to an epoll instance
 * of its own adds it again.  The parent's other loops have no loop thread
 * in the child, which must not call anything on them (a registration
 * would never run, evl_stop and evl_destroy would wait for ever).  The
 * child may start loops of its own: a thread forked inside a work
 * function may attach one; one that drives a loop cannot attach another
 * (EBUSY), in the child as in the parent.  (libuv's own: a child of a
 * process that has used the work pool crashes in exit(), where libuv
 * joins pool threads the child does not have; such a child ends with
 * _exit.)  The forking thread's loops' locks are taken across the fork,
 * so that no other thread is half way through a registration in the
 * child's copy: as with libgvl (gvl.h), a fork() from a signal handler
 * that interrupted an evloop call on that thread waits for ever.
 *
 * Errors in host callbacks: evl_cb returns void, so a callback fails by
 * calling evl_fail(l, err, what) before returning.  After the callback
 * returns, the loop calls cfg.on_error(l, err, what, on_error_arg) on the loop
 * thread with the GVL in the state the callback ran in, then carries on.
 * Without on_error a line goes to stderr.
 */
#ifndef EVLOOP_H
#define EVLOOP_H

#include <stddef.h>
#include <stdint.h>
#include "gvl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The API is visible from the static library too, so that a program
 * linking it can export it to the extensions it loads (-rdynamic). */
#if defined(__GNUC__)
#define EVL_EXPORT __attribute__((visibility("default")))
#else
#define EVL_EXPORT
#endif

/* Version of this header (the project's; semantic versioning).
 * evl_version() and evl_version_string() give the library's. */
#define EVL_VERSION_MAJOR 0
#define EVL_VERSION_MINOR 2
#define EVL_VERSION_PATCH 0
#define EVL_VERSION_STRING "0.2.0"
#define EVL_VERSION_HEX \
  ((EVL_VERSION_MAJOR << 16) | (EVL_VERSION_MINOR << 8) | EVL_VERSION_PATCH)

/* uv.h needs POSIX feature macros that a strict -std=c11 build lacks, so
 * only the loop type is declared here (C11 allows repeating a typedef that
 * names the same type, so including uv.h too is fine). */
typedef struct uv_loop_s uv_loop_t;

typedef struct evl_s evl_t;
typedef uint64_t evl_id_t;            /* 0 is never a valid id.  Every call that
                                         takes id_out stores the id before the
                                         callback can run. */

/* Host callback.  status is 0, ECANCELED (evl_cancel / evl_stop), or an
 * errno for a registration that failed on the loop thread. */
typedef void (*evl_cb)(evl_t *l, void *arg, int status);

/* fd watch callback: events is a mask of EVL_READABLE / EVL_WRITABLE (0 on
 * the last call). */
typedef void (*evl_io_cb)(evl_t *l, void *arg, int status, unsigned events);

/* Whole-file read callback.  On status 0, data is a malloc'd buffer of len
 * bytes followed by a NUL byte (not counted in len); the callback owns it and
 * frees it with free().  On any other status data is NULL and len 0. */
typedef void (*evl_read_cb)(evl_t *l, void *arg, int status, char *data,
                            size_t len);

/* Thread-pool work function: runs on a libuv pool thread WITHOUT the GVL. */
typedef void (*evl_work_fn)(void *arg);

typedef struct {
  int      prio;            /* GVL priority used to dispatch host callbacks,
                               GVL_PRIO_MIN..GVL_PRIO_MAX: 0 (the default)
                               is normal; EVL_PRIO_BOOST makes each dispatch
                               preempt a CPU-bound holder at its next safe
                               point (charged to the GVL's boost cap)       */
  unsigned budget_count;    /* max callbacks run in one dispatch pass, with
                               or without the GVL, so also per acquisition
                               (0 = 64); the loop polls for I/O between
                               passes                                      */
  uint64_t budget_ns;       /* max time per GVL acquisition (0 = 2 ms)      */
  int      no_thread;       /* 0: evl_start spawns the loop thread;
                               1: the host calls evl_run() on its own thread */
  void   (*driver)(evl_t *l, void *arg);
                            /* optional: the loop thread calls this instead of
                               `while (!evl_stopping(l)) evl_step(l, -1);`.
                               Must return soon after evl_stopping(l) becomes
                               true; returning earlier also stops the loop.  */
  void    *driver_arg;
  void   (*on_error)(evl_t *l, int err, const char *what, void *arg);
                            /* failing host callbacks (see evl_fail)        */
  void    *on_error_arg;
  void   (*on_ready)(evl_t *l, evl_id_t id, void *arg);
                            /* optional instrumentation: called on the loop
                               thread without the GVL when libuv reports an
                               event for id (inside uv_run: timer due, fd
                               ready, signal, work done) or when the loop
                               takes in a post.  It must not block or call
                               evloop. */
  void    *on_ready_arg;
  int      sched_policy;    /* kernel scheduling of the loop thread that
                               evl_start spawns: 0 (EVL_SCHED_KEEP) leaves
                               it as created; EVL_SCHED_FIFO or
                               EVL_SCHED_RR give it that real-time policy
                               at sched_priority (1..99).  See "Scheduling"
                               below.  Not with no_thread (EINVAL)          */
  int      sched_priority;  /* 0 with EVL_SCHED_KEEP (else EINVAL)          */
  void   (*on_stop)(evl_t *l, void *arg);
                            /* optional, for a driver whose host code can
                               run long without looking at evl_stopping
                               (tkbridge unwinds running Tcl scripts here):
                               called once, on the thread that makes the
                               first stop request (evl_stop, evl_destroy,
                               evl_detach; not when the loop ends because
                               the driver returned), as evl_stopping(l)
                               becomes 1 and before that call waits, with
                               no evloop lock held.  It must not block or
                               call evloop other than evl_stopping          */
  void    *on_stop_arg;
} evl_config_t;

/* Values for cfg.sched_policy.
 * Scheduling: on a machine whose CPUs are all busy with other processes,
 * the loop thread waits for a CPU after each event, and so does the GVL's
 * holder, which must reach a safe point before a boosted dispatch can run
 * (bench/evloop loop_latency beside 2 CPU-bound processes on 2 CPUs:
 * milliseconds at p99, against microseconds for a loop with no GVL).  A
 * real-time loop thread on a GVL created with GVL_F_LEND (gvl.h) answers
 * both: the loop thread runs when its event comes, and its boosted acquire
 * lends the holder its real-time policy until the holder's next safe
 * point, so both run ahead of the busy processes (BENCHMARKS.md, "A loaded
 * machine").  Threads the loop thread starts (libuv's thread pool, which
 * evl_work and evl_read may create) begin with normal scheduling
 * (SCHED_RESET_ON_FORK).
 * The trade-off: the loop thread, and a GVL holder while lent, run ahead of
 * every normal process on the machine.  A host callback that computes for
 * long keeps a CPU from them for as long as it runs (the kernel's
 * real-time throttling, by default 95% of each second, is the only bound),
 * so use it for loops whose callbacks are short.  It needs CAP_SYS_NICE
 * or an RLIMIT_RTPRIO of at least sched_priority, and, in a cgroup v1 CPU
 * group, a real-time budget (cpu.rt_runtime_us > 0; containers often
 * have 0): without, evl_start fails with EPERM.  A nice level is not
 * offered: a lower nice is applied by the kernel at its next pick, not at
 * once, and does not help (measured). */
#define EVL_SCHED_KEEP 0
#define EVL_SCHED_FIFO 1
#define EVL_SCHED_RR   2

/* Values for cfg.prio (any GVL priority is accepted). */
#define EVL_PRIO_NORMAL GVL_PRIO_NORMAL   /* 0: the default               */
#define EVL_PRIO_BOOST  GVL_PRIO_BOOST    /* host callbacks cut in        */

/* evloop's own error codes (see the top of this file). */
#define EVL_ESTOPPED 10100  /* loop stopped: registrations refused          */
#define EVL_ENOREG   10101  /* no such registration (evl_cancel)            */
#define EVL_ENOTPOLL 10102  /* fd cannot be watched: regular file/directory */

/* ---- lifecycle ------------------------------------------------------------ */

/* [any] Create a loop on g.  cfg may be NULL for defaults (the same as a
 * zeroed evl_config_t: normal priority, default budgets, own thread).  Unless
 * cfg->no_thread, spawns the loop thread, which attaches to g (holding
 * nothing) and runs the driver.  Returns NULL with errno set: EINVAL (NULL g,
 * a priority outside [GVL_PRIO_MIN, GVL_PRIO_MAX], a sched_policy that is
 * none of the three, a sched_priority outside 1..99 with a real-time policy
 * or other than 0 with EVL_SCHED_KEEP, a real-time policy with no_thread),
 * ENOMEM, EMFILE (fewer descriptors free than the loop needs: seven for the
 * process's first loop, whose pipes libuv would otherwise abort the process
 * for, five for a later one; counted at and above the numbers kept for the
 * host's own files, 64 or a quarter of the open-file limit), or the error of
 * uv_loop_init / pthread_create / gvl_thread_attach. */
EVL_EXPORT evl_t *evl_start(gvl_t *g, const evl_config_t *cfg);

/* [any] Copy into *out the configuration l was started with: cfg as given
 * to evl_start (zeroed for NULL), with budget_count and budget_ns as the
 * loop uses them (the defaults in place of 0).  A layer above uses it to
 * check a loop it is handed (tkb_start: the driver).  EINVAL: NULL l or
 * out. */
EVL_EXPORT int evl_config_get(evl_t *l, evl_config_t *out);

/* [host thread, no_thread mode] Run the loop on the calling thread until it
 * is stopped, then shut it down (every pending callback gets its last call).
 * The calling thread is attached to the GVL if it is not already; it may
 * hold the GVL on entry (it is released while waiting and held again on
 * return).  EINVAL, EPERM (not no_thread mode), EBUSY (already running or
 * already finished). */
EVL_EXPORT int evl_run(evl_t *l);

/* [any, incl. from a callback or a work function] Request a stop.
 * Idempotent.  From the moment stop is requested, new registrations return
 * EVL_ESTOPPED and a dispatch pass runs no further callback once the running
 * one returns (a pass nested in a callback's evl_step still runs, so that
 * the wait can end; it no longer blocks, so a nested wait loop ends on
 * evl_stopping(l) too, or it polls until its condition comes).  As with
 * evl_cancel, a callback the loop thread had
 * taken for dispatch as a stop came from another thread may still start;
 * one that runs with the GVL does not start after a stop requested with
 * the GVL held, unless it is in a pass nested in a callback's evl_step
 * (the exception above wins).  After the driver returns, every pending
 * registration gets its last call: queued posts and armed timers get ECANCELED, watches
 * get ECANCELED, work not yet started is not run and gets ECANCELED, work
 * already running is waited for and gets its real status.
 * From a thread other than the loop thread (and not from a work function) it
 * waits until the loop thread has finished (the loop thread running another
 * loop nested, in a callback or beside evl_attach, is still l's and only
 * requests the stop), releasing the GVL meanwhile if the caller holds it;
 * an interrupt (gvl_thread_interrupt) does not end
 * that wait, and one pending on the caller is still pending when it
 * returns.  In no_thread mode, if evl_run is not running it
 * returns without waiting (evl_run or evl_destroy finishes the job).
 * Memory is freed only by evl_destroy. */
EVL_EXPORT int evl_stop(evl_t *l);

/* [host thread, no_thread mode] For a host whose own event loop does the
 * waiting (Tcl's notifier, GLib, a game loop): make the calling thread the
 * loop thread, as evl_run does, but return at once.  The host then watches
 * the fd from evl_backend for readability, blocks at most the timeout it
 * gives, and calls evl_step(l, 0) whenever either fires.  A stop requested
 * by another thread wakes that fd; evl_stop from another thread waits until
 * the host calls evl_detach.  EINVAL, EPERM (not no_thread mode), EBUSY
 * (attached, running or finished already, or the calling thread is the loop
 * thread of another loop already: attached or running it, or in one of its
 * callbacks), or the error of gvl_thread_attach. */
EVL_EXPORT int evl_attach(evl_t *l);

/* [the thread that called evl_attach, outside any callback] Stop (if not
 * requested yet), shut down (every pending registration gets its last
 * call, on this thread) and give up the loop-thread role.  The GVL state of
 * the caller is kept: if evl_attach attached the thread to the GVL and the
 * caller holds the GVL through that handle (evl_gvl_thread), the handle
 * stays attached and held, and is the host's to release and detach
 * (gvl_thread_self finds it).  EINVAL, EPERM (not attached by this
 * thread), EBUSY (inside a callback, cfg.on_error or a libuv callback). */
EVL_EXPORT int evl_detach(evl_t *l);

/* [loop thread] What a host waiting in its own loop needs: *fd_out, the
 * fd that becomes readable when the loop has something to do
 * (uv_backend_fd), and *timeout_ms_out, how long the host may block before
 * calling evl_step(l, 0), counted from this call: -1 for no limit, 0 when
 * callbacks are already waiting for dispatch (the budget ran out) or a stop
 * was requested.
 * EINVAL, EPERM. */
EVL_EXPORT int evl_backend(evl_t *l, int *fd_out, int *timeout_ms_out);

/* [any but the loop thread] Stop (as evl_stop), wait for the loop to finish,
 * join the loop thread and free everything (an interrupt pending on the
 * caller stays pending, as in evl_stop).  In no_thread mode, if evl_run
 * never ran, the shutdown runs on the calling thread (which attaches to the
 * GVL for it if needed).  The thread that called evl_attach may destroy
 * outside any callback (evl_detach is done first).  l is invalid
 * afterwards.  No other call on l may run beside it or follow it, except
 * evl_stop calls that made their stop request before evl_destroy began:
 * evl_destroy waits until those are done with l before it frees it.  The
 * host can tell only of the call that made the first request (evl_stopping
 * returns 1 from then on): where several threads may call evl_stop, the
 * others must have returned before evl_destroy begins.
 * EINVAL, EBUSY (called on the loop thread in a callback, in cfg.on_error
 * or from a driver, from a loop run nested on l's loop thread, or from a
 * work function). */
EVL_EXPORT int evl_destroy(evl_t *l);

/* [any] 1 once a stop was requested, else 0 (0 for NULL). */
EVL_EXPORT int evl_stopping(evl_t *l);

/* [any] Make a blocking evl_step return soon (a write to the loop's
 * eventfd: wake-ups coalesce).  EINVAL, EVL_ESTOPPED once the loop has shut down. */
EVL_EXPORT int evl_wakeup(evl_t *l);

/* [loop thread] One pass: run uv_run once, blocking at most timeout_ms
 * (-1: until an event, 0: poll) with the GVL released; then dispatch ready
 * host callbacks under gvl_acquire_prio (budgeted) and release.  It does not
 * block when callbacks are already waiting for dispatch or a stop was
 * requested.  Re-entrant from a dispatched callback (nested waits); the GVL
 * state of the caller is restored on return.  Also from inside one of the
 * loop thread's blocking regions (fn of a callback's gvl_call_without, as
 * tkbridge runs Tcl code): each callback that needs the GVL then takes it
 * with gvl_call_with, which suspends the region for that callback (gvl.h),
 * and gives it back after.  EINVAL, EPERM (not the loop thread), EBUSY
 * (called from inside a libuv callback, where uv_run cannot be
 * re-entered). */
EVL_EXPORT int evl_step(evl_t *l, int64_t timeout_ms);

/* [loop thread] The underlying loop, for layers above (NULL otherwise).
 * Handles made on it must be closed before the driver returns. */
EVL_EXPORT uv_loop_t *evl_uv_loop(evl_t *l);
/* [loop thread] The loop thread's GVL handle (NULL on other threads). */
EVL_EXPORT gvl_thread_t *evl_gvl_thread(evl_t *l);
/* [any] The GVL the loop was started on. */
EVL_EXPORT gvl_t *evl_gvl(evl_t *l);
/* [any] 1 if the caller is the loop thread of l, else 0. */
EVL_EXPORT int evl_in_loop_thread(evl_t *l);

/* ---- callbacks and cancellation ----------------------------------------- */

/* Flags for every registration call (the `flags` arguments). */
#define EVL_F_NOGVL 0x1u   /* run the callback on the loop thread WITHOUT the
                              GVL (for work that is not host code, e.g. Tk) */

/* [any] Run cb(l, arg, 0) once on the loop thread under the GVL.  Callbacks
 * posted by one thread run in the order posted. */
EVL_EXPORT int evl_post(evl_t *l, evl_cb cb, void *arg, evl_id_t *id_out);
/* [any] As evl_post with EVL_F_* flags. */
EVL_EXPORT int evl_post_flags(evl_t *l, evl_cb cb, void *arg, unsigned flags,
                              evl_id_t *id_out);

/* [any] Cancel a registration: its callback gets one last call with
 * ECANCELED (after any call of it that is running now returns), also when
 * the registration had ended otherwise (a one-shot timer that fired, a
 * watch that failed) and that last call had not been made yet.  A cancel
 * made with the GVL held, of a callback that runs with it, is exact: no
 * call with status 0 starts after it.  Otherwise a call with status 0 that
 * the loop thread had taken for dispatch as the cancel came may still
 * start after it returns (the last call is ECANCELED all the same).  EVL_ENOREG if
 * the id is unknown, was cancelled, or has had its last call or been taken
 * for it (that call may still be starting, except for a cancel made with the
 * GVL held of a callback that runs with it);
 * EBUSY for work whose function, or a file read that, has started (its
 * completion still comes, with the status of what ran); EINVAL for id 0,
 * which no registration has.  For an fd watch, close the fd only after the last call. */
EVL_EXPORT int evl_cancel(evl_t *l, evl_id_t id);

/* [loop thread, inside a dispatched callback] Report that the running
 * callback failed: after it returns, cfg.on_error(l, err, what, arg) is
 * called (what is copied, up to 255 bytes; may be NULL).  The last report
 * of a callback wins.  EINVAL (NULL l, err <= 0), EPERM (not inside a
 * callback). */
EVL_EXPORT int evl_fail(evl_t *l, int err, const char *what);

/* ---- timers ---------------------------------------------------------------- */

/* [any] Call cb once timeout_ms have passed since this call (the loop
 * thread arms the timer for what is left of them, at the latest in the
 * next evl_step after this call), then every repeat_ms if repeat_ms > 0.
 * Never earlier; usually about a millisecond later, since libuv's loop
 * time is whole milliseconds of a clock that may lag by a kernel tick,
 * and the due time is rounded up to it.  That is when it is taken for
 * dispatch: its call then waits, as any event's does, behind the callbacks
 * already waiting for dispatch (a backlog of posts, say).
 * A one-shot timer has one call (0, or ECANCELED if cancelled or stopped
 * first).  A repeating timer gets 0 per tick (ticks that fire while the
 * previous one is still waiting for dispatch are merged) and ends with
 * ECANCELED.  One-shot timers whose due times (call + timeout_ms) are a
 * millisecond or more apart (libuv's resolution) have their calls in due
 * order, also when the loop thread arms one or both only after they are
 * due (in one pass or in two); closer ones may come in either order.
 * EINVAL, EVL_ESTOPPED, ENOMEM. */
EVL_EXPORT int evl_timer(evl_t *l, uint64_t timeout_ms, uint64_t repeat_ms,
                         unsigned flags, evl_cb cb, void *arg,
                         evl_id_t *id_out);

/* ---- file descriptors -------------------------------------------------------- */

#define EVL_READABLE 0x1u
#define EVL_WRITABLE 0x2u

/* [any] Watch fd (level-triggered) for events (EVL_READABLE | EVL_WRITABLE).
 * cb gets 0 and the ready events each time the fd is ready and the previous
 * call has returned: while a call runs, passes nested in it (evl_step) do
 * not poll the fd, and it is polled afresh once the call returns, so a
 * callback that reads only after a nested wait is not called again for
 * what it has read.  The watch
 * ends with ECANCELED or with the error the kernel reported: for an error
 * condition on the fd, the socket's pending error (SO_ERROR: ECONNREFUSED
 * for a refused connect), EPIPE for a pipe whose reader has gone, else
 * EIO; EVL_ENOTPOLL for a file that epoll refuses (/dev/null).  One watch
 * per fd per loop.  libuv switches the fd to non-blocking mode (O_NONBLOCK stays
 * set after the watch ends), so reads and writes in the callback may return
 * EAGAIN.  EINVAL (fd < 0, bad events), EBADF (fd not open), EVL_ENOTPOLL
 * (a regular file or directory: epoll cannot watch it), EEXIST,
 * EVL_ESTOPPED, ENOMEM. */
EVL_EXPORT int evl_fd_watch(evl_t *l, int fd, unsigned events, unsigned flags,
                            evl_io_cb cb, void *arg, evl_id_t *id_out);

/* ---- signals ----------------------------------------------------------------- */

/* [any] Watch a signal (evloop's handler is installed process-wide;
 * several watches, in one loop or several, may share a signal).  cb gets 0
 * per delivery and ends with ECANCELED.  Deliveries that arrive before
 * dispatch are merged, however many: none is lost while the loop thread is
 * busy or waits for the GVL.  The handler is in place when this call
 * returns 0 (unless the watch's last call is an error, or it was cancelled
 * or the loop stopped meanwhile): a signal delivered from then on gives a
 * call with status 0, also one that comes before the loop thread has got
 * to the watch (the call then waits for it), while one delivered before
 * meets the disposition it had (the default kills the process).  The
 * handler runs only on a thread that does not block the signal, and the
 * loop thread inherits the mask of the thread that starts it; evloop
 * changes no thread's mask.
 * The first watch of a signal saves the disposition it replaces and the
 * last one to end puts it back (a sigaction the host made in between is
 * undone).  A fork()ed child starts with those saved dispositions, and its
 * signals do not reach the parent's watches.  A signal watched here must
 * not also be watched with libuv's uv_signal_t (each would install its own
 * handler).  At most 1024 signal watches are open at once in a process;
 * one started beyond that ends with ENOSPC; one sigaction refuses (a
 * signal the C library keeps for itself, such as 32 and 33 under glibc)
 * ends with that errno (EINVAL).  EINVAL (not in 1.._NSIG-1, or
 * SIGKILL/SIGSTOP), EVL_ESTOPPED, ENOMEM. */
EVL_EXPORT int evl_signal_watch(evl_t *l, int signum, unsigned flags,
                                evl_cb cb, void *arg, evl_id_t *id_out);

/* ---- thread pool ------------------------------------------------------------- */

/* [any] Run fn(arg) on libuv's thread pool without the GVL; then done(l,
 * arg, status) on the loop thread (under the GVL unless EVL_F_NOGVL):
 * status 0 if fn ran, ECANCELED if it was cancelled or stopped before it
 * started (fn is then never called).  done may be NULL.  EINVAL, EVL_ESTOPPED,
 * ENOMEM.  A work function still running when the process exits holds the
 * exit up until it returns: libuv's library destructor joins its pool
 * threads (so a function that may block for good must not run here). */
EVL_EXPORT int evl_work(evl_t *l, evl_work_fn fn, unsigned flags, evl_cb done,
                        void *arg, evl_id_t *id_out);

/* ---- whole-file reads ------------------------------------------------------ */

#define EVL_READ_NOHINT 0x100u  /* do not call posix_fadvise(SEQUENTIAL)      */

/* [any] Read the whole file at path on the thread pool, then cb (under the
 * GVL unless EVL_F_NOGVL) with the contents.  flags: EVL_F_NOGVL,
 * EVL_READ_NOHINT.  limit: the largest size accepted (0: no limit); a larger
 * file gives EFBIG.  Errors of the read itself (ENOENT, EISDIR, ENOTDIR,
 * EACCES, EIO, ENOMEM, ...) come as the callback's status.  Synchronous
 * errors: EINVAL, EVL_ESTOPPED, ENOMEM.  evl_cancel of a read that has
 * started on the pool is EBUSY, as for evl_work (its cb still comes). */
EVL_EXPORT int evl_read_file(evl_t *l, const char *path, unsigned flags,
                             size_t limit, evl_read_cb cb, void *arg,
                             evl_id_t *id_out);

/* [GVL held by t, or t NULL] Read the whole file at path on the calling
 * thread.  With t, the GVL is released for the read (gvl_call_without; an
 * interrupt from gvl_thread_interrupt makes it stop between chunks with
 * EINTR) and held again on return.  The file is opened non-blocking (a FIFO
 * with no writer reads as empty instead of hanging) and read in blocking
 * mode.  The buffer is sized from fstat and grows for files that report
 * size 0 or grow (pipes, /proc); a file that shrinks just ends early.
 * Unless EVL_READ_NOHINT, posix_fadvise(POSIX_FADV_SEQUENTIAL) is called
 * first.  On 0, *data_out is a malloc'd buffer (free it) with *len_out bytes
 * and a NUL after them.  On error *data_out is NULL and *len_out 0.  Errors:
 * EINVAL, EPERM (t does not hold the GVL), EINTR, EFBIG (over limit),
 * ENOMEM, EISDIR, and open/read errors. */
EVL_EXPORT int evl_read_all(gvl_thread_t *t, const char *path, unsigned flags,
                            size_t limit, char **data_out, size_t *len_out);

/* ---- counters ------------------------------------------------------------------ */

typedef struct {
  uint64_t iterations;    /* uv_run passes: evl_step's, and the ones of the
                             shutdown that runs the last calls            */
  uint64_t dispatched;    /* host callback calls with status 0             */
  uint64_t cancelled;     /* last calls with ECANCELED                     */
  uint64_t errors;        /* last calls with another error status
                             (these three count calls made: evl_work's
                             completion with done NULL is none)           */
  uint64_t failures;      /* errors reported to on_error: evl_fail calls
                             and evloop's own (GVL misuse by a callback,
                             handles left open at stop)                    */
  uint64_t acquisitions;  /* GVL acquisitions by the dispatcher            */
  uint64_t budget_hits;   /* dispatch phases cut short by the budget       */
  uint64_t live;          /* registrations not yet freed: counted from the
                             call that makes one until the loop frees it,
                             shortly after its last call (once its libuv
                             handle is closed); 0 once an evl_stop that
                             waits (see evl_stop), evl_run or evl_detach
                             returns                                      */
} evl_stats_t;

/* [any] Read the counters (each is read atomically; the set is not a
 * snapshot).  EINVAL. */
EVL_EXPORT int evl_stats(evl_t *l, evl_stats_t *out);

/* [any] What a code returned by evloop means ("loop stopped: ..." for
 * EVL_ESTOPPED, "no such registration: ..." for EVL_ENOREG); strerror's
 * text for other errno values.  Reentrant (see gvl_strerror). */
EVL_EXPORT const char *evl_strerror(int err);
/* [any] The code's name ("EVL_ESTOPPED", "EBADF"; "UNKNOWN" if none). */
EVL_EXPORT const char *evl_err_name(int err);
/* [any] The library's version (EVL_VERSION_HEX / _STRING it was built with). */
EVL_EXPORT unsigned evl_version(void);
EVL_EXPORT const char *evl_version_string(void);

#ifdef __cplusplus
}
#endif
#endif /* EVLOOP_H */

/* SPDX-License-Identifier: MIT */
/*
 * gvl_trace.h -- timeline tracing of a GVL.
 *
 * libgvl records events into per-thread buffers and, when the trace stops,
 * writes them as they are to a raw file (by convention "*.gvlt").  The
 * gvl-trace program (tools/, installed beside the library) turns that file
 * into Trace Event Format JSON, to open in https://ui.perfetto.dev or
 * chrome://tracing, in a process of its own:
 *
 *     GVLOOP_TRACE=app.gvlt ./app        # or gvl_trace_start(g, "app.gvlt")
 *     gvl-trace app.gvlt                 # writes app.json
 *
 * (gvl-trace IN OUT names the JSON file; given a file not ending in .gvlt,
 * such as GVLOOP_TRACE=trace.json, it replaces that file with its JSON.)
 * So the work of turning records into states and JSON is never done by a
 * thread of the traced program, and never by one that holds the GVL.
 *
 * What the JSON shows, per OS thread, from the GVL's own events:
 *   "wait" / "wait boosted"   from the moment a thread queues for the GVL
 *                             until it gets it (args: prio, req_prio, cpu,
 *                             boost: granted / refused (a boost the
 *                             cap demoted) / interactive (promoted by the
 *                             GVL; a promotion the cap demoted is shown
 *                             as a plain wait, though gvl_stats counts it
 *                             among boosts_refused))
 *   "wake-up"                 the end of a wait that was a handoff: from the
 *                             releaser's SUSPENDED (read just before it
 *                             hands over in gvl_release, just after in a
 *                             yield or preemption) to this thread's
 *                             RESUMED: the handoff and the receiver's
 *                             wake-up, while nobody runs with the GVL
 *                             (args: from)
 *   "hold" / "hold boosted"   from each acquisition to the release (args:
 *                             prio, req_prio, from/handoff_to: the thread
 *                             the GVL came from / was handed to, reason:
 *                             release, yield, preempted, blocking, cond
 *                             wait, died); a thread that holds the GVL
 *                             when the trace starts and gives it up
 *                             during the trace is shown holding from the
 *                             start (args: held_before_trace); one that
 *                             holds it throughout is not shown (nothing
 *                             of its hold is recorded), and until its
 *                             hold ends requests made of it show on the
 *                             requester's track
 *   "blocking"                a gvl_call_without() region: released around
 *                             a blocking call until the thread asks again
 *   "cond wait"               a gvl_cond wait with the GVL released (a
 *                             blocked gvl_mutex_lock shows as a gap)
 *   "preempt request"         instant on the thread asked to give the GVL
 *                             up (args: by = the thread that asked)
 *   "handoff"                 a flow arrow from the releaser's hold to the
 *                             receiver's hold, for every direct handoff
 *                             (also to or from a thread that was queued
 *                             or holding when the trace started)
 * from/handoff_to, the wake-up and the arrow name the thread that handed
 * the GVL over, as it recorded it; where that is not known they are left
 * out rather than guessed: from when the giver recorded nothing (past
 * max_threads) or the handoff came before the trace started (or as it
 * started); handoff_to, the wake-up and the arrow also when the giver's
 * records between that hold and the handoff were dropped or overwritten.
 * and, from other layers (evloop, tkbridge, the host), spans, instants and
 * counters given to gvl_trace_begin()/_end()/_span()/_instant()/_counter().
 *
 * GVL states appear under the process "GVL <n>" (n tells GVLs apart), one
 * track per thread; the
 * other layers' spans under the process "layers", with the same thread ids,
 * so both line up on one time axis.  Timestamps are CLOCK_MONOTONIC,
 * relative to the start of the trace (otherData.t0_ns holds the origin);
 * an event that happened before the start is not recorded (a thread that
 * holds the GVL at the start is drawn holding from it, as above).  Threads
 * are named by gvl_thread_set_name() (gvl.h) or gvl_trace_set_thread_name(),
 * else by their OS name as it was at their first event of the run (with the
 * thread id if it is only the program's name, except for the main thread).
 *
 * Cost.  Off (the default) the lock pays one plain load and a branch per
 * event it already reports to the hook and per handoff (on, a handoff
 * tells the receiver who gave it the GVL), and gvl_check_ints() nothing at
 * all; the gvl_trace_begin/_end/_instant/_counter calls cost a call and a
 * load.  On, each event costs a clock read and a few stores into the
 * calling thread's own buffer (no lock shared between threads).
 *
 * Memory is bounded: each thread that records gets one buffer of
 * events_per_thread entries (40 bytes each), allocated on its first event;
 * at most max_threads buffers, freed when the file is written.  A small
 * header per buffer is kept for the next run (until gvl_destroy), which
 * gives it to any thread, so that threads that come and go over many runs
 * use no more headers than the largest max_threads.  When a buffer is full, that thread's newer
 * events are dropped (the default), or its oldest are overwritten
 * (GVL_TRACE_RING: a flight recorder of the last moments), or the trace
 * stops and is written at once by the thread that filled its buffer
 * (GVL_TRACE_STOP_FULL: every thread's events up to the same moment).
 * Dropped and overwritten events are counted as lost; so are events of
 * threads past max_threads.  An event whose call meets the stop is neither
 * kept nor lost; a thread whose only event did so does not count among the
 * threads that recorded (though the buffer its event set up counted
 * against max_threads for that run).  Otherwise the file is written by
 * gvl_trace_stop(), by gvl_destroy(), or at process exit (exit() or a
 * return from main) for a trace still running then; exit() also waits for
 * a write in progress on another thread, so the file is whole.  Writing is
 * a copy of the kept records (40 bytes each) and of the other layers'
 * strings, with write(2).
 *
 * Starting from the environment: if GVLOOP_TRACE=path.gvlt is set when
 * gvl_create() runs, the new GVL is traced with default settings into that
 * file.  "%p" in the path is replaced by the process id and "%g" by a
 * number that tells the GVLs of a process apart; without "%g", the second
 * and later GVLs of the process write to "path.<n>.gvlt" (or
 * "path.<n>.json" for a path ending in .json) so that no file is
 * overwritten.  Without "%p", the GVLs of a forked child (one that has not
 * exec'd), whose numbers go on from those its parent had reached as the
 * parent's own do, also get the child's process id: "path.<pid>.gvlt",
 * "path.<n>.<pid>.gvlt".  A path another trace is writing (the same GVLOOP_TRACE in an exec'd or forked child) gets the
 * process id inserted the same way, "path.<pid>.gvlt", said on stderr.
 * GVLOOP_TRACE_EVENTS=N sets events_per_thread (at most 2^24: more is
 * 2^24); GVLOOP_TRACE_MODE=ring or =stop selects GVL_TRACE_RING or
 * GVL_TRACE_STOP_FULL.  A value that is not a number, or another mode,
 * prints one line on stderr and is ignored.  A trace started
 * this way that cannot open its file (or whose path, expanded, is over
 * 4070 bytes) prints one line on stderr and is not started; one whose file
 * cannot be written prints one line on stderr when it is written.
 *
 * Thread rules (as in gvl.h):
 *   [any]  any thread, attached to the GVL or not, holding it or not.
 * Every call here is [any].  The GVL must stay alive across each call (do
 * not race a call with gvl_destroy() of the same GVL).  No call takes the
 * GVL or waits for it.  gvl_trace_stop() waits for threads that are in the
 * middle of recording one event; it, gvl_trace_start() and gvl_destroy()
 * also wait while another thread writes the same GVL's file (a stop, or a
 * GVL_TRACE_STOP_FULL trace stopping itself), so that when any of them
 * returns the last run's file is whole.  The counters of a stopped trace do
 * not change after its stop, and match its file.  After fork() the child's
 * traces are stopped without being written (the parent writes them, also
 * one it was writing at the fork: the child adds nothing to that file); the
 * child may start traces of its own.
 *
 * Return values: 0 or a positive errno code:
 *   EINVAL   NULL or out-of-range argument
 *   EALREADY gvl_trace_start() while a trace of that GVL is running
 *   EBUSY    gvl_trace_start() on a file another trace (of any GVL, in this
 *            or another process) is writing: it is left as it is (an
 *            advisory lock on the file, held until it is written, tells)
 *   ESRCH    gvl_trace_stop() with no trace running
 *   ENOMEM   allocation failure
 *   EIO      (or the errno of the failed call) writing the file failed;
 *            EPIPE for a pipe or FIFO whose reader has gone (SIGPIPE is
 *            blocked in the writing thread meanwhile, and one the write
 *            raised is taken back)
 *   any errno of open() for a path that cannot be opened
 */
#ifndef GVL_TRACE_H
#define GVL_TRACE_H

#include "gvl.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags for gvl_trace_config_t.flags */
#define GVL_TRACE_RING 0x1u  /* a full buffer overwrites its oldest events
                                (keeps the last moments before the stop)
                                instead of dropping the newest            */
#define GVL_TRACE_STOP_FULL 0x2u /* the first full buffer stops the trace
                                and writes the raw file, on the thread
                                that filled it (which pays for the copy);
                                not with GVL_TRACE_RING                   */

typedef struct {
  uint32_t events_per_thread; /* buffer size; 0 = default (32768); at
                                 most 2^24 (16777216), more is EINVAL     */
  uint32_t max_threads;       /* buffers; 0 = default (128); at most
                                 4096, more is EINVAL                     */
  unsigned flags;             /* GVL_TRACE_*                              */
} gvl_trace_config_t;

/* Counters of the running trace, or of the last one after it stopped. */
typedef struct {
  uint64_t recorded;          /* events kept in the buffers               */
  uint64_t lost;              /* events dropped or overwritten            */
  uint32_t threads;           /* threads that recorded at least one event */
} gvl_trace_stats_t;

/* [any] Start tracing g into the raw file at path (created or truncated
 * now, so that a bad path fails here; written at the stop; gvl-trace turns
 * it into JSON; not inherited across exec).  cfg may be NULL for defaults.
 * EALREADY if g is already traced; EBUSY, and the file untouched, if
 * another trace is writing it.  If another thread is still writing g's
 * last file, waits for that first. */
GVL_EXPORT int gvl_trace_start(gvl_t *g, const char *path,
                               const gvl_trace_config_t *cfg);

/* [any] Stop tracing g and write the raw file.  Events that threads record
 * while this runs are dropped (not counted).  ESRCH if g is not traced
 * (also when a GVL_TRACE_STOP_FULL trace has already stopped itself, or
 * another thread's stop came first: this one returns when that stop has
 * written the file); ENOMEM if the other layers' strings could not all be
 * listed (the file is written, with those names left empty).  A
 * GVL_TRACE_STOP_FULL trace stops only itself, never a later run. */
GVL_EXPORT int gvl_trace_stop(gvl_t *g);

/* [any] 1 if g is being traced, 0 if not or g is NULL. */
GVL_EXPORT int gvl_trace_active(gvl_t *g);

/* [any] Counters of the running or the last trace of g (zeros if none). */
GVL_EXPORT int gvl_trace_stats(gvl_t *g, gvl_trace_stats_t *out);

/* [any; names the calling thread] Name the calling thread's tracks in
 * every trace, running or started later (the name is copied; at most 31
 * bytes are kept), as gvl_thread_set_name() does for an attached thread;
 * this one also serves threads that are not attached.  Without a name a
 * thread shows under its OS name; "" gives it that name back. */
GVL_EXPORT int gvl_trace_set_thread_name(const char *name);

/* ---- events from other layers ---------------------------------------------
 * cat (a category, e.g. "evloop", "tk") and name are kept by pointer until
 * the trace is written: pass string literals or strings that outlive
 * gvl_trace_stop().  Each call records on the calling thread's track and
 * returns 0 at once when g is not traced.  Spans must nest per thread:
 * gvl_trace_end() closes the innermost open span of the calling thread (an
 * end with no span open is dropped); spans still open when the trace is
 * written are closed at the stop. */

/* [any] Open a span on the calling thread. */
GVL_EXPORT int gvl_trace_begin(gvl_t *g, const char *cat, const char *name);
/* [any] Close the calling thread's innermost span.  name may be NULL. */
GVL_EXPORT int gvl_trace_end(gvl_t *g, const char *cat, const char *name);
/* [any] A complete span with times taken earlier by gvl_now_ns(), for
 * work whose start is known only afterwards (an event's arrival time as
 * libuv saw it) or measured by someone else.  It must nest with the
 * thread's other spans.  EINVAL for a NULL cat or name, start_ns 0 (no
 * time gvl_now_ns() gives) or end_ns < start_ns. */
GVL_EXPORT int gvl_trace_span(gvl_t *g, const char *cat, const char *name,
                              uint64_t start_ns, uint64_t end_ns);
/* [any] A point event; arg is shown as args.arg (e.g. an event id). */
GVL_EXPORT int gvl_trace_instant(gvl_t *g, const char *cat, const char *name,
                                 uint64_t arg);
/* [any] A counter track named name (e.g. a queue length). */
GVL_EXPORT int gvl_trace_counter(gvl_t *g, const char *name, int64_t value);

#ifdef __cplusplus
}
#endif
#endif /* GVL_TRACE_H */

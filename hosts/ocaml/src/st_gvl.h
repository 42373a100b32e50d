/* SPDX-License-Identifier: MIT */
/*
 * st_gvl.h -- OCaml 4.13 systhreads' "st" interface with libgvl as the
 * master lock.
 *
 * OCaml's st_stubs.c (extracted from the installed ocaml-source into the
 * build tree, never copied into this repository) includes "st_posix.h";
 * gvloop's st_posix.h includes this file.  It takes every part of the stock
 * st_posix.h that is not the master lock as it is (threads, TLS, mutexes,
 * condition variables, events, signal masks: OCaml's header, included under
 * renamed names as st_posix_stock.h), and replaces the lock:
 *
 *  - The master lock is the GVL, taken and given up on the calling
 *    thread's gvl_thread_t, attached on first use, detached when the OCaml
 *    thread ends: st_masterlock_acquire is gvl_acquire (gvl_acquire_prio
 *    when a boost was asked for, gvl_region_end after a blocking section),
 *    st_masterlock_release a blocking section's gvl_region_begin (a plain
 *    gvl_release only for the thread's last), and st_thread_yield a safe
 *    point (gvl_check_ints) and gvl_yield (from the preemption signal's
 *    handler only for a request of its own or after a slice), with a
 *    release and reacquire once a hold has lasted a slice (see
 *    st_thread_yield).  So the
 *    master lock is fair (no barging back in after a release), and
 *    Thread.yield with a waiter is always a real handoff.
 *  - No tick thread.  st_stubs.c still asks for one (st_thread_create with
 *    caml_thread_tick); that request creates nothing.  Preemption comes from
 *    the GVL: when its slice timer or a boosted acquire asks the holder to
 *    give way (GVL_EV_PREEMPT_REQ), the hook records OCaml's preemption
 *    signal, exactly what the tick thread did every 50 ms, so the holder
 *    runs Thread.yield at its next poll point.
 *  - Blocking sections (caml_enter/leave_blocking_section) are GVL
 *    regions, gvl_region_begin/gvl_region_end (gvl_call_without in two
 *    halves): a thread whose stretch under the lock before the section was
 *    short reacquires one level above normal, preempting a CPU-bound holder
 *    at its next poll point (the GVL's interactivity policy, a boost charged
 *    to its cap), and a section that ends before the thread it released
 *    the lock to has started to run takes the lock straight back.
 *  - gvloop_caml_boost_next(prio): the next acquire of the calling thread
 *    asks for prio (the labltk glue uses it so Tk callbacks enter OCaml
 *    boosted).
 *  - fork: libgvl's atfork keeps the forking thread's attachment and hold in
 *    the child; st_stubs.c's child handler calls st_masterlock_init again,
 *    which then finds the lock already held.
 *
 * Only the public API of gvl.h is used.
 */
#ifndef ST_GVL_H
#define ST_GVL_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>

#include <gvl.h>

/* The stock definitions that are replaced below get other names. */
#define st_masterlock        st_stock_masterlock
#define st_masterlock_init   st_stock_masterlock_init
#define st_masterlock_acquire st_stock_masterlock_acquire
#define st_masterlock_release st_stock_masterlock_release
#define st_masterlock_waiters st_stock_masterlock_waiters
#define st_thread_yield      st_stock_thread_yield
#define st_thread_create     st_stock_thread_create
#define st_thread_join       st_stock_thread_join
#define st_thread_cleanup    st_stock_thread_cleanup
#include "st_posix_stock.h"
#undef st_masterlock
#undef st_masterlock_init
#undef st_masterlock_acquire
#undef st_masterlock_release
#undef st_masterlock_waiters
#undef st_thread_yield
#undef st_thread_create
#undef st_thread_join
#undef st_thread_cleanup

/* st_stubs.c's key for the calling thread's OCaml descriptor (defined
 * there, after this file): NULL at a release made by
 * caml_c_thread_unregister. */
static st_tlskey thread_descriptor_key;

#if defined(__GNUC__)
#define ST_GVL_EXPORT __attribute__((visibility("default")))
#define ST_GVL_UNUSED __attribute__((unused))
#else
#define ST_GVL_EXPORT
#define ST_GVL_UNUSED
#endif

/* The master lock: one GVL per process, created by the first init. */
typedef struct {
  gvl_t *g;
  uint64_t slice_ns;            /* the GVL's slice, for the interactivity rule */
} st_masterlock;

static gvl_t *st_gvl_global;    /* written once, by the first init */
/* OCaml threads holding or asking for the lock (not in a blocking
 * section): the minor-GC re-arm and st_thread_yield look at it. */
static atomic_int st_gvl_active;

/* Per OS thread (each field is touched only by its own thread, except as
 * noted). */
static _Thread_local gvl_thread_t *st_gvl_self;   /* this thread's handle */
static _Thread_local uint64_t st_gvl_hold_t0;     /* when it last got the lock */
static _Thread_local int st_gvl_in_region;        /* released by a blocking
                                                     section (a GVL region) */
static _Thread_local int st_gvl_next_prio;        /* see gvloop_caml_boost_next */
static _Thread_local int st_gvl_detach;           /* detach after the release */
static _Thread_local int st_gvl_gave_way;         /* set by the READY hook */

static int st_gvl_sigmask(int how, const sigset_t *set, sigset_t *old);
static void st_gvl_fatal(const char *what, int err) ST_GVL_UNUSED;
static void st_gvl_fatal(const char *what, int err) {
  fprintf(stderr, "gvloop threads: %s: %s\n", what, gvl_strerror(err));
  abort();
}

/* The GVL's hook.  A preempt request on the holder becomes OCaml's
 * preemption signal (the tick thread's caml_record_signal, called from the
 * thread that asked: the slice timer or a boosted acquirer).  A holder that
 * queues behind the thread it handed over to notes it, so that
 * st_thread_yield does not hand over twice.  (SUSPENDED is no such sign: a
 * yield fires it, then may keep the lock after all.) */
static void st_gvl_hook(void *arg, gvl_thread_t *t, gvl_event_t ev,
                        uint64_t now_ns) {
  (void)arg; (void)now_ns;
  if (ev == GVL_EV_PREEMPT_REQ) caml_record_signal(SIGPREEMPTION);
  else if (ev == GVL_EV_READY && t == st_gvl_self) st_gvl_gave_way = 1;
}

/* A setting from the environment: a decimal number from 1 to max, or 0
 * (the default) when unset.  Anything else (a sign, other characters, out
 * of range) is reported on stderr once and the default used: a bad setting
 * must not stop every threaded program at its start. */
static uint64_t st_gvl_env_num(const char *name, uint64_t max) {
  const char *s = getenv(name);
  char *end;
  unsigned long long v;
  if (s == NULL || *s == '\0') return 0;
  errno = 0;
  v = (*s >= '0' && *s <= '9') ? strtoull(s, &end, 10) : 0;
  if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || v < 1 || v > max) {
    fprintf(stderr, "gvloop threads: %s=%s is not a number from 1 to %llu; "
                    "the default is used\n", name, s, (unsigned long long)max);
    return 0;
  }
  return v;
}

static gvl_thread_t *st_gvl_thread(void) {
  if (st_gvl_self == NULL) {
    st_gvl_self = gvl_thread_attach(st_gvl_global, GVL_PRIO_NORMAL);
    if (st_gvl_self == NULL) st_gvl_fatal("attach", errno);
  }
  return st_gvl_self;
}

/* GVLOOP_OCAML_STATS=1: the GVL's counters on stderr at exit. */
static void st_gvl_print_stats(void) {
  gvl_stats_t s;
  if (st_gvl_global == NULL || gvl_stats(st_gvl_global, &s) != 0) return;
  fprintf(stderr,
          "gvloop threads: acquires %llu contended %llu handoffs %llu yields %llu "
          "preempt_reqs %llu preemptions %llu boosts %llu refused %llu "
          "interactive %llu retakes %llu wait_ms %.1f\n",
          (unsigned long long)s.acquires, (unsigned long long)s.contended,
          (unsigned long long)s.handoffs, (unsigned long long)s.yields,
          (unsigned long long)s.preempt_reqs, (unsigned long long)s.preemptions,
          (unsigned long long)s.boosts, (unsigned long long)s.boosts_refused,
          (unsigned long long)s.interactive, (unsigned long long)s.retakes,
          (double)s.wait_ns / 1e6);
}

/* A preempt request reaches OCaml as one recorded signal.  If it is spent
 * without a handoff (the waiter it was for could not be served yet, e.g. a
 * boost deferred by the cap), the GVL does not ask again during the same
 * hold.  So at the end of every minor collection (a poll point that an
 * allocating thread reaches every few milliseconds; no thread ticks), a
 * holder that has run a whole slice while other OCaml threads want the
 * lock records the signal again, at most once a slice. */
static caml_timing_hook st_gvl_prev_gc_hook;
static uint64_t st_gvl_slice_ns;               /* the GVL's slice */
static _Thread_local uint64_t st_gvl_retry_at;

static void st_gvl_gc_hook(void) {
  if (st_gvl_prev_gc_hook) st_gvl_prev_gc_hook();
  if (st_gvl_self == NULL || atomic_load(&st_gvl_active) < 2) return;
  uint64_t now = gvl_now_ns(), slice = st_gvl_slice_ns;
  if (now - st_gvl_hold_t0 >= slice && now >= st_gvl_retry_at) {
    st_gvl_retry_at = now + slice;
    caml_record_signal(SIGPREEMPTION);
  }
}

/* Called by caml_thread_initialize (the lock starts held by the caller) and
 * by the fork child handler (the lock is already held: libgvl's atfork). */
static void st_masterlock_init(st_masterlock *m) {
  if (st_gvl_global == NULL) {
    gvl_config_t cfg = {0};
    cfg.slice_ns = st_gvl_env_num("GVLOOP_OCAML_SLICE_US", GVL_MAX_NS / 1000u) * 1000u;
    cfg.boost_cap_pct = (unsigned)st_gvl_env_num("GVLOOP_OCAML_BOOST_CAP", 100);
    /* Aging lifts a waiter one level per age_ns (100 ms by default).  A
     * compute thread that waits a slice must not reach the level of a
     * thread back from a blocking call, or a slice of 100 ms and more
     * would hand the GVL to it first, and the interactive thread would
     * wait whole slices: ten slices, at least the default. */
    uint64_t slice = cfg.slice_ns ? cfg.slice_ns : 10000000u;
    cfg.age_ns = slice > GVL_MAX_NS / 10u ? GVL_MAX_NS : 10u * slice;
    if (cfg.age_ns < 100000000u) cfg.age_ns = 100000000u;
    cfg.hook = st_gvl_hook;
    st_gvl_global = gvl_create(&cfg);
    if (st_gvl_global == NULL) st_gvl_fatal("gvl_create", errno);
    m->slice_ns = cfg.slice_ns ? cfg.slice_ns : 10000000u;
    st_gvl_slice_ns = m->slice_ns;
    st_gvl_prev_gc_hook = caml_minor_gc_end_hook;
    caml_minor_gc_end_hook = st_gvl_gc_hook;
    caml_sigmask_hook = st_gvl_sigmask;   /* after st_initialize's */
    const char *st = getenv("GVLOOP_OCAML_STATS");
    if (st && strcmp(st, "1") == 0)
      atexit(st_gvl_print_stats);
    else if (st && *st && strcmp(st, "0") != 0)
      fprintf(stderr, "gvloop threads: GVLOOP_OCAML_STATS=%s is not 0 or 1; "
                      "no counters are printed\n", st);
  }
  m->g = st_gvl_global;
  gvl_thread_t *t = st_gvl_thread();
  if (!gvl_thread_holds(t)) {
    int rc = st_gvl_in_region ? gvl_region_end(t, GVL_PRIO_MIN) : gvl_acquire(t);
    if (rc) st_gvl_fatal("acquire", rc);
  }
  st_gvl_in_region = 0;
  st_gvl_hold_t0 = gvl_now_ns();
  atomic_store(&st_gvl_active, 1);  /* this thread (in a fork child: alone) */
}

/* The end of a blocking section (or a thread's first acquire): the end of
 * its GVL region if the release began one, else a plain acquire. */
static void st_masterlock_acquire(st_masterlock *m) {
  gvl_thread_t *t = st_gvl_thread();
  int prio = st_gvl_next_prio, rc;
  st_gvl_next_prio = 0;
  atomic_fetch_add(&st_gvl_active, 1);
  if (st_gvl_in_region) {
    st_gvl_in_region = 0;
    rc = gvl_region_end(t, prio > 0 ? prio : GVL_PRIO_MIN);
  } else {
    rc = prio > 0 ? gvl_acquire_prio(t, prio) : gvl_acquire(t);
  }
  if (rc) st_gvl_fatal("acquire", rc);
  (void)m;
  st_gvl_hold_t0 = gvl_now_ns();
}

/* A blocking section begins a GVL region; the thread's last release (it
 * has ended, or caml_c_thread_unregister has just forgotten its
 * descriptor) is a plain release before the detach, so a C thread that
 * lives on after unregistering holds no attachment (a later register
 * attaches it again).  No interrupt is ever posted to these threads, so
 * the region's EINTR cannot happen; a retry would be correct if it did
 * (the interrupt is cleared by the report). */
static void st_masterlock_release(st_masterlock *m) {
  gvl_thread_t *t = st_gvl_self;
  int rc;
  (void)m;
  atomic_fetch_sub(&st_gvl_active, 1);
  if (st_gvl_detach || st_tls_get(thread_descriptor_key) == NULL) {
    rc = gvl_release(t);
    if (rc) st_gvl_fatal("release", rc);
    st_gvl_detach = 0;
    st_gvl_self = NULL;
    (void)gvl_thread_detach(t);
    return;
  }
  while ((rc = gvl_region_begin(t, NULL, NULL)) == EINTR) {
  }
  if (rc) st_gvl_fatal("release", rc);
  st_gvl_in_region = 1;
}

/* Thread.yield asks only when someone may wait; gvl_yield itself returns at
 * once (a load and a branch) when nobody does, so "maybe" is always. */
Caml_inline int st_masterlock_waiters(st_masterlock *m) {
  (void)m;
  return 1;
}

/* caml_sigmask_hook (pthread_sigmask, as the stock library sets it), which
 * OCaml's runtime calls only around a signal handler it runs and to read
 * the mask.  It tells when this thread runs the preemption signal's
 * handler (the runtime masks the signal for it; an explicit Thread.yield
 * or a mask of the program's, Thread.sigmask, does not come here), and it
 * records that signal again as the handler unmasks it if one was recorded
 * meanwhile: OCaml 4.13 skips a masked signal as it looks for pending
 * ones, and forgets that one is pending, so a preempt request recorded
 * then would wait for the GVL to ask again, a slice later. */
static _Thread_local int st_gvl_in_handler;

static int st_gvl_sigmask(int how, const sigset_t *set, sigset_t *old) {
  sigset_t prev;
  int rc = pthread_sigmask(how, set, &prev);
  if (rc) return rc;
  if (old) *old = prev;
  if (set == NULL) return 0;
  if (how == SIG_BLOCK && sigismember(set, SIGPREEMPTION) == 1 &&
      sigismember(&prev, SIGPREEMPTION) == 0) {
    st_gvl_in_handler = 1;
  } else if (how == SIG_SETMASK && st_gvl_in_handler &&
             sigismember(set, SIGPREEMPTION) == 0) {
    st_gvl_in_handler = 0;
    if (caml_pending_signals[SIGPREEMPTION]) caml_record_signal(SIGPREEMPTION);
  }
  return 0;
}

/* Thread.yield and the preemption signal's handler.  A pending preempt
 * request is served first by the safe point (it hands the lock to the
 * waiter that asked); otherwise a plain yield, a handoff to the best
 * waiter the policy serves (from the handler, only as said below).
 *
 * Neither serves a waiter whose boost the cap holds back (an interactive
 * reacquire is such a boost): an unboosted holder keeps the lock, and the
 * GVL does not always ask again later.  A thread that yields in a loop
 * without allocating (eintr's signal thread), or that the minor-GC re-arm
 * sends here, then keeps the lock for good, and the held-back thread never
 * runs.  So once the hold has lasted a slice while another OCaml thread
 * wants the lock, the yield releases and reacquires: a release serves a
 * held-back waiter too.  The hold's start moves only when the lock was
 * really given up. */
Caml_inline void st_thread_yield(st_masterlock *m) {
  gvl_thread_t *t = st_gvl_self;
  st_gvl_gave_way = 0;
  (void)gvl_check_ints(t);
  /* OCaml's preemption signal is the process's, not a thread's: one
   * recorded for the holder before it handed the lock on (a slice's end, a
   * boosted waiter's request) is handled by whichever thread holds the lock
   * next, often an I/O thread just back from a blocking call.  A yield
   * there would hand the lock to a CPU-bound waiter, and the I/O thread
   * would wait out that thread's slice.  So the handler yields only when a
   * request for this thread was pending (served above) or its hold has
   * lasted a slice (the minor-GC re-arm); an
   * explicit Thread.yield always does. */
  if (!st_gvl_gave_way &&
      (!st_gvl_in_handler || gvl_now_ns() - st_gvl_hold_t0 >= m->slice_ns))
    (void)gvl_yield(t);
  uint64_t now = gvl_now_ns();
  if (!st_gvl_gave_way && atomic_load(&st_gvl_active) > 1 &&
      now - st_gvl_hold_t0 >= m->slice_ns) {
    int rc = gvl_release(t);
    if (rc) st_gvl_fatal("release", rc);
    rc = gvl_acquire(t);
    if (rc) st_gvl_fatal("acquire", rc);
    st_gvl_gave_way = 1;
    now = gvl_now_ns();
  }
  if (st_gvl_gave_way) st_gvl_hold_t0 = now;
  /* A preempt request made while this thread was away or on its way back
   * (a boosted waiter that asked as the lock was handed to it) reached
   * OCaml as a signal recorded while this handler masks it: serve it here
   * rather than at the poll after the handler (st_gvl_sigmask records it
   * again).  As often as the lock comes back with one pending (on one CPU,
   * two I/O threads take turns asking): each pass is a handoff to a waiter
   * that asked, as a poll point outside the handler would make. */
  for (;;) {
    st_gvl_gave_way = 0;
    (void)gvl_check_ints(t);
    if (!st_gvl_gave_way) break;
    st_gvl_hold_t0 = gvl_now_ns();
  }
}

/* caml_thread_stop calls this just before its last release. */
Caml_inline void st_thread_cleanup(void) {
  st_gvl_detach = 1;
}

/* No tick thread: the request for one creates nothing, and the id it gets
 * is one no real thread has, so that st_thread_join skips it. */
#define ST_GVL_NO_THREAD ((st_thread_id)0)

static int st_thread_create(st_thread_id *res, void *(*fn)(void *), void *arg) {
  if (fn == caml_thread_tick) {
    if (res != NULL) *res = ST_GVL_NO_THREAD;
    return 0;
  }
  return st_stock_thread_create(res, fn, arg);
}

static void st_thread_join(st_thread_id thr) {
  if (thr != ST_GVL_NO_THREAD) st_stock_thread_join(thr);
}

/* [OCaml thread] The next acquire of the calling thread (the end of its
 * current blocking section) asks for prio instead of its normal priority.
 * For glue that knows the thread is about to run urgent OCaml code. */
ST_GVL_EXPORT void gvloop_caml_boost_next(int prio);
void gvloop_caml_boost_next(int prio) { st_gvl_next_prio = prio; }

/* [any] The GVL that is OCaml's master lock (NULL before Thread starts). */
ST_GVL_EXPORT gvl_t *gvloop_caml_gvl(void);
gvl_t *gvloop_caml_gvl(void) { return st_gvl_global; }

#endif /* ST_GVL_H */

/* SPDX-License-Identifier: MIT */
/*
 * gvl.h -- a fair global VM lock with time slices and priority acquire.
 *
 * One lock (gvl_t) serialises the interpreter threads of a host runtime.
 * Each OS thread that runs host code attaches once (gvl_thread_attach) and
 * then acquires and releases the lock through its gvl_thread_t handle.
 *
 * Guarantees, all documented in ARCHITECTURE.md:
 *  - Uncontended acquire/release is one compare-and-swap each on a lock word
 *    (the release of a boosted hold, an interactive promotion included,
 *    takes the GVL's internal mutex instead; a hold watched by a hook or a
 *    trace, or timed, pays the hook's call or a clock read before its CAS).
 *  - Fair: when the holder releases or yields while someone waits, ownership
 *    is handed straight to the best waiter (highest effective priority, then
 *    first come).  The releaser cannot barge back in; the two exceptions,
 *    a short gvl_call_without, and the next acquire after a boosted hold
 *    at a priority above every waiter's, taking the GVL back before its
 *    waiter has run, keep that waiter first (see gvl_call_without and
 *    gvl_release).
 *  - Preemption: a holder past its time slice while others wait gets a flag
 *    that gvl_check_ints() sees at its next safe point.  No thread ticks when
 *    nobody waits.
 *  - Priority boost: a waiter whose priority is above the holder's sets the
 *    holder's flag at once.  Boosted holds are capped to a share of GVL time
 *    over a sliding window (the starvation guard; see gvl_acquire_prio for
 *    the exact bound); past the cap boosted waiters are served last.
 *  - No spinning on one CPU: a waiter spins (bounded by spin_ns and by the
 *    time slice, yielding the CPU after 2 us, except a waiter above normal
 *    priority whose holder last ran on another CPU, where Linux's rseq
 *    area tells: there a yield could only hand its own CPU to another
 *    process for a whole kernel time slice) only with two or more CPUs
 *    online and in the affinity mask of the thread that created the GVL (as
 *    it was then: a process pinned to one CPU, or a 1-CPU container, never
 *    spins), and never with GVL_F_NOSPIN.  Waits for a gvl_mutex or
 *    gvl_cond never spin (nor does a gvl_cond_timedwait's reacquire of the
 *    GVL after its timeout).  (The GVL's internal lock, held for a few
 *    dozen instructions at a time, is on Linux looked at up to 100 times,
 *    with a pause instruction between, before its waiter sleeps, on any
 *    number of CPUs: on one that costs a few microseconds where its holder
 *    was preempted inside it; elsewhere it is a pthread mutex.)
 *    A CPU quota (a container's cgroup cpu.max or cpu.cfs_quota_us) is not
 *    looked at: even at one CPU's time or less,
 *    two CPUs run the holder and a spinning waiter at once, and the
 *    spin's bounded cost to the quota is less than a sleeping waiter's
 *    wake-up costs the threads that wait for the GVL (measured in
 *    BENCHMARKS.md, "The spin under a CPU quota").
 *  - fork(): in the child only the forking thread exists.  Each GVL keeps
 *    that thread's attachments, is held by it if it held it, and has no
 *    waiters (a fork made from a hook while that thread waited for it
 *    hands it the GVL: its acquire returns holding); the other threads'
 *    handles are gone, and they leave the queues of any gvl_mutex or
 *    gvl_cond they waited on.  A gvl_mutex one
 *    of them owned still names its freed handle: as a pthread mutex held
 *    by another thread, it must not be used in the child.  libgvl's
 *    locks are taken across the fork (pthread_atfork), as the C
 *    library's malloc does with its own: a fork() from a signal handler
 *    that interrupted a libgvl call on the same thread waits for ever
 *    (such a handler may use _Fork or vfork and exec instead).
 *
 * Return values: every int-returning call returns 0 or a positive errno code.
 *   EINVAL   NULL or out-of-range argument
 *   EPERM    caller does not hold the GVL / handle used from another thread /
 *            acquire inside one of the thread's blocking regions
 *   EDEADLK  acquire while already holding; gvl_mutex_lock/trylock of a
 *            mutex the caller owns
 *   EBUSY    detach while holding, inside a call on the handle or owning a
 *            gvl_mutex; destroy with threads attached or a gvl_call_with
 *            under way; gvl_mutex_trylock of a mutex another thread owns;
 *            destroying a gvl_mutex or gvl_cond in use
 *   ERANGE   gvl_thread_set_name: name too long
 *   EEXIST   thread already attached to this GVL (gvl_thread_attach: errno)
 *   ENOMEM   allocation failure
 *   EINTR    an interrupt was delivered by gvl_thread_interrupt()
 *   ETIMEDOUT gvl_cond_timedwait: the timeout passed
 * gvl_strerror() says what each means here; gvl_err_name() gives the name.
 * errno: no call in this header changes it, except one that returns NULL
 * and says it sets errno; gvl_call_without and gvl_call_with leave it as fn
 * left it (fn sees the caller's).  A host can read errno after a blocking
 * call and the gvl_region_end that follows it, as POSIX code does after a
 * system call.
 * gvloop's own codes (evloop.h, tkbridge.h) are 10000 and above, out of
 * errno's range (below 4096 on Linux).
 *
 * Thread rules are given beside each call:
 *   [any]      any thread, attached or not
 *   [self]     only the OS thread that owns the gvl_thread_t
 *   [held]     [self], and the caller must hold the GVL
 *   [not held] [self], and the caller must not hold the GVL
 * No call is async-signal-safe (they take internal locks the interrupted
 * code may hold): a signal handler sets a flag or writes to a pipe, and a
 * thread acts on it (evloop.h's evl_signal_watch does this for a loop).
 */
#ifndef GVL_H
#define GVL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The API is visible from the static library too, so that a program
 * linking it can export it to the extensions it loads (-rdynamic). */
#if defined(__GNUC__)
#define GVL_EXPORT __attribute__((visibility("default")))
#else
#define GVL_EXPORT
#endif

/* Version of this header (the project's; semantic versioning).
 * gvl_version() and gvl_version_string() give the library's. */
#define GVL_VERSION_MAJOR 0
#define GVL_VERSION_MINOR 2
#define GVL_VERSION_PATCH 0
#define GVL_VERSION_STRING "0.2.0"
#define GVL_VERSION_HEX \
  ((GVL_VERSION_MAJOR << 16) | (GVL_VERSION_MINOR << 8) | GVL_VERSION_PATCH)

typedef struct gvl_s gvl_t;
typedef struct gvl_thread_s gvl_thread_t;

/* Priorities: higher is more urgent.  0 is normal.  Any value in
 * [GVL_PRIO_MIN, GVL_PRIO_MAX] is accepted; above 0 counts as boosted. */
#define GVL_PRIO_MIN    (-1000)
#define GVL_PRIO_NORMAL 0
#define GVL_PRIO_BOOST  10
#define GVL_PRIO_MAX    1000

/* ---- configuration ------------------------------------------------------ */

/* Every duration setting must be at most this (a day); larger: EINVAL. */
#define GVL_MAX_NS (86400ull * 1000000000ull)

/* Events passed to the instrumentation hook. */
typedef enum {
  GVL_EV_READY = 1,       /* thread starts waiting for the GVL; a thread
                             blocked in a gvl_mutex or gvl_cond wait is
                             queued for it by another thread, and gets
                             its READY once it runs again, just before
                             RESUMED, with now_ns the time it was queued */
  GVL_EV_RESUMED,         /* thread got the GVL: after READY when it had to
                             wait, alone when the GVL was free            */
  GVL_EV_SUSPENDED,       /* thread is giving the GVL up (release, yield,
                             blocking region); fired just before          */
  GVL_EV_PREEMPT_REQ,     /* a preempt request was set on this thread;
                             fired again each time the timer waiter
                             finds it unanswered past the slice (about
                             once per max(slice, 1 ms); a wake of the
                             timer, such as gvl_set_slice's, adds a
                             look), so a host that turns it into a
                             signal of its own cannot lose it; a repeat
                             is not a new request and preempt_reqs does
                             not count it                                */
  GVL_EV_OWNER_DIED       /* this thread exited holding; GVL recovered    */
} gvl_event_t;

/* Called outside every internal lock, on the thread the event concerns
 * except for GVL_EV_PREEMPT_REQ (called on the requesting thread, with t
 * an identity only: by then t may have answered, released the GVL or
 * detached; when a release's grant is taken back, a request made to its
 * waiter moves to the thread taking the GVL back if a waiter still
 * outranks it, and is reported on it, not counted again in preempt_reqs)
 * and GVL_EV_OWNER_DIED (called from the dying thread's TLS destructor).
 * now_ns is CLOCK_MONOTONIC.  The hook must not call back into the GVL. */
typedef void (*gvl_hook_cb)(void *arg, gvl_thread_t *t, gvl_event_t ev,
                            uint64_t now_ns);

/* Flags for gvl_config_t.flags */
#define GVL_F_TIMING  0x1u  /* measure hold time on every acquisition, not
                               only contended ones (costs two clock reads)  */
#define GVL_F_NOSPIN  0x2u  /* never spin before sleeping                   */
#define GVL_F_NOINTERACTIVE 0x4u /* turn the interactivity policy off: see
                               gvl_call_without and ARCHITECTURE.md      */
#define GVL_F_NORETAKE 0x8u /* no thread takes the GVL back from its
                               waiter (see gvl_call_without and
                               gvl_release)                              */
#define GVL_F_LEND    0x10u /* a boost lends the holder the booster's
                               kernel scheduling (see "Lending" below)   */

typedef struct {
  uint64_t slice_ns;      /* time slice; 0 = default (10 ms)               */
  unsigned boost_cap_pct; /* share of GVL time boosted holds may take
                             over the window, 1..100; 0 = default (50)     */
  uint64_t cap_window_ns; /* sliding window of the cap, 8..GVL_MAX_NS (it
                             is kept as 8 buckets); 0 = 100 ms             */
  uint64_t age_ns;        /* waiting this long raises a waiter's effective
                             priority by one, without a ceiling;
                             0 = default (100 ms)                          */
  uint64_t spin_ns;       /* max spin before sleeping, for a waiter that
                             expects a quick handoff (it asked a holder to
                             yield, was preempted by a boost, or its last
                             wait was this short), and never longer than
                             the slice; 0 = default (50 us);
                             never on 1 CPU (online, or in the creating
                             thread's affinity mask) or with GVL_F_NOSPIN */
  unsigned flags;         /* GVL_F_*                                        */
  gvl_hook_cb hook;       /* optional instrumentation hook                 */
  void *hook_arg;
  unsigned hold_share_pct; /* obsolete: validated (0..99) and ignored     */
} gvl_config_t;

/* Counters.  Per-GVL totals, and per-thread figures (gvl_thread_stats).
 * Each counter only grows.  A snapshot taken while other threads run is
 * not one instant, but never shows more boosts, handoffs, contended
 * acquisitions or retakes than acquisitions. */
typedef struct {
  uint64_t acquires;        /* successful acquisitions                     */
  uint64_t contended;       /* acquisitions that had to wait               */
  uint64_t handoffs;        /* direct handoffs to a waiter                 */
  uint64_t yields;          /* gvl_yield calls that handed over            */
  uint64_t preempt_reqs;    /* preempt flags set (slice or boost)          */
  uint64_t preemptions;     /* safe points that gave the GVL up            */
  uint64_t boosts;          /* acquisitions at a priority above
                               GVL_PRIO_NORMAL, boosted or promoted as
                               interactive (a boosted thread that yielded
                               to a normal waiter comes back at that
                               waiter's priority: see gvl_yield)           */
  uint64_t boosts_refused;  /* boosted acquisitions demoted by the cap
                               as they queued (see gvl_acquire_prio)       */
  uint64_t interactive;     /* acquisitions promoted by the interactivity
                               policy, counted as they start (a promotion
                               the cap then demotes included)             */
  uint64_t owner_died;      /* threads that exited holding the GVL         */
  uint64_t wait_ns;         /* total time spent waiting                    */
  uint64_t hold_ns;         /* total time held (see GVL_F_TIMING)          */
  uint64_t ia_cost_ns;      /* obsolete: always 0                          */
  uint64_t retakes;         /* gvl_call_without returns and acquires after
                               a boosted hold that took the GVL back before
                               its waiter did (each also counts as an
                               uncontended acquire)                         */
  uint64_t lends;           /* GVL_F_LEND: boosted waits that lent the
                               holder their kernel scheduling              */
} gvl_stats_t;

/* ---- lifecycle ------------------------------------------------------------ */

/* [any] Create a GVL.  cfg may be NULL for defaults.  Returns NULL with errno
 * set (EINVAL for a bad config, ENOMEM). */
GVL_EXPORT gvl_t *gvl_create(const gvl_config_t *cfg);

/* [any] Destroy a GVL.  EBUSY while any thread is attached or a
 * gvl_call_with is in progress (threads cached by gvl_call_with that are idle
 * do not count; they are reclaimed). */
GVL_EXPORT int gvl_destroy(gvl_t *g);

/* [any] Change the slice at run time (ns, 1..GVL_MAX_NS). */
GVL_EXPORT int gvl_set_slice(gvl_t *g, uint64_t slice_ns);
/* [any] Change the boost cap at run time (1..100). */
GVL_EXPORT int gvl_set_boost_cap(gvl_t *g, unsigned pct);
/* [any] Obsolete: validates pct (1..99) and changes nothing. */
GVL_EXPORT int gvl_set_hold_share(gvl_t *g, unsigned pct);
/* [any] Install or remove (cb NULL; arg is then ignored) the hook.  Threads
 * may see the old hook for a short while after this returns, and call it
 * with its own arg: a cb is only ever called with the arg it was set with.
 * Each distinct (cb, arg) pair is kept (a few words) until gvl_destroy, since
 * a thread may still be calling it.  EINVAL, ENOMEM. */
GVL_EXPORT int gvl_set_hook(gvl_t *g, gvl_hook_cb cb, void *arg);
/* [any] Read the counters. */
GVL_EXPORT int gvl_stats(gvl_t *g, gvl_stats_t *out);

/* [any; the calling thread attaches] Attach the calling OS thread with a base
 * priority (used by gvl_acquire).  The thread does not hold the GVL after
 * this.  Returns NULL and sets errno: EINVAL, ENOMEM, or EEXIST if the
 * thread is attached to g already (including by a gvl_call_with whose fn
 * is running on it). */
GVL_EXPORT gvl_thread_t *gvl_thread_attach(gvl_t *g, int prio);

/* [not held] Detach and free the handle.  EBUSY if holding, owning a
 * gvl_mutex, inside fn of a gvl_call_with on t's GVL made on t's thread
 * (one on another GVL does not use t), or inside fn
 * of a gvl_call_without made on t (which needs the handle to end its region;
 * gvl_region_begin's region may be ended by detaching); EPERM from another
 * OS thread.  A thread that exits owning a gvl_mutex leaves it owned by its
 * freed handle, as a pthread mutex that is not robust: it must not be used
 * again. */
GVL_EXPORT int gvl_thread_detach(gvl_thread_t *t);

/* [self] The handle of the calling thread for g, or NULL if not attached.
 * Inside gvl_call_with on a foreign thread, the handle cached for it (valid
 * until that gvl_call_with returns). */
GVL_EXPORT gvl_thread_t *gvl_thread_self(gvl_t *g);
/* [any] The GVL a handle belongs to. */
GVL_EXPORT gvl_t *gvl_thread_gvl(gvl_thread_t *t);
/* [self] Change the thread's base priority. */
GVL_EXPORT int gvl_thread_set_prio(gvl_thread_t *t, int prio);
/* [self] Turn the interactivity policy off (0) or on (1) for this thread;
 * any other value is EINVAL. */
GVL_EXPORT int gvl_thread_set_interactive(gvl_thread_t *t, int on);
/* [self] Name the thread where tools show it: its tracks in every trace of
 * this OS thread (gvl_trace.h), running or started later.  The name is
 * copied.  EINVAL for NULL or "", ERANGE if longer than 31 bytes. */
GVL_EXPORT int gvl_thread_set_name(gvl_thread_t *t, const char *name);
/* [any] Per-thread counters (same fields as gvl_stats_t; handoffs counts
 * handoffs received). */
GVL_EXPORT int gvl_thread_stats(gvl_thread_t *t, gvl_stats_t *out);
/* [any] Does t hold the GVL right now?  1 or 0 (0 for NULL).  Exact on t's
 * own thread; from another, a snapshot: while t releases, it may read 0
 * before the release is done, and never 1 for two threads at once. */
GVL_EXPORT int gvl_thread_holds(gvl_thread_t *t);
/* [self] Is t inside a blocking region (fn of gvl_call_without, or between
 * gvl_region_begin and gvl_region_end), and not in a gvl_call_with that
 * suspends it?  1 or 0 (0 for NULL).  Code that may run either way and
 * needs the GVL for a while takes it with gvl_call_with, which works in
 * both; gvl_acquire there fails with EPERM. */
GVL_EXPORT int gvl_thread_in_region(gvl_thread_t *t);

/* ---- the lock ------------------------------------------------------------ */

/* [not held] Acquire at the thread's base priority.  EDEADLK if held,
 * EPERM inside one of t's blocking regions (gvl_thread_in_region: there
 * gvl_call_with takes the GVL, suspending the region for the call). */
GVL_EXPORT int gvl_acquire(gvl_thread_t *t);

/* [not held] Acquire at prio (errors as gvl_acquire's, and EINVAL for a
 * prio out of range).  If prio is above the holder's, the holder is
 * asked to give the GVL up at its next safe point and this thread is served
 * ahead of lower priorities.  prio > 0 is a boosted acquisition, subject to
 * the cap; its holds (also after a safe point handed the GVL on and back)
 * and those of the interactive promotion are boosted holds:
 *  - each boosted hold is charged once, for the time it held (from when
 *    its thread runs with the GVL to giving it up: the time a granted
 *    thread waits for a CPU is not charged);
 *  - whenever the GVL is handed on (release, yield, safe point), a waiter
 *    whose hold would be boosted is served only while the holds charged
 *    over the last cap_window_ns are below boost_cap_pct of it.  Otherwise
 *    it is held back: served only if nobody else waits, by a release, by
 *    a boosted holder's yield or safe point, or once the holder's slice is
 *    over (a held-back waiter still waits at normal priority: the slice
 *    preemption serves it, so a "0 until flag" holder always lets it in);
 *    and once the window lets the cap allow boosts again, a held-back
 *    waiter above the holder's priority asks the holder to give the GVL
 *    up at its next safe point, as if it queued then (looked at as the
 *    window's oldest charges leave it, at most every 1 ms, and at once
 *    when gvl_set_boost_cap changes the cap).
 *    A boost that queues while the cap is exceeded is also demoted to
 *    GVL_PRIO_NORMAL (counted in boosts_refused) and so asks no holder at
 *    GVL_PRIO_NORMAL or above to yield.
 * Bound: over any interval of cap_window_ns during which an unboosted
 * thread waits for the GVL, boosted holds granted while the cap is not
 * exceeded take less than boost_cap_pct of it plus the last one granted in
 * it, which the slice ends after one slice (at its next safe point); past
 * the cap, a held-back waiter gets the GVL only when an unboosted holder's
 * slice ran out, and hands it back to the unboosted waiter after at most
 * one slice, so the unboosted threads keep at least every other slice.
 * A boosted acquire that finds the GVL free takes it (nobody waits); its
 * hold is charged all the same.  The cap counts hold time only, not the
 * handoffs boosts cause: a thread promoted at each return from blocking
 * calls of a microsecond or two (the interactivity policy, below) makes
 * the holder it preempts hand over and wait at every one, and beside a
 * compute thread that may cost the compute thread far more of its rate
 * than the cap's share (an OCaml thread writing single bytes to /dev/null
 * beside one: the compute thread at 1-40% of its rate on 2 CPUs, with the
 * boosted holds under the cap).  boost_cap_pct 100 turns the cap off:
 * boosted holds may take all of every window, so no boost is held back
 * or demoted (boosts_refused stays 0).
 * Lending (GVL_F_LEND, Linux; elsewhere accepted and no-op): a thread
 * that queues itself above the holder's priority, and so asks it to give
 * the GVL up at its next safe point, lends the holder its own kernel
 * scheduling (policy, nice, real-time priority) when that ranks above the
 * holder's (SCHED_FIFO and SCHED_RR by priority, above SCHED_OTHER and
 * SCHED_BATCH by nice, above SCHED_IDLE; a SCHED_DEADLINE thread neither
 * lends nor is lent to), so that on a busy machine the holder gets a CPU
 * to reach its safe point.  A waiter that spins lends only once 10 us of
 * its spin (or all of its spin, if shorter) have passed without the grant,
 * so a holder that hands over sooner is not lent; one that does not spin
 * lends as it queues.  The time the lend itself takes (system calls) is not
 * spin: the waiter then spins on for what its spin had left, within the
 * slice.  A thread attached to two GVLs at once is never
 * lent to.  The holder gets its own scheduling back as it gives the GVL up
 * (release, yield, safe point, blocking region, cond wait): before a
 * release returns, before a yield or safe point waits for the GVL again,
 * before a blocking region's fn runs.  Threads and processes it starts
 * while lent begin as SCHED_OTHER at nice 0 or above (the kernel's
 * SCHED_RESET_ON_FORK); a fork() child's thread has the holder's own.
 * A lend the kernel refuses (EPERM: no CAP_SYS_NICE or RLIMIT_RTPRIO,
 * or, for a real-time policy, a cgroup v1 CPU group with no real-time
 * budget, cpu.rt_runtime_us 0, as containers often have) is not made.
 * Counted in gvl_stats_t.lends, on the lender.  While lent, a
 * change the host makes to the holder's scheduling is undone when the lend
 * ends.  Only the kernel's real-time policies preempt a busy CPU at once:
 * a booster at a lower nice lends a weight that the kernel applies at its
 * next pick (see evloop.h, cfg.sched_policy, for a loop thread that lends
 * SCHED_FIFO). */
GVL_EXPORT int gvl_acquire_prio(gvl_thread_t *t, int prio);

/* [held] Release; hands the GVL directly to the best waiter, if any.
 * Taking it back: after a boosted hold (see gvl_acquire_prio), while t is
 * within its slice and the waiter served is below the hold's priority,
 * t's next acquire, if it comes before that waiter has started to run,
 * takes the GVL straight back and the waiter stays first in line: the
 * acquire would have had it give the GVL up at its first safe point.  Only at a priority above the waiter's and
 * above every other waiter's (one that queued meanwhile at that priority
 * goes first), only while the boost cap allows boosts, never with
 * GVL_F_NORETAKE.
 * The same holds for gvl_call_with's release.  Counted in
 * gvl_stats_t.retakes. */
GVL_EXPORT int gvl_release(gvl_thread_t *t);

/* [held] Thread.pass: if someone waits, hand the GVL to the best waiter (a
 * waiter the boost cap holds back is served only as gvl_acquire_prio says:
 * an unboosted t within its slice keeps the GVL then) and queue again, at
 * the back, at no higher a priority than that waiter's (behind every
 * waiter of that priority); returns holding the GVL again.  With nobody
 * waiting it returns at once (a load and a branch). */
GVL_EXPORT int gvl_yield(gvl_thread_t *t);

/* [held] Slow path of gvl_check_ints; do not call directly. */
GVL_EXPORT int gvl__check_ints_slow(gvl_thread_t *t);

/* The first field of every gvl_thread_t; public only so that
 * gvl_check_ints() can be inline.  Do not touch. */
struct gvl__thread_head {
  uint32_t ints;          /* GVL__INT_* bits, accessed atomically          */
};
#define GVL__INT_PREEMPT 0x1u
#define GVL__INT_HOST    0x2u

/* [held] Safe point.  Costs one relaxed load and a predicted branch when
 * nothing is pending.  When a preempt request is pending, gives the GVL to
 * the best waiter, which is the one that asked unless another outranks it
 * by then (or keeps it when the boost cap holds every waiter back, as
 * gvl_acquire_prio says), and returns holding it again (0).  Returns EINTR
 * (once) after gvl_thread_interrupt(); EINVAL for NULL.  The handle's
 * thread is checked only when something is pending (then EPERM from
 * another thread). */
#ifdef __cplusplus  /* clean under -Wold-style-cast */
#define GVL__HEAD(t) reinterpret_cast<struct gvl__thread_head *>(t)
#else
#define GVL__HEAD(t) ((struct gvl__thread_head *)(t))
#endif
static inline int gvl_check_ints(gvl_thread_t *t) {
  if (__builtin_expect(!t, 0)) return 22; /* EINVAL */
  if (__builtin_expect(__atomic_load_n(&GVL__HEAD(t)->ints, __ATOMIC_RELAXED) != 0, 0))
    return gvl__check_ints_slow(t);
  return 0;
}

/* [any] Interrupt t: its next gvl_check_ints() returns EINTR (unless its
 * next gvl_call_without or gvl_region_begin returns EINTR first, which
 * consumes the interrupt); if t is in a
 * gvl_call_without() region its ubf is called (on the calling thread; not
 * while a gvl_call_with inside that region runs, see gvl_call_with); a
 * gvl_call_without() not yet started does not call fn.  A wait in
 * gvl_mutex_lock or gvl_cond_wait is not interrupted: the interrupt stays
 * pending for t's next safe point. */
GVL_EXPORT int gvl_thread_interrupt(gvl_thread_t *t);

/* [held] Release the GVL, call fn(arg), reacquire, return fn's result.
 * Interactivity policy (on unless GVL_F_NOINTERACTIVE or
 * gvl_thread_set_interactive(t, 0)): if less than a tenth of a slice has
 * passed since t's previous gvl_call_without returned, or had passed
 * before that one (a single long stretch, such as one the OS stretched by
 * running something else on t's CPU, does not demote), t reacquires at
 * priority 1 (when its own is lower), preempting a normal CPU-bound holder
 * at its next safe point; that promotion is a boost and is charged to the
 * cap.  A thread that computes longer between blocking calls, however often
 * it was preempted meanwhile, is never promoted, except once right after a
 * short stretch; nor is the first call after a gvl_acquire (a gvl_release
 * ends the stretch).  A t whose return was promoted and that hands the GVL
 * over (a safe point, gvl_yield) within a tenth of a slice of it, also
 * after taking the GVL back, queues again at priority 1, never above
 * the waiter it hands to: another I/O thread's promotion does not put it
 * behind a CPU-bound waiter, whose slice it would wait out (the requeue
 * asks the cap as any promotion does; its hold counts in boosts, not
 * again in interactive).
 * Taking it back: when a waiter is served as fn starts, and fn returns
 * before that waiter has started to run (it was still waking up), t takes
 * the GVL straight back and the waiter stays first in line, losing no time
 * it could have used.  This happens only while t is within its slice, at
 * the release and at the return (the slice goes on, it does not restart),
 * only if the waiter's priority is not above t's, for a boosted t only
 * while the boost cap allows boosts, and never with GVL_F_NORETAKE.  A
 * waiter that has started to run keeps the GVL: t then waits as any
 * acquire does.  Counted in gvl_stats_t.retakes.
 * ubf(ubf_arg) is called from another thread by gvl_thread_interrupt() to
 * make fn return early (or by t itself, as a gvl_call_with made inside fn
 * returns with an interrupt pending: see gvl_call_with); it may be NULL.
 * On error returns NULL and sets
 * errno: EINVAL (NULL t or fn), EPERM (not holding), EINTR (an interrupt
 * was pending: fn was not called).  The GVL is held on every return from a
 * thread that held it on entry. */
GVL_EXPORT void *gvl_call_without(gvl_thread_t *t, void *(*fn)(void *),
                                  void *arg, void (*ubf)(void *),
                                  void *ubf_arg);

/* [held] gvl_call_without in two halves, for hosts whose blocking calls are
 * bracketed by two calls of their own (OCaml's caml_enter_blocking_section
 * and caml_leave_blocking_section, a C extension's "begin/end allow
 * threads" macros).  gvl_region_begin releases exactly as gvl_call_without
 * does before calling fn, recording ubf for gvl_thread_interrupt; 0, or
 * EINVAL, EPERM (not holding), EINTR (an interrupt was pending: nothing was
 * released, the GVL is still held).
 * [self, in a region] gvl_region_end reacquires exactly as gvl_call_without
 * does after fn returns (the interactivity policy, taking the GVL back), at
 * the priority of the hold that gvl_region_begin released, or at prio if
 * prio is higher (GVL_PRIO_MIN: no change; a host that knows the code after
 * the region is urgent passes its boost, and is then not promoted as
 * interactive on top); 0, or EINVAL (bad t or prio), EPERM (t is not in a
 * region).  Between the two, the only calls allowed on t are
 * gvl_thread_interrupt (from any thread), gvl_thread_holds,
 * gvl_thread_in_region, gvl_thread_stats,
 * gvl_call_with (which suspends the region for the call, see there) and
 * gvl_thread_detach, which ends the region for good (not from inside fn of
 * a gvl_call_without, whose own return ends it: EBUSY there). */
GVL_EXPORT int gvl_region_begin(gvl_thread_t *t, void (*ubf)(void *),
                                void *ubf_arg);
GVL_EXPORT int gvl_region_end(gvl_thread_t *t, int prio);

/* [any] Run fn(arg) holding g, from any thread.  A thread that already holds
 * g just calls fn.  An attached thread not holding acquires at prio and
 * releases after.  An unattached (foreign) thread is attached on first use;
 * the attachment is cached for the next call, reclaimed when the thread
 * exits or gvl_destroy runs, and never counts as attached for gvl_destroy.
 * A thread that exits inside fn (pthread_exit) ends the call: the GVL is
 * recovered (GVL_EV_OWNER_DIED) and the call no longer keeps gvl_destroy
 * off g.
 * Called from inside a blocking region of the same thread (fn of
 * gvl_call_without calling back into the host), the region is suspended
 * for the call: fn may enter regions of its own, gvl_thread_interrupt
 * meanwhile only posts the interrupt (fn's safe points see it), and when
 * the call returns the region resumes with its ubf, which is called then
 * if an interrupt posted during the call is still pending; the region's
 * grant is not taken back by the call.
 * Returns fn's result; on error NULL with errno set. */
GVL_EXPORT void *gvl_call_with(gvl_t *g, int prio, void *(*fn)(void *),
                               void *arg);

/* ---- GVL-aware mutex and condition variable ---------------------------------
 * For host-level Mutex/ConditionVariable.  Every call but init and destroy
 * needs the GVL held ([held]); their state is guarded by the GVL itself, so
 * a mutex or condition belongs to one GVL: its first lock or trylock (a
 * mutex) or wait (a condition) binds it to the caller's GVL until it is
 * destroyed, and the calls of a thread of another GVL get EINVAL.  A
 * thread that blocks releases the GVL and gets it back at its base
 * priority, as gvl_acquire (a boost its hold had is not asked for again);
 * unlock hands the mutex to the first waiter (FIFO) and queues that waiter
 * for the GVL itself, so the waiter is woken holding both, never to find
 * the mutex taken (as any thread waiting for the GVL, it may also be woken
 * to time the holder's slice when it is first in line). */
typedef struct gvl__waitq { gvl_thread_t *head, *tail; } gvl__waitq_t;

typedef struct {
  gvl_thread_t *owner;    /* guarded by the GVL */
  gvl__waitq_t waiters;   /* guarded by the GVL */
  gvl_t *g;               /* the GVL it belongs to, from its first use */
  uint32_t magic;
  uint32_t cwaits;        /* gvl_cond waits using it; guarded by the GVL */
} gvl_mutex_t;

typedef struct {
  gvl__waitq_t waiters;   /* guarded by the GVL */
  gvl_t *g;               /* the GVL it belongs to, from its first use */
  uint32_t magic;
} gvl_cond_t;

/* [any] init/destroy; destroy returns EBUSY while locked or waited on (a
 * mutex also while a gvl_cond wait that uses it is under way: the waiter
 * takes it again before it returns), as a caller that holds its GVL sees
 * it; without that GVL, as with pthread_mutex_destroy, the caller must
 * know that no other thread still uses it.  A destroyed one may be
 * initialised again, and is then free to belong to another GVL. */
GVL_EXPORT int gvl_mutex_init(gvl_mutex_t *m);
GVL_EXPORT int gvl_mutex_destroy(gvl_mutex_t *m);
/* [held] EDEADLK if t already owns m. */
GVL_EXPORT int gvl_mutex_lock(gvl_thread_t *t, gvl_mutex_t *m);
/* [held] EBUSY if owned by another thread, EDEADLK if by t. */
GVL_EXPORT int gvl_mutex_trylock(gvl_thread_t *t, gvl_mutex_t *m);
/* [held] EPERM if t does not own m. */
GVL_EXPORT int gvl_mutex_unlock(gvl_thread_t *t, gvl_mutex_t *m);

GVL_EXPORT int gvl_cond_init(gvl_cond_t *c);
GVL_EXPORT int gvl_cond_destroy(gvl_cond_t *c);
/* [held] t must own m.  Returns owning m and holding the GVL. */
GVL_EXPORT int gvl_cond_wait(gvl_thread_t *t, gvl_cond_t *c, gvl_mutex_t *m);
/* [held] As gvl_cond_wait, giving up after timeout_ns: ETIMEDOUT (still
 * owning m and holding the GVL).  A timeout past the monotonic clock's
 * range (UINT64_MAX) never expires. */
GVL_EXPORT int gvl_cond_timedwait(gvl_thread_t *t, gvl_cond_t *c,
                                  gvl_mutex_t *m, uint64_t timeout_ns);
/* [held] Wake one / all waiters (in FIFO order). */
GVL_EXPORT int gvl_cond_signal(gvl_thread_t *t, gvl_cond_t *c);
GVL_EXPORT int gvl_cond_broadcast(gvl_thread_t *t, gvl_cond_t *c);

/* [any] What a code returned by gvl means ("the GVL is already held by this
 * thread" for EDEADLK); strerror's text for other errno values; "unknown
 * error code N" for the rest.  Reentrant: the string is constant (only the
 * last case uses a per-thread buffer, valid until the thread's next call). */
GVL_EXPORT const char *gvl_strerror(int err);
/* [any] The code's symbolic name ("EDEADLK"; "OK" for 0; "UNKNOWN" for a
 * code that is not an errno value), as uv_err_name.  Constant string. */
GVL_EXPORT const char *gvl_err_name(int err);
/* [any] The library's version: GVL_VERSION_HEX / GVL_VERSION_STRING of the
 * gvl.h it was built with (compare with the macros to detect a mismatch). */
GVL_EXPORT unsigned gvl_version(void);
GVL_EXPORT const char *gvl_version_string(void);
/* Shared by evloop and tkbridge's *_strerror / *_err_name: errno texts and
 * names, without a shared buffer.  Not part of the API. */
GVL_EXPORT const char *gvl__err_text(int err);
GVL_EXPORT const char *gvl__err_name(int err);
/* [any] CLOCK_MONOTONIC in ns. */
GVL_EXPORT uint64_t gvl_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif /* GVL_H */

/* SPDX-License-Identifier: MIT */
/*
 * gvl_int.h -- private state of libgvl.
 *
 * Two layers (ARCHITECTURE.md, "The GVL"):
 *   mechanism  gvl_lock.c: the lock word, the wait queue, handoff, parking
 *              (gvl_wait_*.c) and the timer role; modelled in tests/model.
 *   policy     gvl_policy.c: which waiter is next (priority, aging, the boost
 *              cap), when the holder is asked to yield (slice, boost), the
 *              cap's charges and the interactivity rule.  The mechanism calls
 *              it at fixed points, all under g->mu; its per-GVL state is one
 *              struct, g->pol, re-initialised at once by gvl__pol_reset.
 *
 * Locking, in the order they may nest:
 *   registry_mu  process-wide list of GVLs (for fork) -- gvl_thread.c
 *   g->mu        wait queue, timer role, policy state, thread list
 *   t->ilock     t's blocking-region state (ubf), never held with g->mu
 *   t->lend_mu   t's lend (GVL_F_LEND); under g->mu only tried
 * Outside g->mu the lock word changes only by the fast paths' CAS 0 -> t and
 * CAS t -> 0; setting CONTENDED, taking a GVL found free in acquire_slow and
 * every handoff happen under g->mu.  A thread's ints word is set by anyone
 * and cleared by its owner (or by take_back, for a waiter's PREEMPT it
 * moves to the taker); holding, the counters it owns and hold_t0 are
 * written by the thread itself only.  ARCHITECTURE.md has the whole table.
 */
#ifndef GVL_INT_H
#define GVL_INT_H

#include "gvl.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(GVL_DEBUG) && GVL_DEBUG
#include <assert.h>
#define gvl__assert(x) assert(x)
#else
#define gvl__assert(x) ((void)0)
#endif

/* One round of a bounded spin: tell the CPU we are waiting on memory. */
#if defined(__x86_64__) || defined(__i386__)
#define gvl__cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define gvl__cpu_relax() __asm__ __volatile__("yield")
#else
#define gvl__cpu_relax() ((void)0)
#endif

#define GVL__CONTENDED ((uintptr_t)1)   /* lock-word bit: queue non-empty */
#define GVL__GRANTED      1u   /* t->granted: the GVL is t's               */
#define GVL__GRANTED_HOT  2u   /* ... unless g->hot takes it back first    */
#define GVL__DEF_SLICE_NS   (10u * 1000000u)
#define GVL__DEF_CAP_PCT    50u
#define GVL__DEF_WINDOW_NS  (100u * 1000000u)
#define GVL__DEF_AGE_NS     (100u * 1000000u)
#define GVL__DEF_SPIN_NS    (50u * 1000u)
#define GVL__LEND_AFTER_NS  (10u * 1000u)  /* GVL_F_LEND: spin this long first */
/* The timer asks a holder that has not answered its preempt flag again at
 * most this often (slices shorter than this would make it spin). */
#define GVL__RETICK_NS      (1000u * 1000u)
#define GVL__MAX_NS         (86400ull * 1000000000u)  /* GVL_MAX_NS: a day */
#define GVL__CAP_BUCKETS    8   /* the window is 8 buckets; one more is kept */
#define GVL__CAP_SLOTS      (GVL__CAP_BUCKETS + 1)

/* Per-GVL and per-thread counters; indices match gvl_stats_t order. */
enum {
  C_ACQUIRES, C_CONTENDED, C_HANDOFFS, C_YIELDS, C_PREEMPT_REQS,
  C_PREEMPTIONS, C_BOOSTS, C_BOOSTS_REFUSED, C_INTERACTIVE, C_OWNER_DIED,
  C_WAIT_NS, C_HOLD_NS, C_RETAKES, C_LENDS, C__COUNT
};

/* Platform parking: each thread sleeps on its own word (futex on Linux). */
typedef struct {
  _Atomic uint32_t seq;   /* bumped by every wake                          */
  _Atomic uint32_t sleepers; /* 1 while the owner may be in the kernel
                             (futex only)                             */
#ifndef GVL__PARK_FUTEX
  pthread_mutex_t mu;     /* portable fallback only                        */
  pthread_cond_t cv;
#endif
} gvl__park_t;

int  gvl__park_init(gvl__park_t *p);
void gvl__park_fini(gvl__park_t *p);
/* Sleep while p->seq == seq, at most until deadline_ns (0: no deadline). */
void gvl__park_wait(gvl__park_t *p, uint32_t seq, uint64_t deadline_ns);
/* Bump seq and wake the sleeper, if it announced itself (sleepers). */
void gvl__park_wake(gvl__park_t *p);
/* The same in two halves, for a wake decided under g->mu and made after
 * it: bump marks the wake (a sleeper that has not slept yet will not) and
 * returns true if the sleeper may be in the kernel and must be kicked out
 * of it; kick does that.  park_wake is bump, then kick if needed. */
bool gvl__park_bump(gvl__park_t *p);
void gvl__park_kick(gvl__park_t *p);
void gvl__park_after_fork(gvl__park_t *p);

/* g->mu.  With futexes one 32-bit word (0 free, 1 held, 2 held with
 * sleepers), so that it shares the first line of gvl_t with the lock word,
 * the queue's ends, the timer and the slice start, which every handoff
 * writes under it.  Its critical sections are a few dozen instructions, and
 * the thread that waits for it is usually the one just handed the GVL: it
 * spins a moment (bounded) before it sleeps.  Elsewhere a pthread mutex. */
#ifdef GVL__PARK_FUTEX
typedef struct { _Atomic uint32_t v; } gvl__mu_t;
void gvl__mu_lock_slow(gvl__mu_t *m);
void gvl__mu_wake(gvl__mu_t *m);
static inline int gvl__mu_init(gvl__mu_t *m) {
  atomic_init(&m->v, 0);
  return 0;
}
static inline void gvl__mu_fini(gvl__mu_t *m) { (void)m; }
static inline void gvl__mu_lock(gvl__mu_t *m) {
  uint32_t e = 0;
  if (!atomic_compare_exchange_strong_explicit(&m->v, &e, 1,
          memory_order_acquire, memory_order_relaxed))
    gvl__mu_lock_slow(m);
}
static inline void gvl__mu_unlock(gvl__mu_t *m) {
  if (atomic_exchange_explicit(&m->v, 0, memory_order_release) == 2)
    gvl__mu_wake(m);
}
#else
typedef pthread_mutex_t gvl__mu_t;
int gvl__mu_init(gvl__mu_t *m);
static inline void gvl__mu_fini(gvl__mu_t *m) { pthread_mutex_destroy(m); }
static inline void gvl__mu_lock(gvl__mu_t *m) { pthread_mutex_lock(m); }
static inline void gvl__mu_unlock(gvl__mu_t *m) { pthread_mutex_unlock(m); }
#endif

/* A thread's kernel scheduling, for GVL_F_LEND (gvl_sched_*.c).  tid is a
 * kernel thread id (gvl__ksched_tid); get and set return 0 or an errno
 * (ENOSYS where one thread cannot read or set another's). */
typedef struct {
  int policy;                   /* SCHED_OTHER, SCHED_FIFO, ...            */
  int nice;                     /* SCHED_OTHER, SCHED_BATCH                */
  int rtprio;                   /* SCHED_FIFO, SCHED_RR                    */
  uint64_t flags;               /* GVL__SCHED_RESET_ON_FORK or 0           */
} gvl__ksched_t;
#define GVL__SCHED_RESET_ON_FORK 1u   /* the kernel's SCHED_FLAG_RESET_ON_FORK */

int gvl__ksched_tid(void);
int gvl__ksched_get(int tid, gvl__ksched_t *s);
int gvl__ksched_set(int tid, const gvl__ksched_t *s);
/* Higher runs first; -1 (SCHED_DEADLINE, or no support): never lend from
 * or to it. */
int gvl__ksched_rank(const gvl__ksched_t *s);
/* The calling thread's word that the kernel keeps at the number of the CPU
 * it last ran on (Linux's rseq area, registered by glibc), or NULL where
 * there is none.  Another thread may read it while this one lives. */
const volatile uint32_t *gvl__ksched_cpu_word(void);

/* Revocable grants (g->hot_kind): none; a release into a blocking region
 * (gvl_call_without); the release that ends a boosted hold. */
enum { GVL__HOT_NONE, GVL__HOT_REGION, GVL__HOT_BOOST };

/* t->lend: GVL_F_LEND's state of t's kernel scheduling. */
enum { GVL__LEND_NONE, GVL__LEND_LENT, GVL__LEND_RESTORING };

/* Groups of fields written by different threads start on their own cache
 * lines, so that a handoff moves few lines between CPUs (see
 * ARCHITECTURE.md, "The wait queue, handoff and parking").  The structs are allocated
 * line-aligned (gvl__alloc_lines). */
#define GVL__LINE 64
#define GVL__GROUP _Alignas(GVL__LINE)
void *gvl__alloc_lines(size_t size);    /* zeroed; free() releases it    */

struct gvl_thread_s {
  /* Read by the owner at every safe point.  Others post interrupts and
   * preempt requests here, and lenders write lend (under t->lend_mu)
   * (ARCHITECTURE.md, "Who writes what"). */
  struct gvl__thread_head head; /* ints: must stay first (gvl_check_ints);
                                   set by anyone, cleared by t (PREEMPT
                                   also by take_back, t then waiting)      */
  _Atomic uint64_t preempt_reqs; /* C_PREEMPT_REQS, beside ints: bumped by
                                   whoever asks (gvl__request_preempt),
                                   under g->mu                             */
  gvl_t *g;                     /* set at attach; dangling once orphan     */
  pthread_t tid;                /* owning OS thread                        */
  const char *self_key;         /* &gvl__self_key of that thread           */
  int prio;                     /* base priority; t only                   */
  int req_prio;                 /* priority the current acquire asked for;
                                   t only                                  */
  _Atomic int holding;          /* 1 while t owns the GVL; t only          */
  bool boosted;                 /* current hold is charged to the cap
                                   (gvl__boosted); t only                  */
  bool interactive_off;         /* t only                                  */
  uint64_t hold_t0;             /* start of the current hold (and of its
                                   charge), 0 = not timed; t only          */
  uint64_t ia_t0;               /* when t last came back from
                                   gvl_call_without, 0 = unknown (none
                                   since its gvl_acquire); t only          */
  bool ia_short;                /* t's last stretch was short
                                   (gvl__pol_interactive); t only          */
  uint64_t last_wait_ns;        /* length of t's last wait; t only         */
  bool wait_asleep;             /* the next wait for a grant never spins
                                   (a gvl_cond wait's own reacquire); t only */
  int region_prio;              /* gvl_region_begin: the released hold's
                                   requested priority (saved and restored
                                   around a gvl_call_with inside the
                                   region); t only                         */
  bool region_ia;               /* ... and whether the interactivity rule
                                   promotes the reacquire; t only          */
  bool ia_ret;                  /* t's hold is the return of a region the
                                   rule promoted (taken back or not), not
                                   one of a gvl_call_with or after a
                                   gvl_mutex/gvl_cond wait; t only         */
  int hot_release;              /* GVL__HOT_* of a release of t's that left
                                   a grant t may take back, NONE once t's
                                   acquire_slow tried; may be stale (an
                                   acquire on the fast path leaves it):
                                   acquire_slow checks g->hot; t only      */
  bool lend_ask;                /* t's wait is to lend to the holder it
                                   asked to yield (GVL_F_LEND); set by
                                   enqueue of t itself; t only             */
  int ktid;                     /* kernel thread id (GVL_F_LEND); set at
                                   attach and in the fork child            */
  const volatile uint32_t *cpu_word; /* gvl__ksched_cpu_word of t's thread,
                                   or NULL; set at attach (the fork child's
                                   thread has the same); read by others
                                   under g->mu while t owns the GVL or is
                                   queued for it, so its thread lives      */
  int other_cpu;                /* the CPU the thread t waits for last ran
                                   on, -1 unknown: the holder as t queues,
                                   or the waiter a yield of t served; t
                                   only (written under g->mu)              */
  _Atomic bool multi;           /* its OS thread has been attached to two
                                   GVLs at once: never lent to; set by t's
                                   OS thread at attach                     */
  _Atomic int lend;             /* GVL__LEND_*: NONE -> LENT and
                                   RESTORING -> LENT by a lend, LENT ->
                                   RESTORING -> NONE by a restore; written
                                   under lend_mu (see below), read without
                                   it as a hint by a thread that restores  */

  /* The handoff's line: the queue node, guarded by g->mu and written by
   * whoever holds it, and what a waiter spins or sleeps on.  The holder
   * that hands the GVL to t writes all of it at once, and t reads it as
   * it takes the GVL: one line moves. */
  GVL__GROUP
  gvl_thread_t *qnext;
  gvl_thread_t *qprev;
  uint64_t qtime;               /* when it queued (for aging)              */
  uint64_t grant_ns;            /* when the handoff granted it: for an
                                   unboosted hold, the end of t's wait and
                                   the start of its hold (a boosted one
                                   starts when t runs); written under g->mu
                                   before granted, read by t once granted  */
  int qprio;                    /* priority t queued with                  */
  _Atomic int hold_prio;        /* priority of the current hold: stored by t
                                   before it queues or takes a free GVL, or
                                   under g->mu by the handoff before it
                                   grants, by take_back for the taker and by
                                   the fork child; read by others under
                                   g->mu                                   */
  _Atomic uint32_t granted;     /* GVL__GRANTED, or GVL__GRANTED_HOT, set by
                                   the handoff under g->mu; HOT -> GRANTED
                                   by t's CAS (it takes the GVL), HOT -> 0
                                   by g->hot's CAS under g->mu (it took the
                                   grant back); cleared by t before it
                                   queues itself or drops the GVL for a
                                   gvl_mutex/gvl_cond wait (then another
                                   thread queues it)                        */
  _Atomic int is_timer;         /* t times the holder's slice; written
                                   under g->mu, read by t without it        */
  _Atomic uint32_t wake_refs;   /* kicks decided under g->mu and not made
                                   yet (gvl_lock.c, wakes_t): the handle is
                                   not freed while non-zero; bumped under
                                   g->mu, dropped by the waker without it   */
  bool queued;
  bool qboost;                  /* its hold will be boosted
                                   (gvl__boosted of qprio and req_prio, kept
                                   here so a pick reads only this line);
                                   written with qprio                      */
  _Atomic bool spin_hint;       /* a quick handoff is expected; written
                                   under g->mu, read by t without it        */
  gvl__park_t park;             /* last: the portable one does not fit     */

  /* Blocking region; written by t under ilock, read by others under it
   * (gvl_thread_interrupt) and by t without it. */
  GVL__GROUP
  pthread_mutex_t ilock;
  void (*ubf)(void *);
  void *ubf_arg;
  bool in_region;
  unsigned posts;               /* interrupts posted, under ilock by the
                                   poster (gvl_thread_interrupt)            */

  /* GVL_F_LEND (gvl_lock.c, "lending"): lend_mu guards t->lend, lend_gen
   * and lend_own.  A lender holds g->mu too and only tries it; a restore
   * holds nothing else, and not across its system call.  Touched by a lend,
   * by a restore when t->lend is not NONE, and by the fork child. */
  GVL__GROUP
  pthread_mutex_t lend_mu;
  unsigned lend_gen;            /* restores begun (LENT -> RESTORING): the
                                   one that ends the state is the last     */
  gvl__ksched_t lend_own;       /* t's own scheduling while not NONE;
                                   written by the lend that leaves NONE    */

  /* gvl_mutex/gvl_cond wait node; guarded by the GVL. */
  gvl_thread_t *mnext, *mprev;
  gvl__waitq_t *mq;             /* the queue it is linked in, or NULL: the
                                   fork child unlinks threads it drops     */
  _Atomic int cstate;           /* GVL__CW_*: the CAS decides signal vs
                                   timeout                                 */
  gvl_cond_t *cwait;            /* condition waited on, if linked          */
  gvl_mutex_t *cmutex;          /* its mutex, retaken when signalled; set
                                   for the whole of a gvl_cond wait, which
                                   cmutex->cwaits counts; else NULL        */

  /* Registry. */
  gvl_thread_t *gnext, *gprev;  /* g's attached threads; g->mu            */
  gvl_thread_t *tls_next;       /* this OS thread's attachments; t only    */
  bool foreign;                 /* cached by gvl_call_with; g->mu          */
  _Atomic bool orphan;          /* its GVL was destroyed; free on sight    */
  int call_depth;               /* gvl_call_with nesting; t only           */
  int mutexes;                  /* gvl_mutexes t owns; guarded by the GVL
                                   (an unlock may hand one to t)           */
  int without_depth;            /* gvl_call_without fns running on t, whose
                                   returns need the handle; t only         */
  int handing;                  /* C_YIELDS or C_PREEMPTIONS while t's
                                   SUSPENDED hook of a yield or safe point
                                   runs, else 0; t only (the tracer reads
                                   it on t's thread)                       */
  uint64_t trace_from;          /* the tracer's number of the thread that
                                   handed t the GVL, written by the
                                   handoff (under g->mu, before granted)
                                   only while g is traced, else left 0;
                                   cleared by t once its RESUMED is
                                   reported (a trace stopped in between
                                   leaves it for that RESUMED only), by a
                                   take-back of the grant and by the fork
                                   child's grant                           */

  /* Written by t itself (C_PREEMPT_REQS lives in preempt_reqs), except
   * C_BOOSTS_REFUSED, which gvl__enqueue_other may add for t. */
  GVL__GROUP
  _Atomic uint64_t ctr[C__COUNT];
};

#ifdef GVL__PARK_FUTEX
_Static_assert(offsetof(gvl_thread_t, park) + sizeof(gvl__park_t) -
                   offsetof(gvl_thread_t, qnext) <= GVL__LINE,
               "a handoff writes one line of the waiter's");
#endif

enum { GVL__CW_NONE, GVL__CW_WAITING, GVL__CW_SIGNALED, GVL__CW_TIMEDOUT };

/* The policy's per-GVL state: all guarded by g->mu, all reset at once. */
typedef struct {
  uint64_t hold_since;          /* slice start of the current holder (its
                                   handoff, or when the first waiter came) */
  int held_prio;                /* the highest queued priority among the
                                   waiters the last pick held back for the
                                   cap (INT_MIN: none): above the new hold,
                                   the timer must look before the slice
                                   ends (gvl__pol_look_by)                 */
  uint64_t cap_ns[GVL__CAP_SLOTS];    /* boosted ns booked per bucket      */
  uint64_t cap_epoch[GVL__CAP_SLOTS]; /* which bucket of time each holds   */
} gvl__policy_t;

/* A hook and its argument (gvl_set_hook), published as one pointer so that
 * a thread calls a cb only with its own arg.  Never changed once published,
 * and kept until gvl_destroy, since a thread that read it may still call
 * it: a pair set again is found and reused, so their number is that of
 * distinct pairs, not of calls. */
typedef struct gvl__hook_s {
  gvl_hook_cb cb;
  void *arg;
  struct gvl__hook_s *next;     /* g->hooks                                */
} gvl__hook_t;

struct gvl_s {
  /* Written at every handoff, all on the first line: the word, mu, the
   * queue's ends, the timer, the revocable grant and the slice start
   * (pol.hold_since, pol's first field); the rest of a revocable grant and
   * the cap's buckets follow. */
  GVL__GROUP
  _Atomic uintptr_t word;       /* 0 free, else owner | GVL__CONTENDED: see
                                   the locking note above                  */
  gvl__mu_t mu;
  int hot_kind;                 /* GVL__HOT_REGION or _BOOST: which release
                                   left g->hot; mu                         */
  gvl_thread_t *qhead, *qtail;  /* waiters in arrival order; mu            */
  gvl_thread_t *timer;          /* the queued waiter timing the slice; mu  */
  uint64_t timer_due;           /* when the timer looks next at the latest
                                   (its last tick's deadline); 0 until it
                                   has ticked since it got the role or was
                                   woken to look again; mu                 */
  gvl_thread_t *hot;            /* released the GVL with a revocable grant
                                   to hot_to; cleared by every other
                                   handoff, try_take_back, the detach of
                                   hot or hot_to, the fork child; mu       */
  gvl__policy_t pol;            /* mu                                      */
  gvl_thread_t *hot_to;         /* mu                                      */
  uint64_t hot_since;           /* hot's slice start, restored if it takes
                                   the grant back; mu                      */

  /* Read on every wait; written only by the setters (validated there). */
  GVL__GROUP
  _Atomic uint64_t slice_ns;
  _Atomic unsigned cap_pct;
  uint64_t window_ns, age_ns, spin_ns; /* fixed at creation               */
  unsigned flags;               /* fixed at creation                       */
  gvl__hook_t *_Atomic hook;    /* the hook and its arg, read together;
                                   NULL for none; gvl_set_hook under mu    */
  void *_Atomic trace;          /* tracer state when tracing, else NULL    */
  uint64_t uid;                 /* never reused, to tell GVLs apart        */

  GVL__GROUP
  gvl_thread_t *threads;        /* attached threads; mu                    */
  gvl__hook_t *hooks;           /* every hook pair published; mu          */
  int nthreads;                 /* explicit (non-foreign) attached; mu     */
  _Atomic int in_call;          /* gvl_call_with calls in progress by
                                   threads not holding g (a nested one
                                   returns fn(arg) uncounted)              */
  uint64_t retired[C__COUNT];   /* counters of detached threads; mu       */
  gvl_t *rnext, *rprev;         /* registry; registry_mu                   */
};

#ifdef GVL__PARK_FUTEX
_Static_assert(offsetof(struct gvl_s, pol) + sizeof(uint64_t) <= GVL__LINE,
               "a handoff writes one line of the GVL's");
#endif

/* gvl_lock.c: the mechanism */
uint64_t gvl__now(void);
void gvl__hook(gvl_t *g, gvl_thread_t *t, gvl_event_t ev);
/* The same for an event that happened at now (gvl__hook reads the clock). */
void gvl__hook_at(gvl_t *g, gvl_thread_t *t, gvl_event_t ev, uint64_t now);
int  gvl__acquire(gvl_thread_t *t, int prio, bool interactive);
/* Release.  kind (GVL__HOT_*): whether the waiter served may get a grant
 * the caller can take back, which its next contended acquire tries first
 * (see gvl__pol_hot_ok). */
int  gvl__release(gvl_thread_t *t, int kind);
void gvl__enqueue_other(gvl_t *g, gvl_thread_t *t, int prio);
void gvl__wait_granted(gvl_t *g, gvl_thread_t *t, uint64_t start);
void gvl__drop_for_wait(gvl_thread_t *t);
bool gvl__wait_granted_until(gvl_t *g, gvl_thread_t *t, uint64_t deadline);
void gvl__after_acquire(gvl_thread_t *t, uint64_t wait_t0);
void gvl__request_preempt(gvl_thread_t *owner);
void gvl__set_ints(gvl_thread_t *t, uint32_t bit);
void gvl__clear_ints(gvl_thread_t *t, uint32_t bit);

/* gvl_policy.c: the policy, called by the mechanism with g->mu held except
 * where noted. */
void gvl__pol_reset(gvl_t *g);          /* creation and the fork child */
/* The next owner among the waiters, or NULL.  strict (yield, preemption or
 * timer of an unboosted holder): NULL rather than a waiter the cap holds
 * back. */
gvl_thread_t *gvl__pol_pick(gvl_t *g, uint64_t now, bool strict);
/* After a pick, with the GVL now held at hold_prio: the time by which the
 * timer waiter must look again, because the pick held back a waiter above
 * that hold that may ask once the cap allows it (gvl__pol_tick); 0 if none
 * (the slice's end is then soon enough). */
uint64_t gvl__pol_look_by(gvl_t *g, int hold_prio, uint64_t now);
/* The priority a waiter that asked for prio queues at: normal, with
 * *refused set, for a boost while the cap is exceeded. */
int  gvl__pol_queue_prio(gvl_t *g, int prio, uint64_t now, bool *refused);
/* The priority a holder t at mine yielding to a waiter at theirs requeues
 * at (no higher than theirs). */
int  gvl__pol_requeue_prio(gvl_thread_t *t, int mine, int theirs, uint64_t now);
void gvl__pol_hold_start(gvl_t *g, uint64_t now);   /* a slice starts */
void gvl__pol_charge(gvl_t *g, uint64_t now, uint64_t held); /* a boost */
/* The timer waiter's turn: the time to look again, and in *target the
 * holder to ask to yield (preempt flag set already), if any. */
uint64_t gvl__pol_tick(gvl_t *g, uint64_t now, gvl_thread_t **target);
/* May t's release of kind GVL__HOT_* leave a grant t can take back from
 * w?  And may t, whose slice began at since, take it back at prio? */
bool gvl__pol_hot_ok(gvl_t *g, gvl_thread_t *t, gvl_thread_t *w, uint64_t now,
                     int kind);
bool gvl__pol_take_back_ok(gvl_t *g, gvl_thread_t *w, int prio, int kind,
                           uint64_t since, uint64_t now);
/* gvl_call_without: is t back from a short stretch (any lock, t only)? */
bool gvl__pol_interactive(gvl_thread_t *t, uint64_t now);
/* Is t within a tenth of a slice of its return from a region (t only)? */
bool gvl__pol_short_stretch(gvl_thread_t *t, uint64_t now);

/* gvl_sync.c: take t out of the gvl_mutex/gvl_cond queue q it is in (the
 * GVL held, or the fork child). */
void gvl__wq_leave(gvl__waitq_t *q, gvl_thread_t *t);

/* gvl_misc.c: pass i of a wait for another thread to finish a few
 * instructions (yields, then short sleeps; errno kept) */
void gvl__backoff(int i);

/* gvl_trace.c */
void gvl__trace_event(gvl_t *g, gvl_thread_t *t, gvl_event_t ev, uint64_t now);
void gvl__trace_env(gvl_t *g);     /* GVLOOP_TRACE at creation */
uint64_t gvl__trace_self(void);    /* the calling thread's number (not 0) */
void gvl__trace_fini(gvl_t *g);    /* flush and free at destroy */

/* gvl_thread.c */
/* Each OS thread's identity for handle checks: the address of a
 * thread-local byte.  Cheaper than pthread_self(), which is a call;
 * initial-exec keeps it a single %fs-relative lea in the shared library. */
extern _Thread_local char gvl__self_key
    __attribute__((tls_model("initial-exec")));

static inline int gvl__check_self(gvl_thread_t *t) {
  if (__builtin_expect(!t || !t->g, 0)) return EINVAL;
  if (__builtin_expect(t->self_key != &gvl__self_key, 0)) return EPERM;
  return 0;
}
void gvl__registry_add(gvl_t *g);
int  gvl__destroy(gvl_t *g);

/* Add to one of t's counters.  Only t writes its counters (the one
 * exception, C_BOOSTS_REFUSED, is added atomically in enqueue), so a
 * plain load and store is enough and keeps locked instructions off the
 * handoff path; readers load them relaxed. */
static inline void gvl__ctr_add(gvl_thread_t *t, int c, uint64_t v) {
  uint64_t x = atomic_load_explicit(&t->ctr[c], memory_order_relaxed);
  atomic_store_explicit(&t->ctr[c], x + v, memory_order_relaxed);
}

/* Count an acquisition, before anything that qualifies it (a boost, a
 * handoff, a wait, a retake): the fence orders this count before those, and
 * the readers (ctr_read, gvl_misc.c) read it after them, so no snapshot
 * shows more boosts than acquisitions.  The fence is free on x86. */
static inline void gvl__ctr_acquired(gvl_thread_t *t) {
  gvl__ctr_add(t, C_ACQUIRES, 1);
  atomic_thread_fence(memory_order_release);
}

/* A counter as reported: C_PREEMPT_REQS lives beside ints. */
static inline uint64_t gvl__ctr_get(gvl_thread_t *t, int c) {
  return atomic_load_explicit(c == C_PREEMPT_REQS ? &t->preempt_reqs : &t->ctr[c],
                              memory_order_relaxed);
}

/* A hold at prio, by an acquire that asked for req, is boosted: charged
 * to the cap, and held back by it. */
static inline bool gvl__boosted(int prio, int req) { return prio > 0 || req > 0; }

static inline gvl_thread_t *gvl__owner(uintptr_t w) {
  return (gvl_thread_t *)(w & ~GVL__CONTENDED);
}

#endif /* GVL_INT_H */

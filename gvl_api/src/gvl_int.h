/*
 * gvl_int.h -- private state of libgvl.
 *
 * Locking, in the order they may nest:
 *   gvl__registry_mu  process-wide list of GVLs (for fork) -- gvl_thread.c
 *   g->mu             wait queue, timer role, cap window, thread list
 *   t->ilock          t's blocking-region state (ubf), never held with g->mu
 * The lock word g->word is atomic and is touched without g->mu only by
 * the fast paths (CAS 0 -> t, CAS t -> 0).
 */
#ifndef GVL_INT_H
#define GVL_INT_H

#include "gvl.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#if defined(GVL_DEBUG) && GVL_DEBUG
#include <assert.h>
#define gvl__assert(x) assert(x)
#else
#define gvl__assert(x) ((void)0)
#endif

#define GVL__CONTENDED ((uintptr_t)1)   /* lock-word bit: queue may be non-empty */
#define GVL__DEF_SLICE_NS   (10u * 1000000u)
#define GVL__DEF_CAP_PCT    50u
#define GVL__DEF_WINDOW_NS  (100u * 1000000u)
#define GVL__DEF_AGE_NS     (100u * 1000000u)
#define GVL__DEF_SPIN_NS    (50u * 1000u)
#define GVL__DEF_HOLD_SHARE 90u
#define GVL__IA_COST_FLOOR_NS 1000   /* see note_ia_cost                   */
#define GVL__GRANT_BUSY 2u           /* granted, the giver still waking it  */
#define GVL__CAP_BUCKETS    8
/* Interactivity policy: a thread back from a blocking region that held the
 * GVL for less than this share of its recent time is served ahead. */
#define GVL__IA_BLOCK_MAX_NS (5u * 1000000u)   /* "short" blocking region   */

/* Per-GVL and per-thread counters; indices match gvl_stats_t order. */
enum {
  C_ACQUIRES, C_CONTENDED, C_HANDOFFS, C_YIELDS, C_PREEMPT_REQS,
  C_PREEMPTIONS, C_BOOSTS, C_BOOSTS_REFUSED, C_INTERACTIVE, C_OWNER_DIED,
  C_WAIT_NS, C_HOLD_NS, C__COUNT
};

/* Platform parking: each thread sleeps on its own word (futex on Linux). */
typedef struct {
  _Atomic uint32_t seq;   /* bumped by every wake                          */
  _Atomic uint32_t sleepers; /* 1 while the owner may be in the kernel     */
#ifndef GVL__PARK_FUTEX
  pthread_mutex_t mu;     /* portable fallback only                        */
  pthread_cond_t cv;
#endif
} gvl__park_t;

int  gvl__park_init(gvl__park_t *p);
void gvl__park_fini(gvl__park_t *p);
/* Sleep while p->seq == seq, at most until deadline_ns (0: no deadline).
 * With done non-NULL, do not sleep if *done is already non-zero once the
 * sleep is announced: that is what lets gvl__park_wake_done skip the wake
 * of a waiter that is still spinning. */
void gvl__park_wait(gvl__park_t *p, uint32_t seq, uint64_t deadline_ns,
                    const _Atomic uint32_t *done);
void gvl__park_wake(gvl__park_t *p);
/* Wake after the caller has set *done (the word the sleeper passed to
 * gvl__park_wait) with a seq_cst store.  A waiter not yet announced as
 * sleeping is left alone: it will see *done by itself. */
void gvl__park_wake_done(gvl__park_t *p);
void gvl__park_after_fork(gvl__park_t *p);

/* Padding between groups of fields written by different threads, so that
 * a handoff moves few cache lines between CPUs (see ARCHITECTURE.md,
 * "Cost of a handoff").  The struct is only 16-byte aligned (calloc), so a
 * full line of padding is what guarantees two groups never share one. */
#define GVL__LINE 64
#define GVL__PAD(n) char pad_##n[GVL__LINE]

struct gvl_thread_s {
  /* Read by the owner at every safe point; others only post an
   * interrupt (ints). */
  struct gvl__thread_head head; /* ints: must stay first (gvl_check_ints) */
  _Atomic uint64_t preempt_reqs; /* C_PREEMPT_REQS, kept beside ints: whoever
                                   sets PREEMPT counts it on the same line */
  gvl_thread_t *_Atomic succ;   /* the waiter that asked (under g->mu) to be
                                   handed the GVL directly at the next safe
                                   point; cleared by every handoff t makes  */
  gvl_t *g;                     /* dangling once orphan is set             */
  pthread_t tid;                /* owning OS thread                        */
  const char *self_key;         /* &gvl__self_key of that thread           */
  int prio;                     /* base priority; owner thread only        */
  int req_prio;                 /* priority asked for by the current hold  */
  _Atomic int holding;          /* 1 while t owns the GVL                  */
  int boosted;                  /* current hold is charged to the cap: it
                                   asked for, or got, a priority above 0    */
  int interactive_off;          /* owner thread only                       */
  uint64_t hold_t0;             /* start of the current hold, 0 = unknown  */
  uint64_t charge_t0;           /* start of its charge to the boost cap    */
  uint64_t last_wait_ns;        /* length of the last wait for the GVL     */
  GVL__PAD(0);

  /* Wait queue node; all guarded by g->mu, written by whoever holds it. */
  _Atomic int hold_prio;        /* prio of the current hold: set by t or by
                                   the handoff, read by waiters under g->mu */
  gvl_thread_t *qnext, *qprev;
  int qprio;                    /* priority the thread queued with         */
  uint64_t qtime;               /* when it queued (for aging)              */
  bool queued;
  bool deferred;                /* refused by the boost cap while queued   */
  _Atomic bool spin_hint;       /* a quick handoff is expected; set under
                                   g->mu, read by the waiter without it     */
  bool qia;                     /* queued by the interactivity policy      */
  int cpu;                      /* CPU it queued on, -1 unknown            */
  uint64_t forced_at;           /* when it asked the holder to yield, 0 if
                                   it did not (the cap charges from there)  */
  _Atomic uint64_t preempt_at;  /* ask the holder to yield at this time
                                   (its hold share), 0 = nothing pending;
                                   written under g->mu, read by t           */
  _Atomic int is_timer;         /* this waiter times the holder's slice    */
  GVL__PAD(1);

  /* What a waiter spins or sleeps on: written once per handoff. */
  _Atomic uint32_t granted;     /* set by the releaser, under g->mu        */
  bool lent_back;               /* that handoff was an interactive borrower
                                   giving the GVL straight back; g->mu     */
  gvl_thread_t *direct_from;    /* a direct handoff's giver, for t to queue
                                   on its behalf (set before granted)       */
  uint64_t direct_at;           /* when it handed over                     */
  int direct_prio;              /* the priority it held at                 */
  gvl__park_t park;
  GVL__PAD(2);

  /* Blocking region; guarded by ilock. */
  pthread_mutex_t ilock;
  void (*ubf)(void *);
  void *ubf_arg;
  bool in_region;

  /* gvl_mutex/gvl_cond wait node; guarded by the GVL. */
  gvl_thread_t *mnext, *mprev;
  _Atomic int cstate;           /* GVL__CW_*                                */
  gvl_cond_t *cwait;            /* condition waited on, if linked          */
  gvl_mutex_t *cmutex;          /* its mutex, retaken when signalled       */

  /* Registry. */
  gvl_thread_t *gnext, *gprev;  /* g's attached threads; g->mu            */
  gvl_thread_t *tls_next;       /* this OS thread's attachments; own thread */
  bool foreign;                 /* cached by gvl_call_with                 */
  _Atomic bool orphan;          /* its GVL was destroyed; free on sight    */
  int call_depth;               /* gvl_call_with nesting; own thread       */
  GVL__PAD(3);

  /* Mostly written by t itself; others add to a few under g->mu. */
  _Atomic uint64_t ctr[C__COUNT];
};

enum { GVL__CW_NONE, GVL__CW_WAITING, GVL__CW_SIGNALED, GVL__CW_TIMEDOUT };

struct gvl_s {
  /* Written at every handoff, under mu (word also by the fast paths). */
  _Atomic uintptr_t word;       /* 0 free, else owner | GVL__CONTENDED     */
  pthread_mutex_t mu;
  gvl_thread_t *qhead, *qtail;  /* waiters in arrival order; mu            */
  gvl_thread_t *timer;          /* waiter timing the slice; mu             */
  uint64_t hold_since;          /* slice start of the current holder; mu
                                   (set when a waiter first appears or at
                                   handoff)                               */
  bool preempt_sent;            /* preempt already requested for this hold */
  _Atomic int owner_cpu;        /* CPU the holder got the GVL on, -1 unknown */
  uint64_t run_since;           /* when run_owner last got the GVL by a
                                   handoff; older if it since took it free */
  gvl_thread_t *run_owner;      /* mu                                      */
  gvl_thread_t *lender;         /* preempted by borrower, an interactive   */
  gvl_thread_t *borrower;       /*  thread, which gives the GVL back; mu   */
  uint64_t lender_since;        /* lender's slice start                    */
  GVL__PAD(0);

  /* Read on every wait; written only by the setters. */
  _Atomic uint64_t slice_ns;
  _Atomic unsigned cap_pct;
  uint64_t window_ns, age_ns, spin_ns;
  unsigned flags;
  _Atomic(gvl_hook_cb) hook;
  void *_Atomic hook_arg;
  void *_Atomic trace;          /* tracer state when tracing, else NULL    */
  uint64_t uid;                 /* never reused, to tell GVLs apart        */
  _Atomic unsigned hold_share;  /* hold_share_pct                          */
  GVL__PAD(1);

  /* What an interactive preemption costs the preempted holder (its time
   * from safe point to resuming), a moving average kept by the preempted
   * threads themselves; a hint, so plain loads and stores. */
  _Atomic uint64_t ia_cost_ns;
  GVL__PAD(2);

  uint64_t cap_bucket[GVL__CAP_BUCKETS]; /* boosted ns per bucket; mu      */
  uint64_t cap_epoch[GVL__CAP_BUCKETS];  /* bucket's window index; mu      */
  gvl_thread_t *threads;        /* attached threads; mu                    */
  int nthreads;                 /* explicit (non-foreign) attached; mu     */
  _Atomic int in_call;          /* gvl_call_with calls in progress         */
  uint64_t retired[C__COUNT];   /* counters of detached threads; mu       */
  gvl_t *rnext, *rprev;         /* registry; gvl__registry_mu              */
};

/* g->mu.  Its critical sections are a few dozen instructions, and the
 * thread that waits for it is usually the one just handed the GVL: an
 * adaptive mutex spins a moment instead of going to sleep in the kernel.
 * gvl_misc.c */
int gvl__mu_init(pthread_mutex_t *mu);

/* gvl.c */
uint64_t gvl__now(void);
void gvl__hook(gvl_t *g, gvl_thread_t *t, gvl_event_t ev);
int  gvl__acquire(gvl_thread_t *t, int prio, bool interactive);
int  gvl__release(gvl_thread_t *t);
void gvl__force_release(gvl_thread_t *t);
void gvl__enqueue_other(gvl_t *g, gvl_thread_t *t, int prio);
void gvl__wait_granted(gvl_t *g, gvl_thread_t *t);
void gvl__drop_for_wait(gvl_thread_t *t);
bool gvl__wait_granted_until(gvl_t *g, gvl_thread_t *t, uint64_t deadline);
void gvl__after_acquire(gvl_thread_t *t, uint64_t wait_t0);

/* gvl_trace.c */
void gvl__trace_event(gvl_t *g, gvl_thread_t *t, gvl_event_t ev, uint64_t now);
void gvl__trace_env(gvl_t *g);     /* GVLOOP_TRACE at creation */
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

static inline void gvl__ctr_add(gvl_thread_t *t, int c, uint64_t v) {
  atomic_fetch_add_explicit(&t->ctr[c], v, memory_order_relaxed);
}

/* A counter as reported: C_PREEMPT_REQS lives beside ints. */
static inline uint64_t gvl__ctr_get(gvl_thread_t *t, int c) {
  return atomic_load_explicit(c == C_PREEMPT_REQS ? &t->preempt_reqs : &t->ctr[c],
                              memory_order_relaxed);
}

static inline gvl_thread_t *gvl__owner(uintptr_t w) {
  return (gvl_thread_t *)(w & ~GVL__CONTENDED);
}

#endif /* GVL_INT_H */

/*
 * gvl.c -- the lock: fast paths, the wait queue, handoff, preemption,
 * the boost cap and the interactivity policy.
 *
 * The lock word holds the owner's handle, or 0 when free.  Its low bit,
 * GVL__CONTENDED, is set while the wait queue is non-empty; it is only ever
 * set or cleared under g->mu.  So:
 *   - acquire with nobody around is one CAS 0 -> t;
 *   - release with nobody waiting is one CAS t -> 0, which fails as soon as
 *     a waiter has set the bit, sending the releaser to the slow path;
 *   - the word is never 0 while someone waits, because release hands the
 *     word straight to the chosen waiter.  That is why nobody can barge:
 *     a newcomer's CAS 0 -> t cannot succeed while the queue is non-empty.
 */
#include "gvl_int.h"

#include <sched.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

uint64_t gvl__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Instrumentation: the tracer (gvl_trace.c) and the user's hook.  With
 * both off this is two plain loads and a branch. */
void gvl__hook(gvl_t *g, gvl_thread_t *t, gvl_event_t ev) {
  gvl_hook_cb cb = atomic_load_explicit(&g->hook, memory_order_acquire);
  void *tr = atomic_load_explicit(&g->trace, memory_order_acquire);
  if (!cb && !tr) return;
  uint64_t now = gvl__now();
  if (tr) gvl__trace_event(g, t, ev, now);
  if (cb) cb(atomic_load_explicit(&g->hook_arg, memory_order_relaxed), t, ev, now);
}

static void set_ints(gvl_thread_t *t, uint32_t bit) {
  __atomic_fetch_or(&t->head.ints, bit, __ATOMIC_RELEASE);
}

static void clear_ints(gvl_thread_t *t, uint32_t bit) {
  __atomic_fetch_and(&t->head.ints, ~bit, __ATOMIC_RELAXED);
}

static void ctr_own_inc(gvl_thread_t *t, int c) {
  /* Only t itself writes this counter: a plain load/store pair is enough
   * and keeps a locked instruction off the fast path. */
  uint64_t v = atomic_load_explicit(&t->ctr[c], memory_order_relaxed);
  atomic_store_explicit(&t->ctr[c], v + 1, memory_order_relaxed);
}

/* A hint for spinning waiters.  Store only on change: a load leaves the
 * line shared, a store would pull it away from every spinner. */
static inline void set_owner_cpu(gvl_t *g, int cpu) {
  if (atomic_load_explicit(&g->owner_cpu, memory_order_relaxed) != cpu)
    atomic_store_explicit(&g->owner_cpu, cpu, memory_order_relaxed);
}

/* ---- boost cap: a ring of buckets over the sliding window --------------- */

static uint64_t cap_width(const gvl_t *g) {
  return g->window_ns / GVL__CAP_BUCKETS;
}

static void cap_add(gvl_t *g, uint64_t now, uint64_t ns) {
  uint64_t cur = now / cap_width(g);
  int i = (int)(cur % GVL__CAP_BUCKETS);
  if (g->cap_epoch[i] != cur) {
    g->cap_epoch[i] = cur;
    g->cap_bucket[i] = 0;
  }
  g->cap_bucket[i] += ns;
}

static bool cap_exceeded(gvl_t *g, uint64_t now) {
  uint64_t cur = now / cap_width(g), used = 0;
  for (int i = 0; i < GVL__CAP_BUCKETS; i++)
    if (g->cap_epoch[i] + GVL__CAP_BUCKETS > cur) used += g->cap_bucket[i];
  unsigned pct = atomic_load_explicit(&g->cap_pct, memory_order_relaxed);
  return used * 100 >= (uint64_t)pct * g->window_ns;
}

/* ---- the wait queue (g->mu held) ------------------------------------------ */

static void q_remove(gvl_t *g, gvl_thread_t *t) {
  if (t->qprev) t->qprev->qnext = t->qnext; else g->qhead = t->qnext;
  if (t->qnext) t->qnext->qprev = t->qprev; else g->qtail = t->qprev;
  t->qnext = t->qprev = NULL;
  t->queued = false;
}

static int64_t eff_prio(const gvl_t *g, const gvl_thread_t *t, uint64_t now) {
  uint64_t waited = now > t->qtime ? now - t->qtime : 0;
  uint64_t bonus = waited / g->age_ns;
  if (bonus > 2 * GVL_PRIO_MAX) bonus = 2 * GVL_PRIO_MAX;
  return (int64_t)t->qprio + (int64_t)bonus;
}

/* The next owner: highest effective priority, the earliest arrival among
 * equals (the queue is in arrival order, so strict '>' keeps FIFO).
 * Waiters deferred by the boost cap are passed over while the cap is still
 * exceeded; with strict, nobody else qualifies either, and the result is
 * NULL (used for preemption and yield: the holder keeps the GVL rather than
 * feed the flood).  Releases use strict = false: a free GVL goes to whoever
 * waits.  O(waiters); a GVL has few. */
static gvl_thread_t *q_best(gvl_t *g, uint64_t now, bool strict) {
  gvl_thread_t *best = NULL, *any = NULL;
  int64_t bp = 0, ap = 0;
  int capx = -1;                 /* cap_exceeded, computed on first need */
  for (gvl_thread_t *w = g->qhead; w; w = w->qnext) {
    int64_t p = eff_prio(g, w, now);
    if (!any || p > ap) any = w, ap = p;
    if (w->deferred) {
      if (capx < 0) capx = cap_exceeded(g, now);
      if (capx) continue;
    }
    if (!best || p > bp) best = w, bp = p;
  }
  return best ? best : strict ? NULL : any;
}

/* How long a holder may run, since it got the GVL, before an interactive
 * waiter preempts it: share/(100-share) times what such a preemption costs
 * it (0 until a cost has been measured), and never more than a tenth of a
 * slice, so that the policy always serves an I/O thread well ahead of the
 * slice it would wait without it. */
static uint64_t ia_min_run(gvl_t *g) {
  uint64_t cost = atomic_load_explicit(&g->ia_cost_ns, memory_order_relaxed);
  unsigned share = atomic_load_explicit(&g->hold_share, memory_order_relaxed);
  uint64_t run = cost * share / (100 - share);
  uint64_t cap = atomic_load_explicit(&g->slice_ns, memory_order_relaxed) / 10;
  return run < cap ? run : cap;
}

/* When an interactive waiter may ask owner to yield: once owner has had
 * its share since it got the GVL by handoff; 0 (at once) if it took it
 * free, since how long it has run is then unknown (g->mu held). */
static uint64_t ia_due(gvl_t *g, gvl_thread_t *owner) {
  return g->run_owner == owner ? g->run_since + ia_min_run(g) : 0;
}

/* The priority a holder that gives way to a waiter of priority theirs
 * queues at: no higher than that waiter's, so the handoff does not bounce
 * straight back. */
static int yield_prio(int mine, int theirs) {
  return mine < theirs ? mine : theirs;
}

/* w starts a hold it got by handoff at now: its slice and its run for the
 * hold share count from here, and any borrow is over (g->mu held). */
static void start_handed_hold(gvl_t *g, gvl_thread_t *w, uint64_t now) {
  g->lender = g->borrower = NULL;
  g->hold_since = g->run_since = now;
  g->run_owner = w;
  g->preempt_sent = false;
  set_owner_cpu(g, w->cpu);  /* where it queued: a hint for spinners */
}

/* borrower, an interactive thread, preempted lender: the GVL goes back to
 * lender at borrower's release, and lender's slice, begun at slice_t0,
 * goes on (give_back_or_handoff; g->mu held). */
static void note_borrow(gvl_t *g, gvl_thread_t *lender, gvl_thread_t *borrower,
                        uint64_t slice_t0) {
  g->lender = lender;
  g->borrower = borrower;
  g->lender_since = slice_t0;
}

/* Ask owner to give the GVL up at its next safe point (g->mu held). */
static void request_preempt(gvl_thread_t *owner) {
  set_ints(owner, GVL__INT_PREEMPT);
  atomic_fetch_add_explicit(&owner->preempt_reqs, 1, memory_order_relaxed);
}

/* Waiter t asks the holder to yield (g->mu held).  If t is the one the
 * holder would pick, it also names itself the holder's successor: the
 * holder then hands over without g->mu (direct_hand_over), and t does the
 * queue bookkeeping on its own time (finish_direct).
 *
 * A successor must never outlive the owner's hold: the owner may be handing
 * over directly right now, without g->mu.  Both sides store, then load the
 * other's word, all seq_cst: the owner stores the new word, then clears
 * succ; we store succ, then reload the word.  Either it clears ours, or we
 * see that it no longer owns and take ours back.  (Our preempt request may
 * then land on a thread that no longer holds: it costs one early yield
 * when it holds again, and the new owner re-checks who waits.) */
static void ask_holder(gvl_t *g, gvl_thread_t *t, gvl_thread_t *owner,
                       uint64_t now) {
  gvl_thread_t *none = NULL, *mine = t;
  if (q_best(g, now, true) == t &&
      atomic_compare_exchange_strong(&owner->succ, &none, t) &&
      gvl__owner(atomic_load(&g->word)) != owner)
    atomic_compare_exchange_strong(&owner->succ, &mine, NULL);
  request_preempt(owner);
  t->forced_at = now;
}

/* Queue t (which may be another thread, blocked in a gvl_mutex) behind the
 * current holder.  The caller has set GVL__CONTENDED.  Returns the holder
 * if t outranks it and so asked it to give up the GVL now.  An interactive
 * waiter (ia) that comes before the holder has had its share only notes
 * when to ask (t->preempt_at): see wait_preempt_due. */
static gvl_thread_t *enqueue(gvl_t *g, gvl_thread_t *t, int prio, bool ia,
                             uint64_t now) {
  gvl_thread_t *owner =
      gvl__owner(atomic_load_explicit(&g->word, memory_order_relaxed));
  gvl_thread_t *target = NULL;
  t->qprio = prio;
  t->qtime = now;
  t->queued = true;
  t->deferred = false;
  t->qia = ia;
  t->forced_at = 0;
  t->cpu = pthread_equal(t->tid, pthread_self()) ? sched_getcpu() : -1;
  atomic_store_explicit(&t->preempt_at, 0, memory_order_relaxed);
  t->qnext = NULL;
  t->qprev = g->qtail;
  if (g->qtail) g->qtail->qnext = t; else g->qhead = t;
  g->qtail = t;
  atomic_store_explicit(&t->spin_hint, false, memory_order_relaxed);
  if (owner && owner != t &&
      prio > atomic_load_explicit(&owner->hold_prio, memory_order_relaxed)) {
    uint64_t due = ia ? ia_due(g, owner) : 0;
    atomic_store_explicit(&t->spin_hint, true, memory_order_relaxed);
    if (due > now) {
      atomic_store_explicit(&t->preempt_at, due, memory_order_relaxed);
    } else {
      ask_holder(g, t, owner, now);
      target = owner;
    }
  }
  if (!g->timer) {
    g->timer = t;
    atomic_store_explicit(&t->is_timer, 1, memory_order_relaxed);
    if (!pthread_equal(t->tid, pthread_self())) gvl__park_wake(&t->park);
  }
  return target;
}

/* Give the GVL to w (queued), under g->mu.  back: w is the lender an
 * interactive borrower gives the GVL back to (give_back_or_handoff). */
static void handoff_to(gvl_t *g, gvl_thread_t *w, uint64_t now, bool back) {
  gvl__assert(w->queued && !atomic_load(&w->granted));
  bool others = g->qhead != w || w->qnext;
  /* A successor the giver was asked for is served by this handoff or
   * queued on: either way the request is spent. */
  gvl_thread_t *giver =
      gvl__owner(atomic_load_explicit(&g->word, memory_order_relaxed));
  if (giver) atomic_store_explicit(&giver->succ, NULL, memory_order_relaxed);
  w->lent_back = back;
  atomic_store_explicit(&w->hold_prio, w->qprio, memory_order_relaxed);
  atomic_store_explicit(&g->word,
                        (uintptr_t)w | (others ? GVL__CONTENDED : 0),
                        memory_order_release);
  q_remove(g, w);
  start_handed_hold(g, w, now);
  if (g->timer == w) {
    /* The timer role moves to another waiter, woken to arm its clock. */
    atomic_store_explicit(&w->is_timer, 0, memory_order_relaxed);
    g->timer = g->qhead;
    if (g->timer) {
      atomic_store_explicit(&g->timer->is_timer, 1, memory_order_relaxed);
      gvl__park_wake(&g->timer->park);
    }
  }
  atomic_store(&w->granted, 1);        /* seq_cst: see gvl__park_wake_done */
  gvl__park_wake_done(&w->park);
}

static void handoff(gvl_t *g, gvl_thread_t *w, uint64_t now) {
  handoff_to(g, w, now, false);
}

/* ---- waiting ---------------------------------------------------------------- */

/* The timer waiter's clock: request preemption once the holder is past its
 * slice.  Returns the next deadline to sleep until. */
static uint64_t timer_tick(gvl_t *g, gvl_thread_t *t) {
  gvl_thread_t *target = NULL;
  uint64_t deadline = 0, now, slice;
  pthread_mutex_lock(&g->mu);
  if (g->timer == t && !atomic_load_explicit(&t->granted, memory_order_relaxed)) {
    now = gvl__now();
    slice = atomic_load_explicit(&g->slice_ns, memory_order_relaxed);
    if (now >= g->hold_since + slice && !q_best(g, now, true)) {
      /* Only cap-deferred waiters: the holder keeps the GVL until the
       * window has drained a bucket. */
      deadline = now + cap_width(g);
    } else if (now >= g->hold_since + slice) {
      if (!g->preempt_sent) {
        target = gvl__owner(atomic_load_explicit(&g->word, memory_order_relaxed));
        if (target) request_preempt(target);
        g->preempt_sent = true;
      }
      /* Look again a slice later in case the holder sits in native code
       * without safe points; this runs only while someone waits. */
      deadline = now + slice;
    } else {
      deadline = g->hold_since + slice;
    }
  }
  pthread_mutex_unlock(&g->mu);
  if (target) gvl__hook(g, target, GVL_EV_PREEMPT_REQ);
  return deadline;
}

/* t's preempt_at has come: ask the holder now, unless the GVL has meanwhile
 * gone to a holder that has not had its own share yet, or that t does not
 * outrank. */
static void wait_preempt_due(gvl_t *g, gvl_thread_t *t) {
  gvl_thread_t *target = NULL;
  pthread_mutex_lock(&g->mu);
  uint64_t now = gvl__now(), due = 0;
  gvl_thread_t *owner =
      gvl__owner(atomic_load_explicit(&g->word, memory_order_relaxed));
  if (t->queued && !atomic_load_explicit(&t->granted, memory_order_relaxed) &&
      owner && owner != t &&
      t->qprio > atomic_load_explicit(&owner->hold_prio, memory_order_relaxed)) {
    due = ia_due(g, owner);
    if (due <= now) {
      ask_holder(g, t, owner, now);
      target = owner;
      due = 0;
    }
  }
  atomic_store_explicit(&t->preempt_at, due, memory_order_relaxed);
  pthread_mutex_unlock(&g->mu);
  if (target) gvl__hook(g, target, GVL_EV_PREEMPT_REQ);
}

static bool preempt_due(gvl_thread_t *t, uint64_t now) {
  uint64_t at = atomic_load_explicit(&t->preempt_at, memory_order_relaxed);
  return at && now >= at;
}

/* Spin for a grant that should come within microseconds.  A round also
 * yields the CPU when the holder may be queued on this very CPU (the
 * machine is oversubscribed): a pure spin would keep it from reaching its
 * safe point. */
static bool spin_for_grant(gvl_t *g, gvl_thread_t *t) {
  uint64_t start = gvl__now(), end = start + g->spin_ns;
  for (;;) {
    for (int i = 0; i < 64; i++) {
      if (atomic_load_explicit(&t->granted, memory_order_acquire)) return true;
      cpu_relax();
    }
    uint64_t now = gvl__now();
    if (preempt_due(t, now)) wait_preempt_due(g, t);
    if (now >= end) return false;
    /* On the holder's CPU, the holder is most likely the thread this one
     * displaced (a wake-up lands where it likes): give the CPU back at
     * once.  With the holder's CPU unknown, yield after a short spin. */
    int cpu = atomic_load_explicit(&g->owner_cpu, memory_order_relaxed);
    if (cpu == sched_getcpu() || (cpu < 0 && now - start > 2000)) sched_yield();
  }
}

/* Seen a grant: wait out a direct handoff's wake-up (direct_hand_over). */
static bool settle_grant(gvl_thread_t *t) {
  while (atomic_load_explicit(&t->granted, memory_order_acquire) == GVL__GRANT_BUSY)
    cpu_relax();
  return true;
}

/* Sleep until the GVL has been handed to t, or until user_deadline (0 for
 * none).  Returns true when granted. */
bool gvl__wait_granted_until(gvl_t *g, gvl_thread_t *t,
                               uint64_t user_deadline) {
  /* Spin when a quick handoff is expected: asked for by a boost, or this
   * thread's last wait was itself short (ping-pong, Thread.pass loops).
   * A thread that waited a whole slice last time goes straight to sleep. */
  bool hint = atomic_load_explicit(&t->spin_hint, memory_order_relaxed);
  bool spin = g->spin_ns && (hint || t->last_wait_ns <= g->spin_ns);
  for (;;) {
    if (spin && spin_for_grant(g, t)) return settle_grant(t);
    spin = false;
    uint32_t seq = atomic_load_explicit(&t->park.seq, memory_order_acquire);
    if (atomic_load_explicit(&t->granted, memory_order_acquire)) return settle_grant(t);
    uint64_t deadline = 0, at;
    if (atomic_load_explicit(&t->is_timer, memory_order_relaxed))
      deadline = timer_tick(g, t);
    if ((at = atomic_load_explicit(&t->preempt_at, memory_order_relaxed))) {
      if (gvl__now() >= at) {
        /* Asked the holder to yield: the handoff is near, spin again. */
        wait_preempt_due(g, t);
        spin = g->spin_ns != 0;
        continue;
      }
      if (!deadline || at < deadline) deadline = at;
    }
    if (user_deadline) {
      if (gvl__now() >= user_deadline) return false;
      if (!deadline || user_deadline < deadline) deadline = user_deadline;
    }
    gvl__park_wait(&t->park, seq, deadline, &t->granted);
  }
}

void gvl__wait_granted(gvl_t *g, gvl_thread_t *t) {
  (void)gvl__wait_granted_until(g, t, 0);
}

/* ---- acquire ------------------------------------------------------------- */

/* t was handed the GVL directly by h (direct_hand_over): do, under g->mu,
 * what handoff and hand_over would have done -- leave the queue, queue h
 * behind, start the new hold's clocks, move the timer role, note the
 * borrow -- while h waits and nobody else can hand the GVL on. */
static void finish_direct(gvl_thread_t *t, gvl_thread_t *h) {
  gvl_t *g = t->g;
  uint64_t at = t->direct_at;
  pthread_mutex_lock(&g->mu);
  uint64_t slice_t0 = g->hold_since;
  q_remove(g, t);
  start_handed_hold(g, t, at);
  if (g->timer == t) {   /* enqueue(h) below takes the role if nobody has it */
    atomic_store_explicit(&t->is_timer, 0, memory_order_relaxed);
    g->timer = NULL;
  }
  int prio = yield_prio(t->direct_prio, t->qprio);
  bool refused = prio > 0 && cap_exceeded(g, at);
  if (refused) prio = GVL_PRIO_NORMAL;
  (void)enqueue(g, h, prio, false, at);  /* cannot outrank t */
  h->deferred = refused;
  atomic_store_explicit(&h->spin_hint, true, memory_order_relaxed);
  if (t->qia) note_borrow(g, h, t, slice_t0);
  /* Someone more urgent queued since t asked: t yields at its next safe
   * point, as the holder it displaced would have. */
  gvl_thread_t *b = q_best(g, gvl__now(), true);
  if (b && b->qprio > atomic_load_explicit(&t->hold_prio, memory_order_relaxed))
    request_preempt(t);
  pthread_mutex_unlock(&g->mu);
}

void gvl__after_acquire(gvl_thread_t *t, uint64_t wait_t0) {
  if (t->direct_from) {
    gvl_thread_t *h = t->direct_from;
    t->direct_from = NULL;
    finish_direct(t, h);
  }
  uint64_t now = gvl__now();
  gvl__assert(gvl__owner(atomic_load(&t->g->word)) == t);
  gvl__assert(!atomic_load_explicit(&t->holding, memory_order_relaxed));
  atomic_store_explicit(&t->holding, 1, memory_order_relaxed);
  t->hold_t0 = now;
  atomic_store_explicit(&t->preempt_at, 0, memory_order_relaxed);
  /* A hold that asked for a boost is charged to the cap even when the cap
   * refused it: otherwise a flood would get its refused holds for free.
   * A boost that preempted the holder is charged from when it asked: the
   * handoffs it forced (the holder stopped, two threads woken) are its
   * cost, not the holder's.  Other waits are not charged, nor the part of
   * an interactive wait spent letting the holder have its share. */
  int held_at = atomic_load_explicit(&t->hold_prio, memory_order_relaxed);
  bool forced = held_at > 0 && t->forced_at && !t->deferred;
  t->boosted = held_at > 0 || t->req_prio > 0;
  t->charge_t0 = forced ? t->forced_at : now;
  ctr_own_inc(t, C_ACQUIRES);
  ctr_own_inc(t, C_HANDOFFS);  /* every wait ends in a handoff */
  gvl__ctr_add(t, C_CONTENDED, 1);
  gvl__ctr_add(t, C_WAIT_NS, now - wait_t0);
  t->last_wait_ns = now - wait_t0;
  if (held_at > 0) gvl__ctr_add(t, C_BOOSTS, 1);
  gvl__hook(t->g, t, GVL_EV_RESUMED);
}

/* t took the GVL while it was free: start the hold.  t0 is its start, or
 * 0 when nothing needs it timed. */
static void start_free_hold(gvl_t *g, gvl_thread_t *t, int prio, bool ia,
                            uint64_t t0) {
  atomic_store_explicit(&t->holding, 1, memory_order_relaxed);
  set_owner_cpu(g, -1);
  t->boosted = prio > 0;
  t->hold_t0 = t->charge_t0 = t0;
  ctr_own_inc(t, C_ACQUIRES);
  if (t->boosted) gvl__ctr_add(t, C_BOOSTS, 1);
  if (ia) gvl__ctr_add(t, C_INTERACTIVE, 1);
  gvl__hook(g, t, GVL_EV_RESUMED);
}

static int acquire_slow(gvl_t *g, gvl_thread_t *t, int prio, bool ia) {
  uint64_t t0 = gvl__now();
  gvl_thread_t *target;
  pthread_mutex_lock(&g->mu);
  /* One fetch_or, not a CAS loop: the bit goes in whatever the word holds,
   * so a stream of uncontended acquire/release pairs on other threads
   * cannot make this thread retry forever (the entry is wait-free). */
  uintptr_t w = atomic_fetch_or_explicit(&g->word, GVL__CONTENDED,
                                         memory_order_acq_rel);
  if (w == 0) {
    /* The GVL was free, so the queue is empty.  The word read CONTENDED
     * alone for a moment, which sent fast-path callers here, to wait for
     * mu; now it names us. */
    atomic_store_explicit(&g->word, (uintptr_t)t, memory_order_release);
    pthread_mutex_unlock(&g->mu);
    start_free_hold(g, t, prio, ia, t0);
    return 0;
  }
  if (!(w & GVL__CONTENDED)) {
    g->hold_since = t0;        /* the holder's slice counts from now */
    g->preempt_sent = false;
  }
  bool refused = prio > 0 && cap_exceeded(g, t0);
  if (refused) {
    prio = GVL_PRIO_NORMAL;
    gvl__ctr_add(t, C_BOOSTS_REFUSED, 1);
    ia = false;
  }
  if (ia) gvl__ctr_add(t, C_INTERACTIVE, 1);
  atomic_store_explicit(&t->granted, 0, memory_order_relaxed);
  target = enqueue(g, t, prio, ia, t0);
  t->deferred = refused;
  pthread_mutex_unlock(&g->mu);
  gvl__hook(g, t, GVL_EV_READY);
  if (target) gvl__hook(g, target, GVL_EV_PREEMPT_REQ);
  gvl__wait_granted(g, t);
  gvl__after_acquire(t, t0);
  return 0;
}

int gvl__acquire(gvl_thread_t *t, int prio, bool ia) {
  gvl_t *g = t->g;
  uintptr_t exp = 0;
  if (atomic_load_explicit(&t->holding, memory_order_relaxed)) return EDEADLK;
  t->req_prio = prio;
  if (ia && prio < 1) prio = 1; /* interactive: a boost of one level */
  else ia = false;
  atomic_store_explicit(&t->hold_prio, prio, memory_order_relaxed);
  if (atomic_compare_exchange_strong_explicit(&g->word, &exp, (uintptr_t)t,
          memory_order_acq_rel, memory_order_relaxed)) {
    /* Hold time needs a clock read; pay it only where it is used. */
    start_free_hold(g, t, prio, ia,
                    (prio > 0 || (g->flags & GVL_F_TIMING)) ? gvl__now() : 0);
    return 0;
  }
  return acquire_slow(g, t, prio, ia);
}

static inline bool instrumented(gvl_t *g) {
  return atomic_load_explicit(&g->hook, memory_order_relaxed) ||
         atomic_load_explicit(&g->trace, memory_order_relaxed) ||
         (g->flags & GVL_F_TIMING);
}

/* The uncontended path, kept lean because it is what a single-threaded
 * interpreter pays on every blocking call: checks, one CAS, a few stores. */
int gvl_acquire(gvl_thread_t *t) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  gvl_t *g = t->g;
  uintptr_t exp = 0;
  if (t->prio > 0 || instrumented(g)) return gvl__acquire(t, t->prio, false);
  if (atomic_load_explicit(&t->holding, memory_order_relaxed)) return EDEADLK;
  t->req_prio = t->prio;
  atomic_store_explicit(&t->hold_prio, t->prio, memory_order_relaxed);
  if (!atomic_compare_exchange_strong_explicit(&g->word, &exp, (uintptr_t)t,
          memory_order_acq_rel, memory_order_relaxed))
    return acquire_slow(g, t, t->prio, false);
  atomic_store_explicit(&t->holding, 1, memory_order_relaxed);
  set_owner_cpu(g, -1);
  t->boosted = false;
  t->hold_t0 = 0;
  ctr_own_inc(t, C_ACQUIRES);
  return 0;
}

int gvl_acquire_prio(gvl_thread_t *t, int prio) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  if (prio < GVL_PRIO_MIN || prio > GVL_PRIO_MAX) return EINVAL;
  return gvl__acquire(t, prio, false);
}

/* ---- release, yield, preemption ------------------------------------------ */

/* Close t's hold: hold time, and the cap's share if boosted (g->mu held
 * then).  now may be 0 when the hold's start is unknown. */
static void end_hold(gvl_t *g, gvl_thread_t *t, uint64_t now) {
  atomic_store_explicit(&t->holding, 0, memory_order_relaxed);
  if (t->hold_t0 && now) {
    uint64_t held = now > t->hold_t0 ? now - t->hold_t0 : 0;
    gvl__ctr_add(t, C_HOLD_NS, held);
    if (t->boosted)
      cap_add(g, now, now > t->charge_t0 ? now - t->charge_t0 : held);
  }
  t->boosted = false;
}

/* t releases with w the best waiter.  If t is an interactive thread that
 * borrowed the GVL from a CPU-bound one (hand_over), the GVL goes back to
 * that lender, unless someone more urgent waits, and the lender's slice
 * goes on where it stopped: other CPU-bound waiters keep their turn as if
 * the borrow had not happened, and the lender, which spins for it, does not
 * lose its place to a thread that has to be woken up. */
static void give_back_or_handoff(gvl_t *g, gvl_thread_t *t, gvl_thread_t *w,
                                 uint64_t now) {
  gvl_thread_t *lender = g->borrower == t ? g->lender : NULL;
  uint64_t since = g->lender_since;
  if (lender && lender != w && (!lender->queued || lender->qprio < w->qprio))
    lender = NULL;
  if (lender) w = lender;
  handoff_to(g, w, now, lender != NULL);
  if (lender) g->hold_since = since;
}

int gvl__release(gvl_thread_t *t) {
  gvl_t *g = t->g;
  uintptr_t exp = (uintptr_t)t;
  uint64_t now;
  if (!atomic_load_explicit(&t->holding, memory_order_relaxed)) return EPERM;
  /* The hook runs before the word is cleared: once it is, g may be
   * destroyed by another thread (after a foreign thread's last call). */
  gvl__hook(g, t, GVL_EV_SUSPENDED);
  if (!t->boosted) {
    /* Unboosted holds need no lock to be closed: try the one-CAS path. */
    now = t->hold_t0 ? gvl__now() : 0;
    end_hold(g, t, now);
    if (atomic_compare_exchange_strong_explicit(&g->word, &exp, 0,
            memory_order_release, memory_order_relaxed))
      return 0;
    now = gvl__now();
    pthread_mutex_lock(&g->mu);
  } else {
    now = gvl__now();
    pthread_mutex_lock(&g->mu);   /* the cap window is guarded by mu */
    end_hold(g, t, now);
  }
  gvl__assert(gvl__owner(atomic_load(&g->word)) == t);
  clear_ints(t, GVL__INT_PREEMPT);
  gvl_thread_t *w = q_best(g, now, false);
  gvl__assert(!w == !(atomic_load(&g->word) & GVL__CONTENDED));
  if (w) give_back_or_handoff(g, t, w, now);
  else atomic_store_explicit(&g->word, 0, memory_order_release);
  pthread_mutex_unlock(&g->mu);
  return 0;
}

int gvl_release(gvl_thread_t *t) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  gvl_t *g = t->g;
  uintptr_t exp = (uintptr_t)t;
  if (t->boosted || t->hold_t0 || instrumented(g)) return gvl__release(t);
  if (!atomic_load_explicit(&t->holding, memory_order_relaxed)) return EPERM;
  atomic_store_explicit(&t->holding, 0, memory_order_relaxed);
  if (atomic_compare_exchange_strong_explicit(&g->word, &exp, 0,
          memory_order_release, memory_order_relaxed))
    return 0;
  atomic_store_explicit(&t->holding, 1, memory_order_relaxed);
  return gvl__release(t);
}

/* A preemption by an interactive thread that gave the GVL straight back
 * cost the preempted thread this long: fold it into the average that sets
 * the holders' minimum run (ia_min_run).  A sample is clipped to twice the
 * average (plus a floor, so the average can start from 0): a thread that
 * was descheduled now and then must not make every interactive thread wait
 * as if that were the rule. */
static void note_ia_cost(gvl_t *g, uint64_t ns) {
  int64_t avg = (int64_t)atomic_load_explicit(&g->ia_cost_ns, memory_order_relaxed);
  int64_t x = (int64_t)ns, lim = 2 * avg + GVL__IA_COST_FLOOR_NS;
  if (x > lim) x = lim;
  avg += (x - avg) / 8;
  atomic_store_explicit(&g->ia_cost_ns, (uint64_t)avg, memory_order_relaxed);
}

/* Hand the GVL to the best waiter and queue behind it.  A thread that
 * yields to someone less urgent queues at that waiter's priority, so the
 * handoff is real and does not bounce straight back. */
static int hand_over(gvl_thread_t *t, int ctr) {
  gvl_t *g = t->g;
  uint64_t now = gvl__now();
  pthread_mutex_lock(&g->mu);
  gvl_thread_t *w = q_best(g, now, true);
  if (!w) {
    clear_ints(t, GVL__INT_PREEMPT);
    pthread_mutex_unlock(&g->mu);
    return 0;
  }
  int mine = atomic_load_explicit(&t->hold_prio, memory_order_relaxed);
  int prio = yield_prio(mine, w->qprio);
  bool refused = prio > 0 && cap_exceeded(g, now);
  if (refused) {
    prio = GVL_PRIO_NORMAL;
    gvl__ctr_add(t, C_BOOSTS_REFUSED, 1);
  }
  clear_ints(t, GVL__INT_PREEMPT);
  end_hold(g, t, now);
  atomic_store_explicit(&t->granted, 0, memory_order_relaxed);
  (void)enqueue(g, t, prio, false, now); /* behind w; cannot outrank it */
  t->deferred = refused;
  /* Preempted by a boost: back soon. */
  atomic_store_explicit(&t->spin_hint, w->qprio > mine, memory_order_relaxed);
  bool by_ia = w->qia && ctr == C_PREEMPTIONS;
  uint64_t slice_t0 = g->hold_since;
  handoff(g, w, now);
  if (by_ia) note_borrow(g, t, w, slice_t0);  /* w only borrows the GVL */
  gvl__ctr_add(t, ctr, 1);
  pthread_mutex_unlock(&g->mu);
  gvl__hook(g, t, GVL_EV_SUSPENDED);
  gvl__hook(g, t, GVL_EV_READY);
  gvl__wait_granted(g, t);
  gvl__after_acquire(t, now);
  /* Only when w gave the GVL straight back: then t's wait is what the
   * preemption cost, not another thread's turn. */
  if (by_ia && t->lent_back) note_ia_cost(g, t->hold_t0 - now);
  return 0;
}

int gvl_yield(gvl_thread_t *t) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  if (!atomic_load_explicit(&t->holding, memory_order_relaxed)) return EPERM;
  /* Nobody waiting: a load and a branch, like a safe point. */
  if (!(atomic_load_explicit(&t->g->word, memory_order_relaxed) & GVL__CONTENDED))
    return 0;
  return hand_over(t, C_YIELDS);
}

/* The holder t hands the GVL straight to w, which asked for it and is the
 * waiter it would pick (ask_holder), without g->mu: w is still queued and
 * only the holder can hand the GVL on, so nothing else changes under us.
 * w queues t on its behalf (finish_direct); t only spins for the GVL to
 * come back.  Cuts the cache lines the preempted thread waits on by half.
 * Boosted holds go through hand_over: their cap charge needs g->mu. */
static int direct_hand_over(gvl_thread_t *t, gvl_thread_t *w) {
  gvl_t *g = t->g;
  uint64_t now = gvl__now();
  int mine = atomic_load_explicit(&t->hold_prio, memory_order_relaxed);
  clear_ints(t, GVL__INT_PREEMPT);
  end_hold(g, t, now);
  atomic_store_explicit(&t->granted, 0, memory_order_relaxed);
  /* The priority w will queue us at (finish_direct), set now so that the
   * hooks below may read it; after the grant only w writes our queue node. */
  t->qprio = yield_prio(mine, w->qprio);
  gvl__ctr_add(t, C_PREEMPTIONS, 1);
  gvl__hook(g, t, GVL_EV_SUSPENDED);
  gvl__hook(g, t, GVL_EV_READY);
  /* All w needs to queue t travels on w's own line. */
  w->direct_from = t;
  w->direct_at = now;
  w->direct_prio = mine;
  atomic_store_explicit(&w->hold_prio, w->qprio, memory_order_relaxed);
  atomic_store(&g->word, (uintptr_t)w | GVL__CONTENDED);
  /* A waiter that named itself our successor after our exchange above saw
   * us still own: drop it (see ask_holder); w re-checks who waits. */
  atomic_store(&t->succ, NULL);
  /* Without g->mu nothing stops w from running, detaching and freeing
   * itself as soon as it sees the grant; GVL__GRANT_BUSY tells it to wait
   * until the wake-up below no longer touches its memory. */
  atomic_store(&w->granted, GVL__GRANT_BUSY);  /* seq_cst: see park_wake_done */
  gvl__park_wake_done(&w->park);
  atomic_store_explicit(&w->granted, 1, memory_order_release);
  /* w borrows: expect it back soon, spin (w sets our spin_hint too, but
   * later than we start waiting). */
  if (!(g->spin_ns && spin_for_grant(g, t))) gvl__wait_granted(g, t);
  else settle_grant(t);
  gvl__after_acquire(t, now);
  if (t->lent_back) note_ia_cost(g, t->hold_t0 - now);
  return 0;
}

int gvl__check_ints_slow(gvl_thread_t *t) {
  int rc = gvl__check_self(t), ret = 0;
  if (rc) return rc;
  uint32_t ints = __atomic_load_n(&t->head.ints, __ATOMIC_ACQUIRE);
  if (ints & GVL__INT_HOST) {
    clear_ints(t, GVL__INT_HOST);
    ret = EINTR;
  }
  if (ints & GVL__INT_PREEMPT) {
    if (atomic_load_explicit(&t->holding, memory_order_relaxed)) {
      gvl_thread_t *w = atomic_exchange(&t->succ, NULL);
      if (w && !t->boosted) direct_hand_over(t, w);
      else hand_over(t, C_PREEMPTIONS);
    } else {
      clear_ints(t, GVL__INT_PREEMPT);
    }
  }
  return ret;
}

/* ---- blocking regions ---------------------------------------------------- */

/* Release t for a gvl_mutex/gvl_cond wait.  granted is cleared first so that
 * whoever queues t for the GVL later is seen by gvl__wait_granted. */
void gvl__drop_for_wait(gvl_thread_t *t) {
  atomic_store_explicit(&t->granted, 0, memory_order_relaxed);
  (void)gvl__release(t);
}

/* Queue another thread t (blocked on a gvl_mutex/gvl_cond) for the GVL,
 * which the caller holds, so the word is non-zero.  If t outranks the
 * caller, the caller's own preempt flag is set: it hands over at its next
 * safe point. */
void gvl__enqueue_other(gvl_t *g, gvl_thread_t *t, int prio) {
  pthread_mutex_lock(&g->mu);
  atomic_fetch_or_explicit(&g->word, GVL__CONTENDED, memory_order_relaxed);
  (void)enqueue(g, t, prio, false, gvl__now());
  pthread_mutex_unlock(&g->mu);
}

int gvl_thread_interrupt(gvl_thread_t *t) {
  if (!t || !t->g) return EINVAL;
  set_ints(t, GVL__INT_HOST);
  pthread_mutex_lock(&t->ilock);
  if (t->in_region && t->ubf) t->ubf(t->ubf_arg);
  pthread_mutex_unlock(&t->ilock);
  return 0;
}

/* Interactivity policy: a thread whose last stretch of GVL use before
 * blocking was short is I/O-bound.  When its blocking call returns it
 * acquires one level above normal, which preempts a CPU-bound holder right
 * away (instead of waiting out its slice) and is charged to the boost cap,
 * so CPU-bound threads keep their share.  A thread that computes for a
 * long stretch between blocking calls does not qualify. */
static bool is_interactive(gvl_thread_t *t, uint64_t now) {
  if (t->interactive_off || (t->g->flags & GVL_F_NOINTERACTIVE)) return false;
  if (!t->hold_t0) return false;
  uint64_t slice = atomic_load_explicit(&t->g->slice_ns, memory_order_relaxed);
  return now - t->hold_t0 < slice / 10;
}

void *gvl_call_without(gvl_thread_t *t, void *(*fn)(void *), void *arg,
                       void (*ubf)(void *), void *ubf_arg) {
  int rc = t && fn ? gvl__check_self(t) : EINVAL;
  if (!rc && !atomic_load_explicit(&t->holding, memory_order_relaxed)) rc = EPERM;
  if (rc) {
    errno = rc;
    return NULL;
  }
  pthread_mutex_lock(&t->ilock);
  if (__atomic_load_n(&t->head.ints, __ATOMIC_ACQUIRE) & GVL__INT_HOST) {
    pthread_mutex_unlock(&t->ilock);
    clear_ints(t, GVL__INT_HOST);
    errno = EINTR;
    return NULL;
  }
  t->ubf = ubf;
  t->ubf_arg = ubf_arg;
  t->in_region = true;
  pthread_mutex_unlock(&t->ilock);

  bool ia = is_interactive(t, gvl__now());
  int prio = t->req_prio;      /* not the interactive promotion */
  (void)gvl__release(t);
  void *ret = fn(arg);
  int saved = errno;           /* fn's errno belongs to the caller */
  pthread_mutex_lock(&t->ilock);
  t->in_region = false;
  t->ubf = NULL;
  pthread_mutex_unlock(&t->ilock);
  (void)gvl__acquire(t, prio, ia);
  if (!t->hold_t0) t->hold_t0 = gvl__now();  /* start the clock for the
                                                interactivity rule */
  errno = saved;
  return ret;
}

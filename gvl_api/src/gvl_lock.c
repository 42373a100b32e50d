/* SPDX-License-Identifier: MIT */
/*
 * gvl_lock.c -- the mechanism: the lock word, the wait queue, handoff,
 * parking and the timer role.  Which waiter goes next, when a holder is
 * asked to yield and what a boost is charged are the policy's
 * (gvl_policy.c), asked at fixed points, always under g->mu.  The paths of
 * the word, the queue, handoff, take-back and the timer are in the SPIN
 * model, tests/model/gvl.pml; lending and queueing another thread (for a
 * gvl_mutex/gvl_cond) are not (ARCHITECTURE.md says what it leaves out).
 *
 * The lock word holds the owner's handle, or 0 when free.  Its low bit,
 * GVL__CONTENDED, is set while the wait queue is non-empty; it is only ever
 * set or cleared under g->mu.  So:
 *   - acquire with nobody around is one CAS 0 -> t;
 *   - release with nobody waiting is one CAS t -> 0, which fails as soon as
 *     a waiter has set the bit, sending the releaser to g->mu;
 *   - the word is never 0 while someone waits, because a release with
 *     waiters stores the chosen waiter's handle.  That is why nobody can
 *     barge: a newcomer's CAS 0 -> t cannot succeed while anyone waits.
 * Only the holder hands the GVL on, and always under g->mu (release, yield,
 * a safe point), so a queued waiter leaves the queue only when granted.
 */
#include "gvl_int.h"

#include <sched.h>
#include <time.h>


uint64_t gvl__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline bool hooked(gvl_t *g) {
  return atomic_load_explicit(&g->hook, memory_order_relaxed) ||
         atomic_load_explicit(&g->trace, memory_order_relaxed);
}

/* Instrumentation: the tracer (gvl_trace.c) and the user's hook.  With
 * both off this is two plain loads and a branch. */
void gvl__hook(gvl_t *g, gvl_thread_t *t, gvl_event_t ev) {
  if (hooked(g)) gvl__hook_at(g, t, ev, gvl__now());
}

void gvl__hook_at(gvl_t *g, gvl_thread_t *t, gvl_event_t ev, uint64_t now) {
  gvl__hook_t *h = atomic_load_explicit(&g->hook, memory_order_acquire);
  void *tr = atomic_load_explicit(&g->trace, memory_order_acquire);
  if (!h && !tr) return;
  int saved = errno;  /* a trace's self-stop writes a file; the hook is the
                         user's: neither changes the caller's errno */
  if (tr) gvl__trace_event(g, t, ev, now);
  if (h) h->cb(h->arg, t, ev, now);
  errno = saved;
}

void gvl__set_ints(gvl_thread_t *t, uint32_t bit) {
  __atomic_fetch_or(&t->head.ints, bit, __ATOMIC_RELEASE);
}

void gvl__clear_ints(gvl_thread_t *t, uint32_t bit) {
  __atomic_fetch_and(&t->head.ints, ~bit, __ATOMIC_RELAXED);
}

/* Clear the PREEMPT bit of t, which holds the GVL, under g->mu.  Only code
 * under g->mu sets that bit, so a load tells whether the locked and is
 * needed (usually not: a yield nobody asked for). */
static void clear_preempt(gvl_thread_t *t) {
  if (__atomic_load_n(&t->head.ints, __ATOMIC_RELAXED) & GVL__INT_PREEMPT)
    gvl__clear_ints(t, GVL__INT_PREEMPT);
}

/* Ask owner to give the GVL up at its next safe point (g->mu held). */
void gvl__request_preempt(gvl_thread_t *owner) {
  gvl__set_ints(owner, GVL__INT_PREEMPT);
  atomic_fetch_add_explicit(&owner->preempt_reqs, 1, memory_order_relaxed);
}

/* ---- the wait queue and handoff (g->mu held) ------------------------------ */

static void q_remove(gvl_t *g, gvl_thread_t *t) {
  if (t->qprev) t->qprev->qnext = t->qnext; else g->qhead = t->qnext;
  if (t->qnext) t->qnext->qprev = t->qprev; else g->qtail = t->qprev;
  t->qnext = t->qprev = NULL;
  t->queued = false;
}

/* Wakes decided under g->mu.  With futexes the sequence word is bumped
 * there, but a sleeper is kicked out of the kernel only once g->mu is
 * dropped (the portable park makes its whole wake then): a thread woken
 * while the waker still holds g->mu often runs at once (on one CPU it
 * preempts the waker) and soon needs g->mu itself, to release or yield,
 * which costs two more context switches per handoff.  Between the bump and
 * the kick the thread may wake by itself (a timeout), take its grant, run,
 * detach and free its handle, so each pending kick pins the handle
 * (wake_refs; thread_free waits for it).  A late kick is harmless: every
 * wait loops on its condition.  With futexes a waiter that spins or yields
 * needs no kick at all. */
typedef struct {
  gvl_thread_t *t[2];
  int n;
} wakes_t;

static void wake_later(wakes_t *wk, gvl_thread_t *t) {
  if (!gvl__park_bump(&t->park)) return;
  atomic_fetch_add_explicit(&t->wake_refs, 1, memory_order_relaxed);
  wk->t[wk->n++] = t;
}

static void wakes_run(wakes_t *wk) {
  for (int i = 0; i < wk->n; i++) {
    gvl__park_kick(&wk->t[i]->park);
    atomic_fetch_sub_explicit(&wk->t[i]->wake_refs, 1, memory_order_release);
  }
}

/* ---- lending (GVL_F_LEND) ---------------------------------------------
 * A boost asks the holder to give the GVL up at its next safe point, but on
 * a busy machine the holder may wait milliseconds for a CPU before it gets
 * there, behind processes the booster outranks in the kernel.  With
 * GVL_F_LEND the booster lends the holder its own kernel scheduling (policy,
 * nice, real-time priority) if that ranks higher, the way a priority-
 * inheritance mutex does, and the holder takes its own back as it gives the
 * GVL up.
 * t->lend, lend_gen and lend_own change only under t->lend_mu, which a
 * lender holds for its system calls (under g->mu too, while the holder owns
 * the GVL: it only tries lend_mu, so a booster never waits on a thread it
 * outranks).  A restore holds lend_mu only to mark the state: LENT ->
 * RESTORING before its system call, RESTORING -> NONE after it, if no lend
 * came between.  The call itself is made with nothing held, because the
 * kernel often preempts a thread right as it lowers its own priority, and
 * that thread may own the GVL again by then: a lender then finds RESTORING,
 * knows the holder's own scheduling (lend_own), and lends again (RESTORING
 * -> LENT).  So NONE always means the kernel has the thread's own: a lend
 * made meanwhile stops the restore from saying NONE, and a late restore
 * can only undo a newer lend (costing that one boost its help; the state
 * stays LENT and the next release restores again), never leave a thread
 * lent with nobody to restore it.
 * A thread attached to two GVLs at once is never lent to: its kernel
 * scheduling is one, and two lends could not each restore it. */
static void lend(gvl_t *g, gvl_thread_t *t, gvl_thread_t *owner) {
  gvl__ksched_t mine, cur;
  if (!(g->flags & GVL_F_LEND) ||
      atomic_load_explicit(&owner->multi, memory_order_relaxed) ||
      gvl__ksched_get(0, &mine))
    return;
  /* Held only for a few stores by a restore: if that one is preempted in
   * them, this boost goes without its lend. */
  if (pthread_mutex_trylock(&owner->lend_mu)) return;
  int r = gvl__ksched_rank(&mine), h = -1;
  int st = atomic_load_explicit(&owner->lend, memory_order_relaxed);
  if (st == GVL__LEND_RESTORING) {
    cur = owner->lend_own;         /* the kernel may have it back already */
    h = gvl__ksched_rank(&cur);
  } else if (!gvl__ksched_get(owner->ktid, &cur)) {
    h = gvl__ksched_rank(&cur);
  }
  if (h < 0 || r <= h) goto out;
  /* Threads and processes the holder starts while lent do not inherit the
   * lend (the restore puts its own flag back). */
  gvl__ksched_t lent = mine;
  lent.flags = cur.flags | GVL__SCHED_RESET_ON_FORK;
  if (gvl__ksched_set(owner->ktid, &lent)) goto out;  /* EPERM: not allowed */
  if (st == GVL__LEND_NONE) owner->lend_own = cur;
  atomic_store_explicit(&owner->lend, GVL__LEND_LENT, memory_order_relaxed);
  gvl__ctr_add(t, C_LENDS, 1);
out:
  pthread_mutex_unlock(&owner->lend_mu);
}

/* The lend of a waiter t whose spin did not bring the grant: to whoever
 * owns the GVL now, if t still waits and still outranks it. */
static void lend_late(gvl_t *g, gvl_thread_t *t) {
  gvl__mu_lock(&g->mu);
  gvl_thread_t *owner =
      gvl__owner(atomic_load_explicit(&g->word, memory_order_relaxed));
  if (!atomic_load_explicit(&t->granted, memory_order_relaxed) && owner &&
      owner != t &&
      t->qprio > atomic_load_explicit(&owner->hold_prio, memory_order_relaxed))
    lend(g, t, owner);
  gvl__mu_unlock(&g->mu);
}

/* Give t its own scheduling back, without g->mu: t's own call (self), once
 * it has given the GVL up, or a take-back's for the waiter t.  The unlocked
 * look is enough: a lend it would miss was made under g->mu before the
 * caller last took g->mu.  t's own call that finds another restore under
 * way makes the system call too, so that t has its own when it returns
 * (the other one ends the state); a take-back's leaves it to that one. */
static void unlend(gvl_thread_t *t, bool self) {
  if (atomic_load_explicit(&t->lend, memory_order_relaxed) == GVL__LEND_NONE)
    return;
  pthread_mutex_lock(&t->lend_mu);
  int st = atomic_load_explicit(&t->lend, memory_order_relaxed);
  unsigned gen = 0;
  if (st == GVL__LEND_LENT) {
    atomic_store_explicit(&t->lend, GVL__LEND_RESTORING, memory_order_relaxed);
    gen = ++t->lend_gen;
  }
  gvl__ksched_t own = t->lend_own;
  pthread_mutex_unlock(&t->lend_mu);
  if (st == GVL__LEND_NONE || (!gen && !self)) return;
  (void)gvl__ksched_set(t->ktid, &own);
  if (!gen) return;
  pthread_mutex_lock(&t->lend_mu);
  if (atomic_load_explicit(&t->lend, memory_order_relaxed) ==
          GVL__LEND_RESTORING && t->lend_gen == gen)
    atomic_store_explicit(&t->lend, GVL__LEND_NONE, memory_order_relaxed);
  pthread_mutex_unlock(&t->lend_mu);
}

/* The CPU t's thread last ran on, -1 unknown.  On another thread than t's,
 * only with g->mu held and t owning the GVL or queued for it, so that its
 * thread lives. */
static int cpu_of(const gvl_thread_t *t) {
  if (!t->cpu_word) return -1;
  int32_t c = (int32_t)*t->cpu_word;
  return c >= 0 ? c : -1;
}

/* Give the timer role to t (NULL: nobody), g->mu held.  A new timer has
 * not looked yet, so it has no deadline (timer_due 0). */
static void give_timer(gvl_t *g, gvl_thread_t *t) {
  g->timer = t;
  g->timer_due = 0;
  if (t) atomic_store_explicit(&t->is_timer, 1, memory_order_relaxed);
}

/* Does the timer, asleep until g->timer_due, sleep past the time the
 * policy needs it to look for a boost its last pick held back above a hold
 * at hold_prio (g->mu held)?  Checked at every handoff and kept GVL, it
 * wakes the timer only when its deadline is too late, not each time. */
static bool look_late(gvl_t *g, int hold_prio, uint64_t now) {
  uint64_t by = gvl__pol_look_by(g, hold_prio, now);
  return by && by < g->timer_due;
}

/* Have the timer, asleep until g->timer_due, look again now (g->mu held;
 * the wake goes in wk).  The calling thread is never the timer asleep. */
static void timer_look(gvl_t *g, wakes_t *wk) {
  g->timer_due = 0;
  if (!pthread_equal(g->timer->tid, pthread_self())) wake_later(wk, g->timer);
}

/* Queue t (the caller, or a thread blocked in a gvl_mutex) behind the
 * holder, at the priority the policy gives it; the caller has set
 * GVL__CONTENDED.  Returns the holder if t outranks it and so asked it to
 * give the GVL up now.  wk: NULL when t is the caller; else t, if it takes
 * the timer role, is woken to arm its clock once the caller drops g->mu. */
static gvl_thread_t *enqueue(gvl_t *g, gvl_thread_t *t, int prio,
                             uint64_t now, wakes_t *wk) {
  gvl_thread_t *owner =
      gvl__owner(atomic_load_explicit(&g->word, memory_order_relaxed));
  bool refused;
  prio = gvl__pol_queue_prio(g, prio, now, &refused);
  bool ask = owner && owner != t &&
      prio > atomic_load_explicit(&owner->hold_prio, memory_order_relaxed);
  t->qprio = prio;
  t->qboost = gvl__boosted(prio, t->req_prio);
  t->qtime = now;
  t->queued = true;
  t->qnext = NULL;
  t->qprev = g->qtail;
  if (g->qtail) g->qtail->qnext = t; else g->qhead = t;
  g->qtail = t;
  atomic_store_explicit(&t->spin_hint, ask, memory_order_relaxed);
  if (refused)   /* t may be another thread: atomically */
    atomic_fetch_add_explicit(&t->ctr[C_BOOSTS_REFUSED], 1,
                              memory_order_relaxed);
  if (ask) gvl__request_preempt(owner);
  /* The caller lends when it waits: at once if it will not spin, else
   * only if a spin did not bring the grant (gvl__wait_granted). */
  if (!wk) {
    t->other_cpu = owner && owner != t ? cpu_of(owner) : -1;
    t->lend_ask = ask && (g->flags & GVL_F_LEND);
    if (t->lend_ask && !g->spin_ns) {
      lend(g, t, owner);
      t->lend_ask = false;
    }
  }
  if (!g->timer) {
    give_timer(g, t);
    if (wk) wake_later(wk, t);
  }
  return ask ? owner : NULL;
}

/* Give the GVL to w (queued), with grant GVL__GRANTED, or GVL__GRANTED_HOT
 * for a grant the releaser may take back (the caller then sets g->hot).
 * The wakes go in wk, for the caller to make after unlocking g->mu. */
static void handoff(gvl_t *g, gvl_thread_t *w, uint64_t now, uint32_t grant,
                    wakes_t *wk) {
  gvl__assert(w->queued && !atomic_load(&w->granted));
  q_remove(g, w);
  g->hot = NULL;
  atomic_store_explicit(&w->hold_prio, w->qprio, memory_order_relaxed);
  atomic_store_explicit(&g->word,
                        (uintptr_t)w | (g->qhead ? GVL__CONTENDED : 0),
                        memory_order_release);
  gvl__pol_hold_start(g, now);
  gvl_thread_t *timer = NULL;
  if (g->timer == w) {
    /* The timer role moves to another waiter, woken to arm its clock
     * (a yielder that queued itself takes it knowingly). */
    atomic_store_explicit(&w->is_timer, 0, memory_order_relaxed);
    give_timer(g, g->qhead);
    if (g->timer && !pthread_equal(g->timer->tid, pthread_self()))
      timer = g->timer;
  } else if (g->timer && g->timer_due &&
             (now + atomic_load_explicit(&g->slice_ns, memory_order_relaxed) <
                  g->timer_due ||
              look_late(g, w->qprio, now))) {
    /* The timer sleeps past the end of w's slice (GVL__RETICK_NS after a
     * holder that did not answer), or past when a boost the pick held
     * back, above w, may ask: it must look in time. */
    g->timer_due = 0;
    if (!pthread_equal(g->timer->tid, pthread_self())) timer = g->timer;
  }
  w->grant_ns = now;
  /* A handoff is made by the thread that hands over: its number tells the
   * tracer who gave w the GVL, exactly, when the file lost other events. */
  if (atomic_load_explicit(&g->trace, memory_order_relaxed))
    w->trace_from = gvl__trace_self();
  atomic_store_explicit(&w->granted, grant, memory_order_release);
  wake_later(wk, w);            /* the new owner first */
  if (timer) wake_later(wk, timer);
}

/* Take back the grant g->hot left to w, which has not taken it yet (the
 * caller's CAS of w->granted HOT -> 0 said so), g->mu held: w goes back to
 * the head of the queue, where it was the best waiter, the word names the
 * caller t again, and t's slice goes on from where it was; the timer, if
 * another waiter has the role, is woken only if that slice ends before it
 * would look anyway (it ticked during the grant, which started a slice of
 * its own), else the role goes back to w.  Beside two CPU-bound waiters a
 * convoy's I/O thread takes a grant back at nearly every trip, and waking
 * a sleeping timer each time cost them a wake-up for nothing.  A
 * preemption asked of w meanwhile was meant for the GVL's owner: it moves
 * to t if a waiter outranks t.  Returns true if it did (the caller fires
 * t's PREEMPT_REQ once g->mu is dropped). */
static bool take_back(gvl_t *g, gvl_thread_t *t, gvl_thread_t *w, int prio,
                      wakes_t *wk) {
  bool ask = false;
  g->hot = NULL;
  w->queued = true;
  w->qprev = NULL;
  w->qnext = g->qhead;
  if (g->qhead) g->qhead->qprev = w; else g->qtail = w;
  g->qhead = w;
  atomic_store_explicit(&t->hold_prio, prio, memory_order_relaxed);
  atomic_store_explicit(&g->word, (uintptr_t)t | GVL__CONTENDED,
                        memory_order_relaxed);
  g->pol.hold_since = g->hot_since;
  if (!g->timer) {
    give_timer(g, w);
    wake_later(wk, w);
  } else if (g->hot_since + atomic_load_explicit(&g->slice_ns,
                 memory_order_relaxed) < g->timer_due) {
    g->timer_due = 0;
    wake_later(wk, g->timer);
  }
  if (__atomic_load_n(&w->head.ints, __ATOMIC_RELAXED) & GVL__INT_PREEMPT) {
    gvl__clear_ints(w, GVL__INT_PREEMPT);  /* w holds nothing: safe here */
    for (gvl_thread_t *q = g->qhead; q && !ask; q = q->qnext)
      ask = q->qprio > prio;
    if (ask) gvl__set_ints(t, GVL__INT_PREEMPT);  /* counted when asked */
  }
  return ask;
}

/* ---- waiting ---------------------------------------------------------------- */

/* The timer waiter's turn: the policy decides whether the holder is past
 * its slice.  Returns the next deadline to sleep until (g->timer_due). */
static uint64_t timer_tick(gvl_t *g, gvl_thread_t *t) {
  gvl_thread_t *target = NULL;
  uint64_t deadline = 0;
  gvl__mu_lock(&g->mu);
  if (g->timer == t && !atomic_load_explicit(&t->granted, memory_order_relaxed))
    deadline = g->timer_due = gvl__pol_tick(g, gvl__now(), &target);
  gvl__mu_unlock(&g->mu);
  if (target) gvl__hook(g, target, GVL_EV_PREEMPT_REQ);
  return deadline;
}

/* Has t been handed the GVL?  A revocable grant becomes t's with one CAS,
 * which a take_back racing with it may win instead. */
static inline bool took(gvl_thread_t *t) {
  uint32_t v = atomic_load_explicit(&t->granted, memory_order_acquire);
  if (v != GVL__GRANTED_HOT) return v != 0;
  return atomic_compare_exchange_strong_explicit(
      &t->granted, &v, GVL__GRANTED, memory_order_acq_rel,
      memory_order_acquire);
}

/* Does the thread t waits for (t->other_cpu) run elsewhere than t, as far
 * as the kernel's rseq words tell?  Unknown counts as no. */
static bool elsewhere(const gvl_thread_t *t) {
  int mine = cpu_of(t);
  return t->other_cpu >= 0 && mine >= 0 && mine != t->other_cpu;
}

/* Spin for a grant that should come within microseconds.  Bounded by
 * spin_ns (0 on one CPU, see gvl__wait_granted), and after the first 2 us
 * every round yields the CPU, in case the thread t waits for (the holder,
 * or the waiter it handed the GVL to) waits for this very CPU, unless it is
 * known to have run on another.  There the yield would only help whatever
 * else shares t's CPU: under EEVDF a yield moves the yielder's deadline a
 * whole slice on, and beside one busy loop a loop thread that yielded so
 * got its CPU back 3.8 ms later, its grant long made (kernel trace). */
static bool spin_for_grant(gvl_thread_t *t, uint64_t start, uint64_t end) {
  bool yield = t->qprio <= 0 || !elsewhere(t);
  for (;;) {
    for (int i = 0; i < 64; i++) {
      if (took(t)) return true;
      gvl__cpu_relax();
    }
    uint64_t now = gvl__now();
    if (now >= end) return false;
    if (yield && now - start > 2000) sched_yield();
  }
}

/* Sleep until the GVL has been handed to t, or until user_deadline (0 for
 * none).  Returns true when granted. */
bool gvl__wait_granted_until(gvl_t *g, gvl_thread_t *t,
                             uint64_t user_deadline) {
  for (;;) {
    uint32_t seq = atomic_load_explicit(&t->park.seq, memory_order_acquire);
    if (took(t)) return true;
    uint64_t deadline = 0;
    if (atomic_load_explicit(&t->is_timer, memory_order_relaxed))
      deadline = timer_tick(g, t);
    if (user_deadline) {
      if (gvl__now() >= user_deadline) return false;
      if (!deadline || user_deadline < deadline) deadline = user_deadline;
    }
    gvl__park_wait(&t->park, seq, deadline);
  }
}

/* Wait in the GVL's queue, which t joined at start.  Spin first when a
 * quick handoff is expected: asked for by a boost, or this thread's last
 * wait was itself short (ping-pong, Thread.pass loops).  A thread that
 * waited a whole slice last time goes straight to sleep.  No spin lasts
 * longer than the slice: the waiter with the timer role ticks only once it
 * sleeps, and a longer spin would stretch the holder's slice to it.  On one CPU
 * nobody spins, nor yields instead: a waiter kept runnable by sched_yield
 * takes CPU from threads that are not waiting for the GVL, such as the one
 * a convoy's I/O thread waits for (bench convoy beside 2 hogs, pinned: the
 * I/O thread at 40-340x its time alone, against 4-5x asleep). */
void gvl__wait_granted(gvl_t *g, gvl_thread_t *t, uint64_t start) {
  bool hint = atomic_load_explicit(&t->spin_hint, memory_order_relaxed);
  bool spin = g->spin_ns && !t->wait_asleep &&
              (hint || t->last_wait_ns <= g->spin_ns);
  uint64_t slice = atomic_load_explicit(&g->slice_ns, memory_order_relaxed);
  uint64_t end = start + (g->spin_ns < slice ? g->spin_ns : slice);
  if (t->lend_ask) {
    /* A holder that is running hands over within microseconds and needs
     * no lend; one that is not gets it after the first part of the spin.
     * (Where waits do not spin, enqueue has lent already.) */
    t->lend_ask = false;
    uint64_t first = end - start < GVL__LEND_AFTER_NS ? end - start
                                                       : GVL__LEND_AFTER_NS;
    if (spin && spin_for_grant(t, start, start + first)) return;
    uint64_t l0 = spin ? gvl__now() : 0;
    lend_late(g, t);
    if (spin) {
      /* The lend is a few system calls, tens of us in a virtual machine,
       * and the grant it brings often comes just after: their time is not
       * spin, so the spin goes on for what it had left (within the slice).
       * Asleep, t would cost the booster a wake-up of the same order. */
      uint64_t cap = start + slice;
      end += gvl__now() - l0;
      if (end > cap) end = cap;
    }
  }
  if (spin && spin_for_grant(t, start, end)) return;
  (void)gvl__wait_granted_until(g, t, 0);
}

/* ---- acquire ------------------------------------------------------------- */

/* t was handed the GVL: start the hold.  A boosted one (gvl__boosted) is
 * charged to the cap from here to its end: once, for the time it held.
 * Here, not at the handoff: the time t took to run again after its grant
 * is the OS's (on a loaded machine, milliseconds), and charging it would
 * refuse boosts for work they never did.  An unboosted hold starts at the
 * handoff's own time instead (grant_ns), which saves a clock read on
 * every plain handoff, a fifth of a gvl_yield ping-pong. */
void gvl__after_acquire(gvl_thread_t *t, uint64_t wait_t0) {
  int prio = atomic_load_explicit(&t->hold_prio, memory_order_relaxed);
  t->boosted = gvl__boosted(prio, t->req_prio);
  uint64_t now = t->boosted ? gvl__now() : t->grant_ns;
  if (now < wait_t0) now = wait_t0;
  gvl__assert(gvl__owner(atomic_load(&t->g->word)) == t);
  gvl__assert(!atomic_load_explicit(&t->holding, memory_order_relaxed));
  atomic_store_explicit(&t->holding, 1, memory_order_relaxed);
  t->hold_t0 = now;
  gvl__ctr_acquired(t);
  gvl__ctr_add(t, C_HANDOFFS, 1);  /* every wait ends in a handoff */
  gvl__ctr_add(t, C_CONTENDED, 1);
  gvl__ctr_add(t, C_WAIT_NS, now - wait_t0);
  t->last_wait_ns = now - wait_t0;
  if (prio > 0) gvl__ctr_add(t, C_BOOSTS, 1);
  gvl__hook(t->g, t, GVL_EV_RESUMED);
  t->trace_from = 0;     /* no later RESUMED may name this giver */
}

/* t took the GVL while it was free: start the hold.  t0 is its start, or
 * 0 when nothing needs it timed (never for a boosted hold). */
static void start_free_hold(gvl_t *g, gvl_thread_t *t, int prio, bool ia,
                            uint64_t t0) {
  atomic_store_explicit(&t->holding, 1, memory_order_relaxed);
  t->boosted = prio > 0;
  t->hold_t0 = t0;
  gvl__ctr_acquired(t);
  if (t->boosted) gvl__ctr_add(t, C_BOOSTS, 1);
  if (ia) gvl__ctr_add(t, C_INTERACTIVE, 1);
  gvl__hook(g, t, GVL_EV_RESUMED);
}

/* t's last release left a grant it may take back (g->hot, g->mu held):
 * take it if its waiter has not yet, and the policy allows it; else the
 * waiter keeps it.  A grant taken back is not a wait: the hold resumes at
 * the priority t asked for, not its interactive promotion.  Drops g->mu
 * when it takes the GVL. */
static bool try_take_back(gvl_t *g, gvl_thread_t *t, uint64_t t0) {
  int prio = t->req_prio;
  uint32_t exp = GVL__GRANTED_HOT;
  gvl_thread_t *w = g->hot_to;
  wakes_t wk = {.n = 0};
  g->hot = NULL;
  /* A blocking region's grant is its gvl_region_end's to take back, not
   * that of an acquire made inside the region (gvl_call_with from fn also
   * drops the claim as it suspends the region). */
  if (g->hot_kind == GVL__HOT_REGION && t->in_region) return false;
  if (!gvl__pol_take_back_ok(g, w, prio, g->hot_kind, g->hot_since, t0) ||
      !atomic_compare_exchange_strong_explicit(&w->granted, &exp, 0,
          memory_order_acq_rel, memory_order_relaxed))
    return false;                  /* the waiter keeps its grant */
  w->trace_from = 0;               /* the grant it named is gone */
  bool ask = take_back(g, t, w, prio, &wk);
  gvl__mu_unlock(&g->mu);
  wakes_run(&wk);
  /* A lend to the waiter was meant for the GVL's owner: end it.  Queued
   * again behind t, it cannot go meanwhile. */
  unlend(w, false);
  start_free_hold(g, t, prio, false,
                  (prio > 0 || (g->flags & GVL_F_TIMING)) ? t0 : 0);
  gvl__ctr_add(t, C_RETAKES, 1);
  if (ask) gvl__hook(g, t, GVL_EV_PREEMPT_REQ);
  return true;
}

static int acquire_slow(gvl_t *g, gvl_thread_t *t, int prio, bool ia) {
  uint64_t t0 = gvl__now();
  gvl_thread_t *target;
  gvl__mu_lock(&g->mu);
  if (t->hot_release) {
    t->hot_release = GVL__HOT_NONE;
    if (g->hot == t && try_take_back(g, t, t0)) return 0;
  }
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
    gvl__mu_unlock(&g->mu);
    start_free_hold(g, t, prio, ia, t0);
    return 0;
  }
  if (!(w & GVL__CONTENDED)) gvl__pol_hold_start(g, t0); /* first waiter */
  if (ia) gvl__ctr_add(t, C_INTERACTIVE, 1);
  atomic_store_explicit(&t->granted, 0, memory_order_relaxed);
  target = enqueue(g, t, prio, t0, NULL);
  gvl__mu_unlock(&g->mu);
  gvl__hook(g, t, GVL_EV_READY);
  if (target) gvl__hook(g, target, GVL_EV_PREEMPT_REQ);
  gvl__wait_granted(g, t, t0);
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
  return hooked(g) || (g->flags & GVL_F_TIMING);
}

/* The uncontended path, kept lean because it is what a single-threaded
 * interpreter pays on every blocking call: checks, one CAS, a few stores. */
int gvl_acquire(gvl_thread_t *t) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  gvl_t *g = t->g;
  uintptr_t exp = 0;
  if (t->in_region) return EPERM;   /* see gvl_acquire_prio */
  if (t->prio > 0 || instrumented(g)) return gvl__acquire(t, t->prio, false);
  if (atomic_load_explicit(&t->holding, memory_order_relaxed)) return EDEADLK;
  t->req_prio = t->prio;
  atomic_store_explicit(&t->hold_prio, t->prio, memory_order_relaxed);
  if (!atomic_compare_exchange_strong_explicit(&g->word, &exp, (uintptr_t)t,
          memory_order_acq_rel, memory_order_relaxed))
    return acquire_slow(g, t, t->prio, false);
  atomic_store_explicit(&t->holding, 1, memory_order_relaxed);
  t->boosted = false;
  t->hold_t0 = 0;
  gvl__ctr_add(t, C_ACQUIRES, 1);  /* qualified by nothing: no fence */
  return 0;
}

int gvl_acquire_prio(gvl_thread_t *t, int prio) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  if (prio < GVL_PRIO_MIN || prio > GVL_PRIO_MAX) return EINVAL;
  /* A region's own end takes the GVL back (gvl_region_end); an acquire
   * inside it would leave the region open under a hold, and a region
   * begun in that hold would end both (gvl_call_with suspends it). */
  if (t->in_region) return EPERM;
  return gvl__acquire(t, prio, false);
}

/* ---- release, yield, preemption ------------------------------------------ */

/* Account t's hold up to now: hold time, and the cap's charge if boosted
 * (g->mu held then).  A hold that goes on is charged from now next time. */
static void charge_hold(gvl_t *g, gvl_thread_t *t, uint64_t now) {
  if (!t->hold_t0 || !now) return;
  uint64_t held = now > t->hold_t0 ? now - t->hold_t0 : 0;
  gvl__ctr_add(t, C_HOLD_NS, held);
  if (t->boosted) gvl__pol_charge(g, now, held);
  t->hold_t0 = now;
}

/* Release t's hold.  The waiter served may get a grant t can take back
 * (gvl__pol_hot_ok): kind GVL__HOT_REGION, for gvl_call_without entering
 * its region; GVL__HOT_BOOST, for a gvl_release or gvl_call_with that ends
 * a boosted hold; GVL__HOT_NONE never. */
int gvl__release(gvl_thread_t *t, int kind) {
  gvl_t *g = t->g;
  uintptr_t exp = (uintptr_t)t;
  uint64_t now;
  if (!atomic_load_explicit(&t->holding, memory_order_relaxed)) return EPERM;
  /* The hook runs before the word is cleared, so that this SUSPENDED
   * comes before the next holder's RESUMED (hook order, ARCHITECTURE.md). */
  gvl__hook(g, t, GVL_EV_SUSPENDED);
  if (!t->boosted) {
    /* Unboosted holds need no lock to be closed: try the one-CAS path. */
    charge_hold(g, t, t->hold_t0 ? gvl__now() : 0);
    atomic_store_explicit(&t->holding, 0, memory_order_relaxed);
    if (atomic_compare_exchange_strong_explicit(&g->word, &exp, 0,
            memory_order_release, memory_order_relaxed))
      return 0;
    gvl__mu_lock(&g->mu);
    now = gvl__now();
  } else {
    gvl__mu_lock(&g->mu);   /* the cap's window is guarded by mu */
    now = gvl__now();
    charge_hold(g, t, now);
    atomic_store_explicit(&t->holding, 0, memory_order_relaxed);
  }
  if (kind == GVL__HOT_BOOST && !t->boosted) kind = GVL__HOT_NONE;
  t->boosted = false;
  gvl__assert(gvl__owner(atomic_load(&g->word)) == t);
  clear_preempt(t);
  gvl_thread_t *w = gvl__pol_pick(g, now, false);
  wakes_t wk = {.n = 0};
  gvl__assert(!w == !(atomic_load(&g->word) & GVL__CONTENDED));
  if (!w) {
    atomic_store_explicit(&g->word, 0, memory_order_release);
  } else if (kind != GVL__HOT_NONE && gvl__pol_hot_ok(g, t, w, now, kind)) {
    uint64_t since = g->pol.hold_since;
    handoff(g, w, now, GVL__GRANTED_HOT, &wk);
    g->hot = t;
    g->hot_to = w;
    g->hot_since = since;
    g->hot_kind = kind;
    t->hot_release = kind;
  } else {
    handoff(g, w, now, GVL__GRANTED, &wk);
  }
  gvl__mu_unlock(&g->mu);
  wakes_run(&wk);
  unlend(t, true);
  return 0;
}

int gvl_release(gvl_thread_t *t) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  gvl_t *g = t->g;
  uintptr_t exp = (uintptr_t)t;
  t->ia_t0 = 0;   /* the first call after the next gvl_acquire: no stretch */
  if (t->boosted || t->hold_t0 || instrumented(g))
    return gvl__release(t, GVL__HOT_BOOST);
  if (!atomic_load_explicit(&t->holding, memory_order_relaxed)) return EPERM;
  atomic_store_explicit(&t->holding, 0, memory_order_relaxed);
  if (atomic_compare_exchange_strong_explicit(&g->word, &exp, 0,
          memory_order_release, memory_order_relaxed))
    return 0;
  atomic_store_explicit(&t->holding, 1, memory_order_relaxed);
  return gvl__release(t, GVL__HOT_BOOST);
}

/* The waiter a yield or safe point hands over to, with g->mu held; NULL
 * keeps the GVL.  *nowp is the time the caller read before it took g->mu
 * (see hand_over).  The hold so far is charged first, so that the policy's
 * pick sees it.  With a hook, SUSPENDED must fire before the handoff and
 * outside g->mu: mu is dropped for it, the clock read again into *nowp and
 * the pick made again (waiters cannot leave the queue meanwhile, only the
 * holder grants). */
static gvl_thread_t *pick_for_yield(gvl_thread_t *t, int ctr, bool *fired,
                                    uint64_t *nowp) {
  gvl_t *g = t->g;
  uint64_t now = *nowp;
  charge_hold(g, t, now);
  gvl_thread_t *w = gvl__pol_pick(g, now, !t->boosted);
  *fired = false;
  if (!w || !hooked(g)) return w;
  t->handing = ctr;             /* the tracer's reason for SUSPENDED */
  gvl__mu_unlock(&g->mu);
  gvl__hook(g, t, GVL_EV_SUSPENDED);
  t->handing = 0;
  gvl__mu_lock(&g->mu);
  now = *nowp = gvl__now();
  charge_hold(g, t, now);
  *fired = true;
  /* The cap may have changed meanwhile (gvl_set_boost_cap is [any]) and
   * now hold the waiter back: then nothing is handed over, and the caller
   * counts nothing. */
  w = gvl__pol_pick(g, now, !t->boosted);
  /* The timer or a boost may have asked t again meanwhile: a request the
   * handoff answers, which must not stay with t in the queue (PREEMPT is
   * only ever set on the thread the word names). */
  if (w) clear_preempt(t);
  return w;
}

/* Hand the GVL to the best waiter and queue behind it, at no higher a
 * priority than that waiter's, so the handoff is real and does not bounce
 * straight back.  The clock is read before g->mu is taken: inside, the
 * vDSO's ordered read would wait for the cache misses on g->mu and the
 * waiter's line (ARCHITECTURE.md, "The wait queue, handoff and parking"). */
static int hand_over(gvl_thread_t *t, int ctr) {
  gvl_t *g = t->g;
  bool fired;
  uint64_t now = gvl__now();
  gvl__mu_lock(&g->mu);
  clear_preempt(t);
  gvl_thread_t *w = pick_for_yield(t, ctr, &fired, &now);
  if (!w) {                       /* nobody the policy would serve */
    /* A boost the cap held back, which asked t, asks again once the cap
     * allows it (gvl__pol_tick): the timer must look before the slice's
     * end it sleeps to. */
    wakes_t wk = {.n = 0};
    int mine = atomic_load_explicit(&t->hold_prio, memory_order_relaxed);
    if (g->timer && g->timer_due && look_late(g, mine, now)) timer_look(g, &wk);
    gvl__mu_unlock(&g->mu);
    wakes_run(&wk);
    if (fired) gvl__hook(g, t, GVL_EV_RESUMED);
    return 0;
  }
  int mine = atomic_load_explicit(&t->hold_prio, memory_order_relaxed);
  atomic_store_explicit(&t->holding, 0, memory_order_relaxed);
  t->boosted = false;
  atomic_store_explicit(&t->granted, 0, memory_order_relaxed);
  (void)enqueue(g, t, gvl__pol_requeue_prio(t, mine, w->qprio, now), now, NULL);
  wakes_t wk = {.n = 0};
  handoff(g, w, now, GVL__GRANTED, &wk);
  t->other_cpu = cpu_of(w);
  /* Preempted by a boost and next in line: back soon.  Behind another
   * waiter, a spin would only take a CPU that others need. */
  atomic_store_explicit(&t->spin_hint, w->qprio > mine && g->qhead == t,
                        memory_order_relaxed);
  gvl__ctr_add(t, ctr, 1);
  gvl__mu_unlock(&g->mu);
  wakes_run(&wk);
  unlend(t, true);
  gvl__hook(g, t, GVL_EV_READY);
  gvl__wait_granted(g, t, now);
  gvl__after_acquire(t, now);
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

int gvl__check_ints_slow(gvl_thread_t *t) {
  int rc = gvl__check_self(t), ret = 0;
  if (rc) return rc;
  uint32_t ints = __atomic_load_n(&t->head.ints, __ATOMIC_ACQUIRE);
  if (ints & GVL__INT_HOST) {
    gvl__clear_ints(t, GVL__INT_HOST);
    ret = EINTR;
  }
  if (ints & GVL__INT_PREEMPT) {
    if (atomic_load_explicit(&t->holding, memory_order_relaxed))
      hand_over(t, C_PREEMPTIONS);
    else
      gvl__clear_ints(t, GVL__INT_PREEMPT);
  }
  return ret;
}

/* ---- waits on behalf of gvl_mutex / gvl_cond ----------------------------- */

/* Release t for a gvl_mutex/gvl_cond wait.  granted is cleared first so that
 * whoever queues t for the GVL later is seen by gvl__wait_granted. */
void gvl__drop_for_wait(gvl_thread_t *t) {
  /* The GVL comes back at t's base priority (whoever queues t uses it):
   * that is what this wait asked for, not a boost t's last acquire did. */
  t->req_prio = t->prio;
  t->ia_ret = false;           /* its reacquire is the wait's, not a region's */
  atomic_store_explicit(&t->granted, 0, memory_order_relaxed);
  (void)gvl__release(t, GVL__HOT_NONE);
}

/* Queue another thread t (blocked on a gvl_mutex/gvl_cond) for the GVL,
 * which the caller holds, so the word is non-zero.  If t outranks the
 * caller, the caller's own preempt flag is set: it hands over at its next
 * safe point. */
void gvl__enqueue_other(gvl_t *g, gvl_thread_t *t, int prio) {
  wakes_t wk = {.n = 0};
  gvl__mu_lock(&g->mu);
  if (!(atomic_fetch_or_explicit(&g->word, GVL__CONTENDED,
                                 memory_order_relaxed) & GVL__CONTENDED))
    gvl__pol_hold_start(g, gvl__now());
  gvl_thread_t *target = enqueue(g, t, prio, gvl__now(), &wk);
  gvl__mu_unlock(&g->mu);
  wakes_run(&wk);
  if (target) gvl__hook(g, target, GVL_EV_PREEMPT_REQ);
}

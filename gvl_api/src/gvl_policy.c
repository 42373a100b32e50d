/* SPDX-License-Identifier: MIT */
/*
 * gvl_policy.c -- the policy: which waiter is next, when the holder is
 * asked to yield, what a boost is charged, and who counts as interactive.
 *
 * The mechanism (gvl_lock.c) calls these at fixed points, with g->mu held
 * unless noted: pick (release, yield, safe point, timer), queue_prio (a
 * waiter queues; it asks the holder to yield if that priority is above
 * the hold's), requeue_prio (a yielder queues), hold_start (a slice
 * starts), charge (a boosted hold ends or goes on past a safe point),
 * hot_ok and take_back_ok (revocable grants), tick (the timer waiter
 * wakes), interactive (on the thread itself, without g->mu).  None of them
 * touches the lock word, the queue or the timer role.  All per-GVL state
 * is g->pol, which gvl__pol_reset re-initialises at once (creation, and the
 * child after fork()).
 */
#include "gvl_int.h"

#include <limits.h>
#include <string.h>

void gvl__pol_reset(gvl_t *g) {
  memset(&g->pol, 0, sizeof g->pol);
  g->pol.held_prio = INT_MIN;
}

/* ---- the boost cap ------------------------------------------------------------
 * A hold is boosted, and charged, when its priority is above 0 or its
 * acquire asked for more than 0 (gvl__boosted).  Each is charged once, for
 * the time it held, booked when it
 * ends (or passes a safe point that keeps the GVL) in the bucket of that
 * moment.  The window is GVL__CAP_BUCKETS buckets; the sum over the
 * GVL__CAP_SLOTS most recent ones covers at least the last window_ns, so
 * every hold that overlapped the last window is counted in full.  A waiter
 * whose hold would be charged is served only while that sum is below cap%
 * of the window, and this is decided at every pick, not when it queued.  Hence over any
 * window, boosted holds granted in it take less than cap% of it plus the
 * last one (gvl.h states the bound). */

static uint64_t cap_width(const gvl_t *g) {
  return g->window_ns / GVL__CAP_BUCKETS;
}

void gvl__pol_charge(gvl_t *g, uint64_t now, uint64_t held) {
  uint64_t cur = now / cap_width(g);
  int i = (int)(cur % GVL__CAP_SLOTS);
  if (g->pol.cap_epoch[i] != cur) {
    g->pol.cap_epoch[i] = cur;
    g->pol.cap_ns[i] = 0;
  }
  g->pol.cap_ns[i] += held;
}

/* O(GVL__CAP_SLOTS).  No overflow: settings are at most GVL__MAX_NS. */
static bool cap_exceeded(gvl_t *g, uint64_t now) {
  uint64_t cur = now / cap_width(g), used = 0;
  unsigned pct = atomic_load_explicit(&g->cap_pct, memory_order_relaxed);
  /* 100: boosted holds may take all of every window, so none is held back
   * (the slots span up to 9/8 of a window: their sum reaches the window
   * while no window was over). */
  if (pct >= 100) return false;
  for (int i = 0; i < GVL__CAP_SLOTS; i++)
    if (g->pol.cap_epoch[i] + GVL__CAP_SLOTS > cur) used += g->pol.cap_ns[i];
  return used * 100 >= (uint64_t)pct * g->window_ns;
}

/* When the sum cap_exceeded() reads next falls: the end of the oldest
 * bucket still in it (the sum only grows by charges, which a pick sees
 * when they come). */
static uint64_t cap_next_drop(gvl_t *g, uint64_t now) {
  uint64_t cur = now / cap_width(g), first = UINT64_MAX;
  for (int i = 0; i < GVL__CAP_SLOTS; i++)
    if (g->pol.cap_ns[i] && g->pol.cap_epoch[i] + GVL__CAP_SLOTS > cur &&
        g->pol.cap_epoch[i] < first)
      first = g->pol.cap_epoch[i];
  return first == UINT64_MAX ? now : (first + GVL__CAP_SLOTS) * cap_width(g);
}

/* ---- order ------------------------------------------------------------------ */

/* Queued priority plus one level per age_ns waited, without a ceiling: a
 * longer wait always counts.  No overflow: the bonus is below 2^63 until a
 * wait of 292 years. */
static int64_t eff_prio(const gvl_t *g, const gvl_thread_t *t, uint64_t now) {
  uint64_t waited = now > t->qtime ? now - t->qtime : 0;
  return (int64_t)t->qprio + (int64_t)(waited / g->age_ns);
}

/* Highest effective priority, the earliest arrival among equals (the queue
 * is in arrival order, so strict '>' keeps FIFO).  While the cap is
 * exceeded, waiters whose hold would be charged are held back: served only
 * when nobody else waits, and then not by a yield or safe point of an
 * unboosted holder (strict) within its slice, which keeps the GVL rather
 * than feed the flood.  (A boosted holder passes them the GVL: its own time
 * is boosted too, and boosted threads take turns as usual.)  A held-back
 * waiter still waits at normal priority: once the holder's slice is over,
 * the slice preemption serves it like any waiter, so a holder that spins
 * on safe points until it sees the waiter's work ("0 until flag") lets it
 * in.  O(waiters). */
gvl_thread_t *gvl__pol_pick(gvl_t *g, uint64_t now, bool strict) {
  gvl_thread_t *best = NULL, *held = NULL;
  int64_t bp = 0, hp = 0;
  int capx = -1;                 /* cap_exceeded, computed on first need */
  int hq = INT_MIN;              /* the highest qprio held back */
  for (gvl_thread_t *w = g->qhead; w; w = w->qnext) {
    int64_t p = eff_prio(g, w, now);
    if (w->qboost) {
      if (capx < 0) capx = cap_exceeded(g, now);
      if (capx) {
        if (!held || p > hp) held = w, hp = p;
        if (w->qprio > hq) hq = w->qprio;
        continue;
      }
    }
    if (!best || p > bp) best = w, bp = p;
  }
  g->pol.held_prio = hq;
  if (best || !held || !strict) return best ? best : held;
  uint64_t slice = atomic_load_explicit(&g->slice_ns, memory_order_relaxed);
  return now >= g->pol.hold_since + slice ? held : NULL;
}

/* The priority a waiter queues at.  A boost that comes while the cap is
 * exceeded is refused: it queues at normal priority (and stays held back
 * at every pick while the cap is exceeded, see above); *refused is set. */
int gvl__pol_queue_prio(gvl_t *g, int prio, uint64_t now, bool *refused) {
  *refused = prio > 0 && cap_exceeded(g, now);
  return *refused ? GVL_PRIO_NORMAL : prio;
}

int gvl__pol_requeue_prio(gvl_thread_t *t, int mine, int theirs, uint64_t now) {
  if (mine < 1 && t->ia_ret && gvl__pol_short_stretch(t, now)) mine = 1;
  return mine < theirs ? mine : theirs;
}

/* ---- the slice ---------------------------------------------------------------- */

void gvl__pol_hold_start(gvl_t *g, uint64_t now) { g->pol.hold_since = now; }

/* A revocable grant costs the waiter nothing when it could not have run
 * yet anyway, but it must not stretch the releaser's slice (taking the
 * grant back resumes the slice where it was).  Into a blocking region,
 * it must not delay a waiter the releaser was asked to make way for: w
 * not above t.  At the end of a boosted hold, w must be below it: a
 * boosted acquire that outranks w would have it give the GVL up at its
 * first safe point anyway. */
bool gvl__pol_hot_ok(gvl_t *g, gvl_thread_t *t, gvl_thread_t *w, uint64_t now,
                     int kind) {
  uint64_t slice = atomic_load_explicit(&g->slice_ns, memory_order_relaxed);
  if ((g->flags & GVL_F_NORETAKE) || now >= g->pol.hold_since + slice)
    return false;
  if (kind == GVL__HOT_REGION) return w->qprio <= t->req_prio;
  return w->qprio < atomic_load_explicit(&t->hold_prio, memory_order_relaxed);
}

/* At the take-back itself: still within the slice the grant interrupted,
 * and a hold at prio that would be boosted only while the cap allows
 * boosts (else it would have queued behind the waiter, demoted).  After a
 * boosted hold, only where the acquire would have been served next once
 * the waiter gave the GVL up: above the waiter's priority, and above every
 * other waiter's (one that queued meanwhile at prio would go first). */
bool gvl__pol_take_back_ok(gvl_t *g, gvl_thread_t *w, int prio, int kind,
                           uint64_t since, uint64_t now) {
  uint64_t slice = atomic_load_explicit(&g->slice_ns, memory_order_relaxed);
  if (now >= since + slice || (prio > 0 && cap_exceeded(g, now))) return false;
  if (kind == GVL__HOT_REGION) return true;
  if (prio <= w->qprio) return false;
  for (gvl_thread_t *q = g->qhead; q; q = q->qnext)
    if (eff_prio(g, q, now) >= prio) return false;
  return true;
}

/* While the cap is exceeded, the timer looks again as the window's oldest
 * charges leave it, but never sooner than GVL__RETICK_NS. */
static uint64_t next_look(gvl_t *g, uint64_t now) {
  uint64_t next = cap_next_drop(g, now);
  return next < now + GVL__RETICK_NS ? now + GVL__RETICK_NS : next;
}

/* Within the holder's slice: a boosted waiter above the hold that the cap
 * held back as the GVL was handed on (it queued while boosts were allowed,
 * so it asked nobody, or asked a holder whose safe point then kept the
 * GVL) asks the holder once the cap allows boosts again, as if it queued
 * then; until then the timer looks again as the window's oldest bucket
 * leaves it (at least GVL__RETICK_NS apart).  Without this it waited out
 * the whole slice, which may be far longer than the window.  Returns the
 * next look, at most due (the slice's end). */
static uint64_t held_back_tick(gvl_t *g, gvl_thread_t *o, uint64_t now,
                               uint64_t due, gvl_thread_t **target) {
  if (!o || (__atomic_load_n(&o->head.ints, __ATOMIC_RELAXED) & GVL__INT_PREEMPT))
    return due;
  int hold = atomic_load_explicit(&o->hold_prio, memory_order_relaxed);
  bool above = false;
  for (gvl_thread_t *w = g->qhead; w && !above; w = w->qnext)
    above = w->qboost && w->qprio > hold;
  if (!above) return due;
  if (!cap_exceeded(g, now)) {
    gvl__request_preempt(o);
    *target = o;
    return due;
  }
  uint64_t next = next_look(g, now);
  return next < due ? next : due;
}

uint64_t gvl__pol_look_by(gvl_t *g, int hold_prio, uint64_t now) {
  return g->pol.held_prio > hold_prio ? next_look(g, now) : 0;
}

/* Past the slice with someone the policy would serve (past the slice, a
 * waiter the cap holds back counts too, see gvl__pol_pick): ask the holder,
 * and look again a slice later, in case it cleared its flag without
 * giving the GVL up.  A holder that has not answered yet sits in native
 * code without safe points, or its host lost the hook's news (a host that
 * turns PREEMPT_REQ into a signal of its own may drop it: OCaml 4.13 does
 * while the signal is masked), so the hook is told again (*target; not a
 * new request, and not counted); the look after is at least
 * GVL__RETICK_NS away, so a slice of a few ns does not make the timer
 * spin (a handoff wakes it if the next slice ends before that, see
 * handoff).  This runs only while someone waits. */
uint64_t gvl__pol_tick(gvl_t *g, uint64_t now, gvl_thread_t **target) {
  uint64_t slice = atomic_load_explicit(&g->slice_ns, memory_order_relaxed);
  uint64_t later = now + (slice > GVL__RETICK_NS ? slice : GVL__RETICK_NS);
  gvl_thread_t *o =
      gvl__owner(atomic_load_explicit(&g->word, memory_order_relaxed));
  if (now < g->pol.hold_since + slice)
    return held_back_tick(g, o, now, g->pol.hold_since + slice, target);
  bool strict =
      !o || atomic_load_explicit(&o->hold_prio, memory_order_relaxed) <= 0;
  if (!gvl__pol_pick(g, now, strict)) return later; /* nobody to serve */
  if (o && (__atomic_load_n(&o->head.ints, __ATOMIC_RELAXED) &
            GVL__INT_PREEMPT)) {
    *target = o;                        /* asked, no answer: remind the hook */
    return later;
  }
  if (o) {
    gvl__request_preempt(o);
    *target = o;
  }
  return now + slice;
}

/* ---- interactivity -------------------------------------------------------------- */

/* The rule applies to t: on, and t has come back from a region since its
 * last acquire. */
static bool ia_on(const gvl_thread_t *t) {
  return !t->interactive_off && !(t->g->flags & GVL_F_NOINTERACTIVE) && t->ia_t0;
}

/* Is t within a tenth of a slice of its return from a region?  The rule's
 * test of a stretch (gvl__pol_interactive); also, a promoted return
 * (t->ia_ret) preempted that soon (by another I/O thread's promotion, say)
 * requeues at the promotion's level (gvl__pol_requeue_prio), not behind a
 * CPU-bound waiter whose slice it would then wait out (two I/O threads and
 * a hog on one CPU: a slice per round trip).  t only. */
bool gvl__pol_short_stretch(gvl_thread_t *t, uint64_t now) {
  uint64_t slice = atomic_load_explicit(&t->g->slice_ns, memory_order_relaxed);
  return ia_on(t) && now - t->ia_t0 < slice / 10;
}

/* A thread whose stretch since it last came back from gvl_call_without was
 * short (under a tenth of a slice, wall time, whatever happened in it) is
 * I/O-bound: its next reacquire is promoted one level above normal.  One
 * long stretch after a short one does not demote it: wall time also counts
 * the moments the OS ran something else on t's CPU, and a demoted I/O
 * thread waits out whole slices (a convoy beside 2 hogs lost 20 ms to one
 * such moment).  So only two long stretches in a row do, and a thread that
 * computes across slices between blocking calls is never promoted.
 * t only, no lock. */
bool gvl__pol_interactive(gvl_thread_t *t, uint64_t now) {
  if (!ia_on(t)) {
    t->ia_short = false;
    return false;
  }
  bool was = t->ia_short;
  t->ia_short = gvl__pol_short_stretch(t, now);
  return t->ia_short || was;
}

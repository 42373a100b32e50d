/* SPDX-License-Identifier: MIT */
/*
 * variant_token.c -- `token`: the least a lock can cost the convoy.
 *
 * Not a GVL anyone should ship: one word says who holds the lock, waiters
 * spin on it (bounded, then sched_yield), and the one thread that comes
 * back from a blocking region asks for it by name in a second word, which
 * the holder reads at its next safe point and answers by storing that
 * thread into the first.  No queue, no clock on the handoff path, no
 * fairness beyond a 10 ms turn between threads that ask normally.  A
 * handoff is one store seen by a spinning waiter, the floor case's own
 * transfer, so the convoy's figures for this variant are what any lock
 * that hands over at safe points gets on this machine in this mode: its
 * floor.  Only the convoy case runs it; it serves one prioritised thread
 * at a time (the convoy has one), a second one queues as a normal waiter.
 */
#include "baseline.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#define TK_SPINS 4000                    /* pause spins before each sched_yield */
#define TK_TURN_NS (10u * 1000u * 1000u) /* a normal waiter's turn */

typedef struct tk_gvl tk_gvl_t;

typedef struct {
  tk_gvl_t *g;
  uint64_t since;      /* holder only: its first look at the clock since it
                          took the lock (0: none yet), for the turn      */
  unsigned checks;     /* safe points since the last clock read             */
} tk_thread_t;

struct tk_gvl {
  _Alignas(64) _Atomic(tk_thread_t *) owner; /* NULL: free                  */
  _Atomic(tk_thread_t *) want;               /* asked for by name           */
  _Atomic(tk_thread_t *) no_barge;           /* may not take a free lock    */
  atomic_int nwait;                          /* normal waiters              */
  _Alignas(64) tk_thread_t *last;            /* holder only: for handoffs   */
  atomic_uint_fast64_t handoffs, preemptions;
};

static inline void tk_pause(unsigned *n) {
  if (++*n < TK_SPINS) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    sched_yield();
  }
}

static void tk_took(tk_thread_t *t) {
  tk_gvl_t *g = t->g;
  atomic_store_explicit(&g->no_barge, NULL, memory_order_relaxed);
  if (g->last != t) {
    g->last = t;
    atomic_fetch_add_explicit(&g->handoffs, 1, memory_order_relaxed);
  }
  t->since = 0;
  t->checks = 0;
}

static int tk_try(tk_thread_t *t) {
  tk_gvl_t *g = t->g;
  tk_thread_t *none = NULL;
  if (atomic_load_explicit(&g->owner, memory_order_relaxed) != NULL) return 0;
  if (atomic_load_explicit(&g->no_barge, memory_order_relaxed) == t) return 0;
  return atomic_compare_exchange_strong_explicit(&g->owner, &none, t, memory_order_acquire,
                                                 memory_order_relaxed);
}

static void tk_acquire(void *tp) {
  tk_thread_t *t = tp;
  unsigned n = 0;
  if (tk_try(t)) goto took;
  atomic_fetch_add(&t->g->nwait, 1);
  while (!tk_try(t)) tk_pause(&n);
  atomic_fetch_sub(&t->g->nwait, 1);
took:
  tk_took(t);
}

/* Asked for by name: the holder stores this thread as the owner at its next
 * safe point; a lock that is free meanwhile is taken at once. */
static void tk_acquire_prio(void *tp, int prio) {
  tk_thread_t *t = tp, *me = t, *none = NULL;
  tk_gvl_t *g = t->g;
  unsigned n = 0;
  if (prio <= 0 || !atomic_compare_exchange_strong(&g->want, &none, t)) {
    tk_acquire(t);
    return;
  }
  for (;;) {
    tk_thread_t *o = atomic_load_explicit(&g->owner, memory_order_acquire);
    if (o == t) break;
    if (o == NULL && tk_try(t)) {
      /* Took it free; withdraw the request unless a holder already answered
       * it (then want is NULL already). */
      atomic_compare_exchange_strong(&g->want, &me, NULL);
      break;
    }
    tk_pause(&n);
  }
  tk_took(t);
}

/* Give the lock to whoever asked by name, else free it. */
static void tk_release(void *tp) {
  tk_gvl_t *g = ((tk_thread_t *)tp)->g;
  tk_thread_t *w = atomic_exchange(&g->want, NULL);
  atomic_store_explicit(&g->owner, w, memory_order_release);
}

/* Free the lock for a normal waiter, and do not take it back until one
 * has. */
static void tk_pass(tk_thread_t *t) {
  atomic_store_explicit(&t->g->no_barge, t, memory_order_relaxed);
  tk_release(t);
  tk_acquire(t);
}

static void tk_yield(void *tp) {
  tk_thread_t *t = tp;
  if (atomic_load(&t->g->want) || atomic_load(&t->g->nwait)) tk_pass(t);
}

static void tk_check_ints(void *tp) {
  tk_thread_t *t = tp;
  tk_gvl_t *g = t->g;
  if (atomic_load_explicit(&g->want, memory_order_relaxed) != NULL) {
    atomic_fetch_add_explicit(&g->preemptions, 1, memory_order_relaxed);
    tk_release(t);
    tk_acquire(t);
    return;
  }
  /* The turn: a clock read every 256 safe points, only with waiters. */
  if ((++t->checks & 255) || !atomic_load_explicit(&g->nwait, memory_order_relaxed)) return;
  uint64_t now = bench_now_ns();
  if (!t->since) t->since = now;
  else if (now - t->since >= TK_TURN_NS) {
    atomic_fetch_add_explicit(&g->preemptions, 1, memory_order_relaxed);
    tk_pass(t);
  }
}

/* Comes back asking by name, as gvloop's interactivity policy lets a thread
 * that was in a short blocking region preempt at the next safe point. */
static void *tk_call_without(void *tp, void *(*fn)(void *), void *arg) {
  tk_release(tp);
  void *r = fn(arg);
  tk_acquire_prio(tp, 1);
  return r;
}

static void *tk_create(void) {
  tk_gvl_t *g = aligned_alloc(64, sizeof(tk_gvl_t));
  if (!g) bench_die("aligned_alloc", 0);
  *g = (tk_gvl_t){.owner = NULL};   /* {0}: an int for an _Atomic pointer (clang) */
  return g;
}

static void tk_destroy(void *g) { free(g); }

static void *tk_attach(void *g) {
  tk_thread_t *t = bench_xcalloc(1, sizeof *t);
  t->g = g;
  return t;
}

static void tk_detach(void *t) { free(t); }

static void *tk_mutex_create(void *g) {
  (void)g;
  return bench_bmutex_create(&bench_token_ops);
}

static void tk_stats(void *gp, bench_stats_t *out) {
  tk_gvl_t *g = gp;
  out->handoffs = atomic_load(&g->handoffs);
  out->preemptions = atomic_load(&g->preemptions);
  out->ia_cost_ns = 0;
}

const bench_gvl_ops_t bench_token_ops = {
    "token", "the convoy's floor: one word, spinning waiters, the returning thread asked for "
             "by name and handed the lock at the next safe point (bench/src/variant_token.c)",
    tk_create, tk_destroy, tk_attach, tk_detach, tk_acquire, tk_acquire_prio, tk_release,
    tk_yield, tk_check_ints, tk_call_without, tk_mutex_create, bench_bmutex_destroy,
    bench_bmutex_lock, bench_bmutex_unlock, tk_stats};

/* SPDX-License-Identifier: MIT */
/*
 * variant_cond_timer.c -- baseline `cond-timer`: the GVL of Ruby 1.9.3 to 3.x.
 *
 * Design followed: Ruby's thread_pthread.c as of 2.6-3.2 (gvl_acquire_common /
 * thread_sched_to_running_common, do_gvl_timer, thread_sched_yield), the
 * descendant of the 1.9.3 "newgvl" in the seed's table:
 *  - A mutex guards `running` (the holder) and a FIFO ready queue; each
 *    waiter sleeps on its own condvar and the releaser signals the head.
 *  - No timer thread: the first waiter becomes the "timer" and does a timed
 *    wait of TIME_QUANTUM (100 ms).  When that wait returns, it sets the
 *    holder's timer-interrupt flag.  The deadline is only recomputed after
 *    a wait that timed out (Ruby keeps it in a static), so the quantum runs
 *    from when the timer started, not from each wake-up.
 *  - The holder sees the flag at its next safe point (RUBY_VM_CHECK_INTS) and
 *    calls thread_sched_yield(): release, and if someone waits, sleep on
 *    switch_cond until a waiter has taken the GVL (need_yield), then queue
 *    for it again.  Thread.pass is the same yield.
 *  - No priority acquire exists; acquire_prio is acquire.
 * Documented in: ruby/ruby thread_pthread.c (TIME_QUANTUM_USEC 100 ms,
 * do_gvl_timer, thread_sched_yield) and Ruby bug #20861 (a thread waking
 * from a short sleep waits up to 100 ms behind a CPU-bound one).
 */
#include "baseline.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#define CT_QUANTUM_NS (100u * 1000u * 1000u) /* TIME_QUANTUM_USEC */

typedef struct ct_gvl ct_gvl_t;
typedef struct ct_thread ct_thread_t;

struct ct_thread {
  atomic_uint ints;      /* timer interrupt, set by the timer waiter        */
  ct_gvl_t *g;
  pthread_cond_t cond;   /* this thread sleeps here while in the ready queue */
  ct_thread_t *next;     /* ready queue link, guarded by g->lock            */
  int queued;            /* guarded by g->lock                              */
};

struct ct_gvl {
  pthread_mutex_t lock;      /* guards everything below                    */
  ct_thread_t *running;      /* holder                                     */
  ct_thread_t *head, *tail;  /* ready queue, FIFO                          */
  ct_thread_t *timer;        /* the waiter doing the timed wait, or NULL    */
  int timer_err;             /* result of the last timed wait              */
  uint64_t timer_abs;        /* its deadline (Ruby: static abs)            */
  int need_yield, wait_yield;
  pthread_cond_t switch_cond, switch_wait_cond;
  ct_thread_t *last;
  atomic_uint_fast64_t handoffs, preemptions;
};

static void *ct_create(void) {
  ct_gvl_t *g = bench_xcalloc(1, sizeof *g);
  pthread_mutex_init(&g->lock, NULL);
  bench_cond_init_mono(&g->switch_cond);
  bench_cond_init_mono(&g->switch_wait_cond);
  g->timer_err = ETIMEDOUT; /* so the first timer computes a deadline */
  return g;
}

static void ct_destroy(void *gp) {
  ct_gvl_t *g = gp;
  pthread_cond_destroy(&g->switch_cond);
  pthread_cond_destroy(&g->switch_wait_cond);
  pthread_mutex_destroy(&g->lock);
  free(g);
}

static void *ct_attach(void *gp) {
  ct_thread_t *t = bench_xcalloc(1, sizeof *t);
  t->g = gp;
  bench_cond_init_mono(&t->cond);
  return t;
}

static void ct_detach(void *tp) {
  ct_thread_t *t = tp;
  pthread_cond_destroy(&t->cond);
  free(t);
}

static void ct_enqueue(ct_gvl_t *g, ct_thread_t *t) {
  t->next = NULL;
  t->queued = 1;
  if (g->tail) g->tail->next = t; else g->head = t;
  g->tail = t;
}

static void ct_dequeue(ct_gvl_t *g, ct_thread_t *t) {
  ct_thread_t **pp = &g->head, *prev = NULL;
  while (*pp && *pp != t) { prev = *pp; pp = &(*pp)->next; }
  if (*pp == NULL) return;
  *pp = t->next;
  if (g->tail == t) g->tail = prev;
  t->queued = 0;
}

/* do_gvl_timer(): the one timed waiter; when its wait ends it asks the
 * holder, whoever that is now, to yield. */
static void ct_do_timer(ct_gvl_t *g, ct_thread_t *t) {
  g->timer = t;
  if (g->timer_err == ETIMEDOUT) g->timer_abs = bench_now_ns() + CT_QUANTUM_NS;
  g->timer_err = bench_cond_timedwait_abs(&t->cond, &g->lock, g->timer_abs);
  if (g->running) atomic_store(&g->running->ints, 1);
  g->timer = NULL;
}

/* thread_sched_to_running_common(); called with g->lock held. */
static void ct_to_running(ct_gvl_t *g, ct_thread_t *t) {
  if (g->running) {
    ct_enqueue(g, t);
    do {
      if (!g->timer) ct_do_timer(g, t);
      else pthread_cond_wait(&t->cond, &g->lock);
    } while (g->running);
    ct_dequeue(g, t);
    if (g->need_yield) {
      g->need_yield = 0;
      pthread_cond_signal(&g->switch_cond);
    }
  }
  g->running = t;
  if (g->last != t) {
    g->last = t;
    atomic_fetch_add_explicit(&g->handoffs, 1, memory_order_relaxed);
  }
  /* designate_timer_thread(): wake the head so it takes the timer role. */
  if (!g->timer && g->head) pthread_cond_signal(&g->head->cond);
}

/* thread_sched_to_waiting_common(); returns the next waiter, if any. */
static ct_thread_t *ct_to_waiting(ct_gvl_t *g) {
  g->running = NULL;
  if (g->head) pthread_cond_signal(&g->head->cond);
  return g->head;
}

static void ct_acquire(void *tp) {
  ct_thread_t *t = tp;
  bench_lock(&t->g->lock);
  ct_to_running(t->g, t);
  bench_unlock(&t->g->lock);
}

static void ct_acquire_prio(void *tp, int prio) {
  (void)prio;
  ct_acquire(tp);
}

static void ct_release(void *tp) {
  ct_thread_t *t = tp;
  bench_lock(&t->g->lock);
  ct_to_waiting(t->g);
  bench_unlock(&t->g->lock);
}

/* thread_sched_yield(). */
static void ct_yield(void *tp) {
  ct_thread_t *t = tp;
  ct_gvl_t *g = t->g;
  bench_lock(&g->lock);
  ct_thread_t *next = ct_to_waiting(g);
  if (g->wait_yield) {
    while (g->wait_yield) pthread_cond_wait(&g->switch_wait_cond, &g->lock);
  } else if (next) {
    g->need_yield = 1;
    g->wait_yield = 1;
    while (g->need_yield) pthread_cond_wait(&g->switch_cond, &g->lock);
    g->wait_yield = 0;
    pthread_cond_broadcast(&g->switch_wait_cond);
  } else {
    bench_unlock(&g->lock);
    sched_yield();
    bench_lock(&g->lock);
    pthread_cond_broadcast(&g->switch_wait_cond);
  }
  ct_to_running(g, t);
  bench_unlock(&g->lock);
}

/* RUBY_VM_CHECK_INTS -> timer interrupt -> rb_thread_schedule_limits():
 * at priority 0 each tick adds a whole quantum to running_time, so every
 * tick that reaches a safe point yields. */
static void ct_check_ints(void *tp) {
  ct_thread_t *t = tp;
  if (__builtin_expect(atomic_load_explicit(&t->ints, memory_order_relaxed) == 0, 1))
    return;
  atomic_store(&t->ints, 0);
  atomic_fetch_add_explicit(&t->g->preemptions, 1, memory_order_relaxed);
  ct_yield(t);
}

/* BLOCKING_REGION: release, run, take the GVL back through the queue. */
static void *ct_call_without(void *tp, void *(*fn)(void *), void *arg) {
  ct_release(tp);
  void *r = fn(arg);
  ct_acquire(tp);
  return r;
}

static void *ct_mutex_create(void *g) {
  (void)g;
  return bench_bmutex_create(&bench_cond_timer_ops);
}

static void ct_stats(void *gp, bench_stats_t *out) {
  ct_gvl_t *g = gp;
  out->handoffs = atomic_load(&g->handoffs);
  out->preemptions = atomic_load(&g->preemptions);
}

const bench_gvl_ops_t bench_cond_timer_ops = {
    "cond-timer",      "Ruby 1.9.3-3.x: FIFO + condvars, 100 ms timed-wait quantum",
    ct_create,         ct_destroy,
    ct_attach,         ct_detach,
    ct_acquire,        ct_acquire_prio,
    ct_release,        ct_yield,
    ct_check_ints,     ct_call_without,
    ct_mutex_create,   bench_bmutex_destroy,
    bench_bmutex_lock, bench_bmutex_unlock,
    ct_stats};

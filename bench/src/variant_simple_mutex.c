/* SPDX-License-Identifier: MIT */
/*
 * variant_simple_mutex.c -- baseline `simple-mutex`: the GVL of Ruby 1.9.2.
 *
 * Design followed: Ruby 1.9.2's thread_pthread.c / thread.c.  The GVL is one
 * plain pthread mutex (vm->global_vm_lock).  A timer thread wakes every
 * 10 ms (thread_timer(): WAIT_FOR_10MS) and sets the running thread's
 * interrupt flag (timer_thread_function); the thread notices it at its next
 * safe point (RUBY_VM_CHECK_INTS) and calls rb_thread_schedule(), which is
 * unlock, sched_yield(), lock -- the same code as Thread.pass.  Nothing makes
 * the mutex fair: the yielding thread usually takes it straight back, which
 * is why `0 until flag` could hang the test suite (seeds/README.md, part 2)
 * and why its Thread.pass looks fast while rarely handing over.
 * Documented in: ruby_1_9_2 thread_pthread.c (thread_timer) and thread.c
 * (rb_thread_schedule_rec); the seed's table calls it "simple-mutex".
 */
#include "baseline.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#define SM_TICK_NS (10u * 1000u * 1000u) /* the 1.9.2 timer thread period */

typedef struct sm_gvl sm_gvl_t;

typedef struct {
  atomic_uint ints;   /* timer interrupt flag, set by the timer thread   */
  sm_gvl_t *g;
} sm_thread_t;

struct sm_gvl {
  pthread_mutex_t lock;          /* the GVL                               */
  _Atomic(sm_thread_t *) running; /* holder, read by the timer thread     */
  sm_thread_t *last;              /* guarded by lock: previous holder     */
  atomic_int nthreads;            /* attached threads                     */
  pthread_t timer;
  pthread_mutex_t timer_lk;       /* guards timer_stop; held while the timer
                                     flags a thread, and by detach, so a
                                     handle is never freed under the timer */
  pthread_cond_t timer_cv;
  int timer_stop;
  atomic_uint_fast64_t handoffs, preemptions;
};

/* The timer ticks whether or not anyone waits, as 1.9.2's did. */
static void *sm_timer_main(void *arg) {
  sm_gvl_t *g = arg;
  bench_lock(&g->timer_lk);
  uint64_t next = bench_now_ns() + SM_TICK_NS;
  while (!g->timer_stop) {
    if (bench_cond_timedwait_abs(&g->timer_cv, &g->timer_lk, next) == 0) continue;
    next = bench_now_ns() + SM_TICK_NS;
    sm_thread_t *r = atomic_load(&g->running);
    if (r) atomic_store(&r->ints, 1);
  }
  bench_unlock(&g->timer_lk);
  return NULL;
}

static void *sm_create(void) {
  sm_gvl_t *g = bench_xcalloc(1, sizeof *g);
  pthread_mutex_init(&g->lock, NULL);
  pthread_mutex_init(&g->timer_lk, NULL);
  bench_cond_init_mono(&g->timer_cv);
  int err = pthread_create(&g->timer, NULL, sm_timer_main, g);
  if (err) bench_die("pthread_create(timer)", err);
  return g;
}

static void sm_destroy(void *gp) {
  sm_gvl_t *g = gp;
  bench_lock(&g->timer_lk);
  g->timer_stop = 1;
  pthread_cond_signal(&g->timer_cv);
  bench_unlock(&g->timer_lk);
  pthread_join(g->timer, NULL);
  pthread_cond_destroy(&g->timer_cv);
  pthread_mutex_destroy(&g->timer_lk);
  pthread_mutex_destroy(&g->lock);
  free(g);
}

static void *sm_attach(void *gp) {
  sm_thread_t *t = bench_xcalloc(1, sizeof *t);
  t->g = gp;
  atomic_fetch_add(&t->g->nthreads, 1);
  return t;
}

static void sm_detach(void *tp) {
  sm_thread_t *t = tp;
  atomic_fetch_sub(&t->g->nthreads, 1);
  bench_lock(&t->g->timer_lk);
  bench_unlock(&t->g->timer_lk);
  free(t);
}

static void sm_took(sm_thread_t *t) {
  sm_gvl_t *g = t->g;
  if (g->last != t) {
    g->last = t;
    atomic_fetch_add_explicit(&g->handoffs, 1, memory_order_relaxed);
  }
  atomic_store(&g->running, t);
}

static void sm_acquire(void *tp) {
  sm_thread_t *t = tp;
  bench_lock(&t->g->lock);
  sm_took(t);
}

/* No priorities in 1.9.2's GVL. */
static void sm_acquire_prio(void *tp, int prio) {
  (void)prio;
  sm_acquire(tp);
}

static void sm_release(void *tp) {
  sm_thread_t *t = tp;
  atomic_store(&t->g->running, NULL);
  bench_unlock(&t->g->lock);
}

/* rb_thread_schedule(): only when not alone; unlock, yield the CPU, lock. */
static void sm_yield(void *tp) {
  sm_thread_t *t = tp;
  if (atomic_load(&t->g->nthreads) < 2) return;
  sm_release(t);
  sched_yield();
  sm_acquire(t);
}

static void sm_check_ints(void *tp) {
  sm_thread_t *t = tp;
  if (__builtin_expect(atomic_load_explicit(&t->ints, memory_order_relaxed) == 0, 1))
    return;
  atomic_store(&t->ints, 0);
  atomic_fetch_add_explicit(&t->g->preemptions, 1, memory_order_relaxed);
  sm_yield(t);
}

static void *sm_call_without(void *tp, void *(*fn)(void *), void *arg) {
  sm_release(tp);
  void *r = fn(arg);
  sm_acquire(tp);
  return r;
}

static void *sm_mutex_create(void *g) {
  (void)g;
  return bench_bmutex_create(&bench_simple_mutex_ops);
}

static void sm_stats(void *gp, bench_stats_t *out) {
  sm_gvl_t *g = gp;
  out->handoffs = atomic_load(&g->handoffs);
  out->preemptions = atomic_load(&g->preemptions);
}

const bench_gvl_ops_t bench_simple_mutex_ops = {
    "simple-mutex",       "Ruby 1.9.2: one pthread mutex, 10 ms timer thread",
    sm_create,            sm_destroy,
    sm_attach,            sm_detach,
    sm_acquire,           sm_acquire_prio,
    sm_release,           sm_yield,
    sm_check_ints,        sm_call_without,
    sm_mutex_create,      bench_bmutex_destroy,
    bench_bmutex_lock,    bench_bmutex_unlock,
    sm_stats};

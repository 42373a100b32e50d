/* SPDX-License-Identifier: MIT */
/*
 * variant_cpython.c -- baseline `cpython`: the GIL of CPython 3.2 and later.
 *
 * Design followed: CPython's Python/ceval_gil.c (take_gil, drop_gil) with
 * FORCE_SWITCHING, as described in that file's "Notes about the
 * implementation" and in the sys.setswitchinterval() docs:
 *  - The GIL is a boolean `locked` guarded by a mutex, changes signalled on
 *    a condvar.
 *  - A waiter does a timed wait of `interval` (5 ms).  If it times out and no
 *    switch happened meanwhile (switch_number unchanged), it sets
 *    gil_drop_request, which the holder sees through eval_breaker at its
 *    next safe point.  It then keeps waiting; it is not served first.
 *  - The holder that drops on request waits on switch_cond until another
 *    thread has taken the GIL (last_holder changed), so it cannot take it
 *    straight back (FORCE_SWITCHING).  A plain release does not wait.
 *  - Thread switches only happen through the drop request or blocking
 *    regions (Py_BEGIN/END_ALLOW_THREADS = drop_gil / take_gil).  Python has
 *    no Thread.pass; the idiom is time.sleep(0): drop, sched_yield, take.
 *  - No priorities; acquire_prio is acquire.
 * Documented in: cpython Python/ceval_gil.c and bpo-7946 (the convoy effect:
 * an I/O thread pays about one interval per blocking call next to a CPU
 * thread).
 */
#include "baseline.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#define CP_INTERVAL_NS (5u * 1000u * 1000u) /* DEFAULT_INTERVAL 5000 us */

typedef struct cp_gil cp_gil_t;

typedef struct {
  cp_gil_t *g;
} cp_thread_t;

struct cp_gil {
  pthread_mutex_t mutex;          /* guards locked, switch_number          */
  pthread_cond_t cond;
  int locked;
  unsigned long switch_number;
  _Atomic(cp_thread_t *) last_holder; /* written under switch_mutex       */
  atomic_int drop_request;        /* gil_drop_request / eval_breaker       */
  pthread_mutex_t switch_mutex;   /* FORCE_SWITCHING                       */
  pthread_cond_t switch_cond;
  atomic_uint_fast64_t handoffs, preemptions;
};

static void *cp_create(void) {
  cp_gil_t *g = bench_xcalloc(1, sizeof *g);
  pthread_mutex_init(&g->mutex, NULL);
  pthread_mutex_init(&g->switch_mutex, NULL);
  bench_cond_init_mono(&g->cond);
  bench_cond_init_mono(&g->switch_cond);
  return g;
}

static void cp_destroy(void *gp) {
  cp_gil_t *g = gp;
  pthread_cond_destroy(&g->cond);
  pthread_cond_destroy(&g->switch_cond);
  pthread_mutex_destroy(&g->mutex);
  pthread_mutex_destroy(&g->switch_mutex);
  free(g);
}

static void *cp_attach(void *gp) {
  cp_thread_t *t = bench_xcalloc(1, sizeof *t);
  t->g = gp;
  return t;
}

static void cp_detach(void *t) { free(t); }

/* take_gil(). */
static void cp_take(cp_thread_t *t) {
  cp_gil_t *g = t->g;
  int drop_requested = 0;
  bench_lock(&g->mutex);
  while (g->locked) {
    unsigned long saved = g->switch_number;
    int err = bench_cond_timedwait_abs(&g->cond, &g->mutex, bench_now_ns() + CP_INTERVAL_NS);
    if (err && g->locked && g->switch_number == saved) {
      atomic_store(&g->drop_request, 1);
      drop_requested = 1;
    }
  }
  bench_lock(&g->switch_mutex);
  g->locked = 1;
  if (atomic_load(&g->last_holder) != t) {
    atomic_store(&g->last_holder, t);
    g->switch_number++;
    atomic_fetch_add_explicit(&g->handoffs, 1, memory_order_relaxed);
  }
  pthread_cond_signal(&g->switch_cond);
  bench_unlock(&g->switch_mutex);
  if (drop_requested) atomic_store(&g->drop_request, 0);
  bench_unlock(&g->mutex);
}

/* drop_gil(). */
static void cp_drop(cp_thread_t *t) {
  cp_gil_t *g = t->g;
  bench_lock(&g->mutex);
  g->locked = 0;
  pthread_cond_signal(&g->cond);
  bench_unlock(&g->mutex);
  if (atomic_load(&g->drop_request)) {
    bench_lock(&g->switch_mutex);
    if (atomic_load(&g->last_holder) == t) {
      atomic_store(&g->drop_request, 0);
      pthread_cond_wait(&g->switch_cond, &g->switch_mutex);
    }
    bench_unlock(&g->switch_mutex);
  }
}

static void cp_acquire(void *t) { cp_take(t); }
static void cp_acquire_prio(void *t, int prio) {
  (void)prio;
  cp_take(t);
}
static void cp_release(void *t) { cp_drop(t); }

/* time.sleep(0). */
static void cp_yield(void *t) {
  cp_drop(t);
  sched_yield();
  cp_take(t);
}

/* The eval loop's eval_breaker check: drop on request, then queue again. */
static void cp_check_ints(void *tp) {
  cp_thread_t *t = tp;
  if (__builtin_expect(atomic_load_explicit(&t->g->drop_request, memory_order_relaxed) == 0, 1))
    return;
  atomic_fetch_add_explicit(&t->g->preemptions, 1, memory_order_relaxed);
  cp_drop(t);
  cp_take(t);
}

static void *cp_call_without(void *t, void *(*fn)(void *), void *arg) {
  cp_drop(t);
  void *r = fn(arg);
  cp_take(t);
  return r;
}

static void *cp_mutex_create(void *g) {
  (void)g;
  return bench_bmutex_create(&bench_cpython_ops);
}

static void cp_stats(void *gp, bench_stats_t *out) {
  cp_gil_t *g = gp;
  out->handoffs = atomic_load(&g->handoffs);
  out->preemptions = atomic_load(&g->preemptions);
}

const bench_gvl_ops_t bench_cpython_ops = {
    "cpython",         "CPython 3.2+: 5 ms interval, drop request, forced switching",
    cp_create,         cp_destroy,
    cp_attach,         cp_detach,
    cp_acquire,        cp_acquire_prio,
    cp_release,        cp_yield,
    cp_check_ints,     cp_call_without,
    cp_mutex_create,   bench_bmutex_destroy,
    bench_bmutex_lock, bench_bmutex_unlock,
    cp_stats};

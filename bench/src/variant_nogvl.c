/* SPDX-License-Identifier: MIT */
/*
 * variant_nogvl.c -- no lock at all: what a workload costs without one.
 *
 * Every GVL call is a no-op; yield is sched_yield(); the mutex is a bare
 * pthread mutex, so the `mutex` case measures "nogvl with pthread mutex",
 * the reference DESIGN.md's target is stated against.  Where a workload
 * needs mutual exclusion to make sense (the starvation guard) this variant
 * is not run.
 */
#include "bench.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

static char nogvl_token;

static void *n_create(void) { return &nogvl_token; }
static void n_destroy(void *g) { (void)g; }

/* Each thread needs a distinct handle so the harness can tell threads apart. */
static void *n_attach(void *g) {
  (void)g;
  return bench_xcalloc(1, 1);
}

static void n_detach(void *t) { free(t); }
static void n_nop(void *t) { (void)t; }
static void n_acquire_prio(void *t, int prio) {
  (void)t;
  (void)prio;
}
static void n_acquire_rt(void *t, int prio) {
  (void)t;
  if (prio > 0) bench_rt_self_once();
}
static void n_yield(void *t) {
  (void)t;
  sched_yield();
}
static void *n_call_without(void *t, void *(*fn)(void *), void *arg) {
  (void)t;
  return fn(arg);
}

static void *n_mutex_create(void *g) {
  (void)g;
  pthread_mutex_t *m = bench_xcalloc(1, sizeof *m);
  int err = pthread_mutex_init(m, NULL);
  if (err) bench_die("pthread_mutex_init", err);
  return m;
}

static void n_mutex_destroy(void *m) {
  pthread_mutex_destroy(m);
  free(m);
}

static void n_mutex_lock(void *t, void *m) {
  (void)t;
  int err = pthread_mutex_lock(m);
  if (err) bench_die("pthread_mutex_lock", err);
}

static void n_mutex_unlock(void *t, void *m) {
  (void)t;
  int err = pthread_mutex_unlock(m);
  if (err) bench_die("pthread_mutex_unlock", err);
}

static void n_stats(void *g, bench_stats_t *out) {
  (void)g;
  out->handoffs = 0;
  out->preemptions = 0;
}

/* The two variants differ only in their name and what a boost does. */
#define NOGVL_OPS(NAME, DESIGN, ACQ_PRIO)                                      \
  {                                                                            \
    NAME, DESIGN, n_create, n_destroy, n_attach, n_detach, n_nop, ACQ_PRIO,    \
        n_nop, n_yield, n_nop, n_call_without, n_mutex_create,                 \
        n_mutex_destroy, n_mutex_lock, n_mutex_unlock, n_stats                 \
  }

const bench_gvl_ops_t bench_nogvl_ops =
    NOGVL_OPS("nogvl", "no lock; pthread mutex for Mutex", n_acquire_prio);
const bench_gvl_ops_t bench_nogvl_rt_ops =
    NOGVL_OPS("nogvl-rt", "no lock; a thread that boosts runs SCHED_FIFO", n_acquire_rt);

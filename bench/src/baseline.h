/* SPDX-License-Identifier: MIT */
/*
 * baseline.h -- pieces shared by the baseline GVLs (bench only).
 */
#ifndef BENCH_BASELINE_H
#define BENCH_BASELINE_H

#include "bench.h"

#include <pthread.h>
#include <stdint.h>

/* A host-level Mutex for the baselines, in the way both Ruby (thread_sync.c:
 * a contended Mutex#lock sleeps with the GVL released and retries when the
 * unlocker wakes it) and CPython (Modules/_threadmodule.c acquire_timed: try
 * without blocking, else block on the lock with the GIL released) build one
 * over their GVL.  owner is guarded by the GVL itself; lk/cv only carry
 * sleeping and waking.  Unlock wakes one sleeper and does not hand the mutex
 * over: the woken thread retries, as in both runtimes. */
typedef struct {
  const bench_gvl_ops_t *ops;  /* the variant whose GVL guards owner     */
  void *owner;                 /* guarded by the GVL                     */
  pthread_mutex_t lk;
  pthread_cond_t cv;
  unsigned waiting;            /* guarded by lk                          */
  unsigned long gen;           /* guarded by lk: bumped by each wake-up  */
} bench_bmutex_t;

void *bench_bmutex_create(const bench_gvl_ops_t *ops);
void bench_bmutex_destroy(void *m);
void bench_bmutex_lock(void *t, void *m);
void bench_bmutex_unlock(void *t, void *m);

/* pthread helpers that die on failure (a failed lock is a broken invariant). */
void bench_lock(pthread_mutex_t *m);
void bench_unlock(pthread_mutex_t *m);
void bench_cond_init_mono(pthread_cond_t *c);
/* Timed wait until the absolute CLOCK_MONOTONIC time abs_ns; returns 0 or
 * ETIMEDOUT. */
int bench_cond_timedwait_abs(pthread_cond_t *c, pthread_mutex_t *m, uint64_t abs_ns);

#endif /* BENCH_BASELINE_H */

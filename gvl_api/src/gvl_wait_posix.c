/* SPDX-License-Identifier: MIT */
/*
 * gvl_wait_posix.c -- thread parking with a mutex and condition variable
 * per thread, for systems without futexes.  Same contract as the futex
 * version: sleep while seq is unchanged, bounded by an optional deadline.
 */
#include "gvl_int.h"

#include <stdlib.h>
#include <time.h>

int gvl__park_init(gvl__park_t *p) {
  pthread_condattr_t ca;
  int rc;
  atomic_init(&p->seq, 0);
  if ((rc = pthread_mutex_init(&p->mu, NULL))) return rc;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  rc = pthread_cond_init(&p->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (rc) pthread_mutex_destroy(&p->mu);
  return rc;
}

void gvl__park_fini(gvl__park_t *p) {
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
}

void gvl__park_after_fork(gvl__park_t *p) {
  pthread_mutex_init(&p->mu, NULL);
}

void gvl__park_wait(gvl__park_t *p, uint32_t seq, uint64_t deadline_ns) {
  struct timespec ts;
  ts.tv_sec = (time_t)(deadline_ns / 1000000000u);
  ts.tv_nsec = (long)(deadline_ns % 1000000000u);
  if (pthread_mutex_lock(&p->mu)) abort();
  while (atomic_load_explicit(&p->seq, memory_order_acquire) == seq) {
    int rc = deadline_ns ? pthread_cond_timedwait(&p->cv, &p->mu, &ts)
                         : pthread_cond_wait(&p->cv, &p->mu);
    if (rc == ETIMEDOUT) break;
  }
  pthread_mutex_unlock(&p->mu);
}

void gvl__park_wake(gvl__park_t *p) {
  if (pthread_mutex_lock(&p->mu)) abort();
  atomic_fetch_add_explicit(&p->seq, 1, memory_order_release);
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

/* Without futexes the whole wake is the kick: seq is bumped under p->mu,
 * which a sleeper holds from its check of seq to its wait. */
bool gvl__park_bump(gvl__park_t *p) {
  (void)p;
  return true;
}

void gvl__park_kick(gvl__park_t *p) { gvl__park_wake(p); }

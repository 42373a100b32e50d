/* SPDX-License-Identifier: MIT */
/* baseline_common.c -- the baselines' host-level Mutex and pthread helpers. */
#include "baseline.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

void bench_lock(pthread_mutex_t *m) {
  int err = pthread_mutex_lock(m);
  if (err) bench_die("pthread_mutex_lock", err);
}

void bench_unlock(pthread_mutex_t *m) {
  int err = pthread_mutex_unlock(m);
  if (err) bench_die("pthread_mutex_unlock", err);
}

/* Both runtimes time their waits on CLOCK_MONOTONIC where they can. */
void bench_cond_init_mono(pthread_cond_t *c) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  int err = pthread_cond_init(c, &a);
  pthread_condattr_destroy(&a);
  if (err) bench_die("pthread_cond_init", err);
}

int bench_cond_timedwait_abs(pthread_cond_t *c, pthread_mutex_t *m, uint64_t abs_ns) {
  struct timespec ts = {(time_t)(abs_ns / 1000000000u), (long)(abs_ns % 1000000000u)};
  int err = pthread_cond_timedwait(c, m, &ts);
  if (err && err != ETIMEDOUT) bench_die("pthread_cond_timedwait", err);
  return err;
}

void *bench_bmutex_create(const bench_gvl_ops_t *ops) {
  bench_bmutex_t *m = bench_xcalloc(1, sizeof *m);
  m->ops = ops;
  pthread_mutex_init(&m->lk, NULL);
  bench_cond_init_mono(&m->cv);
  return m;
}

void bench_bmutex_destroy(void *mp) {
  bench_bmutex_t *m = mp;
  pthread_cond_destroy(&m->cv);
  pthread_mutex_destroy(&m->lk);
  free(m);
}

/* Sleep with the GVL released until an unlock bumps gen.  Registering
 * (waiting++) before the GVL is dropped means an unlock that happens in
 * between still sees us and bumps gen, so no wake-up is lost. */
static void bmutex_sleep(bench_bmutex_t *m, void *t) {
  bench_lock(&m->lk);
  unsigned long g = m->gen;
  m->waiting++;
  bench_unlock(&m->lk);
  m->ops->release(t);
  bench_lock(&m->lk);
  while (m->gen == g) pthread_cond_wait(&m->cv, &m->lk);
  m->waiting--;
  bench_unlock(&m->lk);
  m->ops->acquire(t);
}

void bench_bmutex_lock(void *t, void *mp) {
  bench_bmutex_t *m = mp;
  if (m->owner == t) bench_die("bmutex: recursive lock", EDEADLK);
  while (m->owner != NULL) bmutex_sleep(m, t);
  m->owner = t;
}

void bench_bmutex_unlock(void *t, void *mp) {
  bench_bmutex_t *m = mp;
  if (m->owner != t) bench_die("bmutex: unlock by non-owner", EPERM);
  m->owner = NULL;
  bench_lock(&m->lk);
  if (m->waiting) {
    m->gen++;
    pthread_cond_signal(&m->cv);
  }
  bench_unlock(&m->lk);
}

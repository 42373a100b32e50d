/* SPDX-License-Identifier: MIT */
/*
 * yield_pingpong.c -- two threads pass the GVL back and forth with
 * gvl_yield, N times each (default 500,000), and print the wall time per
 * yield and the share of yields that handed over.  Built against one
 * revision of libgvl at a time by ab.sh, which interleaves two of them.
 */
#include "gvl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static gvl_t *g;
static long n;
static atomic_int attached;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *passer(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  if (!t) abort();
  atomic_fetch_add(&attached, 1);
  if (gvl_acquire(t)) abort();   /* queues behind main */
  for (long i = 0; i < n; i++)
    if (gvl_yield(t)) abort();
  if (gvl_release(t) || gvl_thread_detach(t)) abort();
  return NULL;
}

int main(int argc, char **argv) {
  pthread_t a, b;
  gvl_stats_t st;
  struct timespec ms10 = {0, 10 * 1000 * 1000};
  n = argc > 1 ? atol(argv[1]) : 500000;
  if (n <= 0 || !(g = gvl_create(NULL))) return 2;
  /* Main holds the GVL until both passers wait for it, so that no yield
   * finds nobody to hand to (those return at once and would flatter the
   * figure); the 10 ms lets the second one queue after it has counted
   * itself in. */
  gvl_thread_t *m = gvl_thread_attach(g, 0);
  if (!m || gvl_acquire(m)) return 2;
  if (pthread_create(&a, NULL, passer, NULL) ||
      pthread_create(&b, NULL, passer, NULL))
    return 2;
  while (atomic_load(&attached) < 2) nanosleep(&ms10, NULL);
  nanosleep(&ms10, NULL);
  double t0 = now_ns();
  if (gvl_release(m)) return 2;
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  double t1 = now_ns();
  if (gvl_thread_detach(m)) return 2;
  if (gvl_stats(g, &st) || gvl_destroy(g)) return 2;
  printf("ns_yield %.1f handoff_pct %.1f\n", (t1 - t0) / (2.0 * n),
         100.0 * (double)st.yields / (2.0 * n));
  return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * gvl_demo -- what the GVL does, in one run.
 *
 *  1. A thread spins in `0 until flag` (only safe points, never yields).
 *     Another thread needs the GVL to set the flag.  The spinner is
 *     preempted at the end of its slice and the setter gets in.
 *  2. While the spinner hogs the GVL, an "event" thread takes the GVL with
 *     gvl_acquire_prio 1000 times a second.  Each boosted acquire cuts in
 *     at the hog's next safe point instead of waiting out its slice.
 *  3. The same events without the boost, for comparison.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L  /* clock_gettime, nanosleep, strdup in -std=c11 */
#endif
#include "gvl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static gvl_t *g;
static atomic_int flag, stop_hog, spinning;
static atomic_ulong hog_work;

static void sleep_ns(long ns) {
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  nanosleep(&ts, NULL);
}

static void *spinner(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  gvl_acquire(t);
  atomic_store(&spinning, 1);
  while (!atomic_load_explicit(&flag, memory_order_relaxed)) gvl_check_ints(t);
  gvl_release(t);
  gvl_thread_detach(t);
  return NULL;
}

static void *setter(void *arg) {
  uint64_t *waited = arg, t0 = gvl_now_ns();
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  gvl_acquire(t);
  *waited = gvl_now_ns() - t0;
  atomic_store(&flag, 1);
  gvl_release(t);
  gvl_thread_detach(t);
  return NULL;
}

/* A CPU-bound interpreter thread: ~1 us of work between safe points. */
static void *hog(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  volatile unsigned x = 1;
  gvl_acquire(t);
  while (!atomic_load_explicit(&stop_hog, memory_order_relaxed)) {
    for (int i = 0; i < 300; i++) x = x * 1103515245u + 12345u;
    atomic_fetch_add_explicit(&hog_work, 1, memory_order_relaxed);
    gvl_check_ints(t);
  }
  gvl_release(t);
  gvl_thread_detach(t);
  return NULL;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void events(int n, int prio, const char *label) {
  uint64_t *lat = calloc((size_t)n, sizeof *lat);
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  if (!lat || !t) exit(1);
  for (int i = 0; i < n; i++) {
    sleep_ns(1000000);                       /* 1 ms after the last one */
    uint64_t t0 = gvl_now_ns();
    gvl_acquire_prio(t, prio);
    lat[i] = gvl_now_ns() - t0;
    gvl_release(t);
  }
  gvl_thread_detach(t);
  qsort(lat, (size_t)n, sizeof *lat, cmp_u64);
  printf("  %-22s p50 %8.1f us   p99 %8.1f us   max %8.1f us\n", label,
         lat[n / 2] / 1e3, lat[n * 99 / 100] / 1e3, lat[n - 1] / 1e3);
  free(lat);
}

int main(int argc, char **argv) {
  int n = 2000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--short")) {
      n = 200;
    } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: %s [--short]   (--short: 200 boosted events instead of 2000)\n", argv[0]);
      return 0;
    } else {
      fprintf(stderr, "gvl_demo: unknown argument %s\nusage: %s [--short]\n", argv[i], argv[0]);
      return 2;
    }
  }
  gvl_config_t cfg = {.slice_ns = 10000000};
  pthread_t a, b;
  uint64_t waited = 0;
  gvl_stats_t s;

  if (!(g = gvl_create(&cfg))) return 1;
  printf("gvloop demo: time slice 10 ms\n\n1. `0 until flag` while another thread must set flag\n");
  pthread_create(&a, NULL, spinner, NULL);
  /* The setter must come while the spinner holds the GVL: a thread just
   * created may take tens of ms to run on a busy machine, and a setter
   * that found the GVL free would show no preemption at all. */
  while (!atomic_load(&spinning)) sleep_ns(1000000);
  sleep_ns(20000000);
  pthread_create(&b, NULL, setter, &waited);
  pthread_join(b, NULL);
  pthread_join(a, NULL);
  gvl_stats(g, &s);
  printf("  setter waited %.2f ms; preempt requests %llu, preemptions %llu\n",
         waited / 1e6, (unsigned long long)s.preempt_reqs,
         (unsigned long long)s.preemptions);
  printf("  busy thread preempted: %s\n\n", s.preemptions > 0 ? "yes" : "no");

  printf("2. events 1 ms apart while a hog holds the GVL: %d boosted, then %d plain\n",
         n, n / 10);
  pthread_create(&a, NULL, hog, NULL);
  sleep_ns(20000000);
  events(n, GVL_PRIO_BOOST, "boosted acquire:");
  events(n / 10, GVL_PRIO_NORMAL, "plain acquire:");
  atomic_store(&stop_hog, 1);
  pthread_join(a, NULL);
  gvl_stats(g, &s);
  printf("\n  handoffs %llu, preemptions %llu, boosts %llu (refused by cap %llu)\n",
         (unsigned long long)s.handoffs, (unsigned long long)s.preemptions,
         (unsigned long long)s.boosts, (unsigned long long)s.boosts_refused);
  return gvl_destroy(g) ? 1 : 0;
}

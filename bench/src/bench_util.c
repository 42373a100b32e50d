/* SPDX-License-Identifier: MIT */
/* bench_util.c -- clocks, threads, calibrated work and result lines. */
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint32_t bench_steps_per_us = 100;

void bench_die(const char *what, int err) {
  fprintf(stderr, "gvlbench: %s: %s\n", what, err ? strerror(err) : "failed");
  fflush(stderr);
  abort();
}

uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_sleep_until(uint64_t abs_ns) {
  struct timespec ts = {(time_t)(abs_ns / 1000000000u),
                        (long)(abs_ns % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

void bench_sleep_ns(uint64_t ns) { bench_sleep_until(bench_now_ns() + ns); }

void *bench_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (p == NULL) bench_die("calloc", ENOMEM);
  return p;
}

void bench_run_threads(int n, void *(*fn)(void *), void *args, size_t stride) {
  pthread_t *tids = bench_xcalloc((size_t)n, sizeof *tids);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  /* 100 threads in the mutex case: keep stacks small so creation is cheap. */
  pthread_attr_setstacksize(&attr, 256 * 1024);
  for (int i = 0; i < n; i++) {
    int err = pthread_create(&tids[i], &attr, fn, (char *)args + (size_t)i * stride);
    if (err) bench_die("pthread_create", err);
  }
  pthread_attr_destroy(&attr);
  for (int i = 0; i < n; i++) pthread_join(tids[i], NULL);
  free(tids);
}

uint64_t bench_spin(uint64_t x, uint32_t steps) {
  for (uint32_t i = 0; i < steps; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

static uint64_t sink_word;
void bench_sink(uint64_t x) { __atomic_store_n(&sink_word, x, __ATOMIC_RELAXED); }

/* Time a fixed number of steps a few times and keep the fastest: the fastest
 * run is the one least disturbed by the other processes on the machine. */
void bench_calibrate(void) {
  const uint32_t probe = 1u << 20;
  uint64_t best = UINT64_MAX, x = 88172645463325252ull;
  for (int r = 0; r < 7; r++) {
    uint64_t t0 = bench_now_ns();
    x = bench_spin(x, probe);
    uint64_t dt = bench_now_ns() - t0;
    if (dt < best) best = dt;
  }
  bench_sink(x);
  if (best == 0) best = 1;
  uint64_t per_us = (uint64_t)probe * 1000u / best;
  bench_steps_per_us = per_us < 1 ? 1 : (uint32_t)per_us;
}

void bench_result(const char *bench, const char *variant, const char *metric,
                  double value) {
  printf("RESULT %s %s %s %.6g\n", bench, variant, metric, value);
  fflush(stdout);
}

void bench_meta(const char *bench, const char *metric, const char *unit,
                const char *better, const char *text) {
  printf("META %s %s %s %s %s\n", bench, metric, unit, better, text);
  fflush(stdout);
}

void bench_chart(const char *bench, const char *metric) {
  printf("CHART %s %s\n", bench, metric);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_percentile(double *v, size_t n, double p) {
  if (n == 0) return 0;
  qsort(v, n, sizeof *v, cmp_double);
  size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return v[rank - 1];
}

int bench_wanted(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) return 1;
    if (!e) break;
    p = e + 1;
  }
  return list == NULL;
}

void bench_rt_self_once(void) {
  static _Thread_local int done;
  struct sched_param sp = {.sched_priority = 1};
  if (done) return;
  done = 1;
  int err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
  if (err) bench_die("pthread_setschedparam SCHED_FIFO", err);
}

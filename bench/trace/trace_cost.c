/* SPDX-License-Identifier: MIT */
/*
 * trace_cost.c -- what tracing costs the GVL's fast paths.
 *
 *   uncontended  one thread: gvl_acquire + gvl_release, against a pthread
 *                mutex lock + unlock pair;
 *   check_ints   one thread holding the GVL: a tight loop of a small unit
 *                of work and a gvl_check_ints() safe point, against the same
 *                loop without the safe point.
 * Each is measured with tracing off (the default: the lock pays one plain
 * load of g->trace per reported event, gvl_check_ints nothing) and on (a
 * ring buffer of 4096 events, so memory stays small).  Variants run
 * interleaved, RUNS times; the figure is the ratio of the medians of one
 * process run, never an absolute time.
 *
 * Usage: gvl_trace_cost [--quick] [--runs N]
 * Prints "RESULT trace_cost gvloop <metric> <ratio>" lines and a summary.
 */
#include "gvl.h"
#include "gvl_trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { V_MUTEX, V_OFF, V_ON, V_NOCHECK, V_CHK_OFF, V_CHK_ON, V__N };
static const char *const vname[V__N] = {
    "pthread mutex pair", "gvl pair, trace off", "gvl pair, trace on",
    "loop, no safe point", "loop + check_ints, trace off",
    "loop + check_ints, trace on"};

static gvl_t *g;
static gvl_thread_t *self_t;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t sink;
static char trace_path[256];

static void die(const char *what, int err) {
  fprintf(stderr, "gvl_trace_cost: %s: %s\n", what, strerror(err));
  exit(1);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A small unit of "interpreter work" the compiler cannot fold. */
static inline uint64_t unit(uint64_t x) {
  for (int i = 0; i < 8; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

static void set_trace(int on) {
  int rc;
  if (on) {
    gvl_trace_config_t c = {4096, 4, GVL_TRACE_RING};
    rc = gvl_trace_start(g, trace_path, &c);
  } else {
    rc = gvl_trace_stop(g);
  }
  if (rc) die("trace start/stop", rc);
}

static double run_pairs(int v, long n) {
  uint64_t t0 = now_ns();
  if (v == V_MUTEX) {
    for (long i = 0; i < n; i++) {
      pthread_mutex_lock(&mu);
      pthread_mutex_unlock(&mu);
    }
  } else {
    for (long i = 0; i < n; i++) {
      if (gvl_acquire(self_t)) die("acquire", EINVAL);
      gvl_release(self_t);
    }
  }
  return (double)(now_ns() - t0) / (double)n;
}

static double run_loop(int v, long n) {
  uint64_t x = 88172645463325252ull, t0;
  if (gvl_acquire(self_t)) die("acquire", EINVAL);
  t0 = now_ns();
  if (v == V_NOCHECK) {
    for (long i = 0; i < n; i++) x = unit(x);
  } else {
    for (long i = 0; i < n; i++) {
      x = unit(x);
      if (gvl_check_ints(self_t)) die("check_ints", EINTR);
    }
  }
  double r = (double)(now_ns() - t0) / (double)n;
  gvl_release(self_t);
  sink = x;
  return r;
}

static double measure(int v, long n) {
  int on = v == V_ON || v == V_CHK_ON;
  if (on) set_trace(1);
  double r = v <= V_ON ? run_pairs(v, n) : run_loop(v, n);
  if (on) set_trace(0);
  return r;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
  int runs = 7;
  long n = 5000000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) n = 500000, runs = 5;
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
  }
  if (runs < 1 || runs > 99) runs = 7;
  snprintf(trace_path, sizeof trace_path, "/tmp/gvl_trace_cost.%d.gvlt",
           (int)getpid());
  if (!(g = gvl_create(NULL))) die("gvl_create", errno);
  if (!(self_t = gvl_thread_attach(g, 0))) die("attach", errno);

  double t[V__N][100], med[V__N];
  for (int v = 0; v < V__N; v++) (void)measure(v, n / 10);  /* warm up */
  for (int r = 0; r < runs; r++)
    for (int v = 0; v < V__N; v++) t[v][r] = measure(v, n);
  for (int v = 0; v < V__N; v++) {
    med[v] = median(t[v], runs);
    printf("# %-30s %8.2f ns/op (median of %d x %ld)\n", vname[v], med[v], runs, n);
  }
  printf("RESULT trace_cost gvloop uncontended_off_vs_mutex %.3f\n", med[V_OFF] / med[V_MUTEX]);
  printf("RESULT trace_cost gvloop uncontended_on_vs_off %.3f\n", med[V_ON] / med[V_OFF]);
  printf("RESULT trace_cost gvloop check_ints_off_vs_none %.3f\n", med[V_CHK_OFF] / med[V_NOCHECK]);
  printf("RESULT trace_cost gvloop check_ints_on_vs_off %.3f\n", med[V_CHK_ON] / med[V_CHK_OFF]);
  gvl_thread_detach(self_t);
  gvl_destroy(g);
  unlink(trace_path);
  return 0;
}

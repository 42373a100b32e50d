/* SPDX-License-Identifier: MIT */
/*
 * trace_ab.c -- compare the uncontended acquire+release pair of two builds
 * of libgvl in one process: A (as built) against B (a copy built without
 * the tracer's g->trace loads, by trace_field_ab.sh).  Both libraries are
 * loaded with dlopen(RTLD_LOCAL | RTLD_DEEPBIND) so each has its own
 * symbols; runs alternate A/B and B/A so that drifts of a loaded machine
 * hit both.  Prints the medians, the minima and the median of the per-round
 * ratios A/B: what the tracing seam costs when tracing is off.
 *
 * Usage: gvl_trace_ab libA.so libB.so [rounds]
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
  void *(*create)(const void *);
  void *(*attach)(void *, int);
  int (*acquire)(void *);
  int (*release)(void *);
  void *t;
} lib_t;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *sym(void *h, const char *name) {
  void *p = dlsym(h, name);
  if (!p) {
    fprintf(stderr, "gvl_trace_ab: %s: %s\n", name, dlerror());
    exit(1);
  }
  return p;
}

static void load(lib_t *l, const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!h) {
    fprintf(stderr, "gvl_trace_ab: %s\n", dlerror());
    exit(1);
  }
  /* POSIX guarantees that dlsym results convert to function pointers. */
  *(void **)&l->create = sym(h, "gvl_create");
  *(void **)&l->attach = sym(h, "gvl_thread_attach");
  *(void **)&l->acquire = sym(h, "gvl_acquire");
  *(void **)&l->release = sym(h, "gvl_release");
  void *g = l->create(NULL);
  if (!g || !(l->t = l->attach(g, 0))) {
    fprintf(stderr, "gvl_trace_ab: %s: create/attach failed\n", path);
    exit(1);
  }
}

static double run(const lib_t *l, long n) {
  uint64_t t0 = now_ns();
  for (long i = 0; i < n; i++) {
    l->acquire(l->t);
    l->release(l->t);
  }
  return (double)(now_ns() - t0) / (double)n;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  lib_t a, b;
  int rounds = argc > 3 ? atoi(argv[3]) : 61;
  long n = 400000;
  if (argc < 3 || rounds < 3 || rounds > 1001) {
    fprintf(stderr, "usage: %s libA.so libB.so [rounds]\n", argv[0]);
    return 2;
  }
  load(&a, argv[1]);
  load(&b, argv[2]);
  double *ra = calloc((size_t)rounds, sizeof *ra), *rb = calloc((size_t)rounds, sizeof *rb),
         *q = calloc((size_t)rounds, sizeof *q);
  if (!ra || !rb || !q) return 1;
  run(&a, n);
  run(&b, n);
  for (int i = 0; i < rounds; i++) {
    if (i & 1) {
      rb[i] = run(&b, n);
      ra[i] = run(&a, n);
    } else {
      ra[i] = run(&a, n);
      rb[i] = run(&b, n);
    }
    q[i] = ra[i] / rb[i];
  }
  qsort(ra, (size_t)rounds, sizeof *ra, cmp);
  qsort(rb, (size_t)rounds, sizeof *rb, cmp);
  qsort(q, (size_t)rounds, sizeof *q, cmp);
  printf("# A %s: median %.2f ns, min %.2f ns per pair\n", argv[1], ra[rounds / 2], ra[0]);
  printf("# B %s: median %.2f ns, min %.2f ns per pair\n", argv[2], rb[rounds / 2], rb[0]);
  printf("# per-round A/B: p25 %.3f median %.3f p75 %.3f; min A / min B %.3f\n",
         q[rounds / 4], q[rounds / 2], q[3 * rounds / 4], ra[0] / rb[0]);
  printf("RESULT trace_cost gvloop off_vs_no_seam_median %.3f\n", q[rounds / 2]);
  printf("RESULT trace_cost gvloop off_vs_no_seam_min %.3f\n", ra[0] / rb[0]);
  free(ra);
  free(rb);
  free(q);
  return 0;
}

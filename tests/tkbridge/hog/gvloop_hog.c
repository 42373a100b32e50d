/* SPDX-License-Identifier: MIT */
/*
 * gvloop_hog.c -- a preload that gives a program N GVL hogs:
 *
 *   LD_PRELOAD=libgvloop_hog.so GVLOOP_HOG=N gvtclsh script.tcl
 *
 * It wraps gvl_create: the first GVL the program creates gets N threads
 * (tkb_hog.h) that hold it in a CPU loop with a safe point every ~1 us, so
 * the shells' scripts run as they would beside busy interpreter threads.
 * Test tooling: the shipped shells know nothing of it.  The hogs run until
 * the process exits.  The preload takes itself out of the environment, so
 * the programs the shell starts (pipelines, child shells) run without it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "tkb_hog.h"

static tkb__hog_t hog;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static gvl_t *first;

static void start_hogs(void) {
  const char *s = getenv("GVLOOP_HOG");
  long n = s ? strtol(s, NULL, 10) : 0;
  if (n <= 0 || n > 64) return;
  hog.gvl = first;
  hog.spin_per_us = tkb__hog_calibrate();
  atomic_init(&hog.stop, 0);
  for (long i = 0; i < n; i++) {
    pthread_t th;
    if (pthread_create(&th, NULL, tkb__hog_main, &hog) != 0) {
      fprintf(stderr, "gvloop_hog: pthread_create failed\n");
      return;
    }
    pthread_detach(th);
  }
}

__attribute__((constructor)) static void leave_environment(void) {
  unsetenv("LD_PRELOAD");
}

gvl_t *gvl_create(const gvl_config_t *cfg) {
  gvl_t *(*real)(const gvl_config_t *);
  *(void **)&real = dlsym(RTLD_NEXT, "gvl_create");
  if (real == NULL) return NULL;
  gvl_t *g = real(cfg);
  if (g != NULL && first == NULL) {
    first = g;
    pthread_once(&once, start_hogs);
  }
  return g;
}

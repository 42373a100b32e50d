/* SPDX-License-Identifier: MIT */
/*
 * tkb_hog.h -- a GVL hog: a thread that holds the GVL in a CPU loop with a
 * safe point (gvl_check_ints) every ~1 us of work.  Test tooling: the
 * tests' GVLOOP_HOG preload (gvloop_hog.c) and bench/tkbridge/tk_latency use
 * the same hog, so what the tests run and what the bench measures is one
 * loop.
 */
#ifndef TKB_HOG_H
#define TKB_HOG_H

#include <stdatomic.h>

#include "gvl.h"

/* One hog, shared by every thread that runs tkb__hog_main on it.  gvl and
 * spin_per_us are set before the threads start and only read after. */
typedef struct tkb__hog {
  gvl_t *gvl;                /* the GVL the threads attach to */
  unsigned long spin_per_us; /* from tkb__hog_calibrate() */
  atomic_int stop;           /* nonzero: every thread releases and ends */
} tkb__hog_t;

/* [any] Iterations of the hog's work per microsecond, measured over ~20 ms
 * of this thread's time; at least 1. */
unsigned long tkb__hog_calibrate(void);

/* [GVL not held] pthread start routine; arg is a tkb__hog_t.  Attaches to
 * hog->gvl at normal priority, holds it until hog->stop is set, passing a
 * safe point after every spin_per_us iterations; returns NULL. */
void *tkb__hog_main(void *arg);

#endif

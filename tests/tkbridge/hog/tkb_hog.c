/* SPDX-License-Identifier: MIT */
/*
 * tkb_hog.c -- the GVL hog of tkb_hog.h.
 */
#include "tkb_hog.h"

/* Work the compiler cannot remove: the empty asm makes x opaque. */
static void spin(unsigned long n) {
  unsigned long x = 0;
  for (unsigned long i = 0; i < n; i++) {
    x += i;
    __asm__ volatile("" : "+r"(x));
  }
}

/* Spin in steps of 1000 until 20 ms have passed: long enough to average out
 * the clock reads and a scheduler tick, short enough for a shell's start. */
unsigned long tkb__hog_calibrate(void) {
  uint64_t t0 = gvl_now_ns();
  unsigned long n = 0;
  while (gvl_now_ns() - t0 < 20000000ull) {
    spin(1000);
    n += 1000;
  }
  uint64_t us = (gvl_now_ns() - t0) / 1000;
  return us && n / us ? n / us : 1; /* a safe point per iteration at worst */
}

void *tkb__hog_main(void *arg) {
  tkb__hog_t *hog = arg;
  gvl_thread_t *t = gvl_thread_attach(hog->gvl, GVL_PRIO_NORMAL);
  if (t == NULL) return NULL;
  gvl_acquire(t);
  while (!atomic_load_explicit(&hog->stop, memory_order_relaxed)) {
    spin(hog->spin_per_us);
    gvl_check_ints(t);
  }
  gvl_release(t);
  gvl_thread_detach(t);
  return NULL;
}

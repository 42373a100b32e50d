/* SPDX-License-Identifier: MIT */
/*
 * gvl_sched_none.c -- for systems where one thread cannot set another's
 * kernel scheduling: GVL_F_LEND is accepted and lends nothing.
 */
#include "gvl_int.h"

int gvl__ksched_tid(void) { return 0; }
int gvl__ksched_get(int tid, gvl__ksched_t *s) {
  (void)tid, (void)s;
  return ENOSYS;
}
int gvl__ksched_set(int tid, const gvl__ksched_t *s) {
  (void)tid, (void)s;
  return ENOSYS;
}
int gvl__ksched_rank(const gvl__ksched_t *s) {
  (void)s;
  return -1;
}
const volatile uint32_t *gvl__ksched_cpu_word(void) { return NULL; }

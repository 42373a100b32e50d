/* SPDX-License-Identifier: MIT */
/* LD_PRELOAD shim: counts the process's sched_yield calls (libuv's among
 * them: it calls the C library's) and, at exit, writes the count to the
 * file named by GVLOOP_TEST_YIELDS. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_ulong yields;

/* Default visibility: the project builds with hidden visibility, and a
 * hidden definition would interpose nothing. */
__attribute__((visibility("default")))
int sched_yield(void) {
  static int (*real)(void);
  if (real == NULL) real = (int (*)(void))dlsym(RTLD_NEXT, "sched_yield");
  atomic_fetch_add(&yields, 1);
  return real ? real() : 0;
}

__attribute__((destructor)) static void report(void) {
  const char *path = getenv("GVLOOP_TEST_YIELDS");
  FILE *f = path ? fopen(path, "we") : NULL;
  if (f == NULL) return;
  fprintf(f, "%lu\n", atomic_load(&yields));
  fclose(f);
}

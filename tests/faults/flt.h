/* SPDX-License-Identifier: MIT */
/*
 * flt.h -- helpers shared by the fault tests.
 *
 * A failed check prints file:line and the expression and ends the process
 * with _exit(1): other threads may still be inside the GVL or the loop, and
 * running atexit handlers under them would only add noise to a failure that
 * is already reported.
 *
 * flt_watchdog() arms alarm() so that a hang fails with a message before
 * ctest's TIMEOUT.  FLT_SLOW (set by CMake for sanitizer runs) stretches the
 * watchdog and shrinks the big counts where a test allows it.
 *
 * No check here ever looks at a duration: waits are bounded only by the
 * watchdog, and only orderings and exact counts are asserted.
 */
#ifndef FLT_H
#define FLT_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evloop.h"
#include "gvl.h"

static inline void flt_fail(const char *file, int line, const char *what) {
  fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, what);
  fflush(stderr);
  _exit(1);
}

static inline void flt_fail_cmp(const char *file, int line, const char *a,
                                const char *op, const char *b, long long va,
                                long long vb) {
  fprintf(stderr, "%s:%d: CHECK failed: %s %s %s (%lld vs %lld)\n", file,
          line, a, op, b, va, vb);
  fflush(stderr);
  _exit(1);
}

#define CHECK(c)                                                           \
  do {                                                                     \
    if (!(c)) flt_fail(__FILE__, __LINE__, #c);                            \
  } while (0)

#define FLT_CMP_(a, op, b)                                                 \
  do {                                                                     \
    long long flt_va_ = (long long)(a), flt_vb_ = (long long)(b);          \
    if (!(flt_va_ op flt_vb_))                                             \
      flt_fail_cmp(__FILE__, __LINE__, #a, #op, #b, flt_va_, flt_vb_);     \
  } while (0)

#define CHECK_EQ(a, b) FLT_CMP_(a, ==, b)
#define CHECK_NE(a, b) FLT_CMP_(a, !=, b)
#define CHECK_GE(a, b) FLT_CMP_(a, >=, b)
#define CHECK_LE(a, b) FLT_CMP_(a, <=, b)
#define CHECK_GT(a, b) FLT_CMP_(a, >, b)
#define CHECK_OK(e) CHECK_EQ((e), 0)

static inline int flt_slow(void) {
  const char *s = getenv("FLT_SLOW");
  int v = s != NULL ? atoi(s) : 1;
  return v > 0 ? v : 1;
}

static inline void flt_sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static inline void flt_alarm_(int sig) {
  static const char msg[] = "watchdog: fault test did not finish in time\n";
  ssize_t r;
  (void)sig;
  r = write(2, msg, sizeof msg - 1);
  (void)r;
  _exit(3);
}

/* Fail the process if still running after seconds * FLT_SLOW.  Alarms do
 * not survive fork(): call again in a child. */
static inline void flt_watchdog(unsigned seconds) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = flt_alarm_;
  sigemptyset(&sa.sa_mask);
  CHECK_OK(sigaction(SIGALRM, &sa, NULL));
  alarm(seconds * (unsigned)flt_slow());
}

/* Poll until *v >= n; only the watchdog bounds it. */
static inline void flt_wait_ge(atomic_long *v, long n) {
  while (atomic_load(v) < n) flt_sleep_us(200);
}

static inline void flt_spawn(pthread_t *th, void *(*fn)(void *), void *arg) {
  CHECK_OK(pthread_create(th, NULL, fn, arg));
}

static inline void flt_join(pthread_t th) { CHECK_OK(pthread_join(th, NULL)); }

static inline gvl_t *flt_gvl(void) {
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  return g;
}

/* The GVL state a loop callback runs in. */
static inline int flt_holds(evl_t *l) {
  return gvl_thread_holds(evl_gvl_thread(l));
}

static inline evl_stats_t flt_evl_stats(evl_t *l) {
  evl_stats_t s;
  CHECK_OK(evl_stats(l, &s));
  return s;
}

#endif /* FLT_H */

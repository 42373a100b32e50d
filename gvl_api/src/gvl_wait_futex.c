/*
 * gvl_wait_futex.c -- thread parking on Linux futexes.
 *
 * Each thread sleeps on its own 32-bit sequence word.  A waker bumps the
 * word and wakes the one sleeper; a sleeper that reads a stale sequence
 * returns at once, so a wake that lands between "check granted" and
 * "sleep" is never lost.  Private futexes: the words never cross processes.
 */
#include "gvl_int.h"

#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int gvl__park_init(gvl__park_t *p) {
  atomic_init(&p->seq, 0);
  return 0;
}

void gvl__park_fini(gvl__park_t *p) { (void)p; }

void gvl__park_after_fork(gvl__park_t *p) { (void)p; }

void gvl__park_wait(gvl__park_t *p, uint32_t seq, uint64_t deadline_ns) {
  struct timespec ts, *tsp = NULL;
  if (deadline_ns) {
    uint64_t now = gvl__now();
    uint64_t rel = deadline_ns > now ? deadline_ns - now : 0;
    if (rel == 0) return;
    ts.tv_sec = (time_t)(rel / 1000000000u);
    ts.tv_nsec = (long)(rel % 1000000000u);
    tsp = &ts;
  }
  /* EINTR, EAGAIN (seq moved) and ETIMEDOUT all just return: callers loop. */
  syscall(SYS_futex, &p->seq, FUTEX_WAIT_PRIVATE, seq, tsp, NULL, 0);
}

void gvl__park_wake(gvl__park_t *p) {
  atomic_fetch_add_explicit(&p->seq, 1, memory_order_release);
  syscall(SYS_futex, &p->seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

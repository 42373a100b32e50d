/* SPDX-License-Identifier: MIT */
/*
 * gvl_wait_futex.c -- thread parking on Linux futexes.
 *
 * Each thread sleeps on its own 32-bit sequence word.  A waker bumps the
 * word and wakes the one sleeper; a sleeper that reads a stale sequence
 * returns at once, so a wake that lands between "check granted" and
 * "sleep" is never lost.  Private futexes: the words never cross processes.
 */
#include "gvl_int.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The futex call, leaving errno as it was: no GVL call changes it
 * (gvl.h), and its waits would (EAGAIN, ETIMEDOUT, EINTR). */
static void futex(_Atomic uint32_t *w, int op, uint32_t val,
                  const struct timespec *ts) {
  int saved = errno;
  syscall(SYS_futex, w, op, val, ts, NULL, 0);
  errno = saved;
}

int gvl__park_init(gvl__park_t *p) {
  atomic_init(&p->seq, 0);
  atomic_init(&p->sleepers, 0);
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
  /* Announce the sleep, then let the kernel re-check seq.  Paired with the
   * waker's seq bump then sleepers load (both seq_cst): either the waker sees
   * us and issues the wake, or the kernel sees the new seq and returns. */
  atomic_store(&p->sleepers, 1);
  /* EINTR, EAGAIN (seq moved) and ETIMEDOUT all just return: callers loop. */
  futex(&p->seq, FUTEX_WAIT_PRIVATE, seq, tsp);
  atomic_store_explicit(&p->sleepers, 0, memory_order_relaxed);
}

/* A waiter that is spinning, or has not gone to sleep yet, needs no
 * system call: it sees the new seq by itself. */
bool gvl__park_bump(gvl__park_t *p) {
  atomic_fetch_add(&p->seq, 1);
  return atomic_load(&p->sleepers) != 0;
}

void gvl__park_kick(gvl__park_t *p) {
  futex(&p->seq, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void gvl__park_wake(gvl__park_t *p) {
  if (gvl__park_bump(p)) gvl__park_kick(p);
}

/* g->mu's slow path (gvl_int.h): spin a moment for a holder that is
 * running, then sleep with the word at 2, so that the unlock wakes one
 * sleeper.  The spin is bounded and only reads the word. */
void gvl__mu_lock_slow(gvl__mu_t *m) {
  for (int i = 0; i < 100; i++) {
    uint32_t e = atomic_load_explicit(&m->v, memory_order_relaxed);
    if (e == 0 && atomic_compare_exchange_weak_explicit(&m->v, &e, 1,
                      memory_order_acquire, memory_order_relaxed))
      return;
    if (e == 2) break;   /* others sleep already: join them */
    gvl__cpu_relax();
  }
  while (atomic_exchange_explicit(&m->v, 2, memory_order_acquire) != 0)
    futex(&m->v, FUTEX_WAIT_PRIVATE, 2, NULL);
}

void gvl__mu_wake(gvl__mu_t *m) {
  futex(&m->v, FUTEX_WAKE_PRIVATE, 1, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * fuzz_gvl: libgvl driven by a byte stream of operations on three threads.
 *
 * The input is dealt out to three threads (each byte picks a thread and an
 * operation; the next byte is its parameter).  The threads then run their
 * lists at the same time on one GVL with one gvl_mutex and one gvl_cond:
 * acquires at random priorities (boosted ones included), releases, yields,
 * safe points, blocking regions with an unblocking function, interrupts,
 * gvl_call_with, mutex and condition variable calls, priority / slice / cap
 * changes, and misuse (release without holding, acquire while holding, ...)
 * whose error code is checked.
 *
 * Invariants checked after every step:
 *   - mutual exclusion: a thread that got the GVL marks itself owner with a
 *     compare-and-swap from "nobody"; it fails if anyone else is marked;
 *   - gvl_thread_holds() agrees with what the thread believes;
 *   - the mutex owner agrees with what the thread believes;
 *   - counters never go backwards and stay consistent (handoffs, contended
 *     and boosts never exceed acquires);
 *   - at the end every thread detaches (0) and gvl_destroy returns 0.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>

#include "gvl.h"

#define NT 3
#define MAXOPS 512

#define FZ_CHECK(c)                                                          \
  do {                                                                       \
    if (!(c)) {                                                              \
      fprintf(stderr, "fuzz_gvl: %s:%d: invariant broken: %s\n", __FILE__,   \
              __LINE__, #c);                                                 \
      abort();                                                               \
    }                                                                        \
  } while (0)

enum {
  OP_ACQUIRE, OP_RELEASE, OP_YIELD, OP_CHECK_INTS, OP_CALL_WITHOUT,
  OP_MUTEX, OP_TRYLOCK, OP_COND_WAIT, OP_COND_SIGNAL, OP_INTERRUPT,
  OP_CALL_WITH, OP_SET_PRIO, OP_TUNE, OP_HOG, OP_STATS, OP_MISUSE, OP_N
};

typedef struct {
  uint8_t op, arg;
} fz_op_t;

typedef struct {
  int idx;
  fz_op_t ops[MAXOPS];
  int nops;
  gvl_thread_t *t;
  int holding;     /* this thread's belief */
  int owns_m;
} fz_thread_t;

static gvl_t *g;
static gvl_mutex_t mu;
static gvl_cond_t cv;
static atomic_int owner = -1;
static fz_thread_t th[NT];
static gvl_thread_t *_Atomic handles[NT];
static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;
static gvl_stats_t last_stats;
static pthread_barrier_t start_barrier, done_barrier;

static void mark_acquired(fz_thread_t *f) {
  int expect = -1;
  FZ_CHECK(atomic_compare_exchange_strong(&owner, &expect, f->idx));
  f->holding = 1;
}

static void mark_released(fz_thread_t *f) {
  int expect = f->idx;
  FZ_CHECK(atomic_compare_exchange_strong(&owner, &expect, -1));
  f->holding = 0;
}

static void check_state(fz_thread_t *f) {
  FZ_CHECK(gvl_thread_holds(f->t) == f->holding);
  if (f->holding) FZ_CHECK(atomic_load(&owner) == f->idx);
  else FZ_CHECK(atomic_load(&owner) != f->idx);
  /* The mutex is guarded by the GVL: read it only while holding. */
  if (f->holding) FZ_CHECK((mu.owner == f->t) == f->owns_m);
}

static void check_stats(void) {
  gvl_stats_t s;
  /* Read under stats_mu, so that this snapshot is taken after the one in
   * last_stats: two threads comparing their own snapshots out of order
   * would see time go backwards. */
  pthread_mutex_lock(&stats_mu);
  FZ_CHECK(gvl_stats(g, &s) == 0);
  FZ_CHECK(s.handoffs <= s.acquires);
  FZ_CHECK(s.contended <= s.acquires);
  FZ_CHECK(s.boosts <= s.acquires);
  FZ_CHECK(s.retakes <= s.acquires);
  /* Counters are read one by one; each alone never goes backwards. */
  FZ_CHECK(s.acquires >= last_stats.acquires);
  FZ_CHECK(s.handoffs >= last_stats.handoffs);
  FZ_CHECK(s.contended >= last_stats.contended);
  FZ_CHECK(s.boosts >= last_stats.boosts);
  FZ_CHECK(s.yields >= last_stats.yields);
  last_stats = s;
  pthread_mutex_unlock(&stats_mu);
}

typedef struct {
  atomic_int stop;
  int spins;
} region_t;

static void *region_fn(void *arg) {
  region_t *r = arg;
  int i;
  for (i = 0; i < r->spins && !atomic_load(&r->stop); i++) sched_yield();
  return r;
}

static void region_ubf(void *arg) {
  region_t *r = arg;
  atomic_store(&r->stop, 1);
}

static void *with_fn(void *arg) {
  fz_thread_t *f = arg;
  /* Inside gvl_call_with the caller holds g, through its own handle. */
  int was = f->holding;
  if (!was) mark_acquired(f);
  FZ_CHECK(gvl_thread_holds(f->t));
  if (!was) mark_released(f);
  return f;
}

static void do_op(fz_thread_t *f, fz_op_t o) {
  gvl_thread_t *t = f->t;
  int r;
  switch (o.op) {
  case OP_ACQUIRE:
    if (f->holding) {
      FZ_CHECK(gvl_acquire_prio(t, o.arg % 25 - 5) == EDEADLK);
    } else {
      FZ_CHECK(gvl_acquire_prio(t, o.arg % 25 - 5) == 0);
      mark_acquired(f);
    }
    break;
  case OP_RELEASE:
    if (!f->holding) {
      FZ_CHECK(gvl_release(t) == EPERM);
    } else {
      mark_released(f);
      FZ_CHECK(gvl_release(t) == 0);
    }
    break;
  case OP_YIELD:
    if (!f->holding) {
      FZ_CHECK(gvl_yield(t) == EPERM);
    } else {
      mark_released(f);
      FZ_CHECK(gvl_yield(t) == 0);
      mark_acquired(f);
    }
    break;
  case OP_CHECK_INTS:
  case OP_HOG:
    if (f->holding) {
      int i, n = o.op == OP_HOG ? 50 + o.arg * 20 : 1;
      for (i = 0; i < n; i++) {
        mark_released(f);
        r = gvl_check_ints(t);
        FZ_CHECK(r == 0 || r == EINTR);
        mark_acquired(f);
      }
    }
    break;
  case OP_CALL_WITHOUT: {
    region_t reg;
    void *res;
    atomic_init(&reg.stop, 0);
    reg.spins = o.arg % 16;
    errno = 0;
    if (!f->holding) {
      FZ_CHECK(gvl_call_without(t, region_fn, &reg, region_ubf, &reg) ==
               NULL);
      FZ_CHECK(errno == EPERM);
      break;
    }
    mark_released(f);
    res = gvl_call_without(t, region_fn, &reg, region_ubf, &reg);
    FZ_CHECK(res == &reg || (res == NULL && errno == EINTR));
    mark_acquired(f);
    break;
  }
  case OP_MUTEX:
    if (!f->holding) {
      FZ_CHECK(gvl_mutex_lock(t, &mu) == EPERM);
    } else if (f->owns_m) {
      FZ_CHECK(o.arg & 1 ? gvl_mutex_lock(t, &mu) == EDEADLK
                         : gvl_mutex_unlock(t, &mu) == 0);
      if (!(o.arg & 1)) f->owns_m = 0;
    } else {
      mark_released(f);
      FZ_CHECK(gvl_mutex_lock(t, &mu) == 0);
      mark_acquired(f);
      f->owns_m = 1;
    }
    break;
  case OP_TRYLOCK:
    if (!f->holding) {
      FZ_CHECK(gvl_mutex_trylock(t, &mu) == EPERM);
    } else {
      r = gvl_mutex_trylock(t, &mu);
      if (f->owns_m) FZ_CHECK(r == EDEADLK);
      else if (r == 0) f->owns_m = 1;
      else FZ_CHECK(r == EBUSY);
    }
    break;
  case OP_COND_WAIT:
    if (!f->holding) {
      FZ_CHECK(gvl_cond_timedwait(t, &cv, &mu, 1000) == EPERM);
    } else if (!f->owns_m) {
      FZ_CHECK(gvl_cond_timedwait(t, &cv, &mu, 1000) == EPERM);
    } else {
      mark_released(f);
      r = gvl_cond_timedwait(t, &cv, &mu, 1000ull + o.arg * 2000ull);
      FZ_CHECK(r == 0 || r == ETIMEDOUT);
      mark_acquired(f);
    }
    break;
  case OP_COND_SIGNAL:
    r = o.arg & 1 ? gvl_cond_broadcast(t, &cv) : gvl_cond_signal(t, &cv);
    FZ_CHECK(r == (f->holding ? 0 : EPERM));
    break;
  case OP_INTERRUPT: {
    gvl_thread_t *other = atomic_load(&handles[o.arg % NT]);
    if (other != NULL) FZ_CHECK(gvl_thread_interrupt(other) == 0);
    break;
  }
  case OP_CALL_WITH:
    if (f->owns_m && !f->holding) break;
    errno = 0;
    FZ_CHECK(gvl_call_with(g, o.arg % 25 - 5, with_fn, f) == f);
    break;
  case OP_SET_PRIO:
    FZ_CHECK(gvl_thread_set_prio(t, o.arg % 41 - 20) == 0);
    if (o.arg > 250) FZ_CHECK(gvl_thread_set_prio(t, GVL_PRIO_MAX + 1) == EINVAL);
    break;
  case OP_TUNE:
    if (o.arg & 1)
      FZ_CHECK(gvl_set_slice(g, 100000ull + o.arg * 50000ull) == 0);
    else
      FZ_CHECK(gvl_set_boost_cap(g, 1u + o.arg % 100u) == 0);
    FZ_CHECK(gvl_set_boost_cap(g, 101) == EINVAL);
    FZ_CHECK(gvl_set_slice(g, 0) == EINVAL);
    break;
  case OP_STATS: {
    gvl_stats_t s;
    FZ_CHECK(gvl_thread_stats(t, &s) == 0);
    FZ_CHECK(s.contended <= s.acquires);
    check_stats();
    break;
  }
  case OP_MISUSE:
    FZ_CHECK(gvl_acquire(NULL) == EINVAL);
    FZ_CHECK(gvl_release(NULL) == EINVAL);
    FZ_CHECK(gvl_mutex_lock(t, NULL) == EINVAL);
    if (f->holding) {
      FZ_CHECK(gvl_thread_detach(t) == EBUSY);
      FZ_CHECK(gvl_acquire(t) == EDEADLK);
    }
    FZ_CHECK(gvl_destroy(g) == EBUSY);
    break;
  default:
    break;
  }
  check_state(f);
}

static void *thread_main(void *arg) {
  fz_thread_t *f = arg;
  int i;
  f->t = gvl_thread_attach(g, 0);
  FZ_CHECK(f->t != NULL);
  atomic_store(&handles[f->idx], f->t);
  pthread_barrier_wait(&start_barrier);
  for (i = 0; i < f->nops; i++) do_op(f, f->ops[i]);
  /* Wind down: give the mutex back (needs the GVL), then the GVL. */
  if (f->owns_m) {
    if (!f->holding) {
      FZ_CHECK(gvl_acquire(f->t) == 0);
      mark_acquired(f);
    }
    FZ_CHECK(gvl_mutex_unlock(f->t, &mu) == 0);
    f->owns_m = 0;
  }
  if (f->holding) {
    mark_released(f);
    FZ_CHECK(gvl_release(f->t) == 0);
  }
  /* Others may still interrupt this handle: detach (which frees it) only
   * once every thread has finished its list. */
  pthread_barrier_wait(&done_barrier);
  atomic_store(&handles[f->idx], NULL);
  FZ_CHECK(gvl_thread_detach(f->t) == 0);
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pthread_t pt[NT];
  gvl_config_t cfg;
  size_t i;
  int k;
  memset(th, 0, sizeof th);
  memset(&cfg, 0, sizeof cfg);
  memset(&last_stats, 0, sizeof last_stats);
  if (size < 1) return 0;
  /* The first byte tunes the GVL. */
  cfg.slice_ns = 200000ull + (data[0] & 7) * 500000ull;
  cfg.boost_cap_pct = 10u + (data[0] >> 3) % 91u;
  cfg.flags = (data[0] & 0x40) ? GVL_F_NOSPIN : 0;
  g = gvl_create(&cfg);
  FZ_CHECK(g != NULL);
  FZ_CHECK(gvl_mutex_init(&mu) == 0);
  FZ_CHECK(gvl_cond_init(&cv) == 0);
  for (i = 1; i + 1 < size; i += 2) {
    fz_thread_t *f = &th[data[i] % NT];
    if (f->nops < MAXOPS) {
      f->ops[f->nops].op = (uint8_t)((data[i] / NT) % OP_N);
      f->ops[f->nops].arg = data[i + 1];
      f->nops++;
    }
  }
  atomic_store(&owner, -1);
  FZ_CHECK(pthread_barrier_init(&start_barrier, NULL, NT) == 0);
  FZ_CHECK(pthread_barrier_init(&done_barrier, NULL, NT) == 0);
  for (k = 0; k < NT; k++) {
    th[k].idx = k;
    FZ_CHECK(pthread_create(&pt[k], NULL, thread_main, &th[k]) == 0);
  }
  for (k = 0; k < NT; k++) pthread_join(pt[k], NULL);
  pthread_barrier_destroy(&start_barrier);
  pthread_barrier_destroy(&done_barrier);
  FZ_CHECK(atomic_load(&owner) == -1);
  check_stats();
  FZ_CHECK(gvl_cond_destroy(&cv) == 0);
  FZ_CHECK(gvl_mutex_destroy(&mu) == 0);
  FZ_CHECK(gvl_destroy(g) == 0);
  g = NULL;
  return 0;
}
